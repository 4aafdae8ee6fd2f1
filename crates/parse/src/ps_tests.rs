use super::*;
use crate::testutil::{ctx_at, output, parse_with, stage};
use serde_json::{Value as Json, json};

/// The day the rows' start times (`06:58`, `Nov09`) are read on.
const NOW: &str = "2026-12-01T21:10:00+00:00";

fn parse_as(
    line: &str,
    stdout: &str,
    filtered: bool,
    exit: i32,
    stderr: &str,
) -> Result<Json, String> {
    let out = output(stdout, stderr, Some(exit));
    parse_with(recognize, &stage(line), &out, &ctx_at(NOW), filtered)
}

fn parse(line: &str, stdout: &str) -> Json {
    parse_as(line, stdout, false, 0, "").unwrap()
}

fn headers(line: &str) -> Vec<String> {
    format::plan(&stage(line).args)
        .unwrap()
        .columns
        .iter()
        .map(|c| c.header.clone())
        .collect()
}

const AUX: &str = "\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.4  0.0  47740 13156 ?        S<Ll 06:58   3:27 /process_api --addr 0.0.0.0:2024
root           2  0.0  0.0      0     0 ?        S    Nov09   0:00 [kthreadd]
systemd+     480 12.5  1.2 123456  7890 pts/0    Ss+  2025   61:05 /usr/bin/naïve  two  spaces ✓
";

#[test]
fn ps_aux_rows_are_typed() {
    let data = parse("ps aux", AUX);
    let p = &data["processes"];
    assert_eq!(p.as_array().unwrap().len(), 3);
    assert_eq!(p[0]["user"], "root");
    assert_eq!(p[0]["pid"], 1);
    assert_eq!(p[0]["cpu_percent"], 0.4);
    assert_eq!(p[0]["vsz_bytes"], 47740 * 1024);
    assert_eq!(p[0]["rss_bytes"], 13156 * 1024);
    assert_eq!(p[0]["tty"], "?");
    assert_eq!(p[0]["stat"], "S<Ll");
    assert_eq!(p[0]["start"], "06:58");
    assert_eq!(p[0]["started"]["rfc3339"], "2026-12-01T06:58:00+00:00");
    assert_eq!(p[0]["cpu_seconds"], 207);
    assert_eq!(p[0]["command"], "/process_api --addr 0.0.0.0:2024");
    assert_eq!(p[1]["start"], "Nov09");
    assert!(p[1].get("started").is_none(), "a bare date is not a moment");
    assert_eq!(p[2]["user"], "systemd+");
    assert_eq!(p[2]["start"], "2025");
    assert_eq!(p[2]["cpu_seconds"], 61 * 60 + 5);
    assert_eq!(
        p[2]["command"], "/usr/bin/naïve  two  spaces ✓",
        "inner spacing kept"
    );
    assert_eq!(
        data["columns"][2],
        json!({"header": "%CPU", "field": "cpu_percent"})
    );
    assert_eq!(data["columns"].as_array().unwrap().len(), 11);
}

#[test]
fn aux_spellings_share_one_format() {
    for line in [
        "ps aux",
        "ps axu",
        "ps -aux",
        "ps auxww",
        "ps -auxww",
        "ps uax",
        "ps aux --sort=-%cpu",
    ] {
        assert_eq!(
            parse(line, AUX)["processes"].as_array().unwrap().len(),
            3,
            "{line}"
        );
    }
}

#[test]
fn filtered_rows_need_no_header() {
    let grepped = "root           2  0.0  0.0      0     0 ?        S    Nov09   0:00 [kthreadd]\n";
    let data = parse_as("ps aux", grepped, true, 0, "").unwrap();
    assert_eq!(data["processes"][0]["pid"], 2);
    // A header that survived the filter (`| head`, `| sort`) is recognised anywhere.
    let sorted: String = AUX.lines().rev().map(|l| format!("{l}\n")).collect();
    let data = parse_as("ps aux", &sorted, true, 0, "").unwrap();
    assert_eq!(data["processes"].as_array().unwrap().len(), 3);
    // grep found nothing: no rows, exit 1, nothing on stderr.
    let data = parse_as("ps aux", "", true, 1, "").unwrap();
    assert_eq!(data["processes"], json!([]));
    // Unfiltered, the header must come first.
    assert!(
        parse_as("ps aux", grepped, false, 0, "")
            .unwrap_err()
            .contains("header")
    );
}

#[test]
fn ps_ef_and_custom_lists() {
    let ef = "\
UID          PID    PPID  C STIME TTY          TIME CMD
root           1       0  0 06:58 ?        1-00:03:27 /sbin/init splash
user        4242    4000 12 Dec01 pts/1    00:00:01 sleep 30
";
    let data = parse("ps -ef", ef);
    let p = &data["processes"];
    assert_eq!(p[0]["user"], "root");
    assert_eq!(p[0]["ppid"], 0);
    assert_eq!(p[0]["cpu_seconds"], 86_400 + 207);
    assert_eq!(p[1]["c"], 12);
    assert_eq!(p[1]["start"], "Dec01");
    assert_eq!(p[1]["command"], "sleep 30");

    let eo = "  PID  PPID   RSS COMMAND\n 4242  4000   980 sleep 30 'a b'\n";
    for line in [
        "ps -eo pid,ppid,rss,args",
        "ps -e -o pid,ppid,rss,args",
        "ps -o pid,ppid -o rss,args",
        "ps --format=pid,ppid,rss,args",
        "ps -p 4242 -o pid,ppid,rss,args",
    ] {
        let data = parse(line, eo);
        assert_eq!(data["processes"][0]["rss_bytes"], 980 * 1024, "{line}");
        assert_eq!(data["processes"][0]["command"], "sleep 30 'a b'", "{line}");
    }
}

#[test]
fn empty_headers_mean_no_header_line() {
    let out = "    1 process_api\n  777 Web Content\n";
    for line in [
        "ps -o pid=,comm=",
        "ps -o pid= -o comm=",
        "ps -eo pid,comm --no-headers",
        "ps axho pid,comm",
    ] {
        let data = parse(line, out);
        assert_eq!(data["processes"][1]["comm"], "Web Content", "{line}");
    }
    // Renamed and partly blank headers are what the header line is checked against.
    assert_eq!(
        headers("ps -o pid=PROCESS,ppid=,args"),
        ["PROCESS", "", "COMMAND"]
    );
    let data = parse("ps -o pid=X,ppid=", "    X\n    1     0\n");
    assert_eq!(data["processes"][0]["ppid"], 0);
    assert_eq!(data["columns"][0]["header"], "X");
}

#[test]
fn generated_formats_match_procps() {
    assert_eq!(headers("ps"), ["PID", "TTY", "TIME", "CMD"]);
    assert_eq!(headers("ps ax"), ["PID", "TTY", "STAT", "TIME", "COMMAND"]);
    assert_eq!(headers("ps -u root"), headers("ps"));
    assert_eq!(headers("ps -fp 1"), headers("ps -ef"));
    assert_eq!(headers("ps -f --pid 1"), headers("ps -ef"));
    assert_eq!(headers("ps 1"), ["PID", "TTY", "STAT", "TIME", "COMMAND"]);
    assert_eq!(
        headers("ps -eF").join(" "),
        "UID PID PPID C SZ RSS PSR STIME TTY TIME CMD"
    );
    assert_eq!(
        headers("ps -l").join(" "),
        "F S UID PID PPID C PRI NI ADDR SZ WCHAN TTY TIME CMD"
    );
    assert_eq!(
        headers("ps -ly").join(" "),
        "S UID PID PPID C PRI NI RSS SZ WCHAN TTY TIME CMD"
    );
    assert_eq!(
        headers("ps -lf").join(" "),
        "F S UID PID PPID C PRI NI ADDR SZ WCHAN STIME TTY TIME CMD"
    );
    assert_eq!(headers("ps -j").join(" "), "PID PGID SID TTY TIME CMD");
    assert_eq!(
        headers("ps -fL").join(" "),
        "UID PID PPID LWP C NLWP STIME TTY TIME CMD"
    );
    assert_eq!(
        headers("ps j").join(" "),
        "PPID PID PGID SID TTY TPGID STAT UID TIME COMMAND"
    );
    assert_eq!(
        headers("ps l").join(" "),
        "F UID PID PPID PRI NI VSZ RSS WCHAN STAT TTY TIME COMMAND"
    );
    assert_eq!(
        headers("ps v").join(" "),
        "PID TTY STAT TIME MAJFL TRS DRS RSS %MEM COMMAND"
    );
}

#[test]
fn flags_that_change_the_format_are_not_recognised() {
    for line in [
        "ps auxf", // forest art in the command column
        "ps -ef --forest",
        "ps -eH",
        "ps aux e",        // environment after the command
        "ps -eo args,pid", // a column with spaces that is not last
        "ps -eo pid,comm,ppid",
        "ps -eo pid:10,args",
        "ps -eo pid,bogus",
        "ps -eo pid,,args",
        "ps aux -o pid", // conflicting formats
        "ps -ef -o pid",
        "ps --headers",
        "ps --cols 80 aux",
        "ps -y",
        "ps -eL -T",
        "ps -eo pid,pid,pid",
        "ps -- aux",
        "ps -o",
        "ps m",
        "ps L",
        "ps -V",
        "pss aux",
    ] {
        assert!(recognize(&stage(line)).is_none(), "{line}");
    }
    assert!(recognize(&stage("ps -eo pid,time,bsdtime,args")).is_some());
}

#[test]
fn start_and_time_shapes() {
    let line = "ps -eo pid,lstart,start,bsdstart,stime,etime,etimes,time,cputimes,args";
    let out = "\
  PID                  STARTED  STARTED  START STIME     ELAPSED ELAPSED     TIME TIME COMMAND
    1 Tue Dec  1 06:58:54 2026 06:58:54  06:58 06:58    14:10:30   51030 00:03:32  212 /init
   77 Sun Nov 29 01:02:03 2026   Nov 29 Nov 29 Nov29  2-20:07:57  245277 00:00:00    0 x y
";
    let data = parse(line, out);
    let p = &data["processes"];
    assert_eq!(p[0]["start"], "Tue Dec  1 06:58:54 2026");
    assert_eq!(p[0]["started"]["epoch"], 1_796_108_334);
    assert_eq!(p[0]["elapsed_seconds"], 14 * 3600 + 10 * 60 + 30);
    assert_eq!(p[0]["cpu_seconds"], 212);
    // Second start-type columns keep their text under `other`.
    assert_eq!(p[0]["other"]["start"], "06:58:54");
    assert_eq!(p[0]["other"]["bsdstart"], "06:58");
    assert_eq!(p[0]["other"]["cputimes"], "212");
    assert_eq!(p[1]["other"]["start"], "Nov 29");
    assert_eq!(p[1]["other"]["bsdstart"], "Nov 29");
    assert_eq!(
        p[1]["elapsed_seconds"],
        2 * 86_400 + 20 * 3600 + 7 * 60 + 57
    );
    assert_eq!(p[1]["command"], "x y");
    assert_eq!(data["columns"][2]["field"], "other.start");

    // procps's wrap of a negative elapsed time, for a process started that instant (seen
    // here): no process ran longer than the clock since the epoch.
    let wrapped = parse(
        "ps -o pid,lstart,etimes,time,args -p 77",
        "    PID                  STARTED ELAPSED     TIME COMMAND\n     \
         77 Sun Dec  6 16:00:00 2026 4123168608 00:00:00 sleep 30\n",
    );
    assert_eq!(wrapped["processes"][0]["elapsed_seconds"], 0);

    // A time of day later than now is from yesterday (ps ran just before midnight).
    let bsd = parse(
        "ps -o pid,bsdstart",
        "  PID  START\n    5  23:59\n    6 Dec  1\n",
    );
    assert_eq!(
        bsd["processes"][0]["started"]["rfc3339"],
        "2026-11-30T23:59:00+00:00"
    );
    assert_eq!(bsd["processes"][1]["start"], "Dec  1");
}

#[test]
fn garbage_is_refused() {
    let bad = [
        ("ps aux", "USER PID\nroot 1\n"),
        ("ps aux", &AUX.replace(" 0.4 ", " x.4 ")),
        ("ps aux", &AUX.replace("06:58", "6h58")),
        ("ps -eo pid,ppid", "  PID  PPID\n    1     0 extra\n"),
        ("ps -eo pid,ppid", "  PID  PPID\n    1\n"),
        (
            "ps -eo pid,lstart",
            "  PID STARTED\n    1 Tue Dec 99 06:58:54 2026\n",
        ),
        ("ps -eo pid", "  PID\n99999999999\n"),
    ];
    for (line, out) in bad {
        let err = parse_as(line, out, false, 0, "").unwrap_err();
        assert!(!err.contains('\n'), "{err}");
    }
    // busybox `ps aux` ignores the flags: its header is not procps's.
    let busybox = "PID   USER     TIME  COMMAND\n    1 root      0:01 init\n";
    assert!(
        parse_as("ps aux", busybox, false, 0, "")
            .unwrap_err()
            .contains("header")
    );
}

#[test]
fn failures_and_empty_output() {
    let err = parse_as(
        "ps -eo pid,args",
        "",
        false,
        1,
        "error: unknown user-defined format specifier \"x\"\n\nUsage:\n",
    )
    .unwrap_err();
    assert_eq!(
        err,
        "ps failed: error: unknown user-defined format specifier \"x\""
    );
    assert!(parse_as("ps aux", "", false, 0, "").is_err());
    // `ps -p 99999`: the header alone and exit 1 is "no such process", an empty list.
    let data = parse_as("ps -p 99999 -o pid,args", "  PID COMMAND\n", false, 1, "").unwrap();
    assert_eq!(data["processes"], json!([]));
    let data = parse_as("ps --no-headers -p 99999", "", false, 1, "").unwrap();
    assert_eq!(data["processes"], json!([]));
}

#[test]
fn never_panics_on_odd_text() {
    let samples = [
        "",
        "\n\n",
        "   ",
        "é",
        "USER",
        "\u{0}\u{1}",
        "1 2 3 4 5 6 7 8 9 10 11 12 13",
        "Tue Dec",
        "  PID STARTED\n 1 Tue",
    ];
    for line in [
        "ps aux",
        "ps -ef",
        "ps -eo pid,lstart,bsdstart,start,etime,args",
        "ps -o pid=,comm=",
    ] {
        for s in samples {
            let _ = parse_as(line, s, false, 0, "");
            let _ = parse_as(line, s, true, 1, s);
        }
    }
}
