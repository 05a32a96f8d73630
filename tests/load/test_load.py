"""Load, over HTTPS, loopback only, bounded in time: a flood of idle and trickling
connections while a phone polls, then a soak of pollers, event streams and jobs. Each
prints its figures (pytest -s shows them; they are also in the assertion messages)."""
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import api

HERE = Path(__file__).resolve().parent
FLOOD_S = float(os.environ.get("SPINDLE_FLOOD_SECONDS", 60))
SOAK_S = float(os.environ.get("SPINDLE_SOAK_SECONDS", 300))
HEADER_TIMEOUT = 10
SLOW = api.SLOW

pytestmark = pytest.mark.skipif("ASAN_OPTIONS" in os.environ or api.WRAPPER,
                                reason="memory figures need the plain build")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def report(name, figures):
    line = f"{name}: " + ", ".join(f"{k} {v}" for k, v in figures.items())
    print("\n" + line, file=sys.stderr)
    return line


def raise_fd_limit(n):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def readable(sock):
    """select() stops at fd 1024; poll() does not."""
    p = select.poll()
    p.register(sock, select.POLLIN)
    return bool(p.poll(0))


def tls_ctx():
    return ssl._create_unverified_context()


def start_poller(srv, token, connections, interval, seconds, etag=False):
    cmd = [sys.executable, str(HERE / "poller.py"), str(srv.port), token,
           "--connections", str(connections), "--interval", str(interval),
           "--seconds", str(seconds)] + (["--etag"] if etag else [])
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def poller_result(proc, timeout):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def settle(pid, rss0, fds0, seconds):
    """Waits until RSS and open fds are back near their start; returns them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if rss_kb(pid) <= rss0 + 8192 and fds(pid) <= fds0 + 2:
            break
        time.sleep(0.5)
    return rss_kb(pid), fds(pid)


def test_idle_and_trickling_connections_while_a_phone_polls(spawn):
    """1,000 idle keep-alive connections and 200 slowloris clients (each reconnecting when
    cut) for FLOOD_S seconds, while one keep-alive client polls the dashboard 20 times a
    second from a process of its own."""
    raise_fd_limit(8192)
    srv = spawn("--header-timeout", HEADER_TIMEOUT, "--timeout", 300,
                "--max-connections", 1500)
    admin = srv.admin()
    pid = srv.proc.pid
    for _ in range(20):
        api.expect(admin.get("/api/status/v1/dashboard"), 200)
    time.sleep(2)
    rss0, fds0 = rss_kb(pid), fds(pid)

    poller = start_poller(srv, admin.token, 1, 0.05, FLOOD_S)
    ctx = tls_ctx()
    idle = []
    for _ in range(1000):
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        s.sendall(b"GET /api/system/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        idle.append(s)
    rss_peak = rss_kb(pid)

    def slow_client():
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        return [s, time.monotonic()]

    slow = [slow_client() for _ in range(200)]
    lifetimes = []
    end = time.monotonic() + FLOOD_S - 5
    while time.monotonic() < end:
        for i, (s, born) in enumerate(slow):
            try:
                if readable(s) and not s.recv(4096):
                    raise ConnectionError
                s.send(b"X-Slow: 1\r\n"[int(time.monotonic()) % 11:][:1])
            except (OSError, ssl.SSLError, ConnectionError):
                lifetimes.append(time.monotonic() - born)
                s.close()
                slow[i] = slow_client()
        rss_peak = max(rss_peak, rss_kb(pid))
        time.sleep(1)
    result = poller_result(poller, FLOOD_S + 30)

    # the idle ones were left alone: they still answer
    alive = 0
    for s in idle[:50]:
        s.sendall(b"GET /api/system/v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        alive += s.recv(4096).startswith(b"HTTP/1.1 200")
    for s in idle:
        s.close()
    for s, _ in slow:
        s.close()
    rss1, fds1 = settle(pid, rss0, fds0, 40 * SLOW)
    line = report("flood", {
        "poller requests": result["requests"], "errors": result["errors"],
        "p50 ms": result["p50_ms"], "p99 ms": result["p99_ms"], "max ms": result["max_ms"],
        "slow clients cut": len(lifetimes),
        "cut after s (min/max)": f"{min(lifetimes, default=0):.1f}/{max(lifetimes, default=0):.1f}",
        "RSS kB start/peak/end": f"{rss0}/{rss_peak}/{rss1}", "fds start/end": f"{fds0}/{fds1}"})
    assert result["errors"] == 0, (line, result["first_errors"])
    assert result["p99_ms"] < 50, line
    assert alive == 50, line
    assert len(lifetimes) >= 200 * (int((FLOOD_S - 5) / HEADER_TIMEOUT) - 1), line
    assert all(HEADER_TIMEOUT - 1 <= t <= HEADER_TIMEOUT + 3 * SLOW for t in lifetimes), line
    assert rss1 <= rss0 + 8192 and fds1 <= fds0 + 2, line


def test_soak_pollers_event_streams_and_jobs(spawn):
    """SOAK_S seconds: 200 pollers (each twice a second, with If-None-Match: the dashboard
    changes every second), 20 event streams, benchmark jobs
    back to back. No errors; RSS grows less than 2 MiB after the first minute."""
    raise_fd_limit(4096)
    bench = Path(tempfile.mkdtemp(prefix="spindle-soak-", dir="/var/tmp"))
    try:
        srv = spawn("--bench-dirs", bench, "--system-led-backend", "virtual",
                    "--disk-led-backend", "virtual")
        admin = srv.admin()
        pid = srv.proc.pid
        poller = start_poller(srv, admin.token, 200, 0.5, SOAK_S, etag=True)
        stop = threading.Event()
        events, stream_errors = [0] * 20, []

        def watch(i):
            try:
                with api.EventStream(srv, admin.token, "/api/status/v1/events") as es:
                    while not stop.is_set():
                        es.next_event(lambda e: e.get("event") == "dashboard", timeout=10)
                        events[i] += 1
            except Exception as e:  # noqa: BLE001 - any end of a stream is the error
                stream_errors.append(repr(e))

        watchers = [threading.Thread(target=watch, args=(i,)) for i in range(20)]
        for t in watchers:
            t.start()
        jobs, job_errors, rss = 0, [], {}
        t0 = time.monotonic()
        while time.monotonic() - t0 < SOAK_S:
            job = api.expect(admin.post("/api/bench/v1/jobs", json={
                "pattern": "randread", "size": "1M", "block_size": "4k",
                "runtime_s": 2}), 201)["job"]
            while True:
                state = api.expect(admin.get(job["href"]), 200)["job"]["state"]
                if state not in ("queued", "running"):
                    break
                time.sleep(0.2)
            jobs += 1
            if state != "done":
                job_errors.append(f"job {job['id']}: {state}")
            elapsed = time.monotonic() - t0
            if elapsed >= 60 and "warm" not in rss:
                rss["warm"] = rss_kb(pid)
        rss["end"] = rss_kb(pid)
        stop.set()
        for t in watchers:
            t.join(30)
        result = poller_result(poller, 60)
        growth = rss["end"] - rss.get("warm", rss["end"])
        line = report("soak", {
            "seconds": int(SOAK_S), "poll requests": result["requests"],
            "statuses": result["statuses"], "poll errors": result["errors"],
            "p50 ms": result["p50_ms"], "p99 ms": result["p99_ms"],
            "events": sum(events), "stream errors": len(stream_errors), "jobs": jobs,
            "job errors": len(job_errors),
            "RSS kB after 1 min/end": f"{rss.get('warm')}/{rss['end']}",
            "growth kB": growth})
        assert result["errors"] == 0, (line, result["first_errors"])
        assert not stream_errors and min(events) > 0, (line, stream_errors[:3])
        assert not job_errors and jobs > 0, (line, job_errors[:3])
        assert growth < 2048, line
    finally:
        shutil.rmtree(bench, ignore_errors=True)
