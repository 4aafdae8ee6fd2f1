//! What a command does to the shell that runs it, as far as the guard follows: `cd` (and
//! `pushd`, `Set-Location`) moves it, `export`/`declare`/`local`/`readonly` set and export
//! variables, `unset` unsets them, `read`/`mapfile`/`getopts`/`printf -v`/`let` set them to
//! something not known, and `source` runs code not read (every variable may then change).

use tree_sitter::Node;

use super::state::{State, Val, bounded_dirs, home_of, moved_to};
use super::walk::assignment;
use super::{Builder, Ctx};
use crate::command::program_name;
use crate::treesitter::{children_of, node_text};
use crate::unwrap::is_assignment;

impl Builder {
    /// Follows what the command that ran as each of `ran` (its readings, or as written) does to
    /// the shell.
    pub(super) fn effects(&mut self, ran: &[Vec<String>], ctx: &Ctx) {
        let mut moved: Option<Vec<Option<String>>> = None;
        for argv in ran {
            let Some((first, args)) = argv.split_first() else {
                continue;
            };
            let program = program_name(first);
            let names = |skip_values: &[&str]| names_in(args, skip_values);
            match program.as_str() {
                "cd" | "pushd" | "chdir" | "set-location" | "sl" => {
                    let dir = operand(args);
                    let dirs = moved.get_or_insert_with(Vec::new);
                    if dir == Some("-") {
                        dirs.extend(self.state.oldpwd.iter().cloned());
                        continue;
                    }
                    let home = home_of(&self.state, self.place.as_ref());
                    for from in &self.state.cwd {
                        dirs.push(moved_to(from.as_ref(), dir, ctx.dialect, home.as_deref()));
                    }
                }
                "popd" | "pop-location" => moved.get_or_insert_with(Vec::new).push(None),
                "read" => {
                    let mut set = names(&["-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"]);
                    if set.is_empty() {
                        set.push("REPLY".into());
                    }
                    // `-a NAME` names an array.
                    set.extend(value_of(args, "-a"));
                    unknown(&mut self.state, &set);
                }
                "mapfile" | "readarray" => {
                    let mut set = names(&["-d", "-n", "-O", "-s", "-u", "-C", "-c"]);
                    if set.is_empty() {
                        set.push("MAPFILE".into());
                    }
                    unknown(&mut self.state, &set);
                }
                "getopts" => unknown(
                    &mut self.state,
                    &names(&[]).into_iter().skip(1).collect::<Vec<_>>(),
                ),
                "printf" => unknown(&mut self.state, &value_of(args, "-v")),
                "let" => {
                    let set: Vec<String> = args
                        .iter()
                        .filter_map(|a| a.split_once('=').map(|(n, _)| n.trim().to_owned()))
                        .collect();
                    unknown(&mut self.state, &set);
                }
                "unset" if !args.iter().any(|a| a == "-f") => {
                    for name in names(&[]) {
                        self.state.assign(&name, vec![Val::Unset], None);
                    }
                }
                "source" | "." => self.state.make_opaque(),
                _ => {}
            }
        }
        if let Some(dirs) = moved {
            self.state.oldpwd = std::mem::replace(&mut self.state.cwd, bounded_dirs(dirs));
        }
    }

    /// `export`/`declare`/`typeset`/`local`/`readonly`: the variables it sets, and whether it
    /// exports them.
    pub(super) fn declare(&mut self, node: Node<'_>, src: &str, keyword: &str) {
        let flags: String = children_of(node)
            .iter()
            .filter(|(c, _)| c.kind() == "word")
            .map(|(c, _)| node_text(*c, src))
            .filter(|w| w.starts_with(['-', '+']))
            .collect();
        let export = if keyword == "export" {
            Some(!flags.contains('n'))
        } else if flags.contains("-x") || (flags.starts_with('-') && flags.contains('x')) {
            Some(true)
        } else if flags.starts_with('+') && flags.contains('x') {
            Some(false)
        } else {
            None
        };
        // Arrays, integers, name references and case changes: values not followed.
        let followed = !flags.contains(['a', 'A', 'i', 'n', 'l', 'u', 'c']) || keyword == "export";
        for (child, _) in children_of(node) {
            match child.kind() {
                "variable_assignment" => {
                    if let Some(a) = assignment(child, src) {
                        let values = if followed {
                            self.values_of(&a)
                        } else {
                            vec![Val::Unknown]
                        };
                        self.state.assign(&a.name, values, export);
                    }
                }
                "variable_name" => {
                    let name = node_text(child, src);
                    match export {
                        Some(export) => self.state.export(name, export),
                        // `local X`: a new variable of the function, unset.
                        None if keyword == "local" => {
                            self.state.assign(name, vec![Val::Unset], None);
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
    }
}

/// The first operand of a command's arguments (options skipped, `--` honoured).
fn operand(args: &[String]) -> Option<&str> {
    let mut done = false;
    args.iter()
        .find(|a| {
            if done {
                return true;
            }
            if a.as_str() == "--" {
                done = true;
                return false;
            }
            !(a.starts_with('-') && a.len() > 1)
        })
        .map(String::as_str)
}

/// Names among `args` (options skipped, with the values of those in `skip_values`).
fn names_in(args: &[String], skip_values: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if skip_values.contains(&w.as_str()) {
            words.next();
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        if is_assignment(&format!("{w}=")) {
            out.push(w.clone());
        }
    }
    out
}

/// The value of option `flag` (`-v NAME`), as a name.
fn value_of(args: &[String], flag: &str) -> Vec<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .filter(|n| is_assignment(&format!("{n}=")))
        .cloned()
        .into_iter()
        .collect()
}

fn unknown(state: &mut State, names: &[String]) {
    for name in names {
        state.assign(name, vec![Val::Unknown], None);
    }
}
