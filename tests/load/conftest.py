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
sys.path.insert(0, str(_API))  # its fixtures package: fake ZFS, the fake iolat helper
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


def start_poller(srv, token, connections, interval, seconds, etag=False, path=None):
    cmd = [sys.executable, str(HERE / "poller.py"), str(srv.port), token,
           "--connections", str(connections), "--interval", str(interval),
           "--seconds", str(seconds)] + (["--etag"] if etag else []) + \
        (["--path", path] if path else [])
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def poller_result(proc, timeout):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


# The attacker's CPU is not the box's: a real one sends from elsewhere. Its process runs at
# the lowest priority so that what the victim sees is the server's doing, not the test
# machine's cores shared with the attack's own TLS handshakes and Python.
ATTACKER_NICE = 19


def start_flooder(srv, mode, threads, seconds, *args):
    return subprocess.Popen(["nice", "-n", str(ATTACKER_NICE), sys.executable,
                             str(HERE / "flooder.py"), str(srv.port), mode,
                             "--threads", str(threads), "--seconds", str(seconds),
                             *map(str, args)], stdout=subprocess.PIPE, text=True)


def flooder_result(proc, timeout):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def idle_then_attacked(srv, token, seconds, attack, path=None):
    """The victim, a phone polling 20 times a second on one kept-alive connection: first
    for `seconds` with nothing else going on, then for as long again while attack() (which
    starts the attack and returns a function that ends it and gives its figures) runs.
    Returns the idle figures, the attacked ones and the attack's."""
    idle = poller_result(start_poller(srv, token, 1, 0.05, seconds, path=path), seconds + 30)
    poller = start_poller(srv, token, 1, 0.05, seconds, path=path)
    finish = attack()
    attacked = poller_result(poller, seconds + 60)
    return idle, attacked, finish()


def latency_held(idle, attacked, slack=2):
    """The attacked p99 against the same run's idle figures, never a fixed number of
    milliseconds (a newcomer's machine is busy with other things): within three times the
    idle p99, or within `slack` times the slowest idle poll. The second because on an idle
    loop a p99 under a millisecond is one preemption or one other client's turn away from
    three times itself; the slowest of a few hundred idle polls is what this machine's
    noise alone does. The regressions this catches were 30 to 200 times the idle p99."""
    return attacked["p99_ms"] <= max(3 * idle["p99_ms"], slack * idle["max_ms"])


def victim_figures(idle, attacked):
    return {"victim p50/p99 ms idle": f"{idle['p50_ms']}/{idle['p99_ms']}",
            "attacked": f"{attacked['p50_ms']}/{attacked['p99_ms']}",
            "idle max ms": idle["max_ms"], "victim requests": attacked["requests"],
            "victim errors": idle["errors"] + attacked["errors"]}


def settle(pid, rss0, fds0, seconds):
    """Waits until RSS and open fds are back near their start; returns them."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if rss_kb(pid) <= rss0 + 8192 and fds(pid) <= fds0 + 2:
            break
        time.sleep(0.5)
    return rss_kb(pid), fds(pid)


