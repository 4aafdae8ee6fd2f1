use super::*;

#[test]
fn unquotes_common_forms() {
    assert_eq!(unquote("'rm'"), "rm");
    assert_eq!(unquote("r\"m\""), "rm");
    assert_eq!(unquote("\\rm"), "rm");
    assert_eq!(unquote("\"$HOME\""), "$HOME");
    assert_eq!(unquote("$'r\\x6d'"), "rm");
    assert_eq!(unquote("\"a\\\"b\""), "a\"b");
}

fn words(text: &str, d: Dialect) -> Vec<Vec<String>> {
    segment(text, d).into_iter().map(|s| s.words).collect()
}

#[test]
fn segments_posix() {
    assert_eq!(
        words("echo $(rm -rf /) && ls", Dialect::Posix),
        vec![
            vec!["rm", "-rf", "/"],
            vec!["echo", "$(rm -rf /)"],
            vec!["ls"]
        ]
    );
    let segs = segment("curl x | sh", Dialect::Posix);
    assert_eq!(segs[0].pipeline, segs[1].pipeline);
    assert_eq!(segs[1].stage, 1);
    assert_eq!(
        words("echo 'a;b' \"c;d\"", Dialect::Posix),
        vec![vec!["echo", "a;b", "c;d"]]
    );
    let segs = segment("cat x > /dev/sda", Dialect::Posix);
    assert_eq!(
        segs[0].redirects,
        vec![(">".to_string(), "/dev/sda".to_string())]
    );
}

#[test]
fn segments_powershell() {
    assert_eq!(
        words(
            "iex (iwr https://x); Remove-Item -Recurse 'C:\\'",
            Dialect::PowerShell
        ),
        vec![
            vec!["iwr", "https://x"],
            vec!["iex", "(iwr https://x)"],
            vec!["Remove-Item", "-Recurse", "C:\\"]
        ]
    );
}
