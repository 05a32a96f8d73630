"""The HTTP front's limits and static files: connection cap, timeouts, header size,
the webroot (and its escapes)."""
import socket
import ssl
import time

import requests

from conftest import REQUEST_TIMEOUT, SLOW, expect, expect_fault


def tls_connect(port, timeout=5.0):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return ctx.wrap_socket(raw, server_hostname="localhost", do_handshake_on_connect=False)


def http_get(sock, path="/api/system/v1/health"):
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


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


def test_oversized_headers_are_refused(spawn):
    srv = spawn("--max-header", "2048")
    r = requests.get(srv.http + "/api/system/v1/health", headers={"X-Big": "a" * 4096},
                     timeout=REQUEST_TIMEOUT)
    assert r.status_code in (400, 413, 431)
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
