//! Fitting a typed result into the model's budget: whole records are dropped from the end of the
//! type's records array (never half a record), and the caller says how many were left out.

use crate::Parsed;

/// What [`Parsed::fit`] left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub kept: usize,
    pub omitted: usize,
}

impl Parsed {
    /// Drops records from the end until the compact JSON of `data` is at most `max_bytes`
    /// (or no record is left). `None` when it fitted whole.
    pub fn fit(&mut self, max_bytes: usize) -> Option<Cut> {
        let whole = encoded_len(&self.data);
        if whole <= max_bytes {
            return None;
        }
        let key = crate::registry::records_key(self.type_name)?;
        let records = self.data.get_mut(key)?.as_array_mut()?;
        let all = std::mem::take(records);
        // With the array empty, what the rest of the value costs; then each record adds its own
        // length and a comma.
        let base = encoded_len(&self.data);
        let mut used = base;
        let mut kept = 0;
        for (i, record) in all.iter().enumerate() {
            let cost = encoded_len(record) + usize::from(i > 0);
            if used + cost > max_bytes {
                break;
            }
            used += cost;
            kept += 1;
        }
        let omitted = all.len() - kept;
        if let Some(records) = self.data.get_mut(key).and_then(|r| r.as_array_mut()) {
            records.extend(all.into_iter().take(kept));
        }
        Some(Cut { kept, omitted })
    }

    /// `data` as compact JSON, the form the model reads.
    pub fn compact(&self) -> String {
        self.data.to_string()
    }
}

fn encoded_len(value: &serde_json::Value) -> usize {
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_whole_records_and_counts_the_rest() {
        let mut parsed = Parsed {
            type_name: "GitLog",
            data: json!({"commits": (0..100).map(|i| json!({"n": i, "s": "x".repeat(50)})).collect::<Vec<_>>()}),
        };
        let cut = parsed.fit(1000).unwrap();
        assert_eq!(cut.kept + cut.omitted, 100);
        assert!(cut.kept > 5, "{cut:?}");
        assert!(parsed.compact().len() <= 1000);
        assert_eq!(parsed.data["commits"].as_array().unwrap().len(), cut.kept);
        assert_eq!(parsed.data["commits"][0]["n"], 0);
        let mut small = parsed.clone();
        assert_eq!(small.fit(100_000), None);
    }
}
