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

#[test]
fn an_output_over_the_parse_limit_is_left_as_text() {
    let plan = recognize(&agentty_guard::Analysis::of_line("ls -l", None), None).unwrap();
    let line = "-rw-r--r-- 1 root root 0 Dec  1 10:00 f\n";
    let limit = agentty_core::limits::PARSE_INPUT_MAX_BYTES;
    let mut whole = agentty_core::run::Whole {
        stdout: line.repeat(limit / line.len()),
        stderr: String::new(),
    };
    let (parsed, _) = parse(&plan, &whole, Some(0), usize::MAX).unwrap();
    assert_eq!(parsed.type_name, "DirectoryListing");
    whole.stdout.push_str(&line.repeat(2));
    let why = parse(&plan, &whole, Some(0), usize::MAX).unwrap_err();
    assert!(why.contains("over 4 MB"), "{why}");
    // stderr counts too.
    whole.stdout.truncate(limit - 10);
    whole.stderr = "x".repeat(20);
    assert!(parse(&plan, &whole, Some(0), usize::MAX).is_err());
}
