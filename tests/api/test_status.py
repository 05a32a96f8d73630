# SPDX-License-Identifier: ISC
"""The phone's dashboard (ETag, 304, size) and its live twin, the Server-Sent Events stream
(one event a second, heartbeats, streams cleaned up when their client goes)."""
import gzip
import json
import os
import re
import time

import pytest

from conftest import (ACCESS, PASSWORD, SLOW, EventStream, FakeProc, Server,
                      assert_stopped_cleanly, expect, expect_fault, make_role, make_user,
                      parse_time)
from test_appliance_hardware import FAILING_WORKER
from test_hardware import build_box

DASHBOARD = "/api/status/v1/dashboard"
EVENTS = "/api/status/v1/events"
DISK_KEYS = {"n", "r_ops_s", "w_ops_s", "r_b_s", "w_b_s", "r_ms", "w_ms", "busy_pct"}
PSEUDO = {"proc", "sysfs", "tmpfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "overlay",
          "squashfs", "autofs", "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
          "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "nsfs", "ramfs", "efivarfs",
          "rpc_pipefs", "nfs", "nfs4", "cifs", "smb3", "fuse.sshfs"}


def sse_clients(client):
    """spindle_sse_clients from /metrics (the test runs on loopback: no token needed)."""
    text = client.get("/metrics").text
    return int(re.search(r"^spindle_sse_clients (\d+)$", text, re.M).group(1))


def wait_for(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout * SLOW
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def wait_for_sample(client):
    """The dashboard once the collector has a sample (the second tick after start)."""
    doc = None

    def has_sample():
        nonlocal doc
        doc = expect(client.get(DASHBOARD), 200)["dashboard"]
        return doc["time"] is not None
    assert wait_for(has_sample, 5), doc
    return doc


# ---- the dashboard ------------------------------------------------------------------

def test_dashboard_document(clients):
    mon = clients["monitor"]
    doc = wait_for_sample(mon)
    resp = mon.get(DASHBOARD)
    body = expect(resp, 200)
    assert set(body) == {"dashboard"}
    d = body["dashboard"]
    assert set(d) - {"arc_hit_pct", "pools"} == {
        "time", "version", "uptime_s", "ncpus", "cpu", "mem_bytes", "io", "ndisks",
        "disks", "nic_kb_s", "jobs", "leds_lit", "problems", "problems_recent", "capacity",
        "spark"}, sorted(d)
    parse_time(d["time"])
    assert d["version"] == resp.headers["X-Spindle-Version"]
    assert isinstance(d["uptime_s"], int) and d["uptime_s"] > 0
    assert set(d["cpu"]) == {"busy_pct", "user_pct", "system_pct", "iowait_pct"}
    assert all(0 <= v <= 100 for v in d["cpu"].values()), d["cpu"]
    assert set(d["mem_bytes"]) == {"total", "used", "cache", "free"}
    assert 0 < d["mem_bytes"]["used"] < d["mem_bytes"]["total"]
    for disk in d["disks"]:
        assert set(disk) == DISK_KEYS and 0 <= disk["busy_pct"] <= 100, disk
    assert set(d["io"]) == {"r_ops_s", "w_ops_s", "r_b_s", "w_b_s", "r_ms", "w_ms"}, d["io"]
    assert all(v >= 0 for v in d["io"].values())
    assert len(d["disks"]) == min(8, d["ndisks"])
    every = expect(mon.get("/api/status/v1/disks"), 200)
    assert set(every) == {"disks"} and {x["n"] for x in d["disks"]} <= {
        x["n"] for x in every["disks"]}
    assert all(set(x) == DISK_KEYS for x in every["disks"])
    expect_fault(mon.get("/api/status/v1/disks?x=1"), 400, details="x")
    assert set(d["nic_kb_s"]) == {"rx", "tx"}
    assert set(d["jobs"]) == {"running", "queued"}
    assert all(isinstance(v, int) and v >= 0 for v in d["jobs"].values())
    assert isinstance(d["leds_lit"], int) and d["problems"] == 0
    assert d["problems_recent"] == []
    for fs in d["capacity"]:    # this machine's own: whatever it mounts, no pseudo ones
        assert set(fs) == {"n", "type", "size", "used", "avail"}, fs
        assert fs["type"] not in PSEUDO and 0 <= fs["used"] <= fs["size"], fs
    assert set(d["spark"]) == {"iops", "kb_s", "cpu", "nic_kb_s"}
    assert all(len(v) == 60 for v in d["spark"].values()), d["spark"]
    if "arc_hit_pct" in d:
        assert 0 <= d["arc_hit_pct"] <= 100
    assert doc["version"] == d["version"]


def data_mounts(tmp_path, n=4):
    """n real directories (one with a space in its name), as mounts of their own devices."""
    out = []
    for i in range(n):
        path = tmp_path / (f"data {i}" if i == 0 else f"data{i}")
        path.mkdir()
        out.append((f"/dev/fake{i}", path, "xfs" if i % 2 else "ext4"))
    return out


def test_dashboard_of_a_big_box(spawn, tmp_path):
    """8 NVMe disks at full tilt, 2 NICs, 64 CPUs, 512 GiB, a ZFS ARC, 4 filesystems and two
    open problems (a faulted disk, a failed job): every figure is there, and on the wire the
    document stays under 2 KB (gzip: the sparklines alone are 240 numbers)."""
    fake = FakeProc(tmp_path / "root", mounts=data_mounts(tmp_path)).start()
    hw = build_box(tmp_path / "sys")
    worker = tmp_path / "worker"
    worker.write_text(FAILING_WORKER)
    worker.chmod(0o755)
    (tmp_path / "bench").mkdir()
    try:
        srv = spawn("--proc-root", tmp_path / "root", "--sys-root", hw.root,
                    "--system-led-backend", "virtual", "--disk-led-backend", "virtual",
                    "--bench-worker", worker, "--bench-dirs", tmp_path / "bench")
        mon = srv.admin()
        wait_for_sample(mon)
        job = {"name": "fail-1", "pattern": "randread", "size": "1M", "block_size": "4k"}
        expect(mon.post("/api/bench/v1/jobs", json=job), 201)
        assert wait_for(lambda: mon.get(DASHBOARD).json()["dashboard"]["problems"] == 2, 10)
        assert wait_for(lambda: len(mon.get(DASHBOARD).json()["dashboard"]["capacity"]) == 4)
        time.sleep(1.2)     # a second of full-tilt figures since the problems came
        resp = mon.get(DASHBOARD, headers={"Accept-Encoding": "gzip"}, stream=True)
        wire = resp.raw.read(decode_content=False)
        text = gzip.decompress(wire)
        d = json.loads(text)["dashboard"]
        plain = mon.get(DASHBOARD, headers={"Accept-Encoding": "identity"})
    finally:
        fake.stop()
    print(f"\ndashboard, 8 disks, 4 filesystems, 2 problems: {len(text)} bytes as JSON, "
          f"{len(wire)} gzipped (on the wire)")
    assert resp.headers["Content-Encoding"] == "gzip"
    assert int(resp.headers["Content-Length"]) == len(wire) < 2048, (len(wire), text)
    assert "Content-Encoding" not in plain.headers and len(plain.content) > len(wire)
    assert len(d["problems_recent"]) == 2 and len(d["capacity"]) == 4
    assert sorted(disk["n"] for disk in d["disks"]) == sorted(fake.disks)
    assert d["ndisks"] == 8
    assert d["ncpus"] == 64
    assert d["mem_bytes"]["total"] == 512 << 30
    assert d["mem_bytes"]["free"] == 64 << 30
    assert d["mem_bytes"]["cache"] == (128 + 8 + 1) << 30   # page cache, reclaimable slab, buffers
    # The files are rewritten every 0.2 s, so a second's counts move by up to a fifth; a
    # latency is a ratio of two counters written together, so it is exact.
    r = FakeProc.RATES
    for disk in d["disks"]:
        assert disk["r_ops_s"] == pytest.approx(r["reads"], rel=0.25)
        assert disk["w_ops_s"] == pytest.approx(r["writes"], rel=0.25)
        assert disk["r_b_s"] == pytest.approx(r["read_sectors"] * 512, rel=0.25)
        assert disk["w_b_s"] == pytest.approx(r["write_sectors"] * 512, rel=0.25)
        assert disk["r_ms"] == pytest.approx(r["read_ms"] / r["reads"], abs=0.002)
        assert disk["w_ms"] == pytest.approx(r["write_ms"] / r["writes"], abs=0.002)
        assert 75 <= disk["busy_pct"] <= 100
    assert d["io"]["r_ops_s"] == pytest.approx(8 * r["reads"], rel=0.25)
    assert d["io"]["w_b_s"] == pytest.approx(8 * r["write_sectors"] * 512, rel=0.25)
    assert d["io"]["r_ms"] == pytest.approx(r["read_ms"] / r["reads"], abs=0.002)
    assert d["io"]["w_ms"] == pytest.approx(r["write_ms"] / r["writes"], abs=0.002)
    assert d["nic_kb_s"]["rx"] == pytest.approx(2 * r["rx_bytes"] / 1024, rel=0.25)
    assert d["nic_kb_s"]["tx"] == pytest.approx(2 * r["tx_bytes"] / 1024, rel=0.25)
    assert d["arc_hit_pct"] == pytest.approx(100 * r["hits"] / (r["hits"] + r["misses"]), abs=0.1)
    assert d["cpu"]["iowait_pct"] == pytest.approx(5, abs=1)
    assert d["cpu"]["busy_pct"] == pytest.approx(55, abs=2)     # 100 - idle 40 - iowait 5


def test_dashboard_of_a_thousand_disks_stays_small(spawn, tmp_path):
    """1,152 disks (48 shelves of 24): the document lists the eight busiest (one, made
    busier than the rest, first), their sum in io, and stays under 2 KB gzipped; every disk
    is one link away. Nobody reading, no document is built: the tag moves by one per read,
    not per second."""
    fake = FakeProc(tmp_path / "root", disks=1152, nics=1, cpus=2, arc=False)
    fake.rates_of = {fake.disks[700]: 3}  # three times the others' rates
    fake.start()
    try:
        srv = spawn("--proc-root", tmp_path / "root")
        mon = srv.admin()
        assert wait_for(lambda: dashboard(mon).get("ndisks") == 1152, 15 * SLOW)
        time.sleep(1.2)  # a whole second of every disk's rates
        resp = mon.get(DASHBOARD, headers={"Accept-Encoding": "gzip"}, stream=True)
        wire = resp.raw.read(decode_content=False)
        d = json.loads(gzip.decompress(wire))["dashboard"]
        tag = resp.headers["ETag"]
        every = expect(mon.get("/api/status/v1/disks"), 200)["disks"]
        # every disk's document: built once a sample, with its own tag, 304 and gzip
        for _ in range(5):
            a = mon.get("/api/status/v1/disks", headers={"Accept-Encoding": "gzip"},
                        stream=True)
            disks_wire = a.raw.read(decode_content=False)
            b = mon.get("/api/status/v1/disks", headers={
                "Accept-Encoding": "gzip", "If-None-Match": a.headers["ETag"]})
            if b.status_code == 304:
                break
            assert b.status_code == 200 and b.headers["ETag"] != a.headers["ETag"]
        assert b.status_code == 304 and a.headers["Content-Encoding"] == "gzip"
        assert a.headers["ETag"] not in (tag, tag.replace("-gz", ""))
        assert len(json.loads(gzip.decompress(disks_wire))["disks"]) == 1152
        time.sleep(2.5)
        later = mon.get(DASHBOARD, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    finally:
        fake.stop()
    print(f"\ndashboard, 1,152 disks: {len(wire)} bytes gzipped; every disk's "
          f"{len(disks_wire)}")
    assert len(wire) < 2048, len(wire)
    assert d["ndisks"] == 1152 and len(d["disks"]) == 8
    assert d["disks"][0]["n"] == fake.disks[700], d["disks"][:2]
    busy = [x["busy_pct"] for x in d["disks"]]
    assert busy == sorted(busy, reverse=True), d["disks"]  # busiest first
    assert d["io"]["r_ops_s"] == pytest.approx(1154 * FakeProc.RATES["reads"], rel=0.25)
    assert sorted(x["n"] for x in every) == sorted(fake.disks)
    gen = lambda t: int(t.strip('"').split("-")[1])  # "<nonce>-<generation>-gz"
    assert gen(later) == gen(tag) + 1, (tag, later)


def dashboard(client):
    return expect(client.get(DASHBOARD), 200)["dashboard"]


def test_dashboard_capacity(spawn, tmp_path):
    """The filesystems that hold data, each device once, with what statvfs says of them; no
    pseudo, network or FUSE ones, no bind-mounted file; the ZFS pools with their state."""
    data = data_mounts(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n")
    mounts = [data[0], ("proc", "/proc", "proc"), ("tmpfs", other, "tmpfs"),
              ("sysfs", "/sys", "sysfs"), ("cgroup2", other, "cgroup2"),
              ("overlay", other, "overlay"), ("srv:/export", other, "nfs4"),
              ("//srv/share", other, "cifs"), ("me@srv:", other, "fuse.sshfs"),
              data[1], ("/dev/fake0", other, "ext4"),            # a bind mount of data 0
              ("/dev/fake9", tmp_path / "hosts", "ext4"),         # a file, not a directory
              ("/dev/fake8", tmp_path / "gone", "ext4"),          # no such mount point
              data[2], data[3]]
    root = tmp_path / "root"
    fake = FakeProc(root, live=False, mounts=mounts).start()
    zfs = root / "proc" / "spl" / "kstat" / "zfs"
    for pool, state in (("tank", "ONLINE"), ("backup", "DEGRADED")):
        (zfs / pool).mkdir(parents=True)
        (zfs / pool / "state").write_text(state + "\n")
    srv = spawn("--proc-root", root)
    mon = srv.admin()
    assert wait_for(lambda: len(dashboard(mon)["capacity"]) == 4), dashboard(mon)
    d = dashboard(mon)
    assert [(fs["n"], fs["type"]) for fs in d["capacity"]] == [(str(p), t) for _, p, t in data]
    for fs in d["capacity"]:
        st = os.statvfs(fs["n"])
        assert fs["size"] == st.f_blocks * st.f_frsize
        # others write to this filesystem meanwhile: the figures of 10 s ago, near enough
        assert fs["used"] == pytest.approx((st.f_blocks - st.f_bfree) * st.f_frsize, rel=0.05)
        assert fs["avail"] == pytest.approx(st.f_bavail * st.f_frsize, rel=0.05)
        assert fs["used"] + fs["avail"] <= fs["size"]
    assert d["pools"] == [{"n": "backup", "state": "DEGRADED"}, {"n": "tank", "state": "ONLINE"}]
    # read again every 10 s: an unmounted filesystem and a pool's new state show up
    fake.write_mounts(data[:1])
    (zfs / "tank" / "state").write_text("FAULTED\n")
    # (10 s a read, and the dashboard is made at the next second: 20 s leaves a busy machine
    # room)
    assert wait_for(lambda: len(dashboard(mon)["capacity"]) == 1, 20), dashboard(mon)
    assert {"n": "tank", "state": "FAULTED"} in dashboard(mon)["pools"]


def test_dashboard_capacity_without_mounts(spawn, tmp_path):
    """No mounts file under --proc-root: an empty list, and no pools without ZFS."""
    FakeProc(tmp_path / "root", live=False).start()
    srv = spawn("--proc-root", tmp_path / "root")
    d = dashboard(srv.admin())
    assert d["capacity"] == [] and "pools" not in d


def test_dashboard_lists_the_newest_problems(tmp_path, spawn):
    """Up to five open problems, newest first, each with its uuid, severity and a one-line
    summary of at most 80 bytes."""
    hw = build_box(tmp_path / "sys")
    worker = tmp_path / "worker"
    worker.write_text(FAILING_WORKER)
    worker.chmod(0o755)
    (tmp_path / "bench").mkdir()
    srv = spawn("--sys-root", hw.root, "--system-led-backend", "virtual",
                "--disk-led-backend", "virtual", "--bench-worker", worker,
                "--bench-dirs", tmp_path / "bench")
    admin = srv.admin()
    assert wait_for(lambda: dashboard(admin)["problems"] == 1, 10), dashboard(admin)
    time.sleep(1.1)     # first seen a second apart
    job = {"name": "fail-" + "x" * 55, "pattern": "randread", "size": "1M", "block_size": "4k"}
    expect(admin.post("/api/bench/v1/jobs", json=job), 201)
    assert wait_for(lambda: dashboard(admin)["problems"] == 2, 10), dashboard(admin)
    listed = expect(admin.get("/api/problem/v1/problems"), 200)["problems"]
    recent = dashboard(admin)["problems_recent"]
    by_id = {p["uuid"]: p for p in listed}
    assert [by_id[p["id"]]["code"] for p in recent] == ["SP-BENCH-FAILED", "SP-DISK-FAULT"]
    for p in recent:
        assert set(p) == {"id", "severity", "summary"}
        full = by_id[p["id"]]
        assert p["severity"] == full["severity"]
        desc = full["description"].splitlines()[0]
        assert len(p["summary"].encode()) <= 80, p
        if len(desc.encode()) <= 80:
            assert p["summary"] == desc
        else:
            assert p["summary"].endswith("\u2026") and desc.startswith(p["summary"][:-1]), p
    assert recent[0]["summary"].endswith("\u2026")   # the job's name makes it long


def test_dashboard_sparklines_move_with_the_counters(spawn, tmp_path):
    """60 one-minute means per figure, oldest first; the last is the current minute so far,
    and moves when the counters speed up. A fresh box has no earlier minutes (null)."""
    fake = FakeProc(tmp_path / "root").start()
    try:
        srv = spawn("--proc-root", tmp_path / "root")
        mon = srv.admin()
        wait_for_sample(mon)
        time.sleep(1.1)
        spark = dashboard(mon)["spark"]
        assert set(spark) == {"iops", "kb_s", "cpu", "nic_kb_s"}
        for key, values in spark.items():
            assert len(values) == 60, key
            assert all(v is None for v in values[:-2]), (key, values)
            assert all(v is None or (isinstance(v, int) and v >= 0) for v in values)
        r, n = FakeProc.RATES, len(fake.disks)
        assert spark["iops"][-1] == pytest.approx(n * (r["reads"] + r["writes"]), rel=0.25)
        assert spark["kb_s"][-1] == pytest.approx(
            n * (r["read_sectors"] + r["write_sectors"]) / 2, rel=0.25)
        assert spark["cpu"][-1] == pytest.approx(60, abs=2)   # not idle: 100 - 40
        assert spark["nic_kb_s"][-1] == pytest.approx(
            2 * (r["rx_bytes"] + r["tx_bytes"]) / 1024, rel=0.25)
        before = spark["iops"][-1]
        # ten times the reads from now on: the minute's mean goes up within seconds
        fake.RATES = dict(FakeProc.RATES, reads=10 * r["reads"])
        assert wait_for(lambda: dashboard(mon)["spark"]["iops"][-1] > 1.5 * before, 5), \
            (before, dashboard(mon)["spark"]["iops"][-3:])
    finally:
        fake.stop()


def test_dashboard_sparklines_survive_a_restart(tmp_path):
    """The minutes before a restart come back from the stored analytics: a box whose
    counters stand still after the restart still shows the busy minute before it."""
    root, state = tmp_path / "root", tmp_path / "state"
    fake = FakeProc(root).start()
    srv = Server(state, "--proc-root", root).start()
    try:
        wait_for_sample(srv.admin())
        time.sleep(2.2)
    finally:
        fake.stop()
        assert_stopped_cleanly(srv)    # SIGTERM stores what memory holds
    FakeProc(root, live=False).start()     # from now on nothing moves
    srv = Server(state, "--proc-root", root).start()
    try:
        mon = srv.admin()
        wait_for_sample(mon)
        iops = dashboard(mon)["spark"]["iops"]
        assert any(v and v > 1000 for v in iops[-3:]), iops[-3:]
    finally:
        assert_stopped_cleanly(srv)


def test_dashboard_gzip_and_etags(clients):
    """Gzip where Accept-Encoding takes it, with an ETag of its own; 304 for either tag of
    the current document, as the client sent it; Vary on both."""
    mon = clients["monitor"]
    wait_for_sample(mon)
    for accept, gz in (("gzip", True), ("gzip;q=0", False), ("identity", False), ("*", True)):
        for _ in range(5):      # a tick may fall between the two requests
            r = mon.get(DASHBOARD, headers={"Accept-Encoding": accept}, stream=True)
            wire = r.raw.read(decode_content=False)
            assert r.headers["Vary"] == "Accept-Encoding"
            assert (r.headers.get("Content-Encoding") == "gzip") == gz, accept
            assert r.headers["ETag"].endswith('-gz"') == gz, accept
            body = json.loads(gzip.decompress(wire) if gz else wire)
            assert set(body) == {"dashboard"}
            again = mon.get(DASHBOARD, headers={"Accept-Encoding": accept,
                                                "If-None-Match": r.headers["ETag"]})
            if again.status_code == 304:
                break
        assert again.status_code == 304 and again.content == b"", accept
        assert again.headers["ETag"] == r.headers["ETag"]


def test_dashboard_counts_jobs_and_leds(spawn):
    """The counts come from the job supervisor and the LEDs, as they change."""
    srv = spawn("--system-led-backend", "virtual")
    admin = srv.admin()
    wait_for_sample(admin)
    job = {"pattern": "randread", "size": "1M", "block_size": "4k", "runtime_s": 30}
    jobs = [expect(admin.post("/api/bench/v1/jobs", json=job), 201)["job"] for _ in range(2)]
    expect(admin.put("/api/hardware/v1/chassis/system", json={"locate": True}), 202)

    def counted():
        d = admin.get(DASHBOARD).json()["dashboard"]
        return d["jobs"] == {"running": 1, "queued": 1} and d["leds_lit"] == 1
    try:
        assert wait_for(counted, 4), admin.get(DASHBOARD).text
        text = admin.get("/metrics").text
        assert 'spindle_jobs{state="running"} 1' in text
        assert 'spindle_jobs{state="queued"} 1' in text
        assert "spindle_locator_leds_lit 1" in text
    finally:
        for j in reversed(jobs):
            admin.delete(f"/api/bench/v1/jobs/{j['id']}")
    expect(admin.put("/api/hardware/v1/chassis/system", json={"locate": False}), 202)
    assert wait_for(lambda: admin.get(DASHBOARD).json()["dashboard"]["leds_lit"] == 0, 4)


def test_dashboard_headers_etag_304(clients):
    mon = clients["monitor"]
    wait_for_sample(mon)
    for _ in range(5):      # a tick may fall between the two requests: then try again
        first = mon.get(DASHBOARD)
        expect(first, 200)
        etag = first.headers["ETag"]
        again = mon.get(DASHBOARD, headers={"If-None-Match": etag})
        if again.status_code == 304:
            break
        assert again.headers["ETag"] != etag, "200 to a matching If-None-Match"
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["ETag"] == etag
    # a 304 describes no body: no Content-Type (a validating proxy such as Prism refuses one)
    assert "Content-Type" not in again.headers, again.headers
    assert "max-age=1" in again.headers["Cache-Control"]
    assert re.match(r'^"[^"]+"$', etag), etag
    assert "max-age=1" in first.headers["Cache-Control"]
    assert first.headers["Content-Type"].startswith("application/json")


def test_etag_changes_once_per_sample(clients):
    mon = clients["monitor"]
    wait_for_sample(mon)
    first = mon.get(DASHBOARD)
    time.sleep(1.1)
    later = mon.get(DASHBOARD, headers={"If-None-Match": first.headers["ETag"]})
    d0, d1 = first.json()["dashboard"], expect(later, 200)["dashboard"]
    assert later.headers["ETag"] != first.headers["ETag"]
    assert parse_time(d1["time"]) > parse_time(d0["time"])


@pytest.mark.parametrize("header,hit", [
    ("{etag}", True), ('"nope", {etag}', True), ("W/{etag}", True), ("*", True),
    ('"nope"', False), ("", False)])
def test_if_none_match_forms(clients, header, hit):
    mon = clients["monitor"]
    wait_for_sample(mon)
    for _ in range(5):
        etag = mon.get(DASHBOARD).headers["ETag"]
        resp = mon.get(DASHBOARD, headers={"If-None-Match": header.format(etag=etag)})
        if not hit or resp.headers["ETag"] == etag:
            break
    assert resp.status_code == (304 if hit else 200), resp.headers


def test_dashboard_refuses_parameters(clients):
    expect_fault(clients["monitor"].get(DASHBOARD, params={"full": "1"}), 400,
                 "ERR_UNKNOWN_ARG", "full")


def test_dashboard_needs_stat_read(server, admin):
    role = make_role(admin, authorizations=["worksheet:read"])
    c = server.login_client(make_user(admin, [role]), PASSWORD)
    expect_fault(c.get(DASHBOARD), 403, "ERR_DENIED", "stat:read")
    expect_fault(c.get(EVENTS), 403, "ERR_DENIED", "stat:read")


# ---- events ---------------------------------------------------------------------------

def test_events_stream(server, clients):
    mon = clients["monitor"]
    wait_for_sample(mon)
    with EventStream(server, mon.token, EVENTS) as es:
        assert es.status == 200
        assert es.headers["Content-Type"].startswith("text/event-stream")
        assert es.headers["Cache-Control"] == "no-store"
        ev = es.next_event(lambda e: "data" in e)
        assert ev["event"] == "dashboard"
        doc = json.loads(ev["data"])["dashboard"]
        assert doc["time"] and "disks" in doc
        # Then one a second, each a newer sample.
        last_id, last_time = int(ev["id"]), parse_time(doc["time"])
        for _ in range(2):
            ev = es.next_event(lambda e: e.get("event") == "dashboard", timeout=3 * SLOW)
            doc = json.loads(ev["data"])["dashboard"]
            assert int(ev["id"]) > last_id and parse_time(doc["time"]) > last_time
            last_id, last_time = int(ev["id"]), parse_time(doc["time"])
        assert sse_clients(mon) >= 1


@pytest.mark.parametrize("abort", [False, True], ids=["close", "reset"])
def test_events_client_gone_is_cleaned_up(server, clients, abort):
    mon = clients["monitor"]
    assert wait_for(lambda: sse_clients(mon) == 0)
    streams = [EventStream(server, mon.token, EVENTS) for _ in range(5)]
    for es in streams:
        es.next_event(lambda e: "data" in e)
    assert sse_clients(mon) == 5
    for es in streams:
        es.close(abort=abort)
    # At once: the loop sees the close on its next turn.
    assert wait_for(lambda: sse_clients(mon) == 0, 2), sse_clients(mon)
    expect(server.client().get("/api/system/v1/health"), 200)
    # The daemon goes on serving events to a newcomer.
    with EventStream(server, mon.token, EVENTS) as es:
        assert es.next_event(lambda e: "data" in e)["event"] == "dashboard"


def test_events_end_with_the_session(server, admin):
    name = make_user(admin)
    resp = server.login(name, PASSWORD)
    expect(resp, 201)
    token = resp.headers["X-Auth-Session"]
    with EventStream(server, token, EVENTS) as es:
        es.next_event(lambda e: "data" in e)
        expect(server.client(token).delete(ACCESS), 204)
        # a tick's event already on its way when the logout was handled may come first;
        # after it, the end
        ev = es.next_event(lambda e: e.get("event") in ("end", "dashboard"), timeout=3 * SLOW)
        if ev["event"] == "dashboard":
            ev = es.next_event(lambda e: e.get("event") in ("end", "dashboard"),
                               timeout=3 * SLOW)
        assert ev["event"] == "end"
        assert json.loads(ev["data"])["fault"]["code"] == 401
        assert es.at_eof(timeout=3 * SLOW)


def test_events_heartbeat_and_timeout(spawn):
    # --timeout 2: the heartbeat comes every second, and keeps the stream past the timeout.
    srv = spawn("--timeout", "2")
    admin = srv.admin()
    with EventStream(srv, admin.token, EVENTS) as es:
        es.next_event(lambda e: "heartbeat" in e.get("comments", []), timeout=4 * SLOW)
        time.sleep(2.5)
        es.next_event(lambda e: "data" in e, timeout=3 * SLOW)


def test_shutdown_ends_open_streams(spawn):
    srv = spawn()
    admin = srv.admin()
    es = EventStream(srv, admin.token, EVENTS)
    es.next_event(lambda e: "data" in e)
    code, seconds = srv.stop()
    assert code == 0 and seconds < 5 * SLOW, (code, seconds)
    assert es.at_eof(timeout=1)
    es.close()
