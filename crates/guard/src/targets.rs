//! Classifies path arguments: is this the filesystem root, the home directory, a top-level system
//! directory, a raw block device, or a Windows drive root?
//!
//! All judgement is lexical on the word as written (quotes already removed): the guard runs before
//! the command and must not depend on the machine's current layout. `~`, `$HOME` and `${HOME}`
//! stand for a symbolic home, so `~/..` is `/home` and `/tmp/../` is `/`. Other variables are
//! not read here: the parser puts in the values the line and its known environment give them
//! (`parse/expand.rs`) and the rules judge that reading too; one left as written (`$BUILD/`)
//! never makes a path critical.

/// What makes a path too important to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Critical {
    /// `/` (or `/*`).
    Root,
    /// The user's home directory.
    Home,
    /// A top-level system directory such as `/usr`, `/etc`, `/home`.
    System,
    /// A system directory one level down, such as `/usr/local`, `/var/lib`.
    SystemSubdir,
}

/// Top-level directories whose loss breaks the machine (Linux and macOS), compared lower-case.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "media",
    "mnt",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "snap",
    "srv",
    "sys",
    "usr",
    "var",
    "applications",
    "library",
    "system",
    "users",
    "volumes",
    "private",
    "nix",
];

/// Second-level directories as important as their parents.
const SYSTEM_SUBDIRS: &[(&str, &str)] = &[
    ("usr", "bin"),
    ("usr", "lib"),
    ("usr", "lib64"),
    ("usr", "local"),
    ("usr", "sbin"),
    ("usr", "share"),
    ("usr", "include"),
    ("var", "lib"),
    ("system", "library"),
];

/// Stands for the user's home directory inside a normalized path (cannot be typed in a word).
const HOME_MARK: &str = "\u{1}home";

/// Splits an absolute or home-relative path into normalized components (`..` applied). `None` for
/// relative paths and paths starting with an unknown variable.
fn normalize(word: &str) -> Option<Vec<&str>> {
    let word = word.trim();
    let (mut comps, rest): (Vec<&str>, &str) = if let Some(rest) = home_rest(word) {
        (vec!["home", HOME_MARK], rest)
    } else if word.starts_with('/') {
        (Vec::new(), word)
    } else {
        return None;
    };
    for comp in rest.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                comps.pop();
            }
            c => comps.push(c),
        }
    }
    Some(comps)
}

/// The part after a leading home reference (`~`, `~user`, `$HOME`, `${HOME}`), if any.
pub(crate) fn home_rest(word: &str) -> Option<&str> {
    if let Some(rest) = word.strip_prefix('~') {
        // `~user` is some user's home: as critical as our own.
        let slash = rest.find('/').unwrap_or(rest.len());
        return rest.get(slash..);
    }
    for prefix in ["${HOME}", "$HOME"] {
        if let Some(rest) = word.strip_prefix(prefix)
            && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            return Some(rest);
        }
    }
    None
}

/// `path` (absolute) with a leading `home` written as `~`, so the targets see the home directory
/// as such; normalized first, so `/home/me/project/..` is the home directory.
pub(crate) fn home_relative(path: &str, home: Option<&str>) -> String {
    let Some(home) = home
        .map(|h| h.trim_end_matches('/'))
        .filter(|h| !h.is_empty())
    else {
        return path.to_owned();
    };
    let Some(comps) = normalize(path) else {
        return path.to_owned();
    };
    let normal = format!("/{}", comps.join("/"));
    match normal.strip_prefix(home) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => normal,
    }
}

/// Whether deleting `word` recursively would destroy the system or the home directory.
pub fn critical_path(word: &str) -> Option<Critical> {
    let mut comps = normalize(word)?;
    // One trailing glob level that takes everything in the directory, or every hidden name
    // (`/*`, `~/*`, `/usr/.*`, `~/.[a-z]*`, `~/.??*`), deletes the directory's contents.
    if comps.last().is_some_and(|c| covers_all(c)) {
        comps.pop();
    }
    match comps.as_slice() {
        [] => Some(Critical::Root),
        ["home", mark] if *mark == HOME_MARK => Some(Critical::Home),
        [dir] => is_system_dir(dir).then_some(Critical::System),
        // `/home/$USER`, `/Users/$USER`: somebody's home, as written in scripts.
        [dir, user]
            if (dir.eq_ignore_ascii_case("home") || dir.eq_ignore_ascii_case("users"))
                && matches!(*user, "$USER" | "${USER}" | "$LOGNAME" | "${LOGNAME}") =>
        {
            Some(Critical::Home)
        }
        [dir, sub] => SYSTEM_SUBDIRS
            .iter()
            .any(|(d, s)| dir.eq_ignore_ascii_case(d) && sub.eq_ignore_ascii_case(s))
            .then_some(Critical::SystemSubdir),
        _ => None,
    }
}

/// Whether a glob (one path component) matches every name in its directory, or every hidden
/// one: made only of wildcards and wide classes after an optional leading `.`, with a `*`
/// among them (`*`, `.*`, `*.*`, `.[a-z]*`, `.[!.]*`, `.??*`, `[a-z]*`). A glob that names
/// something (`*.log`, `.*rc`, `[ab]*`) or bounds the length (`.??`) does not.
pub(crate) fn covers_all(comp: &str) -> bool {
    if comp == "*.*" {
        return true;
    }
    let body = comp.strip_prefix('.').unwrap_or(comp);
    let mut star = false;
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        match c {
            '*' => star = true,
            '?' => {}
            '[' => {
                // `[…]`: a class that spans a range, negates, or names a character class.
                // A class's first `]` is literal; `[[:alpha:]]` ends after its `:]`.
                let close = if rest.starts_with("[[:") {
                    rest.find(":]]").map(|e| e + 2)
                } else {
                    rest.get(2..).and_then(|r| r.find(']')).map(|e| e + 2)
                };
                let Some(end) = close else {
                    return false;
                };
                let class = rest.get(1..end).unwrap_or_default();
                let wide = class.starts_with(['!', '^'])
                    || class.contains("[:")
                    || class.trim_matches('-').contains('-');
                if !wide {
                    return false;
                }
                rest = rest.get(end + 1..).unwrap_or_default();
                continue;
            }
            _ => return false,
        }
        rest = &rest[c.len_utf8()..];
    }
    star
}

/// An absolute path with `.`, `..` and repeated slashes resolved as text (`/a/b/../c` is
/// `/a/c`); any other word is returned as it is.
pub(crate) fn lexical(path: &str) -> String {
    if !path.starts_with('/') {
        return path.to_owned();
    }
    match normalize(path) {
        Some(comps) => format!("/{}", comps.join("/")),
        None => path.to_owned(),
    }
}

fn is_system_dir(dir: &str) -> bool {
    SYSTEM_DIRS.iter().any(|d| dir.eq_ignore_ascii_case(d))
}

/// Whether `word` names a whole-disk or partition block device (`/dev/sda`, `/dev/nvme0n1p2`,
/// `/dev/disk2`, `/dev/mapper/root`, …).
pub fn is_block_device(word: &str) -> bool {
    let Some(comps) = normalize(word) else {
        return false;
    };
    let [dev, name, rest @ ..] = comps.as_slice() else {
        return false;
    };
    if *dev != "dev" {
        return false;
    }
    let after = |prefix: &str| name.strip_prefix(prefix);
    let letter =
        |s: Option<&str>| s.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_lowercase()));
    let digit = |s: Option<&str>| s.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    letter(after("sd"))
        || letter(after("hd"))
        || letter(after("vd"))
        || letter(after("xvd"))
        || digit(after("nvme"))
        || digit(after("mmcblk"))
        || digit(after("disk"))
        || digit(after("rdisk"))
        || digit(after("dm-"))
        || digit(after("md"))
        || digit(after("nbd"))
        || (*name == "disk" && !rest.is_empty())
        || (*name == "mapper" && rest.first().is_some_and(|r| *r != "control"))
        || *name == "root"
}

/// Windows roots and profile directories, for PowerShell's `Remove-Item` (plus the POSIX ones,
/// since pwsh also runs on Linux and macOS).
pub fn windows_critical(word: &str) -> bool {
    let slashed = word.trim().replace('\\', "/");
    let lower = slashed.to_lowercase();
    let core = lower.trim_end_matches(['/', '*', '.']);
    const PROFILE_VARS: &[&str] = &[
        "~",
        "$home",
        "${home}",
        "$env:userprofile",
        "${env:userprofile}",
        "$env:homedrive",
        "$env:homepath",
        "$env:systemdrive",
        "$env:systemroot",
        "$env:windir",
        "$env:programfiles",
        "${env:programfiles(x86)}",
        "$env:programdata",
    ];
    if PROFILE_VARS.contains(&core) {
        return true;
    }
    let bytes = core.as_bytes();
    let is_drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if is_drive {
        let rest = core.get(2..).unwrap_or_default().trim_start_matches('/');
        const WINDOWS_DIRS: &[&str] = &[
            "",
            "windows",
            "windows/system32",
            "users",
            "program files",
            "program files (x86)",
            "programdata",
        ];
        return WINDOWS_DIRS.contains(&rest);
    }
    critical_path(&slashed).is_some()
}

/// The words a shell's brace expansion makes of `word` (`/{usr,etc}` is `/usr` and `/etc`);
/// `word` itself when it has none. Bounded: at most 64 words.
pub fn brace_expansions(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(word, &mut out);
    if out.is_empty() {
        out.push(word.to_owned());
    }
    out
}

fn expand_into(word: &str, out: &mut Vec<String>) {
    const MAX: usize = 64;
    if out.len() >= MAX {
        return;
    }
    // The first `{` not part of `${`, with its matching `}` and top-level commas.
    let bytes = word.as_bytes();
    let open = (0..bytes.len()).find(|&i| bytes[i] == b'{' && (i == 0 || bytes[i - 1] != b'$'));
    let Some(open) = open else {
        out.push(word.to_owned());
        return;
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            b',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let (Some(close), false) = (close, commas.is_empty()) else {
        out.push(word.to_owned());
        return;
    };
    let (head, tail) = (&word[..open], &word[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain(std::iter::once(close)) {
        expand_into(&format!("{head}{}{tail}", &word[start..end]), out);
        start = end + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_paths() {
        for p in [
            "/",
            "//",
            "/*",
            "/.",
            "~",
            "~/",
            "~/*",
            "$HOME",
            "${HOME}/",
            "/usr",
            "/etc/",
            "/var/*",
            "/tmp/..",
            "~/..",
            "/usr/local",
            "/home/*",
            "~/.[a-z]*",
            "~/.[!.]*",
            "~/.??*",
            "$HOME/.[A-Za-z0-9]*",
            "/[a-z]*",
            "~/[[:alpha:]]*",
        ] {
            assert!(critical_path(p).is_some(), "{p}");
        }
        for p in [
            "/tmp/foo",
            "./build",
            "build",
            "$HOME/.cache/foo",
            "~/project/target",
            "$HOMEDIR",
            "/usr/local/lib/node_modules/x",
            "/var/tmp/x",
            "$DIR/",
            "/tmp",
            "/tmp/*",
            "~/.cache/foo",
            "~/*.log",
            "~/.*rc",
            "~/.??",
            "~/[ab]*",
            "~/.config/*",
        ] {
            assert!(critical_path(p).is_none(), "{p}");
        }
    }

    #[test]
    fn block_devices() {
        for p in [
            "/dev/sda",
            "/dev/sdb1",
            "/dev/nvme0n1",
            "/dev/mmcblk0p1",
            "/dev/disk2",
            "/dev/xvda",
            "/dev/vda",
            "/dev/hda",
            "/dev/mapper/vg-root",
            "/dev/disk/by-id/x",
        ] {
            assert!(is_block_device(p), "{p}");
        }
        for p in [
            "/dev/null",
            "/dev/zero",
            "/dev/stdout",
            "/dev/shm/x",
            "/dev/tty",
            "sda",
        ] {
            assert!(!is_block_device(p), "{p}");
        }
    }

    #[test]
    fn windows_paths() {
        for p in [
            "C:\\",
            "C:",
            "c:/",
            "C:\\*",
            "$env:USERPROFILE",
            "~",
            "C:\\Windows",
            "/",
        ] {
            assert!(windows_critical(p), "{p}");
        }
        for p in ["C:\\temp\\x", ".\\build", "node_modules"] {
            assert!(!windows_critical(p), "{p}");
        }
    }
}
