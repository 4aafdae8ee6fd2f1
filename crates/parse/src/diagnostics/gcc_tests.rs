use super::*;
use crate::diagnostics::shared::{MAX_NOTE_CHARS, MAX_NOTES};
use crate::testutil::{ctx, diagnostic_fact as fact, diagnostic_facts as facts};
use crate::testutil::{output, parse_with, stage};
use serde_json::{Value, json};

pub(super) fn parse(cmd: &str, stderr: &str, exit: i32, filtered: bool) -> Result<Value, String> {
    let out = output("", stderr, Some(exit));
    parse_with(recognize, &stage(cmd), &out, &ctx(), filtered)
}

pub(super) fn fixture(name: &str) -> &'static str {
    match name {
        "gcc/errors" => include_str!("../../tests/fixtures/gcc/errors.err"),
        "gcc/link" => include_str!("../../tests/fixtures/gcc/link.err"),
        "gcc/include" => include_str!("../../tests/fixtures/gcc/include.err"),
        "gcc/cxx" => include_str!("../../tests/fixtures/gcc/cxx.err"),
        "gcc/json" => include_str!("../../tests/fixtures/gcc/json.err"),
        "gcc/werror" => include_str!("../../tests/fixtures/gcc/werror.err"),
        "clang/errors" => include_str!("../../tests/fixtures/clang/errors.err"),
        "clang/link" => include_str!("../../tests/fixtures/clang/link.err"),
        "clang/cxx" => include_str!("../../tests/fixtures/clang/cxx.err"),
        "clang/include" => include_str!("../../tests/fixtures/clang/include.err"),
        _ => unreachable!(),
    }
}

#[test]
fn recognises_compilers_and_refuses_other_formats() {
    for cmd in [
        "gcc -c a.c",
        "gcc-12 -Wall -Wextra -std=c11 -o a a.c",
        "/usr/bin/x86_64-linux-gnu-gcc-12 a.c",
        "g++ -O2 -c t.cpp",
        "cc a.c",
        "c++ a.cpp",
        "clang -c a.c",
        "clang++-14 -Wall a.cpp",
        "gcc -fdiagnostics-format=json -c a.c",
        "gcc -fdiagnostics-color=always -c a.c",
        "gcc -Wl,-O1 -Xlinker --as-needed a.c",
        "gcc -o out a.c",
        "gcc -MMD -c a.c",
    ] {
        assert!(recognize(&stage(cmd)).is_some(), "{cmd}");
    }
    for cmd in [
        "gcc -E a.c",
        "gcc -M a.c",
        "gcc --version",
        "gcc -dumpversion",
        "gcc -v a.c",
        "gcc -print-search-dirs",
        "gcc -fdiagnostics-format=sarif-stderr a.c",
        "gcc -fdiagnostics-format=json-file a.c",
        "gcc -fmessage-length=80 a.c",
        "gcc -fdiagnostics-column-origin=0 a.c",
        "gcc -S -o - a.c",
        "gcc -Wl,--verbose a.c",
        "gcc -Xlinker -M a.c",
        "clang -fdiagnostics-parseable-fixits a.c",
        "clang-format a.c",
        "clang-tidy-14 a.c",
        "gcc-ar rcs x.a a.o",
        "c++filt x",
        "make",
    ] {
        assert!(recognize(&stage(cmd)).is_none(), "{cmd}");
    }
}

#[test]
fn failures_without_messages() {
    let data = parse(
        "gcc -c nofile.c",
        "cc1: fatal error: nofile.c: No such file or directory\ncompilation terminated.\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(
        facts(&data),
        [fact(
            "error",
            "",
            0,
            0,
            "",
            "nofile.c: No such file or directory"
        )]
    );
    let data = parse(
        "clang -c nofile.c",
        "clang: error: no such file or directory: 'nofile.c'\nclang: error: no input files\n",
        1,
        false,
    )
    .unwrap();
    assert_eq!(data["summary"]["errors"], 2);
    let clean = parse("gcc -c ok.c", "", 0, false).unwrap();
    assert_eq!(
        clean,
        json!({"tool": "gcc", "summary": {"errors": 0, "warnings": 0}, "diagnostics": []})
    );
    assert!(
        parse("gcc -c ok.c", "", 1, false)
            .unwrap_err()
            .contains("exited 1")
    );
    let killed = parse_with(
        recognize,
        &stage("gcc a.c"),
        &output("", "", None),
        &ctx(),
        false,
    );
    assert!(killed.is_err());
}

#[test]
fn unknown_lines_are_refused() {
    for stderr in [
        "hello world\n",
        "make: *** [Makefile:3: all] Error 1\n",
        "Segmentation fault\n",
        "a.c: something odd\n",
        "a.c:3: something odd\n",
        "a.c:3:4: bogus: x\n",
    ] {
        let why = parse("gcc -c a.c", stderr, 1, false).unwrap_err();
        assert!(why.starts_with("line 1 is not a gcc message"), "{why}");
    }
    // After a message, gutter-less lines are its excerpt; elsewhere they are not.
    assert!(parse("gcc a.c", "a.c:1:1: error: x\nint x\n^\n", 1, false).is_ok());
}

#[test]
fn filtered_output_keeps_what_is_left() {
    let lines: String = fixture("gcc/errors")
        .lines()
        .filter(|l| l.contains("error"))
        .map(|l| format!("{l}\n"))
        .collect();
    let data = parse("gcc -c a.c", &lines, 1, true).unwrap();
    assert_eq!(data["summary"]["errors"], 2);
    let why = parse("gcc -c a.c", "", 1, true).unwrap_err();
    assert!(why.contains("the filter after `gcc` left none"), "{why}");
    // clang's closing count is kept when lines were dropped.
    let data = parse(
        "clang -c a.c",
        "a.c:5:5: error: x\n1 warning and 2 errors generated.\n",
        1,
        true,
    )
    .unwrap();
    assert_eq!(
        data["summary"],
        json!({"errors": 2, "warnings": 1, "line": "1 warning and 2 errors generated."})
    );
}

#[test]
fn odd_names_and_unicode() {
    let stderr = "my dir/ünï côde.c:3:7: warning: unused variable ‘ÿ’ [-Wunused-variable]\n    3 |   int ÿ;\n      |       ^\nC:\\src\\a.c:4:1: error: boom\n";
    let data = parse("gcc -c x.c", stderr, 1, false).unwrap();
    assert_eq!(
        facts(&data),
        [
            fact(
                "warning",
                "my dir/ünï côde.c",
                3,
                7,
                "-Wunused-variable",
                "unused variable ‘ÿ’"
            ),
            fact("error", "C:\\src\\a.c", 4, 1, "", "boom"),
        ]
    );
}

#[test]
fn notes_are_capped_and_clipped() {
    let mut stderr = String::from("a.cpp:1:1: error: no match\n");
    for i in 0..50 {
        stderr.push_str(&format!(
            "b.h:{i}:1: note: candidate {}\n",
            "x".repeat(2000)
        ));
    }
    let data = parse("g++ a.cpp", &stderr, 1, false).unwrap();
    let notes = data["diagnostics"][0]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), MAX_NOTES);
    assert!(notes[0].as_str().unwrap().chars().count() <= MAX_NOTE_CHARS + 1);
}

#[test]
fn hostile_lines_stay_linear_and_do_not_panic() {
    let colons = ":1".repeat(50_000);
    let _ = parse("gcc a.c", &colons, 1, false);
    let spaces = format!("a.c:1:1: error: x{}\n", " [".repeat(20_000));
    assert!(parse("gcc a.c", &spaces, 1, false).is_ok());
    for text in [
        "[",
        "[{",
        "a.c:99999999999999999999999:1: error: x",
        "In file included from",
        "                 from x",
        "✖:1:1: error: é",
    ] {
        let _ = parse("gcc -fdiagnostics-format=json a.c", text, 1, false);
        let _ = parse("gcc a.c", text, 1, true);
    }
}
