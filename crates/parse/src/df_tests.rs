use super::*;
use crate::testutil::{ctx, output, parse_with, stage};
use serde_json::{Value, json};

fn run(argv: &str, stdout: &str, stderr: &str, filtered: bool) -> Result<Value, String> {
    let out = output(stdout, stderr, Some(0));
    parse_with(recognize, &stage(argv), &out, &ctx(), filtered)
}

fn parse(argv: &str, stdout: &str) -> Value {
    run(argv, stdout, "", false).unwrap()
}

const DF: &str = "Filesystem              1K-blocks     Used Available Use% Mounted on
devtmpfs                 12334192        0  12334192   0% /dev
/dev/vda                264212084 69494292  25791596  73% /
proc                            0        0         0    - /proc
tmpfs                           4        0         4   0% /mnt/with space
";

#[test]
fn blocks_become_bytes() {
    let d = parse("df", DF);
    let fs = d["filesystems"].as_array().unwrap();
    assert_eq!(fs.len(), 4);
    assert_eq!(
        fs[1],
        json!({"filesystem": "/dev/vda", "size_bytes": 264_212_084u64 * 1024, "used_bytes": 69_494_292u64 * 1024,
            "available_bytes": 25_791_596u64 * 1024, "use_percent": 73, "mounted_on": "/"})
    );
    assert!(fs[2].get("use_percent").is_none());
    assert_eq!(fs[3]["mounted_on"], "/mnt/with space");
}

#[test]
fn the_header_gives_the_block_size() {
    let d = parse(
        "df -B1",
        "Filesystem 1B-blocks Used Available Use% Mounted on\n/dev/vda 270553174016 71161126912 26410549248 73% /\n",
    );
    assert_eq!(d["filesystems"][0]["size_bytes"], 270_553_174_016u64);
    let p = parse(
        "df -P",
        "Filesystem              1024-blocks     Used Available Capacity Mounted on\ndevtmpfs 12334192 0 12334192 0% /dev\n",
    );
    assert_eq!(p["filesystems"][0]["size_bytes"], 12_334_192u64 * 1024);
    // POSIXLY_CORRECT makes plain `df` count 512-byte blocks; the header says so.
    let posix = parse(
        "df",
        "Filesystem 512B-blocks Used Available Use% Mounted on\n/dev/x 10 2 8 20% /\n",
    );
    assert_eq!(posix["filesystems"][0]["size_bytes"], 5120);
    let m = parse(
        "df -BM",
        "Filesystem 1M-blocks Used Available Use% Mounted on\n/dev/x 10 2 8 20% /\n",
    );
    assert_eq!(m["filesystems"][0]["used_bytes"], 2 * 1_048_576);
}

#[test]
fn human_sizes_in_both_bases() {
    let h = parse(
        "df -hT",
        "Filesystem     Type  Size  Used Avail Use% Mounted on\n/dev/vda       ext4  252G   67G   25G  73% /\ntotal          -     300G   67G   72G  49% -\n",
    );
    let vda = &h["filesystems"][0];
    assert_eq!(vda["type"], "ext4");
    assert_eq!(vda["size_bytes"], 252u64 << 30);
    assert_eq!(vda["size_raw"], "252G");
    assert_eq!(h["total"]["size_raw"], "300G");
    assert!(h["total"].get("type").is_none());
    let si = parse(
        "df -H",
        "Filesystem Size Used Avail Use% Mounted on\ntmpfs 4.1k 0 4.1k 0% /run\n",
    );
    assert_eq!(si["filesystems"][0]["size_bytes"], 4100);
    assert_eq!(si["filesystems"][0]["used_bytes"], 0);
    assert!(si["filesystems"][0].get("used_raw").is_none());
}

#[test]
fn inodes() {
    let i = parse(
        "df -i",
        "Filesystem                Inodes  IUsed    IFree IUse% Mounted on\n/dev/vda                16777216 734360 16042856    5% /\nproc 0 0 0 - /proc\n",
    );
    let vda = &i["filesystems"][0];
    assert_eq!(
        (vda["inodes"].clone(), vda["inodes_used"].clone()),
        (json!(16_777_216), json!(734_360))
    );
    assert_eq!(vda["inodes_use_percent"], 5);
    assert!(vda.get("size_bytes").is_none());
}

#[test]
fn a_long_name_wrapped_onto_its_own_line() {
    let d = parse(
        "df",
        "Filesystem           1K-blocks      Used Available Use% Mounted on\n/dev/mapper/VolGroup00-LogVol00\n                      38631800   5341392  31295752  15% /\n/dev/sda1               101086     12713     83154  14% /boot\n",
    );
    assert_eq!(
        d["filesystems"][0]["filesystem"],
        "/dev/mapper/VolGroup00-LogVol00"
    );
    assert_eq!(d["filesystems"][0]["mounted_on"], "/");
    assert_eq!(d["filesystems"][1]["mounted_on"], "/boot");
    assert!(
        run(
            "df",
            "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/alone\n",
            "",
            false
        )
        .is_err()
    );
}

#[test]
fn filtered_rows_use_the_flags() {
    let g = run("df -h", "/dev/vda 252G 67G 25G 73% /\n", "", true).unwrap();
    assert_eq!(g["filesystems"][0]["size_raw"], "252G");
    let k = run(
        "df -T",
        "/dev/vda ext4 264212084 69494292 25791596 73% /\n",
        "",
        true,
    )
    .unwrap();
    assert_eq!(k["filesystems"][0]["type"], "ext4");
    assert_eq!(k["filesystems"][0]["size_bytes"], 264_212_084u64 * 1024);
    assert!(
        run(
            "df",
            "/dev/vda 264212084 69494292 25791596 73% /\n",
            "",
            false
        )
        .is_err(),
        "no header unfiltered"
    );
}

#[test]
fn refusals() {
    assert!(
        run("df", "", "df: /nope: No such file or directory\n", false)
            .unwrap_err()
            .contains("/nope")
    );
    let partial = run(
        "df / /nope",
        DF,
        "df: /nope: No such file or directory\n",
        false,
    )
    .unwrap();
    assert_eq!(partial["errors"][0], "df: /nope: No such file or directory");
    assert!(
        run(
            "df",
            "Filesystem 1K-blocks Used Available Use% Mounted on\nnot a row\n",
            "",
            false
        )
        .is_err()
    );
    assert!(
        run(
            "df",
            "Filesystem Size Used Avail Use% Mounted on\nx 1G 1G 1G 1% /\n",
            "",
            false
        )
        .is_err(),
        "base unknown"
    );
    for argv in [
        "df --output",
        "df --output=source",
        "df -ih",
        "df -iH",
        "df -Bx",
        "df -m",
    ] {
        assert!(recognize(&stage(argv)).is_none(), "{argv}");
    }
    for argv in [
        "df",
        "df -h",
        "df -H",
        "df -k",
        "df -T",
        "df -P",
        "df /tmp",
        "df -i",
        "df -hT /",
        "df -B1",
        "df --block-size=1K",
        "df -t ext4 -x tmpfs",
        "df --total",
        "df -aPl",
    ] {
        assert!(recognize(&stage(argv)).is_some(), "{argv}");
    }
}

#[test]
fn sizes_and_block_specs() {
    assert_eq!(si_size("4.1k"), Some(4100));
    assert_eq!(si_size("13G"), Some(13_000_000_000));
    assert_eq!(si_size("0B"), Some(0));
    assert_eq!(si_size("1Gi"), None);
    assert_eq!(si_size(&"9".repeat(300)), None);
    assert_eq!(block_size("1K"), Some(1024));
    assert_eq!(block_size("1kB"), Some(1000));
    assert_eq!(block_size("1B"), Some(1));
    assert_eq!(block_size("MiB"), Some(1 << 20));
    assert_eq!(block_size("1024"), Some(1024));
    assert_eq!(block_size("0"), None);
    assert_eq!(block_size("99999999999E"), None);
}

#[test]
fn hostile_input_never_panics() {
    for text in [
        "Filesystem",
        "Filesystem \n\u{0}",
        "Filesystem 1K-blocks Used Available Use% Mounted on\nx 1 1 1 1",
        "x\n ",
        "x 1 1 1 %% /",
        "x 1 1 1 99999999999% /",
    ] {
        for argv in ["df", "df -hT", "df -i"] {
            let _ = run(argv, text, "", false);
            let _ = run(argv, text, "", true);
        }
    }
}
