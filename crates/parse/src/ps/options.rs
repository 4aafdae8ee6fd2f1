//! A `ps` option line read the way procps-ng's parser.c reads it: SysV clusters (`-ef`, `-eo
//! pid,args`), BSD clusters (`aux`, `o pid,args`), GNU long options, and trailing pids; what
//! each asks of the format is noted in [`Options`]. A leaf: which columns that makes is
//! `format`'s business.

/// What the options asked for.
#[derive(Default)]
pub(super) struct Options {
    /// `-f` (and `-F`): full format.
    pub(super) full: bool,
    /// `-F`: extra full.
    pub(super) extra: bool,
    /// `-l`: long format.
    pub(super) long: bool,
    /// `-y`: with `-l`, RSS instead of F and ADDR.
    pub(super) y: bool,
    /// `-j`: jobs columns.
    pub(super) jobs: bool,
    /// `-L`: thread columns.
    pub(super) lwp: bool,
    /// `-T`: SPID column.
    pub(super) spid: bool,
    /// A BSD format letter (`u`, `j`, `l`, `s`, `v`).
    pub(super) bsd_format: Option<char>,
    /// BSD options or bare pids were given: the default format is the BSD one.
    pub(super) prefer_bsd: bool,
    /// `-o`/`o`/`--format` lists, in order.
    pub(super) lists: Vec<String>,
    pub(super) no_header: bool,
}

/// Why an option line was not taken.
pub(super) enum Refusal {
    /// procps would retry the whole line as BSD options.
    TryBsd,
    /// Not handled.
    No,
}

/// procps `parse_all_options`, for the options this parser accepts. `bsd`: the second pass,
/// where `-aux` is read as `aux`.
pub(super) fn options(args: &[String], bsd: bool) -> Result<Options, Refusal> {
    let mut o = Options::default();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let next = args.get(i + 1).filter(|a| !a.is_empty());
        let bytes = arg.as_bytes();
        let used_next = match (bytes.first(), bytes.get(1), bytes.get(2)) {
            (Some(b'-'), Some(b'-'), Some(_)) => {
                long_option(arg.get(2..).unwrap_or(""), next, &mut o)?
            }
            (Some(b'-'), Some(c), _) if c.is_ascii_alphabetic() => {
                if bsd {
                    o.prefer_bsd = true;
                    bsd_cluster(arg.get(1..).unwrap_or(""), next, &mut o)?
                } else {
                    sysv_cluster(arg.get(1..).unwrap_or(""), next, &mut o)?
                }
            }
            (Some(c), _, _) if c.is_ascii_alphabetic() => {
                o.prefer_bsd = true;
                bsd_cluster(arg, next, &mut o)?
            }
            (Some(c), _, _) if c.is_ascii_digit() || *c == b'+' || *c == b'-' => {
                // Trailing pids, `-PGRP`, `+SID`: selection only, and the end of the options.
                let rest = args.get(i..).unwrap_or_default();
                let pid_like = |a: &String| {
                    let digits = a.strip_prefix(['-', '+']).unwrap_or(a);
                    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b',')
                };
                if !rest.iter().all(pid_like) {
                    return Err(Refusal::No);
                }
                o.prefer_bsd = true;
                break;
            }
            _ => return Err(Refusal::No),
        };
        i += if used_next { 2 } else { 1 };
    }
    Ok(o)
}

/// The value of an option letter: the rest of its word, else the next argument.
fn value<'a>(rest: &'a str, next: Option<&'a String>) -> Result<(&'a str, bool), Refusal> {
    if !rest.is_empty() {
        Ok((rest, false))
    } else {
        next.map(|n| (n.as_str(), true)).ok_or(Refusal::No)
    }
}

/// A SysV cluster (`-ef`, `-eo pid,args`, `-u root`). `Ok(true)`: the next argument was used.
fn sysv_cluster(cluster: &str, next: Option<&String>, o: &mut Options) -> Result<bool, Refusal> {
    for (i, letter) in cluster.char_indices() {
        let rest = cluster.get(i + letter.len_utf8()..).unwrap_or("");
        match letter {
            'A' | 'a' | 'd' | 'e' | 'N' | 'w' => {}
            'f' => o.full = true,
            'F' => (o.full, o.extra) = (true, true),
            'l' => o.long = true,
            'y' => o.y = true,
            'j' => o.jobs = true,
            'L' => o.lwp = true,
            'T' => o.spid = true,
            // `-aux`: procps reads `x` as a user name, finds no such user, and re-reads the
            // line as BSD options (it does so for any `-x` too).
            'x' => return Err(Refusal::TryBsd),
            'u' | 'U'
                if !rest.is_empty()
                    && rest.contains('x')
                    && rest.chars().all(|c| "auxwwgrScnh".contains(c)) =>
            {
                return Err(Refusal::TryBsd);
            }
            'C' | 'G' | 'g' | 'p' | 'q' | 's' | 't' | 'u' | 'U' => {
                return value(rest, next).map(|v| v.1);
            }
            'o' => {
                let (list, used) = value(rest, next)?;
                o.lists.push(list.to_owned());
                return Ok(used);
            }
            _ => return Err(Refusal::No),
        }
    }
    Ok(false)
}

/// A BSD cluster (`aux`, `axww`, `o pid,args`).
fn bsd_cluster(cluster: &str, next: Option<&String>, o: &mut Options) -> Result<bool, Refusal> {
    for (i, letter) in cluster.char_indices() {
        let rest = cluster.get(i + letter.len_utf8()..).unwrap_or("");
        match letter {
            'a' | 'x' | 'g' | 'r' | 'S' | 'T' | 'w' | 'n' | 'c' => {}
            'h' => o.no_header = true,
            'u' | 'j' | 'l' | 's' | 'v' => {
                if o.bsd_format.is_some_and(|f| f != letter) {
                    return Err(Refusal::No);
                }
                o.bsd_format = Some(letter);
            }
            '0'..='9' => return Ok(false),
            // BSD `t` without a value selects the caller's own terminal.
            't' if rest.is_empty() && next.is_none() => return Ok(false),
            'p' | 'q' | 'U' | 'k' | 't' => return value(rest, next).map(|v| v.1),
            'o' => {
                let (list, used) = value(rest, next)?;
                o.lists.push(list.to_owned());
                return Ok(used);
            }
            _ => return Err(Refusal::No),
        }
    }
    Ok(false)
}

/// A GNU long option (without its `--`). Values follow `=`, `:`, or come next.
fn long_option(option: &str, next: Option<&String>, o: &mut Options) -> Result<bool, Refusal> {
    let split = option.find([':', '=']).unwrap_or(option.len());
    let (name, attached) = option.split_at(split);
    let attached = attached.get(1..).filter(|v| !v.is_empty());
    let take = || match (attached, next) {
        (Some(v), _) => Ok((v.to_owned(), false)),
        (None, Some(n)) if split == option.len() => Ok((n.clone(), true)),
        _ => Err(Refusal::No),
    };
    match name {
        "no-header" | "no-headers" | "no-heading" | "no-headings" | "noheader" | "noheaders"
        | "noheading" | "noheadings" | "deselect" | "cumulative"
            if split == option.len() =>
        {
            o.no_header |= name.starts_with('n');
            Ok(false)
        }
        "format" => {
            let (list, used) = take()?;
            o.lists.push(list);
            Ok(used)
        }
        "pid" | "ppid" | "quick-pid" | "sid" | "tty" | "user" | "User" | "group" | "Group"
        | "sort" => take().map(|v| v.1),
        _ => Err(Refusal::No),
    }
}
