//! The view's event streams (server-sent events): the sessions' state, a job's output, a
//! shell's screen. Each stream is a task that reads its source at its own pace and sends into a
//! channel of [`QUEUED`] events: a viewer that does not keep up makes the task wait (nothing
//! piles up), and a job's viewer that fell behind the output ring starts again from a snapshot.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::channel::{Channel, Sender};
use hyper::Response;
use hyper::header::{self, HeaderValue};
use serde_json::{Value, json};

use agentty_core::jobs::{Job, JobKind, JobState};
use agentty_core::pty::{Shell, StyledScreen};
use agentty_server::Agentty;
use agentty_server::view::Target;
use agentty_server::view::Viewer;

use crate::http::body::Body;

/// Events a stream holds for its viewer.
const QUEUED: usize = 4;
/// At most ten updates a second per viewer.
const PACE: Duration = Duration::from_millis(100);
/// A job's output sent at once: the snapshot, and the most one update carries before the
/// viewer is resynced to the tail instead.
const CHUNK: usize = 64 * 1024;
/// A quiet stream sends a comment this often: a viewer that left is noticed (the send fails)
/// and its task ends, rather than waiting for output that may never come.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Sends a comment when nothing was sent for [`KEEP_ALIVE`]; false once the viewer is gone.
async fn keep_alive(tx: &mut Sender<Bytes>, last: &mut std::time::Instant) -> bool {
    if last.elapsed() < KEEP_ALIVE {
        return true;
    }
    *last = std::time::Instant::now();
    tx.send_data(Bytes::from_static(b": keep-alive\n\n"))
        .await
        .is_ok()
}

/// Combining marks kept on one character in a job's output as the page gets it. A browser lays
/// a character out with all its marks at once, and a command that printed `a` with 30 000 of
/// them (what a program may print, not a terminal) held a viewer's page for seconds at every
/// update; no script needs more than a few.
const MARKS_KEPT: usize = 8;

/// Drops the combining marks past [`MARKS_KEPT`] in a row, across the pieces of one stream. A
/// mark the page shows as its code point (a variation selector: `looks_blank`) is kept and
/// ends the run: it stacks on nothing there, and dropping it would hide from the person what
/// the model reads (review 40 M3).
#[derive(Default)]
struct MarkCap {
    /// Marks in a row at the end of what was capped so far.
    run: usize,
}

impl MarkCap {
    fn cap<'a>(&mut self, text: &'a str) -> std::borrow::Cow<'a, str> {
        use unicode_general_category::{GeneralCategory, get_general_category};
        if text.is_ascii() {
            // No marks (the usual output): as it is, uncopied; any text ends a run.
            if !text.is_empty() {
                self.run = 0;
            }
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            let mark = !c.is_ascii()
                && !agentty_core::pty::shell::looks_blank(c)
                && matches!(
                    get_general_category(c),
                    GeneralCategory::NonspacingMark
                        | GeneralCategory::SpacingMark
                        | GeneralCategory::EnclosingMark
                );
            if !mark {
                self.run = 0;
            } else if self.run < MARKS_KEPT {
                self.run += 1;
            } else {
                continue;
            }
            out.push(c);
        }
        std::borrow::Cow::Owned(out)
    }
}

/// How often the state is looked at while somebody watches.
const STATE_EVERY: Duration = Duration::from_millis(500);

fn sse(make: impl FnOnce(Sender<Bytes>) -> tokio::task::JoinHandle<()>) -> Response<Body> {
    let (tx, body) = Channel::<Bytes, Infallible>::new(QUEUED);
    make(tx);
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Sends one event; false once the viewer is gone.
async fn send(tx: &mut Sender<Bytes>, event: &str, data: &Value) -> bool {
    let frame = format!("event: {event}\ndata: {data}\n\n");
    tx.send_data(Bytes::from(frame)).await.is_ok()
}

/// `/view/events`: the sessions, their jobs and shells, sent whenever they change.
pub fn state(
    agentty: Agentty,
    control: bool,
    viewer: Viewer,
    peers: Option<Arc<crate::http::peers::Peers>>,
) -> Response<Body> {
    sse(|mut tx| {
        tokio::spawn(async move {
            // A page open on the view is one viewer (`/metrics`), until its stream ends.
            let _viewing = agentty_server::metrics::METRICS.viewing();
            let mut last = Value::Null;
            let mut quiet = 0u32;
            loop {
                let mut now = agentty.view_state(&viewer);
                // The other agents of this state dir, when this one serves the page for them.
                if let Some(peers) = &peers {
                    peers.merge_into(&mut now).await;
                }
                now["control"] = Value::Bool(control);
                // A job's command line, a client's name, what a secret request asks for: a
                // command or a client chose them, marks included.
                cap_marks_in(&mut now);
                // Ages tick; send when something else changed, or every few seconds.
                let mut comparable = now.clone();
                strip_ages(&mut comparable);
                if comparable != last || quiet >= 10 {
                    if !send(&mut tx, "state", &now).await {
                        return;
                    }
                    last = comparable;
                    quiet = 0;
                } else {
                    quiet += 1;
                }
                tokio::time::sleep(STATE_EVERY).await;
            }
        })
    })
}

/// Every string in `value` through its own [`MarkCap`].
fn cap_marks_in(value: &mut Value) {
    match value {
        Value::String(text) if !text.is_ascii() => {
            *text = MarkCap::default().cap(text).into_owned();
        }
        Value::Array(items) => items.iter_mut().for_each(cap_marks_in),
        Value::Object(fields) => fields.values_mut().for_each(cap_marks_in),
        _ => {}
    }
}

fn strip_ages(state: &mut Value) {
    if let Some(sessions) = state["sessions"].as_array_mut() {
        for session in sessions {
            if let Some(calls) = session["calls"]["running"].as_array_mut() {
                for call in calls {
                    call["age_ms"] = Value::Null;
                }
            }
            if let Some(jobs) = session["jobs"].as_array_mut() {
                for job in jobs {
                    job["age_ms"] = Value::Null;
                }
            }
        }
    }
}

/// `/view/stream`: a job's output or a shell's screen.
pub fn target(target: Target) -> Response<Body> {
    match target {
        Target::Job(job) => sse(|tx| tokio::spawn(ring_output(Source::Job(job), tx))),
        Target::Call(call) => sse(|tx| tokio::spawn(ring_output(Source::Call(call), tx))),
        Target::Done(call) => sse(|tx| tokio::spawn(done_call(call, tx))),
        Target::Shell(job, shell) => sse(|tx| tokio::spawn(shell_screen(job, shell, tx))),
    }
}

/// What a command's output is read from: a job's ring, or its coloured copy once it printed
/// colours (the copy starts then, from the ring's text); a running call's copy.
enum Source {
    Job(Arc<Job>),
    Call(Arc<agentty_server::view_calls::LiveCall>),
}

impl Source {
    fn ring(&self) -> &agentty_core::jobs::OutputRing {
        match self {
            // A shell's job has no copy (its screen is the view's); an ended shell shows its ring.
            Source::Job(job) if job.kind == JobKind::Command && job.view.coloured() => {
                job.view.ring()
            }
            Source::Job(job) => &job.output,
            Source::Call(call) => call.view.ring(),
        }
    }

    fn running(&self) -> bool {
        match self {
            Source::Job(job) => job.state().is_running(),
            Source::Call(call) => !call.view.ring().is_closed(),
        }
    }

    fn end_word(&self) -> String {
        match self {
            Source::Job(job) => state_word(&job.state()),
            Source::Call(_) => "ended".into(),
        }
    }
}

/// A call that ended: the text its model got, then `end`.
async fn done_call(call: Arc<agentty_server::view_calls::DoneCall>, mut tx: Sender<Bytes>) {
    let text = MarkCap::default().cap(&call.text).into_owned();
    let total = text.len();
    if send(
        &mut tx,
        "snapshot",
        &json!({"text": text, "from": 0, "total": total}),
    )
    .await
    {
        let (state, _, _) = call.ending.words();
        let _ = send(&mut tx, "end", &json!({ "state": state })).await;
    }
}

fn state_word(state: &JobState) -> String {
    match state {
        JobState::Running => "running".into(),
        JobState::Exited(code) => format!("exited {code}"),
        JobState::Signalled(sig) => format!("killed by {}", agentty_core::signal_name(*sig)),
        JobState::Stopped => "stopped".into(),
        JobState::Reaped => "closed (idle)".into(),
    }
}

/// The tail first, then what is printed as it is printed; a new snapshot when the viewer fell
/// behind, or when a job's coloured copy began; an `end` event once the job ended and
/// everything was sent.
async fn ring_output(source: Source, mut tx: Sender<Bytes>) {
    let mut marks = MarkCap::default();
    let snapshot = |ring: &agentty_core::jobs::OutputRing, marks: &mut MarkCap| {
        let tail = ring.read(None, CHUNK);
        *marks = MarkCap::default();
        let text = marks.cap(&tail.text);
        let data = json!({"text": text, "from": tail.from, "total": tail.total});
        (tail.next, data)
    };
    let mut ring = source.ring();
    let (mut cursor, data) = snapshot(ring, &mut marks);
    if !send(&mut tx, "snapshot", &data).await {
        return;
    }
    let mut last = std::time::Instant::now();
    loop {
        let ended = !source.running();
        let now = source.ring();
        let slice = now.read(Some(cursor), CHUNK);
        if !std::ptr::eq(now, ring) || slice.dropped > 0 || slice.remaining > 0 {
            // Another copy, behind the ring, or more than one update's worth behind: start
            // from the tail.
            ring = now;
            let (next, data) = snapshot(ring, &mut marks);
            cursor = next;
            if !send(&mut tx, "snapshot", &data).await {
                return;
            }
        } else if !slice.text.is_empty() {
            cursor = slice.next;
            last = std::time::Instant::now();
            let text = marks.cap(&slice.text);
            if !send(&mut tx, "append", &json!({ "text": text })).await {
                return;
            }
        } else if !keep_alive(&mut tx, &mut last).await {
            return;
        } else if ended {
            let state = json!({"state": source.end_word()});
            let _ = send(&mut tx, "end", &state).await;
            return;
        }
        tokio::select! {
            () = ring.changed() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        tokio::time::sleep(PACE).await;
    }
}

/// The rendered screen whenever it changed (at most ten a second), then `end` when the shell
/// ends.
async fn shell_screen(job: Arc<Job>, shell: Arc<Shell>, mut tx: Sender<Bytes>) {
    let mut changes = shell.changes();
    let mut last: Option<StyledScreen> = None;
    let mut sent = std::time::Instant::now();
    loop {
        let screen = shell.styled();
        if last.as_ref() != Some(&screen) {
            if !send(&mut tx, "screen", &screen_json(&screen)).await {
                return;
            }
            last = Some(screen);
            sent = std::time::Instant::now();
        } else if !keep_alive(&mut tx, &mut sent).await {
            return;
        }
        if !job.state().is_running() || shell.has_ended() {
            let state = json!({"state": state_word(&job.state())});
            let _ = send(&mut tx, "end", &state).await;
            return;
        }
        tokio::select! {
            _ = changes.changed() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        tokio::time::sleep(PACE).await;
    }
}

/// `{cols, rows, cursor: [row, col], lines: [[[text, fg, bg, flags], …], …]}`: colours as
/// `#rrggbb` or null; flags: b bold, d dim, i italic, u underline, r inverse.
fn screen_json(screen: &StyledScreen) -> Value {
    let colour = |c: Option<u32>| c.map(|c| format!("#{c:06x}"));
    let lines: Vec<Value> = screen
        .lines
        .iter()
        .map(|runs| {
            runs.iter()
                .map(|run| {
                    let s = &run.style;
                    let flags: String = [
                        (s.bold, 'b'),
                        (s.dim, 'd'),
                        (s.italic, 'i'),
                        (s.underline, 'u'),
                        (s.inverse, 'r'),
                    ]
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, f)| *f)
                    .collect();
                    json!([run.text, colour(s.fg), colour(s.bg), flags])
                })
                .collect()
        })
        .collect();
    json!({
        "cols": screen.cols,
        "rows": screen.rows,
        "cursor": [screen.cursor_row, screen.cursor_col],
        "alternate": screen.alternate,
        "lines": lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_past_the_cap_are_dropped_across_pieces() {
        let mut marks = MarkCap::default();
        let flood = format!("a{}", "\u{301}".repeat(30_000));
        let (head, tail) = flood.split_at(1 + 2 * 15_000);
        let shown = marks.cap(head).into_owned() + &marks.cap(tail) + &marks.cap("b\u{301}\u{302}");
        assert_eq!(
            shown,
            format!("a{}b\u{301}\u{302}", "\u{301}".repeat(MARKS_KEPT))
        );
        // Text with a few marks, and other scripts' marks, as it is.
        let mut marks = MarkCap::default();
        for text in ["e\u{301}te\u{301}", "नमस्ते", "ok\n"] {
            assert_eq!(marks.cap(text), text);
        }
    }

    /// Review 40 M3: an emoji with 40 variation selectors (which the page shows as their code
    /// points) lost all but 8 of them, so the person saw less than the model read.
    #[test]
    fn marks_the_page_shows_as_code_points_are_kept() {
        let mut marks = MarkCap::default();
        let hidden = format!("\u{1f600}{}x", "\u{fe0f}".repeat(40));
        assert_eq!(marks.cap(&hidden), hidden);
        let tags = format!("a{}{}", "\u{e0041}".repeat(20), "\u{301}".repeat(20));
        assert_eq!(
            marks.cap(&tags),
            format!(
                "a{}{}",
                "\u{e0041}".repeat(20),
                "\u{301}".repeat(MARKS_KEPT)
            )
        );
    }

    #[test]
    fn marks_in_the_states_strings_are_capped() {
        let label = format!("sleep 30 # a{}", "\u{301}".repeat(30_000));
        let mut state =
            json!({"sessions": [{"client": label, "jobs": [{"label": label, "pid": 7}]}]});
        cap_marks_in(&mut state);
        let capped = format!("sleep 30 # a{}", "\u{301}".repeat(MARKS_KEPT));
        assert_eq!(state["sessions"][0]["client"], capped);
        assert_eq!(state["sessions"][0]["jobs"][0]["label"], capped);
        assert_eq!(state["sessions"][0]["jobs"][0]["pid"], 7);
    }
}
