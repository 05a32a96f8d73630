"""The phone's dashboard (ETag, 304, size) and its live twin, the Server-Sent Events stream
(one event a second, heartbeats, streams cleaned up when their client goes)."""
import json
import re
import time

import pytest

from conftest import (ACCESS, PASSWORD, SLOW, EventStream, FakeProc, expect, expect_fault,
                      make_role, make_user, parse_time)

DASHBOARD = "/api/status/v1/dashboard"
EVENTS = "/api/status/v1/events"
DISK_KEYS = {"n", "r_ops_s", "w_ops_s", "r_b_s", "w_b_s", "r_ms", "w_ms", "busy_pct"}


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
    assert {"time", "version", "uptime_s", "ncpus", "cpu_pct", "mem_bytes", "disks",
            "nic_kb_s", "jobs", "leds_lit", "problems"} <= set(d), sorted(d)
    assert set(d) - {"arc_hit_pct"} == {"time", "version", "uptime_s", "ncpus", "cpu_pct",
                                        "mem_bytes", "disks", "nic_kb_s", "jobs", "leds_lit",
                                        "problems"}
    parse_time(d["time"])
    assert d["version"] == resp.headers["X-Spindle-Version"]
    assert isinstance(d["uptime_s"], int) and d["uptime_s"] > 0
    assert set(d["cpu_pct"]) == {"busy", "user", "system", "iowait"}
    assert all(0 <= v <= 100 for v in d["cpu_pct"].values()), d["cpu_pct"]
    assert set(d["mem_bytes"]) == {"total", "used", "cache", "free"}
    assert 0 < d["mem_bytes"]["used"] < d["mem_bytes"]["total"]
    for disk in d["disks"]:
        assert set(disk) == DISK_KEYS and 0 <= disk["busy_pct"] <= 100, disk
    assert set(d["nic_kb_s"]) == {"rx", "tx"}
    assert set(d["jobs"]) == {"running", "queued"}
    assert all(isinstance(v, int) and v >= 0 for v in d["jobs"].values())
    assert isinstance(d["leds_lit"], int) and d["problems"] == 0
    if "arc_hit_pct" in d:
        assert 0 <= d["arc_hit_pct"] <= 100
    assert doc["version"] == d["version"]


def test_dashboard_of_a_big_box(spawn, tmp_path):
    """8 NVMe disks at full tilt, 2 NICs, 64 CPUs, 512 GiB and a ZFS ARC (a synthetic
    /proc whose counters move): every figure is there, and the document stays under 2 KB."""
    fake = FakeProc(tmp_path / "root").start()
    try:
        srv = spawn("--proc-root", tmp_path / "root")
        mon = srv.admin()
        wait_for_sample(mon)
        resp = mon.get(DASHBOARD)
        d = expect(resp, 200)["dashboard"]
    finally:
        fake.stop()
    assert len(resp.content) < 2048, (len(resp.content), resp.text)
    assert [disk["n"] for disk in d["disks"]] == fake.disks
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
    assert d["nic_kb_s"]["rx"] == pytest.approx(2 * r["rx_bytes"] / 1024, rel=0.25)
    assert d["nic_kb_s"]["tx"] == pytest.approx(2 * r["tx_bytes"] / 1024, rel=0.25)
    assert d["arc_hit_pct"] == pytest.approx(100 * r["hits"] / (r["hits"] + r["misses"]), abs=0.1)
    assert d["cpu_pct"]["iowait"] == pytest.approx(5, abs=1)
    assert d["cpu_pct"]["busy"] == pytest.approx(55, abs=2)     # 100 - idle 40 - iowait 5


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
