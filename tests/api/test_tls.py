# SPDX-License-Identifier: ISC
"""HTTPS, the path every user takes: the main flows on both listeners, answers that do not
wait for the client's delayed ACK, one TLS record per small answer, a TLS close_notify
whenever spindled ends a connection, and session resumption."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import ssl
import time

import pytest

from conftest import (REQUEST_TIMEOUT, SLOW, EventStream, FakeProc, expect, expect_fault)
from test_bench import JOBS, WORKER, fake_sys_for, scratch, wait_state

SCHEMES = ["https", "http"]
DASHBOARD = "/api/status/v1/dashboard"
EVENTS = "/api/status/v1/events"
SYSTEM = "/api/hardware/v1/chassis/system"
TLS_VERSIONS = {"tls1.2": ssl.TLSVersion.TLSv1_2, "tls1.3": ssl.TLSVersion.TLSv1_3}


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """A server with a bench dir, a synthetic /proc of one disk, and a virtual locator."""
    from conftest import Server, assert_stopped_cleanly
    base = scratch()
    (base / "bench").mkdir()
    proc = FakeProc(base / "root", disks=1, nics=1, cpus=2).start()
    fake_sys_for(base / "root", base / "bench")
    srv = Server(base / "state", "--bench-dirs", base / "bench", "--bench-worker", WORKER,
                 "--proc-root", base / "root", "--sys-root", base / "root",
                 "--system-led-backend", "virtual", "--disk-led-backend", "virtual").start()
    yield srv
    assert_stopped_cleanly(srv)
    proc.stop()
    shutil.rmtree(base, ignore_errors=True)


def tls_context(version=None):
    """A client context that reports a close without close_notify as an error, as OpenSSL
    3 does (some Python builds set OP_IGNORE_UNEXPECTED_EOF by default)."""
    ctx = ssl._create_unverified_context()
    ctx.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    if version:
        ctx.minimum_version = ctx.maximum_version = version
    return ctx


def strict_exchange(port, raw, version=None, timeout=REQUEST_TIMEOUT):
    """Sends raw bytes over TLS and reads until the server closes. The socket does not
    forgive a close without close_notify (suppress_ragged_eofs=False): it raises
    SSLEOFError, as OpenSSL 3 clients do."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    with tls_context(version).wrap_socket(sock, suppress_ragged_eofs=False) as s:
        if raw:
            s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def get_request(path, token=None, close=True):
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"]
    if token:
        lines.append(f"X-Auth-Session: {token}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# ---- the main flows, on both listeners ----------------------------------------------

@pytest.mark.parametrize("scheme", SCHEMES)
def test_login_dashboard_etag_and_logout(box, scheme):
    c = box.login_client("admin", box.admin_password, scheme=scheme)
    deadline = time.monotonic() + 10 * SLOW
    while True:  # the dashboard has a sample from the collector's second tick on
        first = c.get(DASHBOARD)
        doc = expect(first, 200)["dashboard"]
        if doc.get("time") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for _ in range(5):  # a tick may fall between the two requests: then try again
        etag = c.get(DASHBOARD).headers["ETag"]
        again = c.get(DASHBOARD, headers={"If-None-Match": etag})
        if again.status_code == 304:
            break
    assert again.status_code == 304 and again.content == b""
    expect(c.delete("/api/access/v1"), 204)
    expect_fault(c.get(DASHBOARD), 401)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_events_stream(box, scheme):
    c = box.login_client("admin", box.admin_password, scheme=scheme)
    with EventStream(box, c.token, EVENTS, scheme=scheme) as es:
        assert es.status == 200
        first = es.next_event(lambda e: e.get("event") == "dashboard")
        second = es.next_event(lambda e: e.get("event") == "dashboard")
        assert json.loads(second["data"])["dashboard"]["time"] > \
            json.loads(first["data"])["dashboard"]["time"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_job_progress_streams_to_its_end(box, scheme):
    c = box.login_client("admin", box.admin_password, scheme=scheme)
    spec = {"name": f"tls-{scheme}", "pattern": "randread", "size": "1M",
            "block_size": "4k", "runtime_s": 2.2}
    job = expect(c.post(JOBS, json=spec), 201)["job"]
    resp = c.get(f"{JOBS}/{job['id']}/progress", stream=True)
    lines = [json.loads(line) for line in resp.iter_lines() if line.strip()]
    assert lines[-1] == {"type": "end", "id": job["id"], "state": "done"}
    assert len(lines) >= 3 and all(line["type"] == "interval" for line in lines[:-1])
    with EventStream(box, c.token, f"{JOBS}/{job['id']}/progress", scheme=scheme) as es:
        end = es.next_event(lambda e: e.get("event") == "end")
        assert json.loads(end["data"])["state"] == "done"
        assert es.at_eof()
    wait_state(c, job["id"], {"done"})


@pytest.mark.parametrize("scheme", SCHEMES)
def test_analytics_stream_past_now(box, scheme):
    c = box.login_client("admin", box.admin_password, scheme=scheme)
    path = "/api/analytics/v1/datasets/cpu.utilization%5Bmode%5D/data?start=-1&seconds=3"
    t0 = time.monotonic()
    resp = c.get(path, stream=True)
    assert resp.headers.get("Transfer-Encoding") == "chunked"
    doc = json.loads(b"".join(resp.iter_content(None)))
    assert len(doc["data"]) == 3
    # it waited for samples to come (the next second's sample may be taken a few ms
    # after the request arrived, short of a whole second)
    assert time.monotonic() - t0 >= 0.9


@pytest.mark.parametrize("scheme", SCHEMES)
def test_locator_led_toggle(box, scheme):
    c = box.login_client("admin", box.admin_password, scheme=scheme)
    for on in (True, False):
        expect(c.put(SYSTEM, json={"locate": on}), 202)
        assert expect(c.get(SYSTEM), 200)["chassis"]["locate"] is on


# ---- what only TLS gets wrong ---------------------------------------------------------

def test_keepalive_answers_do_not_wait_for_delayed_acks(box):
    """Without TCP_NODELAY, Nagle held the second segment of every HTTPS answer until the
    client's delayed ACK: Linux delays an ACK by at least 40 ms (TCP_DELACK_MIN), so each
    request took 44 ms. An answer that waits for nothing takes well under a millisecond:
    the fastest of 20 under 20 ms separates the two on any machine, however busy (the
    delay held every request, so a busy machine's slow ones cannot hide it)."""
    token = box.login_client("admin", box.admin_password).token
    conn = http.client.HTTPSConnection("127.0.0.1", box.port, timeout=REQUEST_TIMEOUT,
                                       context=tls_context())
    times = []
    for _ in range(21):
        t0 = time.monotonic()
        conn.request("GET", DASHBOARD, headers={"X-Auth-Session": token})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.read()
        times.append(time.monotonic() - t0)
    conn.close()
    times = times[1:]  # the first includes the handshake
    assert min(times) < 0.020, [f"{t * 1000:.1f} ms" for t in times]


class RecordCounter:
    """A TLS client over memory BIOs that counts the TLS records the server sends."""

    def __init__(self, port, version=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = tls_context(version).wrap_bio(self.incoming, self.outgoing)
        self.raw = b""      # received bytes not yet split into records
        self.records = []   # (content type, length) of each record received
        self._io(self.tls.do_handshake)

    def _flush(self):
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def _receive(self):
        data = self.sock.recv(65536)
        assert data, "the server closed the connection"
        self.incoming.write(data)
        self.raw += data
        while len(self.raw) >= 5 and len(self.raw) >= 5 + int.from_bytes(self.raw[3:5], "big"):
            length = int.from_bytes(self.raw[3:5], "big")
            self.records.append((self.raw[0], length))
            self.raw = self.raw[5 + length:]

    def _io(self, op, *args):
        while True:
            try:
                result = op(*args)
                self._flush()
                return result
            except ssl.SSLWantReadError:
                self._flush()
                self._receive()

    def exchange(self, request):
        """Sends one request; returns (the answer, the records it came in)."""
        self._io(self.tls.write, request)
        start, answer = len(self.records), b""
        while True:
            head, sep, body = answer.partition(b"\r\n\r\n")
            if sep:
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length:")))
                if len(body) >= length:
                    return answer, self.records[start:]
            answer += self._io(self.tls.read, 65536)

    def read_until(self, marker, data=b""):
        """Reads until marker is in data; returns (data, the records that brought it)."""
        start = len(self.records)
        while marker not in data:
            data += self._io(self.tls.read, 65536)
        return data, self.records[start:]

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("version", TLS_VERSIONS)
def test_a_small_answer_is_one_tls_record(box, version):
    """evhttp hands over headers and body as separate buffers, and each became a record
    of its own (and a segment of its own, which Nagle then held back)."""
    token = box.login_client("admin", box.admin_password).token
    rc = RecordCounter(box.port, TLS_VERSIONS[version])
    try:
        rc.exchange(get_request(DASHBOARD, token, close=False))  # TLS 1.3 tickets come first
        for path in (DASHBOARD, "/api/system/v1/version", "/api/system/v1/health"):
            answer, records = rc.exchange(get_request(path, token, close=False))
            assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
            assert len(records) == 1 and records[0][0] == 23, (path, records)
    finally:
        rc.close()


def count_chunks(body):
    """The chunks of a chunked body that starts and ends at chunk boundaries."""
    n = 0
    while body:
        size, _, rest = body.partition(b"\r\n")
        length = int(size, 16)
        assert rest[length:length + 2] == b"\r\n", body[:100]
        body, n = rest[length + 2:], n + 1
    return n


def test_each_chunk_of_a_stream_is_one_tls_record(box):
    """Chunk framing, event and CRLF went out as three records, the last two held back by
    Nagle: an event reached the client only with the client's next delayed ACK."""
    token = box.login_client("admin", box.admin_password).token
    rc = RecordCounter(box.port)
    try:
        rc._io(rc.tls.write, get_request(EVENTS, token, close=False))
        data = b""
        while not (b"event: dashboard" in data and data.endswith(b"\n\n\r\n")):
            data, _ = rc.read_until(b"\r\n", data + rc._io(rc.tls.read, 65536))
        # from a chunk boundary on: two more events (and any heartbeat between)
        data, start = b"", len(rc.records)
        while data.count(b"event: dashboard") < 2 or not data.endswith(b"\n\n\r\n"):
            data += rc._io(rc.tls.read, 65536)
        records = rc.records[start:]
        assert len(records) == count_chunks(data), (records, data[:300])
    finally:
        rc.close()


@pytest.mark.parametrize("version", TLS_VERSIONS)
def test_connection_close_ends_with_close_notify(box, version):
    for _ in range(10):  # it was seen on some connections only
        answer = strict_exchange(box.port, get_request("/api/system/v1/health"),
                                 TLS_VERSIONS[version])
        assert answer.startswith(b"HTTP/1.1 200") and b'"status":"ok"' in answer


def test_stream_end_with_connection_close_ends_with_close_notify(box):
    c = box.login_client("admin", box.admin_password)
    job = expect(c.post(JOBS, json={"name": "tls-close", "pattern": "randread", "size": "1M",
                                    "block_size": "4k", "runtime_s": 1.2}), 201)["job"]
    # joined while it runs: the stream ends when the job does, then the connection
    answer = strict_exchange(box.port, get_request(f"{JOBS}/{job['id']}/progress", c.token))
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"0\r\n\r\n"), answer[-200:]
    assert b'"type":"end"' in answer
    # replayed from the store, a whole document
    answer = strict_exchange(box.port, get_request(f"{JOBS}/{job['id']}/progress", c.token))
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'"state":"done"}\n')


def test_idle_timeout_and_shutdown_end_with_close_notify(spawn):
    srv = spawn("--timeout", "1")
    # idle after an answer on a kept-alive connection: the timeout closes it cleanly
    t0 = time.monotonic()
    answer = strict_exchange(srv.port, get_request("/api/system/v1/health", close=False))
    assert answer.startswith(b"HTTP/1.1 200")
    assert time.monotonic() - t0 < 8 * SLOW
    # idle when the server stops
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=REQUEST_TIMEOUT)
    with tls_context().wrap_socket(sock, suppress_ragged_eofs=False) as s:
        s.sendall(get_request("/api/system/v1/health", close=False))
        data = s.recv(65536)
        assert data.startswith(b"HTTP/1.1 200")
        srv.stop()
        while s.recv(65536):  # the rest, then a clean end (SSLEOFError otherwise)
            pass
    assert srv.returncode == 0


@pytest.mark.parametrize("version", TLS_VERSIONS)
def test_a_reconnecting_client_resumes_its_session(box, version):
    ctx = tls_context(TLS_VERSIONS[version])
    session = None
    for attempt in range(2):
        sock = socket.create_connection(("127.0.0.1", box.port), timeout=REQUEST_TIMEOUT)
        with ctx.wrap_socket(sock, session=session) as s:
            # a request first: TLS 1.3 tickets arrive after the handshake
            s.sendall(get_request("/api/system/v1/health"))
            while s.recv(65536):
                pass
            if attempt:
                assert s.session_reused, "the server did a full handshake again"
            session = s.session
            assert session is not None


def s_client(port, *args):
    """openssl s_client's handshake with these options: (succeeded, what it printed)."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-brief",
                        *args], input=b"", capture_output=True, timeout=REQUEST_TIMEOUT)
    out = (p.stdout + p.stderr).decode(errors="replace")
    return "CONNECTION ESTABLISHED" in out, out


@pytest.mark.parametrize("args, ok", [
    # TLS 1.3 key exchange: the elliptic groups of nginx's modern profile, none of the
    # finite-field ones (one ffdhe8192 handshake cost the loop ~115 ms)
    (["-tls1_3", "-groups", "X25519"], True),
    (["-tls1_3", "-groups", "P-256"], True),
    (["-tls1_3", "-groups", "P-384"], True),
    (["-tls1_3", "-groups", "ffdhe2048"], False),
    (["-tls1_3", "-groups", "ffdhe8192"], False),
    (["-tls1_3", "-groups", "P-521"], False),
    # TLS 1.2: ECDHE with AEAD only
    (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"], True),
    (["-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"], True),
    (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"], False),     # CBC
    (["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-SHA384"], False),  # CBC
    (["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256"], False),
    (["-tls1_2", "-cipher", "AES128-GCM-SHA256"], False),          # static RSA
    (["-tls1_2", "-groups", "ffdhe2048"], False),
    (["-tls1_1"], False),
])
def test_key_exchange_and_ciphers(box, args, ok):
    done, out = s_client(box.port, *args)
    assert done == ok, out[-600:]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_api_answers_are_not_sniffed_and_hsts_is_off_by_default(box, scheme):
    c = box.client(scheme=scheme)
    for resp in (c.get("/api/system/v1/health"), c.get("/api/user/v1/users"),
                 c.get("/api/no/such")):
        assert resp.headers.get("X-Content-Type-Options") == "nosniff", resp.headers
        assert "Strict-Transport-Security" not in resp.headers, resp.headers


def test_hsts_when_configured(spawn):
    """--hsts-max-age: on HTTPS answers (API and console), never on the plain listener."""
    srv = spawn("--hsts-max-age", "31536000")
    for path in ("/api/system/v1/health", "/api/no/such", "/"):
        resp = srv.client(scheme="https").get(path)
        assert resp.headers.get("Strict-Transport-Security") == "max-age=31536000", path
        assert "Strict-Transport-Security" not in srv.client(scheme="http").get(path).headers
        assert resp.headers.get("X-Content-Type-Options") == "nosniff", path


def handshake(port, source):
    raw = socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT,
                                   source_address=(source, 0))
    try:
        with tls_context().wrap_socket(raw):
            return True
    except (ssl.SSLError, OSError):
        return False


def test_handshakes_per_address_are_bounded(spawn):
    """--tls-handshake-rate 5: an address may start 20 handshakes at once (four seconds'
    worth), then 5 a second; past that its ClientHello is refused before the key exchange,
    and other addresses are not held to its count."""
    srv = spawn("--tls-handshake-rate", "5")
    results = [handshake(srv.port, "127.0.0.7") for _ in range(30)]
    assert all(results[:20]) and not all(results[20:]), results
    assert handshake(srv.port, "127.0.0.8")  # another address
    time.sleep(1.2)                          # the bucket refills at 5 a second
    assert handshake(srv.port, "127.0.0.7")
    assert srv.client(scheme="https").get("/api/system/v1/health").status_code == 200
