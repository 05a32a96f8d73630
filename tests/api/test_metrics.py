# SPDX-License-Identifier: ISC
"""GET /metrics: the Prometheus text exposition, and who may scrape it (the --metrics-allow
address list, or a token with stat:read)."""
import re
import time

import pytest

from conftest import (PASSWORD, SLOW, FakeProc, expect, expect_fault, make_role, make_user,
                      run_daemon)

METRICS = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LABEL = r'[a-z_]+="(?:[^"\\]|\\.)*"'
SAMPLE_RE = re.compile(rf"^((?:spindle|smartctl)_[a-z_]+)(\{{{LABEL}(?:,{LABEL})*\}})?"
                       r" (-?[0-9.]+(?:e[+-]?[0-9]+)?)(?: ([0-9]+))?$")
# The collector's sample carries its own time; the daemon's gauges are read at the scrape.
DAEMON = {"spindle_build_info", "spindle_start_time_seconds", "spindle_jobs",
          "spindle_jobs_ended_total", "spindle_locator_leds_lit",
          "spindle_locator_led_lit_since_seconds", "spindle_hardware_scans_total",
          "spindle_problems_open", "spindle_sse_clients", "spindle_loop_work_max_seconds",
          # disk health (test_smart.py), in the smartctl exporter's names
          "spindle_disk_health", "smartctl_device_smart_status", "smartctl_device_state",
          "smartctl_device_temperature", "smartctl_device_power_on_seconds",
          "smartctl_device_attribute", "smartctl_scsi_grown_defect_list",
          "smartctl_read_total_uncorrected_errors", "smartctl_write_total_uncorrected_errors",
          "smartctl_device_critical_warning", "smartctl_device_percentage_used",
          "smartctl_device_available_spare", "smartctl_device_available_spare_threshold",
          "smartctl_device_media_errors"}


def parse(text, stamps=None):
    """{name: {labels-text: value}}, checking the exposition format line by line: every
    sample after its family's # HELP and # TYPE, families not interleaved. stamps, a dict:
    filled with {name: {the samples' timestamps (ms; None: none)}}."""
    families, types, current = {}, {}, None
    stamps = {} if stamps is None else stamps
    for line in text.splitlines():
        if line.startswith("# HELP "):
            current = line.split()[2]
            assert current not in families, f"{current} twice"
            families[current] = {}
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert name == current and kind in ("counter", "gauge"), line
            types[name] = kind
        else:
            m = SAMPLE_RE.match(line)
            assert m, f"not a sample line: {line!r}"
            name, labels, value, stamp = m.groups()
            assert name == current, f"{name} outside its family ({current})"
            families[name][labels or ""] = float(value)
            stamps.setdefault(name, set()).add(int(stamp) if stamp else None)
    for name, kind in types.items():
        assert (kind == "counter") == name.endswith("_total"), name
    assert set(types) == set(families)
    return families


def test_exposition(server, clients):
    anon = clients["anon"]          # loopback is in the default allow-list
    resp = anon.get(METRICS)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"] == CONTENT_TYPE
    assert resp.headers["X-Spindle-Version"]
    m = parse(resp.text)
    for name in ("spindle_build_info", "spindle_start_time_seconds", "spindle_jobs",
                 "spindle_locator_leds_lit", "spindle_problems_open", "spindle_sse_clients"):
        assert name in m, name
    assert m["spindle_build_info"] == {f'{{version="{resp.headers["X-Spindle-Version"]}"}}': 1}
    assert set(m["spindle_jobs"]) == {'{state="running"}', '{state="queued"}'}
    # every end from 0 on (the shared server may have run other files' jobs by now: the
    # counting itself is test_jobs_ended_are_counted's, on a daemon of its own)
    ended = m["spindle_jobs_ended_total"]
    assert set(ended) == {f'{{state="{s}"}}' for s in ("done", "failed", "cancelled",
                                                       "interrupted")}
    assert all(v >= 0 and v == int(v) for v in ended.values()), ended
    scans = m["spindle_hardware_scans_total"]
    assert set(scans) == {f'{{why="{w}"}}' for w in ("start", "uevent", "request", "watch")}
    assert scans['{why="start"}'] == 1, scans
    work = m["spindle_loop_work_max_seconds"]
    assert set(work) == {'{clock="wall"}', '{clock="cpu"}'}, work
    assert all(0 <= v < 1 for v in work.values()), work  # 0 before the first tick


def wait_sample(client):
    deadline = time.monotonic() + 5 * SLOW     # the first sample: the collector's 2nd tick
    stamps = {}
    m = parse(client.get(METRICS).text, stamps)
    while "spindle_sample_timestamp_seconds" not in m:
        assert time.monotonic() < deadline, "no sample in /metrics"
        time.sleep(0.1)
        stamps.clear()
        m = parse(client.get(METRICS).text, stamps)
    return m, stamps


def test_samples_carry_the_collectors_second(server, clients):
    """Every line of the collector's sample carries the second it was read (ms), the same
    for every scrape until the next tick: a late or repeated scrape is the same point to
    Prometheus, so irate neither doubles nor drops to 0. The daemon's gauges carry none."""
    anon = clients["anon"]
    m, stamps = wait_sample(anon)
    second = m["spindle_sample_timestamp_seconds"][""]
    work = m["spindle_loop_work_max_seconds"]  # the ticks that made the sample, timed
    assert 0 < work['{clock="cpu"}'] <= work['{clock="wall"}'] * 1.5 + 0.001, work
    for name, got in stamps.items():
        assert got == ({None} if name in DAEMON else {second * 1000}), (name, got)
    # Scrapes within one tick: the same text for the sample, the same time.
    pairs = []
    deadline = time.monotonic() + 5 * SLOW
    while len(pairs) < 3:
        assert time.monotonic() < deadline, pairs
        a, b = anon.get(METRICS).text, anon.get(METRICS).text
        sa = parse(a)["spindle_sample_timestamp_seconds"][""]
        sb = parse(b)["spindle_sample_timestamp_seconds"][""]
        if sa == sb:
            cut = a.index("# HELP spindle_sample_timestamp_seconds")
            assert a[cut:] == b[b.index("# HELP spindle_sample_timestamp_seconds"):]
            pairs.append(sa)
        else:
            assert sb > sa, (sa, sb)        # a tick came between the two
    # ...and the next tick moves it on by its seconds.
    deadline = time.monotonic() + 3 * SLOW
    while True:
        later, stamps = wait_sample(anon)
        if later["spindle_sample_timestamp_seconds"][""] > pairs[-1]:
            break
        assert time.monotonic() < deadline, "the sample's time did not move"
        time.sleep(0.1)
    assert stamps["spindle_cpu_seconds_total"] == {
        later["spindle_sample_timestamp_seconds"][""] * 1000}


def test_sample_counters(server, clients):
    m, _ = wait_sample(clients["anon"])
    modes = {"user", "nice", "system", "iowait", "irq", "softirq", "steal", "idle"}
    assert set(m["spindle_cpu_seconds_total"]) == {f'{{mode="{x}"}}' for x in modes}
    assert m["spindle_cpu_seconds_total"]['{mode="idle"}'] > 0
    for name in ("spindle_memory_total_bytes", "spindle_memory_used_bytes",
                 "spindle_memory_free_bytes", "spindle_cpus", "spindle_sample_timestamp_seconds",
                 "spindle_disk_reads_completed_total", "spindle_disk_read_bytes_total",
                 "spindle_disk_io_time_seconds_total", "spindle_network_receive_bytes_total",
                 "spindle_network_transmit_bytes_total"):
        assert name in m, name
    assert m["spindle_memory_total_bytes"][""] > m["spindle_memory_used_bytes"][""] > 0
    dash = clients["monitor"].get("/api/status/v1/dashboard").json()["dashboard"]
    assert m["spindle_cpus"][""] == dash["ncpus"]
    disks = {d["n"] for d in dash["disks"]}
    assert {re.search(r'device="(.*)"', k).group(1)
            for k in m["spindle_disk_reads_completed_total"]} == disks


def test_counters_are_the_raw_values(spawn, tmp_path):
    """A still synthetic /proc: every counter in /metrics is the file's, in base units."""
    fake = FakeProc(tmp_path / "root", disks=3, nics=2, cpus=4, live=False).start()
    srv = spawn("--proc-root", tmp_path / "root")
    m, _ = wait_sample(srv.client())
    v = fake.value
    for disk in fake.disks:
        dev = f'{{device="{disk}"}}'
        assert m["spindle_disk_reads_completed_total"][dev] == v("reads")
        assert m["spindle_disk_writes_completed_total"][dev] == v("writes")
        assert m["spindle_disk_read_bytes_total"][dev] == v("read_sectors") * 512
        assert m["spindle_disk_written_bytes_total"][dev] == v("write_sectors") * 512
        assert m["spindle_disk_read_time_seconds_total"][dev] == v("read_ms") / 1000
        assert m["spindle_disk_write_time_seconds_total"][dev] == v("write_ms") / 1000
        assert m["spindle_disk_io_time_seconds_total"][dev] == v("io_ms") / 1000
        assert m["spindle_disk_io_now"][dev] == 7
        # a line of eleven fields, as before Linux 4.18: no discards or flushes counted
        assert m["spindle_disk_discards_completed_total"][dev] == 0
        assert m["spindle_disk_flush_requests_total"][dev] == 0
    assert len(m["spindle_disk_reads_completed_total"]) == 3
    assert set(m["spindle_network_receive_bytes_total"]) == {'{device="eth0"}',
                                                              '{device="eth1"}'}   # no lo
    assert m["spindle_network_receive_bytes_total"]['{device="eth1"}'] == v("rx_bytes")
    assert m["spindle_network_transmit_bytes_total"]['{device="eth1"}'] == v("tx_bytes")
    assert m["spindle_network_receive_packets_total"]['{device="eth0"}'] == v("packets")
    assert m["spindle_network_receive_errs_total"]['{device="eth0"}'] == 3
    assert m["spindle_network_transmit_errs_total"]['{device="eth0"}'] == 4
    # USER_HZ is 100: user time is 30 ticks per tick-count per CPU.
    assert m["spindle_cpu_seconds_total"]['{mode="user"}'] == 30 * v("tick") * 4 / 100
    assert m["spindle_cpu_seconds_total"]['{mode="idle"}'] == 40 * v("tick") * 4 / 100
    assert m["spindle_cpus"][""] == 4
    assert m["spindle_memory_total_bytes"][""] == 512 << 30
    assert m["spindle_memory_free_bytes"][""] == 64 << 30
    assert m["spindle_memory_buffers_bytes"][""] == 1 << 30
    assert m["spindle_arc_hits_total"][""] == v("hits")
    assert m["spindle_arc_misses_total"][""] == v("misses")
    assert m["spindle_arc_size_bytes"][""] == 256 << 30
    assert m["spindle_arc_target_bytes"][""] == 300 << 30
    assert set(m["spindle_pressure_some_percent"]) == {
        f'{{resource="{r}"}}' for r in ("cpu", "io", "memory")}


def test_discard_and_flush_times_and_tcp_retransmissions(spawn, tmp_path):
    """A diskstats line of Linux 5.5 and later (discards 15-18, flushes 19-20) gives the
    time they took as node_exporter names it; /proc/net/snmp's RetransSegs the TCP
    retransmissions."""
    FakeProc(tmp_path / "root", disks=1, nics=1, cpus=2, live=False).start()
    proc = tmp_path / "root" / "proc"
    (proc / "diskstats").write_text(
        " 259 0 nvme0n1 10 0 80 5 20 0 160 7 0 9 12 3 0 48 2500 4 1500\n")
    (proc / "net" / "snmp").write_text(
        "Tcp: RtoAlgorithm MaxConn InSegs OutSegs RetransSegs\nTcp: 1 -1 100 90 17\n")
    srv = spawn("--proc-root", tmp_path / "root")
    m, _ = wait_sample(srv.client())
    dev = '{device="nvme0n1"}'
    assert m["spindle_disk_discards_completed_total"][dev] == 3
    assert m["spindle_disk_discarded_bytes_total"][dev] == 48 * 512
    assert m["spindle_disk_discard_time_seconds_total"][dev] == 2.5
    assert m["spindle_disk_flush_requests_total"][dev] == 4
    assert m["spindle_disk_flush_requests_time_seconds_total"][dev] == 1.5
    assert m["spindle_tcp_retransmitted_segments_total"][""] == 17


def test_a_failed_job_is_counted(spawn, tmp_path):
    """spindle_jobs_ended_total counts every end by state, so an alert sees a failure that
    came and went between two scrapes (a worker that exits at once fails its job)."""
    (tmp_path / "bench").mkdir()
    srv = spawn("--bench-worker", "/bin/false", "--bench-dirs", tmp_path / "bench")
    admin = srv.admin()
    for n in range(2):
        spec = {"name": f"fails-{n}", "pattern": "randread", "size": "1M", "block_size": "4k",
                "io_size": "64k"}
        job = expect(admin.post("/api/bench/v1/jobs", json=spec), 201)["job"]
        deadline = time.monotonic() + 10 * SLOW
        while job["state"] in ("queued", "running"):
            assert time.monotonic() < deadline, job
            time.sleep(0.1)
            job = expect(admin.get(job["href"]), 200)["job"]
        assert job["state"] == "failed", job
    ended = parse(srv.client().get(METRICS).text)["spindle_jobs_ended_total"]
    assert ended == {'{state="done"}': 0, '{state="failed"}': 2, '{state="cancelled"}': 0,
                     '{state="interrupted"}': 0}


def test_a_lit_led_says_since_when(spawn, tmp_path):
    """spindle_locator_led_lit_since_seconds{led}: when each lit LED was turned on, the
    same after a restart (an alert can tell one lit for a day); none once it is off."""
    state = tmp_path / "leds"
    hw = ("--system-led-backend", "virtual", "--disk-led-backend", "virtual")
    srv = spawn(*hw, state_dir=state)
    assert parse(srv.client().get(METRICS).text)["spindle_locator_led_lit_since_seconds"] == {}

    def lit(srv, on):
        admin = srv.admin()
        before = time.time()
        resp = admin.put("/api/hardware/v1/chassis/system", json={"locate": on})
        assert resp.status_code in (200, 202), resp.text
        deadline = time.monotonic() + 5 * SLOW
        while True:
            m = parse(srv.client().get(METRICS).text)
            if m["spindle_locator_leds_lit"][""] == on:
                return m["spindle_locator_led_lit_since_seconds"], before
            assert time.monotonic() < deadline, m["spindle_locator_leds_lit"]
            time.sleep(0.1)

    def restarted(srv):
        """The metrics of a new daemon on the same state, once it has seen the LED."""
        srv.stop()
        srv = spawn(*hw, state_dir=state)
        deadline = time.monotonic() + 5 * SLOW     # the first inventory scan
        while True:
            m = parse(srv.client().get(METRICS).text)
            if m["spindle_locator_leds_lit"][""] or time.monotonic() > deadline:
                return srv, m
            time.sleep(0.1)

    since, before = lit(srv, True)
    assert list(since) == ['{led="chassis/system"}'], since
    assert int(before) <= since['{led="chassis/system"}'] <= time.time(), (before, since)
    srv, m = restarted(srv)
    assert m["spindle_locator_led_lit_since_seconds"] == since
    # and again: a start that finds the LED lit keeps the time it was lit
    srv, m = restarted(srv)
    assert m["spindle_locator_led_lit_since_seconds"] == since
    assert lit(srv, False)[0] == {}


def test_token_needed_outside_the_allow_list(spawn, tmp_path):
    srv = spawn("--metrics-allow", "10.0.0.0/8,fd00::/8")
    admin = srv.admin()
    expect_fault(srv.client().get(METRICS), 401, "ERR_UNAUTHORIZED", "credentials")
    # A token with stat:read works, as X-Auth-Session or as a bearer token.
    mon = srv.login_client(make_user(admin, ["monitor"]), PASSWORD)
    assert mon.get(METRICS).status_code == 200
    resp = srv.client().get(METRICS, headers={"Authorization": f"Bearer {mon.token}"})
    assert resp.status_code == 200 and "spindle_build_info" in resp.text
    # A token without it, or a dead one, does not.
    role = make_role(admin, authorizations=["worksheet:read"])
    other = srv.login_client(make_user(admin, [role]), PASSWORD)
    expect_fault(other.get(METRICS), 403, "ERR_DENIED", "stat:read")
    expect_fault(srv.client("not-a-token").get(METRICS), 401, "ERR_UNAUTHORIZED")


def test_allow_list_none_and_single_address(spawn):
    srv = spawn("--metrics-allow", "none")
    expect_fault(srv.client().get(METRICS), 401, "ERR_UNAUTHORIZED")
    srv = spawn("--metrics-allow", "192.0.2.1, 127.0.0.1")
    assert srv.client().get(METRICS).status_code == 200
    srv = spawn("--metrics-allow", "::1")       # the tests connect over IPv4
    expect_fault(srv.client().get(METRICS), 401, "ERR_UNAUTHORIZED")


@pytest.mark.parametrize("value", ["10.0.0.0/33", "10.1.2.3/8", "localhost", "10.0.0.0/x",
                                   "::1/129", "1.2.3.4,,bogus"])
def test_bad_allow_list_exits_2(tmp_path, value):
    code, _, err = run_daemon("--state-dir", tmp_path / "s", "--metrics-allow", value)
    assert code == 2, err
    assert len(err) == 1 and "metrics-allow" in err[0], err


def test_metrics_is_read_only(clients):
    resp = clients["admin"].post(METRICS, json={})
    expect_fault(resp, 405, "ERR_METHOD")
    assert resp.headers["Allow"] == "GET, HEAD"
