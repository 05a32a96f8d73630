# SPDX-License-Identifier: ISC
"""Benchmark jobs through the API: a real spindled running real spindle-worker children on
small files in a scratch dir on the local disk, with a synthetic /proc and /sys so the
device-level figures are known. Covers the run to done with the collector's figures,
progress streams, listing, cancel, a worker killed by SIGKILL and SIGSEGV, the run limit,
the daemon killed mid-job and restarted, path escapes, spec errors, the fio shape, the
compare endpoint and the live bench.ops / bench.latency datasets. Runtimes are a second or two; nothing here asserts a speed."""
import json
import os
import shutil
import signal
import sqlite3
import stat
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (REPO, REQUEST_TIMEOUT, SLOW, EventStream, FakeProc, Server,
                      assert_stopped_cleanly, expect, expect_fault, make_user, parse_time)

WORKER = os.environ.get("SPINDLE_WORKER", str(REPO / "server" / "worker" / "spindle-worker"))
BENCH = "/api/bench/v1"
JOBS = BENCH + "/jobs"
STATES = {"queued", "running", "done", "failed", "cancelled", "interrupted"}


def scratch():
    """A directory on the local disk (O_DIRECT works there; /tmp may be a tmpfs)."""
    return Path(tempfile.mkdtemp(prefix="spindle-bench-test-",
                                 dir=os.environ.get("SPINDLE_TEST_TMP", "/var/tmp")))


def fake_sys_for(root, directory, disk="nvme0n1"):
    """<root>/sys/dev/block/<the device of directory> -> a partition of `disk`, as on a
    real box: the supervisor resolves it to the whole disk the collector reports."""
    dev = os.stat(directory).st_dev
    part = root / "sys" / "devices" / "pci0000:00" / "nvme" / disk / f"{disk}p1"
    part.mkdir(parents=True, exist_ok=True)
    (part / "partition").write_text("1\n")
    link = root / "sys" / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(os.path.relpath(part, link.parent))


def bench_server(base, *extra, state=None):
    return Server(state or base / "state", "--bench-dirs", base / "bench", "--bench-worker",
                  WORKER, "--proc-root", base / "root", "--sys-root", base / "root",
                  *extra).start()


@pytest.fixture(scope="module")
def env():
    """One server for the module: bench dir, a synthetic /proc of one disk, its /sys."""
    base = scratch()
    (base / "bench").mkdir()
    (base / "outside").mkdir()
    proc = FakeProc(base / "root", disks=1, nics=1, cpus=2).start()
    fake_sys_for(base / "root", base / "bench")
    srv = bench_server(base, "--bench-concurrency", "1", "--bench-max-runtime", "60",
                       "--bench-limit-slack", "30")
    admin = srv.admin()
    make_user(admin, roles=["operator"], name="benchop", password="Bench-op-pw-1")
    op = srv.login_client("benchop", "Bench-op-pw-1")
    yield {"base": base, "srv": srv, "admin": admin, "op": op}
    assert_stopped_cleanly(srv)
    proc.stop()
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def submit(client, spec, status=201):
    resp = client.post(JOBS, json=spec)
    body = expect(resp, status)
    if status == 201:
        job = body["job"]
        assert resp.headers["Location"] == job["href"] == f"{JOBS}/{job['id']}"
        assert job["state"] in ("queued", "running")
        return job
    return body


def wait_state(client, job_id, states, timeout=20):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        job = expect(client.get(f"{JOBS}/{job_id}"), 200)["job"]
        assert job["state"] in STATES
        if job["state"] in states:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']}"
        time.sleep(0.1)


def wait_running(client, job_id):
    """Running, with a worker that has started its I/O (its first interval came in)."""
    deadline = time.monotonic() + 15 * SLOW
    while True:
        job = wait_state(client, job_id, {"running"})
        if job.get("worker_pid") and job["progress_pct"] > 0:
            return job
        assert time.monotonic() < deadline
        time.sleep(0.1)


def quick(name, **kw):
    spec = {"name": name, "pattern": "randread", "size": "1M", "block_size": "4k",
            "io_size": "64k"}
    spec.update(kw)
    return {k: v for k, v in spec.items() if v is not None}


def test_job_runs_to_done_with_the_disks_figures(env):
    admin = env["admin"]
    spec = {"name": "done-1", "label": "zfs recordsize=8k", "pattern": "randread",
            "size": "2M", "block_size": "4k", "readers": 2, "runtime_s": 2.5, "direct": True}
    job = submit(admin, spec)
    assert job["owner"] == "admin" and job["label"] == "zfs recordsize=8k"
    assert job["target"] == str((env["base"] / "bench" / "done-1").resolve())
    assert job["spec"]["runtime_s"] == 2.5 and job["spec"]["target"] == job["target"]
    job = wait_state(admin, job["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")
    for t in ("ctime", "started", "ended"):
        assert job[t].endswith("Z")
    assert job["progress_pct"] == 100
    res = job["result"]
    assert res["read"]["ops"] > 0 and res["write"]["ops"] == 0
    assert res["read"]["bytes"] == res["read"]["ops"] * 4096
    assert res["read"]["hist"]["count"] == res["read"]["ops"]
    assert res["cpu"]["user_s"] >= 0 and res["cpu"]["system_s"] > 0
    # the collector's figures for the disk under the target (the synthetic /proc's rates)
    dev = res["device"]
    assert dev["disk"] == "nvme0n1" and dev["seconds"] >= 1
    # (the synthetic counters move every 0.2 s: a one-second rate is within 20 %)
    assert dev["reads_per_s"] == pytest.approx(FakeProc.RATES["reads"], rel=0.25)
    assert dev["writes_per_s"] == pytest.approx(FakeProc.RATES["writes"], rel=0.25)
    assert dev["busy_pct"] >= 0 and dev["read_bytes_per_s"] > 0
    assert res["box_cpu"]["user_pct"] == pytest.approx(30, abs=3)
    assert res["box_cpu"]["system_pct"] == pytest.approx(20, abs=3)
    summary = res["summary"]
    assert summary["disk"] == "nvme0n1"
    assert summary["iops"] == pytest.approx(res["read"]["iops"], abs=0.2)
    assert summary["disk_iops"] == pytest.approx(dev["ops_per_s"])
    assert summary["cpu_user_pct"] == res["box_cpu"]["user_pct"]
    # the result alone, and in fio's shape
    assert expect(admin.get(f"{JOBS}/{job['id']}/result"), 200)["result"] == res
    fio = expect(admin.get(f"{JOBS}/{job['id']}/result?format=fio"), 200)
    fj = fio["jobs"][0]
    assert fj["jobname"] == "done-1" and fj["job options"]["rw"] == "randread"
    assert fj["read"]["total_ios"] == res["read"]["ops"]
    assert fj["read"]["io_bytes"] == res["read"]["bytes"]
    assert fj["read"]["iops"] == res["read"]["iops"]
    # percentiles read off fio's coarser bins, as fio does (tests/api/test_bench_fio.py)
    assert fj["read"]["clat_ns"]["percentile"]["99.000000"] == pytest.approx(
        res["read"]["latency_ns"]["p99"], rel=1 / 64)
    assert fj["read"]["lat_ns"]["N"] == res["read"]["ops"]
    assert fio["disk_util"][0]["name"] == "nvme0n1"
    expect_fault(admin.get(f"{JOBS}/{job['id']}/result?format=xml"), 400, details="format")
    # the run is in the audit log
    logs = expect(admin.get("/api/log/v1/logs/audit?limit=1000"), 200)["logs"]
    assert any(l["action"] == "bench.submit" and l["target"] == job["target"] for l in logs)


def test_progress_streams_then_replays(env):
    admin, srv = env["admin"], env["srv"]
    job = submit(admin, {"name": "prog", "pattern": "randrw", "size": "1M",
                         "block_size": "4k", "threads": 2, "runtime_s": 2.2})
    # NDJSON while it runs: the lines as they come, then the end
    resp = admin.get(f"{JOBS}/{job['id']}/progress", stream=True)
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(l) for l in resp.iter_lines() if l.strip()]
    assert lines[-1] == {"type": "end", "id": job["id"], "state": "done"}
    ivs = lines[:-1]
    assert [l["seq"] for l in ivs] == list(range(1, len(ivs) + 1)) and len(ivs) >= 2
    for l in ivs:
        assert l["type"] == "interval" and l["phase"] == "measure"
        assert l["read"]["ops"] > 0 and l["write"]["ops"] > 0
    res = wait_state(admin, job["id"], {"done"})["result"]
    assert sum(l["read"]["ops"] for l in ivs) == res["read"]["ops"]
    # afterwards: the recorded lines replayed, the same
    again = admin.get(f"{JOBS}/{job['id']}/progress")
    replay = [json.loads(l) for l in again.text.splitlines() if l.strip()]
    assert replay == lines
    assert again.headers["Content-Length"] == str(len(again.content))  # whole, not streamed
    # as Server-Sent Events
    with EventStream(srv, admin.token, f"{JOBS}/{job['id']}/progress") as ev:
        assert ev.status == 200 and ev.headers["Content-Type"].startswith("text/event-stream")
        first = ev.next_event()
        assert first["event"] == "interval" and json.loads(first["data"]) == ivs[0]
        end = ev.next_event(lambda e: e.get("event") == "end")
        assert json.loads(end["data"])["state"] == "done"


def test_progress_joined_mid_run_replays_stored_then_live_lines_once(env):
    """Joined after the writer has stored some lines (every 2 s, off the loop) and while
    others are only in memory: each line once, in order, then the end; the same again
    from the store once the job is done."""
    admin = env["admin"]
    job = submit(admin, {"name": "join", "pattern": "randread", "size": "1M",
                         "block_size": "4k", "readers": 1, "runtime_s": 5.5})
    deadline = time.monotonic() + 20 * SLOW
    while expect(admin.get(f"{JOBS}/{job['id']}"), 200)["job"].get("progress_pct", 0) < 60:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    resp = admin.get(f"{JOBS}/{job['id']}/progress", stream=True)
    lines = [json.loads(l) for l in resp.iter_lines() if l.strip()]
    assert lines[-1] == {"type": "end", "id": job["id"], "state": "done"}
    seqs = [l["seq"] for l in lines[:-1]]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 5
    done = wait_state(admin, job["id"], {"done"})
    assert sum(l["read"]["ops"] for l in lines[:-1]) == done["result"]["read"]["ops"]
    replay = [json.loads(l) for l in admin.get(f"{JOBS}/{job['id']}/progress").text.splitlines()
              if l.strip()]
    assert replay == lines


def test_io_uring_job_carries_its_depth_and_batch_to_fio_options(env):
    admin = env["admin"]
    job = submit(admin, {"name": "uring-b", "pattern": "randread", "size": "1M",
                         "block_size": "4k", "engine": "io_uring", "iodepth": 4,
                         "iodepth_batch": 2, "io_size": "256k", "direct": True})
    assert job["spec"]["iodepth_batch"] == 2
    job = wait_state(admin, job["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")
    assert job["result"]["read"]["bytes"] == 256 * 1024
    opts = expect(admin.get(f"{JOBS}/{job['id']}/result?format=fio"), 200)["jobs"][0]
    opts = opts["job options"]
    assert (opts["ioengine"], opts["iodepth"], opts["iodepth_batch_submit"]) == ("io_uring", "4",
                                                                                 "2")
    expect_fault(admin.post(JOBS, json={"pattern": "randread", "size": "1M", "engine": "io_uring",
                                        "iodepth": 2, "iodepth_batch": 4}),
                 400, details="iodepth_batch")


def live_data(client, name, start, end):
    """{second: {key: value}} of dataset `name` over [start, end), a window in the past."""
    enc = name.replace("[", "%5B").replace("]", "%5D")
    doc = expect(client.get(f"/api/analytics/v1/datasets/{enc}/data?start={start}"
                            f"&seconds={end - start}"), 200)
    out = {}
    for smp in doc["data"]:
        d = {None: smp["data"]["value"]}
        d.update({kv["key"]: kv["value"] for kv in smp["data"]["data"]})
        out[smp["sample"]] = d
    return out


def test_live_bench_datasets_follow_the_running_job(env):
    """bench.ops[direction] and bench.latency[direction] are always listed; while a job
    runs each second holds its newest interval line's IOPS and mean latency, and after it
    ops are 0 and latency has no value."""
    admin = env["admin"]
    listed = {d["name"]: d for d in
              expect(admin.get("/api/analytics/v1/datasets"), 200)["datasets"]}
    assert listed["bench.ops[direction]"]["unit"] == "operations per second"
    assert listed["bench.latency[direction]"]["unit"] == "milliseconds"
    assert "mean" in listed["bench.latency[direction]"]["explanation"]
    job = submit(admin, quick("live-ds", runtime_s=3, io_size=None, direct=True))
    job = wait_state(admin, job["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")
    # from the second it started on, the ticks saw no job of an earlier test
    t0 = int(parse_time(job["started"]).timestamp())
    lines = [json.loads(l) for l in admin.get(f"{JOBS}/{job['id']}/progress").text.splitlines()
             if l.strip()]
    ivs = [l for l in lines if l["type"] == "interval"]
    assert len(ivs) >= 2 and all(l["write"]["ops"] == 0 for l in ivs)
    # wait until the collector has had two ticks after the job's end
    end = int(time.time()) + 3
    time.sleep(max(0, end + 1.2 - time.time()))
    ops = live_data(admin, "bench.ops[direction]", t0, end)
    lat = live_data(admin, "bench.latency[direction]", t0, end)
    busy = [t for t in sorted(ops) if ops[t][None] > 0]
    assert len(busy) >= 2, ops
    for t in busy:
        # one job: the second is one of its interval lines, read ops with their latency
        # (kept to 3 decimals in the store)
        assert ops[t]["write"] == 0 and ops[t][None] == ops[t]["read"]
        assert "write" not in lat[t] and lat[t][None] == lat[t]["read"]
        assert any(ops[t]["read"] == pytest.approx(l["read"]["iops"], abs=2e-3) and
                   lat[t]["read"] == pytest.approx(l["read"]["lat_mean_ns"] / 1e6, abs=2e-3)
                   for l in ivs), (t, ops[t], lat[t], ivs)
    assert len(busy) <= len(ivs) + 2 and busy == list(range(busy[0], busy[-1] + 1))
    # after the job: a value every second, ops 0, no latency
    after = [t for t in sorted(ops) if t > busy[-1]]
    assert after and all(ops[t] == {None: 0, "read": 0, "write": 0} for t in after), ops
    assert not any(t in lat for t in after), lat
    assert all(ops[t][None] == 0 for t in ops if t < busy[0])


def test_sse_stream_of_a_running_job(env):
    admin, srv = env["admin"], env["srv"]
    job = submit(admin, quick("sse-live", runtime_s=1.5, io_size=None))
    with EventStream(srv, admin.token, f"{JOBS}/{job['id']}/progress") as ev:
        iv = ev.next_event(lambda e: e.get("event") == "interval")
        assert json.loads(iv["data"])["seq"] == 1
        end = ev.next_event(lambda e: e.get("event") == "end")
        assert json.loads(end["data"])["state"] == "done"


def test_progress_streams_end_when_the_daemon_stops(tmp_path):
    """A stream open at shutdown gets an end line saying so, then the end of its body; HEAD
    on a running job's progress answers the headers and ends; past the stream limit a
    client is told to come back."""
    base = scratch()
    try:
        (base / "bench").mkdir()
        (base / "root").mkdir()
        srv = bench_server(base, state=tmp_path / "state")
        admin = srv.admin()
        job = submit(admin, quick("stopping", runtime_s=30, io_size=None))
        wait_running(admin, job["id"])
        head = admin.request("HEAD", f"{JOBS}/{job['id']}/progress")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["Content-Type"].startswith("application/x-ndjson")
        ev = EventStream(srv, admin.token, f"{JOBS}/{job['id']}/progress")
        assert json.loads(ev.next_event()["data"])["type"] == "interval"
        nd = admin.get(f"{JOBS}/{job['id']}/progress", stream=True)
        assert nd.headers["X-Accel-Buffering"] == "no"
        lines = nd.iter_lines()
        assert json.loads(next(l for l in lines if l.strip()))["type"] == "interval"
        code, _ = srv.stop()
        assert code == 0, srv.log_tail()
        end = ev.next_event(lambda e: e.get("event") == "end")
        assert json.loads(end["data"]) == {"type": "end", "id": job["id"], "state": "running",
                                           "reason": "the server is stopping"}
        assert ev.at_eof(timeout=1)
        ev.close()
        rest = [json.loads(l) for l in lines if l.strip()]
        assert rest[-1] == {"type": "end", "id": job["id"], "state": "running",
                            "reason": "the server is stopping"}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_list_and_filters(env):
    admin = env["admin"]
    a = submit(admin, quick("list-a", label="lbl-one"))
    b = submit(admin, quick("list-b", label="lbl-two"))
    wait_state(admin, b["id"], {"done"})
    jobs = expect(admin.get(JOBS + "?label=lbl-one"), 200)["jobs"]
    assert [j["id"] for j in jobs] == [a["id"]]
    assert jobs[0]["href"] == a["href"] and "result" not in jobs[0]
    assert jobs[0]["summary"]["iops"] > 0
    done = expect(admin.get(JOBS + "?state=done&limit=1000"), 200)["jobs"]
    assert {a["id"], b["id"]} <= {j["id"] for j in done}
    assert all(j["state"] == "done" for j in done)
    assert len(expect(admin.get(JOBS + "?limit=1"), 200)["jobs"]) == 1
    assert expect(admin.get(JOBS + "?start=2100-01-01T00:00:00Z"), 200) == \
        {"jobs": [], "next": None}
    # newest first, a page at a time: the pages together are the whole list, once each
    everything = expect(admin.get(JOBS + "?limit=1000"), 200)
    assert everything["next"] is None
    ids = [j["id"] for j in everything["jobs"]]
    assert ids == sorted(ids, reverse=True) and ids[0] == b["id"]
    paged, url = [], JOBS + "?limit=1"
    while True:
        page = expect(admin.get(url), 200)
        assert len(page["jobs"]) <= 1
        paged += [j["id"] for j in page["jobs"]]
        if page["next"] is None:
            break
        url = JOBS + f"?limit=1&next={page['next']}"
    assert paged == ids
    # a filter holds across pages
    first = expect(admin.get(JOBS + "?label=lbl-two&limit=1"), 200)
    assert [j["id"] for j in first["jobs"]] == [b["id"]]
    expect_fault(admin.get(JOBS + "?next=abc"), 400, "ERR_INVALID_ARG", details="next: ")
    f = expect_fault(admin.get(JOBS + "?state=sleeping"), 400, details="state")
    assert f["details"] == ("state: must be queued, running, done, failed, cancelled or "
                            "interrupted"), f
    expect_fault(admin.get(JOBS + "?limit=0"), 400, details="limit")
    expect_fault(admin.get(JOBS + "?start=yesterday"), 400, details="start")
    expect_fault(admin.get(JOBS + "?colour=red"), 400, "ERR_UNKNOWN_ARG")
    expect_fault(admin.get(JOBS + "/999999"), 404)
    # an id that is not one is the request's fault, and the answer names it
    for bad in ("abc", "0", "-1", "1.5", "99999999999999999999"):
        for path in (f"{JOBS}/{bad}", f"{JOBS}/{bad}/progress", f"{JOBS}/{bad}/result",
                     f"{BENCH}/sweeps/{bad}"):
            f = expect_fault(admin.get(path), 400, "ERR_INVALID_ARG", details="id: ")
            assert "a positive integer" in f["details"], (path, f)
    kind = "job"
    f = expect_fault(admin.delete(f"{JOBS}/abc"), 400, "ERR_INVALID_ARG")
    assert f["details"] == f"id: 'abc' is not a {kind} id (a positive integer)", f


def test_cancel_running_and_queued(env):
    admin, op = env["admin"], env["op"]
    running = submit(op, quick("cancel-run", runtime_s=30, io_size=None))
    queued = submit(op, quick("cancel-queued"))
    wait_running(op, running["id"])
    # concurrency 1: the second waits
    assert expect(op.get(f"{JOBS}/{queued['id']}"), 200)["job"]["state"] == "queued"
    dash = expect(admin.get("/api/status/v1/dashboard"), 200)
    assert dash["dashboard"]["jobs"] == {"running": 1, "queued": 1}
    resp = op.delete(f"{JOBS}/{queued['id']}")
    assert expect(resp, 202)["job"]["state"] == "cancelled"
    t0 = time.monotonic()
    assert expect(op.delete(f"{JOBS}/{running['id']}"), 202)["job"]["state"] == "running"
    job = wait_state(op, running["id"], {"cancelled", "failed", "done"})
    assert job["state"] == "cancelled" and job["reason"] == "cancelled by benchop"
    assert time.monotonic() - t0 < 10
    # what it did before it stopped is kept, marked partial
    assert job["result"]["partial"] is True and job["result"]["read"]["ops"] > 0
    q = expect(op.get(f"{JOBS}/{queued['id']}"), 200)["job"]
    assert q["state"] == "cancelled" and q["started"] is None
    # the monitor role reads but may not cancel
    monitor = env["srv"].login_client(*make_monitor(env))
    expect_fault(monitor.delete(f"{JOBS}/{running['id']}"), 403)


def test_cancelling_queued_jobs_while_one_runs_keeps_the_daemon_and_the_states(tmp_path):
    """Queued jobs cancelled while one runs, one after another and twice at once from 8
    threads. A cancelled job's end goes to the database writer; here the writer is held
    back (a write lock taken by the test, for less than its busy timeout) while the
    running job stops too, so its slot frees while those ends are still unstored. A
    cancelled job must not be started then, nor freed while anything refers to it (it
    was: a worker ran for a freed job, a use-after-free, and the daemon crashed)."""
    base = scratch()
    try:
        (base / "bench").mkdir()
        (base / "root").mkdir()
        state = tmp_path / "state"
        srv = bench_server(base, "--bench-concurrency", "1", state=state)
        admin = srv.admin()
        running = submit(admin, quick("uaf-run", runtime_s=30, io_size=None))
        wait_running(admin, running["id"])
        spec = {"pattern": "randread", "size": "1M", "runtime_s": 1}
        queued = [submit(admin, spec)["id"] for _ in range(32)]
        last = submit(admin, quick("uaf-next", runtime_s=30, io_size=None))
        local = threading.local()

        def delete(job_id):
            if not hasattr(local, "client"):
                local.client = srv.client(admin.token)
            resp = local.client.delete(f"{JOBS}/{job_id}")
            return job_id, resp.status_code, resp.json()

        def delete_twice_at_once(ids):
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(delete, ids + ids))
            assert all(status == 202 for _, status, _ in answers), answers
            return [body["job"] for _, _, body in answers]

        held = sqlite3.connect(state / "spindle.db", isolation_level=None, timeout=10)
        held.execute("BEGIN IMMEDIATE")
        try:
            for job_id in queued[:16]:
                assert expect(admin.delete(f"{JOBS}/{job_id}"), 202)["job"]["state"] == \
                    "cancelled"
            # both answers say what will be stored, the second as well as the first
            assert {j["state"] for j in delete_twice_at_once(queued[16:])} == {"cancelled"}
            expect(admin.delete(f"{JOBS}/{running['id']}"), 202)
            # its worker has gone (the slot is free) before the writer may go on
            deadline = time.monotonic() + 5 * SLOW
            while "worker_pid" in expect(admin.get(f"{JOBS}/{running['id']}"), 200)["job"]:
                assert time.monotonic() < deadline, "the cancelled worker did not stop"
                time.sleep(0.05)
            expect(admin.get(f"{JOBS}?limit=1"), 200)  # a turn of the loop after its exit
        finally:
            held.execute("ROLLBACK")
            held.close()
        assert srv.running, srv.log_tail()
        job = wait_state(admin, running["id"], {"cancelled", "failed", "done"})
        assert job["state"] == "cancelled", job
        for job_id in queued:
            job = wait_state(admin, job_id, {"cancelled", "failed", "done", "running"})
            assert job["state"] == "cancelled", job
            assert job["started"] is None and "worker_pid" not in job, job
            assert job["reason"] == "cancelled by admin before it started", job
        # the slot went to the one job left in the queue; cancelled twice at once (by an
        # operator, who may not delete its record once it has ended), it stops
        wait_running(admin, last["id"])
        make_user(admin, roles=["operator"], name="uafop", password="Uaf-op-pw-1")
        op = srv.login_client("uafop", "Uaf-op-pw-1")
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: srv.client(op.token).delete(
                f"{JOBS}/{last['id']}"), range(2)))
        assert answers[0].status_code == 202 or answers[1].status_code == 202
        assert all(a.status_code == 202 or (a.status_code == 403 and "settings:modify" in a.text)
                   for a in answers), [a.text for a in answers]
        job = wait_state(admin, last["id"], {"cancelled", "failed", "done"})
        assert job["state"] == "cancelled", job
        # nothing runs or waits (the dashboard is rebuilt every second), and the queue
        # still takes (and runs) a job
        deadline = time.monotonic() + 10 * SLOW
        while (counts := expect(admin.get("/api/status/v1/dashboard"), 200)["dashboard"]
               ["jobs"]) != {"running": 0, "queued": 0}:
            assert time.monotonic() < deadline, counts
            time.sleep(0.2)
        after = submit(admin, quick("uaf-after"))
        assert wait_state(admin, after["id"], {"done", "failed"})["state"] == "done"
        assert "cannot record" not in srv.log_text()
        assert_stopped_cleanly(srv)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def make_monitor(env):
    name = "benchmon"
    if not getattr(make_monitor, "made", False):
        make_user(env["admin"], roles=["monitor"], name=name, password="Bench-mon-pw-1")
        make_monitor.made = True
    return name, "Bench-mon-pw-1"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_worker_killed_is_failed_with_the_signal(env, sig):
    admin = env["admin"]
    job = submit(admin, quick(f"kill-{sig.name}", runtime_s=30, io_size=None))
    pid = wait_running(admin, job["id"])["worker_pid"]
    os.kill(pid, sig)
    job = wait_state(admin, job["id"], {"failed", "done", "cancelled"})
    assert job["state"] == "failed"
    assert sig.name in job["reason"], job["reason"]


def test_delete_a_finished_run_is_for_admins(env):
    admin, op = env["admin"], env["op"]
    job = submit(op, quick("del"))
    wait_state(op, job["id"], {"done"})
    expect_fault(op.delete(f"{JOBS}/{job['id']}"), 403, details="settings:modify")
    assert expect(admin.delete(f"{JOBS}/{job['id']}"), 204) is None
    expect_fault(admin.get(f"{JOBS}/{job['id']}"), 404)
    expect_fault(admin.get(f"{JOBS}/{job['id']}/progress"), 404)
    expect_fault(admin.delete(f"{JOBS}/{job['id']}"), 404)


def test_compare(env):
    admin = env["admin"]
    a = submit(admin, quick("cmp-a", io_size="256k"))
    b = submit(admin, quick("cmp-b", io_size="256k", block_size="8k"))
    ra = wait_state(admin, a["id"], {"done"})["result"]
    rb = wait_state(admin, b["id"], {"done"})["result"]
    cmp = expect(admin.get(f"{BENCH}/compare?jobs={a['id']},{b['id']}&baseline={b['id']}"),
                 200)["comparison"]
    assert cmp["baseline"] == b["id"]
    assert [j["id"] for j in cmp["jobs"]] == [a["id"], b["id"]]
    assert [j["href"] for j in cmp["jobs"]] == [a["href"], b["href"]]
    figs = {f["name"]: f for f in cmp["figures"]}
    iops = figs["read.iops"]
    assert iops["values"] == [ra["read"]["iops"], rb["read"]["iops"]]
    assert iops["diff_pct"][1] == 0
    want = round((ra["read"]["iops"] - rb["read"]["iops"]) / rb["read"]["iops"] * 100, 1)
    assert iops["diff_pct"][0] == pytest.approx(want, abs=0.11)
    assert figs["read.latency_ns.p99"]["values"] == [ra["read"]["latency_ns"]["p99"],
                                                    rb["read"]["latency_ns"]["p99"]]
    assert figs["cpu.system_s"]["unit"] == "seconds"
    assert "write.iops" in figs and "iozone.read" not in figs
    # the first is the baseline by default
    cmp = expect(admin.get(f"{BENCH}/compare?jobs={a['id']},{b['id']}"), 200)["comparison"]
    assert cmp["baseline"] == a["id"]
    expect_fault(admin.get(f"{BENCH}/compare?jobs={a['id']},999999"), 404)
    expect_fault(admin.get(f"{BENCH}/compare?jobs={a['id']},x"), 400, details="jobs")
    expect_fault(admin.get(f"{BENCH}/compare?jobs={a['id']}&baseline={b['id']}"), 400,
                 details="baseline")
    expect_fault(admin.get(f"{BENCH}/compare"), 400, details="jobs")
    for query, details in [
        (f"jobs={a['id']},{a['id']}", f"jobs: {a['id']} is named twice"),
        ("jobs=" + ",".join(str(i) for i in range(1, 18)), "jobs: at most 16 jobs"),
        ("jobs=,,", "jobs: no job ids"),
        (f"jobs={a['id']}&baseline=first", "baseline: must be one of the jobs"),
    ]:
        f = expect_fault(admin.get(f"{BENCH}/compare?{query}"), 400, "ERR_INVALID_ARG")
        assert f["details"] == details, (query, f)


def test_iozone_and_slob_presets(env):
    admin = env["admin"]
    presets = expect(admin.get(f"{BENCH}/presets"), 200)["presets"]
    assert [p["name"] for p in presets] == ["slob", "iozone"]
    job = submit(admin, {"name": "ioz", "pattern": "iozone", "file_size": "1M",
                         "record_size": "64k"})
    res = wait_state(admin, job["id"], {"done", "failed"})["result"]
    assert set(res["iozone"]) >= {"write", "rewrite", "read", "reread", "random_read",
                                  "random_write", "unit"}
    assert [p["pass"] for p in res["passes"]][0] == "write"
    job = submit(admin, {"name": "slob", "pattern": "slob", "sessions": 2, "update_pct": 50,
                         "size": "1M", "run_time": 1})
    res = wait_state(admin, job["id"], {"done", "failed"})["result"]
    assert res["read"]["ops"] > 0 and res["write"]["ops"] > 0


@pytest.mark.parametrize("spec,status,message,field", [
    ({}, 400, "ERR_MISSING_ARG", "pattern"),
    ({"pattern": "randread", "frobnicate": 1}, 400, "ERR_UNKNOWN_ARG", "frobnicate"),
    ({"pattern": "randread", "block_size": 1000}, 400, "ERR_INVALID_ARG", "block_size"),
    ({"pattern": "randread", "iodepth": 8}, 400, "ERR_INVALID_ARG", "iodepth"),
    ({"pattern": "randread", "runtime_s": "soon"}, 400, "ERR_INVALID_ARG", "runtime_s"),
    ({"pattern": "randread", "runtime_s": 3600}, 400, "ERR_INVALID_ARG", "runtime_s"),
    ({"pattern": "randread", "writers": 2}, 400, "ERR_INVALID_ARG", "writers"),
    ({"pattern": "iozone"}, 400, "ERR_MISSING_ARG", "size"),
    ({"pattern": "randread", "target": "relative/x"}, 400, "ERR_INVALID_ARG", "target"),
    # known before the job is queued: no 201 followed by a failure
    ({"pattern": "randread"}, 400, "ERR_MISSING_ARG", "size"),
    ({"pattern": "randread", "name": "no-such-file"}, 400, "ERR_MISSING_ARG", "size"),
    ({"pattern": "randread", "size": "1P"}, 400, "ERR_INVALID_ARG", "size"),
    ({"pattern": "randread", "size": "1M", "runtime_s": -5}, 400, "ERR_INVALID_ARG",
     "runtime_s"),
    # the kind comes from the spec parser, not from words in the client's own value
    ({"pattern": "randread", "size": "x: required"}, 400, "ERR_INVALID_ARG", "size"),
    ({"pattern": "randread", "ramp_s": "x: unknown field"}, 400, "ERR_INVALID_ARG", "ramp_s"),
])
def test_spec_errors_name_the_field(env, spec, status, message, field):
    fault = expect_fault(env["admin"].post(JOBS, json=spec), status, message)
    assert fault["details"].startswith(field + ":"), fault["details"]


def test_faults_state_the_limits_in_force(env):
    """The module's server runs with --bench-max-runtime 60: a runtime out of range is
    told that limit, not the spec's own (7 days), whichever way it is out of range."""
    for runtime in (-5, 100000, "8d"):
        spec = {"pattern": "randread", "size": "1M", "runtime_s": runtime}
        fault = expect_fault(env["admin"].post(JOBS, json=spec), 400, "ERR_INVALID_ARG")
        assert fault["details"].startswith("runtime_s:"), fault
        assert "to 60 s (bench_max_runtime)" in fault["details"], fault
        assert "604800" not in fault["details"], fault
    missing = str(env["base"] / "bench" / "not-there")
    fault = expect_fault(env["admin"].post(JOBS, json={"pattern": "randread",
                                                       "target": missing}), 400)
    assert fault["details"].startswith("size: required") and missing in fault["details"]
    fault = expect_fault(env["admin"].post(JOBS, json={"pattern": "randread", "size": "1P"}),
                         400)
    assert "larger than the filesystem" in fault["details"], fault


def test_body_refusals(env):
    admin = env["admin"]
    expect_fault(admin.post(JOBS, data="pattern=randread",
                            headers={"Content-Type": "application/x-www-form-urlencoded"}),
                 415)
    expect_fault(admin.post(JOBS, data="{", headers={"Content-Type": "application/json"}),
                 400)
    expect_fault(admin.post(JOBS, json={"pattern": "randread", "label": "x" * 70000}), 413)


def test_path_escapes_are_refused(env):
    admin, base = env["admin"], env["base"]
    bench, outside = base / "bench", base / "outside"
    secret = outside / "secret"
    secret.write_bytes(b"s" * 65536)
    (bench / "link").symlink_to(secret)
    (bench / "dirlink").symlink_to(outside)
    (bench / "subdir").mkdir()
    cases = [
        (str(bench / ".." / "outside" / "secret"), 403, "outside the bench dirs"),
        (str(secret), 403, "outside the bench dirs"),
        ("/etc/passwd", 403, "outside the bench dirs"),
        (str(bench / "link"), 403, "symbolic link"),
        (str(bench / "dirlink" / "secret"), 403, "outside the bench dirs"),
        (str(bench / "dirlink" / "new"), 403, "outside the bench dirs"),
        (str(bench / "subdir"), 400, "neither a regular file"),
        (str(bench / "nodir" / "x"), 400, "target"),
        (str(bench) + "/..", 400, "names no file"),
    ]
    for target, status, why in cases:
        spec = quick("escape", target=target, pattern="write", io_size=None)
        fault = expect_fault(admin.post(JOBS, json=spec), status)
        assert fault["details"].startswith("target:") and why in fault["details"], fault
    assert secret.read_bytes() == b"s" * 65536
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    # refused submissions are audited
    logs = expect(admin.get("/api/log/v1/logs/audit?limit=1000"), 200)["logs"]
    assert any(l["action"] == "bench.submit" and l["result"] == "failure"
               and "outside the bench dirs" in l["details"] for l in logs)
    # inside, a file of its own works (no target: named after the job)
    job = submit(admin, quick("own-file"))
    assert job["target"] == str((bench / "own-file").resolve())
    assert wait_state(admin, job["id"], {"done", "failed"})["state"] == "done"


def test_hard_links_and_other_users_files_are_refused(env):
    """A hard link in a bench dir is another name of a file that may be outside it (a
    randwrite on one overwrote the outside file), and another user's file is not the
    daemon's to overwrite: 400 naming target, as a named target or as a job's own file."""
    admin, base = env["admin"], env["base"]
    bench, outside = base / "bench", base / "outside"
    victim = outside / "hl-victim"
    victim.write_bytes(b"v" * 65536)
    os.link(victim, bench / "hl")
    foreign = bench / "foreign"
    foreign.write_bytes(b"f" * 65536)
    os.chown(foreign, 65534, 65534)
    cases = [
        (quick("hl-a", target=str(bench / "hl"), pattern="randwrite"), "2 hard links"),
        (quick("hl", pattern="randwrite"), "2 hard links"),  # its own file, bench/hl
        (quick("hl-b", target=str(foreign), pattern="randwrite"), "belongs to uid 65534"),
    ]
    for spec, why in cases:
        fault = expect_fault(admin.post(JOBS, json=spec), 400, "ERR_INVALID_ARG")
        assert fault["details"].startswith("target:") and why in fault["details"], fault
    assert victim.read_bytes() == b"v" * 65536
    assert foreign.read_bytes() == b"f" * 65536


def test_a_target_made_a_hard_link_after_submit_is_refused_by_the_worker(env):
    """The name checked at submit time may change before the job starts: the worker
    checks the file it opened (--confine), and the job fails without writing to it."""
    admin, base = env["admin"], env["base"]
    bench, outside = base / "bench", base / "outside"
    first = submit(admin, quick("hl-first", runtime_s=30, io_size=None))
    wait_running(admin, first["id"])
    target = bench / "hl-later"
    target.write_bytes(b"\0" * (1 << 20))
    job = submit(admin, quick("hl-later", target=str(target), pattern="randwrite",
                              size=None))
    victim = outside / "hl-later-victim"
    victim.write_bytes(b"v" * (1 << 20))
    target.unlink()
    os.link(victim, target)
    expect(admin.delete(f"{JOBS}/{first['id']}"), 202)
    job = wait_state(admin, job["id"], {"failed", "done", "cancelled"})
    assert job["state"] == "failed" and "hard links" in job["reason"], job
    assert job["reason"].startswith("target:"), job
    assert victim.read_bytes() == b"v" * (1 << 20)


def test_a_layout_that_would_fill_the_filesystem_is_refused_up_front(tmpfs, tmp_path):
    """The state dir (and so the default bench dir) on an 8 MB tmpfs: a 64M job used to be
    queued, lay out until ENOSPC and leave the state filesystem full. A size beyond the
    filesystem, or one that would leave less than --bench-reserve (5 % by default) free,
    is a 400 naming size that states the reserve and the free space; nothing is laid
    out; a job that fits runs."""
    fs = tmpfs("8m")
    (tmp_path / "root").mkdir()
    srv = Server(fs / "state", "--bench-worker", WORKER, "--proc-root", tmp_path / "root",
                 "--sys-root", tmp_path / "root").start()
    try:
        admin = srv.admin()
        spec = {"pattern": "randread", "size": "64M", "runtime_s": 1}
        for size in ("64M", "1P"):
            fault = expect_fault(admin.post(JOBS, json=dict(spec, size=size)), 400,
                                 "ERR_INVALID_ARG")
            assert fault["details"].startswith("size:"), fault
            assert "larger than the filesystem" in fault["details"] and "8.0 MiB" in \
                fault["details"], fault
        st = os.statvfs(fs)
        reserve = st.f_blocks * st.f_frsize // 100 * 5
        fits_not = (st.f_bavail * st.f_frsize - reserve // 2) // 8192 * 8192
        fault = expect_fault(admin.post(JOBS, json=dict(spec, size=fits_not)), 400)
        assert fault["details"].startswith("size:"), fault
        assert "reserve of 409.6 KiB (bench_reserve 5%)" in fault["details"], fault
        assert " free" in fault["details"], fault
        assert os.listdir(fs / "state" / "bench") == []
        job = submit(admin, dict(spec, size="1M", name="fits"))
        assert wait_state(admin, job["id"], {"done", "failed"})["state"] == "done"
        srv.admin()  # the state filesystem still takes a session
        assert_stopped_cleanly(srv)
        # a reserve in bytes, and none
        srv = Server(fs / "state", "--bench-worker", WORKER, "--bench-reserve", "7M").start()
        fault = expect_fault(srv.admin().post(JOBS, json=dict(spec, size="512k")), 400)
        assert "reserve of 7.0 MiB (bench_reserve 7M)" in fault["details"], fault
        assert_stopped_cleanly(srv)
        srv = Server(fs / "state", "--bench-worker", WORKER, "--bench-reserve", "0").start()
        submit(srv.admin(), dict(spec, size="512k", name="no-reserve"))
    finally:
        assert_stopped_cleanly(srv)


def test_a_job_whose_space_went_meanwhile_fails_at_its_start(tmpfs, tmp_path):
    """Checked at submit time, and again as the job starts: a queued job whose space was
    taken meanwhile fails then, with the reason stored, nothing laid out, deletable."""
    fs = tmpfs("8m")
    (fs / "bench").mkdir()
    (tmp_path / "root").mkdir()
    base = scratch()
    try:
        (base / "bench").mkdir()
        srv = Server(tmp_path / "state", "--bench-worker", WORKER, "--bench-dirs",
                     f"{base / 'bench'}:{fs / 'bench'}", "--bench-reserve", "0",
                     "--proc-root", tmp_path / "root", "--sys-root", tmp_path / "root").start()
        admin = srv.admin()
        first = submit(admin, quick("space-first", runtime_s=30, io_size=None))
        wait_running(admin, first["id"])
        job = submit(admin, quick("space-later", target=str(fs / "bench" / "later"),
                                  size="4M"))
        (fs / "filler").write_bytes(b"\0" * (6 << 20))
        expect(admin.delete(f"{JOBS}/{first['id']}"), 202)
        job = wait_state(admin, job["id"], {"failed", "done", "cancelled"})
        assert job["state"] == "failed" and job["reason"].startswith("at its start: size:"), job
        assert "bench_reserve 0" in job["reason"] and job["started"] is None, job
        assert os.listdir(fs / "bench") == []
        assert expect(admin.delete(f"{JOBS}/{job['id']}"), 204) is None
        assert_stopped_cleanly(srv)
    finally:
        shutil.rmtree(base, ignore_errors=True)


SLEEPING_WORKER = """#!/usr/bin/python3
# A worker that takes its spec and keeps its job running until it is killed.
import sys, time
sys.stdin.read()
time.sleep(120)
"""


def test_an_end_the_database_refuses_is_kept_and_stored_later(tmp_path):
    """A job's end the database does not take (a full disk; here a write lock held past
    the writer's 5 s busy timeout) was dropped: the job read "running" until a restart,
    then "interrupted", and could not be deleted meanwhile. Now it reads as it ended, is
    handed to the writer again every 2 s, and once stored is "failed" for good."""
    fake = tmp_path / "sleeping-worker"
    fake.write_text(SLEEPING_WORKER)
    fake.chmod(0o755)
    (tmp_path / "bench").mkdir()
    state = tmp_path / "state"
    args = ("--bench-dirs", tmp_path / "bench", "--bench-worker", fake)
    srv = Server(state, *args).start()
    try:
        admin = srv.admin()
        job = submit(admin, quick("unstored"))
        pid = wait_state(admin, job["id"], {"running"})["worker_pid"]

        def stored():
            with sqlite3.connect(state / "spindle.db") as db:
                return db.execute("SELECT state FROM bench_runs WHERE id = ?",
                                  (job["id"],)).fetchone()[0]

        deadline = time.monotonic() + 10 * SLOW
        while stored() != "running":  # the running row is written off the loop
            assert time.monotonic() < deadline
            time.sleep(0.05)
        held = sqlite3.connect(state / "spindle.db", isolation_level=None, timeout=10)
        held.execute("BEGIN IMMEDIATE")
        try:
            os.kill(pid, signal.SIGKILL)
            # the end is refused after the writer's busy timeout; it reads as it ended
            got = wait_state(admin, job["id"], {"failed", "done", "cancelled"}, timeout=30)
            assert got["state"] == "failed" and "SIGKILL" in got["reason"], got
            assert stored() == "running"
            resp = admin.delete(f"{JOBS}/{job['id']}")
            fault = expect_fault(resp, 503, "ERR_BUSY")
            assert "not stored yet" in fault["details"], fault
            # when it is tried again (a Retry-After set before fault_set was lost: 1 s)
            assert resp.headers["Retry-After"] == "2", resp.headers
        finally:
            held.execute("ROLLBACK")
            held.close()
        deadline = time.monotonic() + 15 * SLOW
        while stored() != "failed":
            assert time.monotonic() < deadline, stored()
            time.sleep(0.1)
        assert_stopped_cleanly(srv)
        srv = Server(state, *args).start()
        admin = srv.admin()
        got = expect(admin.get(f"{JOBS}/{job['id']}"), 200)["job"]
        assert got["state"] == "failed" and "SIGKILL" in got["reason"], got
        assert expect(admin.delete(f"{JOBS}/{job['id']}"), 204) is None
    finally:
        assert_stopped_cleanly(srv)


FILLING_WORKER = """#!/usr/bin/python3
# A worker whose layout meets a full disk, and which leaves it full (as one that is
# killed there would): it fills its target's filesystem, says so and fails.
import json, os, sys
spec = json.load(sys.stdin)
with open(os.path.join(os.path.dirname(spec["target"]), "filler"), "wb", buffering=0) as f:
    for size in (1 << 20, 1 << 12, 1):
        try:
            while True:
                f.write(b"\\0" * size)
        except OSError:
            pass
print(json.dumps({"type": "error", "message": "target: laying out: No space left on device"}),
      flush=True)
sys.exit(1)
"""


def test_a_failed_jobs_end_waits_for_space_on_a_full_state_filesystem(tmpfs, tmp_path):
    """The state dir on a tmpfs that the job's worker fills: its end cannot be stored. It
    reads failed meanwhile, DELETE answers 507 (nothing is stored that could be deleted),
    and once space returns the end is stored and the run deletable."""
    fs = tmpfs("16m")
    fake = tmp_path / "filling-worker"
    fake.write_text(FILLING_WORKER)
    fake.chmod(0o755)
    state = fs / "state"
    srv = Server(state, "--bench-worker", fake, "--bench-reserve", "0").start()
    try:
        admin = srv.admin()
        job = submit(admin, quick("fills"))
        got = wait_state(admin, job["id"], {"failed", "done", "cancelled"})
        assert got["state"] == "failed" and "No space left" in got["reason"], got
        fault = expect_fault(admin.delete(f"{JOBS}/{job['id']}"), 507, "ERR_NO_SPACE")
        assert "not stored yet" in fault["details"], fault
        assert os.statvfs(fs).f_bavail == 0
        (state / "bench" / "filler").unlink()

        def stored():
            with sqlite3.connect(state / "spindle.db") as db:
                return db.execute("SELECT state FROM bench_runs WHERE id = ?",
                                  (job["id"],)).fetchone()[0]

        deadline = time.monotonic() + 15 * SLOW
        while stored() != "failed":
            assert time.monotonic() < deadline, stored()
            time.sleep(0.1)
        assert expect(admin.delete(f"{JOBS}/{job['id']}"), 204) is None
    finally:
        assert_stopped_cleanly(srv)


def block_device():
    for name in sorted(os.listdir("/dev")):
        path = os.path.join("/dev", name)
        try:
            if stat.S_ISBLK(os.stat(path).st_mode):
                return path
        except OSError:
            continue
    return None


def test_raw_devices_need_settings_and_confirm(env, tmp_path):
    dev = block_device()
    if not dev:
        pytest.skip("no block device in /dev")
    spec = {"pattern": "randread", "target": dev, "size": "1M", "io_size": "8k"}
    # not allowed by the settings: 403, confirm or not
    fault = expect_fault(env["admin"].post(JOBS, json=dict(spec, confirm=True)), 403)
    assert "bench_allow_devices" in fault["details"]
    # allowed: still 409 without confirm (no job is queued, nothing touches the device)
    base = env["base"]
    srv = bench_server(base, "--bench-allow-devices", state=tmp_path / "state")
    try:
        admin = srv.admin()
        fault = expect_fault(admin.post(JOBS, json=spec), 409, "ERR_CONFIRM_REQUIRED")
        assert fault["details"].startswith("confirm:")
        assert expect(admin.get(JOBS), 200)["jobs"] == []
    finally:
        assert_stopped_cleanly(srv)


def test_run_limit_stops_a_worker(tmp_path):
    base = scratch()
    try:
        (base / "bench").mkdir()
        (base / "root").mkdir()
        srv = bench_server(base, "--bench-max-runtime", "2", "--bench-limit-slack", "1",
                           state=tmp_path / "state")
        admin = srv.admin()
        # longer than the limit allows: refused up front
        expect_fault(admin.post(JOBS, json=quick("long", runtime_s=5, io_size=None)), 400,
                     details="runtime_s")
        # an amount that takes longer than the limit: stopped at 2 + 1 s
        t0 = time.monotonic()
        job = submit(admin, quick("amount", io_size="1T"))
        job = wait_state(admin, job["id"], {"failed", "done"}, timeout=30)
        assert job["state"] == "failed" and "limit of 3 s" in job["reason"], job["reason"]
        assert 2.5 < time.monotonic() - t0 < 15
        assert_stopped_cleanly(srv)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_daemon_killed_mid_job_then_restarted(tmp_path):
    base = scratch()
    try:
        (base / "bench").mkdir()
        (base / "root").mkdir()
        state = tmp_path / "state"
        srv = bench_server(base, state=state)
        admin = srv.admin()
        first = submit(admin, quick("mid", runtime_s=30, io_size=None))
        second = submit(admin, quick("after"))
        pid = wait_running(admin, first["id"])["worker_pid"]
        srv.kill()  # SIGKILL: no chance to tidy up
        # the orphaned worker notices its reader is gone and stops by itself
        deadline = time.monotonic() + 10 * SLOW
        while pid_alive(pid):
            assert time.monotonic() < deadline, "the worker outlived its daemon"
            time.sleep(0.1)
        srv = bench_server(base, state=state)
        admin = srv.admin()
        job = expect(admin.get(f"{JOBS}/{first['id']}"), 200)["job"]
        assert job["state"] == "interrupted" and "daemon stopped" in job["reason"]
        assert job["ended"] is not None
        # the queued one runs now
        assert wait_state(admin, second["id"], {"done", "failed"})["state"] == "done"
        # and a SIGTERM'd daemon records its running job as interrupted too
        third = submit(admin, quick("term", runtime_s=30, io_size=None))
        wait_running(admin, third["id"])
        assert_stopped_cleanly(srv)
        srv = bench_server(base, state=state)
        job = expect(srv.admin().get(f"{JOBS}/{third['id']}"), 200)["job"]
        assert job["state"] == "interrupted"
        assert_stopped_cleanly(srv)
    finally:
        shutil.rmtree(base, ignore_errors=True)


FAKE_WORKER = """#!/usr/bin/python3
# A worker that breaks the protocol in the way its job's name says, then hangs.
import json, sys, time
spec = json.load(sys.stdin)
start = {"type": "start", "version": 1, "spec": spec, "target": {"size": 1}, "threads": {}}
iv = {"type": "interval", "seq": 1, "t_s": 1, "elapsed_s": 1, "phase": "measure",
      "progress_pct": 10, "eta_s": None,
      "read": {"ops": 1, "bytes": 1, "iops": 1, "bytes_per_s": 1, "lat_mean_ns": 1,
               "lat_max_ns": 1, "lat_p99_ns": 1}}
iv["write"] = iv["read"]
lines = {
    "garbage": [start, "hello"],
    "early": [iv],
    "seq": [start, dict(iv, seq=2)],
    "unknown": [start, {"type": "bogus"}],
    "extra": [start, dict(iv, colour="red")],
}[spec["name"]]
for line in lines:
    print(line if isinstance(line, str) else json.dumps(line), flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize("name,why", [
    ("garbage", "not a JSON object"),
    ("early", "before the start line"),
    ("seq", "seq must be 1"),
    ("unknown", "unknown line type"),
    ("extra", "unexpected members"),
])
def test_a_worker_breaking_the_protocol_is_stopped(tmp_path, name, why):
    fake = tmp_path / "fake-worker"
    fake.write_text(FAKE_WORKER)
    fake.chmod(0o755)
    (tmp_path / "bench").mkdir()
    srv = Server(tmp_path / "state", "--bench-dirs", tmp_path / "bench", "--bench-worker",
                 fake).start()
    try:
        admin = srv.admin()
        job = submit(admin, quick(name))
        t0 = time.monotonic()
        job = wait_state(admin, job["id"], {"failed", "done"}, timeout=15)
        assert job["state"] == "failed"
        assert job["reason"].startswith("worker: protocol violation") and why in job["reason"]
        assert time.monotonic() - t0 < 10  # stopped at once, not after its 30 s
    finally:
        assert_stopped_cleanly(srv)
