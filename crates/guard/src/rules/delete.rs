//! Rules against deleting or disowning the root, the home directory or the system:
//! `rm-root`, `find-delete-root`, `chmod-root`, and `git clean` of home or a system tree.

use super::*;

pub(super) fn rm_root(a: &Analysis) -> Option<String> {
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let critical = |path: &str| critical_path(path).is_some();
    for c in a.judged() {
        let posix = c.program == "rm"
            && has_flag(
                c,
                &['r', 'R', 'f'],
                &["recursive", "force", "no-preserve-root"],
            )
            && operands(c).any(|o| hits(c, o, home, &critical));
        // `mv ~ /tmp/old`, `mv /usr /x`: moving it away takes it as surely as deleting it.
        let moved = c.program == "mv" && {
            let ops: Vec<&String> = operands(c).collect();
            // With -t DIR every operand is a source; otherwise the last one is the target.
            let sources = if has_flag(c, &['t'], &["target-directory"]) {
                &ops[..]
            } else {
                ops.split_last().map_or(&[][..], |(_, sources)| sources)
            };
            sources.iter().any(|o| hits(c, o, home, &critical))
        };
        // `rsync -a --delete empty/ ~/`: the destination ends up as empty as the source.
        let synced = c.program == "rsync"
            && args(c).iter().any(|w| {
                w == "--del" || (w.starts_with("--delete") && !w.starts_with("--delete-missing"))
            })
            && operands(c)
                .last()
                .is_some_and(|o| hits(c, o, home, &critical));
        if posix
            || moved
            || synced
            || git_clean_all(c, home, &critical)
            || powershell_remove_root(a, c)
        {
            return Some(c.text.clone());
        }
    }
    None
}

/// `git clean -fdx` (or `-fd`, `-fX`) where the work tree is the home directory or a system
/// directory: every untracked file there goes.
pub(super) fn git_clean_all(
    c: &SimpleCommand,
    home: Option<&str>,
    critical: &impl Fn(&str) -> bool,
) -> bool {
    if c.program != "git" {
        return false;
    }
    let mut words = args(c).iter();
    let mut dir: Option<&String> = None;
    let mut verb = None;
    while let Some(w) = words.next() {
        match w.as_str() {
            "-C" => dir = words.next(),
            "-c" | "--git-dir" | "--work-tree" | "--namespace" => {
                words.next();
            }
            o if o.starts_with('-') => {}
            v => {
                verb = Some(v);
                break;
            }
        }
    }
    if verb != Some("clean") {
        return false;
    }
    let rest: Vec<&String> = words.collect();
    let flag = |ch: char, long: &str| {
        rest.iter().any(|w| {
            w.as_str() == long || (w.starts_with('-') && !w.starts_with("--") && w.contains(ch))
        })
    };
    let forced = flag('f', "--force");
    let wide = flag('d', "-d") || flag('x', "-x") || flag('X', "-X");
    let here_critical = match dir {
        Some(d) => hits(c, d, home, critical),
        None => cwd_critical(c, home, critical),
    };
    forced && wide && here_critical
}

/// `Remove-Item -Recurse C:\` and its aliases (`rm -r`, `ri`, `del`, … inside PowerShell), also
/// when the items are piped in from `Get-ChildItem C:\`.
pub(super) fn powershell_remove_root(a: &Analysis, c: &SimpleCommand) -> bool {
    let cmdlet = c.program == "remove-item";
    let alias = c.dialect == Dialect::PowerShell
        && matches!(
            c.program.as_str(),
            "rm" | "ri" | "del" | "erase" | "rd" | "rmdir"
        );
    if !(cmdlet || alias) {
        return false;
    }
    let words = args(c);
    let recurse = words.iter().any(|w| ps_param_is(w, "Recurse", 1));
    if !recurse {
        return false;
    }
    if let Some((id, stage)) = c.pipeline.filter(|p| p.1 > 0) {
        let listed_root = a.commands.iter().any(|o| {
            o.pipeline.is_some_and(|(oid, os)| oid == id && os < stage)
                && matches!(o.program.as_str(), "get-childitem" | "gci" | "ls" | "dir")
                && args(o)
                    .iter()
                    .any(|w| !w.starts_with('-') && windows_critical(w))
        });
        if listed_root {
            return true;
        }
    }
    /// Parameters whose value is not a path to delete.
    const NOT_PATHS: &[(&str, usize)] = &[
        ("Filter", 2),
        ("Include", 1),
        ("Exclude", 1),
        ("Credential", 1),
        ("Stream", 1),
    ];
    let mut skip_next = false;
    for w in words {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if w.starts_with('-') {
            skip_next = NOT_PATHS.iter().any(|&(p, min)| ps_param_is(w, p, min));
            if let Some((_, value)) = w.split_once(':')
                && (ps_param_is(w, "Path", 1) || ps_param_is(w, "LiteralPath", 1))
                && value.split(',').any(windows_critical)
            {
                return true;
            }
            continue;
        }
        if w.split(',').any(windows_critical) {
            return true;
        }
    }
    false
}

/// Whether a `find` starts at the root, a system directory, or the home directory unfiltered
/// (`find ~ -name '*.pyc' -delete` is routine cleanup; an unfiltered `find ~ -delete` is not,
/// nor one whose only filter takes every name, `-name '*'`). A start point is read where the
/// command runs (`cd && find . -delete`).
pub(super) fn find_starts_critical(c: &SimpleCommand, home: Option<&str>) -> bool {
    let mut words = args(c).iter().peekable();
    // Leading `-H -L -P -D opts -O3` options come before the starting points.
    while let Some(w) = words.peek() {
        match w.as_str() {
            "-H" | "-L" | "-P" => {}
            "-D" => {
                words.next();
            }
            o if o.starts_with("-O") => {}
            _ => break,
        }
        words.next();
    }
    let mut system_root = false;
    let mut home_root = false;
    for w in words.by_ref() {
        if w.starts_with(['-', '(', '!', ')']) {
            break;
        }
        let is = |kinds: &[Critical]| {
            hits(c, w, home, &|p: &str| {
                critical_path(p).is_some_and(|k| kinds.contains(&k))
            })
        };
        if is(&[Critical::Home]) {
            home_root = true;
        } else if is(&[Critical::Root, Critical::System, Critical::SystemSubdir]) {
            system_root = true;
        }
    }
    let mut expr = args(c).iter();
    let mut filtered = false;
    while let Some(w) = expr.next() {
        let pattern = matches!(
            w.as_str(),
            "-name"
                | "-iname"
                | "-path"
                | "-ipath"
                | "-wholename"
                | "-iwholename"
                | "-regex"
                | "-iregex"
                | "-lname"
                | "-ilname"
        );
        if pattern && expr.next().is_some_and(|p| !takes_every_name(w, p)) {
            filtered = true;
        }
    }
    system_root || (home_root && !filtered)
}

/// Whether the pattern of test `test` matches every name (or every hidden name): `-name '*'`,
/// `-name '.*'`, `-path '*/*'`, `-regex '.*'`. `-path '*/node_modules/*'` does not.
fn takes_every_name(test: &str, pattern: &str) -> bool {
    if test.ends_with("regex") {
        return matches!(pattern, ".*" | ".+" | "^.*$" | "^.*" | ".*$" | "^.+$");
    }
    if test.ends_with("name") && !test.ends_with("wholename") {
        return crate::targets::covers_all(pattern);
    }
    pattern
        .split('/')
        .filter(|c| !c.is_empty())
        .all(crate::targets::covers_all)
}

/// Programs that destroy or take over what they are given, one file at a time.
pub(super) fn destroys_each(program: &str) -> bool {
    matches!(
        program,
        "rm" | "shred" | "unlink" | "rmdir" | "chmod" | "chown" | "chgrp"
    )
}

pub(super) fn find_delete_root(a: &Analysis) -> Option<String> {
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let found = first(a, |c| {
        if c.program != "find" || !find_starts_critical(c, home) {
            return false;
        }
        let expr: Vec<&String> = args(c).iter().collect();
        expr.iter().enumerate().any(|(i, w)| {
            w.as_str() == "-delete"
                || (matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                    && expr
                        .get(i + 1)
                        .is_some_and(|n| destroys_each(&program_name(n))))
        })
    });
    // `find / … | xargs rm`: what the find lists, the next stage destroys.
    found.or_else(|| {
        a.judged().find_map(|c| {
            let (pipeline, stage) = c.pipeline?;
            let before = stage.checked_sub(1)?;
            let fed = c.wrappers.iter().any(|w| w == "xargs") && destroys_each(&c.program);
            let from_find = fed
                && a.judged().any(|f| {
                    f.program == "find"
                        && f.pipeline == Some((pipeline, before))
                        && find_starts_critical(f, home)
                });
            from_find.then(|| c.text.clone())
        })
    })
}

/// `chmod -R`/`chown -R` on `/`, the home directory or a top-level system directory: every
/// file below loses its permissions (`~/.ssh` stops working, `sudo` breaks). A directory one
/// level down (`/usr/local`) is left alone: recursive fixes there are routine. Without `-R`,
/// `/` or a top-level system directory itself (`chmod 000 /`, `chown nobody /etc`): every path
/// runs through it. The home directory alone is left to its owner (`chmod 700 ~`).
pub(super) fn chmod_root(a: &Analysis) -> Option<String> {
    let home = a.place.as_ref().and_then(|p| p.home.as_deref());
    let recursive_target = |path: &str| {
        matches!(
            critical_path(path),
            Some(Critical::Root | Critical::Home | Critical::System)
        )
    };
    let system =
        |path: &str| matches!(critical_path(path), Some(Critical::Root | Critical::System));
    a.judged().find_map(|c| {
        if !matches!(c.program.as_str(), "chmod" | "chown" | "chgrp") {
            return None;
        }
        let hit = if has_flag(c, &['R'], &["recursive"]) {
            operands(c).any(|o| hits(c, o, home, &recursive_target))
        } else {
            !leaves_usable(c) && targets_after_mode(c).any(|o| hits(c, o, home, &system))
        };
        hit.then(|| c.text.clone())
    })
}

/// A non-recursive `chmod`/`chown` that leaves a system directory as systems ship it: mode
/// `755`/`555`, or only read and search added (`+x`, `go+rX`); owner `root` (or uid 0).
fn leaves_usable(c: &SimpleCommand) -> bool {
    let mut words = args(c).iter().filter(|w| !w.starts_with("--"));
    let Some(word) =
        words.find(|w| !(w.starts_with('-') && w[1..].chars().all(|ch| "RfvchHLP".contains(ch))))
    else {
        return false;
    };
    match c.program.as_str() {
        "chmod" => {
            matches!(word.trim_start_matches('0'), "755" | "555")
                || word.split(',').all(|clause| {
                    let (who, perms) = clause.split_once('+').unwrap_or((clause, ""));
                    who.chars().all(|ch| "ugoa".contains(ch))
                        && !perms.is_empty()
                        && perms.chars().all(|ch| "rxX".contains(ch))
                })
        }
        _ => {
            let (user, group) = word.split_once([':', '.']).unwrap_or((word, ""));
            let root = |name: &str| matches!(name, "root" | "0");
            (c.program == "chgrp" && root(word))
                || (c.program == "chown"
                    && (root(user) || user.is_empty())
                    && (group.is_empty() || root(group) || matches!(group, "wheel" | "admin")))
        }
    }
}

/// The paths a `chmod`/`chown`/`chgrp` changes: its words after the options and the mode or
/// owner (none with `--reference`). A mode may look like an option (`chmod -w x`).
fn targets_after_mode(c: &SimpleCommand) -> impl Iterator<Item = &String> {
    let is_option = |w: &String| {
        w.starts_with("--")
            || (w.len() > 1
                && w.starts_with('-')
                && w[1..].chars().all(|ch| "RfvchHLP".contains(ch)))
    };
    let mut words = args(c).iter().skip_while(move |w| is_option(w)).peekable();
    if !args(c).iter().any(|w| w.starts_with("--reference")) {
        words.next();
    }
    words.filter(|w| !(w.starts_with('-') && w.len() > 1))
}
