use super::*;

fn stages_of(line: &str) -> Result<(Vec<String>, bool), String> {
    stages(&agentty_guard::analyze(line)).map(|(stages, merged)| {
        let words = stages
            .iter()
            .map(|s| {
                std::iter::once(s.program.clone())
                    .chain(s.args.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        (words, merged)
    })
}

#[test]
fn the_pipeline_that_prints_is_found() {
    let cases: &[(&str, &[&str], bool)] = &[
        ("ls -l", &["ls -l"], false),
        ("/bin/ls -la /tmp", &["ls -la /tmp"], false),
        ("ps aux | grep nginx", &["ps aux", "grep nginx"], false),
        ("cd app && ls -l | head -5", &["ls -l", "head -5"], false),
        (
            "export A=1; cargo build 2>&1 | tail -20",
            &["cargo build", "tail -20"],
            true,
        ),
        ("ls -l \"$(pwd)\"", &["ls -l $(pwd)"], false),
        ("ls -l 2>/dev/null", &["ls -l"], false),
        ("sudo ls -l /root", &["ls -l /root"], false),
    ];
    for (line, want, merged) in cases {
        let (got, got_merged) = stages_of(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(&got, want, "{line}");
        assert_eq!(got_merged, *merged, "{line}");
    }
}

#[test]
fn output_that_does_not_reach_the_result_is_refused() {
    for (line, why) in [
        ("ls -l > out.txt", notice::NOT_PARSED_REDIRECTED),
        ("ls -l &> out.txt", notice::NOT_PARSED_REDIRECTED),
        ("ls -l >&2", notice::NOT_PARSED_REDIRECTED),
        ("ls -l | grep x > f", notice::NOT_PARSED_REDIRECTED),
        ("ls -l; ps aux", notice::NOT_PARSED_SHAPE),
        ("ls -l && ps aux", notice::NOT_PARSED_SHAPE),
        ("ls -l &", notice::NOT_PARSED_SHAPE),
        ("cd /tmp", notice::NOT_PARSED_EMPTY),
    ] {
        assert_eq!(stages_of(line), Err(why.to_owned()), "{line}");
    }
}
