//! The doctor probe measures a real refused write on this kernel.

use agentty_sandbox::{ProbeOutcome, probe};

#[test]
fn probe_reports_a_refused_write() {
    let report = probe();
    assert!(report.landlock_abi.is_some());
    assert!(
        matches!(report.outcome, ProbeOutcome::Refused { exit_code: Some(c), .. } if c != 0),
        "{report:?}"
    );
    let text = report.to_string();
    assert!(text.contains("Landlock: available, ABI"), "{text}");
    assert!(text.contains("refused as expected"), "{text}");
    println!("{text}");
}
