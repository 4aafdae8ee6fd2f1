use std::process::{Child, Command};

use super::HeldChildren;

fn sleeper() -> Child {
    Command::new("sleep").arg("30").spawn().unwrap()
}

fn end(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Each look reads the list as it is now, through the one open file: a child started or
/// waited for after the last look is seen so (a list read once and kept would let a process
/// started since then lurk unseen).
#[test]
fn a_held_list_is_read_afresh_on_every_look() {
    let pid = std::process::id().cast_signed();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let held = HeldChildren::open(pid, tid).unwrap();
    let first = sleeper();
    let a = first.id().cast_signed();
    assert!(held.read().contains(&a));
    let second = sleeper();
    let b = second.id().cast_signed();
    let now = held.read();
    assert!(now.contains(&a) && now.contains(&b), "{now:?}");
    end(first);
    let now = held.read();
    assert!(!now.contains(&a) && now.contains(&b), "{now:?}");
    end(second);
    assert!(!held.read().contains(&b));
}
