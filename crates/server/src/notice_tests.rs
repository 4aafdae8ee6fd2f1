//! Wording checks across the tool families: what every family's notices must share.

/// A command moved to the background before it printed anything is not said to have output
/// "above" that ends at byte 0.
#[test]
fn a_move_to_the_background_says_what_was_printed() {
    let none = crate::terminal::notice::moved_to_background(1000, "t1", 0);
    assert!(none.contains("It printed nothing yet;"), "{none}");
    assert!(!none.contains("above"), "{none}");
    let some = crate::terminal::notice::moved_to_background(1000, "t1", 21);
    assert!(some.contains("The output above ends at byte 21;"), "{some}");
}

/// Every `tool({…})` a notice suggests, in every notice of both families.
fn calls(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("({") {
        let rest = &text[at + 1..];
        let end = rest.find("})").map_or(rest.len(), |e| e + 1);
        found.push(&rest[..end]);
    }
    found
}

/// The calls a model is told to make are written one way, as the JSON arguments it sends.
#[test]
fn every_suggested_call_is_written_as_json() {
    let path = std::path::Path::new("/tmp/x.log");
    let texts = [
        crate::terminal::notice::started("t1", 42, "make"),
        crate::terminal::notice::moved_to_background(1000, "t1", 21),
        crate::tasks::notice::read_footer("t1", "running", 0, 21, 100, 79),
        crate::tasks::notice::read_footer("t1", "running", 0, 21, 21, 0),
        crate::tasks::notice::earlier_output("t1", 0, 21, None),
        crate::tasks::notice::earlier_output("t1", 0, 21, Some(path)),
        crate::shells::notice::opened(
            "s1",
            "bash",
            "/w",
            80,
            24,
            crate::shells::notice::Ends::FromTheShell,
        ),
        crate::shells::notice::full_screen("s1"),
        crate::shells::notice::running(1000, "s1", 21, Some("/usr/bin/make (make) (pid 7)")),
        crate::shells::notice::held("pid 7 waits to read the terminal", "s1"),
        crate::shells::notice::awaiting_input(
            "Password:",
            false,
            crate::shells::notice::Asks::Password,
            "s1",
            Some("\"/usr/bin/python3\" (python3 -c 'x')"),
        ),
        crate::shells::notice::awaiting_input(
            "PIN:",
            false,
            crate::shells::notice::Asks::PasswordEchoed,
            "s1",
            None,
        ),
        crate::terminal::notice::pty_awaiting_input("Password:", true),
        crate::shells::notice::dropped(10, "s1", 21, None),
        crate::shells::notice::read_on(21, "s1"),
        crate::shells::notice::more(21, 10, "s1"),
    ];
    let mut seen = 0;
    for text in &texts {
        for call in calls(text) {
            seen += 1;
            assert!(
                serde_json::from_str::<serde_json::Value>(call).is_ok(),
                "not JSON: {call} in {text}"
            );
        }
    }
    assert!(seen >= 16, "only {seen} calls found");
}
