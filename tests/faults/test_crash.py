# SPDX-License-Identifier: ISC
"""kill -9 of spindled mid-job, just after an analytics flush, while changes are being
written: the database passes PRAGMA integrity_check, the killed run reads interrupted,
and everything answered as done before the kill is there after the restart."""
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

from conftest import (AUDIT, SLOW, USERS, FakeProc, Server, assert_stopped_cleanly, expect,
                      integrity, make_user)

JOBS = "/api/bench/v1/jobs"
WS = "/api/analytics/v1/worksheets"
LED = "/api/hardware/v1/chassis/system"
DATA = "/api/analytics/v1/datasets/io.ops%5Bop%5D/data"
WORKER = os.environ.get("SPINDLE_WORKER",
                        str(Path(__file__).resolve().parents[2] / "server/worker/spindle-worker"))


def seconds(client, start, n):
    doc = expect(client.get(f"{DATA}?start={start}&seconds={n}&granularity=second"), 200)
    data = doc["data"]  # one second answers with the sample itself, as the appliance
    data = [data] if isinstance(data, dict) else data or []
    return {s["sample"]: s for s in data}


def last_flush(state_dir):
    """The end of the newest analytics flush row in the database (read-only, beside the
    daemon), 0 before the first."""
    uri = f"file:{Path(state_dir) / 'spindle.db'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as c:
        return c.execute("SELECT COALESCE(MAX(start + span), 0) FROM analytics_recent").fetchone()[0]


def wait_job(client, job_id, states, timeout=30):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        job = expect(client.get(f"{JOBS}/{job_id}"), 200)["job"]
        if job["state"] in states and (job["state"] != "running" or job["progress_pct"] > 0):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']}"
        time.sleep(0.1)


def test_kill_9_mid_job_just_after_a_flush(tmp_path):
    # benchmark files on the local disk (O_DIRECT), as tests/api/test_bench.py does
    bench = Path(tempfile.mkdtemp(prefix="spindle-faults-",
                                  dir=os.environ.get("SPINDLE_TEST_TMP", "/var/tmp")))
    proc = FakeProc(tmp_path / "root", disks=1, nics=1, cpus=2).start()
    srv = Server(tmp_path / "state", "--proc-root", tmp_path / "root", "--bench-dirs", bench,
                 "--bench-worker", WORKER, "--system-led-backend", "virtual",
                 "--disk-led-backend", "virtual")
    try:
        admin = srv.start().admin()
        quick = {"pattern": "randread", "size": "1M", "block_size": "4k", "io_size": "64k"}
        done = expect(admin.post(JOBS, json={"name": "done", **quick}), 201)["job"]
        done = wait_job(admin, done["id"], {"done", "failed"})
        assert done["state"] == "done", done
        user = make_user(admin)
        expect(admin.put(LED, json={"locate": True}), 202)
        killed = expect(admin.post(JOBS, json={"name": "killed", "pattern": "randread",
                                               "size": "1M", "block_size": "4k",
                                               "runtime_s": 60}), 201)["job"]
        wait_job(admin, killed["id"], {"running"})

        # writes in flight when the kill comes: each one answered 201 must survive it
        created, stop = [], threading.Event()

        def keep_writing():
            c = srv.client(admin.token)
            while not stop.is_set():
                try:
                    resp = c.post(WS, json={"name": f"ws-{len(created)}-{time.monotonic()}"})
                except Exception:
                    return
                if resp.status_code == 201:
                    created.append(resp.json()["worksheet"]["uuid"])
                stop.wait(0.05)  # under the 256 worksheets an owner may have

        writer = threading.Thread(target=keep_writing)
        writer.start()
        # just after a flush: the series store flushes every 10 s, on the tens; the kill
        # comes as soon as the flush row of the next ten is in the database
        flushed = (int(time.time()) // 10 + 1) * 10
        held = seconds(admin, flushed - 60, 60)
        while last_flush(srv.state_dir) < flushed:
            time.sleep(0.02)
        srv.kill()
        stop.set()
        writer.join(10)
        assert created, "writes were in flight"
        assert integrity(srv.state_dir) == "ok"

        admin = srv.start().admin()
        job = expect(admin.get(f"{JOBS}/{killed['id']}"), 200)["job"]
        assert job["state"] == "interrupted" and "daemon stopped" in job["reason"], job
        assert expect(admin.get(f"{JOBS}/{done['id']}"), 200)["job"]["result"] == done["result"]
        expect(admin.get(f"{USERS}/{user}"), 200)
        assert expect(admin.get(LED), 200)["chassis"]["locate"] is True
        lost = [u for u in created if admin.get(f"{WS}/{u}").status_code != 200]
        assert not lost, f"worksheets answered 201 but lost: {lost}"
        actions = {e["action"] for e in expect(admin.get(AUDIT), 200)["logs"]}
        assert {"user.create", "hardware.locate", "bench.submit"} <= actions, actions
        # every second the last flush before the kill covered is on disk, value for value
        kept = seconds(admin, flushed - 60, 60)
        due = {t: s for t, s in held.items() if t < flushed}
        assert due, "no flushed second to check"
        lost = [t for t, s in due.items() if kept.get(t) != s]
        assert not lost, f"flushed seconds lost: {lost}"
        assert_stopped_cleanly(srv)
    finally:
        proc.stop()
        if srv.running:
            srv.kill()
        shutil.rmtree(bench, ignore_errors=True)


def test_kill_9_while_a_sweep_is_stored(tmp_path):
    """A sweep of 256 runs and kill -9 while it is being stored, at several moments: after
    the restart there is either no sweep or the sweep with all of its runs, none of them
    started out of a half-stored sweep. (Each run stored on its own left 18 to 73 runs
    of a sweep that said 256, and they ran.)"""
    bench = Path(tempfile.mkdtemp(prefix="spindle-faults-",
                                  dir=os.environ.get("SPINDLE_TEST_TMP", "/var/tmp")))
    srv = Server(tmp_path / "state", "--bench-dirs", bench, "--bench-worker", WORKER)
    body = {"name": "big", "spec": {"pattern": "randrw", "size": "1M", "block_size": "4k",
                                    "io_size": "64k"},
            "axes": {"threads": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
                     "iodepth": [1], "block_size": ["4k", "8k", "16k", "32k"],
                     "rwmix_read": [10, 20, 30, 40]}}
    try:
        outcomes = []
        for delay in (0.0, 0.02, 0.05, 0.1, 0.2):
            admin = srv.start().admin()
            sent = threading.Thread(target=lambda: srv.client(admin.token).post(
                "/api/bench/v1/sweeps", json=body), daemon=True)
            sent.start()
            time.sleep(delay)
            srv.kill()
            sent.join(10)
            assert integrity(srv.state_dir) == "ok"
            admin = srv.start().admin()
            for sweep in expect(admin.get("/api/bench/v1/sweeps?limit=200"), 200)["sweeps"]:
                runs = expect(admin.get(f"{JOBS}?sweep={sweep['id']}&limit=1000"), 200)["jobs"]
                assert sweep["runs"] == len(runs) == 256, (delay, sweep["id"], len(runs))
                outcomes.append(delay)
                # cancelled (202), then its record deleted (204), for the next round
                expect(admin.delete(f"/api/bench/v1/sweeps/{sweep['id']}"), 202)
                deadline = time.monotonic() + 30 * SLOW
                while admin.delete(f"/api/bench/v1/sweeps/{sweep['id']}").status_code != 204:
                    assert time.monotonic() < deadline, "the cancelled sweep did not end"
                    time.sleep(0.2)
            srv.stop()
        print(f"sweeps found whole after a kill at: {outcomes} s")
    finally:
        if srv.running:
            srv.kill()
        shutil.rmtree(bench, ignore_errors=True)
