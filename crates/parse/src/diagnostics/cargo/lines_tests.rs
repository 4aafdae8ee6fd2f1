use super::*;

#[test]
fn lint_names() {
    assert_eq!(
        lint_name("note: `#[warn(dead_code)]` on by default").as_deref(),
        Some("dead_code")
    );
    assert_eq!(
        lint_name("note: `-W clippy::too-many-lines` implied by `-W clippy::pedantic`").as_deref(),
        Some("clippy::too_many_lines")
    );
    assert_eq!(lint_name("help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#bool_comparison").as_deref(), Some("clippy::bool_comparison"));
    assert_eq!(lint_name("note: expected type `u8`"), None);
    assert_eq!(lint_name("note: `#[warn(a b)]`"), None);
}
