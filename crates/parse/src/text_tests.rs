use super::*;

#[test]
fn human_sizes() {
    assert_eq!(human_size("0"), Some(0));
    assert_eq!(human_size("4.0K"), Some(4096));
    assert_eq!(human_size("1.5M"), Some(1_572_864));
    assert_eq!(human_size("2Gi"), Some(2 * 1024 * 1024 * 1024));
    assert_eq!(human_size("1,5K"), Some(1536));
    assert_eq!(human_size("x"), None);
    assert_eq!(human_size("1Q"), None);
    assert_eq!(human_size(&"9".repeat(400)), None);
}

#[test]
fn clip_cuts_at_a_character() {
    assert_eq!(clip("héllo", 2), "hé…");
    assert_eq!(clip("hé", 2), "hé");
    assert_eq!(clip("", 0), "");
}
