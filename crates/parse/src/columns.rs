//! A cursor over one line of a table whose columns are separated by runs of spaces (`ls -l`,
//! `df`): padding varies with the widest value, so columns are read as tokens, left to right,
//! and the last column (a name, a mount point) is the rest of the line, spaces and all. Its own
//! module so that every parser of such tables reads lines the same way, and none imports
//! another parser for it.

/// Walks a line by space-separated tokens, remembering where it is (the name is the rest).
pub(crate) struct Cursor<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(line: &'a str) -> Self {
        Cursor { line, pos: 0 }
    }

    /// The next token and the byte offset it starts at.
    pub(crate) fn token_at(&mut self) -> Option<(usize, &'a str)> {
        // By bytes: a space is ASCII, so both ends fall on character boundaries. Tokens are
        // short, where a plain loop beats a vectorised search's set-up.
        let bytes = self.line.as_bytes();
        let start = self.pos
            + bytes
                .get(self.pos..)?
                .iter()
                .take_while(|b| **b == b' ')
                .count();
        let len = bytes
            .get(start..)?
            .iter()
            .take_while(|b| **b != b' ')
            .count();
        let token = self
            .line
            .get(start..start + len)
            .filter(|t| !t.is_empty())?;
        self.pos = start + len;
        Some((start, token))
    }

    pub(crate) fn token(&mut self) -> Option<&'a str> {
        self.token_at().map(|(_, t)| t)
    }

    pub(crate) fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    /// The text from `start` to where the cursor is.
    pub(crate) fn since(&self, start: usize) -> &'a str {
        self.line.get(start..self.pos).unwrap_or("")
    }

    /// Steps over one space, if there is one.
    pub(crate) fn skip_space(&mut self) -> bool {
        let yes = self.rest().starts_with(' ');
        self.pos += usize::from(yes);
        yes
    }
}
