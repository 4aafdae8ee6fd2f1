use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt as _, ReadBuf};

use super::*;

/// A reader that gives its bytes in the pieces it was made with (a piece larger than the
/// reader's buffer over several reads), as a pipe may.
struct Pieces(VecDeque<Vec<u8>>);

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(mut piece) = self.0.pop_front() {
            let n = piece.len().min(out.remaining());
            out.put_slice(&piece[..n]);
            if n < piece.len() {
                self.0.push_front(piece.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// What the filter passes on of `input` given in pieces cut at `cuts`, and what it refused.
async fn filtered(input: &[u8], cuts: &[usize]) -> (Vec<u8>, usize) {
    let mut pieces = VecDeque::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
        pieces.push_back(input[from..cut].to_vec());
        from = cut;
    }
    let refused = Refused::default();
    let mut filter = LineFilter::new(Pieces(pieces), refused.clone());
    let mut out = Vec::new();
    filter.read_to_end(&mut out).await.unwrap();
    let count = refused.lock().len();
    (out, count)
}

/// Lines longer than one read, lines cut anywhere, and reads that end inside a line pass on
/// whole and in order, each exactly once; a line that is not JSON becomes one mark; the last
/// line without its newline passes at the end of input.
#[tokio::test]
async fn lines_pass_whole_however_the_reads_cut_them() {
    let long = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"s\":\"{}\"}}}}",
        "a".repeat(3 * READ_CHUNK_BYTES + 17)
    );
    let input = format!("{long}\nnot json\n{{\"a\":1}}\n\n{long}\n{{\"b\":2}}");
    let mut expected = format!("{long}\n").into_bytes();
    expected.extend_from_slice(REFUSED_MARK);
    expected.extend_from_slice(format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}").as_bytes());
    let at_line = long.len() + 1;
    for cuts in [
        vec![],
        vec![1, 2, 3],
        vec![
            READ_CHUNK_BYTES - 1,
            READ_CHUNK_BYTES,
            at_line - 1,
            at_line + 4,
        ],
        vec![at_line, at_line + 9, at_line + 12, input.len() - 3],
        (1..input.len()).step_by(4093).collect(),
    ] {
        let (out, refused) = filtered(input.as_bytes(), &cuts).await;
        assert_eq!(refused, 1, "cuts {cuts:?}");
        assert!(
            out == expected,
            "cuts {cuts:?}: {} bytes, {} expected",
            out.len(),
            expected.len()
        );
    }
}
