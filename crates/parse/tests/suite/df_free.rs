//! `df` and `free`, run for real, against `df --output` (the same numbers in a form with no
//! parsing question) and /proc/meminfo.

// Helpers outside `#[test]` functions unwrap too: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentty_parse::Output;
use serde_json::Value;

use super::common::{command, parse, parsed_fixtures, stage};

fn stdout(argv: &[&str]) -> String {
    let out = command(argv[0]).args(&argv[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{argv:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn parsed(argv: &[&str]) -> Value {
    let text = stdout(argv);
    let output = Output {
        stdout: &text,
        stderr: "",
        exit_code: Some(0),
    };
    parse(&[stage(argv)], &output)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .data
}

/// `df --output` for the file system holding `path`, one value per field.
fn truth(path: &str, fields: &str, block: &str) -> Vec<String> {
    let text = stdout(&["df", &format!("--output={fields}"), block, path]);
    let row = text.lines().nth(1).unwrap();
    let values: Vec<String> = row.split_whitespace().map(str::to_owned).collect();
    assert_eq!(values.len(), fields.split(',').count(), "{row}");
    values
}

fn num(text: &str) -> u64 {
    text.parse().unwrap()
}

/// `used` and `avail` may move between two runs on a busy file system.
const DRIFT: u64 = 256 << 20;

#[test]
fn df_bytes_match_df_output() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().to_str().unwrap();
    let t = truth(path, "source,fstype,size,used,avail,pcent,target", "-B1");
    for argv in [
        vec!["df", "-B1", path],
        vec!["df", "-T", path],
        vec!["df", path],
        vec!["df", "-P", path],
        vec!["df", "-k", path],
    ] {
        let d = parsed(&argv);
        let fs = &d["filesystems"][0];
        let unit = if argv[1] == "-B1" { 1 } else { 1024 };
        assert_eq!(fs["filesystem"], t[0], "{argv:?}");
        assert_eq!(fs["mounted_on"], t[6], "{argv:?}");
        let size = fs["size_bytes"].as_u64().unwrap();
        assert!(
            size >= num(&t[2]) && size - num(&t[2]) < unit,
            "{argv:?}: {size} vs {}",
            t[2]
        );
        assert!(
            fs["used_bytes"].as_u64().unwrap().abs_diff(num(&t[3])) < DRIFT,
            "{argv:?}"
        );
        assert!(
            fs["available_bytes"].as_u64().unwrap().abs_diff(num(&t[4])) < DRIFT,
            "{argv:?}"
        );
        let pcent = num(t[5].trim_end_matches('%'));
        assert!(
            fs["use_percent"].as_u64().unwrap().abs_diff(pcent) <= 1,
            "{argv:?}"
        );
        if argv[1] == "-T" {
            assert_eq!(fs["type"], t[1]);
        }
    }
}

#[test]
fn df_human_sizes_are_close() {
    let t = truth("/", "size,used", "-B1");
    for (flag, base) in [("-h", 1024f64), ("-H", 1000.0)] {
        let d = parsed(&["df", flag, "/"]);
        let fs = &d["filesystems"][0];
        for (key, exact) in [("size", num(&t[0])), ("used", num(&t[1]))] {
            let Some(raw) = fs[format!("{key}_raw")].as_str() else {
                assert_eq!(
                    fs[format!("{key}_bytes")],
                    exact,
                    "{flag} {key}: printed exactly"
                );
                continue;
            };
            // df rounds up to the last printed digit: the error is under one unit of it.
            let power = "KMGTPE"
                .find(raw.chars().last().unwrap().to_ascii_uppercase())
                .unwrap();
            let mut unit = base.powi(i32::try_from(power).unwrap() + 1);
            if raw.contains('.') {
                unit /= 10.0;
            }
            let bytes = fs[format!("{key}_bytes")].as_u64().unwrap() as f64;
            let drift = if key == "used" { DRIFT as f64 } else { 0.0 };
            assert!(
                (bytes - exact as f64).abs() <= unit + drift,
                "{flag} {key}: {raw} = {bytes} vs {exact}"
            );
        }
    }
}

#[test]
fn df_inodes_match_df_output() {
    let t = truth("/", "itotal,iused,iavail", "-B1");
    let d = parsed(&["df", "-i", "/"]);
    let fs = &d["filesystems"][0];
    assert_eq!(fs["inodes"], num(&t[0]));
    assert!(fs["inodes_used"].as_u64().unwrap().abs_diff(num(&t[1])) < 100_000);
    assert!(fs["inodes_free"].as_u64().unwrap().abs_diff(num(&t[2])) < 100_000);
}

#[test]
fn df_lists_every_mount() {
    let d = parsed(&["df", "-a"]);
    let truth = stdout(&["df", "-a", "--output=target"]);
    let targets: Vec<&str> = truth.lines().skip(1).map(str::trim_end).collect();
    let parsed: Vec<&str> = d["filesystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["mounted_on"].as_str().unwrap())
        .collect();
    assert_eq!(parsed, targets);
}

/// A line of /proc/meminfo in bytes (`MemTotal:  24683584 kB`).
fn meminfo(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{key}:")))
        .unwrap();
    num(line.split_whitespace().nth(1).unwrap()) * 1024
}

fn row<'a>(usage: &'a Value, name: &str) -> &'a Value {
    usage["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap()
}

#[test]
fn free_totals_match_meminfo() {
    let (mem, swap) = (meminfo("MemTotal"), meminfo("SwapTotal"));
    for argv in [vec!["free", "-b"], vec!["free"], vec!["free", "-wt"]] {
        let f = parsed(&argv);
        assert_eq!(row(&f, "mem")["total_bytes"], mem, "{argv:?}");
        assert_eq!(row(&f, "swap")["total_bytes"], swap, "{argv:?}");
        let m = row(&f, "mem");
        let used_plus = ["used_bytes", "free_bytes"]
            .iter()
            .map(|k| m[k].as_u64().unwrap())
            .sum::<u64>();
        assert!(used_plus <= mem, "{argv:?}");
    }
    let wide = parsed(&["free", "-wt"]);
    assert_eq!(row(&wide, "total")["total_bytes"], mem + swap);
    assert!(
        row(&wide, "mem")["buffers_bytes"].is_u64() && row(&wide, "mem")["cache_bytes"].is_u64()
    );
    let mebi = parsed(&["free", "-m"]);
    assert_eq!(
        row(&mebi, "mem")["total_bytes"],
        mem >> 20 << 20,
        "truncated to whole MiB"
    );
    let human = parsed(&["free", "-h"]);
    let approx = row(&human, "mem")["total_bytes"].as_u64().unwrap();
    assert!(approx.abs_diff(mem) <= mem / 10, "{approx} vs {mem}");
    assert!(row(&human, "mem")["raw"]["total"].is_string());
}

#[test]
fn fixtures_parse() {
    assert!(parsed_fixtures("df").len() >= 2);
    assert!(parsed_fixtures("free").len() >= 2);
}
