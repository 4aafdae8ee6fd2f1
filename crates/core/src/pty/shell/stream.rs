//! The reader's side: every chunk from the terminal, in order, through the marker scanner, the
//! screen, the raw tail, the output ring and the send in progress; and the shell's end.

use std::sync::Weak;

use tokio::time::Instant;

use crate::jobs::JobState;
use crate::pty::RAW_TAIL_BYTES;
use crate::pty::integration::{Marker, Piece};
use crate::reaper::Exit;

use super::*;

impl Shell {
    pub(super) fn ingest(&self, chunk: &[u8]) {
        let mut guard = lock(&self.live);
        let live = &mut *guard;
        live.last_output = Instant::now();
        live.raw_tail.extend(chunk);
        live.raw_total += chunk.len() as u64;
        let excess = live.raw_tail.len().saturating_sub(RAW_TAIL_BYTES);
        live.raw_tail.drain(..excess);
        let (ring_cleaner, screen, send, owed, ended, at_prompt, output) = (
            &mut live.ring_cleaner,
            &mut live.screen,
            &mut live.send,
            &mut live.owed_prompts,
            &mut live.ended_unseen,
            &mut live.at_prompt,
            &self.output,
        );
        live.scanner.scan(chunk, |piece| match piece {
            Piece::Bytes(bytes) => {
                screen.process(bytes);
                output.push(ring_cleaner.feed(bytes));
                if let Some(cap) = send.as_mut() {
                    cap.bytes(bytes);
                }
            }
            Piece::Marker(marker) => {
                *at_prompt = matches!(marker, Marker::Prompt(_));
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
        self.changed.send_modify(|n| *n += 1);
    }
}
