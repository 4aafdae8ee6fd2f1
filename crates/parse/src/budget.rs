//! Fitting a typed result into the model's budget: whole records are dropped from the end of the
//! type's records array (never half a record), and the caller says how many were left out.
//!
//! Measured on the Rust value, record by record, before anything is encoded: the measuring stops
//! at the first record that does not fit, so a result a hundred times the budget costs about
//! what one at the budget does.

use crate::TypedResult;

/// What [`crate::Recognized::parse_within`] left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub kept: usize,
    pub omitted: usize,
}

/// A [`TypedResult`] with its type erased.
pub(crate) trait Encode: Send {
    fn type_name(&self) -> &'static str;
    fn records_len(&mut self) -> usize;
    /// Drops records from the end until the compact JSON is at most `max_bytes` (or no record
    /// is left). `None` when it fitted whole.
    fn fit(&mut self, max_bytes: usize) -> Option<Cut>;
    fn to_value(&self) -> serde_json::Result<serde_json::Value>;
}

impl<T: TypedResult> Encode for T {
    fn type_name(&self) -> &'static str {
        T::NAME
    }

    fn records_len(&mut self) -> usize {
        self.records().len()
    }

    fn fit(&mut self, max_bytes: usize) -> Option<Cut> {
        let all = std::mem::take(self.records());
        // With the array empty, what the rest of the value costs; then each record adds its
        // own length and a comma.
        let mut used = encoded_len(self);
        let mut kept = 0;
        for (i, record) in all.iter().enumerate() {
            used += encoded_len(record) + usize::from(i > 0);
            if used > max_bytes {
                break;
            }
            kept += 1;
        }
        let total = all.len();
        let records = self.records();
        *records = all;
        records.truncate(kept);
        (kept < total).then_some(Cut {
            kept,
            omitted: total - kept,
        })
    }

    fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
}

/// Collects a parser's records while their compact JSON fits the budget; past it, only counts
/// them. The first record that does not fit closes it: records are left out from the end,
/// whole, as [`Encode::fit`] does (which still runs after, for the rest of the value).
pub(crate) struct Keeper<T> {
    kept: Vec<T>,
    used: usize,
    max_bytes: usize,
    omitted: usize,
}

impl<T: serde::Serialize> Keeper<T> {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Keeper {
            kept: Vec::new(),
            used: 0,
            max_bytes,
            omitted: 0,
        }
    }

    /// Keeps `record` if it fits (true), else counts it. A record changed after it was kept
    /// (`last_mut`) is measured again by [`Encode::fit`], which cuts more if it must.
    pub(crate) fn push(&mut self, record: T) -> bool {
        if self.omitted == 0 {
            // Its length and a comma.
            let cost = encoded_len(&record) + 1;
            if self.used + cost <= self.max_bytes {
                self.used += cost;
                self.kept.push(record);
                return true;
            }
        }
        self.omitted += 1;
        false
    }

    /// A record did not fit: every later one will only be counted.
    pub(crate) fn is_full(&self) -> bool {
        self.omitted > 0
    }

    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        self.kept.last_mut()
    }

    /// The records kept, and how many were read past them.
    pub(crate) fn finish(self) -> (Vec<T>, usize) {
        (self.kept, self.omitted)
    }
}

fn encoded_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
