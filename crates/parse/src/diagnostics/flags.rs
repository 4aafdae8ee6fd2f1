//! Flags read against space-separated lists (`"-p --package --features"`): the cargo, rustc and
//! go recognisers each keep their known flags as such lists and ask these two questions of a
//! word. Shared from here so that no recogniser imports another for them.

/// Whether `word` is one of the space-separated `flags`.
pub(crate) fn listed(flags: &str, word: &str) -> bool {
    flags.split(' ').any(|flag| flag == word)
}

/// `--name=value`, or a short flag with its value attached (`-pfoo`, `-j4`), of `flags`.
pub(crate) fn has_value(word: &str, flags: &str) -> bool {
    flags.split(' ').any(|flag| {
        word.strip_prefix(flag).is_some_and(|rest| {
            if flag.starts_with("--") {
                rest.starts_with('=')
            } else {
                !rest.is_empty()
            }
        })
    })
}
