//! `GET /metrics`, scraped: the gauges read from the server now (sessions by transport, jobs and
//! shells running, calls in flight, readiness), handed to the metrics' text writer with the
//! counters it keeps (`metrics/report.rs`).

use crate::metrics::Transport;
use crate::metrics::report::{self, Gauges};
use crate::server::Agentty;

impl Agentty {
    /// Every series, as `GET /metrics` answers.
    pub fn metrics_text(&self) -> String {
        let mut gauges = Gauges {
            tools: &crate::tools::catalog::ORDER,
            calls_in_flight: self.inner.calls.count(),
            ready: self.readiness().is_ok(),
            draining: self.draining(),
            live: Default::default(),
            commands: 0,
            shells: 0,
        };
        for session in self.live_sessions() {
            let Some(state) = session.state.get() else {
                continue;
            };
            gauges.count_session(
                session
                    .about
                    .get()
                    .map_or(Transport::Stdio, |about| Transport::of(about.transport)),
            );
            for job in state.jobs.list() {
                if job.state().is_running() {
                    match job.kind {
                        agentty_core::jobs::JobKind::Command => gauges.commands += 1,
                        agentty_core::jobs::JobKind::Shell => gauges.shells += 1,
                    }
                }
            }
        }
        report::text(&gauges)
    }
}
