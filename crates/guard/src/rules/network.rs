//! The `download-exec` rule: code fetched from the network run without being saved first.

use super::*;

/// Programs that fetch from the network to stdout.
pub(super) fn is_downloader(c: &SimpleCommand) -> bool {
    matches!(
        c.program.as_str(),
        "curl"
            | "wget"
            | "wget2"
            | "fetch"
            | "http"
            | "https"
            | "xh"
            | "lwp-request"
            | "iwr"
            | "irm"
            | "invoke-webrequest"
            | "invoke-restmethod"
    ) || mentions_webclient(&c.text)
}

pub(super) fn mentions_webclient(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.contains("downloadstring") || lower.contains("net.webclient")
}

/// Whether `text` contains a downloader invocation (for `$(curl …)`-style code arguments).
pub(super) fn mentions_download(text: &str) -> bool {
    mentions_webclient(text)
        || text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .any(|t| {
                matches!(
                    t.to_ascii_lowercase().as_str(),
                    "curl"
                        | "wget"
                        | "wget2"
                        | "fetch"
                        | "iwr"
                        | "irm"
                        | "invoke-webrequest"
                        | "invoke-restmethod"
                        | "lwp-request"
                        | "xh"
                )
            })
}

pub(super) fn download_exec(a: &Analysis) -> Option<String> {
    first(a, |c| {
        // `curl … | sh`: a later pipeline stage runs what an earlier one downloaded.
        if let Some((id, stage)) = c.pipeline
            && stage > 0
            && runs_stdin(c)
            && a.judged().any(|o| {
                o.pipeline.is_some_and(|(oid, os)| oid == id && os < stage)
                    && (is_downloader(o)
                        || o.inner
                            .iter()
                            .any(|&i| a.commands.get(i).is_some_and(is_downloader)))
            })
        {
            return true;
        }
        // `sh <(curl …)`, `python -c "$(curl …)"`, `iex (iwr …)`, and `$(curl …)` run as a command.
        let substituted = |w: &str| w.starts_with(['$', '<', '`', '(']) && mentions_download(w);
        if c.argv.first().is_some_and(|w| substituted(w)) {
            return true;
        }
        code_arg(c).is_some_and(substituted)
    })
}
