//! The human-readable report behind `agentty guard -- COMMAND`: what the guard understood (each
//! simple command's argv after unwrapping and the wrappers peeled), which rule fired and why, and
//! the read-only classification. It exists so a user can see why a line was blocked or not, and
//! so a rule can be debugged without a running server.

use std::fmt::Write as _;

use crate::command::{Analysis, Place, SimpleCommand, quote_for_display};
use crate::readonly;
use crate::verdict::{GuardConfig, Verdict, firing_rules, verdict};

/// Report for a shell command line, with the verdict it describes.
/// `place`: where the line runs, when known (see [`crate::check_at`]).
pub fn report(command_line: &str, cfg: &GuardConfig, place: Option<Place>) -> (String, Verdict) {
    render(command_line, &Analysis::of_line(command_line, place), cfg)
}

/// Report for an argv executed directly.
pub fn report_argv(argv: &[String], cfg: &GuardConfig, place: Option<Place>) -> (String, Verdict) {
    let shown = argv
        .iter()
        .map(|a| quote_for_display(a))
        .collect::<Vec<_>>()
        .join(" ");
    render(&shown, &Analysis::of_argv(argv, place), cfg)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn render(input: &str, a: &Analysis, cfg: &GuardConfig) -> (String, Verdict) {
    let v = verdict(a, cfg);
    let mut out = String::new();
    let _ = writeln!(out, "command line: {}", input.replace('\n', "\\n"));
    if a.exact {
        let _ = writeln!(out, "parse: exact");
    } else {
        let _ = writeln!(
            out,
            "parse: approximate (a parse error, a nesting cap or PowerShell text; the dangerous \
             rules also checked a token-level reading, and the line is not read-only)"
        );
    }
    let _ = writeln!(out, "simple commands: {}", a.commands.len());
    for (i, c) in a.commands.iter().enumerate() {
        write_command(&mut out, i + 1, c);
    }
    if !a.expanded.is_empty() {
        let _ = writeln!(
            out,
            "with the values the line and its environment give its variables: {}",
            a.expanded.len()
        );
        for (i, c) in a.expanded.iter().enumerate() {
            write_command(&mut out, i + 1, c);
        }
    }
    match &v {
        Verdict::Block(b) => {
            let _ = writeln!(out, "verdict: BLOCKED by rule `{}`: {}", b.rule, b.reason);
            let _ = writeln!(
                out,
                "  offending command: {}",
                b.command.replace('\n', "\\n")
            );
        }
        Verdict::Allow { .. } => {
            let _ = writeln!(out, "verdict: allowed");
        }
    }
    for b in firing_rules(a) {
        if cfg.allows(b.rule) {
            let _ = writeln!(
                out,
                "  note: rule `{}` matched `{}` but is allowed by configuration",
                b.rule,
                b.command.replace('\n', "\\n")
            );
        }
    }
    let _ = writeln!(out, "read-only: {}", yes_no(readonly::line_is_read_only(a)));
    (out, v)
}

fn write_command(out: &mut String, n: usize, c: &SimpleCommand) {
    let argv = c
        .argv
        .iter()
        .map(|w| quote_for_display(w))
        .collect::<Vec<_>>()
        .join(" ");
    let argv = if argv.is_empty() {
        "(redirection only)".to_string()
    } else {
        argv
    };
    let _ = writeln!(out, "  {n}. {argv}");
    if c.argv.first().is_some_and(|a0| *a0 != c.program) && !c.program.is_empty() {
        let _ = writeln!(out, "     program: {}", c.program);
    }
    if !c.wrappers.is_empty() {
        let _ = writeln!(out, "     peeled: {}", c.wrappers.join(" > "));
    }
    for r in &c.redirects {
        let target = if r.op.starts_with("<<") && r.op != "<<<" {
            format!("(heredoc, {} bytes)", r.target.len())
        } else {
            quote_for_display(&r.target)
        };
        let _ = writeln!(out, "     redirect: {} {target}", r.op);
    }
    let mut flags = Vec::new();
    if let Some((id, stage)) = c.pipeline {
        flags.push(format!("pipeline {id} stage {stage}"));
    }
    if c.background {
        flags.push("background".to_string());
    }
    if c.approximate {
        flags.push("from token scan".to_string());
    }
    let dirs: Vec<&str> = c.cwd.iter().flatten().map(String::as_str).collect();
    if !dirs.is_empty() {
        flags.push(format!("in {}", dirs.join(" or ")));
    }
    if !flags.is_empty() {
        let _ = writeln!(out, "     {}", flags.join(", "));
    }
    let _ = writeln!(
        out,
        "     read-only: {}",
        yes_no(readonly::command_is_read_only(c))
    );
}
