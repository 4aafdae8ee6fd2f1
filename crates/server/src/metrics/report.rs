//! The text `GET /metrics` answers: the counters of [`super::Metrics`], and the gauges read now
//! (live sessions by transport, jobs and shells running, calls in flight, readiness, memory).

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::{BUCKETS_SECS, METRICS, Outcome, TOOLS, Text, Transport, resident_bytes};
use crate::server::Agentty;

/// The label of the tool at `i` in the catalog's order, or `other`.
fn tool_label(i: usize) -> &'static str {
    crate::tools::catalog::ORDER
        .get(i)
        .copied()
        .unwrap_or("other")
}

impl Agentty {
    /// Every series, as `GET /metrics` answers.
    pub fn metrics_text(&self) -> String {
        let m = &METRICS;
        let mut text = Text::default();
        let mut live = [0u64; Transport::ALL.len()];
        let (mut commands, mut shells) = (0u64, 0u64);
        for session in self.live_sessions() {
            let Some(state) = session.state.get() else {
                continue;
            };
            let transport = session
                .about
                .get()
                .map_or(Transport::Stdio, |about| Transport::of(about.transport));
            if let Some(i) = Transport::ALL.iter().position(|t| *t == transport) {
                live[i] += 1;
            }
            for job in state.jobs.list() {
                if job.state().is_running() {
                    match job.kind {
                        agentty_core::jobs::JobKind::Command => commands += 1,
                        agentty_core::jobs::JobKind::Shell => shells += 1,
                    }
                }
            }
        }
        text.family(
            "agentty_sessions",
            "gauge",
            "Sessions with state, by transport.",
        );
        for (i, t) in Transport::ALL.iter().enumerate() {
            text.sample("agentty_sessions", &[("transport", t.label())], live[i]);
        }
        text.family(
            "agentty_sessions_opened_total",
            "counter",
            "Sessions opened, by transport.",
        );
        for (i, t) in Transport::ALL.iter().enumerate() {
            let n = m.sessions_opened[i].load(Ordering::Relaxed);
            text.sample(
                "agentty_sessions_opened_total",
                &[("transport", t.label())],
                n,
            );
        }
        text.family(
            "agentty_tool_calls_total",
            "counter",
            "Tool calls answered, by tool and outcome.",
        );
        for t in 0..TOOLS {
            for (o, outcome) in Outcome::ALL.iter().enumerate() {
                text.sample(
                    "agentty_tool_calls_total",
                    &[("tool", tool_label(t)), ("outcome", outcome.label())],
                    m.calls[t][o].load(Ordering::Relaxed),
                );
            }
        }
        text.family(
            "agentty_tool_call_duration_seconds",
            "histogram",
            "How long tool calls took to answer, by tool.",
        );
        for t in 0..TOOLS {
            let tool = tool_label(t);
            let mut cumulative = 0u64;
            for (b, bound) in BUCKETS_SECS.iter().enumerate() {
                cumulative += m.durations[t][b].load(Ordering::Relaxed);
                text.sample(
                    "agentty_tool_call_duration_seconds_bucket",
                    &[("tool", tool), ("le", &bound.to_string())],
                    cumulative,
                );
            }
            cumulative += m.durations[t][BUCKETS_SECS.len()].load(Ordering::Relaxed);
            text.sample(
                "agentty_tool_call_duration_seconds_bucket",
                &[("tool", tool), ("le", "+Inf")],
                cumulative,
            );
            let sum = m.duration_sum_us[t].load(Ordering::Relaxed) as f64 / 1e6;
            text.sample(
                "agentty_tool_call_duration_seconds_sum",
                &[("tool", tool)],
                sum,
            );
            text.sample(
                "agentty_tool_call_duration_seconds_count",
                &[("tool", tool)],
                cumulative,
            );
        }
        text.single(
            "agentty_tool_calls_in_flight",
            "gauge",
            "Tool calls being answered now.",
            self.inner.calls.count(),
        );
        text.family(
            "agentty_jobs_running",
            "gauge",
            "Background commands and shells running, by kind.",
        );
        text.sample("agentty_jobs_running", &[("kind", "command")], commands);
        text.sample("agentty_jobs_running", &[("kind", "shell")], shells);
        text.single(
            "agentty_spawn_failures_total",
            "counter",
            "Commands and shells that could not be started.",
            m.spawn_failures.load(Ordering::Relaxed),
        );
        text.family(
            "agentty_guard_blocks_total",
            "counter",
            "Command lines the guard blocked, by rule.",
        );
        let blocks = m
            .guard_blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (rule, n) in blocks {
            text.sample("agentty_guard_blocks_total", &[("rule", rule)], n);
        }
        text.family(
            "agentty_sandbox_refusals_total",
            "counter",
            "Results of terminal and shell_send that reported a refused write (2008) or read.",
        );
        for (i, op) in ["write", "read"].iter().enumerate() {
            text.sample(
                "agentty_sandbox_refusals_total",
                &[("op", op)],
                m.sandbox_refusals[i].load(Ordering::Relaxed),
            );
        }
        text.single(
            "agentty_network_refusals_total",
            "counter",
            "Connections of confined commands refused by the network policy.",
            m.network_refusals.load(Ordering::Relaxed),
        );
        text.single(
            "agentty_view_viewers",
            "gauge",
            "Web view streams open now.",
            m.viewers.load(Ordering::Relaxed).max(0),
        );
        text.single(
            "agentty_ready",
            "gauge",
            "1 while /readyz answers 200: accepting sessions, sandbox in force as configured.",
            u8::from(self.readiness().is_ok()),
        );
        text.single(
            "agentty_draining",
            "gauge",
            "1 from the shutdown signal until the process ends.",
            u8::from(self.draining()),
        );
        text.single(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            resident_bytes(),
        );
        text.into_string()
    }
}
