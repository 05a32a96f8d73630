# SPDX-License-Identifier: ISC
"""Broken benchmark workers (--bench-worker points at a fake): one that hangs, one that
writes garbage, one killed by SIGKILL. Each job ends failed with a reason that says what
happened, the worker is gone, and the daemon answers throughout."""
import os
import signal
import time

import pytest

from conftest import (SLOW, Server, assert_stopped_cleanly, expect)

JOBS = "/api/bench/v1/jobs"

# A worker whose job name says how it breaks. It starts properly (a valid start line and
# one interval), then: hangs deaf to SIGTERM, writes binary garbage and an endless line,
# or waits to be killed.
FAKE_WORKER = """#!/usr/bin/python3
import json, os, signal, sys, time
spec = json.load(sys.stdin)
start = {"type": "start", "version": 1, "spec": spec, "target": {"size": 1}, "threads": {}}
rw = {"ops": 1, "bytes": 1, "iops": 1, "bytes_per_s": 1, "lat_mean_ns": 1, "lat_max_ns": 1,
      "lat_p99_ns": 1}
iv = {"type": "interval", "seq": 1, "t_s": 1, "elapsed_s": 1, "phase": "measure",
      "progress_pct": 10, "eta_s": None, "read": rw, "write": rw}
out = sys.stdout.buffer
for line in (start, iv):
    out.write(json.dumps(line).encode() + b"\\n")
out.flush()
if spec["name"] == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
elif spec["name"] == "garbage":
    out.write(bytes(range(256)) * 64 + b"\\n")
    out.write(b"\\xff\\xfe\\x00{" * 300000)
    out.flush()
while True:
    time.sleep(1)
"""


def running(program):
    """Pids of live processes (not zombies) running program (its path is an argument of
    theirs before any option: the daemon's --bench-worker does not count)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")[:2]
            if str(program).encode() not in args:
                continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] != "Z":
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    base = tmp_path_factory.mktemp("workers")
    fake = base / "fake-worker"
    fake.write_text(FAKE_WORKER)
    fake.chmod(0o755)
    (base / "bench").mkdir()
    srv = Server(base / "state", "--bench-dirs", base / "bench", "--bench-worker", fake,
                 "--bench-max-runtime", "10", "--bench-limit-slack", "1").start()
    yield srv, srv.admin(), fake
    assert_stopped_cleanly(srv)


@pytest.mark.parametrize("name,reason", [
    ("hang", "stopped: it ran past its limit of 2 s"),
    ("garbage", "worker: protocol violation"),
    ("killed", "the worker was killed by SIGKILL (signal 9)"),
])
def test_a_broken_worker_fails_its_job_and_the_daemon_answers(bench, name, reason):
    srv, admin, fake = bench
    spec = {"name": name, "pattern": "randread", "size": "1M", "block_size": "4k",
            "runtime_s": 1}
    job = expect(admin.post(JOBS, json=spec), 201)["job"]
    url = f"{JOBS}/{job['id']}"
    deadline = time.monotonic() + 30 * SLOW
    answered = 0
    seen = False  # the fake was found running: the check below can see it
    while job["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"job still {job['state']}"
        # the daemon answers while the worker misbehaves
        expect(admin.get("/api/system/v1/health"), 200)
        expect(admin.get("/api/status/v1/dashboard"), 200)
        answered += 1
        job = expect(admin.get(url), 200)["job"]
        seen = seen or (job["state"] == "running" and bool(running(fake)))
        if name == "killed" and job.get("worker_pid") and job["state"] == "running":
            os.kill(job["worker_pid"], signal.SIGKILL)
        time.sleep(0.1)
    assert job["state"] == "failed", job
    assert job["reason"].startswith(reason), job["reason"]
    assert job["ended"] is not None
    assert answered > 0 and (seen or name == "garbage")
    assert not running(fake), "the worker is gone"
    # the next job is not held up by the one that broke
    expect(admin.get(JOBS), 200)
