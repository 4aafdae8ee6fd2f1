//! A small hand-written lexer: shell word unquoting, and a flat "segmenter" that cuts a command line
//! into command-shaped pieces without understanding its grammar.
//!
//! Tree-sitter gives the real parse (see `parse.rs`); this module covers what it cannot:
//! - **unquoting** one word (`'rm'`, `r"m"`, `\rm` → `rm`), which tree-sitter leaves to us;
//! - the **fallback scan** for input tree-sitter rejects, is too deep for, or runs out of time on.
//!   It is iterative (an explicit frame stack, capped), so no input can overflow the stack, and it
//!   flattens `$(…)`, backticks, `<(…)` and `( … )` into separate segments so the dangerous rules
//!   still see `rm -rf /` inside them;
//! - **PowerShell** command text (`pwsh -c '…'`), which has no tree-sitter grammar here. PowerShell
//!   differs in its escape character (backtick), its quotes (`''` doubling) and its blocks (`{ }`).

/// Which quoting and operator rules a text follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// POSIX sh / bash / zsh.
    Posix,
    /// Windows PowerShell / pwsh.
    PowerShell,
}

/// The deepest `$(`/`(`/`{` nesting the segmenter tracks; deeper openers are read as plain
/// characters. Real command lines nest a handful of levels; the cap bounds memory on hostile input.
const MAX_FRAMES: usize = 256;

/// Longest nested text copied back into its parent word; bounds work on hostile nesting.
const MAX_LITERAL_BYTES: usize = 4096;

/// Removes shell quoting from one POSIX word, keeping `$VAR` and `$(…)` text literally (the guard
/// expands them in a second reading, `parse/expand.rs`, from the word as written).
pub fn unquote(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars().peekable();
    let mut in_dq = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if !in_dq => match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            },
            '\\' => match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            },
            '"' => in_dq = !in_dq,
            '\'' if !in_dq => {
                for n in chars.by_ref() {
                    if n == '\'' {
                        break;
                    }
                    out.push(n);
                }
            }
            '$' if !in_dq && chars.peek() == Some(&'\'') => {
                chars.next();
                ansi_c(&mut chars, &mut out);
            }
            // `$"…"` is a locale-translated string: the same as `"…"` for our purposes.
            '$' if !in_dq && chars.peek() == Some(&'"') => {}
            _ => out.push(c),
        }
    }
    out
}

/// Reads the body of a `$'…'` string (after the opening quote) with the common escapes.
fn ansi_c(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '\'' => return,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('x') => {
                    let mut value = 0u32;
                    let mut digits = 0;
                    while digits < 2 {
                        match chars.peek().and_then(|d| d.to_digit(16)) {
                            Some(d) => {
                                value = value * 16 + d;
                                digits += 1;
                                chars.next();
                            }
                            None => break,
                        }
                    }
                    // `$'\x00'` ends the string in bash; a NUL never reaches a command.
                    if let Some(ch) = char::from_u32(value).filter(|&ch| ch != '\0') {
                        out.push(ch);
                    }
                }
                Some(n) => out.push(n),
                None => return,
            },
            _ => out.push(c),
        }
    }
}

/// One command-shaped piece of text found by [`segment`].
#[derive(Debug, Default, Clone)]
pub struct Segment {
    /// The words, quotes removed; a nested `$(…)` stays as its literal text inside its word.
    pub words: Vec<String>,
    /// Output/input redirections as (operator, target).
    pub redirects: Vec<(String, String)>,
    /// Pipeline id (unique within one `segment` call) and stage index within it.
    pub pipeline: u32,
    /// Position in the pipeline, 0 for the first command.
    pub stage: u32,
    /// Followed by `&`.
    pub background: bool,
    /// Indices (into the returned list) of segments found inside this one's `$(…)`/`(…)`.
    pub inner: Vec<usize>,
}

/// What closes a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    Paren,
    Brace,
    Backtick,
}

/// One nesting level: the segment being built there and the segments finished inside it.
#[derive(Default)]
struct Frame {
    close: Option<Close>,
    /// Byte offset of the opener (for copying the literal text into the parent word on close).
    start: usize,
    /// Opener text (`$(`, `(`, `<(`, `{`, `` ` ``), put back into the parent's word.
    opener: &'static str,
    cur: Segment,
    word: String,
    word_started: bool,
    in_dq: bool,
    pending_redirect: Option<String>,
    finished: Vec<usize>,
    pipeline: u32,
    stage: u32,
}

/// The text's characters with their byte offsets, as the segmenter reads them.
type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

struct Segmenter<'a> {
    text: &'a str,
    dialect: Dialect,
    frames: Vec<Frame>,
    out: Vec<Segment>,
    next_pipeline: u32,
}

/// Cuts `text` into command-shaped segments. Never fails; unbalanced input is closed at the end.
pub fn segment(text: &str, dialect: Dialect) -> Vec<Segment> {
    let mut s = Segmenter {
        text,
        dialect,
        frames: vec![Frame::default()],
        out: Vec::new(),
        next_pipeline: 1,
    };
    s.run();
    s.out
}

impl Segmenter<'_> {
    fn top(&mut self) -> &mut Frame {
        let last = self.frames.len().saturating_sub(1);
        &mut self.frames[last]
    }

    fn push_char(&mut self, c: char) {
        let f = self.top();
        f.word.push(c);
        f.word_started = true;
    }

    fn end_word(&mut self) {
        let f = self.top();
        if !f.word_started {
            return;
        }
        let w = std::mem::take(&mut f.word);
        f.word_started = false;
        if let Some(op) = f.pending_redirect.take() {
            f.cur.redirects.push((op, w));
        } else {
            f.cur.words.push(w);
        }
    }

    /// Finishes the current segment. `pipe` keeps the pipeline going (after `|`).
    fn end_segment(&mut self, pipe: bool, background: bool) {
        self.end_word();
        if self.top().pipeline == 0 {
            // Ids are taken eagerly so a nested frame never reuses an open pipeline's id.
            let id = self.next_pipeline;
            self.next_pipeline += 1;
            self.top().pipeline = id;
        }
        let f = self.top();
        f.pending_redirect = None;
        let mut seg = std::mem::take(&mut f.cur);
        seg.pipeline = f.pipeline;
        seg.stage = f.stage;
        seg.background = background;
        if pipe {
            f.stage += 1;
        } else {
            f.pipeline = 0;
            f.stage = 0;
        }
        if seg.words.is_empty() && seg.redirects.is_empty() {
            // Keep the inner segments of an empty segment reachable from the frame.
            f.cur.inner = seg.inner;
            return;
        }
        let idx = self.out.len();
        self.out.push(seg);
        self.top().finished.push(idx);
    }

    fn open(&mut self, close: Close, start: usize, opener: &'static str) {
        if self.frames.len() >= MAX_FRAMES {
            // Too deep to track: still cut here, so the command inside stands on its own.
            self.end_segment(false, false);
            return;
        }
        self.frames.push(Frame {
            close: Some(close),
            start,
            opener,
            ..Frame::default()
        });
    }

    /// Closes the top frame at byte `end` (the offset of the closing character).
    fn close(&mut self, end: usize) {
        self.end_segment(false, false);
        let Some(frame) = self.frames.pop() else {
            return;
        };
        let mut literal = self.text.get(frame.start..end).unwrap_or_default();
        if literal.len() > MAX_LITERAL_BYTES {
            // Deep nesting would copy the same text once per level; the head is enough to read.
            let mut cut = MAX_LITERAL_BYTES;
            while !literal.is_char_boundary(cut) {
                cut -= 1;
            }
            literal = literal.get(..cut).unwrap_or_default();
        }
        let closer = match frame.close {
            Some(Close::Paren) => ")",
            Some(Close::Brace) => "}",
            Some(Close::Backtick) => "`",
            None => "",
        };
        let f = self.top();
        f.cur.inner.extend(frame.finished);
        f.word.push_str(frame.opener);
        f.word.push_str(literal);
        f.word.push_str(closer);
        f.word_started = true;
    }

    fn run(&mut self) {
        let text = self.text;
        let mut iter = text.char_indices().peekable();
        while let Some((i, c)) = iter.next() {
            let next = iter.peek().map(|&(_, n)| n);
            if self.top().in_dq {
                self.in_double_quotes(c, i, next, &mut iter);
            } else {
                self.unquoted(c, i, next, &mut iter);
            }
        }
        while self.frames.len() > 1 {
            self.close(text.len());
        }
        self.end_segment(false, false);
    }

    fn posix(&self) -> bool {
        self.dialect == Dialect::Posix
    }

    /// The dialect's escape character: backslash in POSIX shells, backtick in PowerShell.
    fn escape(&self) -> char {
        if self.posix() { '\\' } else { '`' }
    }

    /// One character `c` (at byte `i`, followed by `next`) inside `"…"`: only the closing quote,
    /// the escape and substitutions mean anything there.
    fn in_double_quotes(&mut self, c: char, i: usize, next: Option<char>, iter: &mut Chars<'_>) {
        match c {
            '"' => self.top().in_dq = false,
            c if c == self.escape() => {
                if let Some((_, n)) = iter.next() {
                    self.push_char(n);
                }
            }
            '$' if next == Some('(') => {
                iter.next();
                self.open(Close::Paren, i + 2, "$(");
            }
            '`' if self.posix() => self.open(Close::Backtick, i + 1, "`"),
            _ => self.push_char(c),
        }
    }

    /// One character `c` (at byte `i`, followed by `next`) outside quotes: words, operators,
    /// comments, and the openers and closers of nested frames.
    fn unquoted(&mut self, c: char, i: usize, next: Option<char>, iter: &mut Chars<'_>) {
        let posix = self.posix();
        let close = self.top().close;
        match c {
            c if c == self.escape() => {
                match iter.next() {
                    // A line continuation joins words rather than ending a command.
                    Some((_, '\n')) | None => {}
                    Some((_, n)) => self.push_char(n),
                }
            }
            '\'' => self.single_quoted(iter),
            '"' => {
                let f = self.top();
                f.in_dq = true;
                f.word_started = true;
            }
            '#' if !self.top().word_started => skip_line_comment(iter),
            '<' if !posix && next == Some('#') => skip_block_comment(iter),
            ' ' | '\t' | '\r' => self.end_word(),
            '\n' | ';' => self.end_segment(false, false),
            '|' => self.bar(next, iter),
            '&' => self.ampersand(next, iter),
            '$' if next == Some('(') => {
                iter.next();
                self.open(Close::Paren, i + 2, "$(");
            }
            '@' if !posix && next == Some('(') => {
                iter.next();
                self.open(Close::Paren, i + 2, "@(");
            }
            '<' | '>' if posix && next == Some('(') => {
                iter.next();
                let opener = if c == '<' { "<(" } else { ">(" };
                self.open(Close::Paren, i + 2, opener);
            }
            '(' => self.open(Close::Paren, i + 1, "("),
            ')' if close == Some(Close::Paren) => self.close(i),
            ')' => self.end_segment(false, false),
            '`' if posix && close == Some(Close::Backtick) => self.close(i),
            '`' if posix => self.open(Close::Backtick, i + 1, "`"),
            '{' if !posix => self.open(Close::Brace, i + 1, "{"),
            '}' if !posix && close == Some(Close::Brace) => self.close(i),
            '{' | '}' if posix && !self.top().word_started && is_word_end(next) => {
                self.end_segment(false, false);
            }
            '>' | '<' if posix => self.redirect(c, iter),
            _ => self.push_char(c),
        }
    }

    /// The body of `'…'` (the opening quote read), or of `$'…'` in POSIX shells (its `$`
    /// taken back off the word, backslash escapes kept literal); PowerShell doubles a quote
    /// to escape it.
    fn single_quoted(&mut self, iter: &mut Chars<'_>) {
        let posix = self.posix();
        self.top().word_started = true;
        let dollar = posix && self.top().word.ends_with('$');
        if dollar {
            self.top().word.pop();
        }
        while let Some((_, n)) = iter.next() {
            if n == '\'' {
                // PowerShell doubles a quote to escape it.
                if !posix && iter.peek().map(|&(_, m)| m) == Some('\'') {
                    iter.next();
                    self.push_char('\'');
                    continue;
                }
                break;
            }
            if dollar && n == '\\' {
                if let Some((_, m)) = iter.next() {
                    self.push_char(m);
                }
                continue;
            }
            self.push_char(n);
        }
    }

    /// `|` (followed by `next`): `||` ends the segment; `|` and `|&` continue the pipeline.
    fn bar(&mut self, next: Option<char>, iter: &mut Chars<'_>) {
        if next == Some('|') {
            iter.next();
            self.end_segment(false, false);
        } else {
            if next == Some('&') {
                iter.next();
            }
            self.end_segment(true, false);
        }
    }

    /// `&` (followed by `next`): `&&` ends the segment, `&>` (POSIX) redirects, a lone `&`
    /// runs the segment in the background, or, at a segment's start in PowerShell, calls.
    fn ampersand(&mut self, next: Option<char>, iter: &mut Chars<'_>) {
        let posix = self.posix();
        if next == Some('&') {
            iter.next();
            self.end_segment(false, false);
        } else if next == Some('>') && posix {
            iter.next();
            self.end_word();
            self.top().pending_redirect = Some("&>".to_string());
        } else if !posix && self.at_segment_start() {
            // PowerShell's call operator: `& 'tool' args`.
        } else {
            self.end_segment(false, true);
        }
    }

    /// A POSIX redirection operator starting with `c` (`>`, `<`): a descriptor number just
    /// before it is dropped, and the operator (up to three characters) waits for its target.
    fn redirect(&mut self, c: char, iter: &mut Chars<'_>) {
        let f = self.top();
        if f.word_started && f.word.chars().all(|d| d.is_ascii_digit()) {
            f.word.clear();
            f.word_started = false;
        } else {
            self.end_word();
        }
        let mut op = String::from(c);
        while let Some(&(_, n)) = iter.peek() {
            if matches!(n, '>' | '<' | '|' | '&') && op.len() < 3 {
                op.push(n);
                iter.next();
            } else {
                break;
            }
        }
        self.top().pending_redirect = Some(op);
    }

    fn at_segment_start(&mut self) -> bool {
        let f = self.top();
        f.cur.words.is_empty() && !f.word_started
    }
}

/// Skips a `#` comment up to (not including) the end of its line.
fn skip_line_comment(iter: &mut Chars<'_>) {
    while let Some(&(_, n)) = iter.peek() {
        if n == '\n' {
            break;
        }
        iter.next();
    }
}

/// Skips a PowerShell block comment `<# … #>` (its `<` read), up to and including its end.
fn skip_block_comment(iter: &mut Chars<'_>) {
    let mut prev = ' ';
    for (_, n) in iter.by_ref() {
        if prev == '#' && n == '>' {
            break;
        }
        prev = n;
    }
}

fn is_word_end(next: Option<char>) -> bool {
    matches!(next, None | Some(' ' | '\t' | '\n' | ';' | '&' | '|'))
}

#[cfg(test)]
#[path = "lex_tests.rs"]
mod tests;
