//! Fitting a typed result into the model's budget, measured on what the model reads (its
//! tables, `model_text.rs`), not on `data`, which repeats every key in every record and is
//! several times larger. A result past the budget keeps its first and its last records, whole,
//! and drops those between, as the text path keeps head and tail (docs/BEHAVIOUR.md §7.2): the
//! end of a listing or a log says as much as its start. The caller says how many were left out
//! and where.
//!
//! A parser of outputs that can be huge (a recursive listing) keeps, as it reads, only a head
//! and a sliding tail of its records ([`Keeper`]) and counts those it drops between: a result a
//! hundred times the budget costs about what one at the budget does.

use std::collections::VecDeque;

use crate::TypedResult;

/// What [`crate::Recognized::parse_within`] left out: `omitted` records between the first
/// `head` and the last `kept - head`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub kept: usize,
    pub omitted: usize,
    /// Records kept before the gap: the records array is `head` first records, then the last.
    pub head: usize,
}

/// A [`TypedResult`] with its type erased.
pub(crate) trait Encode: Send {
    fn type_name(&self) -> &'static str;
    /// Drops records from the middle until the model's text of the value is at most
    /// `max_bytes` (or no record is left), keeping as many from each end; no record before
    /// `gap` is taken as one of the last, nor one after it as one of the first (a [`Keeper`]
    /// already dropped records there). `None` when it fitted whole.
    fn fit(&mut self, max_bytes: usize, gap: Option<usize>) -> Option<Cut>;
    fn to_value(&self) -> serde_json::Result<serde_json::Value>;
}

impl<T: TypedResult> Encode for T {
    fn type_name(&self) -> &'static str {
        T::NAME
    }

    fn fit(&mut self, max_bytes: usize, gap: Option<usize>) -> Option<Cut> {
        let type_name = T::NAME;
        let whole = serde_json::to_value(&*self).ok()?;
        if gap.is_none() && crate::model_text::text_len(&whole, type_name) <= max_bytes {
            return None;
        }
        let skip = crate::registry::record_skips(type_name);
        let records = whole.get(T::RECORDS).and_then(serde_json::Value::as_array);
        // Each record adds its row (an upper bound: a cell shared by every record kept goes
        // to `same`, once) and a comma; the rest of the value costs what it does with the
        // array empty.
        let rows: Vec<usize> = records
            .map(|r| {
                r.iter()
                    .map(|record| crate::model_text::row_len(record, &skip) + 1)
                    .collect()
            })
            .unwrap_or_default();
        let mut all = std::mem::take(self.records());
        let rest =
            serde_json::to_value(&*self).map_or(0, |v| crate::model_text::text_len(&v, type_name));
        let total = all.len();
        let room = max_bytes.saturating_sub(rest);
        let (head, tail) = ends_within(&rows, room, gap);
        let kept = head + tail;
        if kept < total {
            all.drain(head..total - tail);
        }
        *self.records() = all;
        Some(Cut {
            kept,
            omitted: total - kept,
            head,
        })
    }

    fn to_value(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }
}

/// How many of the first and of the last rows fit in `room` together, taken alternately from
/// each end so both get as much as they can use; with a `gap`, the first come from before it
/// and the last from it on.
fn ends_within(rows: &[usize], room: usize, gap: Option<usize>) -> (usize, usize) {
    let total = rows.len();
    let (first_max, last_min) = gap.map_or((total, 0), |g| (g.min(total), g.min(total)));
    let (mut head, mut tail, mut used) = (0, 0, 0);
    loop {
        let tail_can_grow = total - tail > last_min.max(head);
        let take_head = head < first_max && (head <= tail || !tail_can_grow);
        let i = if take_head {
            head
        } else if tail_can_grow {
            total - tail - 1
        } else {
            break;
        };
        if used + rows[i] > room {
            break;
        }
        used += rows[i];
        if take_head {
            head += 1;
        } else {
            tail += 1;
        }
    }
    (head, tail)
}

/// How much more `data` a [`Keeper`] keeps than the budget: the model's text of a record is
/// about a third of its JSON object (`ls -l`: 3.5 times smaller), and the final cut measures
/// the text exactly.
const DATA_PER_TEXT: usize = 2;

/// Collects a parser's records: the first ones while they fit the budget, then a sliding window
/// of the last ones; those that slide out of it are only counted. What it keeps is about twice
/// what the model will read; [`Encode::fit`] cuts the rest from the middle.
pub(crate) struct Keeper<T> {
    head: Vec<T>,
    head_used: usize,
    tail: VecDeque<(T, usize)>,
    tail_used: usize,
    max_bytes: usize,
    dropped: usize,
}

impl<T: serde::Serialize> Keeper<T> {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Keeper {
            head: Vec::new(),
            head_used: 0,
            tail: VecDeque::new(),
            tail_used: 0,
            max_bytes: max_bytes.saturating_mul(DATA_PER_TEXT),
            dropped: 0,
        }
    }

    /// Keeps `record`, as one of the first or the newest of the last; an older one of the last
    /// may slide out and be counted.
    pub(crate) fn push(&mut self, record: T) {
        // Its length and a comma.
        let cost = encoded_len(&record) + 1;
        if self.tail.is_empty() && self.head_used + cost <= self.max_bytes {
            self.head_used += cost;
            self.head.push(record);
            return;
        }
        self.tail_used += cost;
        self.tail.push_back((record, cost));
        while self.tail_used > self.max_bytes && self.tail.len() > 1 {
            if let Some((_, old)) = self.tail.pop_front() {
                self.tail_used -= old;
                self.dropped += 1;
            }
        }
    }

    /// The record pushed last (a record's continuation line changes it).
    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        match self.tail.back_mut() {
            Some((record, _)) => Some(record),
            None => self.head.last_mut(),
        }
    }

    /// The records kept (the first, then the last), how many were dropped between, and where:
    /// `Some(index)` of the first of the last when any was dropped.
    pub(crate) fn finish(self) -> (Vec<T>, usize, Option<usize>) {
        let gap = (self.dropped > 0).then_some(self.head.len());
        let mut kept = self.head;
        kept.extend(self.tail.into_iter().map(|(record, _)| record));
        (kept, self.dropped, gap)
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
