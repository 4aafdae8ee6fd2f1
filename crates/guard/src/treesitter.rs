//! The tree-sitter side: one parser per thread, the ASCII view it parses, the time budget, and two
//! small node helpers. Kept apart from the walker so the C library's quirks are handled in one place.

use std::borrow::Cow;
use std::cell::RefCell;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// Wall-clock budget for one tree-sitter parse; on expiry the parse is cancelled and the token scan
/// is used. Normal lines take microseconds; this only bounds pathological input.
const PARSE_BUDGET_MS: u64 = 250;

thread_local! {
    /// One parser per thread: creating one costs more than parsing a typical line.
    static PARSER: RefCell<Option<Parser>> = RefCell::new(new_parser());
}

fn new_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    Some(parser)
}

/// The text tree-sitter sees: every non-ASCII character becomes the same number of `x` bytes and
/// NUL becomes a newline. Byte offsets stay identical, so the walker reads words from the original.
///
/// Why: tree-sitter-bash 0.25.1's external scanner calls C `isdigit()` on the lookahead code point
/// (scanner.c, `brace_start`), which is undefined for values above 255 and segfaults on input such
/// as `k{` followed by U+E018C (found by the fuzz test). Bash treats non-ASCII bytes as ordinary
/// word characters anyway, so a letter in their place parses the same way.
fn ascii_view(text: &str) -> Cow<'_, str> {
    if text.is_ascii() && !text.contains('\0') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\0' => out.push('\n'),
            c if c.is_ascii() => out.push(c),
            c => out.extend(std::iter::repeat_n('x', c.len_utf8())),
        }
    }
    Cow::Owned(out)
}

/// Parses with the thread's parser under the time budget. `None` means "use the token scan".
pub fn parse_tree(text: &str) -> Option<Tree> {
    let view = ascii_view(text);
    let text: &str = &view;
    PARSER.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let parser = slot.as_mut()?;
        let started = Instant::now();
        let budget = Duration::from_millis(PARSE_BUDGET_MS);
        let mut over_budget = |_: &ParseState| started.elapsed() > budget;
        let options = ParseOptions::new().progress_callback(&mut over_budget);
        let bytes = text.as_bytes();
        let mut read = |offset: usize, _| bytes.get(offset..).unwrap_or_default();
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        if tree.is_none() {
            // A cancelled parse would otherwise resume on the next call.
            parser.reset();
        }
        tree
    })
}

pub fn node_text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// A node's children with their field names, read with one cursor (`Node::child(i)` is linear).
pub fn children_of<'t>(node: Node<'t>) -> Vec<(Node<'t>, Option<&'static str>)> {
    let mut out = Vec::with_capacity(node.child_count());
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.node(), cursor.field_name()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}
