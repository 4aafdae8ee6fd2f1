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
    /// already dropped records there). Gives the value as JSON, encoded once, and the cut
    /// (`None` when it fitted whole).
    fn fit(
        &mut self,
        max_bytes: usize,
        gap: Option<usize>,
    ) -> serde_json::Result<(serde_json::Value, Option<Cut>)>;
    fn to_value(&self) -> serde_json::Result<serde_json::Value>;
}

impl<T: TypedResult> Encode for T {
    fn type_name(&self) -> &'static str {
        T::NAME
    }

    fn fit(
        &mut self,
        max_bytes: usize,
        gap: Option<usize>,
    ) -> serde_json::Result<(serde_json::Value, Option<Cut>)> {
        let type_name = T::NAME;
        let mut whole = serde_json::to_value(&*self)?;
        if gap.is_none() && crate::model_text::text_len(&whole, type_name) <= max_bytes {
            return Ok((whole, None));
        }
        let skip = crate::registry::record_skips(type_name);
        // Each record adds its row (an upper bound: a cell shared by every record kept goes
        // to `same`, once) and a comma; the rest of the value costs what it does with the
        // array empty.
        let rows: Vec<usize> = whole
            .get(T::RECORDS)
            .and_then(serde_json::Value::as_array)
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
        // The records kept are those of `whole`'s array, whose other records go: no second
        // encoding. With none kept, the type may leave its empty array out: encode it again.
        match whole.get_mut(T::RECORDS) {
            Some(serde_json::Value::Array(records)) if kept > 0 && records.len() == total => {
                records.drain(head..total - tail);
            }
            _ => whole = serde_json::to_value(&*self)?,
        }
        let cut = Cut {
            kept,
            omitted: total - kept,
            head,
        };
        Ok((whole, Some(cut)))
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

/// Collects a parser's records: the first ones, built, while they fit the budget; then the
/// last ones, as the parser read them (`P`: a line) and built only at the end, from the last
/// back, as far as they fit. The records between are only counted: a listing a hundred times
/// the budget builds about as many records as one at the budget. What it keeps is about twice
/// what the model will read; [`Encode::fit`] cuts the rest from the middle.
///
/// A record's cost is its compact JSON and a comma ([`cost`]); the last ones are those whose
/// costs, summed from the end, stay within the budget (at least one).
pub(crate) struct Keeper<T, P = T> {
    head: Vec<T>,
    head_used: usize,
    first_done: bool,
    /// The records after the first, not built yet, each with a lower bound of its cost: a
    /// record whose lower bounds from it to the newest pass the budget cannot be one of the
    /// last, and slides out.
    tail: VecDeque<(P, usize)>,
    tail_at_least: usize,
    max_bytes: usize,
    dropped: usize,
}

/// The record read last, as [`Keeper::newest`] gives it: built, or as it was read.
pub(crate) enum Newest<'k, T, P> {
    First(&'k mut T),
    Later(&'k mut P),
}

impl<T: serde::Serialize, P> Keeper<T, P> {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Keeper {
            head: Vec::new(),
            head_used: 0,
            first_done: false,
            tail: VecDeque::new(),
            tail_at_least: 0,
            max_bytes: max_bytes.saturating_mul(DATA_PER_TEXT),
            dropped: 0,
        }
    }

    /// Whether the next record may be one of the first: the caller builds it and offers it to
    /// [`Keeper::push_first`]; else it passes it, unbuilt, to [`Keeper::push_later`].
    pub(crate) fn taking_first(&self) -> bool {
        !self.first_done
    }

    /// Keeps `record` as one of the first if it fits. If not, the first records are complete
    /// and `record` comes back with its cost, for the caller to pass to
    /// [`Keeper::push_later`] as it read it.
    pub(crate) fn push_first(&mut self, record: T) -> Result<(), (T, usize)> {
        let cost = cost(&record);
        if !self.first_done && self.head_used + cost <= self.max_bytes {
            self.head_used += cost;
            self.head.push(record);
            return Ok(());
        }
        self.first_done = true;
        Err((record, cost))
    }

    /// A record after the first ones, as read: once built it will cost `at_least` or more.
    /// Older ones that can no longer be among the last slide out and are counted.
    pub(crate) fn push_later(&mut self, pending: P, at_least: usize) {
        self.first_done = true;
        self.tail_at_least += at_least;
        self.tail.push_back((pending, at_least));
        while self.tail_at_least > self.max_bytes && self.tail.len() > 1 {
            if let Some((_, old)) = self.tail.pop_front() {
                self.tail_at_least -= old;
                self.dropped += 1;
            }
        }
    }

    /// The record pushed last (a record's continuation line changes it).
    pub(crate) fn newest(&mut self) -> Option<Newest<'_, T, P>> {
        match self.tail.back_mut() {
            Some((pending, _)) => Some(Newest::Later(pending)),
            None => self.head.last_mut().map(Newest::First),
        }
    }

    /// The records kept (the first, then the last), how many were dropped between, and where:
    /// `Some(index)` of the first of the last when any was dropped. `build` makes a record of
    /// what was read, and gives its [`cost`] as it was when read (before a continuation line
    /// changed it); it runs for the last records kept and one more.
    pub(crate) fn finish<E>(
        mut self,
        mut build: impl FnMut(P) -> Result<(T, usize), E>,
    ) -> Result<(Vec<T>, usize, Option<usize>), E> {
        let mut last = Vec::new();
        let mut used = 0;
        while let Some((pending, _)) = self.tail.pop_back() {
            let (record, cost) = build(pending)?;
            if !last.is_empty() && used + cost > self.max_bytes {
                self.dropped += 1 + self.tail.len();
                break;
            }
            used += cost;
            last.push(record);
        }
        let gap = (self.dropped > 0).then_some(self.head.len());
        let mut kept = self.head;
        kept.extend(last.into_iter().rev());
        Ok((kept, self.dropped, gap))
    }
}

/// What a record costs a [`Keeper`]: its compact JSON and a comma.
pub(crate) fn cost<T: serde::Serialize + ?Sized>(record: &T) -> usize {
    encoded_len(record) + 1
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
