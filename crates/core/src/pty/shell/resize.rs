//! The terminal's size as the model and the view set it: their resizes, held while a secret is
//! typed, and kept against a write-back of the size one replaced.
//!
//! bash reads the terminal's size after every command and writes what it read straight back
//! (`TIOCGWINSZ`, then `TIOCSWINSZ`; in bash 5.2 after its prompt hook, so after agentty's
//! prompt marker, and before the prompt itself; other programs do the same). A resize made
//! between the two was undone by the write-back, and the model's size lost without a word: the
//! next chunk of output showed the terminal at its old size, which the screen then took as a
//! program's own (`stream.rs`). So a resize is remembered until the shell has surely settled
//! at a prompt since: a chunk of output after the prompt marker's (the prompt itself comes after
//! the write-back), or the model's next keys (typed at a prompt bash waits at, its write-back
//! long made). A program that sets the terminal back to exactly the size it replaced meanwhile
//! gets the resize made again, once; the look is made before that chunk is taken, and before
//! the keys are typed. A size a program sets otherwise, or later (`stty cols 80` typed after,
//! the replaced size included), is the program's, and stays.

use super::*;

/// While a secret is typed key by key, each key goes into a read of the program's that holds
/// the terminal's read lock; a signal would end that read and free the lock for a moment, and a
/// resize sends the program SIGWINCH. So a resize asked meanwhile (by the model's
/// `shell_read`, or the view) waits for the typing's end, and only the last one is made then.
#[derive(Default)]
pub(super) struct Resizes {
    held: bool,
    asked: Option<(u16, u16)>,
    /// The last resize, until the shell settled at a prompt since (see the module header).
    replaced: Option<Replaced>,
    /// A prompt marker came since that resize: the next chunk ends the wait.
    prompted: bool,
}

/// A resize: the size it replaced, and its own (columns, rows).
#[derive(Clone, Copy)]
struct Replaced {
    from: (u16, u16),
    to: (u16, u16),
}

impl Resizes {
    /// The shell printed its prompt marker: the chunk after it ends the wait.
    pub(super) fn prompt_came(&mut self) {
        if self.replaced.is_some() {
            self.prompted = true;
        }
    }
}

impl Shell {
    /// The model is about to type: a write-back made by now is undone, and a size set from
    /// here on is the program's (see the module header).
    pub(super) fn input_comes(&self) {
        let mut resizes = lock(&self.resizes);
        self.undo_write_back(&mut resizes);
        resizes.replaced = None;
        resizes.prompted = false;
    }

    /// Before a chunk of output is taken: a write-back made by now is undone, and after the
    /// prompt marker's chunk the wait ends (see the module header).
    pub(super) fn before_chunk(&self, resizes: &mut Resizes) {
        self.undo_write_back(resizes);
        if resizes.prompted {
            resizes.replaced = None;
            resizes.prompted = false;
        }
    }

    /// Resizes the terminal and the emulator (the program gets SIGWINCH); while a secret is
    /// typed, once it is ([`Resizes`]).
    pub fn resize(&self, cols: u16, rows: u16) -> Result<(), PtyError> {
        let master = self.master().ok_or(PtyError::Closed)?;
        let mut resizes = lock(&self.resizes);
        if resizes.held {
            resizes.asked = Some((cols, rows));
            return Ok(());
        }
        // Made with the gate held, so none is under way once a typing holds it.
        self.resize_now(&mut resizes, &master, cols, rows)
    }

    /// Holds resizes from now until [`Shell::release_resizes`] (a secret's typing).
    pub(super) fn hold_resizes(&self) {
        lock(&self.resizes).held = true;
    }

    /// Lets resizes go again, making the last one asked meanwhile.
    pub(super) fn release_resizes(&self) {
        let mut resizes = lock(&self.resizes);
        resizes.held = false;
        if let (Some((cols, rows)), Some(master)) = (resizes.asked.take(), self.master())
            && let Err(e) = self.resize_now(&mut resizes, &master, cols, rows)
        {
            tracing::debug!("a resize held during a secret's typing failed: {e}");
        }
    }

    fn resize_now(
        &self,
        resizes: &mut Resizes,
        master: &Master,
        cols: u16,
        rows: u16,
    ) -> Result<(), PtyError> {
        let from = sys::window_size(master.raw());
        sys::set_size(master.raw(), cols, rows)?;
        resizes.replaced = from
            .filter(|&from| from != (cols, rows))
            .map(|from| Replaced {
                from,
                to: (cols, rows),
            });
        resizes.prompted = false;
        lock(&self.live).screen.set_size(nz(rows), nz(cols));
        self.cols.store(cols, Ordering::Relaxed);
        self.rows.store(rows, Ordering::Relaxed);
        self.touch();
        Ok(())
    }

    /// Where a program set the terminal back to exactly the size the last resize replaced, and
    /// that resize is still the terminal's size as the shell knows it, the resize is made again
    /// (once; see the module header). Not while a secret is typed: resizes wait then.
    fn undo_write_back(&self, resizes: &mut Resizes) {
        let Some(replaced) = resizes.replaced else {
            return;
        };
        if resizes.held || self.size() != replaced.to {
            return;
        }
        let Some(master) = self.master() else {
            return;
        };
        if sys::window_size(master.raw()) != Some(replaced.from) {
            return;
        }
        resizes.replaced = None;
        let (cols, rows) = replaced.to;
        if let Err(e) = sys::set_size(master.raw(), cols, rows) {
            tracing::debug!("a resize undone by a program could not be made again: {e}");
        }
    }
}
