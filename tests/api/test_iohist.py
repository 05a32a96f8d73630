# SPDX-License-Identifier: ISC
"""The disks' I/O histograms (io.ops[latency], io.ops[size], io.ops[offset]) as spindled
reads them from the eBPF helper's socket (--iolat-socket; server/iolat/helper.c says the
protocol): here a scripted helper on a unix socket sends known counts every second, so
every key and value is exact; the real helper on real I/O is tests/api/test_iolat_bpf.py.
spindled asks the helper once whether it is there, offers the drilldowns only then,
connects while a dataset needs them and leaves when none does."""
import os
import shutil
import time

import pytest

from conftest import WRAPPER, FakeProc, Server, expect, expect_fault
from fixtures.iolat import LAT_BUCKETS, lat_low
from fixtures.iolat_helper import SECOND, FakeHelper

AN = "/api/analytics/v1"
# What the datasets make of the fake helper's default second (fixtures/iolat_helper.py's
# SECOND: nvme0n1's reads, nvme1n1's writes, sdz, which the collector does not count);
# iolat.h: latency bucket 20 is [28672, 32768) ns, 21 is [32768, 40960); size bucket 5 is
# [8192, 16384) bytes
WANT = {"io.ops[latency]": {None: 13, "28672-32768": 6, "32768-40960": 7},
        "io.ops[size]": {None: 13, "8192-16384": 13},
        "io.ops[offset]": {None: 13, "0-1": 3, "10-11": 9, "63-64": 1}}


def box(tmp, helper_path):
    proc = FakeProc(tmp / "root", disks=2, nics=1, cpus=2, arc=False).start()
    srv = Server(tmp / "state", "--proc-root", proc.root, "--iolat-socket", helper_path).start()
    return proc, srv


def dataset(admin, name):
    for d in expect(admin.get(f"{AN}/datasets"), 200)["datasets"]:
        if d["name"] == name:
            return d
    return None


def create(admin, drilldown):
    return admin.post(f"{AN}/datasets", json={"statistic": "io.ops", "drilldown": drilldown})


def last_values(admin, name, want_seconds=3, timeout=15):
    """The newest complete seconds of a dataset that have a value: {None: total, key: v}."""
    path = f"{AN}/datasets/{name.replace('[', '%5B').replace(']', '%5D')}/data"
    deadline = time.monotonic() + timeout
    got = []
    while time.monotonic() < deadline:
        doc = expect(admin.get(path + "?start=-10"), 200)
        data = doc["data"] if isinstance(doc["data"], list) else [doc["data"]]
        got = [s for s in data if s and s["data"]["value"] is not None]
        if len(got) >= want_seconds:
            return [{None: s["data"]["value"], **{kv["key"]: kv["value"]
                                                  for kv in s["data"]["data"]}}
                    for s in got]
        time.sleep(0.5)
    pytest.fail(f"{name}: fewer than {want_seconds} seconds with values: {got}")


def settled(admin, name, want, timeout=20):
    """Waits until two seconds in a row of a dataset are exactly want. Not simply the last
    two: the first second may be partial (a dataset made mid-second), and on a busy machine
    the scripted helper's line for a second can come after the tick that takes it, so that
    second reads none and the next twice as much."""
    deadline = time.monotonic() + timeout
    got = []
    while time.monotonic() < deadline:
        got = last_values(admin, name, want_seconds=2)
        if any(a == want and b == want for a, b in zip(got, got[1:])):
            return got
        time.sleep(0.5)
    pytest.fail(f"{name}: never two seconds in a row of {want}: {got}")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("iohist")
    helper = FakeHelper(tmp / "iolat.sock")
    proc, srv = box(tmp, helper.path)
    b = type("Box", (), {})()
    b.srv, b.admin, b.helper = srv, srv.admin(), helper
    yield b
    srv.stop()
    proc.stop()
    helper.close()


def test_the_helper_is_asked_once_and_left_while_no_dataset_needs_it(served):
    # at start: one connection, closed once the helper said it is there
    assert served.helper.wait_open(0)
    assert served.helper.accepted == 1
    d = dataset(served.admin, "io.ops[op]")
    assert d["available_drilldowns"] == ["op", "disk", "latency", "size", "offset"]


def test_histogram_datasets_hold_every_bucket_the_helper_sent(served):
    for drill in ("latency", "size", "offset"):
        body = expect(create(served.admin, drill), 201)
        assert body["dataset"]["name"] == f"io.ops[{drill}]"
    # one connection for all three, kept
    assert served.helper.wait_open(1)
    for name, want in WANT.items():
        settled(served.admin, name, want)
        # sparse: a bucket without operations has no key at all
        d = dataset(served.admin, name)
        assert d["keys"] == len(want) - 1, name
    # the latency keys are the ranges of the layout iolat.h shares with the helper
    values = last_values(served.admin, "io.ops[latency]")
    for key in values[-1]:
        if key is None:
            continue
        low, high = map(int, key.split("-"))
        i = next(i for i in range(LAT_BUCKETS) if lat_low(i) == low)
        assert lat_low(i + 1) == high


def test_suspending_the_last_dataset_leaves_the_helper(served):
    names = list(WANT)
    for name in names:
        expect(served.admin.put(f"{AN}/datasets/{name.replace('[', '%5B').replace(']', '%5D')}",
                                json={"suspended": True}), 200)
    assert served.helper.wait_open(0)
    expect(served.admin.put(f"{AN}/datasets/io.ops%5Bsize%5D", json={"suspended": False}), 200)
    assert served.helper.wait_open(1)
    settled(served.admin, "io.ops[size]", WANT["io.ops[size]"])
    for name in names:
        expect(served.admin.delete(f"{AN}/datasets/{name.replace('[', '%5B').replace(']', '%5D')}"),
               204)
    assert served.helper.wait_open(0)


def test_heat_maps_kept_to_one_disk_or_one_op(served):
    """The appliance's io.ops[disk=X][latency] and the helper's directions apart
    ([op=read]): each dataset's values are that disk's or that direction's alone; the
    filters may come in any order and are named in one; what cannot be kept so is a 400
    naming why."""
    admin = served.admin
    made = {}
    for asked, name in [("io.ops[disk=nvme0n1][latency]", None),
                        ("io.ops[disk=nvme1n1][latency]", None),
                        ("io.ops[op=write][latency]", None),
                        ("io.ops[op=read][size]", None),
                        ("io.ops[op=write][disk=nvme0n1][offset]",
                         "io.ops[disk=nvme0n1][op=write][offset]"),
                        ("io.ops[disk=nvme0n1][op]", None)]:
        d = expect(admin.post(f"{AN}/datasets", json={"statistic": asked}), 201)["dataset"]
        assert d["name"] == (name or asked), d
        assert d["statistic"] == "io.ops" and d["drilldown"] == asked.rsplit("[", 1)[1][:-1]
        expect(admin.get(d["href"]), 200)
        made[d["name"]] = d["href"]
    expect_fault(admin.post(f"{AN}/datasets", json={"statistic": "io.ops[disk=nvme0n1]"
                                                                   "[latency]"}), 409)
    want = {"io.ops[disk=nvme0n1][latency]": {None: 12, "28672-32768": 5, "32768-40960": 7},
            "io.ops[disk=nvme1n1][latency]": {None: 1, "28672-32768": 1},
            "io.ops[op=write][latency]": {None: 1, "28672-32768": 1},
            "io.ops[op=read][size]": {None: 12, "8192-16384": 12},
            "io.ops[disk=nvme0n1][op=write][offset]": {None: 0}}
    for name, values in want.items():
        settled(admin, name, values)
    ops = last_values(admin, "io.ops[disk=nvme0n1][op]")[-1]
    assert set(ops) == {None, "read", "write"} and ops[None] == ops["read"] + ops["write"]
    for statistic, details in [
            ("io.ops[disk=nvme9n1][latency]", "statistic: [disk=nvme9n1]: no such disk among "
                                              "those counted (nvme0n1, nvme1n1)"),
            ("cpu.utilization[disk=nvme0n1]", "statistic: cpu.utilization cannot be kept to a "
                                              "disk"),
            ("io.ops[disk=nvme0n1][disk]", "drilldown: io.ops[disk=nvme0n1] is one disk"),
            ("io.ops[op=read][disk]", "statistic: [op=read] keeps io.ops's latency"),
            ("io.ops[op=both][latency]", "statistic: [op=both]: op is read or write"),
            ("io.ops[colour=red][latency]", "statistic: [colour=red]: a dataset may be kept"),
            ("io.ops[disk=nvme0n1][disk=nvme1n1][latency]", "statistic: [disk=nvme1n1]"),
            ("io.ops[disk=nvme0n1", "statistic: 'io.ops[disk=nvme0n1' is not"),
            ("io.ops[latency][disk=nvme0n1]", "statistic: 'io.ops[latency][disk=nvme0n1]' is "
                                              "not")]:
        fault = expect_fault(admin.post(f"{AN}/datasets", json={"statistic": statistic}), 400)
        assert fault["details"].startswith(details), (statistic, fault)
    fault = expect_fault(admin.post(f"{AN}/datasets", json={
        "statistic": "io.ops[disk=nvme0n1][latency]", "drilldown": "latency"}), 400)
    assert fault["details"].startswith("drilldown: given in statistic already"), fault
    # a restart reads the filters back from the names
    assert served.srv.stop()[0] == 0
    served.srv.start()
    served.admin = admin = served.srv.admin()
    names = {d["name"] for d in expect(admin.get(f"{AN}/datasets"), 200)["datasets"]}
    assert set(made) <= names, names
    settled(admin, "io.ops[disk=nvme1n1][latency]", want["io.ops[disk=nvme1n1][latency]"])
    for href in made.values():
        expect(admin.delete(href), 204)
    assert served.helper.wait_open(0)


def test_a_helper_that_cannot_load_its_program_offers_nothing(tmp_path):
    reason = "the kernel refused the BPF program (Operation not permitted)"
    helper = FakeHelper(tmp_path / "iolat.sock", status=f"error {reason}")
    proc, srv = box(tmp_path, helper.path)
    try:
        admin = srv.admin()
        assert helper.wait_open(0) and helper.accepted == 1
        assert dataset(admin, "io.ops[op]")["available_drilldowns"] == ["op", "disk"]
        expect_fault(create(admin, "latency"), 400, details=reason)
        fault = create(admin, "latency").json()["fault"]
        assert "spindle-iolat.socket" in fault["details"], fault
        assert dataset(admin, "io.ops[latency]") is None
    finally:
        srv.stop()
        proc.stop()
        helper.close()


def test_no_helper_offers_nothing_and_says_where_it_looked(tmp_path):
    path = tmp_path / "absent.sock"
    proc, srv = box(tmp_path, path)
    try:
        admin = srv.admin()
        assert dataset(admin, "io.ops[disk]")["available_drilldowns"] == ["op", "disk"]
        expect_fault(create(admin, "size"), 400, details=f"no spindle-iolat at {path}")
        # the others are there as before
        expect(create(admin, "op"), 409)
    finally:
        srv.stop()
        proc.stop()


def test_a_helper_of_another_protocol_is_not_believed(tmp_path):
    helper = FakeHelper(tmp_path / "iolat.sock", hello="spindle-iolat 2 latency=200 size=18 "
                        "offset=64")
    proc, srv = box(tmp_path, helper.path)
    try:
        admin = srv.admin()
        assert helper.wait_open(0)
        expect_fault(create(admin, "offset"), 400, details="another protocol")
    finally:
        srv.stop()
        proc.stop()
        helper.close()


def test_a_benchmark_run_keeps_its_disks_latencies_and_sets_them_beside_the_workers(tmp_path):
    """While a job runs the helper streams (no dataset asks for it); the run's record
    keeps its disk's completions by latency over the measured seconds, in the helper's
    buckets, with the buckets of its percentiles, and a finding sets the worker's median
    beside the disks'. The helper is left when the job ends."""
    from test_bench import WORKER, fake_sys_for, quick, scratch, submit, wait_state
    base = scratch()
    try:
        (base / "bench").mkdir()
        # nvme0n1 is the bench dir's disk: its reads in buckets 20 and 21, each second
        helper = FakeHelper(tmp_path / "iolat.sock",
                            second=["D nvme0n1 r L 20:5 21:7 S 5:12 O 0:12",
                                    "D nvme1n1 r L 30:99 S 5:99 O 0:99"])
        proc = FakeProc(base / "root", disks=2, nics=1, cpus=2, arc=False).start()
        fake_sys_for(base / "root", base / "bench")
        srv = Server(tmp_path / "state", "--bench-dirs", base / "bench", "--bench-worker",
                     WORKER, "--proc-root", base / "root", "--sys-root", base / "root",
                     "--iolat-socket", helper.path).start()
        try:
            admin = srv.admin()
            assert helper.wait_open(0)
            job = submit(admin, quick("lat", runtime_s=6, io_size=None, ramp_s=0))
            job = wait_state(admin, job["id"], {"done", "failed"})
            assert job["state"] == "done", job.get("reason")
            dev = job["result"]["device"]
            assert dev["disk"] == "nvme0n1", dev
            lat = dev["latency"]
            n = lat["seconds"]
            assert 2 <= n <= dev["seconds"], (lat, dev["seconds"])
            assert "write" not in lat  # no writes were completed
            # 12 a second of nvme0n1's (nvme1n1's are not the job's disk's); on a busy
            # machine a second's line may come a tick late, so one second at an edge of the
            # measured ones may hold none, or two
            k, rest = divmod(lat["read"]["ops"], 12)
            assert rest == 0 and n - 1 <= k <= n + 1, (lat, n)
            assert lat["read"]["buckets"] == [
                {"low_ns": 28672, "high_ns": 32768, "ops": 5 * k},
                {"low_ns": 32768, "high_ns": 40960, "ops": 7 * k}]
            assert lat["read"]["p50_ns"] == {"low": 32768, "high": 40960}  # the 6n-th of 12n
            assert lat["read"]["p99.99_ns"] == {"low": 32768, "high": 40960}
            stack = [f for f in job["result"]["findings"] if f["id"] == "stack"]
            assert len(stack) == 1 and stack[0]["inputs"]["disk_p50_high_ns"] == 40960, \
                job["result"]["findings"]
            assert helper.wait_open(0), "the helper was not left once the job ended"
            assert helper.accepted >= 2  # the probe at start, then the job's
        finally:
            srv.stop()
            proc.stop()
            helper.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ or WRAPPER,
                    reason="a sanitizer's or valgrind's allocator keeps freed memory")
def test_a_helper_naming_endless_devices_costs_no_memory(tmp_path):
    """The attacker's helper: seconds of tens of thousands of lines, each naming a device
    never seen before. Each took some 6 KB for good (50,000 lines of 700 KB: RSS from 14 to
    314 MB); only the disks the collector counts are kept, and theirs still add up."""
    flood = {"seconds": 0, "sent": 0}
    per_second, seconds = 25000, 3

    def second(t):
        if flood["seconds"] <= 0:
            return SECOND
        flood["seconds"] -= 1
        flood["sent"] += per_second
        return SECOND + [f"D x{t}-{i} r L 1:1" for i in range(per_second)]

    helper = FakeHelper(tmp_path / "iolat.sock", second=second)
    proc, srv = box(tmp_path, helper.path)
    try:
        admin = srv.admin()
        expect(create(admin, "latency"), 201)
        settled(admin, "io.ops[latency]", WANT["io.ops[latency]"])
        before = rss_kb(srv.proc.pid)
        flood["seconds"] = seconds
        deadline = time.monotonic() + 15
        while flood["seconds"] > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert flood["sent"] == per_second * seconds, flood
        # the flood's last second read: the real disks' seconds come after it
        settled(admin, "io.ops[latency]", WANT["io.ops[latency]"])
        grown = rss_kb(srv.proc.pid) - before
        assert grown < 4096, f"RSS grew by {grown} kB over {flood['sent']} device names"
        assert helper.open == 1  # the helper was not dropped for them
    finally:
        srv.stop()
        proc.stop()
        helper.close()
