# SPDX-License-Identifier: ISC
"""The HTTP front's limits and static files: connection cap, timeouts, header size,
the webroot (and its escapes)."""
import base64
import json
import os
import resource
import select
import socket
import ssl
import time

import pytest
import requests

from conftest import REQUEST_TIMEOUT, SLOW, WRAPPER, expect, expect_fault


def tls_connect(port, timeout=5.0):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return ctx.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)


def read_answer(sock):
    """A JSON answer's bytes, head and body, or what came before the connection closed."""
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def connect(srv, scheme):
    """A new connection to srv's HTTPS (handshake done) or plain HTTP listener."""
    if scheme == "https":
        sock = tls_connect(srv.port)
        sock.do_handshake()
        return sock
    return socket.create_connection(("127.0.0.1", srv.http_port), timeout=5)


def http_get(sock, path="/api/system/v1/health"):
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return read_answer(sock)


def test_connection_cap_holds_newcomers_until_one_closes(spawn):
    srv = spawn("--max-connections", "2")
    first, second = tls_connect(srv.port), tls_connect(srv.port)
    for s in (first, second):
        s.do_handshake()
        assert http_get(s).startswith(b"HTTP/1.1 200")
    third = tls_connect(srv.port, timeout=1.0 * SLOW)
    try:
        third.do_handshake()
        served = True
    except (socket.timeout, ssl.SSLError, OSError):
        served = False
    assert not served, "a third connection was served past --max-connections 2"
    first.close()
    third.settimeout(REQUEST_TIMEOUT)
    third.do_handshake()  # accepted once a place is free
    assert http_get(third).startswith(b"HTTP/1.1 200")
    for s in (second, third):
        s.close()


def test_idle_connection_is_closed_after_the_timeout(spawn):
    srv = spawn("--timeout", "1")
    sock = socket.create_connection(("127.0.0.1", srv.http_port), timeout=10 * SLOW)
    started = time.monotonic()
    assert sock.recv(1) == b"", "the idle connection was not closed"
    assert time.monotonic() - started < 8 * SLOW
    sock.close()
    # a half-sent request is dropped the same way
    sock = socket.create_connection(("127.0.0.1", srv.http_port), timeout=10 * SLOW)
    sock.sendall(b"GET /api/system/v1/health HTTP/1.1\r\nHost: x\r\n")
    assert sock.recv(4096) == b"", "a half-sent request was not dropped at the timeout"
    sock.close()
    expect(requests.get(srv.http + "/api/system/v1/health", timeout=REQUEST_TIMEOUT), 200)


def client_hello(port):
    """A raw TCP connection and the first flight of a TLS handshake, not yet sent."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl._create_unverified_context().wrap_bio(incoming, outgoing)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return socket.create_connection(("127.0.0.1", port), timeout=5), outgoing.read()


def test_trickled_requests_are_cut_at_the_header_deadline(spawn):
    """Slowloris over TLS: a byte a second re-arms any per-read timeout, so only a deadline
    for the whole request frees the connections (and the cap they fill)."""
    srv = spawn("--header-timeout", "2", "--timeout", "60", "--max-connections", "12")
    slow = []   # [socket, bytes still to trickle]
    for _ in range(8):  # handshake done, then the request a byte at a time
        s = tls_connect(srv.port)
        s.do_handshake()
        slow.append([s, b"GET /api/system/v1/health HTTP/1.1\r\nHost: x\r\n" * 20])
    for _ in range(4):  # the handshake itself a byte at a time
        raw, hello = client_hello(srv.port)
        slow.append([raw, hello])
    started, closed = time.monotonic(), {}
    while len(closed) < len(slow) and time.monotonic() - started < 20 * SLOW:
        for i, (s, rest) in enumerate(slow):
            if i in closed:
                continue
            try:
                if select.select([s], [], [], 0)[0] and not s.recv(4096):
                    closed[i] = time.monotonic() - started
                    continue
                if rest:
                    s.send(rest[:1])
                    slow[i][1] = rest[1:]
            except (OSError, ssl.SSLError):
                closed[i] = time.monotonic() - started
        time.sleep(0.25)
    assert len(closed) == len(slow), f"still open after 20 s: {len(slow) - len(closed)}"
    assert max(closed.values()) < 8 * SLOW, closed
    # the cap they filled is free again
    s = tls_connect(srv.port)
    s.do_handshake()
    assert http_get(s).startswith(b"HTTP/1.1 200")
    for s, _ in slow:
        s.close()


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ or WRAPPER,
                    reason="a sanitizer's or valgrind's allocator keeps freed memory")
def test_memory_of_a_handshake_flood_goes_back(spawn):
    """A thousand half-sent ClientHellos took RSS from 37 to 70 MB for good: each holds
    some 48 KiB mid-handshake, freed into holes of the heap malloc never returned."""
    srv = spawn("--max-connections", "2000")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    raw, hello = client_hello(srv.port)
    raw.close()
    before = rss_kb(srv.proc.pid)
    socks = []
    for _ in range(1024):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(hello[:-10])
        socks.append(s)
    deadline = time.monotonic() + 10 * SLOW
    while rss_kb(srv.proc.pid) < before + 20000 and time.monotonic() < deadline:
        time.sleep(0.2)
    held = rss_kb(srv.proc.pid)
    assert held >= before + 20000, f"the flood did not show: {before} -> {held} kB"
    for s in socks:
        s.close()
    deadline = time.monotonic() + 30 * SLOW
    while rss_kb(srv.proc.pid) > before + 8192 and time.monotonic() < deadline:
        time.sleep(0.5)
    after = rss_kb(srv.proc.pid)
    assert after <= before + 8192, f"RSS {before} kB, {held} kB with the flood, {after} kB after"
    expect(requests.get(srv.https + "/api/system/v1/health", verify=False,
                        timeout=REQUEST_TIMEOUT), 200)


def test_unknown_and_lowercase_methods_get_the_json_fault(server):
    for method in ("FOO", "get", "BREW"):
        for path in ("/api/bench/v1/presets", "/api/no/such", "/index.html"):
            sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=5)
            sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                         .encode())
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            sock.close()
            head, _, body = data.partition(b"\r\n\r\n")
            status = int(head.split()[1])
            assert status in (404, 405), (method, path, head)
            assert b"application/json" in head and b'"fault"' in body, (method, path, data)
            if status == 405:
                assert b"\r\nAllow: " in head, head


def test_oversized_headers_are_refused(spawn):
    srv = spawn("--max-header", "2048")
    r = requests.get(srv.http + "/api/system/v1/health", headers={"X-Big": "a" * 4096},
                     timeout=REQUEST_TIMEOUT)
    f = expect_fault(r, 413, "ERR_OVER_LIMIT", details="--max-header")
    assert f["field"] == "headers" and "2048 bytes" in f["details"], f
    expect(requests.get(srv.http + "/api/system/v1/health", timeout=REQUEST_TIMEOUT), 200)


def answer_of(data):
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head, body


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_what_evhttp_refuses_itself_is_the_json_fault(spawn, scheme):
    """The requests libevent refuses before any handler sees them (it answered those
    with an HTML page): a malformed request line or header, a 20 KB header, URL or query,
    a Content-Length past four times --max-body. Each is the API's JSON fault with its
    status, and the connection closes after it."""
    srv = spawn("--max-header", "8192", "--max-body", "65536")
    long = "a" * 20000
    cases = [
        (b"GARBAGE\r\n\r\n", 400, "ERR_INVALID_ARG", "request"),
        (b"GET /api/system/v1/health HTTP/9.x\r\nHost: x\r\n\r\n", 400, "ERR_INVALID_ARG",
         "request"),
        (b"GET /api/system/v1/health HTTP/1.1\r\nHost x\r\n\r\n", 400, "ERR_INVALID_ARG",
         "request"),
        (f"GET /api/system/v1/health HTTP/1.1\r\nX-Big: {long}\r\n\r\n".encode(), 413,
         "ERR_OVER_LIMIT", "headers"),
        (f"GET /api/{long} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), 413, "ERR_OVER_LIMIT",
         "headers"),
        (f"GET /api/system/v1/health?q={long} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), 413,
         "ERR_OVER_LIMIT", "headers"),
        (b"POST /api/bench/v1/jobs HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n"
         b"Content-Length: 2\r\n\r\n", 400, "ERR_INVALID_ARG", "Expect"),
    ]
    for request, status, message, field in cases:
        sock = connect(srv, scheme)
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):         # to the close
            data += chunk
        sock.close()
        got, head, body = answer_of(data)
        where = (request[:60], head)
        assert got == status, where
        assert b"Content-Type: application/json" in head and b"Connection: close" in head, where
        assert b"X-Spindle-Version: " in head, where
        fault = json.loads(body)["fault"]
        assert fault["message"] == message and fault["code"] == status, (where, fault)
        assert fault["field"] == field, (where, fault)
    # a body past the transport's cap (four times --max-body, at least 4 MiB): read and
    # dropped, then refused, so the client sending it reads the fault
    base = srv.https if scheme == "https" else srv.http
    big = requests.post(base + "/api/bench/v1/jobs", data=b"x" * (5 << 20), verify=False,
                        headers={"Content-Type": "application/json"}, timeout=REQUEST_TIMEOUT)
    f = expect_fault(big, 413, "ERR_OVER_LIMIT", details="--max-body")
    assert f["field"] == "body" and "65536" in f["details"], f
    expect(requests.get(srv.http + "/api/system/v1/health", timeout=REQUEST_TIMEOUT), 200)


def test_webroot_serves_files_and_nothing_outside(spawn, tmp_path):
    root = tmp_path / "webroot"
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><title>t</title>")
    (root / "js" / "app.js").write_text("export const x = 1;\n")
    (tmp_path / "secret.txt").write_text("do not serve")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    srv = spawn("--webroot", root)

    r = requests.get(srv.http + "/", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/html")
    assert "<title>t</title>" in r.text
    r = requests.get(srv.http + "/js/app.js", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.text == "export const x = 1;\n"
    assert r.headers["Content-Type"].startswith("text/javascript")
    r = requests.head(srv.http + "/js/app.js", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.content == b""

    for path in ("/leak.txt", "/../secret.txt", "/%2e%2e/secret.txt", "/js/../../secret.txt",
                 "/nope.html", "/js"):
        r = requests.get(srv.http + path, timeout=REQUEST_TIMEOUT)
        assert r.status_code == 404, (path, r.status_code, r.text[:80])
        assert "do not serve" not in r.text
    expect_fault(requests.post(srv.http + "/index.html", timeout=REQUEST_TIMEOUT), 405,
                 "ERR_METHOD")


def raw_exchange(srv, scheme, request):
    """One raw request on a new connection (HTTPS or plain): (status, body bytes)."""
    sock = connect(srv, scheme)
    sock.sendall(request)
    data = read_answer(sock)
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


CREDENTIAL_EDGES = [
    # (name, schemes, header lines given the admin's password): a NUL in a credential, or
    # a credential header twice, is a 400 naming what is wrong, never a login
    ("NUL in X-Auth-User", ["https", "http"],
     lambda pw: b"X-Auth-User: admin\x00junk\r\nX-Auth-Key: " + pw + b"\r\n", b"NUL"),
    ("NUL in X-Auth-Key", ["https", "http"],
     lambda pw: b"X-Auth-User: admin\r\nX-Auth-Key: " + pw + b"\x00junk\r\n", b"NUL"),
    ("NUL in another header", ["https", "http"],
     lambda pw: b"X-Auth-User: admin\r\nX-Auth-Key: " + pw + b"\r\nX-Note: a\x00b\r\n", b"NUL"),
    ("two Authorization", ["https", "http"],
     lambda pw: b"Authorization: Basic " + base64.b64encode(b"admin:" + pw) +
     b"\r\nAuthorization: Basic " + base64.b64encode(b"admin:wrong") + b"\r\n",
     b"Authorization: sent more than once"),
    ("Authorization in two spellings", ["https", "http"],
     lambda pw: b"Authorization: Basic " + base64.b64encode(b"admin:" + pw) +
     b"\r\nauthorization: Bearer x\r\n", b"Authorization: sent more than once"),
    ("two X-Auth-User", ["https", "http"],
     lambda pw: b"X-Auth-User: nobody\r\nX-Auth-User: admin\r\nX-Auth-Key: " + pw + b"\r\n",
     b"X-Auth-User: sent more than once"),
    ("two X-Auth-Key", ["https", "http"],
     lambda pw: b"X-Auth-User: admin\r\nX-Auth-Key: x\r\nX-Auth-Key: " + pw + b"\r\n",
     b"X-Auth-Key: sent more than once"),
    ("two X-Auth-Session", ["https", "http"],
     lambda pw: b"X-Auth-Session: a\r\nX-Auth-Session: b\r\n",
     b"X-Auth-Session: sent more than once"),
]


@pytest.mark.parametrize("name, schemes, headers, why", CREDENTIAL_EDGES,
                         ids=[c[0] for c in CREDENTIAL_EDGES])
@pytest.mark.parametrize("path", ["/api/system/v1/version", "/api/access/v1"])
def test_credential_header_edges_are_refused(server, name, schemes, headers, why, path):
    pw = server.admin_password.encode()
    method = b"POST" if path == "/api/access/v1" else b"GET"
    for scheme in schemes:
        req = (method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + headers(pw) +
               b"Content-Length: 0\r\n\r\n")
        status, body = raw_exchange(server, scheme, req)
        assert status == 400 and b"ERR_INVALID_ARG" in body and why in body, \
            (name, scheme, status, body)
    # the same request without the edge logs in
    good = (method + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Auth-User: admin\r\n"
            b"X-Auth-Key: " + pw + b"\r\nContent-Length: 0\r\n\r\n")
    for scheme in schemes:
        assert raw_exchange(server, scheme, good)[0] in (200, 201), (name, scheme)


def test_a_nul_on_a_plain_connection_is_its_own(server):
    """The plain listener keeps no state per connection: the mark a NUL leaves is refused on
    a connection that answered a request before it, and is not inherited by the connections
    that come after, even when many marked ones went away before their request was whole."""
    pw = server.admin_password.encode()
    good = (b"GET /api/system/v1/version HTTP/1.1\r\nHost: x\r\nX-Auth-User: admin\r\n"
            b"X-Auth-Key: " + pw + b"\r\n\r\n")
    bad = (b"GET /api/system/v1/version HTTP/1.1\r\nHost: x\r\nX-Auth-User: admin\x00junk"
           b"\r\nX-Auth-Key: " + pw + b"\r\n\r\n")
    # keep-alive: a good request answered, then a NUL on the same connection
    sock = socket.create_connection(("127.0.0.1", server.http_port), timeout=5)
    sock.sendall(good)
    assert read_answer(sock).split()[1] == b"200"
    sock.sendall(bad)
    answer = read_answer(sock)
    assert answer.split()[1] == b"400" and b"NUL" in answer, answer
    sock.close()
    # connections that send a NUL and leave before their request is whole
    for _ in range(300):
        s = socket.create_connection(("127.0.0.1", server.http_port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nX-Note: a\x00")
        s.close()
    for _ in range(20):
        assert raw_exchange(server, "http", good)[0] == 200
