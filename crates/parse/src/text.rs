//! Small readings several parsers share (sizes in either power, digits, a clipped line, repeated
//! names). A leaf: parsers take these from here, never from one another.

/// A size as `ls -h`, `df -h` and `free -h` print it (`0`, `512`, `4.0K`, `1.5M`, `2G`, `3Ti`,
/// `12Ki`), in bytes. Powers of 1024, as those tools use with `-h`. `None` when it is not one.
pub fn human_size(text: &str) -> Option<u64> {
    scaled(text, 1024.0, |unit| unit.trim_end_matches(['i', 'B']))
}

/// A size printed with powers of 1000 (`--si`, `-H`): `0`, `999`, `4.1k`, `13G`, `1.5MB`.
pub fn si_size(text: &str) -> Option<u64> {
    scaled(text, 1000.0, |unit| unit.strip_suffix('B').unwrap_or(unit))
}

/// A number (`,` or `.` before its decimals) and a unit from `K` to `E`, in powers of `base`;
/// `letter` reduces the printed unit to its letter, as each spelling has its own suffixes
/// (`Ki` and `KB` with `-h`, `kB` with `--si`).
fn scaled(text: &str, base: f64, letter: impl Fn(&str) -> &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 24 {
        return None;
    }
    let value: f64 = digits.replace(',', ".").parse().ok()?;
    let power = match letter(unit) {
        "" => 0,
        "K" | "k" => 1,
        "M" => 2,
        "G" => 3,
        "T" => 4,
        "P" => 5,
        "E" => 6,
        _ => return None,
    };
    let bytes = value * base.powi(power);
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then(|| bytes.round() as u64)
}

/// Digits only (`u64::from_str` would also take a `+`).
pub fn number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `text` cut to at most `max_chars` characters, with `…` where it was cut: a note or a reason
/// quoting the output stays one short line, whatever the output holds.
pub fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
        None => text.to_owned(),
    }
}

/// Strings that repeat from line to line (owners, groups, users), shared rather than copied:
/// a listing of 10 000 files owned by two users holds two strings, not 10 000.
#[derive(Default)]
pub(crate) struct Recent {
    strings: Vec<std::sync::Arc<str>>,
}

impl Recent {
    /// How many distinct strings are remembered; the oldest is forgotten first.
    const KEPT: usize = 8;

    pub(crate) fn get(&mut self, text: &str) -> std::sync::Arc<str> {
        if let Some(known) = self.strings.iter().find(|s| &***s == text) {
            return known.clone();
        }
        if self.strings.len() == Self::KEPT {
            self.strings.remove(0);
        }
        let new: std::sync::Arc<str> = text.into();
        self.strings.push(new.clone());
        new
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
