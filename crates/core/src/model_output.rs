//! The model's copy of one run's merged output, one type for every path that returns output in
//! a result (the pipe one-shot and the PTY one-shot): head+tail shaping ([`Shaper`]) and the
//! spill file, created lazily on the first overflow of the inline limit with everything so far,
//! then appended to. A run that never overflows never touches the disk.

use std::sync::Arc;

use crate::limits::INLINE_LIMIT_BYTES;
use crate::outcome::Spill;
use crate::shape::{Shaped, Shaper};
use crate::spill::{SpillFile, SpillStore};

/// Where the spill file stands.
pub(crate) enum LazySpill {
    /// This run spills nowhere.
    Off,
    /// Not needed yet: created in `store` under this name on the first overflow.
    Ready(Arc<SpillStore>, String),
    Writing(SpillFile),
    Failed(String),
}

/// A run's merged output as the model gets it, and its spill file.
pub(crate) struct ModelOutput {
    shaper: Shaper,
    spill: LazySpill,
}

/// What a finished [`ModelOutput`] holds.
pub(crate) struct Finished {
    pub output: Shaped,
    pub bytes: u64,
    pub lines: u64,
    pub spill: Spill,
}

impl ModelOutput {
    /// `spill`: the store and the file name to spill into, if the output overflows.
    pub fn new(spill: Option<(Arc<SpillStore>, String)>) -> Self {
        Self {
            shaper: Shaper::new(),
            spill: spill.map_or(LazySpill::Off, |(store, name)| {
                LazySpill::Ready(store, name)
            }),
        }
    }

    /// Appends cleaned text; opens the spill file on the first overflow. A spill that fails is
    /// remembered (and said in the result); the output itself is never lost from the shaper.
    pub fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let overflowing = self
            .shaper
            .inline_text()
            .is_some_and(|inline| inline.len() + text.len() > INLINE_LIMIT_BYTES);
        if overflowing && let LazySpill::Ready(store, name) = &self.spill {
            let opened = store.create(name).and_then(|mut file| {
                file.write(self.shaper.inline_text().unwrap_or_default())?;
                Ok(file)
            });
            self.spill = match opened {
                Ok(file) => LazySpill::Writing(file),
                Err(e) => LazySpill::Failed(e.to_string()),
            };
        }
        if let LazySpill::Writing(file) = &mut self.spill
            && let Err(e) = file.write(text)
        {
            self.spill = LazySpill::Failed(e.to_string());
        }
        self.shaper.push(text);
    }

    /// The shaped text and the spill file, closed.
    pub fn finish(self) -> Finished {
        let spill = match self.spill {
            LazySpill::Off | LazySpill::Ready(..) => Spill::NotNeeded,
            LazySpill::Writing(file) => match file.finish() {
                Ok(path) => Spill::Written(path),
                Err(e) => Spill::Failed(e.to_string()),
            },
            LazySpill::Failed(reason) => Spill::Failed(reason),
        };
        let (bytes, lines) = (self.shaper.total_bytes(), self.shaper.total_lines());
        Finished {
            output: self.shaper.finish(),
            bytes,
            lines,
            spill,
        }
    }

    /// The parts, for a run handed over to the job table: the shaper (what the model gets now)
    /// and the spill state (which the job continues).
    pub fn into_parts(self) -> (Shaper, LazySpill) {
        (self.shaper, self.spill)
    }
}
