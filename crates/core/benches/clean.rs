//! `cargo bench -p agentty-core --bench clean`: output cleaning throughput per core, against a
//! plain copy of the same bytes in the same run, for plain text (a log flood), coloured text
//! (a test runner), a progress bar and non-ASCII text, fed in 128 KiB chunks as a pipe delivers.
//! Then what the web view's coloured copy (`view_tap`) adds to a job's cleaning into its ring:
//! for plain text (no escape, which the model's cleaner finds as it cleans: nothing to add),
//! and for coloured text, unread (nobody watching: a raw tail kept) and read from the start (a
//! second cleaner).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentty_core::Cleaner;
use agentty_core::jobs::OutputRing;
use agentty_core::view_tap::{Streams, ViewTap};

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
    // A job's sink: the model's cleaner into the ring, without the view's copy, with it unread
    // (nobody watching: raw chunks kept), and with it read from the start (a second cleaner).
    // The three take turns, best of five each, so a load that comes and goes weighs on all.
    for (name, bytes) in &cases[..2] {
        let job = |tap: Option<bool>| {
            let t = Instant::now();
            let (mut out, err, ring) = (Cleaner::new(), Cleaner::new(), OutputRing::new(None));
            let view = ViewTap::new(true);
            if tap == Some(true) {
                let _ = view.ring();
            }
            for chunk in bytes.chunks(CHUNK) {
                if tap.is_some() {
                    let streams = Streams {
                        err: false,
                        cleaner: &mut out,
                        other: &err,
                        plain: Some(&ring),
                    };
                    view.through(streams, chunk, &mut |text| ring.push(text));
                } else {
                    out.feed_into(chunk, &mut |text| ring.push(text));
                }
            }
            view.finish();
            black_box(ring.total());
            let elapsed = t.elapsed();
            // What the first viewer waits for (the feed too, meanwhile): the unread tail cleaned.
            let t = Instant::now();
            black_box(view.ring().total());
            (elapsed, t.elapsed())
        };
        let (mut best, mut first_read) = ([Duration::MAX; 3], Duration::MAX);
        for _ in 0..5 {
            for (i, tap) in [None, Some(false), Some(true)].into_iter().enumerate() {
                let (fed, read) = job(tap);
                best[i] = best[i].min(fed);
                if tap == Some(false) {
                    first_read = first_read.min(read);
                }
            }
        }
        let [alone, unread, read] = best;
        let ratio = |d: Duration| d.as_secs_f64() / alone.as_secs_f64();
        println!(
            "job ring, {name:<22} {:>5.2} GB/s; with the view's copy unread {:>5.2} GB/s \
             ({:.3}x the time), read {:>5.2} GB/s ({:.3}x); an unread copy's first read {:.1} ms",
            gbps(alone),
            gbps(unread),
            ratio(unread),
            gbps(read),
            ratio(read),
            first_read.as_secs_f64() * 1e3
        );
    }
}
