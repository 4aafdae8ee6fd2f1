use super::*;
use crate::testutil::{ctx, output, parse_with, stage};
use serde_json::{Value, json};

fn run(argv: &str, stdout: &str, filtered: bool) -> Result<Value, String> {
    let out = output(stdout, "", Some(0));
    parse_with(recognize, &stage(argv), &out, &ctx(), filtered)
}

fn parse(argv: &str, stdout: &str) -> Value {
    run(argv, stdout, false).unwrap()
}

const FREE: &str =
    "               total        used        free      shared  buff/cache   available
Mem:        24683584      624844    21122876        9356     3260176    24058740
Swap:        1048572           0     1048572
";

#[test]
fn kibibytes_by_default() {
    let f = parse("free", FREE);
    assert_eq!(f["unit"], "KiB");
    assert_eq!(
        f["rows"][0],
        json!({"name": "mem", "total_bytes": 24_683_584u64 * 1024, "used_bytes": 624_844u64 * 1024,
            "free_bytes": 21_122_876u64 * 1024, "shared_bytes": 9356u64 * 1024,
            "buff_cache_bytes": 3_260_176u64 * 1024, "available_bytes": 24_058_740u64 * 1024})
    );
    assert_eq!(
        f["rows"][1],
        json!({"name": "swap", "total_bytes": 1_048_572u64 * 1024, "used_bytes": 0, "free_bytes": 1_048_572u64 * 1024})
    );
}

#[test]
fn units_from_the_flags() {
    let b = parse(
        "free -b",
        "               total        used        free      shared  buff/cache   available\nMem:     25275990016   639840256 21629825024     9580544  3338420224 24636149760\n",
    );
    assert_eq!(b["unit"], "B");
    assert_eq!(b["rows"][0]["total_bytes"], 25_275_990_016u64);
    let m = parse(
        "free -m",
        "               total        used        free      shared  buff/cache   available\nMem:           24105         610       20627           9        3183       23494\n",
    );
    assert_eq!(m["unit"], "MiB");
    assert_eq!(m["rows"][0]["total_bytes"], 24105u64 << 20);
    assert_eq!(parse("free -g", FREE)["unit"], "GiB");
    assert_eq!(parse("free --si", FREE)["unit"], "kB");
    assert_eq!(parse("free --mega", FREE)["unit"], "MB");
    assert_eq!(
        parse("free --si -m", FREE)["rows"][0]["used_bytes"],
        624_844_000_000u64
    );
}

#[test]
fn human_values_keep_their_text() {
    let h = parse(
        "free -h",
        "               total        used        free      shared  buff/cache   available\nMem:            23Gi       610Mi        20Gi       9.1Mi       3.1Gi        22Gi\nSwap:             0B          0B          0B\n",
    );
    assert_eq!(h["unit"], "human");
    assert_eq!(h["rows"][0]["total_bytes"], 23u64 << 30);
    assert_eq!(h["rows"][0]["raw"]["shared"], "9.1Mi");
    assert_eq!(h["rows"][1]["free_bytes"], 0);
    assert!(h["rows"][1].get("raw").is_none(), "0B is exact");
    let si = parse(
        "free -h --si",
        "               total        used        free      shared  buff/cache   available\nMem:             25G        639M         21G        9.6M        3.3G         24G\n",
    );
    assert_eq!(si["rows"][0]["shared_bytes"], 9_600_000);
}

#[test]
fn wide_total_lohi_and_committed_rows() {
    let w = parse("free -wtlv", "               total        used        free      shared     buffers       cache   available
Mem:        24683584      624612    21122876        9356       27708     3232700    24058972
Low:        24683584     3560708    21122876
High:              0           0           0
Swap:              0           0           0
Total:      24683584      624612    21122876
Comm:       12341792      185872    12155920
");
    let names: Vec<&str> = w["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mem", "low", "high", "swap", "total", "comm"]);
    assert_eq!(w["rows"][0]["buffers_bytes"], 27708 * 1024);
    assert_eq!(w["rows"][0]["cache_bytes"], 3_232_700u64 * 1024);
    assert!(w["rows"][0].get("buff_cache_bytes").is_none());
    assert_eq!(w["rows"][4]["free_bytes"], 21_122_876u64 * 1024);
}

#[test]
fn filtered_rows_use_the_flags() {
    let g = run("free -w", "Mem:        24683584      624612    21122876        9356       27708     3232700    24058972\n", true).unwrap();
    assert_eq!(g["rows"][0]["cache_bytes"], 3_232_700u64 * 1024);
    assert!(
        run("free", "Mem: 1 2 3 4 5 6\n", false).is_err(),
        "no header unfiltered"
    );
}

#[test]
fn refusals() {
    assert!(
        run(
            "free",
            "               total        used\nMem: 1 2 3\n",
            false
        )
        .is_err(),
        "more values than columns"
    );
    assert!(
        run(
            "free",
            "               total        used\nRAM: 1 2\n",
            false
        )
        .is_err()
    );
    assert!(
        run(
            "free",
            "               total        used\nMem: 1 x\n",
            false
        )
        .is_err()
    );
    assert!(run("free", "", false).is_err());
    for argv in [
        "free -s 1",
        "free -c 2",
        "free -L",
        "free --line",
        "free -m -g",
        "free -mg",
        "free -x",
    ] {
        assert!(recognize(&stage(argv)).is_none(), "{argv}");
    }
}

#[test]
fn hostile_input_never_panics() {
    for text in [
        "Mem:",
        "  total\nMem: 99999999999999999999999",
        " \n\u{0}",
        "  total\nMem: 1.5Qi",
        "Swap: -1",
    ] {
        for argv in ["free", "free -h", "free --pebi", "free -b"] {
            let _ = run(argv, text, false);
            let _ = run(argv, text, true);
        }
    }
}
