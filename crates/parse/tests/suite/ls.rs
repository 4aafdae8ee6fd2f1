//! `ls -l` and its variants, run for real on a directory made for the test, against what
//! `std::fs::symlink_metadata` says of each file.

// Helpers outside `#[test]` functions unwrap too: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, parse, parsed_fixtures, stage};

/// Runs `argv` in `dir` (TZ=UTC, C locale, output to a pipe) and parses its output.
fn ls(dir: &Path, argv: &[&str]) -> Value {
    let out = command(argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    let output = Output {
        stdout: &stdout,
        stderr: &stderr,
        exit_code: out.status.code(),
    };
    let parsed = parse(&[stage(argv)], &output).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!(parsed.type_name, "DirectoryListing");
    parsed.data
}

const NAMES: &[&str] = &[
    "empty",
    "three",
    "big file",
    "ünïcødé",
    "link",
    "a -> b",
    "fifo",
    "sock",
    "sub",
    "old",
    "two\nlines",
];

/// A directory holding one of each kind the parser knows.
fn fixture() -> tempfile::TempDir {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("empty"), "").unwrap();
    std::fs::write(dir.join("three"), "abc").unwrap();
    std::fs::File::create(dir.join("big file"))
        .unwrap()
        .set_len(1_500_000)
        .unwrap();
    std::fs::write(dir.join("ünïcødé"), "ü").unwrap();
    std::fs::write(dir.join("two\nlines"), "x").unwrap();
    std::fs::set_permissions(dir.join("three"), std::fs::Permissions::from_mode(0o4751)).unwrap();
    std::os::unix::fs::symlink("three", dir.join("link")).unwrap();
    std::os::unix::fs::symlink("x -> y", dir.join("a -> b")).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(dir.join("fifo"))
            .status()
            .unwrap()
            .success()
    );
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/inner"), "12345").unwrap();
    std::fs::write(dir.join("old"), "o").unwrap();
    assert!(
        Command::new("touch")
            .args(["-d", "2020-01-02 03:04:05.123456789", "old"])
            .current_dir(dir)
            .status()
            .unwrap()
            .success()
    );
    tmp
}

fn entry<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no entry {name:?} in {listing}"))
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    match () {
        () if t.is_symlink() => "symlink",
        () if t.is_dir() => "directory",
        () if t.is_fifo() => "fifo",
        () if t.is_socket() => "socket",
        () if t.is_char_device() => "char_device",
        () if t.is_block_device() => "block_device",
        () => "file",
    }
}

/// Every fact `--full-time` prints, exactly; then the default format to the minute.
#[test]
fn full_time_and_default_match_the_metadata() {
    let tmp = fixture();
    let full = ls(tmp.path(), &["ls", "-la", "--full-time"]);
    let plain = ls(tmp.path(), &["ls", "-la"]);
    assert_eq!(
        full["entries"].as_array().unwrap().len(),
        NAMES.len() + 2,
        "{full}"
    );
    for name in NAMES {
        let meta = std::fs::symlink_metadata(tmp.path().join(name)).unwrap();
        let e = entry(&full, name);
        assert_eq!(e["type"], kind(&meta), "{name}");
        assert_eq!(e["size_bytes"], meta.size(), "{name}");
        assert_eq!(e["mode"], format!("{:04o}", meta.mode() & 0o7777), "{name}");
        assert_eq!(e["links"], meta.nlink(), "{name}");
        assert_eq!(e["modified"]["epoch"], meta.mtime(), "{name}");
        let at = chrono::DateTime::parse_from_rfc3339(e["modified"]["rfc3339"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            i64::from(at.timestamp_subsec_nanos()),
            meta.mtime_nsec(),
            "{name}"
        );
        let p = entry(&plain, name);
        let expected = if *name == "old" {
            meta.mtime() - meta.mtime().rem_euclid(86_400)
        } else {
            meta.mtime() - meta.mtime().rem_euclid(60)
        };
        assert_eq!(p["modified"]["epoch"], expected, "{name}: {p}");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(tmp.path().join(name)).unwrap();
            assert_eq!(e["target"], target.to_str().unwrap(), "{name}");
            assert_eq!(p["target"], target.to_str().unwrap(), "{name}");
        }
    }
    assert_eq!(entry(&full, "three")["permissions"], "rwsr-x--x");
}

#[test]
fn numeric_ids_inodes_and_blocks() {
    let tmp = fixture();
    let listing = ls(tmp.path(), &["ls", "-lnis"]);
    for name in NAMES {
        let meta = std::fs::symlink_metadata(tmp.path().join(name)).unwrap();
        let e = entry(&listing, name);
        assert_eq!(e["owner"], meta.uid().to_string(), "{name}");
        assert_eq!(e["group"], meta.gid().to_string(), "{name}");
        assert_eq!(e["inode"], meta.ino(), "{name}");
        assert_eq!(
            e["blocks"],
            meta.blocks().div_ceil(2),
            "{name}: 1024-byte blocks"
        );
    }
}

#[test]
fn human_sizes_are_close() {
    let tmp = fixture();
    let listing = ls(tmp.path(), &["ls", "-lh"]);
    let big = entry(&listing, "big file");
    assert_eq!(big["size_raw"], "1.5M");
    let bytes = big["size_bytes"].as_u64().unwrap();
    assert!(bytes.abs_diff(1_500_000) < 1_500_000 / 10, "{bytes}");
    assert_eq!(entry(&listing, "three")["size_bytes"], 3);
}

#[test]
fn classify_names_match_the_files() {
    let tmp = fixture();
    for flag in ["-lF", "-lp", "--file-type"] {
        let argv: Vec<&str> = if flag == "--file-type" {
            vec!["ls", "-l", flag]
        } else {
            vec!["ls", flag]
        };
        let listing = ls(tmp.path(), &argv);
        for name in NAMES {
            assert_eq!(entry(&listing, name)["name"], *name, "{flag}");
        }
        assert_eq!(entry(&listing, "link")["target"], "three", "{flag}");
    }
}

#[test]
fn recursion_and_several_operands() {
    let tmp = fixture();
    let listing = ls(tmp.path(), &["ls", "-lR"]);
    let inner = entry(&listing, "inner");
    assert_eq!(inner["directory"], "./sub");
    assert_eq!(inner["size_bytes"], 5);
    assert_eq!(entry(&listing, "three")["directory"], ".");
    let paths: Vec<&str> = listing["directories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".", "./sub"]);
    let several = ls(tmp.path(), &["ls", "-l", "three", "sub", "empty"]);
    assert!(entry(&several, "three").get("directory").is_none());
    assert_eq!(entry(&several, "inner")["directory"], "sub");
    assert_eq!(several["directories"][0]["path"], "sub");
}

#[test]
fn devices_print_their_numbers() {
    let tmp = fixture();
    let listing = ls(tmp.path(), &["ls", "-l", "/dev/null"]);
    let rdev = std::fs::metadata("/dev/null").unwrap().rdev();
    let null = entry(&listing, "/dev/null");
    assert_eq!(null["type"], "char_device");
    assert_eq!(
        null["device"]["major"],
        ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff)
    );
    assert_eq!(
        null["device"]["minor"],
        (rdev & 0xff) | ((rdev >> 12) & !0xff)
    );
}

/// Every saved real output (the fuzzer's seeds) parses, stderr and exit code included.
#[test]
fn fixtures_parse() {
    assert!(parsed_fixtures("ls").len() >= 2);
}
