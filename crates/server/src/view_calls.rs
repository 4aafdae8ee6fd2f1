//! A session's foreground `terminal` calls as the web view shows them (docs/BEHAVIOUR.md §12):
//! those running now (command, start, the coloured copy of their output the view reads) and a
//! bounded history of those that ended (how, how long, the text the model got, its spill
//! file). Recording costs a few small copies per call, and the call's output copy
//! (`agentty_core::view_tap`): its plain text, cleaned once, until it prints an escape.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use agentty_core::Exit;
use agentty_core::run::{RunOutcome, RunStatus, Spill};
use agentty_core::view_tap::ViewTap;
use rmcp::model::CallToolResult;

/// Ended calls kept per session: the view shows what an agent did lately, not all of it.
pub(crate) const HISTORY_CALLS: usize = 50;
/// Of the text a model got, what a history entry keeps (head and tail): 50 entries stay under
/// 2 MiB a session.
pub(crate) const KEPT_TEXT_BYTES: usize = 32 * 1024;

/// A call running now.
pub struct LiveCall {
    pub id: String,
    pub label: String,
    pub started: Instant,
    pub since: SystemTime,
    /// Its output, coloured, for the view.
    pub view: Arc<ViewTap>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signalled(i32),
    TimedOut,
    Cancelled,
    /// Stopped by agentty for printing more than the capture cap.
    Killed,
    /// The sandbox refused a write (whatever the exit code).
    Refused(Option<i32>),
    /// The guard refused it before anything ran.
    Blocked,
    /// A PTY call that stopped because the program waits for keyboard input.
    AwaitingInput,
    /// Its timeout moved it into the background as a job.
    Backgrounded,
    /// It could not be started.
    NotStarted,
}

impl Ending {
    /// `(state, exit_code, signal)` as the view's state says them.
    pub fn words(self) -> (&'static str, Option<i32>, Option<String>) {
        match self {
            Ending::Exited(code) => ("exited", Some(code), None),
            Ending::Signalled(sig) => ("signalled", None, Some(agentty_core::signal_name(sig))),
            Ending::TimedOut => ("timed out", None, None),
            Ending::Cancelled => ("cancelled", None, None),
            Ending::Killed => ("killed (output cap)", None, None),
            Ending::Refused(code) => ("refused by the sandbox", code, None),
            Ending::Blocked => ("blocked by the guard", None, None),
            Ending::AwaitingInput => ("awaiting input", None, None),
            Ending::Backgrounded => ("moved to the background", None, None),
            Ending::NotStarted => ("not started", None, None),
        }
    }

    /// Whether the view counts it as failed.
    pub fn failed(self) -> bool {
        !matches!(
            self,
            Ending::Exited(0) | Ending::Backgrounded | Ending::AwaitingInput
        )
    }
}

/// A call that ended.
pub struct DoneCall {
    pub id: String,
    pub label: String,
    pub since: SystemTime,
    pub took: Duration,
    pub ending: Ending,
    /// The text the model got (at most [`KEPT_TEXT_BYTES`], head and tail).
    pub text: String,
    /// The full output's file, when it outgrew the result.
    pub spill: Option<PathBuf>,
}

#[derive(Default)]
struct Inner {
    running: Vec<Arc<LiveCall>>,
    done: VecDeque<Arc<DoneCall>>,
    ran: u64,
    failed: u64,
}

/// One session's calls for the view.
#[derive(Default)]
pub struct Calls {
    inner: Mutex<Inner>,
}

/// What the view's state says of a session's calls.
pub struct Summary {
    pub running: Vec<Arc<LiveCall>>,
    pub done: Vec<Arc<DoneCall>>,
    pub ran: u64,
    pub failed: u64,
}

impl Calls {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A call starts.
    pub(crate) fn begin(&self, id: &str, label: &str) -> Running<'_> {
        let live = Arc::new(LiveCall {
            id: id.to_owned(),
            label: label.to_owned(),
            started: Instant::now(),
            since: SystemTime::now(),
            view: Arc::new(ViewTap::default()),
        });
        self.lock().running.push(live.clone());
        Running {
            calls: self,
            live: Some(live),
            awaiting: false,
        }
    }

    /// A call the guard refused: in the history at once.
    pub(crate) fn blocked(&self, id: &str, label: &str, said: &str) {
        self.push(DoneCall {
            id: id.to_owned(),
            label: label.to_owned(),
            since: SystemTime::now(),
            took: Duration::ZERO,
            ending: Ending::Blocked,
            text: kept(said),
            spill: None,
        });
    }

    fn push(&self, done: DoneCall) {
        let mut inner = self.lock();
        inner.running.retain(|live| live.id != done.id);
        inner.ran += 1;
        if done.ending.failed() {
            inner.failed += 1;
        }
        if inner.done.len() == HISTORY_CALLS {
            inner.done.pop_front();
        }
        inner.done.push_back(Arc::new(done));
    }

    pub fn summary(&self) -> Summary {
        let inner = self.lock();
        Summary {
            running: inner.running.clone(),
            done: inner.done.iter().cloned().collect(),
            ran: inner.ran + inner.running.len() as u64,
            failed: inner.failed,
        }
    }

    pub fn running(&self, id: &str) -> Option<Arc<LiveCall>> {
        self.lock().running.iter().find(|c| c.id == id).cloned()
    }

    pub fn done(&self, id: &str) -> Option<Arc<DoneCall>> {
        self.lock().done.iter().find(|c| c.id == id).cloned()
    }
}

impl crate::server::Agentty {
    /// The guard refused `label` (a command, code in its `env` or `stdin`, a line typed into a
    /// shell): in the view's history at once, with what the model was told.
    pub(crate) fn record_blocked(&self, label: &str, said: &str) {
        let (call, _) = self.next_call();
        self.state().view_calls.blocked(&call, label, said);
    }
}

/// A call in progress: ended with [`Running::ran`] or [`Running::other`]; dropped without
/// either (the client gave up while it ran), it is recorded as cancelled.
pub(crate) struct Running<'a> {
    calls: &'a Calls,
    live: Option<Arc<LiveCall>>,
    /// A PTY call that stopped because its program waits for keyboard input.
    awaiting: bool,
}

impl Running<'_> {
    pub(crate) fn awaiting(mut self, awaiting: bool) -> Self {
        self.awaiting = awaiting;
        self
    }

    pub(crate) fn view(&self) -> Option<Arc<ViewTap>> {
        self.live.as_ref().map(|l| l.view.clone())
    }

    /// It ran to an end: `refused` when the sandbox refused a write; `text` what the model got.
    pub(crate) fn ran(mut self, outcome: &RunOutcome, refused: bool, text: &str) {
        let ending = match (outcome.status, outcome.exit) {
            _ if refused => Ending::Refused(outcome.exit.and_then(Exit::code)),
            _ if self.awaiting => Ending::AwaitingInput,
            (RunStatus::Timeout, _) => Ending::TimedOut,
            (RunStatus::Cancelled, _) => Ending::Cancelled,
            (RunStatus::Killed, _) => Ending::Killed,
            (_, Some(Exit::Code(code))) => Ending::Exited(code),
            (_, Some(Exit::Signal(sig))) => Ending::Signalled(sig),
            (_, None) => Ending::Killed,
        };
        let spill = match &outcome.spill {
            Spill::Written(path) => Some(path.clone()),
            Spill::NotNeeded | Spill::Failed(_) => None,
        };
        self.end(ending, text, spill);
    }

    /// It ended otherwise (moved to the background, not started): the result the model got.
    pub(crate) fn other(mut self, ending: Ending, result: &CallToolResult) {
        self.end(ending, &result_text(result), None);
    }

    fn end(&mut self, ending: Ending, text: &str, spill: Option<PathBuf>) {
        let Some(live) = self.live.take() else {
            return;
        };
        self.calls.push(DoneCall {
            id: live.id.clone(),
            label: live.label.clone(),
            since: live.since,
            took: live.started.elapsed(),
            ending,
            text: kept(text),
            spill,
        });
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.end(Ending::Cancelled, "", None);
    }
}

/// The text blocks of a result, joined.
fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text`, or its head and tail when longer than [`KEPT_TEXT_BYTES`].
fn kept(text: &str) -> String {
    if text.len() <= KEPT_TEXT_BYTES {
        return text.to_owned();
    }
    let half = KEPT_TEXT_BYTES / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes not kept for the view …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_is_bounded_and_counts_every_call() {
        let calls = Calls::default();
        for n in 0..HISTORY_CALLS + 5 {
            let id = format!("c{n}");
            if n % 2 == 0 {
                calls.blocked(&id, "rm -rf /", "no");
            } else {
                drop(calls.begin(&id, "sleep 1"));
            }
        }
        let running = calls.begin("c99", "make");
        assert!(running.view().is_some());
        let summary = calls.summary();
        assert_eq!(summary.done.len(), HISTORY_CALLS);
        assert_eq!(summary.done[0].id, "c5");
        assert_eq!(summary.ran, HISTORY_CALLS as u64 + 6);
        assert_eq!(summary.failed, HISTORY_CALLS as u64 + 5);
        assert_eq!(summary.running.len(), 1);
        drop(running);
        assert!(calls.summary().running.is_empty());
        assert_eq!(calls.done("c99").map(|c| c.ending), Some(Ending::Cancelled));
    }

    #[test]
    fn a_long_text_keeps_its_head_and_tail() {
        let text = format!("{}é{}", "a".repeat(KEPT_TEXT_BYTES), "z".repeat(100));
        let kept = kept(&text);
        assert!(kept.len() < KEPT_TEXT_BYTES + 100);
        assert!(kept.starts_with("aaa") && kept.ends_with(&"z".repeat(100)));
        assert!(kept.contains("bytes not kept for the view"));
    }
}
