# SPDX-License-Identifier: ISC
"""Load over HTTPS, loopback only, bounded in time: 1,000 idle keep-alive connections and
200 trickling ones while a phone polls, its latency held to its own idle figures of the
same run (conftest.latency_held). It prints its figures (also in the assertion messages).
SPINDLE_FLOOD_SECONDS shortens it by hand."""
import socket
import ssl
import time

from conftest import (HEADER_TIMEOUT, FLOOD_S, SLOW, api, fds, latency_held, poller_result,
                      raise_fd_limit, readable, report, rss_kb, settle, skip_sanitized,
                      start_poller, tls_ctx, victim_figures)

IDLE_S = 15


@skip_sanitized
def test_idle_and_trickling_connections_while_a_phone_polls(spawn):
    """1,000 idle keep-alive connections and 200 slowloris clients (each reconnecting when
    cut) for FLOOD_S seconds, while one keep-alive client polls the dashboard 20 times a
    second from a process of its own."""
    raise_fd_limit(8192)
    # (1,200 connections from one address: phones would come from as many; the bound on
    # handshakes per address is tests/load/test_hostile.py's)
    srv = spawn("--header-timeout", HEADER_TIMEOUT, "--timeout", 300,
                "--max-connections", 1500, "--tls-handshake-rate", 0)
    admin = srv.admin()
    pid = srv.proc.pid
    for _ in range(20):
        api.expect(admin.get("/api/status/v1/dashboard"), 200)
    time.sleep(2)
    rss0, fds0 = rss_kb(pid), fds(pid)

    quiet = poller_result(start_poller(srv, admin.token, 1, 0.05, IDLE_S), IDLE_S + 30)
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
        # born before the connection: the server's header timeout runs from its accept,
        # and a slow handshake on a busy machine must not make the cut look early
        born = time.monotonic()
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        return [s, born]

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
        **victim_figures(quiet, result), "slow clients cut": len(lifetimes),
        "cut after s (min/max)": f"{min(lifetimes, default=0):.1f}/{max(lifetimes, default=0):.1f}",
        "RSS kB start/peak/end": f"{rss0}/{rss_peak}/{rss1}", "fds start/end": f"{fds0}/{fds1}"})
    assert result["errors"] == 0, (line, result["first_errors"])
    assert latency_held(quiet, result), line
    assert alive == 50, line
    assert len(lifetimes) >= 200 * (int((FLOOD_S - 5) / HEADER_TIMEOUT) - 1), line
    assert all(HEADER_TIMEOUT - 1 <= t <= HEADER_TIMEOUT + 3 * SLOW for t in lifetimes), line
    assert rss1 <= rss0 + 8192 and fds1 <= fds0 + 2, line


