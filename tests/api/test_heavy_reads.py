# SPDX-License-Identifier: ISC
"""Heavy analytics reads, as a read-only account would use them to starve the daemon: a
latency heat map (io.ops[latency], every bucket of the eBPF helper's layout filled) asked
for five hours by the second from several monitor sessions at once. Each user has a
bound on such reads in flight (--analytics-heavy-reads): past it the answer is 429 with
Retry-After, and other users go on being served. The answers are built on helper
threads: no turn of the loop for them takes longer than the loop's own idle work does
(spindle_loop_work_max_seconds, which times every request's turns, against the same
run's idle figure)."""
import re
import threading
import time

import pytest

from conftest import (FakeProc, Server, expect, expect_fault, make_user, run_daemon, PASSWORD,
                      SLOW)
from fixtures.iolat import LAT_BUCKETS
from fixtures.iolat_helper import FakeHelper

AN = "/api/analytics/v1"
HEAT = f"{AN}/datasets/io.ops%5Blatency%5D/data"
# five hours by the second: 18,000 samples of 107 series, the whole window read
HEAVY = "?seconds=18000&granularity=second"
DASHBOARD = "/api/status/v1/dashboard"
SESSIONS = 6  # the attacker's monitor processes
ROUNDS = 3
# every latency bucket has operations each second: a heat map of all its keys
SECOND = ["D nvme0n1 r L " + " ".join(f"{i}:{i + 1}" for i in range(LAT_BUCKETS))]


def loop_work_cpu(client):
    """spindle_loop_work_max_seconds{clock="cpu"}: the longest the loop thread spent on one
    turn (a tick, a request's handler, a helper thread's answer) in the last minute."""
    text = client.get("/metrics").text
    return float(re.search(r'spindle_loop_work_max_seconds\{clock="cpu"\} ([\d.e+-]+)',
                           text).group(1))


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("heavy")
    helper = FakeHelper(tmp / "iolat.sock", second=SECOND)
    proc = FakeProc(tmp / "root", disks=2, nics=1, cpus=2, arc=False).start()
    srv = Server(tmp / "state", "--proc-root", proc.root, "--iolat-socket", helper.path).start()
    try:
        admin = srv.admin()
        expect(admin.post(f"{AN}/datasets", json={"statistic": "io.ops",
                                                   "drilldown": "latency"}), 201)
        deadline = time.monotonic() + 15 * SLOW
        while True:
            doc = expect(admin.get(HEAT + "?seconds=1"), 200)
            if doc["data"] and len(doc["data"]["data"]["data"]) == LAT_BUCKETS:
                break
            assert time.monotonic() < deadline, f"the heat map never had every key: {doc}"
            time.sleep(0.2)
        yield srv, admin
    finally:
        srv.stop()
        proc.stop()
        helper.close()


def test_monitors_heavy_reads_are_bounded_and_starve_nobody(box):
    srv, admin = box
    mon = make_user(admin, ["monitor"])
    other = make_user(admin, ["monitor"])
    sessions = [srv.login_client(mon, PASSWORD) for _ in range(SESSIONS)]
    bystander = srv.login_client(other, PASSWORD)
    time.sleep(3)  # some seconds of the heat map; the loop's idle work of the same run
    idle = loop_work_cpu(admin)
    assert idle > 0, "no turn of the loop timed while idle"

    answers, others, dashboards = [], [], []
    start = threading.Barrier(SESSIONS)

    def attacker(c):
        start.wait()
        for _ in range(ROUNDS):
            answers.append(c.get(HEAT + HEAVY))

    threads = [threading.Thread(target=attacker, args=(c,)) for c in sessions]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        dashboards.append(admin.get(DASHBOARD).status_code)
        others.append(bystander.get(HEAT + HEAVY))  # another monitor: one at a time
    for t in threads:
        t.join()
    heavy = loop_work_cpu(admin)

    # (a) past the per-user bound: 429, naming it, with Retry-After; the rest answered
    refused = [r for r in answers if r.status_code == 429]
    assert refused, f"no read of {SESSIONS} at once was refused"
    for r in refused:
        fault = expect_fault(r, 429, "ERR_TOO_MANY", details="heavy reads")
        assert re.search(r"\b2\b", fault["details"]), fault  # the default bound, named
        assert "analytics-heavy-reads" in fault["details"], fault
        assert int(r.headers["Retry-After"]) >= 1, r.headers
    for r in answers:
        if r.status_code != 429:
            doc = expect(r, 200)
            assert len(doc["data"]) >= 3, len(doc["data"])
    assert len(refused) < len(answers), "every read refused"
    # (b) others are served meanwhile: the admin's dashboard, another monitor's own reads
    assert dashboards and set(dashboards) == {200}, dashboards
    assert others and {r.status_code for r in others} == {200}, [r.text[:200] for r in others]
    # (c) the loop was not held: no turn took longer than the loop's own idle work, twice
    assert heavy <= 2 * idle, f"a turn of {heavy * 1e3:.2f} ms CPU against {idle * 1e3:.2f} idle"


def test_the_bound_is_a_setting(tmp_path):
    """--analytics-heavy-reads sets the bound (--help says so); 0 would refuse every heavy
    read, and is itself refused at start."""
    code, out, _ = run_daemon("--help")
    assert code == 0 and "--analytics-heavy-reads" in out, out
    code, _, err = run_daemon("--analytics-heavy-reads", 0)
    assert code != 0 and any("analytics-heavy-reads" in line for line in err), err
    helper = FakeHelper(tmp_path / "iolat.sock", second=SECOND)
    proc = FakeProc(tmp_path / "root", disks=2, nics=1, cpus=2, arc=False).start()
    srv = Server(tmp_path / "state", "--proc-root", proc.root, "--iolat-socket", helper.path,
                 "--analytics-heavy-reads", 1).start()
    try:
        admin = srv.admin()
        expect(admin.post(f"{AN}/datasets", json={"statistic": "io.ops",
                                                   "drilldown": "latency"}), 201)
        time.sleep(2)
        c = [srv.login_client("admin", srv.admin_password) for _ in range(4)]
        got = []
        start = threading.Barrier(len(c))

        def read(client):
            start.wait()
            for _ in range(ROUNDS):
                got.append(client.get(HEAT + HEAVY))
        threads = [threading.Thread(target=read, args=(x,)) for x in c]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        refused = [r for r in got if r.status_code == 429]
        assert refused and len(refused) < len(got), [r.status_code for r in got]
        fault = expect_fault(refused[0], 429, "ERR_TOO_MANY")
        assert re.search(r"\b1\b", fault["details"]), fault
    finally:
        srv.stop()
        proc.stop()
        helper.close()
