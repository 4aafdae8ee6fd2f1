//! gcc's and clang's output read in context, through the whole parser: excerpts, notes,
//! context lines, the linker's lines, the closing line, and the JSON format.

use crate::diagnostics::gcc::tests::{fixture, parse};
use crate::testutil::{diagnostic_fact as fact, diagnostic_facts as facts};
use serde_json::{Value, json};

#[test]
fn gcc_errors_warnings_notes_and_excerpts() {
    let data = parse("gcc -Wall -Wextra -c a.c", fixture("gcc/errors"), 1, false).unwrap();
    assert_eq!(data["tool"], "gcc");
    assert_eq!(data["summary"], json!({"errors": 2, "warnings": 3}));
    assert_eq!(
        facts(&data),
        [
            fact(
                "error",
                "a.c",
                5,
                5,
                "",
                "'x' undeclared (first use in this function)"
            ),
            fact(
                "warning",
                "a.c",
                6,
                5,
                "-Wimplicit-function-declaration",
                "implicit declaration of function 'printf'"
            ),
            fact(
                "warning",
                "a.c",
                6,
                5,
                "-Wbuiltin-declaration-mismatch",
                "incompatible implicit declaration of built-in function 'printf'"
            ),
            fact("error", "a.c", 7, 13, "", "expected ';' before '}' token"),
            fact(
                "warning",
                "a.c",
                4,
                9,
                "-Wunused-variable",
                "unused variable 'y'"
            ),
        ]
    );
    assert_eq!(
        data["diagnostics"][0]["notes"],
        json!([
            "In function 'main'",
            "note: each undeclared identifier is reported only once for each function it appears in"
        ])
    );
    // A note elsewhere says where.
    assert_eq!(
        data["diagnostics"][1]["notes"],
        json!(["a.c:2:1: note: include '<stdio.h>' or provide a declaration of 'printf'"])
    );
}

#[test]
fn linker_errors_have_no_line_unless_debug_info_gives_one() {
    let data = parse("gcc -Wall b.c -o b", fixture("gcc/link"), 1, false).unwrap();
    let facts = facts(&data);
    assert_eq!(facts.len(), 4);
    assert_eq!(
        facts[1],
        fact(
            "warning",
            "b.c",
            2,
            12,
            "-Wunused-function",
            "'unused_fn' defined but not used"
        )
    );
    assert_eq!(
        facts[2],
        fact("error", "b.c", 0, 0, "", "undefined reference to `foo'")
    );
    assert_eq!(
        data["diagnostics"][2]["notes"],
        json!(["in function `main'"])
    );
    assert_eq!(
        facts[3],
        fact("error", "", 0, 0, "", "ld returned 1 exit status")
    );
    assert_eq!(data["diagnostics"][1]["notes"], json!(["At top level"]));

    let debug = "/usr/bin/ld: /tmp/ccKpJdb3.o: in function `main':\n\
                 /tmp/demo/b.c:5: undefined reference to `foo'\n\
                 /usr/bin/ld: cannot find -lnope: No such file or directory\n\
                 collect2: error: ld returned 1 exit status\n";
    let data = parse("gcc -g b.c -lnope", debug, 1, false).unwrap();
    assert_eq!(
        self::facts(&data),
        [
            fact(
                "error",
                "/tmp/demo/b.c",
                5,
                0,
                "",
                "undefined reference to `foo'"
            ),
            fact(
                "error",
                "",
                0,
                0,
                "",
                "cannot find -lnope: No such file or directory"
            ),
            fact("error", "", 0, 0, "", "ld returned 1 exit status"),
        ]
    );
}

#[test]
fn include_chains_and_cxx_context_become_notes() {
    let data = parse("gcc -c d.c", fixture("gcc/include"), 1, false).unwrap();
    assert_eq!(data["diagnostics"][0]["file"], "inc.h");
    assert_eq!(
        data["diagnostics"][0]["notes"],
        json!(["In file included from d.c:1"])
    );
    assert!(data["diagnostics"][1].get("notes").is_none());

    let data = parse("g++ -Wall -c t.cpp", fixture("gcc/cxx"), 1, false).unwrap();
    let facts = facts(&data);
    assert_eq!(data["summary"], json!({"errors": 5, "warnings": 1}));
    assert_eq!(
        facts[1],
        fact(
            "error",
            "t.cpp",
            8,
            16,
            "",
            "no matching function for call to 'push_back(const char [2])'"
        )
    );
    assert_eq!(facts[2].4, "-fpermissive");
    let notes = data["diagnostics"][1]["notes"].as_array().unwrap();
    assert_eq!(notes[0], "In function 'int main()'");
    assert!(
        notes[1]
            .as_str()
            .unwrap()
            .starts_with("/usr/include/c++/12/bits/stl_vector.h:1276:7: note: candidate:")
    );
    assert_eq!(
        notes[2],
        "/usr/include/c++/12/bits/stl_vector.h:1276:7: note: conversion of argument 1 would be ill-formed:"
    );
    let last = &data["diagnostics"][5];
    assert_eq!(
        last["message"],
        "request for member 'foo' in 't', which is of non-class type 'int'"
    );
    assert_eq!(
        last["notes"],
        json!([
            "In instantiation of 'void f(T) [with T = int]'",
            "t.cpp:6:6: required from here"
        ])
    );
}

#[test]
fn werror_closing_line_is_the_summary() {
    let data = parse("gcc -Werror -Wall -c b.c", fixture("gcc/werror"), 1, false).unwrap();
    assert_eq!(
        data["summary"]["line"],
        "cc1: all warnings being treated as errors"
    );
    assert_eq!(data["summary"]["errors"], 2);
    assert_eq!(data["diagnostics"][0]["code"], "-Werror=unused-variable");
}

#[test]
fn json_format_gives_what_the_text_gives() {
    let json = parse(
        "gcc -Wall -fdiagnostics-format=json -c a.c",
        fixture("gcc/json"),
        1,
        false,
    )
    .unwrap();
    let text = parse("gcc -Wall -Wextra -c a.c", fixture("gcc/errors"), 1, false).unwrap();
    assert_eq!(facts(&json), facts(&text));
    assert_eq!(json["summary"], text["summary"]);
    for (j, t) in json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .zip(text["diagnostics"].as_array().unwrap())
    {
        // The text's context (`In function 'main'`) is not in gcc's JSON.
        let t_notes: Vec<&Value> = t["notes"].as_array().map_or(vec![], |n| {
            n.iter()
                .filter(|n| n.as_str().unwrap().contains("note: "))
                .collect()
        });
        let j_notes: Vec<&Value> = j["notes"].as_array().map_or(vec![], |n| n.iter().collect());
        assert_eq!(j_notes, t_notes);
    }
    let mixed = "[{\"kind\": \"fatal error\", \"column-origin\": 1, \"children\": [], \"locations\": [], \"message\": \"nofile.c: No such file or directory\"}]\ncompilation terminated.\n";
    let data = parse("gcc -fdiagnostics-format=json -c nofile.c", mixed, 1, false).unwrap();
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
    assert_eq!(data["summary"]["line"], "compilation terminated.");
    assert!(
        parse(
            "gcc -fdiagnostics-format=json a.c",
            "[{\"kind\": 3}]",
            1,
            false
        )
        .is_err()
    );
}

#[test]
fn analyzer_paths_are_excerpt() {
    let stderr = "an.c: In function 'f':\n\
an.c:5:5: warning: double-'free' of 'p' [CWE-415] [-Wanalyzer-double-free]\n\
    5 |     free(p);\n\
      |     ^~~~~~~\n\
  'f': events 1-3\n\
    |\n\
    |    3 |     char *p = malloc(10);\n\
    |      |               (1) allocated here\n\
    |\n";
    let data = parse("gcc -fanalyzer -c an.c", stderr, 0, false).unwrap();
    assert_eq!(
        facts(&data),
        [fact(
            "warning",
            "an.c",
            5,
            5,
            "-Wanalyzer-double-free",
            "double-'free' of 'p' [CWE-415]"
        )]
    );
}

#[test]
fn clang_excerpts_have_no_gutter() {
    let data = parse(
        "clang -Wall -Wextra -c a.c",
        fixture("clang/errors"),
        1,
        false,
    )
    .unwrap();
    assert_eq!(data["tool"], "clang");
    assert_eq!(
        data["summary"],
        json!({"errors": 2, "warnings": 1, "line": "1 warning and 2 errors generated."})
    );
    assert_eq!(
        facts(&data)[2],
        fact(
            "error",
            "a.c",
            7,
            13,
            "",
            "expected ';' after return statement"
        )
    );

    let data = parse("cc -Wall b.c -o b", fixture("clang/link"), 1, false).unwrap();
    assert_eq!(data["tool"], "clang");
    assert_eq!(facts(&data).len(), 4);
    assert_eq!(
        facts(&data)[3].5,
        "linker command failed with exit code 1 (use -v to see invocation)"
    );

    let data = parse("clang++ -Wall -c t.cpp", fixture("clang/cxx"), 1, false).unwrap();
    assert_eq!(data["summary"]["errors"], 3);
    assert_eq!(
        data["diagnostics"][3]["notes"],
        json!([
            "t.cpp:6:5: note: in instantiation of function template specialization 'f<int>' requested here"
        ])
    );

    let data = parse("clang -c d.c", fixture("clang/include"), 1, false).unwrap();
    assert_eq!(data["diagnostics"][0]["file"], "./inc.h");
    assert_eq!(
        data["diagnostics"][0]["notes"],
        json!(["In file included from d.c:1"])
    );
}

#[test]
fn a_label_named_error_in_an_excerpt_is_source() {
    let stderr = "a.c:9:1: warning: label 'error' defined but not used [-Wunused-label]\n\
error:\n\
^\n\
a.c:20:3: error: too many errors\n\
  x\n\
  ^\n\
fatal error: too many errors emitted, stopping now [-ferror-limit=]\n\
2 errors generated.\n";
    let data = parse("clang -c a.c", stderr, 1, false).unwrap();
    assert_eq!(
        data["summary"],
        json!({"errors": 2, "warnings": 1, "line": "2 errors generated."})
    );
    assert_eq!(
        facts(&data)[2],
        fact(
            "error",
            "",
            0,
            0,
            "-ferror-limit=",
            "too many errors emitted, stopping now"
        )
    );
}
