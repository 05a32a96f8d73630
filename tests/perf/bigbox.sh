#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: what a big box costs spindled, side by side with a small one.
# For each N of SIZES (24 192 1152: one shelf, eight, the appliance's 48), a fake box of N
# SAS disks in N/24 SES enclosures of 24 slots (tests/api/fixtures/hw.py), 8 CPUs and 4
# NICs, its /proc/diskstats advancing every 0.2 s (tests/api/conftest.py's FakeProc), on
# one root for --proc-root and --sys-root. After WARMUP seconds (130) it prints, per N:
#   - idle CPU: spindled's user + system time over IDLE seconds (60: one round of the
#     hardware watch, --hardware-watch) with no request, in percent of one core;
#   - RSS (VmRSS) then, the most it has been (VmHWM), and how much of it the series in
#     memory hold (the datasets' incore); the hardware scans in those seconds
#     (request/uevent/watch: reads of the hardware should cause none; watch: its passes
#     over the slots);
#   - the longest the loop's own periodic work (a second's tick, a flush's finish) held it
#     in that idle minute, wall clock and the loop thread's CPU time
#     (spindle_loop_work_max_seconds): the stall the box's size causes, without the
#     machine's noise;
#   - the longest loop stall: wrk asks GET /api/system/v1/health on one keep-alive
#     connection (plain HTTP), one request after another, for STALL seconds (20): its slowest
#     answer (a tick that holds the loop shows there) and its median;
#   - the dashboard's size, plain and gzipped; GET /metrics' size and time (median of 5);
#   - GET /api/hardware/v1/chassis after an idle second (median of 5); GET
#     /api/status/v1/disks gzipped, a second apart: its size and time (median of 5);
#   - GET io.ops[disk] for the last hour and the last day at the default granularity:
#     status, time, size (and the granularity answered);
#   - the state dir's growth per minute (du, over the minute the measures take).
# Then a table, and each figure's ratio to the first size's (the peer: a box of one shelf).
# Usage, from the repo root after a build:  bash tests/perf/bigbox.sh
# Environment: SPINDLED (default ./server/spindled), SIZES ("24 192 1152"), WARMUP (130),
#              IDLE (60), STALL (20).
set -euo pipefail

export SPINDLED=${SPINDLED:-$PWD/server/spindled}
export SIZES=${SIZES:-24 192 1152} WARMUP=${WARMUP:-130} IDLE=${IDLE:-60} STALL=${STALL:-20}
[ -x "$SPINDLED" ] || { echo "bigbox.sh: no spindled at $SPINDLED: build first, or set SPINDLED" >&2; exit 1; }

exec /usr/bin/python3 - <<'PY'
import os, statistics, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "tests/api")
import requests
from conftest import FakeProc, Server
from fixtures.hw import FakeSys

SIZES = [int(n) for n in os.environ["SIZES"].split()]
WARMUP, IDLE = float(os.environ["WARMUP"]), float(os.environ["IDLE"])
STALL = float(os.environ["STALL"])
TICK = os.sysconf("SC_CLK_TCK")
TB = 10 ** 12


def sd_name(i):
    """The kernel's names: sda .. sdz, sdaa .. sdzz, sdaaa ..."""
    s = ""
    i += 1
    while i:
        i -= 1
        s = chr(97 + i % 26) + s
        i //= 26
    return "sd" + s


def build(root, n):
    fs = FakeSys(root)
    fs.dmi(sys_vendor="Oracle", product_name="bigbox", product_serial="BB0001")
    names = []
    for e in range((n + 23) // 24):
        host = 10 + e
        enc = fs.enclosure(f"{host}:0:100:0", id=f"0x5003048{e:09x}", vendor="ORACLE",
                           model="DE3-24C", slots=24)
        for s in range(min(24, n - 24 * e)):
            name = sd_name(24 * e + s)
            d = fs.scsi_disk(name, f"{host}:0:{s}:0", transport="sas", vendor="HGST",
                             model="H7280A520SUN8.0T", serial=f"BB{e:03d}{s:03d}",
                             wwid=f"naa.5000cca{e:05x}{s:04x}", size_bytes=8 * TB, rpm=7200)
            fs.seat(enc, f"Slot {s:02d}", d)
            names.append(name)
    return names


def cpu_s(pid):
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK  # utime, stime


def rss_mb(pid, field="VmRSS"):
    """VmRSS (now), or VmHWM (the most it ever was)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def du(path):
    return int(subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def timed(client, url, **kw):
    t = time.monotonic()
    r = client.get(url, **kw)
    return r, (time.monotonic() - t) * 1000


def ms_of(text):
    """wrk's latency figure ("512.00us", "3.21ms", "1.02s") in ms."""
    for unit, scale in (("us", 0.001), ("ms", 1), ("s", 1000)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise ValueError(text)


def stall(srv, seconds):
    """wrk, one connection, one request after another: (slowest, median) answer in ms."""
    out = subprocess.run(["wrk", "-t1", "-c1", f"-d{int(seconds)}s", "--latency",
                          f"{srv.http}/api/system/v1/health"], capture_output=True,
                         text=True, check=True, timeout=seconds + 60).stdout
    lat = next(line.split() for line in out.splitlines() if line.strip().startswith("Latency"))
    p50 = next(line.split() for line in out.splitlines() if line.strip().startswith("50%"))
    return ms_of(lat[3]), ms_of(p50[1])


def metric(client, name):
    """A family of /metrics by its one label's value."""
    out = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + "{"):
            out[line.split('"')[1]] = float(line.split()[-1])
    return out


def scans(client):
    """spindle_hardware_scans_total by why."""
    return {k: int(v) for k, v in metric(client, "spindle_hardware_scans_total").items()}


def measure(n):
    tmp = Path(tempfile.mkdtemp(prefix=f"spindle-bigbox-{n}-"))
    root = tmp / "root"
    names = build(root, n)
    fake = FakeProc(root, disks=0, nics=4, cpus=8, arc=False)
    fake.disks = names
    fake.start()
    srv = Server(tmp / "state", "--proc-root", root, "--sys-root", root,
                 "--disk-led-backend", "ses", "--system-led-backend", "virtual").start()
    try:
        admin = srv.admin()
        pid = srv.proc.pid
        deadline = time.monotonic() + 60
        while admin.get("/api/status/v1/dashboard").json()["dashboard"].get("ndisks") != n:
            if time.monotonic() > deadline:
                raise SystemExit(f"bigbox: {n} disks not seen in 60 s")
            time.sleep(0.5)
        started = time.monotonic()
        print(f"N={n}: {len(names)} disks seen; warming up {WARMUP:.0f} s", file=sys.stderr)
        time.sleep(max(0, WARMUP - (time.monotonic() - started)))
        admin = srv.admin()  # anew: a long warm-up outlives a session
        r = {"N": n}
        state0, t_state0 = du(srv.state_dir), time.monotonic()
        scans0 = scans(admin)
        c0, t0 = cpu_s(pid), time.monotonic()
        time.sleep(IDLE)
        r["idle_cpu_pct"] = 100 * (cpu_s(pid) - c0) / (time.monotonic() - t0)
        r["rss_mb"], r["rss_peak_mb"] = rss_mb(pid), rss_mb(pid, "VmHWM")
        tick = metric(admin, "spindle_loop_work_max_seconds")
        r["tick_wall_ms"], r["tick_cpu_ms"] = tick["wall"] * 1e3, tick["cpu"] * 1e3
        sets = admin.get("/api/analytics/v1/datasets").json()["datasets"]
        r["series_mb"] = sum(x.get("incore", 0) for x in sets) / 1e6
        idle_scans = {k: v - scans0.get(k, 0) for k, v in scans(admin).items()}
        r["idle_scans"] = "/".join(str(idle_scans.get(k, 0)) for k in ("request", "uevent", "watch"))
        r["stall_max_ms"], r["stall_p50_ms"] = stall(srv, STALL)
        plain = admin.get("/api/status/v1/dashboard", headers={"Accept-Encoding": "identity"})
        gz = admin.get("/api/status/v1/dashboard", headers={"Accept-Encoding": "gzip"},
                       stream=True)
        r["dash_plain_kb"] = len(plain.content) / 1024
        r["dash_gz_kb"] = len(gz.raw.read(decode_content=False)) / 1024
        times = []
        for _ in range(5):
            m, ms = timed(admin, "/metrics")
            times.append(ms)
        r["metrics_kb"], r["metrics_ms"] = len(m.content) / 1024, statistics.median(times)
        times = []
        for _ in range(5):
            time.sleep(1.1)
            ch, ms = timed(admin, "/api/hardware/v1/chassis")
            assert ch.status_code == 200, ch.text
            times.append(ms)
        r["chassis_ms"] = statistics.median(times)
        times = []
        for _ in range(5):
            time.sleep(1.1)
            dk, ms = timed(admin, "/api/status/v1/disks", headers={"Accept-Encoding": "gzip"},
                           stream=True)
            body = dk.raw.read(decode_content=False)
            times.append(ms)
        r["disks_ms"], r["disks_kb"] = statistics.median(times), len(body) / 1024
        for label, start in (("hour", -3600), ("day", -86400)):
            d, ms = timed(admin, "/api/analytics/v1/datasets/io.ops%5Bdisk%5D/data",
                          params={"start": start, "meta": "true"})
            gran = d.json()["meta"]["granularity"] if d.status_code == 200 else "-"
            r[f"{label}_status"], r[f"{label}_ms"] = d.status_code, ms
            r[f"{label}_kb"], r[f"{label}_gran"] = len(d.content) / 1024, gran
        time.sleep(max(0, 60 - (time.monotonic() - t_state0)))
        r["state_kb_min"] = (du(srv.state_dir) - state0) / 1024 * 60 / (
            time.monotonic() - t_state0)
        return r
    finally:
        srv.stop()
        fake.stop()
        subprocess.run(["rm", "-rf", str(tmp)])


ROWS = [("idle CPU, % of a core", "idle_cpu_pct", "{:.2f}"),
        ("RSS, MB", "rss_mb", "{:.1f}"),
        ("  the most it has been (VmHWM), MB", "rss_peak_mb", "{:.1f}"),
        ("  of it series in memory, MB", "series_mb", "{:.1f}"),
        ("hardware scans idle: request/uevent/watch", "idle_scans", "{}"),
        ("longest loop work idle (tick, flush), wall ms", "tick_wall_ms", "{:.2f}"),
        ("  the loop thread's CPU, ms", "tick_cpu_ms", "{:.2f}"),
        ("slowest answer, back-to-back health, ms", "stall_max_ms", "{:.2f}"),
        ("  their median, ms", "stall_p50_ms", "{:.3f}"),
        ("dashboard, KB plain", "dash_plain_kb", "{:.1f}"),
        ("dashboard, KB gzipped", "dash_gz_kb", "{:.2f}"),
        ("/metrics, KB", "metrics_kb", "{:.0f}"),
        ("/metrics, ms", "metrics_ms", "{:.1f}"),
        ("chassis list after an idle second, ms", "chassis_ms", "{:.1f}"),
        ("every disk (/status/v1/disks), KB gzip", "disks_kb", "{:.1f}"),
        ("  ms, a second apart", "disks_ms", "{:.1f}"),
        ("io.ops[disk] last hour: status", "hour_status", "{}"),
        ("  granularity", "hour_gran", "{}"),
        ("  ms", "hour_ms", "{:.0f}"),
        ("  KB", "hour_kb", "{:.0f}"),
        ("io.ops[disk] last day: status", "day_status", "{}"),
        ("  granularity", "day_gran", "{}"),
        ("  ms", "day_ms", "{:.0f}"),
        ("  KB", "day_kb", "{:.0f}"),
        ("state dir growth, KB per minute", "state_kb_min", "{:.0f}")]

results = [measure(n) for n in SIZES]
print(f"\n{'N':<40}" + "".join(f"{r['N']:>12}" for r in results)
      + (f"{'ratio':>10}" if len(results) > 1 else ""))
for label, key, fmt in ROWS:
    cells = "".join(f"{fmt.format(r[key]):>12}" for r in results)
    ratio = ""
    a, b = results[0][key], results[-1][key]
    if len(results) > 1 and isinstance(a, float) and a > 0:
        ratio = f"{b / a:>10.2f}"
    print(f"{label:<40}{cells}{ratio}")
print(f"\n(ratio: N={results[-1]['N']} against N={results[0]['N']}, the peer in the same run)")
PY
