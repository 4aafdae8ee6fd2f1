use super::*;

fn v(words: &[&str]) -> Vec<String> {
    words.iter().map(std::string::ToString::to_string).collect()
}

#[test]
fn peels_sudo_with_options() {
    assert_eq!(
        peel(
            &v(&["sudo", "-u", "root", "-E", "A=1", "rm", "-rf", "/"]),
            Dialect::Posix
        ),
        Peel::Command {
            wrapper: "sudo".into(),
            argv: v(&["rm", "-rf", "/"])
        }
    );
    assert_eq!(peel(&v(&["sudo", "-l"]), Dialect::Posix), Peel::Done);
}
