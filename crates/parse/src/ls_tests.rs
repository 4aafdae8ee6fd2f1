use super::*;
use crate::testutil::{ctx_at, output, parse_with, stage};
use serde_json::{Value, json};

/// The day year-less dates (`Dec  1 21:04`) are read on.
const NOW: &str = "2026-12-01T22:00:00+00:00";

fn run(argv: &str, stdout: &str, stderr: &str, filtered: bool) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(0));
    parse_with(recognize, &stage(argv), &out, &ctx_at(NOW), filtered)
}

fn parse(argv: &str, stdout: &str) -> Value {
    run(argv, stdout, "", false).unwrap()
}

fn by_name<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

const LA: &str = "total 84
drwxr-xr-x    3 root root    4096 Dec  1 21:04 .
drwxrwxrwt 2611 root root   69632 Dec  1 21:04 ..
-rw-r--r--    1 root root       3 Jan  2  2020 a.txt
-rwsr-xr-x    1 root root 1500000 Dec  1 21:04 big
prw-r--r--    1 root root       0 Dec  1 21:04 fifo
lrwxrwxrwx    1 root root       5 Dec  1 21:04 link -> a.txt
srwxr-xr-x    1 root root       0 Dec  1 21:04 sock
lrwxrwxrwx    1 root root      10 Dec  1 21:04 sp -> link -> with space
drwxr-xr-t    2 root root    4096 Dec  1 21:04 sub
-rw-r--r--    1 root root       0 Dec  1 21:04 with space
-rw-r--r--    1 root root       0 Dec  1 21:04 x -> y
-rw-r--r--+   1 root root       0 Dec  1 21:04 ünï
";

#[test]
fn long_listing_with_every_kind() {
    let l = parse("ls -la", LA);
    assert_eq!(l["directories"], json!([{"total_blocks": 84}]));
    assert_eq!(l["entries"].as_array().unwrap().len(), 12);
    let dot = by_name(&l, ".");
    assert_eq!(dot["type"], "directory");
    assert_eq!(dot["mode"], "0755");
    assert_eq!(dot["links"], 3);
    assert_eq!(by_name(&l, "..")["mode"], "1777");
    let a = by_name(&l, "a.txt");
    assert_eq!(a["size_bytes"], 3);
    assert_eq!(a["owner"], "root");
    assert_eq!(a["modified"]["rfc3339"], "2020-01-02T00:00:00+00:00");
    assert_eq!(a["modified"]["raw"], "Jan  2  2020");
    let big = by_name(&l, "big");
    assert_eq!(big["permissions"], "rwsr-xr-x");
    assert_eq!(big["mode"], "4755");
    assert_eq!(big["modified"]["rfc3339"], "2026-12-01T21:04:00+00:00");
    assert_eq!(by_name(&l, "fifo")["type"], "fifo");
    assert_eq!(by_name(&l, "sock")["type"], "socket");
    assert_eq!(by_name(&l, "link")["target"], "a.txt");
    assert_eq!(by_name(&l, "sub")["mode"], "1755");
    assert_eq!(by_name(&l, "with space")["size_bytes"], 0);
    let x = by_name(&l, "x -> y");
    assert_eq!(x["type"], "file");
    assert!(x.get("target").is_none());
    let u = by_name(&l, "ünï");
    assert_eq!(u["acl"], true);
    assert!(l["entries"][0].get("directory").is_none());
}

#[test]
fn symlink_size_tells_where_the_name_ends() {
    let l = parse("ls -la", LA);
    let sp = by_name(&l, "sp -> link");
    assert_eq!(sp["target"], "with space");
    assert!(sp.get("ambiguous_target").is_none());
    // 99 fits neither split: the first ` -> ` is taken, and said to be a guess.
    let odd = parse("ls -l", "lrwxrwxrwx 1 u g 99 Dec  1 21:04 a -> b -> c\n");
    assert_eq!(odd["entries"][0]["name"], "a");
    assert_eq!(odd["entries"][0]["target"], "b -> c");
    assert_eq!(odd["entries"][0]["ambiguous_target"], true);
    // With -F the target carries its indicator: the size is one less.
    let f = parse(
        "ls -lF",
        "lrwxrwxrwx 1 u g 3 Dec  1 21:07 dl -> sub/\nlrwxrwxrwx 1 u g 6 Dec  1 21:07 s -> x -> y\nlrwxrwxrwx 1 u g 5 Dec  1 21:07 t -> x -> y\n",
    );
    assert_eq!(f["entries"][0]["target"], "sub");
    assert_eq!(f["entries"][1]["name"], "s");
    assert_eq!(f["entries"][1]["target"], "x -> y");
    assert_eq!(f["entries"][2]["target"], "x -> y", "no indicator to drop");
    assert_eq!(f["entries"][2]["ambiguous_target"], true);
}

#[test]
fn full_time_is_exact() {
    let l = parse(
        "ls -l --full-time",
        "total 8\n-rw-r--r-- 1 root root 3 2020-01-02 03:04:05.123456789 +0100 a.txt\n",
    );
    let t = &l["entries"][0]["modified"];
    assert_eq!(t["rfc3339"], "2020-01-02T03:04:05.123456789+01:00");
    assert_eq!(t["epoch"], 1_577_930_645);
    assert!(t.get("raw").is_none());
}

#[test]
fn other_time_styles() {
    let iso = "total 12
-rw-r--r-- 1 root root       3 2020-01-02  a.txt
-rwsr-xr-x 1 root root 1500000 12-01 21:04 big
-rw-r--r-- 1 root root       0 2020-01-02   lead
";
    let l = parse("ls -l --time-style=iso", iso);
    assert_eq!(
        by_name(&l, "a.txt")["modified"]["rfc3339"],
        "2020-01-02T00:00:00+00:00"
    );
    assert_eq!(
        by_name(&l, "big")["modified"]["rfc3339"],
        "2026-12-01T21:04:00+00:00"
    );
    assert_eq!(by_name(&l, " lead")["size_bytes"], 0);
    let long = parse(
        "ls -l --time-style long-iso",
        "-rw-r--r-- 1 root root 3 2020-01-02 03:04 12:00 x\n",
    );
    assert_eq!(long["entries"][0]["name"], "12:00 x");
    assert_eq!(long["entries"][0]["modified"]["raw"], "2020-01-02 03:04");
}

#[test]
fn year_less_dates_take_the_latest_year_not_in_the_future() {
    let out = output("-rw-r--r-- 1 u g 1 Dec 31 23:59 f\n", "", Some(0));
    let data = parse_with(
        recognize,
        &stage("ls -l"),
        &out,
        &ctx_at("2027-01-01T08:00:00+01:00"),
        false,
    )
    .unwrap();
    assert_eq!(
        data["entries"][0]["modified"]["rfc3339"],
        "2026-12-31T23:59:00+01:00"
    );
}

#[test]
fn human_sizes_keep_the_printed_text() {
    let l = parse(
        "ls -lh",
        "total 8.0K\n-rw-r--r-- 1 root root    3 Jan  2  2020 a.txt\n-rwsr-xr-x 1 root root 1.5M Dec  1 21:04 big\n",
    );
    assert_eq!(l["directories"], json!([{"total_raw": "8.0K"}]));
    assert_eq!(by_name(&l, "a.txt")["size_bytes"], 3);
    assert!(by_name(&l, "a.txt").get("size_raw").is_none());
    assert_eq!(by_name(&l, "big")["size_bytes"], 1_572_864);
    assert_eq!(by_name(&l, "big")["size_raw"], "1.5M");
    let si = parse(
        "ls -ls --si",
        "total 13k\n4.1k -rw-r--r-- 1 root root 1.5M Dec  1 21:04 big\n",
    );
    assert_eq!(si["entries"][0]["size_bytes"], 1_500_000);
    assert_eq!(si["entries"][0]["blocks_raw"], "4.1k");
}

#[test]
fn inode_blocks_numeric_ids_and_missing_columns() {
    let l = parse(
        "ls -lisn",
        "total 8\n10125568 4 -rw-r--r-- 1 0 0 3 Jan  2  2020 a.txt\n",
    );
    let a = &l["entries"][0];
    assert_eq!(
        (a["inode"].clone(), a["blocks"].clone()),
        (json!(10_125_568), json!(4))
    );
    assert_eq!(
        (a["owner"].clone(), a["group"].clone()),
        (json!("0"), json!("0"))
    );
    let g = parse("ls -go", "-rw-r--r-- 1       3 Jan  2  2020 a.txt\n");
    assert!(g["entries"][0].get("owner").is_none() && g["entries"][0].get("group").is_none());
    assert_eq!(g["entries"][0]["size_bytes"], 3);
}

#[test]
fn devices_and_unreadable_entries() {
    let l = parse(
        "ls -l /dev/null /dev/loop0",
        "brw------- 1 root root 7, 0 Dec  1 03:43 /dev/loop0\ncrw-rw-rw- 1 root root 1, 3 Dec  1 03:43 /dev/null\n",
    );
    assert_eq!(l["entries"][1]["device"], json!({"major": 1, "minor": 3}));
    assert_eq!(l["entries"][0]["type"], "block_device");
    assert!(l["entries"][1].get("size_bytes").is_none());
    let q = parse(
        "ls -lis",
        "total 0\n? ? d????????? ? ? ? ?                                   ? d\n",
    );
    let d = &q["entries"][0];
    assert_eq!(d["type"], "directory");
    assert_eq!(d["name"], "d");
    assert!(d.get("owner").is_none() && d.get("modified").is_none() && d.get("mode").is_none());
}

#[test]
fn classify_indicators_are_dropped() {
    let l = parse(
        "ls -lF",
        "-rwsr-xr-x 1 r r 1 Dec  1 21:04 big*\nprw-r--r-- 1 r r 0 Dec  1 21:04 fifo|\nsrwxr-xr-x 1 r r 0 Dec  1 21:04 sock=\ndrwxr-xr-t 2 r r 4096 Dec  1 21:04 sub/\n-rw-r--r-- 1 r r 0 Dec  1 21:04 star*\n",
    );
    let names: Vec<&str> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "fifo", "sock", "sub", "star*"]);
    let p = parse(
        "ls -lp",
        "prw-r--r-- 1 r r 0 Dec  1 21:04 fifo|\ndrwxr-xr-t 2 r r 4096 Dec  1 21:04 sub/\n",
    );
    assert_eq!(p["entries"][0]["name"], "fifo|");
    assert_eq!(p["entries"][1]["name"], "sub");
}

const SEVERAL: &str = "-rw-r--r-- 1 root root 3 Jan  2  2020 a.txt

sub:
total 4
drwxr-xr-x 2 root root 4096 Dec  1 21:05 deep

sub/deep:
total 0
";

#[test]
fn several_operands_and_recursion() {
    let l = parse("ls -l a.txt sub sub/deep", SEVERAL);
    assert_eq!(
        l["directories"],
        json!([{"path": "sub", "total_blocks": 4}, {"path": "sub/deep", "total_blocks": 0}])
    );
    assert!(l["entries"][0].get("directory").is_none());
    assert_eq!(l["entries"][1]["directory"], "sub");
    let r = parse(
        "ls -lR",
        ".:\ntotal 4\ndrwxr-xr-x 2 root root 4096 Dec  1 21:05 sub\n\n./sub:\ntotal 0\n",
    );
    assert_eq!(r["entries"][0]["directory"], ".");
    assert_eq!(r["directories"][1]["path"], "./sub");
}

#[test]
fn filtered_output_keeps_entries_only() {
    let grep = run(
        "ls -lR",
        "./sub:\n-rw-r--r-- 1 root root 3 Jan  2  2020 a.txt\ntotal 4\n\n",
        "",
        true,
    )
    .unwrap();
    assert_eq!(grep["entries"].as_array().unwrap().len(), 1);
    assert!(grep["entries"][0].get("directory").is_none());
    assert!(grep.get("directories").is_none());
    assert!(run("ls -l", "hello\n", "", true).is_err());
    assert_eq!(run("ls -l", "", "", true).unwrap()["entries"], json!([]));
}

#[test]
fn names_holding_newlines_continue_on_the_next_line() {
    let l = parse(
        "ls -l",
        "total 0\n-rw-r--r-- 1 r r 0 Dec  1 21:04 two\nlines\n-rw-r--r-- 1 r r 0 Dec  1 21:04 z\n",
    );
    assert_eq!(l["entries"][0]["name"], "two\nlines");
    assert_eq!(l["entries"][1]["name"], "z");
}

#[test]
fn garbage_and_failures_are_refused() {
    let bad = run("ls -l", "hello world\n", "", false).unwrap_err();
    assert!(bad.starts_with("line 1 is not an `ls -l` entry"), "{bad}");
    assert!(run("ls -l", "-rw-r--r-- 1 r r 0 Dek  1 21:04 z\n", "", false).is_err());
    assert!(run("ls -l", "-rw-r--r-- 1 r r x Dec  1 21:04 z\n", "", false).is_err());
    assert!(run("ls -l", "-rw-r--r-- 1 r r 0 Dec  1 21:04\n", "", false).is_err());
    let huge_header = format!("{}:\ntotal 0\n", "d".repeat(5000));
    assert!(
        run("ls -lR", &huge_header, "", false).is_err(),
        "headers are bounded"
    );
    let max_size = "lrwxrwxrwx 1 r r 18446744073709551615 Dec  1 21:04 a -> b/\n";
    assert_eq!(
        run("ls -lF", max_size, "", false).unwrap()["entries"][0]["target"],
        "b/"
    );
    assert!(
        run(
            "ls -l a b",
            "-rw-r--r-- 1 r r 0 Dec  1 21:04 a\n\nnot a header\n",
            "",
            false
        )
        .is_err()
    );
    let missing = run(
        "ls -l nope",
        "",
        "ls: cannot access 'nope': No such file or directory\n",
        false,
    )
    .unwrap_err();
    assert!(missing.contains("cannot access 'nope'"), "{missing}");
    let partial = run(
        "ls -l a nope",
        "-rw-r--r-- 1 r r 0 Dec  1 21:04 a\n",
        "ls: cannot access 'nope': x\n",
        false,
    )
    .unwrap();
    assert_eq!(partial["errors"], json!(["ls: cannot access 'nope': x"]));
}

#[test]
fn only_long_formats_are_recognised() {
    for argv in [
        "ls -l",
        "ls -la",
        "ls -lA",
        "ls -lah",
        "ls -alh",
        "ls -n",
        "ls --full-time",
        "ls -lt",
        "ls -lS",
        "ls -lr",
        "ls -li",
        "ls -ls",
        "ls -ld .",
        "ls -lF",
        "ls -lp",
        "ls -lR",
        "ls -l --time-style=long-iso",
        "ls -l --color=always",
        "ls -lI *.o",
        "ls -l -- -1",
        "ls -go",
        "ls --format=long",
    ] {
        assert!(recognize(&stage(argv)).is_some(), "{argv}");
    }
    for argv in [
        "ls",
        "ls -a",
        "ls -l1",
        "ls -lC",
        "ls -lx",
        "ls -lm",
        "ls -lc",
        "ls -lu",
        "ls -lb",
        "ls -lQ",
        "ls -lZ",
        "ls -l --time-style=+%s",
        "ls -l --block-size=M",
        "ls -l --author",
        "ls -lD",
        "dir -l",
        "ls -l --time=atime",
        "ls -l --quoting-style=shell",
    ] {
        assert!(recognize(&stage(argv)).is_none(), "{argv}");
    }
}

#[test]
fn hostile_input_never_panics() {
    for text in [
        "\u{0}",
        "-",
        "l",
        "lrwxrwxrwx",
        "lrwxrwxrwx 1 r r 3 Dec  1 21:04  -> ",
        "-rw-r--r-- 1 r r 0 Feb 30 21:04 x",
        "-rw-r--r-- 1 r r 0 2020-13-45 99:99 x",
        "c--------- 1 r r 9999999999999999999999, 1 Dec  1 21:04 x",
        "? ? ? ? ? ? ? x",
        "\n\n\n:",
        "total \u{e9}",
        "-rw-r--r-- 1 r r 0 ÄÄÄ 1 21:04 x",
    ] {
        for argv in ["ls -l", "ls -lis", "ls -lhF"] {
            let _ = run(argv, text, "", false);
            let _ = run(argv, text, "", true);
        }
    }
}

#[test]
fn permission_letters_and_bits_say_the_same() {
    // An entry keeps only the bits: the letters written back must be the ones read, for
    // every one of the 4096 modes.
    for bits in 0..=0o7777u32 {
        let letters = super::options::letters(bits);
        let token = format!("-{}", std::str::from_utf8(&letters).unwrap());
        let read = super::options::mode_string(&token).unwrap();
        assert_eq!(read.permissions, Some(bits), "{token}");
    }
    assert_eq!(&super::options::letters(0o4755), b"rwsr-xr-x");
    assert_eq!(&super::options::letters(0o1754), b"rwxr-xr-T");
}

#[test]
fn past_the_budget_entries_are_counted_and_still_checked() {
    let text: String = (0..1000)
        .map(|i| format!("-rw-r--r-- 1 u g {i} Dec  1 10:00 file-{i}\n"))
        .collect();
    let recognized = crate::recognize(&[stage("ls -l")]).unwrap();
    let now = ctx_at(NOW);
    let out = |stdout| output(stdout, "", Some(0));
    let (parsed, cut) = recognized.parse_within(&out(&text), &now, 5000).unwrap();
    let cut = cut.expect("cut");
    assert_eq!(cut.kept + cut.omitted, 1000, "{cut:?}");
    assert!(cut.head > 10 && cut.kept - cut.head > 10, "{cut:?}");
    // The budget is the model's text; `data` repeats every key and is larger.
    assert!(
        parsed.model_text().len() <= 5000,
        "{}",
        parsed.model_text().len()
    );
    // The first entries and the last ones, whole and in order, as a parse of everything
    // gives them.
    let (whole, none) = recognized
        .parse_within(&out(&text), &now, usize::MAX)
        .unwrap();
    assert_eq!(none, None);
    let all = whole.data["entries"].as_array().unwrap();
    let kept = parsed.data["entries"].as_array().unwrap();
    assert_eq!(kept[..cut.head], all[..cut.head]);
    assert_eq!(kept[cut.head..], all[1000 - (cut.kept - cut.head)..]);
    for (i, entry) in all.iter().enumerate() {
        assert_eq!(entry["name"], format!("file-{i}"), "{entry}");
        assert_eq!(entry["owner"], "u", "{entry}");
        assert_eq!(entry["modified"]["raw"], "Dec  1 10:00", "{entry}");
    }
    let bad = format!("{text}\nnot a header\n");
    let why = recognized.parse_within(&out(&bad), &now, 5000).unwrap_err();
    assert!(why.contains("line 1002"), "{why}");
}
