//! `ps` run for real against a child process this test starts, compared with what /proc says
//! of it; every output format the parser builds from flags checked against the real header.

use std::process::{Child, Command, Stdio};

use agentty_parse::{Output, Stage};
use serde_json::Value;

use super::common::{command, now, parse, stage};

/// Runs `argv` (TZ=UTC, C locale) and parses its output as the output of `stages`.
fn run_as(argv: &[&str], stages: &[Stage]) -> Value {
    let out = command(argv[0]).args(&argv[1..]).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    let output = Output {
        stdout: &stdout,
        stderr: &stderr,
        exit_code: out.status.code(),
    };
    let parsed = parse(stages, &output).unwrap_or_else(|e| panic!("{argv:?}: {e}\n{stdout}"));
    assert_eq!(parsed.type_name, "ProcessList");
    parsed.data
}

fn ps(argv: &[&str]) -> Value {
    run_as(argv, &[stage(argv)])
}

/// A child whose command line has spaces, doubled ones included: `sh -c 'sleep 30; exit 0' …`.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        use std::os::unix::process::CommandExt;
        // A process group of its own, so the drop stops the shell's `sleep` too; and no
        // inherited stdout, so nothing of it holds the test's output open.
        let child = Command::new("sh")
            .args(["-c", "sleep 30; exit 0", "agentty  ps", "test arg"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // The shell runs its sleep once a child of it has exec'd `sleep` (a child just forked
        // is still the shell: `ps` showed it as `sh -c sleep 30; …`, and no `sleep 30`).
        let children = format!("/proc/{0}/task/{0}/children", child.id());
        let sleeping = || {
            let listed = std::fs::read_to_string(&children).unwrap_or_default();
            listed.split_whitespace().any(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x0030\x00")
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !sleeping() {
            assert!(
                std::time::Instant::now() < deadline,
                "the shell never ran its sleep"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Sleeper(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

fn find(list: &Value, pid: u32) -> &Value {
    list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .unwrap_or_else(|| panic!("no pid {pid} in {list}"))
}

fn proc_file(pid: u32, name: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/{name}")).unwrap()
}

/// The command line as ps prints it: the arguments joined by single spaces.
fn cmdline(pid: u32) -> String {
    proc_file(pid, "cmdline")
        .trim_end_matches('\0')
        .replace('\0', " ")
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = proc_file(pid, "status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn ps_eo_matches_proc() {
    let child = Sleeper::start();
    let pid = child.pid();
    let list = ps(&["ps", "-eo", "pid,ppid,rss,args"]);
    let row = find(&list, pid);
    assert_eq!(row["ppid"], std::process::id());
    assert_eq!(row["command"], cmdline(pid));
    assert_eq!(
        row["command"],
        "sh -c sleep 30; exit 0 agentty  ps test arg"
    );
    let rss = row["rss_bytes"].as_u64().unwrap() / 1024;
    let truth = vm_rss_kib(pid);
    assert!(
        rss.abs_diff(truth) <= 16,
        "ps rss {rss} KiB vs VmRSS {truth} KiB"
    );
    let fields: Vec<&Value> = list["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["field"])
        .collect();
    assert_eq!(fields, ["pid", "ppid", "rss_bytes", "command"]);
}

#[test]
fn ps_aux_and_ef_match_proc() {
    let child = Sleeper::start();
    let pid = child.pid();
    let user = current_user();
    let aux = ps(&["ps", "aux"]);
    let row = find(&aux, pid);
    assert_eq!(row["command"], cmdline(pid));
    assert_eq!(row["cpu_seconds"], 0);
    if user.len() <= 8 {
        assert_eq!(row["user"], user.as_str());
    }
    let stat = proc_file(pid, "stat");
    let tty_nr = stat
        .rsplit(") ")
        .next()
        .unwrap()
        .split_whitespace()
        .nth(4)
        .unwrap();
    if tty_nr == "0" {
        assert_eq!(row["tty"], "?");
    }
    // START is HH:MM for a process started today: a moment within a minute or two of now.
    let started = row["started"]["epoch"].as_i64().unwrap();
    assert!((now().now.timestamp() - started).abs() < 120, "{row}");

    let ef = ps(&["ps", "-ef"]);
    let row = find(&ef, pid);
    assert_eq!(row["ppid"], std::process::id());
    assert_eq!(row["command"], cmdline(pid));
    assert_eq!(row["c"], 0);
}

#[test]
fn ps_aux_through_grep() {
    let child = Sleeper::start();
    let pid = child.pid();
    let argv = ["sh", "-c", "ps aux | grep '[s]leep 30'"];
    let list = run_as(
        &argv,
        &[stage(&["ps", "aux"]), stage(&["grep", "[s]leep 30"])],
    );
    let rows = list["processes"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|p| p["command"].as_str().unwrap().contains("sleep 30")),
        "{list}"
    );
    assert_eq!(find(&list, pid)["command"], cmdline(pid));
    // The child's own `sleep 30`, forked by the shell, is there too.
    assert!(rows.iter().any(|p| p["command"] == "sleep 30"), "{list}");
}

#[test]
fn lstart_is_the_start_moment() {
    let before = now().now.timestamp();
    let child = Sleeper::start();
    let pid = child.pid().to_string();
    let list = ps(&["ps", "-o", "pid,lstart,etimes,time,args", "-p", &pid]);
    let after = now().now.timestamp();
    let row = &list["processes"][0];
    let started = row["started"]["epoch"].as_i64().unwrap();
    assert!(
        (before - 1..=before + 2).contains(&started),
        "{row} vs {before}"
    );
    // No older than the time ps took to come (a loaded machine can take seconds).
    let elapsed = row["elapsed_seconds"].as_i64().unwrap();
    assert!(elapsed <= after - before + 1, "{row}: {before}..{after}");
    // No such process: the header alone, exit 1, an empty list.
    let none = ps(&["ps", "-o", "pid,args", "-p", "999999999"]);
    assert_eq!(none["processes"], serde_json::json!([]));
}

/// Every format built from flags has the header the real ps prints, and all its rows parse.
#[test]
fn every_generated_format_reads_real_output() {
    let _child = Sleeper::start();
    let flag_sets: &[&[&str]] = &[
        &["aux"],
        &["-aux"],
        &["axu"],
        &["auxww"],
        &["-ef"],
        &["-eF"],
        &["-el"],
        &["-ely"],
        &["-elf"],
        &["-ej"],
        &["-efL"],
        &["-eLf"],
        &["-eT"],
        &["-e"],
        &["ax"],
        &["axj"],
        &["axl"],
        &["axs"],
        &["axv"],
        &["axn"],
        &["-e", "--no-headers"],
        &["-e", "-o", "pid=,comm="],
        &[
            "-eo",
            "pid,lstart,start,bsdstart,stime,start_time,etime,etimes,time,cputimes,bsdtime,args",
        ],
        &[
            "-eo",
            "pid,tgid,pgid,pgrp,sid,sess,tpgid,nlwp,ni,pri,opri,rtprio,cls,policy,psr,wchan,f,s,sz,uid,user,euser,ruser,gid,group,vsz,rss,%cpu,%mem,c,tty,stat,comm",
        ],
        &["-eo", "pid=PROCESS,ppid=,user=WHO,args=CMDLINE"],
        &["-e", "-o", "pid", "-o", "cmd", "--sort=-rss"],
        &["-eo", "pid,cgroup"],
    ];
    for flags in flag_sets {
        let mut argv = vec!["ps"];
        argv.extend_from_slice(flags);
        let list = ps(&argv);
        assert!(
            list["processes"].as_array().unwrap().len() > 2,
            "{argv:?}: {list}"
        );
    }
}
