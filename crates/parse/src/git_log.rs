//! `GitLog`: the commits `git log` lists, in its default ("medium") format or `--oneline`,
//! optionally with `--name-only` / `--name-status` file lists.
//!
//! The default format is a block per commit: `commit HASH [(refs)]`, headers (`Merge:`,
//! `Author:`, `Date:`), a blank line, the message indented by four spaces, and after another
//! blank line the files when asked for. The indentation is what makes it readable exactly:
//! a message line can never be taken for a header or a file. Formats chosen by flags that
//! are not read here (`--graph`, `--stat`, `-p`, `--format=…`, `--parents`) are refused at
//! recognition; formats chosen by config the parser cannot see (`format.pretty`, `log.date`
//! set to `relative`) fail the shape check and are refused at parse time.
//!
//! `--oneline` has one ambiguity the text cannot settle: a subject that starts with
//! `(something)` on a commit without refs looks like decorations. Decorations are read when
//! they can appear (unless `--no-decorate`) and every item is a valid ref name.

mod date;
mod recognize;

pub(crate) use recognize::recognize;

use schemars::JsonSchema;
use serde::Serialize;

use crate::git_status::Change;
use crate::git_status::shared::{bad_line, check_exit, hex, path_token, tab_pair};
use crate::time::Timestamp;
use crate::{Context, Output, Parser, Typed};

/// Commits, newest first unless `--reverse`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GitLog {
    /// A later pipeline stage (grep, head, tail, …) may have dropped lines: commits may be
    /// missing, and the last one's message or file list may be cut short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub filtered: bool,
    /// One record per commit, in the order listed.
    pub commits: Vec<Commit>,
}

/// One commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Commit {
    /// The hash as printed: full, or abbreviated with `--oneline` / `--abbrev-commit`.
    pub hash: String,
    /// A merge's parents, abbreviated as the `Merge:` line prints them. Empty for other
    /// commits: `git log` does not print their parent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
    /// Refs pointing at the commit, as decorations print them (`HEAD -> main`, `tag: v1.0`,
    /// `origin/main`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
    /// The author's name (absent with `--oneline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The author's email (absent with `--oneline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_email: Option<String>,
    /// The author date (absent with `--oneline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<Timestamp>,
    /// The message's first paragraph, its lines joined by spaces (git's `%s`).
    pub subject: String,
    /// The rest of the message after the blank line (git's `%b`), trailing blank lines
    /// dropped; tabs come expanded to spaces, as the default format prints them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// The files it changed (`--name-only`, `--name-status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CommitFile>,
}

/// A file a commit changed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct CommitFile {
    /// The path, unquoted (after a rename or copy, the new one).
    pub path: String,
    /// The path before a rename or copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orig_path: Option<String>,
    /// What happened to it (`--name-status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Change>,
    /// Similarity of a rename or copy, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Files {
    None,
    Names,
    NameStatus,
}

struct LogParser {
    oneline: bool,
    /// Decorations may appear (`--decorate`, or `log.decorate` in a config unseen).
    decorations: bool,
    files: Files,
}

impl Parser for LogParser {
    fn type_name(&self) -> &'static str {
        "GitLog"
    }

    fn parse(&self, out: &Output<'_>, ctx: &Context, filtered: bool) -> Result<Typed, String> {
        check_exit(out, "git log")?;
        let commits = if self.oneline {
            self.oneline(out.stdout)?
        } else {
            self.medium(out.stdout, ctx, filtered)?
        };
        Ok(Typed::new(GitLog { filtered, commits }))
    }
}

/// Where the default format's reader is within a commit block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Headers,
    Message,
    /// After the blank line that ends the message: files or the next commit.
    Gap,
    Files,
}

/// A commit being read, with what is needed to know it is whole.
struct Draft {
    commit: Commit,
    message: Vec<String>,
    has_author: bool,
}

impl LogParser {
    fn medium(&self, text: &str, ctx: &Context, filtered: bool) -> Result<Vec<Commit>, String> {
        let mut commits = Vec::new();
        let mut draft: Option<Draft> = None;
        let mut phase = Phase::Gap;
        for (n, line) in text.lines().enumerate() {
            let bad = || bad_line(n, line, "part of a default-format `git log` commit");
            let Some(current) = draft.as_mut() else {
                if let Some(rest) = line.strip_prefix("commit ") {
                    draft = Some(start(rest).ok_or_else(bad)?);
                    phase = Phase::Headers;
                } else if !filtered && !line.is_empty() {
                    // A filter (`tail`) may have cut the first commit's start: skip to the next.
                    return Err(bad());
                }
                continue;
            };
            match phase {
                Phase::Headers if line.is_empty() => phase = Phase::Message,
                Phase::Headers => header(line, current, ctx).map_err(|why| {
                    if why.is_empty() {
                        bad()
                    } else {
                        format!("line {}: {why}", n + 1)
                    }
                })?,
                Phase::Message if line.starts_with("    ") => {
                    current
                        .message
                        .push(line.get(4..).unwrap_or_default().to_owned());
                }
                Phase::Message if line.is_empty() => phase = Phase::Gap,
                Phase::Message if !current.message.is_empty() => return Err(bad()),
                // With an empty message, files or the next commit follow the headers' blank line.
                Phase::Message | Phase::Gap => {
                    if let Some(rest) = line.strip_prefix("commit ") {
                        let next = start(rest).ok_or_else(bad)?;
                        commits.push(finish(draft.replace(next), n)?);
                        phase = Phase::Headers;
                    } else {
                        current.commit.files.push(self.file(line).ok_or_else(bad)?);
                        phase = Phase::Files;
                    }
                }
                Phase::Files if line.is_empty() => phase = Phase::Gap,
                Phase::Files => current.commit.files.push(self.file(line).ok_or_else(bad)?),
            }
        }
        if let Some(last) = draft {
            // `head` may have cut the last commit before its headers were whole.
            if last.has_author && last.commit.date.is_some() || !filtered {
                commits.push(finish(Some(last), text.lines().count())?);
            }
        }
        Ok(commits)
    }

    fn oneline(&self, text: &str) -> Result<Vec<Commit>, String> {
        let mut commits: Vec<Commit> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            if self.files == Files::NameStatus
                && let (Some(file), Some(last)) = (self.file(line), commits.last_mut())
            {
                last.files.push(file);
                continue;
            }
            let commit = self.oneline_commit(line);
            commits.push(commit.ok_or_else(|| bad_line(n, line, "a `git log --oneline` line"))?);
        }
        Ok(commits)
    }

    /// `HASH [(refs)] subject`.
    fn oneline_commit(&self, line: &str) -> Option<Commit> {
        let (hash, rest) = line.split_once(' ').unwrap_or((line, ""));
        let mut commit = Commit {
            hash: hex(hash)?.to_owned(),
            ..Commit::default()
        };
        let mut subject = rest;
        if self.decorations && rest.starts_with('(') {
            // Ref names hold no spaces, so the first ") " closes the decorations.
            let split = match rest.find(") ") {
                Some(end) => rest.get(1..end).zip(rest.get(end + 2..)),
                None => rest
                    .strip_suffix(')')
                    .and_then(|r| r.get(1..))
                    .map(|r| (r, "")),
            };
            if let Some(refs) = split.and_then(|(inner, after)| Some((refs(inner)?, after))) {
                (commit.refs, subject) = refs;
            }
        }
        commit.subject = subject.to_owned();
        Some(commit)
    }

    /// A `--name-only` path or a `--name-status` line (`M\tpath`, `R100\told\tnew`).
    fn file(&self, line: &str) -> Option<CommitFile> {
        let mut file = CommitFile {
            path: String::new(),
            orig_path: None,
            status: None,
            similarity: None,
        };
        match self.files {
            Files::None => return None,
            Files::Names => file.path = path_token(line)?,
            Files::NameStatus => {
                let (code, paths) = line.split_once('\t')?;
                let mut chars = code.chars();
                let status = match chars.next()? {
                    'A' => Change::Added,
                    'C' => Change::Copied,
                    'D' => Change::Deleted,
                    'M' => Change::Modified,
                    'R' => Change::Renamed,
                    'T' => Change::TypeChanged,
                    'U' => Change::Unmerged,
                    _ => return None,
                };
                file.status = Some(status);
                if matches!(status, Change::Renamed | Change::Copied) {
                    let score = chars.as_str().parse::<u8>().ok().filter(|p| *p <= 100)?;
                    let (orig, path) = tab_pair(paths)?;
                    (file.path, file.orig_path, file.similarity) = (path, Some(orig), Some(score));
                } else if chars.next().is_none() {
                    file.path = path_token(paths)?;
                } else {
                    return None;
                }
            }
        }
        Some(file)
    }
}

/// The rest of `commit HASH [(refs)]`.
fn start(rest: &str) -> Option<Draft> {
    let (hash, decorations) = match rest.split_once(' ') {
        Some((hash, decorations)) => (hash, Some(decorations)),
        None => (rest, None),
    };
    let mut commit = Commit {
        hash: hex(hash)?.to_owned(),
        ..Commit::default()
    };
    if let Some(decorations) = decorations {
        commit.refs = refs(decorations.strip_prefix('(')?.strip_suffix(')')?)?;
    }
    Some(Draft {
        commit,
        message: Vec::new(),
        has_author: false,
    })
}

/// `HEAD -> main, tag: v1, origin/main`: each must be a ref name git allows.
fn refs(inner: &str) -> Option<Vec<String>> {
    inner
        .split(", ")
        .map(|item| {
            let name = item
                .strip_prefix("HEAD -> ")
                .or_else(|| item.strip_prefix("tag: "))
                .unwrap_or(item);
            let valid = !name.is_empty()
                && !name
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c));
            valid.then(|| item.to_owned())
        })
        .collect()
}

/// `Merge:`, `Author:`, `Date:`. `Err("")` for a line that is none of them; otherwise the
/// reason a known header could not be read.
fn header(line: &str, draft: &mut Draft, ctx: &Context) -> Result<(), String> {
    let commit = &mut draft.commit;
    if let Some(parents) = line.strip_prefix("Merge: ") {
        commit.parents = parents
            .split(' ')
            .map(|p| hex(p).map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(String::new)?;
    } else if let Some(person) = line.strip_prefix("Author: ") {
        // Git drops `<` and `>` from names and emails, so the first `<` opens the email.
        let (name, email) = person.split_once('<').ok_or_else(String::new)?;
        let email = email.strip_suffix('>').ok_or_else(String::new)?;
        (commit.author, commit.author_email) =
            (Some(name.trim_end().to_owned()), Some(email.to_owned()));
        draft.has_author = true;
    } else if let Some(when) = line.strip_prefix("Date:") {
        let when = when.trim_start();
        let parsed = date::parse(when, ctx).ok_or_else(|| {
            format!("the date `{when}` is in no format read here (iso, rfc, raw, default…)")
        })?;
        commit.date = Some(parsed);
    } else {
        return Err(String::new());
    }
    Ok(())
}

/// Splits the message into subject and body as git's `%s` and `%b` do.
fn finish(draft: Option<Draft>, n: usize) -> Result<Commit, String> {
    let Some(Draft {
        mut commit,
        message,
        has_author,
    }) = draft
    else {
        return Err("no commit to finish".into());
    };
    if !has_author || commit.date.is_none() {
        return Err(format!(
            "the commit ending before line {} has no Author or Date line: not the default \
             `git log` format (is `format.pretty` configured?)",
            n + 1
        ));
    }
    let mut lines = message
        .iter()
        .map(String::as_str)
        .skip_while(|l| l.trim().is_empty());
    let subject: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.trim().is_empty())
        .collect();
    commit.subject = subject.join(" ");
    let body: Vec<&str> = lines.skip_while(|l| l.trim().is_empty()).collect();
    commit.body = body.join("\n").trim_end().to_owned();
    Ok(commit)
}

#[cfg(test)]
#[path = "git_log_tests.rs"]
mod tests;
