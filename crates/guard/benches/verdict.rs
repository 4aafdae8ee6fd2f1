//! Guard verdict time per command line over the whole corpus (dangerous + ordinary).
//!
//! Run: `CARGO_TARGET_DIR=/work/target-guard cargo bench -p agentty-guard --bench verdict`
//! Each line is checked `RUNS_PER_LINE` times after a warm-up; a line's time is the median of its
//! runs, and the report gives the median, p90 and max of those per-line times in microseconds.
//! Plain `std::time::Instant` on purpose: no criterion to build on a 2-core machine.

use std::hint::black_box;
use std::time::Instant;

use agentty_guard::{GuardConfig, check};

/// Timed runs per line; the per-line median discards scheduler noise.
const RUNS_PER_LINE: usize = 25;
/// The verdict budget per line from the issue.
const TARGET_MEDIAN_US: f64 = 50.0;

fn corpus() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut lines = Vec::new();
    for name in ["dangerous.txt", "ordinary.txt"] {
        let path = format!("{dir}/{name}");
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("cannot read {path}");
            continue;
        };
        for line in text.lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            // Drop a `rule-name | ` annotation; the command is what gets timed.
            let command = match line.split_once(" | ") {
                Some((rule, rest)) if agentty_guard::rule(rule).is_some() => rest,
                _ => line,
            };
            lines.push(
                command
                    .replace("\\\\n", "\u{1}")
                    .replace("\\n", "\n")
                    .replace('\u{1}', "\\n"),
            );
        }
    }
    lines
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn main() {
    let cfg = GuardConfig::default();
    let lines = corpus();
    let mut per_line_us = Vec::with_capacity(lines.len());
    let mut slowest = (0.0, String::new());
    for line in &lines {
        black_box(check(black_box(line), &cfg));
        let mut runs = Vec::with_capacity(RUNS_PER_LINE);
        for _ in 0..RUNS_PER_LINE {
            let started = Instant::now();
            black_box(check(black_box(line), &cfg));
            runs.push(started.elapsed().as_secs_f64() * 1e6);
        }
        runs.sort_by(f64::total_cmp);
        let median = percentile(&runs, 0.5);
        if median > slowest.0 {
            slowest = (median, line.clone());
        }
        per_line_us.push(median);
    }
    per_line_us.sort_by(f64::total_cmp);
    let median = percentile(&per_line_us, 0.5);
    println!(
        "guard verdict over {} corpus lines ({RUNS_PER_LINE} runs each):",
        lines.len()
    );
    println!("  median {median:.1} µs");
    println!("  p90    {:.1} µs", percentile(&per_line_us, 0.9));
    println!("  max    {:.1} µs  ({:?})", slowest.0, slowest.1);
    println!(
        "  target median <= {TARGET_MEDIAN_US} µs: {}",
        if median <= TARGET_MEDIAN_US {
            "met"
        } else {
            "MISSED"
        }
    );
}
