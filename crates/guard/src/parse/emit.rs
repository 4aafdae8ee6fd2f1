//! From a command as the parser found it to the commands the rules judge: its readings (as
//! written, and with the values its variables may have put in), the wrappers peeled off each,
//! the scripts they run parsed again in the shell that runs them (a new one for `sh -c`, this one
//! for `eval`), and then what it does to the shell's state (`effects.rs`).

use super::*;

/// A command as the parser found it, before its wrappers are peeled.
pub(super) struct Written<'t> {
    pub(super) argv: Vec<String>,
    /// The words as written (quotes kept), when the parser saw them: what expansion reads.
    pub(super) raw: Option<Vec<String>>,
    /// Its `NAME=value` words (`X=1 cmd`): in the environment of what it runs, not in the
    /// expansion of its own words.
    pub(super) assigns: Vec<Assign>,
    pub(super) text: &'t str,
    pub(super) redirects: Vec<Redirect>,
    pub(super) inner: Vec<usize>,
    pub(super) approximate: bool,
}

impl<'t> Written<'t> {
    pub(super) fn plain(argv: Vec<String>, text: &'t str) -> Self {
        Written {
            argv,
            raw: None,
            assigns: Vec::new(),
            text,
            redirects: Vec::new(),
            inner: Vec::new(),
            approximate: false,
        }
    }
}

/// One way a command may read: its argv and its redirections, as written or with the values
/// its expansions may have put in.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reading {
    pub(super) argv: Vec<String>,
    pub(super) redirects: Vec<Redirect>,
}

/// One `NAME=value` word: the value as written (`X+=y` as `X=${X}y`), or `None` for one not
/// followed (an array).
#[derive(Debug, Clone)]
pub(super) struct Assign {
    pub(super) name: String,
    pub(super) value: Option<String>,
}

impl Builder {
    /// Records one command after peeling its wrappers; scripts found on the way are parsed.
    /// When its words expand to something else than they read as written (a variable the line
    /// set, one unset in a known environment), each reading is recorded too; then what the
    /// command does to the shell (`cd`, `read`, `unset`) is followed.
    pub(super) fn emit(&mut self, w: Written<'_>, ctx: &Ctx) {
        let readings = self.readings_of(&w);
        let as_written = Reading {
            argv: w.argv.clone(),
            redirects: w.redirects.clone(),
        };
        let literal = self.emit_reading(as_written, &w, w.inner.clone(), ctx);
        let mut ran = Vec::new();
        let expanded = !readings.is_empty();
        for reading in readings {
            if self.readings_left == 0 {
                break;
            }
            self.readings_left -= 1;
            self.reading += 1;
            ran.extend(self.emit_reading(reading, &w, Vec::new(), ctx));
            self.reading -= 1;
        }
        if !expanded {
            ran.extend(literal);
        }
        self.effects(&ran, ctx);
        if let Some(raw) = &w.raw {
            self.default_assignments(raw);
        }
    }

    /// `${X:=word}` (and `${X=word}`) in a word assigns `X` when it is unset (or empty) as the
    /// word is expanded: `: "${D:=$HOME}"; rm -rf "$D"`.
    fn default_assignments(&mut self, raw: &[String]) {
        let mut assigned: Vec<(String, Vec<Val>)> = Vec::new();
        for word in raw {
            let mut rest = word.as_str();
            while let Some(at) = rest.find("${") {
                let body_start = at + 2;
                let Some(close) = super::expand::closing(rest, body_start, b'{', b'}') else {
                    break;
                };
                let body = &rest[body_start..close];
                let name_len = body
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(body.len());
                let (name, op) = body.split_at(name_len);
                let default = op.strip_prefix(":=").map(|w| (":-", w));
                let default = default.or_else(|| op.strip_prefix('=').map(|w| ("-", w)));
                if let Some((test, w)) = default
                    && !name.is_empty()
                    && !name.starts_with(|c: char| c.is_ascii_digit())
                {
                    // What the expansion gives is what the variable is left with.
                    let values = self.expander().value(&format!("${{{name}{test}{w}}}"));
                    assigned.push((name.to_owned(), values));
                }
                rest = &rest[close + 1..];
            }
        }
        for (name, values) in assigned {
            self.state.assign(&name, values, None);
        }
    }

    /// What `w`'s words and redirection targets expand to where that differs from how they
    /// read as written, at most [`MAX_READINGS`].
    fn readings_of(&self, w: &Written<'_>) -> Vec<Reading> {
        let Some(raw) = &w.raw else {
            return Vec::new();
        };
        let expands = |r: &str| r.contains(['$', '`', '~']);
        let targets = w.redirects.iter().filter_map(|r| r.raw.as_deref());
        if self.readings_left == 0 || !raw.iter().map(String::as_str).chain(targets).any(expands) {
            return Vec::new();
        }
        let expander = self.expander();
        let mut readings = vec![Reading {
            argv: Vec::new(),
            redirects: w.redirects.clone(),
        }];
        for word in raw {
            let Some(alternatives) = expander.word(word) else {
                return Vec::new();
            };
            readings = readings
                .iter()
                .flat_map(|r| {
                    alternatives.iter().map(move |fields| {
                        let mut next = r.clone();
                        next.argv.extend(fields.iter().cloned());
                        next
                    })
                })
                .take(MAX_READINGS)
                .collect();
        }
        for (i, redirect) in w.redirects.iter().enumerate() {
            let Some(target) = redirect.raw.as_deref().filter(|t| expands(t)) else {
                continue;
            };
            // A target that is not one field is an error of the shell's: nothing is written.
            let Some(alternatives) = expander.word(target) else {
                continue;
            };
            let one_field: Vec<String> = alternatives
                .into_iter()
                .filter_map(|f| <[String; 1]>::try_from(f).ok())
                .map(|[t]| t)
                .collect();
            readings = readings
                .iter()
                .flat_map(|r| {
                    one_field.iter().map(move |t| {
                        let mut next = r.clone();
                        if let Some(redirect) = next.redirects.get_mut(i) {
                            redirect.target.clone_from(t);
                        }
                        next
                    })
                })
                .take(MAX_READINGS)
                .collect();
        }
        readings.retain(|r| r.argv != w.argv || r.redirects != w.redirects);
        readings.dedup();
        readings
    }

    /// Records `argv` (one reading of `w`) after peeling its wrappers, or parses the script it
    /// runs; returns the argv that runs when it is a command.
    fn emit_reading(
        &mut self,
        reading: Reading,
        w: &Written<'_>,
        inner: Vec<usize>,
        ctx: &Ctx,
    ) -> Option<Vec<String>> {
        let Reading { argv, redirects } = reading;
        let (argv, wrappers) = match self.peel_wrappers(argv, w.text, ctx) {
            Unwrapped::Command { argv, wrappers } => (argv, wrappers),
            Unwrapped::Script {
                script,
                dialect,
                wrappers,
                assigns,
                new_shell,
            } => {
                let c = Ctx {
                    depth: ctx.depth + 1,
                    wrappers,
                    dialect,
                    redirects,
                    ..ctx.clone()
                };
                self.run_script(&script, &c, &w.assigns, &assigns, new_shell);
                return None;
            }
        };
        self.emit_what_it_runs(&argv, &wrappers, w.text, &redirects, ctx, w.approximate);
        let program = argv.first().map(|a| program_name(a)).unwrap_or_default();
        let command = SimpleCommand {
            argv: argv.clone(),
            program,
            wrappers,
            redirects,
            text: w.text.to_string(),
            dialect: ctx.dialect,
            pipeline: ctx.pipeline,
            background: ctx.background,
            function: ctx.function,
            inner,
            approximate: w.approximate,
            cwd: self.state.cwd.clone(),
        };
        if self.reading > 0 {
            self.expanded.push(command);
        } else {
            self.commands.push(command);
        }
        Some(argv)
    }

    /// Parses `script` as run by a wrapper: by a new shell (`sh -c`, a heredoc fed to `bash`),
    /// which starts from the exported variables plus the command's `X=…` words and keeps
    /// nothing after, or by this one (`eval`).
    fn run_script(
        &mut self,
        script: &str,
        ctx: &Ctx,
        prefix: &[Assign],
        wrapper_assigns: &[(String, String)],
        new_shell: bool,
    ) {
        let prefix: Vec<(String, Vec<Val>)> = prefix
            .iter()
            .map(|a| (a.name.clone(), self.values_of(a)))
            .collect();
        let saved = new_shell.then(|| self.state.clone());
        if new_shell {
            let place = self.place.as_ref();
            let next = self.state.for_new_shell(|name| in_env(place, name));
            self.state = next;
        }
        for (name, values) in prefix {
            self.state.assign(&name, values, Some(true));
        }
        for (name, value) in wrapper_assigns {
            self.state
                .assign(name, vec![Val::Text(value.clone())], Some(true));
        }
        self.script(script, ctx);
        if let Some(saved) = saved {
            self.state = saved;
        }
    }

    /// The values an assignment gives its variable here.
    pub(super) fn values_of(&self, a: &Assign) -> Vec<Val> {
        match &a.value {
            Some(raw) => self.expander().value(raw),
            None => vec![Val::Unknown],
        }
    }

    /// Peels `argv`'s wrappers (at most [`MAX_WRAPPERS`]), after those of `ctx`, down to the
    /// command it runs or a script. A script past [`MAX_NESTING_DEPTH`] is not read: the line
    /// is marked too deep and the wrapper that runs it is the command.
    fn peel_wrappers(&mut self, argv: Vec<String>, text: &str, ctx: &Ctx) -> Unwrapped {
        let mut argv = argv;
        let mut wrappers = ctx.wrappers.clone();
        // `env X=1 sh -c …`, `sudo X=1 …`: in the environment of what they run.
        let mut assigns = Vec::new();
        for _ in 0..MAX_WRAPPERS {
            match unwrap::peel(&argv, ctx.dialect) {
                Peel::Done => break,
                Peel::Command {
                    wrapper,
                    argv: rest,
                } => {
                    if matches!(wrapper.as_str(), "env" | "sudo") {
                        let skipped = argv.len().saturating_sub(rest.len());
                        for word in argv.get(1..skipped).unwrap_or_default() {
                            if unwrap::is_assignment(word)
                                && let Some((name, value)) = word.split_once('=')
                            {
                                assigns.push((name.to_owned(), value.to_owned()));
                            }
                        }
                    }
                    wrappers.push(wrapper);
                    argv = rest;
                }
                Peel::Script {
                    wrapper,
                    script,
                    dialect,
                } => {
                    if ctx.depth >= MAX_NESTING_DEPTH {
                        // What the script runs is not read: refuse rather than pass it.
                        self.exact = false;
                        self.too_deep.get_or_insert_with(|| text.to_string());
                        break;
                    }
                    // `eval` runs its script in this shell; every other wrapper starts another.
                    let new_shell = wrapper != "eval";
                    wrappers.push(wrapper);
                    return Unwrapped::Script {
                        script,
                        dialect,
                        wrappers,
                        assigns,
                        new_shell,
                    };
                }
            }
        }
        Unwrapped::Command { argv, wrappers }
    }

    /// Emits the commands `argv` would run itself: `find -exec`'s, and a heredoc's script fed
    /// to a shell. Past [`MAX_NESTING_DEPTH`] they are not read: the line is marked too deep.
    fn emit_what_it_runs(
        &mut self,
        argv: &[String],
        wrappers: &[String],
        text: &str,
        redirects: &[Redirect],
        ctx: &Ctx,
        approximate: bool,
    ) {
        let nested = |wrapper: &str| Ctx {
            depth: ctx.depth + 1,
            wrappers: wrappers
                .iter()
                .cloned()
                .chain([wrapper.to_string()])
                .collect(),
            dialect: ctx.dialect,
            redirects: Vec::new(),
            ..ctx.clone()
        };
        if ctx.depth >= MAX_NESTING_DEPTH
            && (!find_exec(argv).is_empty() || shell_reads_stdin(argv))
        {
            // A command it would run (`find -exec`, a script on stdin) is not read: refuse.
            self.exact = false;
            self.too_deep.get_or_insert_with(|| text.to_string());
        }
        if ctx.depth < MAX_NESTING_DEPTH {
            for exec in find_exec(argv) {
                let written = Written {
                    approximate,
                    ..Written::plain(exec, text)
                };
                self.emit(written, &nested("find -exec"));
            }
            if shell_reads_stdin(argv) {
                for r in redirects {
                    if r.op.starts_with("<<") {
                        let shell = argv.first().map(String::as_str).unwrap_or_default();
                        let c = nested(&format!("{shell} {}", r.op));
                        self.run_script(&r.target, &c, &[], &[], true);
                    }
                }
            }
        }
    }
}

/// What peeling a command's wrappers came to.
enum Unwrapped {
    /// The command that finally runs, and the wrappers peeled to reach it.
    Command {
        argv: Vec<String>,
        wrappers: Vec<String>,
    },
    /// A script a wrapper runs, to be parsed one level deeper; the wrappers end with that one.
    Script {
        script: String,
        dialect: Dialect,
        wrappers: Vec<String>,
        /// `NAME=value` words of the wrappers peeled (`env X=1 sh -c …`).
        assigns: Vec<(String, String)>,
        /// Run by another shell (`sh -c`), not this one (`eval`).
        new_shell: bool,
    },
}
