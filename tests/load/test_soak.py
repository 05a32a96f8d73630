# SPDX-License-Identifier: ISC
"""A soak over HTTPS, loopback only, bounded in time: pollers, event streams and
benchmark jobs for SPINDLE_SOAK_SECONDS (300). It prints its figures (also in the assertion
messages). ./quickstart check runs it beside the fuzzing and distcheck, which leave it a
core: what it asserts (no errors, memory that stays flat) holds under that load too."""
import shutil
import tempfile
import threading
import time
from pathlib import Path

from conftest import (SOAK_S, api, poller_result, raise_fd_limit, report, rss_kb,
                      skip_sanitized, start_poller)


@skip_sanitized
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
