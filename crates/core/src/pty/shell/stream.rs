//! The reader's side: every chunk from the terminal, in order, through the marker scanner, the
//! screen, the raw tail, the output ring and the send in progress; the shell's reports of
//! ended commands from its channel, which turn its end markers into prompts; and the shell's
//! end.

use std::sync::Weak;

use tokio::time::Instant;

use crate::jobs::JobState;
use crate::pty::RAW_TAIL_BYTES;
use crate::pty::integration::{Marker, Piece};
use crate::reaper::Exit;

use super::*;

impl Shell {
    /// Takes a chunk of the terminal's output; whether a send (or the open) may have its
    /// answer now (see `answers`).
    pub(super) fn ingest(&self, chunk: &[u8]) -> bool {
        let mut resizes = lock(&self.resizes);
        self.before_chunk(&mut resizes);
        let mut guard = lock(&self.live);
        let live = &mut *guard;
        // A program in the terminal may have set its size (`stty cols`): what follows is drawn
        // for that size, so the screen takes it first.
        if let Some((cols, rows)) = self.master().and_then(|m| sys::window_size(m.raw()))
            && (cols, rows) != self.size()
            && let (Some(c), Some(r)) = (NonZeroU16::new(cols), NonZeroU16::new(rows))
        {
            live.screen.set_size(r, c);
            self.cols.store(cols, Ordering::Relaxed);
            self.rows.store(rows, Ordering::Relaxed);
        }
        live.last_output = Instant::now();
        live.raw_tail.extend(chunk);
        live.raw_total += chunk.len() as u64;
        let excess = live.raw_tail.len().saturating_sub(RAW_TAIL_BYTES);
        live.raw_tail.drain(..excess);
        let (ring_cleaner, screen, send, owed, ended, reports, held_told) = (
            &mut live.ring_cleaner,
            &mut live.screen,
            &mut live.send,
            &mut live.owed_prompts,
            &mut live.ended_unseen,
            &mut live.reports,
            &mut live.held_told,
        );
        let (at_prompt, started) = (&mut live.at_prompt, &mut live.started);
        let output = &self.output;
        let (channel, pid, hooks) = (self.channel.as_ref(), self.pid, self.flavor.has_hooks());
        let mut marked = false;
        live.scanner.scan(chunk, |piece| match piece {
            Piece::Bytes(bytes) => {
                screen.process(bytes);
                output.push(ring_cleaner.feed(bytes));
                if let Some(cap) = send.as_mut() {
                    cap.bytes(bytes);
                }
            }
            Piece::Marker(marker) => {
                // bash, zsh: an end marker counts only with the shell's own report of it, and
                // they print no other kind of end (a program's forgery is dropped like any
                // unknown escape sequence).
                let marker = match marker {
                    Marker::End(seq) => match confirmed_end(channel, pid, reports, seq) {
                        Some(code) => Marker::Prompt(code),
                        None => return,
                    },
                    Marker::Prompt(_) if hooks => return,
                    other => other,
                };
                // A start marker answers nothing.
                marked |= !matches!(marker, Marker::Start);
                *at_prompt = matches!(marker, Marker::Prompt(_));
                *started = matches!(marker, Marker::Start);
                if *at_prompt {
                    *held_told = false;
                    resizes.prompt_came();
                }
                match send.as_mut() {
                    Some(cap) => cap.marker(marker),
                    None => {
                        if let Marker::Prompt(code) = marker
                            && *owed > 0
                        {
                            *owed -= 1;
                            ended.push(code);
                        }
                    }
                }
            }
        });
        marked
            || live
                .send
                .as_ref()
                .is_some_and(SendCapture::wants_every_chunk)
    }

    /// Tells the watchers of the screen, and those of an answer where `answer`.
    pub(super) fn tell(&self, answer: bool) {
        self.changed.send_modify(|n| *n += 1);
        if answer {
            self.answers.send_modify(|n| *n += 1);
        }
    }

    pub(super) fn record_end(&self, exit: Option<Exit>) {
        let mut end = lock(&self.end);
        let state = match (end.hangup, exit) {
            (Some(Hangup::Idle), _) => JobState::Reaped,
            (Some(Hangup::Closed), _) => JobState::Stopped,
            (None, Some(Exit::Code(code))) => JobState::Exited(code),
            (None, Some(Exit::Signal(sig))) => JobState::Signalled(sig),
            (None, None) => JobState::Stopped,
        };
        if let Some(job) = end.job.as_ref().and_then(Weak::upgrade) {
            job.set_state(state.clone());
        }
        end.state = Some(state);
        drop(end);
        {
            let mut live = lock(&self.live);
            let rest = live.ring_cleaner.finish().to_owned();
            self.output.push(&rest);
            live.eof = true;
        }
        self.output.close();
        self.ended.send_replace(true);
        self.tell(true);
    }
}

/// The shell as a sink of its terminal's output: its ring, screen and send in progress, then a
/// wake-up for whoever waits on it. Takes no more once the shell is gone.
struct ShellSink(Weak<Shell>);

impl Sink for ShellSink {
    fn ingest(&mut self, _: Stream, bytes: &[u8]) -> bool {
        let Some(shell) = self.0.upgrade() else {
            return false;
        };
        let answer = shell.ingest(bytes);
        shell.tell(answer);
        true
    }
}

pub(super) async fn read_loop(
    shell: Weak<Shell>,
    master: Arc<Master>,
    masks: Option<Arc<crate::mask::Masks>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut source = Source::terminal(master, crate::limits::READ_CHUNK_BYTES).masked(masks);
    let mut sink = ShellSink(shell.clone());
    let stopped = async {
        let _ = stop.wait_for(|s| *s).await;
    };
    engine::pump(&mut source, &mut sink, stopped).await;
    if let Some(shell) = shell.upgrade() {
        lock(&shell.live).eof = true;
        shell.tell(true);
    }
}

pub(super) async fn watch_exit(shell: Weak<Shell>, mut exit: crate::reaper::ExitWatch) {
    let status = exit.wait().await.ok();
    let Some(shell) = shell.upgrade() else {
        return;
    };
    let by_us = lock(&shell.end).hangup.is_some();
    if !by_us {
        // The shell ended by itself (`exit`): nothing it started may outlive it.
        shell.hang_up();
        tree::terminate(
            shell.pid,
            &shell.marker,
            Duration::from_millis(CLOSE_GRACE_MS),
        )
        .await;
    }
    shell.record_end(status);
}

/// Moves the reports queued on `channel` into `reports`: only those the kernel says the shell
/// itself (`shell`) sent; any other process's is dropped.
pub(super) fn take_reports(channel: &Channel, shell: i32, reports: &mut VecDeque<(u64, i32)>) {
    take_reports_until(channel, shell, reports, None);
}

/// [`take_reports`], stopping once the report numbered `until` is taken (the one an end marker
/// waits for: the rest stays queued, a `recvmsg` fewer per command).
fn take_reports_until(
    channel: &Channel,
    shell: i32,
    reports: &mut VecDeque<(u64, i32)>,
    until: Option<u64>,
) {
    channel.drain(
        |datagram| match (datagram.sender, channel::parse_end(datagram.bytes)) {
            (Some(sender), Some(report)) if sender == shell => {
                reports.push_back(report);
                if reports.len() > REPORTS_MAX {
                    reports.pop_front();
                }
                until != Some(report.0)
            }
            (sender, _) => {
                tracing::debug!(
                    shell,
                    ?sender,
                    "ignored a report on a shell's channel that the shell did not send"
                );
                true
            }
        },
    );
}

/// The exit code the shell reported for its end numbered `seq`, taken with the reports before
/// it (whose markers never came); `None` when the shell sent no such report: the marker is a
/// program's output, not the end of a command.
fn confirmed_end(
    channel: Option<&Channel>,
    shell: i32,
    reports: &mut VecDeque<(u64, i32)>,
    seq: u64,
) -> Option<i32> {
    if let Some(channel) = channel
        && !reports.iter().any(|&(n, _)| n == seq)
    {
        take_reports_until(channel, shell, reports, Some(seq));
    }
    let at = reports.iter().position(|&(n, _)| n == seq);
    let Some(at) = at else {
        tracing::debug!(shell, seq, "ignored an end marker the shell did not report");
        return None;
    };
    let (_, code) = reports[at];
    reports.drain(..=at);
    Some(code)
}
