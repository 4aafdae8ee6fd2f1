//! The proxy confined commands reach the listed hosts through (network `allowlist` and `ask`,
//! docs/BEHAVIOUR.md §13): HTTP/1.1 on 127.0.0.1 at a port the kernel picks, for `CONNECT
//! host:port` tunnels (HTTPS, and anything `agentty proxy-connect` carries: git over ssh) and
//! plain `http://` requests in absolute form, each forwarded on a connection of its own with
//! `Connection: close`, the only request of its connection (`framing.rs`: its body, then
//! nothing; a cleartext request inside a tunnel the same, with the tunnel's `Host`). It
//! resolves names itself, so commands need no DNS.
//!
//! Every request carries its call's credentials (`Proxy-Authorization: Basic`, from the proxy
//! URL in the command's environment): another process of the machine cannot use the proxy,
//! and each connection is the call's, for the refusal in its result and the log. Without them
//! the answer is 407, and nothing is looked up. A refusal is 403 with the reason as its body
//! (what `curl -v` or a package manager's error shows); the call's result says it too.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::{CallNet, Choice, Egress, Target, Unreach, Why, framing};

/// A request's head larger than this is refused (400).
const HEAD_MAX_BYTES: usize = 16 * 1024;
/// How long a client has to send its request's head.
const HEAD_WAIT: Duration = Duration::from_secs(30);
/// How long a name may take to resolve, and the upstream connection to be made.
const RESOLVE_WAIT: Duration = Duration::from_secs(10);
const CONNECT_WAIT: Duration = Duration::from_secs(15);
/// The buffer one direction of a tunnel starts with, and the most it grows to.
const RELAY_BYTES_FIRST: usize = 64 * 1024;
const RELAY_BYTES_MAX: usize = 1024 * 1024;

/// Binds the proxy on 127.0.0.1 and serves it on the current runtime; its address.
pub(super) fn start(egress: Arc<Egress>) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    listener.set_nonblocking(true)?;
    let at = listener.local_addr()?;
    let listener = TcpListener::from_std(listener)?;
    let unread = Arc::new(Mutex::new(Unread::default()));
    let most = unread_most();
    let open = Arc::new(Open::new(open_most()));
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let egress = Arc::clone(&egress);
                    let admitted = Admitted::new(&unread, most);
                    let open = Arc::clone(&open);
                    tokio::spawn(async move {
                        let _ = stream.set_nodelay(true);
                        serve(stream, &egress, admitted, &open).await;
                    });
                }
                // Out of fds, most often: let some close.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    Ok(at)
}

/// The connections whose request is not read yet, oldest first, each with what closes it.
#[derive(Default)]
struct Unread {
    next: u64,
    open: VecDeque<(u64, CancellationToken)>,
}

/// A connection counted among the unread ones until dropped (its request read, or not).
struct Admitted {
    id: u64,
    closed: CancellationToken,
    unread: Arc<Mutex<Unread>>,
}

impl Admitted {
    /// Counts a new connection, closing the oldest unread one when `most` are open: each holds
    /// one of the server's descriptors for up to [`HEAD_WAIT`], and a command holding a
    /// thousand idle ones open ran the whole server out of them (every caller's requests
    /// failed). A client sends its request at once, so a flood of idle ones closes its own.
    fn new(unread: &Arc<Mutex<Unread>>, most: usize) -> Admitted {
        let closed = CancellationToken::new();
        let mut open = unread.lock().unwrap_or_else(PoisonError::into_inner);
        while open.open.len() >= most {
            if let Some((_, oldest)) = open.open.pop_front() {
                oldest.cancel();
            }
        }
        let id = open.next;
        open.next += 1;
        open.open.push_back((id, closed.clone()));
        Admitted {
            id,
            closed,
            unread: Arc::clone(unread),
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = open.open.iter().position(|(id, _)| *id == self.id) {
            open.open.remove(at);
        }
    }
}

/// How many connections may wait unread: an eighth of the descriptors the process may hold,
/// between 16 and 512.
fn unread_most() -> usize {
    (agentty_core::limits::descriptors_most() / 8).clamp(16, 512)
}

/// How many requests may be open at once past their head (being decided, connecting, or a
/// tunnel relayed), each holding two of the server's descriptors and, relayed, two threads: a
/// sixteenth of the descriptors, between 8 and 256. One HTTP caller may hold half of them.
fn open_most() -> usize {
    (agentty_core::limits::descriptors_most() / 16).clamp(8, 256)
}

/// The requests open past their head, in all and by caller (`None`: stdio's one). Tunnels have
/// no idle end (a download may pause for minutes), so what bounds them is a count: held open
/// without one, a caller's command ran the server out of descriptors for every caller.
struct Open {
    most: usize,
    counts: Mutex<(usize, HashMap<Option<String>, usize>)>,
}

/// One open request's place, given back when dropped (its tunnel's last thread ended).
struct OpenSlot {
    open: Arc<Open>,
    caller: Option<String>,
}

impl Open {
    fn new(most: usize) -> Open {
        Open {
            most,
            counts: Mutex::new((0, HashMap::new())),
        }
    }

    /// A place for a request of `caller`, if one is left: of all, and of the half one HTTP
    /// caller may hold.
    fn take(self: &Arc<Open>, caller: Option<&str>) -> Option<OpenSlot> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let (all, by_caller) = &mut *counts;
        let mine = by_caller.entry(caller.map(str::to_owned)).or_default();
        let own_most = if caller.is_some() {
            (self.most / 2).max(1)
        } else {
            self.most
        };
        if *all >= self.most || *mine >= own_most {
            return None;
        }
        *all += 1;
        *mine += 1;
        Some(OpenSlot {
            open: Arc::clone(self),
            caller: caller.map(str::to_owned),
        })
    }
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        let mut counts = self
            .open
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (all, by_caller) = &mut *counts;
        *all = all.saturating_sub(1);
        if let Some(mine) = by_caller.get_mut(&self.caller) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                by_caller.remove(&self.caller);
            }
        }
    }
}

/// What a client asked for.
struct Ask {
    target: Target,
    /// For CONNECT, the authority as asked (the `Host` a cleartext request in the tunnel
    /// gets); else the request's head rewritten for the origin server, and its body's framing.
    way: Way,
    /// Bytes read past the head (a request body's start, or a TLS hello sent early).
    early: Vec<u8>,
    token: Option<String>,
}

/// What goes from the client to the origin once it is connected.
enum Way {
    Tunnel { authority: String },
    Forward { head: Vec<u8>, body: framing::Body },
}

async fn serve(mut client: TcpStream, egress: &Egress, admitted: Admitted, open: &Arc<Open>) {
    let asked = tokio::select! {
        asked = tokio::time::timeout(HEAD_WAIT, read_request(&mut client)) => Some(asked),
        () = admitted.closed.cancelled() => None,
    };
    drop(admitted);
    // Who this connection was made for, as the supervisor told before the command could send
    // anything: taken whatever came, so that no note outlives its connection.
    let peer = client
        .peer_addr()
        .ok()
        .and_then(|from| egress.peer_from(from));
    // Closed for a newer connection while it sent nothing.
    let Some(asked) = asked else {
        return;
    };
    let asked = match asked {
        Ok(Ok(asked)) => asked,
        Ok(Err(reason)) => {
            let _ = reply(&mut client, 400, "Bad Request", &[], reason).await;
            return;
        }
        Err(_) => return,
    };
    let Some(call) = asked.token.as_deref().and_then(|t| egress.by_token(t)) else {
        let _ = reply(
            &mut client,
            407,
            "Proxy Authentication Required",
            &["Proxy-Authenticate: Basic realm=\"agentty\""],
            crate::network::notice::PROXY_NO_CREDENTIALS,
        )
        .await;
        return;
    };
    if !egress.may_use(peer.as_ref(), &call) {
        egress.note(
            peer.as_ref().and_then(|peer| peer.call.as_deref()),
            &asked.target,
            Err(Why::OthersCredentials),
        );
        let _ = reply(
            &mut client,
            407,
            "Proxy Authentication Required",
            &["Proxy-Authenticate: Basic realm=\"agentty\""],
            crate::network::notice::PROXY_OTHERS_CREDENTIALS,
        )
        .await;
        return;
    }
    let Some(slot) = open.take(call.caller.as_deref()) else {
        let _ = reply(
            &mut client,
            503,
            "Service Unavailable",
            &[],
            crate::network::notice::PROXY_TOO_MANY_OPEN,
        )
        .await;
        return;
    };
    let addresses = match decide(egress, &call, &asked.target).await {
        Ok((addresses, rule)) => {
            egress.note(Some(&call), &asked.target, Ok(rule));
            addresses
        }
        Err(Refused::Policy(why)) => {
            let body = crate::network::notice::network_refused_body(&asked.target, &why);
            egress.note(Some(&call), &asked.target, Err(why));
            let _ = reply(
                &mut client,
                403,
                "Forbidden",
                &["X-Agentty-Error: 2010"],
                &body,
            )
            .await;
            return;
        }
        Err(Refused::Unresolved { rule }) => {
            egress.note(Some(&call), &asked.target, Ok(rule));
            egress.note_unreached(&call, &asked.target, Unreach::Unresolved);
            let body = crate::network::notice::proxy_unresolved(&asked.target);
            let _ = reply(&mut client, 502, "Bad Gateway", &[], &body).await;
            return;
        }
    };
    let mut upstream = match connect(&addresses).await {
        Ok(upstream) => upstream,
        Err(failed) => {
            egress.note_unreached(&call, &asked.target, Unreach::Connect(failed));
            let body = crate::network::notice::proxy_unreachable(&asked.target);
            let _ = reply(&mut client, 502, "Bad Gateway", &[], &body).await;
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    let outgoing = match asked.way {
        Way::Tunnel { authority } => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            Outgoing::Tunnel { authority }
        }
        Way::Forward { head, body } => {
            if upstream.write_all(&head).await.is_err() {
                return;
            }
            Outgoing::Body(framing::BodyEnd::new(body))
        }
    };
    relay(client, upstream, slot, (asked.early, outgoing));
}

/// Relays a tunnel both ways, each way on a blocking thread of its own copying through a
/// buffer that grows while reads fill it (64 KiB to 1 MiB): a thread that wakes late takes all
/// that came meanwhile in one read. A 100 MB loopback download on a loaded 2-CPU machine, `curl`'s
/// own time against `curl` unconfined in the same run (docs/BEHAVIOUR.md §13): 1.25-1.51x, where
/// `splice(2)` through a pipe each way (the bytes never in user space) was 1.73-1.93x, fixed
/// 256 KiB buffers worse than 1 MiB, and tokio's `copy_bidirectional` 2.63x. The threads are
/// detached: a tunnel left open holds two sleeping threads and never delays the server's exit.
/// Both share the two sockets (two descriptors a tunnel) and its `slot`, given back when the
/// last ends.
fn relay(
    client: TcpStream,
    upstream: TcpStream,
    slot: OpenSlot,
    (early, outgoing): (Vec<u8>, Outgoing),
) {
    let (Ok(client), Ok(upstream)) = (client.into_std(), upstream.into_std()) else {
        return;
    };
    if client.set_nonblocking(false).is_err() || upstream.set_nonblocking(false).is_err() {
        return;
    }
    let (client, upstream, slot) = (Arc::new(client), Arc::new(upstream), Arc::new(slot));
    let ways = [
        (
            Arc::clone(&client),
            Arc::clone(&upstream),
            Some((early, outgoing)),
        ),
        (upstream, client, None),
    ];
    for (from, to, outgoing) in ways {
        let slot = Arc::clone(&slot);
        let spawned = std::thread::Builder::new()
            .name("agentty-relay".into())
            .spawn(move || {
                pump(&from, &to, outgoing);
                drop(slot);
            });
        if spawned.is_err() {
            return;
        }
    }
}

/// What of the client's bytes goes to the origin: a tunnel's, unless it carries a cleartext
/// HTTP request (then that one request, its `Host` the tunnel's); a forwarded request's body.
enum Outgoing {
    Tunnel { authority: String },
    Body(framing::BodyEnd),
}

/// One direction of a tunnel until its end: then the other side is told (a half close), or,
/// on an error, the tunnel is closed both ways. The client's direction (`outgoing`: what it
/// sent with its request's head, and what of the rest goes on) is [`client_to_origin`].
fn pump(
    from: &std::net::TcpStream,
    to: &std::net::TcpStream,
    outgoing: Option<(Vec<u8>, Outgoing)>,
) {
    use std::net::Shutdown;
    let copied = match outgoing {
        Some((early, outgoing)) => client_to_origin(from, to, early, outgoing),
        None => copy_all(from, to),
    };
    if copied.is_ok() {
        let _ = to.shutdown(Shutdown::Write);
    } else {
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    }
}

/// The client's bytes to the origin (`early`: read with the request's head). A tunnel whose
/// first bytes are not a cleartext HTTP request (TLS, SSH) is copied whole. A cleartext request,
/// in a tunnel or forwarded, goes on with its body only, and what follows is read and dropped
/// (see `framing.rs`); a request in a tunnel first gets the tunnel's `Host` as a forwarded one
/// gets its URL's. A malformed one ends the connection (the error).
fn client_to_origin(
    mut from: &std::net::TcpStream,
    mut to: &std::net::TcpStream,
    mut pending: Vec<u8>,
    outgoing: Outgoing,
) -> std::io::Result<()> {
    use std::io::{Read as _, Write as _};
    let refused = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut chunk = vec![0u8; RELAY_BYTES_FIRST];
    // Reads more of the client's bytes onto `pending`; false at their end.
    let mut read_more = |pending: &mut Vec<u8>| -> std::io::Result<bool> {
        loop {
            match from.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(got) => {
                    pending.extend_from_slice(&chunk[..got]);
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    };
    let mut end = match outgoing {
        Outgoing::Body(end) => end,
        Outgoing::Tunnel { authority } => {
            let http = loop {
                match framing::starts_http_request(&pending) {
                    Some(http) => break http,
                    None if read_more(&mut pending)? => {}
                    None => break false,
                }
            };
            if !http {
                to.write_all(&pending)?;
                return copy_all(from, to);
            }
            // Empty lines before a request line are skipped, as a server skips them.
            let blank = pending
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(pending.len());
            pending.drain(..blank);
            let head_end = loop {
                if let Some(at) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    break at + 4;
                }
                if pending.len() > HEAD_MAX_BYTES || !read_more(&mut pending)? {
                    return Err(refused("an unfinished request head in a tunnel"));
                }
            };
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut request = httparse::Request::new(&mut headers);
            if !matches!(
                request.parse(&pending[..head_end]),
                Ok(httparse::Status::Complete(_))
            ) {
                return Err(refused("not an HTTP/1 request in a tunnel"));
            }
            let (Some(method), Some(target)) = (request.method, request.path) else {
                return Err(refused("no method or target"));
            };
            let path = origin_form(target).ok_or_else(|| refused("no path in the target"))?;
            let body = framing::framing(request.headers).map_err(refused)?;
            let head = head_for_origin(method, &path, &authority, request.headers);
            to.write_all(&head)?;
            pending.drain(..head_end);
            framing::BodyEnd::new(body)
        }
    };
    loop {
        let taken = end.take(&pending).map_err(refused)?;
        to.write_all(&pending[..taken])?;
        pending.clear();
        if end.done() {
            break;
        }
        if !read_more(&mut pending)? {
            return Ok(());
        }
    }
    // What follows the request (another one pipelined) is not the origin's.
    while read_more(&mut pending)? {
        pending.clear();
    }
    Ok(())
}

/// The path of a request target, as an origin is sent it: origin form as it is, absolute form
/// as [`split_absolute`] gives it (an origin must ignore `Host` for one in absolute form);
/// `None` for the others (`*`, authority form).
fn origin_form(target: &str) -> Option<std::borrow::Cow<'_, str>> {
    if target.starts_with('/') {
        return Some(target.into());
    }
    split_absolute(target).map(|(_, path)| path)
}

/// A target in absolute form (`scheme://authority/path?query#fragment`) split into its
/// authority and what an origin is sent: the path and query in origin form (`/` for an empty
/// path: `http://host?x` is `/?x`), the fragment left out (a client never sends one).
fn split_absolute(target: &str) -> Option<(&str, std::borrow::Cow<'_, str>)> {
    let rest = &target[target.find("://")? + 3..];
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let tail = &tail[..tail.find('#').unwrap_or(tail.len())];
    let path = if tail.starts_with('/') {
        tail.into()
    } else {
        format!("/{tail}").into()
    };
    Some((authority, path))
}

/// Moves everything `from` sends to `to`, until `from` ends.
fn copy_all(mut from: &std::net::TcpStream, mut to: &std::net::TcpStream) -> std::io::Result<()> {
    use std::io::{Read as _, Write as _};
    let mut buffer = vec![0u8; RELAY_BYTES_FIRST];
    loop {
        let got = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buffer[..got])?;
        if got == buffer.len() && buffer.len() < RELAY_BYTES_MAX {
            // A fresh zeroed allocation: its pages are mapped as reads reach them.
            buffer = vec![0u8; buffer.len() * 2];
        }
    }
}

/// Why a target is not connected to.
enum Refused {
    Policy(Why),
    /// The name (allowed by `rule`) does not resolve: not a refusal; the program says it,
    /// and the result's note says why.
    Unresolved {
        rule: String,
    },
}

/// Whether `call` may reach `target`: the addresses to try and the rule that allows it.
async fn decide(
    egress: &Egress,
    call: &Arc<CallNet>,
    target: &Target,
) -> Result<(Vec<SocketAddr>, String), Refused> {
    let loopback_name = target.host == "localhost" || target.host.ends_with(".localhost");
    let literal = target.host.parse::<IpAddr>().ok();
    let literal = literal.or(loopback_name.then_some(IpAddr::from([127, 0, 0, 1])));
    if let Some(ip) = literal {
        let at = vec![SocketAddr::new(ip, target.port)];
        if super::address::reaches_loopback(ip) {
            return if !egress.loopback {
                Err(Refused::Policy(Why::LoopbackClosed))
            } else if target.port == 53 {
                Err(Refused::Policy(Why::LocalDns))
            } else if egress.proxy.get().map(SocketAddr::port) == Some(target.port) {
                // Through the proxy to itself: a connection the supervisor never made.
                Err(Refused::Policy(Why::ProxyItself))
            } else {
                Ok((at, "loopback".to_owned()))
            };
        }
        if let Some(rule) = egress.list.address_rule(ip, target.port) {
            return Ok((at, rule.named()));
        }
        // The user allowing an address is allowing it as an address.
        return unlisted(egress, call, target).await.map(|rule| (at, rule));
    }
    let rule = match egress.list.name_rule(&target.host, target.port) {
        Some(rule) => rule.named(),
        None => unlisted(egress, call, target).await?,
    };
    let resolved = tokio::time::timeout(
        RESOLVE_WAIT,
        tokio::net::lookup_host((target.host.as_str(), target.port)),
    )
    .await
    .ok()
    .and_then(Result::ok)
    .map(Iterator::collect::<Vec<SocketAddr>>)
    .unwrap_or_default();
    if resolved.is_empty() {
        return Err(Refused::Unresolved { rule });
    }
    // An inside address only where the list names that address.
    let mut inside = None;
    let outside: Vec<SocketAddr> = resolved
        .into_iter()
        .filter(|at| match super::address::inside(at.ip()) {
            None => true,
            Some(kind) => {
                let listed = egress.list.address_rule(at.ip(), at.port()).is_some();
                if !listed && inside.is_none() {
                    inside = Some((kind, at.ip().to_canonical()));
                }
                listed
            }
        })
        .collect();
    match (outside.is_empty(), inside) {
        (true, Some((kind, ip))) => Err(Refused::Policy(Why::Inside { kind, ip })),
        _ => Ok((outside, rule)),
    }
}

/// A host not on the list: approved already, asked now, or refused.
async fn unlisted(
    egress: &Egress,
    call: &Arc<CallNet>,
    target: &Target,
) -> Result<String, Refused> {
    use super::Asked;
    use super::notice as words;
    if call
        .once
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .contains(target)
    {
        return Ok(words::APPROVED_ONCE.to_owned());
    }
    if egress.approved_for(&call.session, target) {
        return Ok(words::APPROVED_FOR_SESSION.to_owned());
    }
    let refused = |asked| Err(Refused::Policy(Why::NotListed { asked }));
    if egress.mode != agentty_sandbox::Network::Ask {
        return refused(Asked::Never);
    }
    if call.asker.is_none() {
        return refused(if call.ask_later {
            Asked::Later
        } else {
            Asked::CannotAsk
        });
    }
    match egress.ask(call, target).await {
        Some(Choice::Once) => {
            call.once
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(target.clone());
            Ok(words::APPROVED_ONCE.to_owned())
        }
        Some(Choice::Session) => {
            egress.approve_for_session(&call.session, std::slice::from_ref(target));
            Ok(words::APPROVED_FOR_SESSION.to_owned())
        }
        Some(Choice::Deny) => Err(Refused::Policy(Why::Declined)),
        None => refused(Asked::Unanswered),
    }
}

/// A connection to the first of `addresses` that takes one, or the last attempt's error.
async fn connect(addresses: &[SocketAddr]) -> Result<TcpStream, std::io::ErrorKind> {
    let each = CONNECT_WAIT / u32::try_from(addresses.len().max(1)).unwrap_or(1);
    let mut failed = std::io::ErrorKind::AddrNotAvailable;
    for at in addresses {
        match tokio::time::timeout(each.max(Duration::from_secs(3)), TcpStream::connect(at)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => failed = e.kind(),
            Err(_) => failed = std::io::ErrorKind::TimedOut,
        }
    }
    Err(failed)
}

async fn reply(
    client: &mut TcpStream,
    code: u16,
    reason: &str,
    headers: &[&str],
    body: &str,
) -> std::io::Result<()> {
    let mut out = format!("HTTP/1.1 {code} {reason}\r\n");
    for header in headers {
        out.push_str(header);
        out.push_str("\r\n");
    }
    out.push_str(&format!(
        "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    client.write_all(out.as_bytes()).await?;
    client.shutdown().await
}

/// Reads and parses a request's head; the error is the 400's body.
async fn read_request(client: &mut TcpStream) -> Result<Ask, &'static str> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = client.read(&mut chunk).await.map_err(|_| "read failed")?;
        if n == 0 {
            return Err("the request ended before its head did");
        }
        let from = buffer.len().saturating_sub(3);
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            break from + at + 4;
        }
        if buffer.len() > HEAD_MAX_BYTES {
            return Err("the request's head is too large");
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(&buffer[..end]) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("not an HTTP/1 request"),
    }
    let method = request.method.ok_or("no method")?;
    let uri = request.path.ok_or("no target")?;
    let token = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .and_then(token_of);
    let early = buffer[end..].to_vec();
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = authority(uri, None).ok_or("CONNECT needs host:port")?;
        return Ok(Ask {
            target,
            way: Way::Tunnel {
                authority: uri.to_owned(),
            },
            early,
            token,
        });
    }
    let body = framing::framing(request.headers)?;
    let (host, path) = uri
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .and_then(|_| split_absolute(uri))
        .ok_or("only CONNECT and absolute http:// requests are proxied (https goes by CONNECT)")?;
    let target = authority(host, Some(80)).ok_or("no valid host in the URL")?;
    Ok(Ask {
        way: Way::Forward {
            head: head_for_origin(method, &path, host, request.headers),
            body,
        },
        target,
        early,
        token,
    })
}

/// The head sent to the origin server: origin-form, its `Host` the URL's authority, which was
/// judged (RFC 9112 §3.2.2: a proxy replaces the `Host` it got; passed on, another one would
/// let a command reach any site sharing a listed name's servers, a CDN's), without the proxy's
/// headers, hop-by-hop ones and those a server behind a proxy may pick the site by
/// (`Forwarded`, `X-Forwarded-Host`, …), and `Connection: close` (one request per connection, so each is
/// judged).
fn head_for_origin(
    method: &str,
    path: &str,
    host: &str,
    headers: &[httparse::Header<'_>],
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n").into_bytes();
    for header in headers {
        let dropped = [
            "host",
            "proxy-authorization",
            "proxy-connection",
            "connection",
            "keep-alive",
            // What a server behind a proxy may pick the site by instead of `Host`: only a
            // proxy sets them, and this one judged the host.
            "forwarded",
            "x-forwarded-host",
            "x-forwarded-server",
            "x-host",
            "x-original-host",
        ]
        .iter()
        .any(|name| header.name.eq_ignore_ascii_case(name));
        if !dropped {
            head.extend_from_slice(header.name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(header.value);
            head.extend_from_slice(b"\r\n");
        }
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head
}

/// `host:port` (or `[v6]:port`, or a host alone with `default_port`), checked.
fn authority(text: &str, default_port: Option<u16>) -> Option<Target> {
    if text.contains('@') {
        return None;
    }
    // Digits only (`u16`'s own parse takes a sign: `+8080`).
    let port_of = |text: &str| {
        text.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| text.parse::<u16>().ok())
            .flatten()
    };
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        match after.strip_prefix(':') {
            Some(port) => (host.to_owned(), port_of(port)?),
            None if after.is_empty() => (host.to_owned(), default_port?),
            None => return None,
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), port_of(port)?),
            None => (text.to_owned(), default_port?),
        }
    };
    if port == 0 {
        return None;
    }
    let host = super::list::normal_name(&host);
    let valid = host.parse::<IpAddr>().is_ok()
        || (!host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }));
    valid.then_some(Target { host, port })
}

/// The call's token from a `Basic` proxy authorization (`agentty:<token>`).
fn token_of(value: &str) -> Option<String> {
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64_decode(encoded.trim())?;
    let text = String::from_utf8(decoded).ok()?;
    let (_, token) = text.split_once(':')?;
    Some(token.to_owned())
}

/// Standard base64 (padding optional); `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let text = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut bits = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            bits |= value(c)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        match chunk.len() {
            4 => out.extend_from_slice(&bytes[1..4]),
            3 => out.extend_from_slice(&bytes[1..3]),
            2 => out.push(bytes[1]),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_are_read_and_checked() {
        let t = |h: &str, p| {
            Some(Target {
                host: h.to_owned(),
                port: p,
            })
        };
        assert_eq!(authority("Example.COM:443", None), t("example.com", 443));
        assert_eq!(authority("example.com", Some(80)), t("example.com", 80));
        assert_eq!(authority("[::1]:8080", None), t("::1", 8080));
        assert_eq!(authority("10.0.0.1:22", None), t("10.0.0.1", 22));
        for bad in [
            "example.com",
            "user@example.com:443",
            "ex ample.com:443",
            ":443",
            "a.com:0",
            "a.com:x",
            "a.com:+8080",
            "[::1]:+8080",
            "a.com:",
            "[::1",
            "a..b:1",
        ] {
            assert_eq!(authority(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn basic_credentials_give_the_token() {
        // base64("agentty:abc123")
        assert_eq!(
            token_of("Basic YWdlbnR0eTphYmMxMjM="),
            Some("abc123".to_owned())
        );
        assert_eq!(
            token_of("basic YWdlbnR0eTphYmMxMjM"),
            Some("abc123".to_owned())
        );
        assert_eq!(token_of("Bearer YWdlbnR0eTphYmMxMjM="), None);
        assert_eq!(token_of("Basic !!!"), None);
        assert_eq!(base64_decode("aGk="), Some(b"hi".to_vec()));
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
    }

    #[test]
    fn the_origin_sees_no_proxy_header_and_one_request() {
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut request = httparse::Request::new(&mut headers);
        let raw = b"GET http://h/x HTTP/1.1\r\nHost: h\r\nProxy-Authorization: Basic abc\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n";
        request.parse(raw).unwrap();
        let head = String::from_utf8(head_for_origin("GET", "/x", "h", request.headers)).unwrap();
        assert_eq!(
            head,
            "GET /x HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    /// The origin is told the host that was judged, whatever `Host` (one, several, none, in
    /// any case) the command sent.
    #[test]
    fn the_origin_sees_the_judged_host_only() {
        for sent in [
            "Host: attacker.example\r\n",
            "host: attacker.example\r\nHOST: other.example\r\n",
            // Headers by which servers behind a proxy pick the site, as a host would.
            "X-Forwarded-Host: attacker.example\r\nForwarded: host=attacker.example\r\n",
            "X-Host: attacker.example\r\nX-Original-Host: a.example\r\nX-Forwarded-Server: a\r\n",
            "",
        ] {
            let mut headers = [httparse::EMPTY_HEADER; 8];
            let mut request = httparse::Request::new(&mut headers);
            let raw = format!("GET http://pypi.org:80/x HTTP/1.1\r\n{sent}Accept: */*\r\n\r\n");
            request.parse(raw.as_bytes()).unwrap();
            let ask = {
                let head = head_for_origin("GET", "/x", "pypi.org:80", request.headers);
                String::from_utf8(head).unwrap()
            };
            assert_eq!(
                ask,
                "GET /x HTTP/1.1\r\nHost: pypi.org:80\r\nAccept: */*\r\nConnection: close\r\n\r\n",
                "{sent:?}"
            );
        }
    }

    /// A forwarded request and one in a tunnel send an origin the same path for one target
    /// in absolute form: its path and query, never its fragment, `/` for an empty path.
    #[test]
    fn an_absolute_target_gives_one_origin_form() {
        for (target, host, path) in [
            ("http://h/x?y", "h", "/x?y"),
            ("http://h:8080", "h:8080", "/"),
            ("http://h?x=/y", "h", "/?x=/y"),
            ("http://h#f/g", "h", "/"),
            ("http://h/a#f?g", "h", "/a"),
            ("HTTP://h/", "h", "/"),
        ] {
            let (authority, origin) = split_absolute(target).unwrap();
            assert_eq!((authority, &*origin), (host, path), "{target}");
            assert_eq!(origin_form(target).as_deref(), Some(path), "{target}");
        }
        assert_eq!(origin_form("/x?y").as_deref(), Some("/x?y"));
        assert_eq!(origin_form("*"), None);
        assert_eq!(origin_form("h:443"), None);
    }
}
