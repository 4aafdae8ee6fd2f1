//! `agentty view`: the web view opened logged in, in one step. It reads a token of the token
//! file (the user can read it), asks the server for a one-time login code (`POST /view/code`,
//! the token as a bearer), and opens the page at `/#code=…`, which trades the code for a key
//! it keeps in its memory only. No token or key ever goes in an address: a code there is dead
//! once used, or a minute after it was made.
//!
//! Nor does the code go on a command line: every process of the user can read another's
//! (`/proc/PID/cmdline`), where the server runs without PID namespaces another caller's
//! confined commands too, and one of them took the code from the browser's arguments while the
//! browser started and logged in first, with a key to that caller's view for 12 hours (review
//! 36, H2). So the browser is handed a page in the state dir, which confined commands cannot
//! read, that leads to the address ([`lead_page`]), as Jupyter opens its own.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Bytes;

/// The address of the view's page logged in as caller `caller` (or the token file's first),
/// for the server at `url` (`http://host:port`).
pub fn address(url: &str, token_file: &Path, caller: Option<&str>) -> Result<String> {
    let callers = super::token::read(token_file)?;
    let token = callers.token_of(caller).ok_or_else(|| match caller {
        Some(name) => anyhow!("no caller named {name} in {}", token_file.display()),
        None => anyhow!("{} holds no token", token_file.display()),
    })?;
    let base = url.trim_end_matches('/');
    let authority = base
        .strip_prefix("http://")
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .ok_or_else(|| anyhow!("the view's address is http://HOST:PORT, not {url}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let code = runtime.block_on(ask_code(authority, token))?;
    Ok(format!("{base}/#code={code}"))
}

/// `POST /view/code` at `authority`: the code in the answer.
async fn ask_code(authority: &str, token: &str) -> Result<String> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .with_context(|| {
            format!(
                "no agentty view answers at {authority} (`serve --view [ADDR]` serves it at ADDR, \
                 127.0.0.1:7338 unless told, and `serve --http ADDR` at ADDR: give that address \
                 with --url http://ADDR)"
            )
        })?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = Request::post("/view/code")
        .header(hyper::header::HOST, authority)
        .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))?;
    let answer = sender.send_request(request).await?;
    let status = answer.status();
    let body = answer.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!(
            "the view at {authority} refused: {} {}",
            status.as_u16(),
            String::from_utf8_lossy(&body).trim()
        );
    }
    let answer: serde_json::Value = serde_json::from_slice(&body)?;
    answer["code"]
        .as_str()
        .map(ToOwned::to_owned)
        .ok_or_else(|| anyhow!("the view at {authority} gave no code"))
}

/// Where the pages that lead to the view go, in the state dir.
pub(crate) const LEAD_PAGES: &str = "view-logins";

/// A page that led to the view is removed by the next `agentty view` after this long: its code
/// is dead a minute after it was made.
const LEAD_PAGE_KEPT: Duration = Duration::from_secs(120);

/// The directory of `state_dir` the pages that lead to the view go in, made (private) if it is
/// not there: a serving process covers it from confined commands where Landlock cannot keep
/// them from reading it (review 41 H1: a job read a login code and took the view).
pub fn lead_pages_dir(state_dir: &Path) -> Result<PathBuf> {
    let dir = state_dir.join(LEAD_PAGES);
    super::private_dir(&dir)?;
    Ok(dir)
}

/// Writes a page that sends the browser to `address`, readable by the user only, in
/// `state_dir` (made private if it is not there); returns its path. Pages older than
/// [`LEAD_PAGE_KEPT`] go first.
pub fn lead_page(state_dir: &Path, address: &str) -> Result<PathBuf> {
    let dir = lead_pages_dir(state_dir)?;
    remove_old_pages(&dir);
    let path = dir.join(format!("view-{}.html", agentty_core::random::hex(16)));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(lead_html(address).as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The page: a redirect at once, and a link for a browser that does not follow it.
fn lead_html(address: &str) -> String {
    let escaped = address
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"refresh\" content=\"0;url={escaped}\">\n<title>agentty view</title>\n\
         <p><a href=\"{escaped}\">Open the agentty view</a></p>\n"
    )
}

fn remove_old_pages(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|made| now.duration_since(made).ok())
            .is_some_and(|age| age > LEAD_PAGE_KEPT);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
