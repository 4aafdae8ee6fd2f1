//! Writes that must keep working in workspace-write.

use agentty_sandbox::Mode;

use super::common::{Fixture, ok, sh};

#[test]
fn workspace_temp_cache_and_devices_are_writable() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    let script = format!(
        "set -e; echo a > ws.txt; mkdir -p d/e; echo b > d/e/f; mv d/e/f moved; ln moved hard; \
         ln -s moved soft; truncate -s 0 hard; rm -r d; echo c > '{tmp}/t'; echo d > '{cache}/c'; \
         echo e > /dev/null; echo f > /dev/stdout; echo g >&2",
        tmp = f.tmp.display(),
        cache = f.home.join(".cargo/registry").display()
    );
    let out = sh(&p, &f.ws, &f.home, &script);
    ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "f\n");
    assert!(f.ws.join("moved").exists() && f.ws.join("hard").exists());
    assert_eq!(std::fs::read_to_string(f.tmp.join("t")).unwrap(), "c\n");
    assert_eq!(
        std::fs::read_to_string(f.home.join(".cargo/registry/c")).unwrap(),
        "d\n"
    );
}

#[test]
fn rename_between_writable_roots_works() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    ok(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!(
            "echo x > '{}/a' && mv '{}/a' b",
            f.tmp.display(),
            f.tmp.display()
        ),
    ));
    assert!(f.ws.join("b").exists());
}
