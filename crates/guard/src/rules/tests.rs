use super::*;

#[test]
fn names_are_unique_kebab_case() {
    for (i, r) in RULES.iter().enumerate() {
        assert!(r.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        assert!(RULES.iter().skip(i + 1).all(|o| o.name != r.name));
        assert!(!r.reason.contains('\n'));
    }
}

#[test]
fn fork_bomb_text_forms() {
    assert!(fork_bomb_text(":(){ :|:& };:"));
    assert!(fork_bomb_text("bomb() { bomb | bomb & }; bomb"));
    assert!(!fork_bomb_text("f() { echo hi; }; f & wait"));
}
