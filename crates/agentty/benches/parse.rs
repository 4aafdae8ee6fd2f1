//! `cargo bench -p agentty --bench parse`: what `parse: true` costs and what it saves (issue 13's
//! targets in brackets), measured against the same call without it, in the same run.
//!
//! 1. `ls -lR` of a tree whose listing is about 1 MB, alternating with and without `parse`; and,
//!    since the walk's own variation is larger than the parse, the parse's cost measured on the
//!    same listing printed by a stand-in `ls`, in pairs: its share of the real call [≤ 5%].
//! 2. The parser alone on that listing and on a tenth of it: nanoseconds per byte, and the
//!    ratio of the two [bounded time per byte: the ratio stays near 1].
//! 3. What the model reads (the text block's bytes, and tokens estimated at 4 bytes each),
//!    parsed vs raw, for `ps aux`, `ls -la` of a directory of 2000 files, and a failing
//!    `cargo build` [reported: the point is that typed results are smaller as well as exact].
//!    `ps aux` runs on a second server started with `--no-sandbox`: a confined command sees
//!    only its own PID namespace (two or three processes), which says little about a process
//!    list.
//!
//! Prints figures; asserts only that each parsed call was parsed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

mod common;

use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde_json::json;

use common::{call, median};

const ROUNDS: usize = 15;

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `rounds` calls of `command` without `parse` and as many with it, alternating: their times.
async fn pairs(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    command: &str,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut plain, mut parsed) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for with_parse in [false, true] {
            let t = Instant::now();
            let r = call(
                client,
                "terminal",
                json!({"command": command, "parse": with_parse}),
            )
            .await;
            let took = t.elapsed();
            if with_parse {
                assert_eq!(
                    parsed_type(&r).as_deref(),
                    Some("DirectoryListing"),
                    "{}",
                    text(&r)
                );
                parsed.push(took);
            } else {
                plain.push(took);
            }
        }
    }
    (plain, parsed)
}

fn parsed_type(result: &CallToolResult) -> Option<String> {
    let s = result.structured_content.as_ref()?;
    s.get("parsed")?.get("type")?.as_str().map(str::to_owned)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let workspace = tempfile::tempdir().unwrap();
    let state = agentty_testkit::state_dir();
    let ws = workspace.path();
    // A tree of 200 directories of 80 files each: `ls -lR` prints about 1 MB.
    for d in 0..200 {
        let dir = ws.join(format!("tree/dir-{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..80 {
            std::fs::write(dir.join(format!("source-file-number-{f:03}.rs")), "x").unwrap();
        }
    }
    for f in 0..2000 {
        std::fs::write(ws.join(format!("big-{f:04}.txt")), "").unwrap();
    }
    std::fs::create_dir_all(ws.join("demo/src")).unwrap();
    std::fs::write(
        ws.join("demo/Cargo.toml"),
        // `[workspace]`: a Cargo.toml above the temp dir must not adopt this one.
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("demo/src/main.rs"),
        "fn main() {\n    let x: u32 = \"no\";\n    let unused = 1;\n    let y: String = 5;\n}\n",
    )
    .unwrap();
    let (client, _) = common::start(ws, state.path(), &[]).await;
    let host_state = agentty_testkit::state_dir();
    let (host_client, _) = common::start(ws, host_state.path(), &["--no-sandbox"]).await;

    // 1. The parse's share of a 1 MB `ls -lR`. The walk of 16 000 files varies by tens of
    //    milliseconds from call to call, more than the parse costs, so the cost is also measured
    //    on the same listing printed by a stand-in `ls` (a script named `ls` that prints it:
    //    recognised by its name like the real one), in pairs with and without `parse`.
    let listing = "ls -lR tree";
    let raw = call(&client, "terminal", json!({"command": listing})).await;
    let spill = raw.structured_content.as_ref().unwrap()["spill_path"]
        .as_str()
        .unwrap()
        .to_owned();
    let bytes = std::fs::metadata(&spill).unwrap().len();
    std::fs::copy(&spill, ws.join("listing.txt")).unwrap();
    std::fs::create_dir_all(ws.join("stand-in")).unwrap();
    let stand_in = ws.join("stand-in/ls");
    std::fs::write(
        &stand_in,
        "#!/bin/sh\nexec cat \"$(dirname \"$0\")/../listing.txt\"\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &stand_in,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (plain, parsed) = pairs(&client, listing, ROUNDS * 2).await;
    println!(
        "`{listing}` ({:.1} MB of listing): {:.1} ms plain, {:.1} ms parsed (medians of {} each; the walk alone spans {:.0}-{:.0} ms)",
        bytes as f64 / 1e6,
        ms(median(plain.clone())),
        ms(median(parsed.clone())),
        plain.len(),
        ms(*plain.iter().min().unwrap()),
        ms(*plain.iter().max().unwrap()),
    );
    let (same_plain, same_parsed) = pairs(&client, "stand-in/ls -lR tree", ROUNDS * 2).await;
    let mut extra: Vec<f64> = same_plain
        .iter()
        .zip(&same_parsed)
        .map(|(a, b)| ms(*b) - ms(*a))
        .collect();
    extra.sort_by(f64::total_cmp);
    let extra = extra[extra.len() / 2];
    let call_ms = ms(median(plain)) + extra;
    println!(
        "parse cost on that listing (stand-in ls, median of {} paired differences): {extra:.1} ms = {:.1}% of the `{listing}` call (target <= 5%)",
        same_plain.len(),
        extra / call_ms * 100.0
    );

    // 2. The parser alone: time per byte on the whole listing and on a tenth of it.
    let whole = std::process::Command::new("ls")
        .args(["-lR", "tree"])
        .current_dir(ws)
        .env("LC_ALL", "C")
        .output()
        .unwrap()
        .stdout;
    let whole = String::from_utf8(whole).unwrap();
    let tenth: String = {
        let lines: Vec<&str> = whole.split_inclusive('\n').collect();
        lines[..lines.len() / 10].concat()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let ctx = agentty_parse::Context::utc_at(now as i64).unwrap();
    let stage = agentty_parse::Stage::from_argv(&["ls".into(), "-lR".into()]).unwrap();
    let parser = agentty_parse::recognize(&[stage]).unwrap();
    let per_byte = |text: &str| {
        let samples: Vec<Duration> = (0..ROUNDS)
            .map(|_| {
                let out = agentty_parse::Output {
                    stdout: text,
                    stderr: "",
                    exit_code: Some(0),
                };
                let t = Instant::now();
                parser.parse_within(&out, &ctx, 50 * 1024).unwrap();
                t.elapsed()
            })
            .collect();
        median(samples).as_secs_f64() * 1e9 / text.len() as f64
    };
    let (big, small) = (per_byte(&whole), per_byte(&tenth));
    println!(
        "parser alone: {:.1} ns/byte on {:.1} MB, {:.1} ns/byte on {:.2} MB: ratio {:.2} (bounded per byte: near 1)",
        big,
        whole.len() as f64 / 1e6,
        small,
        tenth.len() as f64 / 1e6,
        big / small
    );

    // 3. What the model reads.
    for (command, workdir) in [
        ("ps aux", "."),
        ("ls -la", "."),
        ("cargo build --offline", "demo"),
    ] {
        let client = if command == "ps aux" {
            &host_client
        } else {
            &client
        };
        let raw = call(
            client,
            "terminal",
            json!({"command": command, "workdir": workdir}),
        )
        .await;
        let typed = call(
            client,
            "terminal",
            json!({"command": command, "workdir": workdir, "parse": true}),
        )
        .await;
        let kind = parsed_type(&typed).unwrap_or_else(|| panic!("{command}: {}", text(&typed)));
        // The raw output whole (its spill file when it was cut to head and tail), and the typed
        // text; when records were left out to fit, the typed size of all of them, by proportion.
        let structured = raw.structured_content.as_ref().unwrap();
        let raw_len = structured["spill_path"]
            .as_str()
            .map_or(text(&raw).len() as u64, |p| {
                std::fs::metadata(p).unwrap().len()
            });
        let parsed = &typed.structured_content.as_ref().unwrap()["parsed"];
        let typed_len = text(&typed).len() as f64;
        let typed_all = match parsed["omitted"].as_u64() {
            Some(omitted) => {
                let records = agentty_parse::TYPES
                    .iter()
                    .find(|t| t.name == kind)
                    .unwrap()
                    .records;
                let kept = parsed["data"][records].as_array().unwrap().len() as f64;
                typed_len * (kept + omitted as f64) / kept
            }
            None => typed_len,
        };
        println!(
            "`{command}`: raw {raw_len} bytes (~{} tokens), {kind} {typed_all:.0} bytes (~{:.0} tokens): {:.2}x",
            raw_len / 4,
            typed_all / 4.0,
            typed_all / raw_len as f64
        );
    }
    client.cancel().await.ok();
}
