//! `agentty view`: the web view opened logged in, in one step. It reads a token of the token
//! file (the user can read it), asks the server for a one-time login code (`POST /view/code`,
//! the token as a bearer), and opens the page at `/#code=…`, which trades the code for a key
//! it keeps in its memory only. No token or key ever goes in an address: a code there is dead
//! once used, or a minute after it was made.

use std::path::Path;

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
