# SPDX-License-Identifier: ISC
"""fio interchange against Debian's fio and its own tools: a real fio run (json+, its
histogram, iops and bw logs) imported and exported again reads the same through
fio_jsonplus_clat2csv; a Spindle run's ?format=fio reads through fio_jsonplus_clat2csv with
rows that give the run's percentiles; its fio-log files read through fiologparser_hist.py and
fio2gnuplot as fio's own do; the import's faults. One server and one fio run for the module;
runtimes of 2 s."""
import csv
import gzip
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FakeProc, assert_stopped_cleanly, expect, expect_fault

sys.path.insert(0, str(Path(__file__).parent))
from test_bench import JOBS, bench_server, fake_sys_for, scratch, submit, wait_state  # noqa: E402

FIO = shutil.which("fio") or "/usr/bin/fio"
CLAT2CSV = shutil.which("fio_jsonplus_clat2csv") or "/usr/bin/fio_jsonplus_clat2csv"
FIO2GNUPLOT = shutil.which("fio2gnuplot") or "/usr/bin/fio2gnuplot"
HIST_PARSER_GZ = Path("/usr/share/doc/fio/fiologparser_hist.py.gz")
PY = "/usr/bin/python3"  # Debian's, where numpy and pandas are

pytestmark = pytest.mark.skipif(not os.path.exists(FIO), reason="fio is not installed")


@pytest.fixture(scope="module")
def env():
    base = scratch()
    (base / "bench").mkdir()
    (base / "fio").mkdir()
    proc = FakeProc(base / "root", disks=1, nics=1, cpus=2).start()
    fake_sys_for(base / "root", base / "bench")
    srv = bench_server(base, "--bench-concurrency", "1", "--bench-max-runtime", "60")
    admin = srv.admin()
    # a fio run while the server starts its Spindle run: the same job both ways
    job = submit(admin, {"name": "sp-randread", "pattern": "randread", "size": "16M",
                         "block_size": "8k", "readers": 1, "runtime_s": 2.5})
    fdir = base / "fio"
    subprocess.run([FIO, "--name=fio-randread", f"--filename={fdir / 'data'}", "--size=16M",
                    "--runtime=2", "--time_based", "--ioengine=psync", "--rw=randread",
                    "--bs=8k", "--output-format=json+", f"--output={fdir / 'out.json'}",
                    f"--write_hist_log={fdir / 'f'}", "--log_hist_msec=500",
                    f"--write_iops_log={fdir / 'f'}", f"--write_bw_log={fdir / 'f'}",
                    f"--write_lat_log={fdir / 'f'}", "--log_avg_msec=1000"],
                   check=True, capture_output=True, timeout=60)
    job = wait_state(admin, job["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")
    yield {"base": base, "srv": srv, "admin": admin, "job": job, "fio_dir": fdir,
           "fio_json": json.loads((fdir / "out.json").read_text())}
    assert_stopped_cleanly(srv)
    proc.stop()
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def clat2csv(doc, workdir, name):
    """fio_jsonplus_clat2csv on doc: the rows of its first job's CSV."""
    src = workdir / f"{name}.json"
    src.write_text(json.dumps(doc))
    subprocess.run([PY, CLAT2CSV, str(src), str(workdir / f"{name}.csv")], check=True,
                   capture_output=True, timeout=60)
    with open(workdir / f"{name}_job0.csv") as f:
        rows = [[c.strip() for c in r] for r in csv.reader(f)]
    return rows[0], rows[1:]


def column(header, rows, name):
    k = header.index(name)
    return [(int(r[0]), r[k]) for r in rows if r[k]]


def export(admin, job_id):
    return expect(admin.get(f"{JOBS}/{job_id}/result?format=fio"), 200)


def fio_log(admin, job_id, kind):
    resp = admin.get(f"{JOBS}/{job_id}/fio-log?log={kind}")
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain")
    return resp.text


@pytest.fixture(scope="module")
def imported(env):
    resp = env["admin"].post(f"{JOBS}/import", json=env["fio_json"])
    job = expect(resp, 201)["job"]
    assert resp.headers["Location"] == job["href"] == f"{JOBS}/{job['id']}"
    return job


def test_fio_json_plus_round_trips_through_import(env, imported):
    fio = env["fio_json"]
    fj = fio["jobs"][0]
    job = imported
    assert job["state"] == "done" and job["imported"] is True
    assert job["name"] == "fio-randread" and job["target"] == str(env["fio_dir"] / "data")
    assert job["spec"]["pattern"] == "randread" and job["spec"]["block_size"] == 8192
    assert job["spec"]["engine"] == "psync" and job["spec"]["fio"]["options"]["bs"] == "8k"
    res = job["result"]
    assert res["read"]["ops"] == fj["read"]["total_ios"]
    assert res["read"]["bytes"] == fj["read"]["io_bytes"]
    assert res["read"]["latency_ns"]["p99"] == fj["read"]["clat_ns"]["percentile"]["99.000000"]
    assert res["read"]["hist"]["count"] == fj["read"]["total_ios"]
    assert res["cpu"]["user_s"] == pytest.approx(fj["usr_cpu"] / 100 * fj["job_runtime"] / 1000,
                                                 abs=1e-3)
    assert job["ended"] is not None
    # what fio's own figures tell: the tail, and the system CPU per I/O from sys_cpu
    found = {f["id"]: f for f in res["findings"]}
    pct = fj["read"]["clat_ns"]["percentile"]
    assert found["tail"]["inputs"] == {"direction": "read", "p50_ns": pct["50.000000"],
                                       "p99.9_ns": pct["99.900000"]}
    assert found["tail"]["value"] == round(pct["99.900000"] / pct["50.000000"], 1)
    assert "read_amplification" not in found and "limit" not in found  # no disk figures
    # listed, and comparable with a run made here
    listed = expect(env["admin"].get(f"{JOBS}?limit=1000"), 200)["jobs"]
    assert any(j["id"] == job["id"] and j.get("imported") for j in listed)
    cmp = expect(env["admin"].get(f"/api/bench/v1/compare?jobs={env['job']['id']},{job['id']}"),
                 200)["comparison"]
    names = {f["name"] for f in cmp["figures"]}
    assert "read.iops" in names and "read.latency_ns.p99" in names
    # exported again: fio_jsonplus_clat2csv reads the same rows from both documents
    back = export(env["admin"], job["id"])
    assert back["jobs"][0]["read"]["clat_ns"]["bins"] == fj["read"]["clat_ns"]["bins"]
    h1, rows1 = clat2csv(fio, env["base"], "orig")
    h2, rows2 = clat2csv(back, env["base"], "back")
    assert h1 == h2 and rows1 == rows2 and len(rows1) > 10
    assert back["spindle"]["imported"] is True
    assert back["spindle"]["findings"] == res["findings"]
    # a document without bins (plain json) imports too, without a histogram
    plain = json.loads(json.dumps(fio))
    del plain["jobs"][0]["read"]["clat_ns"]["bins"]
    job2 = expect(env["admin"].post(f"{JOBS}/import", json=plain), 201)["job"]
    assert "hist" not in job2["result"]["read"]
    assert job2["result"]["read"]["latency_ns"]["p50"] == \
        fj["read"]["clat_ns"]["percentile"]["50.000000"]


def test_spindle_run_reads_through_clat2csv(env):
    job, admin = env["job"], env["admin"]
    res = job["result"]
    fio = export(admin, job["id"])
    fj = fio["jobs"][0]
    # the json+ members fio's consumers read
    opts = fj["job options"]
    assert all(isinstance(v, str) for v in opts.values()), opts
    assert (opts["name"], opts["bs"], opts["iodepth"], opts["direct"], opts["numjobs"],
            opts["runtime"], opts["size"], opts["rw"]) == \
        ("sp-randread", "8k", "1", "0", "1", "2500ms", "16M", "randread")
    assert re.fullmatch(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}", fio["time"])
    rd = fj["read"]
    assert rd["iops_samples"] >= 2 and rd["bw_samples"] == rd["iops_samples"]
    assert rd["iops_min"] <= rd["iops_mean"] <= rd["iops_max"]
    assert rd["bw_min"] <= rd["bw_mean"] <= rd["bw_max"]
    assert rd["bw_mean"] == pytest.approx(rd["iops_mean"] * 8, rel=0.01)  # KiB/s of 8k I/Os
    assert fj["write"]["iops_samples"] == 0
    assert fj["iodepth_level"]["1"] == 100.0 and fj["iodepth_submit"]["4"] == 100.0
    for k in ("latency_ns", "latency_us", "latency_ms"):
        assert set(fj[k]) >= {"2", "4", "10", "750", "1000"}
    assert sum(fj["latency_ns"].values()) + sum(fj["latency_us"].values()) + \
        sum(fj["latency_ms"].values()) == pytest.approx(100, abs=0.5)
    du = fio["disk_util"][0]
    assert du["name"] == "nvme0n1"
    counters = res["device"].get("counters")
    if res["device"]["seconds"] >= 2:
        assert counters, res["device"]
    if counters:
        assert {k: du[k] for k in ("read_ios", "read_merges", "read_ticks", "in_queue")} == \
            {k: counters[k] for k in ("read_ios", "read_merges", "read_ticks", "in_queue")}
        assert counters["in_queue"] > 0  # the fake disk's weighted ms move
    assert set(fio["spindle"]) == {"job", "imported", "environment", "findings"}
    assert fio["spindle"]["job"] == job["id"]
    # fio_jsonplus_clat2csv: rows, their count the run's, and the run's percentiles
    header, rows = clat2csv(fio, env["base"], "spindle")
    col = column(header, rows, "read_clat_ns_count")
    assert col and sum(int(c) for _, c in col) == res["read"]["ops"]
    pct = column(header, rows, "read_clat_ns_percentile")
    lat = res["read"]["latency_ns"]
    for p, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
        at = next(ns for ns, q in pct if float(q) >= p)
        # fio's bucket is 1/64 of its power of two wide, reported at its middle
        assert at == pytest.approx(lat[key], rel=1 / 64), (key, at, lat[key])
    # imported back, the document exports the same bins
    again = expect(admin.post(f"{JOBS}/import", json=fio), 201)["job"]
    assert again["result"]["read"]["latency_ns"]["p99"] == rd["clat_ns"]["percentile"]["99.000000"]
    assert export(admin, again["id"])["jobs"][0]["read"]["clat_ns"]["bins"] == \
        rd["clat_ns"]["bins"]


def run_hist_parser(workdir, log_text, name, *args):
    parser = workdir / "fiologparser_hist.py"
    if not parser.exists():
        parser.write_bytes(gzip.decompress(HIST_PARSER_GZ.read_bytes()))
    log = workdir / f"{name}_clat_hist.1.log"
    log.write_text(log_text)
    out = subprocess.run([PY, str(parser), "--noweight", "--percentiles", "50:99", *args, str(log)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    lines = [l.split(",") for l in out.strip().splitlines()]
    head = [h.strip() for h in lines[0]]
    return [dict(zip(head, (float(x) for x in l))) for l in lines[1:]]


@pytest.mark.skipif(not HIST_PARSER_GZ.exists(), reason="fio's docs are not installed")
def test_clat_hist_log_reads_through_fiologparser_hist(env):
    job, admin = env["job"], env["admin"]
    text = fio_log(admin, job["id"], "clat_hist")
    lines = text.strip().splitlines()
    # fio's 1856 buckets merged four at a time, as fio writes with log_hist_coarseness=2
    assert all(len(l.split(", ")) == 3 + 1856 // 4 for l in lines)
    assert sum(sum(int(x) for x in l.split(", ")[3:]) for l in lines) == \
        job["result"]["read"]["ops"]
    rows = run_hist_parser(env["base"], text, "spindle")
    assert rows and sum(r["samples"] for r in rows) == pytest.approx(
        job["result"]["read"]["ops"], rel=0.01)
    # each second lies within the run's spread, give or take a coarse bucket (1/16 of its
    # power of two)
    lat = job["result"]["read"]["latency_ns"]
    for r in rows:
        assert lat["min"] * (1 - 1 / 16) <= r["min"] and r["max"] <= lat["max"] * (1 + 1 / 16)
    # all of it in one interval gives the run's percentiles (the coarse buckets are 1/16
    # of their power of two wide, read at their middles)
    (whole,) = run_hist_parser(env["base"], text, "whole", "-i", "600000")
    assert whole["samples"] == job["result"]["read"]["ops"]
    assert whole["50%"] == pytest.approx(lat["p50"], rel=1 / 16)
    assert whole["99%"] == pytest.approx(lat["p99"], rel=1 / 16)
    # fio's own log of the same job reads the same way
    own = run_hist_parser(env["base"], (env["fio_dir"] / "f_clat_hist.1.log").read_text(),
                          "fio")
    assert own and all(r["samples"] > 0 for r in own)
    # an imported run has no interval histograms
    imp = expect(admin.post(f"{JOBS}/import", json=env["fio_json"]), 201)["job"]
    expect_fault(admin.get(f"{JOBS}/{imp['id']}/fio-log?log=clat_hist"), 400,
                 details="histograms")


def fio2gnuplot(workdir, name, text):
    d = workdir / f"gp-{name}"
    d.mkdir()
    (d / f"{name}_iops.log").write_text(text)
    subprocess.run([PY, FIO2GNUPLOT, "-i", "-k", "-d", str(d / "out")], cwd=d, check=True,
                   capture_output=True, text=True, timeout=60)
    avg = (d / "out" / "result.average").read_text().split("\n")
    return [l for l in avg if l and not l.startswith("#") and not l.startswith("DiskName")]


def test_iops_bw_lat_logs_read_as_fios_own(env):
    job, admin = env["job"], env["admin"]
    ivs = [json.loads(l) for l in admin.get(f"{JOBS}/{job['id']}/progress").text.splitlines()
           if '"interval"' in l]
    measured = [iv for iv in ivs if iv.get("type") == "interval" and iv["phase"] == "measure"
                and iv["read"]["ops"]]
    for kind, member, scale in (("iops", "iops", 1), ("bw", "bytes_per_s", 1 / 1024),
                                ("lat", "lat_mean_ns", 1)):
        text = fio_log(admin, job["id"], kind)
        rows = [[int(x) for x in l.split(", ")] for l in text.strip().splitlines()]
        # fio's columns: msec, value, ddir, bs, then 0 (offset or priority)
        # (rounded half away from zero, as the daemon's llround)
        assert [r[1] for r in rows] == [math.floor(iv["read"][member] * scale + 0.5)
                                        for iv in measured]
        assert all(r[2] == 0 and r[3] == 8192 and r[4] == 0 and len(r) == 5 for r in rows)
        # msec since the first interval began, from the intervals' own times (a first
        # interval of 1.107 s on a busy machine is 1107, not a fault)
        t0 = ivs[0]["t_s"] - ivs[0]["elapsed_s"]
        assert [r[0] for r in rows] == [math.floor((iv["t_s"] - t0) * 1000 + 0.5)
                                        for iv in measured]
        assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    # fio2gnuplot reads ours as it reads fio's own iops log of the same job
    ours = fio2gnuplot(env["base"], "spindle", fio_log(admin, job["id"], "iops"))
    theirs = fio2gnuplot(env["base"], "fio", (env["fio_dir"] / "f_iops.1.log").read_text())
    assert ours and theirs and len(ours[0].split()) == len(theirs[0].split())


def test_import_faults(env):
    admin = env["admin"]
    good = env["fio_json"]
    expect_fault(admin.post(f"{JOBS}/import", json={"jobs": []}), 400, details="fio version")
    expect_fault(admin.post(f"{JOBS}/import", json={"fio version": "fio-3.33",
                                                    "timestamp": 1, "jobs": []}),
                 400, details="jobs")
    doc = json.loads(json.dumps(good))
    del doc["jobs"][0]["read"]
    expect_fault(admin.post(f"{JOBS}/import", json=doc), 400, details="jobs[0].read")
    doc = json.loads(json.dumps(good))
    del doc["jobs"][0]["write"]
    expect_fault(admin.post(f"{JOBS}/import", json=doc), 400, details="jobs[0].write")
    doc = json.loads(json.dumps(good))
    bins = doc["jobs"][0]["read"]["clat_ns"]["bins"]
    bins[next(iter(bins))] += 1
    expect_fault(admin.post(f"{JOBS}/import", json=doc), 400, details="clat_ns.bins")
    expect_fault(admin.post(f"{JOBS}/import", data=b"", headers={
        "Content-Type": "application/json"}), 400, details="body")
    expect_fault(admin.post(f"{JOBS}/import", data=b"not json", headers={
        "Content-Type": "application/json"}), 400, details="body")
    big = json.dumps({"fio version": "fio-3.33", "pad": "x" * (3 << 20)})
    expect_fault(admin.post(f"{JOBS}/import", data=big, headers={
        "Content-Type": "application/json"}), 413, details="3145728 bytes")
    before = len(admin.get(JOBS).json()["jobs"])
    int64_max = 2**63 - 1

    def wrecked(fn):
        doc = json.loads(json.dumps(good))
        fn(doc["jobs"][0], doc)
        return doc

    def wrapping_bins(job, _):
        # counts whose sum wraps to -2, as total_ios says
        job["read"]["total_ios"] = -2
        job["read"]["clat_ns"]["bins"] = {"1000": int64_max, "2000": int64_max}

    def huge_bins(job, _):
        bins = job["read"]["clat_ns"]["bins"]
        total = job["read"]["total_ios"]
        job["read"]["clat_ns"]["bins"] = {"1000": int64_max, "2000": total}
        job["read"]["total_ios"] = total
        del bins

    for fn, field in [
        (wrapping_bins, "jobs[0].read.total_ios"),
        (huge_bins, "jobs[0].read.clat_ns.bins"),
        (lambda j, _: j["read"].update(total_ios=-2), "jobs[0].read.total_ios"),
        (lambda j, _: j["read"].update(io_bytes=-1), "jobs[0].read.io_bytes"),
        (lambda j, _: j["read"].update(iops=1.7e308), "jobs[0].read.iops"),
        (lambda j, _: j["read"].update(iops=-1.5), "jobs[0].read.iops"),
        (lambda j, _: j["read"].update(bw_bytes=1e300), "jobs[0].read.bw_bytes"),
        (lambda j, _: j["read"]["clat_ns"].update(mean=1.7e308), "jobs[0].read.clat_ns.mean"),
        (lambda j, _: j["read"]["clat_ns"].update(max=1e200), "jobs[0].read.clat_ns.max"),
        # a mean in range whose product with the count is not (the stored sum)
        (lambda j, _: j["read"]["clat_ns"].update(mean=min(1e15, 2**63 / j["read"]["total_ios"])),
         "jobs[0].read.clat_ns.mean"),
        (lambda j, _: j["read"]["clat_ns"]["percentile"].update({"99.000000": 1e300}),
         "jobs[0].read.clat_ns.percentile.99.000000"),
        (lambda j, _: j.update(job_runtime=1e300), "jobs[0].job_runtime"),
        (lambda j, _: j.update(usr_cpu=-3), "jobs[0].usr_cpu"),
        (lambda j, d: d["disk_util"][0].update(read_ios=1e300) if d.get("disk_util")
         else d.update(disk_util=[{"name": "x", "read_ios": 1e300}]), "disk_util[0].read_ios"),
        (lambda j, d: d.update(timestamp=2**62), "timestamp"),
        (lambda j, _: j.update(sync={"total_ios": 4, "lat_ns": {"min": 1, "max": 9,
                                                                  "mean": 1e300}}),
         "jobs[0].sync.lat_ns.mean"),
    ]:
        resp = admin.post(f"{JOBS}/import", json=wrecked(fn))
        assert resp.status_code == 400, (field, resp.text[:200])
        expect_fault(resp, 400, "ERR_INVALID_ARG", details=field)
    assert len(admin.get(JOBS).json()["jobs"]) == before, "a refused import stored nothing"
    # the result's formats
    jid = env["job"]["id"]
    expect_fault(admin.get(f"{JOBS}/{jid}/result?format=fio-log"), 400, "ERR_INVALID_ARG",
                 details=f"{JOBS}/{{id}}/fio-log?log=")
    expect_fault(admin.get(f"{JOBS}/{jid}/result?format=csv"), 400, details="format")
    expect_fault(admin.get(f"{JOBS}/{jid}/result?log=iops"), 400, "ERR_UNKNOWN_ARG")
    expect_fault(admin.get(f"{JOBS}/{jid}/fio-log"), 400, "ERR_MISSING_ARG", details="log")
    expect_fault(admin.get(f"{JOBS}/{jid}/fio-log?log=slat"), 400, "ERR_INVALID_ARG",
                 details="log")
    expect_fault(admin.get(f"{JOBS}/{jid}/fio-log?log=iops&format=fio"), 400,
                 "ERR_UNKNOWN_ARG")
    expect_fault(admin.get(f"{JOBS}/999999/fio-log?log=iops"), 404)
    # "import" is a route of its own (POST), not a job id
    expect_fault(admin.get(f"{JOBS}/import"), 400, "ERR_INVALID_ARG", details="id: 'import'")
