//! The walk over the tree-sitter tree: statements, pipelines, lists, substitutions, keyword
//! commands (`if`, `for`, functions) and redirections, down to the simple commands it emits.

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
                self.children(node, src, &c, depth);
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
                    self.walk(child, src, &c, depth + 1);
                    stage += 1;
                }
            }
            "redirected_statement" => self.redirected(node, src, ctx, depth),
            "command_substitution" | "process_substitution" => {
                self.children(node, src, &ctx.nested(), depth);
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
                self.walk(*child, src, &c, depth + 1);
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
        let start = self.commands.len();
        let mut argv = Vec::new();
        let mut redirects = ctx.redirects.clone();
        for (child, field) in children_of(node) {
            match field {
                Some("name" | "argument") => {
                    argv.push(lex::unquote(node_text(child, src)));
                    self.substitutions(child, src, ctx, depth);
                }
                Some("redirect") => redirects.push(self.redirect(child, src, ctx, depth)),
                _ if child.is_named() => self.substitutions(child, src, ctx, depth),
                _ => {}
            }
        }
        let inner = (start..self.commands.len()).collect();
        let text = statement_text(node, src);
        self.emit(argv, text, redirects, inner, ctx, false);
    }

    /// `export`/`local`/`declare`/`unset`/`[ … ]`/`[[ … ]]`: emitted as a command named by its
    /// keyword so the classifier sees it, with substitutions inside walked.
    pub(super) fn keyword_command(&mut self, node: Node<'_>, src: &str, ctx: &Ctx, depth: usize) {
        let start = self.commands.len();
        let text = node_text(node, src);
        let keyword = text
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_string();
        let mut argv = vec![keyword];
        for (child, _) in children_of(node) {
            if child.is_named() {
                if node.kind() != "test_command" {
                    argv.push(lex::unquote(node_text(child, src)));
                }
                self.substitutions(child, src, ctx, depth);
            }
        }
        let inner = (start..self.commands.len()).collect();
        self.emit(
            argv,
            statement_text(node, src),
            ctx.redirects.clone(),
            inner,
            ctx,
            false,
        );
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
        let start = self.commands.len();
        if let Some(body) = body {
            let c = Ctx {
                redirects: redirects.clone(),
                ..ctx.clone()
            };
            self.walk(body, src, &c, depth + 1);
        }
        if self.commands.len() == start {
            // `> file` alone still truncates the file: keep it visible to the rules.
            self.emit(
                Vec::new(),
                node_text(node, src),
                redirects,
                Vec::new(),
                ctx,
                false,
            );
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
        Redirect { op, target, fd }
    }
}
