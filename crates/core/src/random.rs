//! Random bits from the kernel, for what must not be guessed: job handles of callers without a
//! session, run markers, the HTTP token.

/// Fills `buf` from the kernel's random source.
///
/// A kernel that gives no random bytes leaves nothing safe to hand out, so the process ends
/// (as std's own hash maps do): a guessable handle or token would be worse than no server.
pub fn fill(buf: &mut [u8]) {
    if let Err(e) = getrandom::fill(buf) {
        tracing::error!("the kernel gave no random bytes: {e}");
        std::process::abort();
    }
}

/// `bytes` random bytes as lowercase hex (two digits a byte).
pub fn hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    fill(&mut buf);
    buf.iter()
        .fold(String::with_capacity(bytes * 2), |mut out, b| {
            use std::fmt::Write;
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// 64 random bits.
pub fn u64() -> u64 {
    let mut buf = [0u8; 8];
    fill(&mut buf);
    u64::from_ne_bytes(buf)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_has_two_digits_a_byte_and_differs_each_time() {
        let (a, b) = (super::hex(12), super::hex(12));
        assert_eq!(a.len(), 24);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
