use super::*;

#[test]
fn locations() {
    assert_eq!(
        located("./main.go:5:2: declared and not used: x"),
        Some(("./main.go", 5, Some(2), "declared and not used: x"))
    );
    assert_eq!(
        located("a b/naïve:1.go:12: msg: more"),
        Some(("a b/naïve:1.go", 12, None, "msg: more"))
    );
    assert_eq!(located("note: module requires Go 1.21"), None);
    assert_eq!(located("x.go:+3: no"), None);
    assert_eq!(located(":3:1: no file"), None);
    assert_eq!(located("\t./a.go:1:1: indented"), None);
    assert_eq!(located("x.go:99999999999999999999999:1: overflow"), None);
    assert_eq!(
        file_line_column("src/main.rs:4:9"),
        Some(("src/main.rs", 4, Some(9)))
    );
    assert_eq!(file_line_column("4:9"), Some(("4", 9, None)));
}
