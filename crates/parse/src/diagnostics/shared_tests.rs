use super::*;

#[test]
fn clip_counts_characters() {
    assert_eq!(clip("short"), "short");
    let long = "ü".repeat(600);
    let clipped = clip(&long);
    assert_eq!(clipped.chars().count(), MAX_NOTE_CHARS + 1);
    assert!(clipped.ends_with('…'));
}
