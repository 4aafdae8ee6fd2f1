//! PowerShell specifics: abbreviated, case-insensitive parameters (`-Rec` is `-Recurse`), the
//! `pwsh -Command` / `-EncodedCommand` entry points, and `Invoke-Expression` with a string.
//!
//! PowerShell text itself is cut into commands by `lex::segment` (there is no grammar for it
//! here); this module only decides where a PowerShell script starts and how to read its switches.

use crate::lex::Dialect;
use crate::peel::Peel;

/// PowerShell parameter match: `-Rec` matches `Recurse` (names may be abbreviated, any case).
pub fn ps_param_is(arg: &str, full: &str, min_len: usize) -> bool {
    let Some(name) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('/')) else {
        return false;
    };
    let name = name.split(':').next().unwrap_or(name);
    name.len() >= min_len
        && name.len() <= full.len()
        && full
            .get(..name.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(name))
}

/// `pwsh -Command …`, `powershell -EncodedCommand …`, `powershell 'script'`.
pub fn peel_pwsh(argv: &[String], program: &str) -> Peel {
    /// Parameters whose value is the next word.
    const VALUED: &[(&str, usize)] = &[
        ("ExecutionPolicy", 2),
        ("WindowStyle", 1),
        ("WorkingDirectory", 2),
        ("InputFormat", 2),
        ("OutputFormat", 1),
        ("ConfigurationName", 6),
        ("Version", 1),
        ("PSConsoleFile", 3),
        ("SettingsFile", 2),
        ("CustomPipeName", 2),
    ];
    let mut i = 1;
    while let Some(arg) = argv.get(i) {
        let script = |from: usize| Peel::Script {
            wrapper: format!("{program} -Command"),
            script: argv.get(from..).unwrap_or_default().join(" "),
            dialect: Dialect::PowerShell,
        };
        if !(arg.starts_with('-') || arg.starts_with('/')) || arg == "-" {
            // A bare first argument is a command for Windows PowerShell, a script file for pwsh.
            return if program == "powershell" {
                script(i)
            } else {
                Peel::Done
            };
        }
        if ps_param_is(arg, "Command", 1) {
            return script(i + 1);
        }
        if ps_param_is(arg, "EncodedCommand", 1) || ps_param_is(arg, "ec", 2) {
            return match argv.get(i + 1).and_then(|b| decode_encoded_command(b)) {
                Some(script) => Peel::Script {
                    wrapper: format!("{program} -EncodedCommand"),
                    script,
                    dialect: Dialect::PowerShell,
                },
                None => Peel::Done,
            };
        }
        if ps_param_is(arg, "File", 1) {
            return Peel::Done;
        }
        if VALUED.iter().any(|&(p, min)| ps_param_is(arg, p, min)) {
            i += 1;
        }
        i += 1;
    }
    Peel::Done
}

/// Peels PowerShell-only wrappers: the call operator `& cmd` and `iex 'string'`.
pub fn peel_powershell(argv: &[String], program: &str) -> Option<Peel> {
    match program {
        "&" | "." => Some(Peel::Command {
            wrapper: program.to_string(),
            argv: argv.get(1..).unwrap_or_default().to_vec(),
        }),
        "iex" | "invoke-expression" => {
            let rest: Vec<&String> = argv
                .iter()
                .skip(1)
                .filter(|a| !ps_param_is(a, "Command", 1))
                .collect();
            // `iex (iwr …)` evaluates a download; leave it for the download rule to see.
            let dynamic = rest
                .iter()
                .any(|a| a.starts_with(['(', '$', '@', '{']) || a.contains("$("));
            if rest.is_empty() || dynamic {
                return None;
            }
            Some(Peel::Script {
                wrapper: "Invoke-Expression".to_string(),
                script: rest
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                dialect: Dialect::PowerShell,
            })
        }
        _ => None,
    }
}

/// Decodes `-EncodedCommand`'s base64 of UTF-16LE text.
fn decode_encoded_command(b64: &str) -> Option<String> {
    let bytes = base64_decode(b64)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// A small standard-alphabet base64 decoder (padding optional); `None` on a foreign character.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' | b'\n' | b'\r' | b' ' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_command() {
        // "rm" in UTF-16LE = 72 00 6d 00 → base64 cgBtAA==
        assert_eq!(decode_encoded_command("cgBtAA==").as_deref(), Some("rm"));
    }
}
