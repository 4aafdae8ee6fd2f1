//! `agentty proxy-connect HOST PORT`: a tunnel through agentty's proxy on stdin and stdout, for
//! programs that take a command to reach a host (ssh's `ProxyCommand`, which git's ssh gets
//! through `GIT_SSH_COMMAND` in network `allowlist` and `ask`; docs/BEHAVIOUR.md §13). It runs
//! inside the sandbox: the proxy's address and the call's credentials come from
//! `AGENTTY_PROXY` (else `HTTPS_PROXY`), as any other client of the proxy gets them.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;

use anyhow::{Context, Result, bail};

/// Opens a tunnel to `host:port` and copies stdin to it and it to stdout until either ends.
pub fn run(host: &str, port: u16) -> Result<std::process::ExitCode> {
    let url = std::env::var("AGENTTY_PROXY")
        .or_else(|_| std::env::var("HTTPS_PROXY"))
        .context("no proxy: AGENTTY_PROXY and HTTPS_PROXY are unset (outside agentty's sandbox, connect directly)")?;
    let (credentials, address) =
        split_url(&url).context("AGENTTY_PROXY is not http://user:password@host:port")?;
    let mut proxy = TcpStream::connect(address)
        .with_context(|| format!("cannot reach agentty's proxy at {address}"))?;
    let _ = proxy.set_nodelay(true);
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let head = format!(
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nProxy-Authorization: Basic {}\r\n\r\n",
        base64(credentials.as_bytes())
    );
    proxy.write_all(head.as_bytes())?;
    let mut reader = BufReader::new(proxy.try_clone()?);
    let mut status = String::new();
    reader.read_line(&mut status)?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    if status.split_whitespace().nth(1) != Some("200") {
        let mut body = vec![0u8; length.min(8192)];
        let _ = reader.read_exact(&mut body);
        bail!(
            "{authority}: {} {}",
            status.trim(),
            String::from_utf8_lossy(&body).trim()
        );
    }
    // What the proxy sent past its head belongs to the tunnel.
    let early = reader.buffer().to_vec();
    std::io::stdout().write_all(&early)?;
    std::io::stdout().flush()?;
    let mut upstream = proxy.try_clone()?;
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut upstream);
        let _ = upstream.shutdown(std::net::Shutdown::Write);
    });
    let mut stdout = std::io::stdout().lock();
    let mut buffer = [0u8; 64 * 1024];
    loop {
        let n = proxy.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        stdout.write_all(&buffer[..n])?;
        stdout.flush()?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `user:password` and `host:port` of `http://user:password@host:port[/]`.
fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("http://")?;
    let (credentials, address) = rest.split_once('@')?;
    Some((credentials, address.trim_end_matches('/')))
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_and_urls() {
        assert_eq!(super::base64(b"agentty:abc123"), "YWdlbnR0eTphYmMxMjM=");
        assert_eq!(super::base64(b"hi"), "aGk=");
        assert_eq!(super::base64(b"hello"), "aGVsbG8=");
        assert_eq!(
            super::split_url("http://agentty:t@127.0.0.1:4000"),
            Some(("agentty:t", "127.0.0.1:4000"))
        );
        assert_eq!(super::split_url("https://x"), None);
    }
}
