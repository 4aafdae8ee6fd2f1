//! The walk over the tree-sitter tree: statements, pipelines, lists, substitutions, keyword
//! commands (`if`, `for`, functions) and redirections, down to the simple commands it emits.
//! It walks in the order the shell runs the line, and keeps the builder's [`State`] scoped as
//! the shell does: what runs in a subshell, a pipeline stage, `&`, `$(…)` or a function body
//! is isolated; what may not run (`a && b`, a branch, a loop body) is merged with what it may
//! skip.

use tree_sitter::Node;

use crate::command::Redirect;
use crate::lex;
use crate::treesitter::{children_of, node_text};

use super::*;

impl Builder {
    pub(super) fn walk(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        if depth > MAX_TREE_DEPTH {
            self.exact = false;
            self.scan(node_text(node, src), ctx, true);
            return;
        }
        match node.kind() {
            "comment" | "heredoc_start" | "heredoc_end" => {}
            "command" => self.command(node, src, ctx, depth),
            "declaration_command" | "unset_command" | "test_command" => {
                self.keyword_command(node, src, ctx, depth);
            }
            "variable_assignment" => self.bare_assignment(node, src, ctx, depth),
            "variable_assignments" => {
                for (child, _) in children_of(node) {
                    if child.kind() == "variable_assignment" {
                        self.bare_assignment(child, src, ctx, depth);
                    }
                }
            }
            "subshell" => self.isolated(|b| b.children(node, src, ctx, depth)),
            "list" => self.list(node, src, ctx, depth),
            "if_statement" => self.if_statement(node, src, ctx, depth),
            "case_statement" => self.case_statement(node, src, ctx, depth),
            "for_statement" => self.for_statement(node, src, ctx, depth),
            "while_statement" | "c_style_for_statement" => {
                self.maybe(|b| b.children(node, src, ctx, depth));
            }
            "function_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| lex::unquote(node_text(n, src)))
                    .unwrap_or_default();
                let id = self.functions.len();
                self.functions.push(name);
                let c = Ctx {
                    function: Some(id),
                    ..ctx.clone()
                };
                // The body runs when called, in the caller's shell; followed here as it
                // stands at the definition, and kept from leaking into what follows.
                self.isolated(|b| b.children(node, src, &c, depth));
            }
            "pipeline" => {
                let id = self.next_pipeline;
                self.next_pipeline += 1;
                let mut stage = 0;
                for (child, _) in children_of(node) {
                    if !child.is_named() {
                        continue;
                    }
                    let c = Ctx {
                        pipeline: Some((id, stage)),
                        ..ctx.clone()
                    };
                    // Each stage runs in a subshell of its own.
                    self.isolated(|b| b.walk(child, src, &c, depth + 1));
                    stage += 1;
                }
            }
            "redirected_statement" => self.redirected(node, src, ctx, depth),
            "command_substitution" | "process_substitution" => {
                self.isolated(|b| b.children(node, src, &ctx.nested(), depth));
            }
            _ => {
                if node.is_error() || node.is_missing() {
                    self.exact = false;
                }
                self.children(node, src, ctx, depth);
            }
        }
    }

    /// Walks named children, marking those followed by `&` as backgrounded.
    pub(super) fn children(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let kids = children_of(node);
        for (i, (child, _)) in kids.iter().enumerate() {
            if !child.is_named() {
                continue;
            }
            let background = kids.get(i + 1).is_some_and(|(n, _)| n.kind() == "&");
            if background {
                let c = Ctx {
                    background: true,
                    ..ctx.clone()
                };
                self.isolated(|b| b.walk(*child, src, &c, depth + 1));
            } else {
                self.walk(*child, src, ctx, depth + 1);
            }
        }
    }

    /// Walks a word-ish node for the commands inside its substitutions; returns their index range.
    pub(super) fn substitutions(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        if node.child_count() > 0 {
            self.walk(node, src, &ctx.nested(), depth + 1);
        }
    }

    pub(super) fn command(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let start = self.emitted();
        let mut argv = Vec::new();
        let mut raw = Vec::new();
        let mut assigns = Vec::new();
        let mut redirects = ctx.redirects.clone();
        for (child, field) in children_of(node) {
            match field {
                Some("name" | "argument") => {
                    let word = node_text(child, src);
                    argv.push(lex::unquote(word));
                    raw.push(word.to_owned());
                    self.substitutions(child, src, ctx, depth);
                }
                Some("redirect") => redirects.push(self.redirect(child, src, ctx, depth)),
                _ if child.kind() == "variable_assignment" => {
                    if let Some(value) = child.child_by_field_name("value") {
                        self.substitutions(value, src, ctx, depth);
                    }
                    assigns.extend(assignment(child, src));
                }
                _ if child.is_named() => self.substitutions(child, src, ctx, depth),
                _ => {}
            }
        }
        let inner = (start..self.emitted()).collect();
        let written = Written {
            raw: Some(raw),
            assigns,
            redirects,
            inner,
            ..Written::plain(argv, statement_text(node, src))
        };
        self.emit(written, ctx);
    }

    /// `X=value` standing alone: the shell's variable, for what follows in this shell.
    fn bare_assignment(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        if let Some(value) = node.child_by_field_name("value") {
            self.substitutions(value, src, ctx, depth);
        }
        if let Some(a) = assignment(node, src) {
            let values = self.values_of(&a);
            self.state.assign(&a.name, values, None);
        }
    }

    /// `a && b || c`: each part runs after the one before it (in the state it left), and the
    /// chain may stop after any of them: what follows the list sees any of those states.
    fn list(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let mut parts = Vec::new();
        if let Some(deep) = flatten_list(node, MAX_TREE_DEPTH.saturating_sub(depth), &mut parts) {
            // Past the depth the walker follows: the head of the chain gets the token scan.
            self.exact = false;
            self.scan(node_text(deep, src), ctx, true);
        }
        let mut stops = Vec::new();
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                stops.push(self.state.clone());
            }
            self.walk(part, src, ctx, depth + 1);
        }
        for stop in stops {
            self.state.merge(stop);
        }
    }

    /// `if c; then a; elif d; then b; else e; fi`: after the condition, one branch runs (or
    /// none, without `else`).
    fn if_statement(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let mut start: Option<super::State> = None;
        let mut ends = Vec::new();
        let mut has_else = false;
        for (child, _) in children_of(node) {
            match child.kind() {
                "then" => start = Some(self.state.clone()),
                "elif_clause" | "else_clause" => {
                    has_else |= child.kind() == "else_clause";
                    if let Some(start) = &start {
                        ends.push(std::mem::replace(&mut self.state, start.clone()));
                    }
                    self.walk(child, src, ctx, depth + 1);
                }
                _ if child.is_named() => self.walk(child, src, ctx, depth + 1),
                _ => {}
            }
        }
        if let Some(start) = start
            && !has_else
        {
            ends.push(start);
        }
        for end in ends {
            self.state.merge(end);
        }
    }

    /// `case w in a) …;; b) …;; esac`: one arm runs, or none.
    fn case_statement(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let mut start: Option<super::State> = None;
        let mut ends = Vec::new();
        for (child, _) in children_of(node) {
            if child.kind() == "case_item" {
                let start = start.get_or_insert_with(|| self.state.clone()).clone();
                let end = std::mem::replace(&mut self.state, start);
                ends.push(end);
                self.walk(child, src, ctx, depth + 1);
            } else if child.is_named() {
                self.walk(child, src, ctx, depth + 1);
            }
        }
        for end in ends {
            self.state.merge(end);
        }
    }

    /// `for x in a b; do …; done`: the variable takes each word's values; the body runs any
    /// number of times.
    fn for_statement(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let before = self.state.clone();
        let mut variable = None;
        let mut words = Vec::new();
        let mut listed = false;
        for (child, field) in children_of(node) {
            match field {
                Some("variable") => variable = Some(node_text(child, src).to_owned()),
                Some("value") => {
                    listed = true;
                    words.push(node_text(child, src).to_owned());
                    self.walk(child, src, ctx, depth + 1);
                }
                Some("body") => {
                    if let Some(name) = variable.take() {
                        let values = self.loop_values(listed, &words);
                        self.state.assign(&name, values, None);
                    }
                    self.walk(child, src, ctx, depth + 1);
                }
                _ if child.is_named() => self.walk(child, src, ctx, depth + 1),
                _ => {}
            }
        }
        self.state.merge(before);
    }

    /// The values a `for` variable takes: each field of its words (`for x;` takes the
    /// positional parameters, not known).
    fn loop_values(&self, listed: bool, words: &[String]) -> Vec<super::Val> {
        if !listed {
            return vec![super::Val::Unknown];
        }
        let expander = self.expander();
        let mut values = Vec::new();
        for word in words {
            match expander.word(word) {
                Some(alternatives) => {
                    for field in alternatives.into_iter().flatten() {
                        values.push(super::Val::Text(field));
                    }
                }
                None => values.push(super::Val::Unknown),
            }
        }
        values
    }

    /// `export`/`local`/`declare`/`unset`/`[ … ]`/`[[ … ]]`: emitted as a command named by its
    /// keyword so the classifier sees it, with substitutions inside walked.
    pub(super) fn keyword_command(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let start = self.emitted();
        let text = node_text(node, src);
        let keyword = text
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_string();
        let mut argv = vec![keyword.clone()];
        for (child, _) in children_of(node) {
            if child.is_named() {
                if node.kind() != "test_command" {
                    argv.push(lex::unquote(node_text(child, src)));
                }
                match child.child_by_field_name("value") {
                    // Not walked whole: it would read as an assignment standing alone.
                    Some(value) if child.kind() == "variable_assignment" => {
                        self.substitutions(value, src, ctx, depth);
                    }
                    _ if child.kind() == "variable_assignment" => {}
                    _ => self.substitutions(child, src, ctx, depth),
                }
            }
        }
        let inner = (start..self.emitted()).collect();
        let written = Written {
            redirects: ctx.redirects.clone(),
            inner,
            ..Written::plain(argv, statement_text(node, src))
        };
        self.emit(written, ctx);
        if node.kind() == "declaration_command" {
            self.declare(node, src, &keyword);
        }
    }

    pub(super) fn redirected(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let mut redirects = ctx.redirects.clone();
        let mut body = None;
        for (child, field) in children_of(node) {
            if field == Some("body") {
                body = Some(child);
            } else if matches!(
                child.kind(),
                "file_redirect" | "heredoc_redirect" | "herestring_redirect"
            ) {
                redirects.push(self.redirect(child, src, ctx, depth));
            } else if child.is_named() {
                self.walk(child, src, ctx, depth + 1);
            }
        }
        let start = self.emitted();
        if let Some(body) = body {
            let c = Ctx {
                redirects: redirects.clone(),
                ..ctx.clone()
            };
            self.walk(body, src, &c, depth + 1);
        }
        if self.emitted() == start {
            // `> file` alone still truncates the file: keep it visible to the rules.
            let written = Written {
                redirects,
                ..Written::plain(Vec::new(), node_text(node, src))
            };
            self.emit(written, ctx);
        }
    }

    pub(super) fn redirect(
        &mut self,
        node: Node<'_>,
        src: &str,
        ctx: &Ctx,
        depth: usize,
    ) -> Redirect {
        let mut op = String::new();
        let mut target = String::new();
        let mut raw = None;
        let mut fd = None;
        for (child, field) in children_of(node) {
            match (child.kind(), field) {
                (_, Some("descriptor")) => fd = node_text(child, src).parse().ok(),
                ("heredoc_body", _) => {
                    target = node_text(child, src).to_string();
                    self.substitutions(child, src, ctx, depth);
                }
                ("heredoc_start" | "heredoc_end", _) => {}
                (_, Some("destination")) => {
                    if target.is_empty() {
                        target = lex::unquote(node_text(child, src));
                        raw = Some(node_text(child, src).to_owned());
                    }
                    self.substitutions(child, src, ctx, depth);
                }
                (kind, _) if !child.is_named() => {
                    if op.len() < 4 && kind.starts_with(['<', '>', '&']) {
                        op.push_str(kind);
                    }
                }
                _ if node.kind() == "herestring_redirect" => {
                    target = lex::unquote(node_text(child, src));
                    self.substitutions(child, src, ctx, depth);
                }
                // `cat <<EOF | sh`: the rest of the pipeline hangs off the heredoc node.
                _ => self.walk(child, src, ctx, depth + 1),
            }
        }
        if node.kind() == "heredoc_redirect" && !op.starts_with("<<") {
            op = "<<".to_string();
        }
        Redirect {
            op,
            target,
            fd,
            raw,
        }
    }
}

/// The `NAME=value` of an assignment node, or `None` for one that sets no plain variable
/// (`a[0]=x`). An array's value is not followed.
pub(super) fn assignment(node: Node<'_>, src: &str) -> Option<Assign> {
    let name = node_text(node.child_by_field_name("name")?, src);
    if !unwrap::is_assignment(&format!("{name}=")) {
        return None;
    }
    let append = children_of(node).iter().any(|(c, _)| c.kind() == "+=");
    // `X+=y` is `X=${X}y`.
    let before = if append {
        format!("${{{name}}}")
    } else {
        String::new()
    };
    let value = match node.child_by_field_name("value") {
        None => Some(before),
        Some(v) if v.kind() == "array" => None,
        Some(v) => Some(format!("{before}{}", node_text(v, src))),
    };
    Some(Assign {
        name: name.to_owned(),
        value,
    })
}

/// The commands of a chain of `&&`/`||` in order. The grammar nests `a && b || c` to the
/// left, as deep as the chain is long: followed down iteratively, at most `levels` deep; the
/// rest of the chain, past that, is returned.
fn flatten_list<'t>(node: Node<'t>, levels: usize, out: &mut Vec<Node<'t>>) -> Option<Node<'t>> {
    let mut rights = Vec::new();
    let mut cur = node;
    let mut deep = None;
    for _ in 0..=levels {
        let named: Vec<Node<'t>> = children_of(cur)
            .into_iter()
            .map(|(c, _)| c)
            .filter(Node::is_named)
            .collect();
        let Some((left, rest)) = named.split_first() else {
            break;
        };
        rights.push(rest.to_vec());
        if left.kind() == "list" {
            cur = *left;
            deep = Some(cur);
        } else {
            out.push(*left);
            deep = None;
            break;
        }
    }
    for rest in rights.into_iter().rev() {
        out.extend(rest);
    }
    deep
}
