# SPDX-License-Identifier: ISC
"""The load suite reuses the API suite's helpers (a real spindled on random loopback
ports, logins, fake /proc): tests/api/conftest.py, loaded under a name of its own so the
two suites' conftest modules never clash."""
import importlib.util
import json
import os
import select
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

_API = Path(__file__).resolve().parents[1] / "api"
_spec = importlib.util.spec_from_file_location("spindle_api_conftest", _API / "conftest.py")
api = importlib.util.module_from_spec(_spec)
sys.modules["spindle_api_conftest"] = api
_spec.loader.exec_module(api)

spawn = api.spawn  # the fixture: start extra servers, each stopped cleanly at the end

HERE = Path(__file__).resolve().parent
FLOOD_S = float(os.environ.get("SPINDLE_FLOOD_SECONDS", 60))
SOAK_S = float(os.environ.get("SPINDLE_SOAK_SECONDS", 300))
HEADER_TIMEOUT = 10
SLOW = api.SLOW

# Memory figures need the plain build: a sanitizer's allocator keeps what is freed.
skip_sanitized = pytest.mark.skipif("ASAN_OPTIONS" in os.environ or api.WRAPPER,
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


