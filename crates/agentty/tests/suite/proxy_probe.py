# Run by network_proxy.rs inside a session: sends, through the call's proxy, cleartext HTTP
# requests that carry more than one request's worth, to the test's recording origin at
# 127.0.0.1:PORT (argv[1]); prints each answer's status line.
import base64
import os
import socket
import sys
import urllib.parse

port = int(sys.argv[1])
proxy = urllib.parse.urlparse(os.environ["HTTP_PROXY"])
auth = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
origin = f"127.0.0.1:{port}"


def send(name, first, then=b""):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=5)
    s.sendall(first)
    got = b""
    try:
        while True:
            data = s.recv(4096)
            if not data:
                break
            got += data
            if then and b"Connection established" in got:
                s.sendall(then)
                then = b""
    except socket.timeout:
        pass
    print(name, got.split(b"\r\n")[0].decode(), flush=True)


pipelined = b"GET /second HTTP/1.1\r\nHost: evil-second.test\r\n\r\n"
# A cleartext request inside a tunnel, with its own Host, and another one after it.
send(
    "tunnel",
    f"CONNECT {origin} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode(),
    b"GET /tunnelled HTTP/1.1\r\nHost: evil-tunnel.test\r\n\r\n" + pipelined,
)
# The same as servers also read it: an empty line first; two spaces between the words (a
# server reading words leniently would take it: the proxy refuses it whole).
send(
    "tunnel-crlf",
    f"CONNECT {origin} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode(),
    b"\r\nGET /tunnelled-crlf HTTP/1.1\r\nHost: evil-crlf.test\r\n\r\n" + pipelined,
)
send(
    "tunnel-spaces",
    f"CONNECT {origin} HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode(),
    b"GET  /tunnelled-spaces HTTP/1.1\r\nHost: evil-spaces.test\r\n\r\n" + pipelined,
)
# A forwarded request with a body, and a request after the body.
send(
    "forward",
    f"POST http://{origin}/forwarded HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n"
    f"Content-Length: 5\r\n\r\nhello".encode() + pipelined,
)
# A chunked body, and a request after it.
send(
    "chunked",
    f"POST http://{origin}/chunked HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n"
    f"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".encode() + pipelined,
)
# A body two ways long: refused before anything reaches the origin.
send(
    "ambiguous",
    f"POST http://{origin}/ambiguous HTTP/1.1\r\nProxy-Authorization: Basic {auth}\r\n"
    f"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".encode() + pipelined,
)
