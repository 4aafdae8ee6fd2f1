//! Random bits from the kernel, for what must not be guessed: job handles of callers without a
//! session, run markers, the HTTP token.

/// Fills `buf` from the kernel's random source.
///
/// Small requests (a run marker's 8 bytes on every call, a handle's 16) are served from a pool
/// the kernel fills [`POOL_BYTES`] at a time, so a call costs no `getrandom` system call of its
/// own: each byte is still the kernel's, handed out once and wiped from the pool as it goes.
/// Larger requests go to the kernel directly.
///
/// A kernel that gives no random bytes leaves nothing safe to hand out, so the process ends
/// (as std's own hash maps do): a guessable handle or token would be worse than no server.
pub fn fill(buf: &mut [u8]) {
    if buf.len() > POOL_BYTES / 8 {
        return from_kernel(buf);
    }
    let mut pool = POOL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if POOL_BYTES - pool.used < buf.len() {
        let Pool { bytes, used } = &mut *pool;
        from_kernel(bytes);
        *used = 0;
    }
    let Pool { bytes, used } = &mut *pool;
    let taken = &mut bytes[*used..*used + buf.len()];
    buf.copy_from_slice(taken);
    taken.fill(0);
    *used += buf.len();
}

/// How many of the kernel's random bytes the pool takes at a time.
const POOL_BYTES: usize = 512;

/// Random bytes not handed out yet: those from `used` on.
struct Pool {
    bytes: [u8; POOL_BYTES],
    used: usize,
}

/// Empty at first (all used): the first request fills it.
static POOL: std::sync::Mutex<Pool> = std::sync::Mutex::new(Pool {
    bytes: [0; POOL_BYTES],
    used: POOL_BYTES,
});

fn from_kernel(buf: &mut [u8]) {
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

    #[test]
    fn pooled_requests_never_repeat_across_refills() {
        // More requests than one pool holds: the refill must not hand out what it did before.
        let tags: std::collections::HashSet<u64> = (0..1000).map(|_| super::u64()).collect();
        assert_eq!(tags.len(), 1000);
        let mut big = [0u8; 128];
        super::fill(&mut big);
        assert!(big.iter().any(|&b| b != 0));
    }
}
