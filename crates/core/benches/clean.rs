//! `cargo bench -p agentty-core --bench clean`: output cleaning throughput per core, against a
//! plain copy of the same bytes in the same run, for plain text (a log flood), coloured text
//! (a test runner), a progress bar and non-ASCII text, fed in 128 KiB chunks as a pipe delivers.
//! Then what the web view's coloured copy (`view_tap`) adds to a job's cleaning into its ring:
//! for plain text (no escape: one `memchr`), and for coloured text (a second cleaner).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentty_core::Cleaner;
use agentty_core::jobs::OutputRing;
use agentty_core::view_tap::{Before, ViewTap};

const TOTAL: usize = 256 * 1024 * 1024;
const CHUNK: usize = 128 * 1024;

fn sample(line: &str) -> Vec<u8> {
    line.as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(TOTAL)
        .collect()
}

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn main() {
    let cases = [
        (
            "plain log lines",
            sample("2026-11-30 INFO request served in 3 ms\n"),
        ),
        (
            "coloured test output",
            sample("test \x1b[1mparse::works\x1b[0m ... \x1b[32mok\x1b[0m\n"),
        ),
        ("progress bar", sample("Downloading [=====>    ] 52%\r")),
        ("non-ASCII text", sample("naïve café — 世界 😀 ok\n")),
    ];
    let mut sink = vec![0u8; CHUNK];
    let copy = best_of(3, || {
        for chunk in cases[0].1.chunks(CHUNK) {
            sink[..chunk.len()].copy_from_slice(chunk);
            black_box(&sink);
        }
    });
    let gbps = |d: Duration| TOTAL as f64 / d.as_secs_f64() / 1e9;
    println!("memcpy baseline: {:.1} GB/s", gbps(copy));
    for (name, bytes) in &cases {
        let clean = best_of(3, || {
            let mut cleaner = Cleaner::new();
            for chunk in bytes.chunks(CHUNK) {
                black_box(cleaner.feed(chunk));
            }
            black_box(cleaner.finish());
        });
        println!(
            "{name:<22} {:>5.2} GB/s per core ({:.2}x the copy's time)",
            gbps(clean),
            clean.as_secs_f64() / copy.as_secs_f64()
        );
    }
    // A job's sink: the model's cleaner into the ring, with and without the view's copy.
    for (name, bytes) in &cases[..2] {
        let job = |tap: bool| {
            best_of(3, || {
                let (mut out, err, ring) = (Cleaner::new(), Cleaner::new(), OutputRing::new(None));
                let view = ViewTap::new(true);
                for chunk in bytes.chunks(CHUNK) {
                    if tap {
                        let plain = Some(&ring);
                        view.feed(
                            false,
                            chunk,
                            Before {
                                out: &out,
                                err: &err,
                                plain,
                            },
                        );
                    }
                    out.feed_into(chunk, &mut |text| ring.push(text));
                }
                black_box(ring.total());
            })
        };
        let (alone, tapped) = (job(false), job(true));
        println!(
            "job ring, {name:<22} {:>5.2} GB/s; with the view's copy {:>5.2} GB/s ({:.3}x the time)",
            gbps(alone),
            gbps(tapped),
            tapped.as_secs_f64() / alone.as_secs_f64()
        );
    }
}
