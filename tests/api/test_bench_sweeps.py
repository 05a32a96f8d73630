# SPDX-License-Identifier: ISC
"""Sweeps through the API: one spec over a matrix of values, each combination an ordinary
job. A real spindled runs fixtures/fakeworker.py as its worker, whose figures follow a
model of the spec (IOPS = min(threads, 8) * 1000, p99 flat to 8 threads and growing past),
so the table and the knee are known exactly. Covers the life cycle to done, the order of
the runs, a bad combination refusing the whole sweep with nothing stored, the axes'
limits, cancel as a whole (running and queued), deleting an ended sweep with its runs, and
who may do what."""
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from conftest import (REPO, SLOW, Server, assert_stopped_cleanly, expect, expect_fault,
                      make_user)

FAKE = str(REPO / "tests" / "api" / "fixtures" / "fakeworker.py")
BENCH = "/api/bench/v1"
SWEEPS = BENCH + "/sweeps"
JOBS = BENCH + "/jobs"
ENDED = {"done", "failed", "cancelled"}


@pytest.fixture(scope="module")
def env():
    base = Path(tempfile.mkdtemp(prefix="spindle-sweep-test-"))
    (base / "bench").mkdir()
    srv = Server(base / "state", "--bench-dirs", base / "bench", "--bench-worker", FAKE,
                 "--bench-concurrency", "2", "--bench-max-runtime", "60").start()
    admin = srv.admin()
    make_user(admin, roles=["operator"], name="sweepop", password="Sweep-op-pw-1")
    make_user(admin, roles=["monitor"], name="sweepmon", password="Sweep-mon-pw-1")
    yield {"base": base, "srv": srv, "admin": admin,
           "op": srv.login_client("sweepop", "Sweep-op-pw-1"),
           "mon": srv.login_client("sweepmon", "Sweep-mon-pw-1")}
    assert_stopped_cleanly(srv)
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def base_spec(**kw):
    spec = {"pattern": "randread", "size": "1M", "block_size": "4k", "runtime_s": 0.25}
    spec.update(kw)
    return spec


def submit(client, body, status=201):
    resp = client.post(SWEEPS, json=body)
    got = expect(resp, status)
    if status == 201:
        sweep = got["sweep"]
        assert resp.headers["Location"] == sweep["href"] == f"{SWEEPS}/{sweep['id']}"
        return sweep
    return got


def wait_sweep(client, sweep_id, states=ENDED, timeout=30):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        sweep = expect(client.get(f"{SWEEPS}/{sweep_id}"), 200)["sweep"]
        if sweep["state"] in states:
            return sweep
        assert time.monotonic() < deadline, sweep
        time.sleep(0.1)


def counts(admin):
    """How many jobs and sweeps there are, to see that a refusal stored nothing."""
    jobs = expect(admin.get(JOBS + "?limit=1000"), 200)["jobs"]
    sweeps = expect(admin.get(SWEEPS + "?limit=200"), 200)["sweeps"]
    return len(jobs), len(sweeps)


def test_sweep_runs_to_done_with_its_table_and_knee(env):
    admin, op = env["admin"], env["op"]
    threads = [1, 2, 4, 8, 16]
    body = {"name": "knee-sweep", "label": "fake disk", "spec": base_spec(),
            "axes": {"threads": threads, "block_size": ["4k", "8k"]}}
    sweep = submit(op, body)
    assert sweep["name"] == "knee-sweep" and sweep["label"] == "fake disk"
    assert sweep["owner"] == "sweepop" and sweep["runs"] == 10
    assert sweep["state"] in ("queued", "running")
    assert sweep["axes"] == body["axes"] and sweep["spec"] == body["spec"]
    # the order of the combinations: the first axis outermost, by job id
    values = [row["values"] for row in sweep["table"]]
    assert values == [{"threads": t, "block_size": b} for t in threads for b in ("4k", "8k")]
    ids = [row["job"] for row in sweep["table"]]
    assert ids == sorted(ids) and len(set(ids)) == 10
    assert all(row["href"] == f"{JOBS}/{row['job']}" for row in sweep["table"])

    job = expect(admin.get(f"{JOBS}/{ids[0]}"), 200)["job"]
    assert job["sweep"] == sweep["id"]
    # the listing of its runs, and of no other's (newest first)
    listed = expect(admin.get(f"{JOBS}?sweep={sweep['id']}&limit=1000"), 200)["jobs"]
    assert [j["id"] for j in listed] == ids[::-1]
    assert all(j["sweep"] == sweep["id"] for j in listed)
    assert expect(admin.get(f"{JOBS}?sweep=999999"), 200)["jobs"] == []
    expect_fault(admin.get(f"{JOBS}?sweep=0"), 400, "ERR_INVALID_ARG", "sweep: must be")
    assert job["name"] == "knee-sweep" and job["label"] == "fake disk"
    assert job["spec"]["readers"] == 1 and job["spec"]["block_size"] == 4096

    done = wait_sweep(op, sweep["id"])
    assert done["state"] == "done", done
    assert done["counts"]["done"] == 10 and done["counts"]["queued"] == 0
    for row in done["table"]:
        t = row["values"]["threads"]
        bs = 4096 if row["values"]["block_size"] == "4k" else 8192
        assert row["state"] == "done"
        assert row["iops"] == pytest.approx(min(t, 8) * 1000, rel=0.01), row
        assert row["read_p99_ns"] == row["p99_ns"] == (100000 if t <= 8 else 12500 * t)
        assert row["write_p99_ns"] is None and row["write_iops"] == 0
        assert row["bytes_per_s"] == pytest.approx(min(t, 8) * 1000 * bs, rel=0.01)
    assert [k["group"] for k in done["knee"]] == [{"block_size": "4k"}, {"block_size": "8k"}]
    for knee in done["knee"]:
        assert knee["axis"] == "threads" and knee["threads"] == 8, knee
        assert knee["iops"] == pytest.approx(8000, rel=0.01)
        assert knee["p99_ns"] == 100000
        assert knee["why"] == "16 threads gave +0.0 % IOPS for +100.0 % p99", knee

    listed = expect(op.get(SWEEPS), 200)["sweeps"]
    assert listed[0]["id"] == sweep["id"] and listed[0]["state"] == "done"
    assert "table" not in listed[0] and listed[0]["counts"]["done"] == 10
    first = expect(op.get(f"{SWEEPS}?limit=1"), 200)
    assert [s["id"] for s in first["sweeps"]] == [sweep["id"]]
    if first["next"] is not None:          # an earlier test's sweeps, on the next pages
        older = expect(op.get(f"{SWEEPS}?next={first['next']}&limit=5"), 200)["sweeps"]
        assert older and all(s["id"] < sweep["id"] for s in older)
    everything = expect(op.get(f"{SWEEPS}?limit=200"), 200)
    assert everything["next"] is None and everything["sweeps"][0]["id"] == sweep["id"]
    expect_fault(op.get(f"{SWEEPS}?before={sweep['id']}"), 400, "ERR_UNKNOWN_ARG")

    # a run of a sweep goes with its sweep, not alone
    expect_fault(admin.delete(f"{JOBS}/{ids[0]}"), 409, details=f"sweep {sweep['id']}")
    # an ended sweep is deleted with its runs, by an administrator
    expect_fault(op.delete(f"{SWEEPS}/{sweep['id']}"), 403, details="settings:modify")
    expect(admin.delete(f"{SWEEPS}/{sweep['id']}"), 204)
    expect_fault(op.get(f"{SWEEPS}/{sweep['id']}"), 404)
    for job_id in ids:
        expect_fault(op.get(f"{JOBS}/{job_id}"), 404)


def test_knee_needs_a_threads_axis_and_finished_runs(env):
    op = env["op"]
    sweep = submit(op, {"spec": base_spec(name="no-threads"),
                        "axes": {"block_size": ["4k", "8k"]}})
    assert sweep["name"] == "no-threads"
    done = wait_sweep(op, sweep["id"])
    assert done["state"] == "done"
    assert len(done["knee"]) == 1 and done["knee"][0]["threads"] is None
    assert done["knee"][0]["axis"] is None and done["knee"][0]["group"] == {}
    assert "no threads axis" in done["knee"][0]["why"]

    sweep = submit(op, {"spec": base_spec(name="growing"), "axes": {"threads": [1, 2, 4]}})
    done = wait_sweep(op, sweep["id"])
    knee = done["knee"]
    assert knee == [{"group": {}, "axis": "threads", "threads": None, "iops": None,
                     "p99_ns": None, "why": "IOPS grew by 5 % or more, or p99 did not grow, "
                     "at every step up to 4 threads"}], knee


def test_a_bad_combination_refuses_the_whole_sweep(env):
    admin, op = env["admin"], env["op"]
    before = counts(admin)
    # 1000 threads is past the spec's limit: named with its axis and the other values
    fault = expect_fault(op.post(SWEEPS, json={
        "name": "bad", "spec": base_spec(),
        "axes": {"block_size": ["4k"], "threads": [1, 2, 1000]}}), 400)
    assert fault["details"].startswith('axes: threads 1000 (with block_size "4k"): threads'), \
        fault
    # a target outside the bench dirs: the target's own status, the value named
    outside = str(env["base"] / "state" / "x.dat")
    fault = expect_fault(op.post(SWEEPS, json={
        "spec": base_spec(name="tgt"),
        "axes": {"target": [str(env["base"] / "bench" / "a.dat"), outside]}}), 403)
    assert fault["details"].startswith(f'axes: target "{outside}": target'), fault
    # a field no spec has
    fault = expect_fault(op.post(SWEEPS, json={
        "spec": base_spec(), "axes": {"blocksize": ["4k", "8k"]}}), 400)
    assert fault["details"].startswith('axes: blocksize "4k": blocksize'), fault
    # the sweep's name, given to runs whose spec has none, is refused as itself
    expect_fault(op.post(SWEEPS, json={"name": "no spaces", "spec": base_spec(),
                                       "axes": {"threads": [1]}}), 400,
                 details="name: must be 1 to")
    # the shape of the axes
    for axes, details in (
            ({}, "axes: at least one axis"),
            ({"threads": []}, "axes.threads: must be a non-empty array"),
            ({"threads": 4}, "axes.threads: must be a non-empty array"),
            ({"threads": [1, 2, 1]}, "axes.threads: value 2 is value 0 again"),
            ({"threads": [{"a": 1}]}, "axes.threads: value 0 must be a string"),
            ({"threads": list(range(1, 11)), "iodepth": list(range(1, 11)),
              "block_size": ["4k", "8k", "16k"]}, "axes: more than 256 combinations"),
            ({"a": [1], "b": [1], "c": [1], "d": [1], "e": [1]}, "axes: at most 4 axes")):
        expect_fault(op.post(SWEEPS, json={"spec": base_spec(), "axes": axes}), 400,
                     details=details)
    expect_fault(op.post(SWEEPS, json={"spec": base_spec()}), 400, details="axes: required")
    expect_fault(op.post(SWEEPS, json={"axes": {"threads": [1]}}), 400,
                 details="spec: required")
    expect_fault(op.post(SWEEPS, json={"spec": base_spec(), "axes": {"threads": [1]},
                                       "axis": 1}), 400, details="axis: unknown")
    assert counts(admin) == before, "nothing was stored"


def test_cancel_a_sweep_as_a_whole(env):
    admin, op, mon = env["admin"], env["op"], env["mon"]
    # a sweep's runs go one at a time (bench_concurrency is 2): one runs, three wait
    sweep = submit(op, {"name": "long", "spec": base_spec(runtime_s=30),
                        "axes": {"threads": [1, 2, 4, 8]}})
    ids = [row["job"] for row in sweep["table"]]
    deadline = time.monotonic() + 15 * SLOW
    while True:
        jobs = [expect(op.get(f"{JOBS}/{i}"), 200)["job"] for i in ids]
        running = [j for j in jobs if j.get("worker_pid") and j.get("progress_pct")]
        if running:
            break
        assert time.monotonic() < deadline, jobs
        time.sleep(0.1)
    time.sleep(0.3)     # (time for a second to start, were it allowed to)
    jobs = [expect(op.get(f"{JOBS}/{i}"), 200)["job"] for i in ids]
    assert [j["state"] for j in jobs] == ["running", "queued", "queued", "queued"], jobs
    # a job outside the sweep takes the free slot beside it
    other = expect(op.post(JOBS, json=base_spec(name="beside", runtime_s=30)), 201)["job"]
    deadline = time.monotonic() + 15 * SLOW
    while expect(op.get(f"{JOBS}/{other['id']}"), 200)["job"]["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert expect(op.get(f"{SWEEPS}/{sweep['id']}"), 200)["sweep"]["state"] == "running"
    pids = [j["worker_pid"] for j in running]

    # a read-only account may look but neither cancel nor submit
    expect_fault(mon.delete(f"{SWEEPS}/{sweep['id']}"), 403)
    expect_fault(mon.post(SWEEPS, json={"spec": base_spec(), "axes": {"threads": [1]}}), 403)
    assert expect(mon.get(f"{SWEEPS}/{sweep['id']}"), 200)["sweep"]["id"] == sweep["id"]
    assert expect(mon.get(SWEEPS), 200)["sweeps"]

    got = expect(op.delete(f"{SWEEPS}/{sweep['id']}"), 202)["sweep"]
    assert got["state"] == "cancelled" and got["href"] == sweep["href"]
    ended = wait_sweep(op, sweep["id"], states={"cancelled"})
    deadline = time.monotonic() + 15 * SLOW
    while ended["counts"]["cancelled"] < 4:
        assert time.monotonic() < deadline, ended
        time.sleep(0.1)
        ended = expect(op.get(f"{SWEEPS}/{sweep['id']}"), 200)["sweep"]
    assert ended["state"] == "cancelled" and ended["counts"]["running"] == 0
    for row in ended["table"]:
        assert row["state"] == "cancelled" and row["reason"].startswith("cancelled by sweepop")
    for pid in pids:    # the worker is gone
        assert not Path(f"/proc/{pid}").exists() or \
            "fakeworker" not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    log = expect(admin.get("/api/log/v1/logs/audit?limit=50"), 200)
    actions = [e.get("action") for e in next(iter(log.values()))]
    assert "bench.sweep" in actions and "bench.sweep.cancel" in actions

    # the job outside the sweep ran on
    assert expect(op.get(f"{JOBS}/{other['id']}"), 200)["job"]["state"] == "running"
    expect(op.delete(f"{JOBS}/{other['id']}"), 202)

    # ended: deleting it needs settings:modify
    expect_fault(op.delete(f"{SWEEPS}/{sweep['id']}"), 403)
    expect(admin.delete(f"{SWEEPS}/{sweep['id']}"), 204)
    expect_fault(admin.delete(f"{SWEEPS}/{sweep['id']}"), 404)
    expect_fault(op.get(f"{SWEEPS}/nope"), 400, "ERR_INVALID_ARG", details="id: 'nope'")
    expect_fault(op.get(f"{SWEEPS}/999999"), 404)
