# SPDX-License-Identifier: ISC
"""What a finished run says about itself, through the API: two real runs of the real worker
on a synthetic /proc and /sys (the disk's and the box's figures known) and a bench dir the
fake mounts and the fake `zfs` (tests/api/fixtures/zfsbin) make a dataset of 128k records;
their findings recomputed here from the stored result and interval lines (the 8k random
reads' worst case 16x among them), and the comparison of the two: what changed in spec
and environment, each run's findings, and whether the IOPS differ beyond the noise."""
import json
import math
import os
import shutil
import sqlite3

import pytest

from conftest import FakeProc, Server, expect
from test_bench import BENCH, JOBS, WORKER, fake_sys_for, scratch, submit, wait_state

FAKE_BIN = os.path.join(os.path.dirname(__file__), "fixtures", "zfsbin")


@pytest.fixture(scope="module")
def runs():
    """Two runs at once, 4k and 8k random reads of 3.5 s: three whole measured seconds."""
    base = scratch()
    (base / "bench").mkdir()
    bench = (base / "bench").resolve()
    proc = FakeProc(base / "root", disks=1, nics=1, cpus=2,
                    mounts=[("tank/bench", bench, "zfs")]).start()
    # the pool: one partition of the synthetic /proc's disk, whose figures are the run's
    fake_sys_for(base / "root", base / "bench")
    part = base / "root" / "sys" / "class" / "block" / "nvme0n1p1"
    part.parent.mkdir(parents=True)
    part.symlink_to(os.path.relpath(base / "root" / "sys" / "devices" / "pci0000:00" / "nvme"
                                    / "nvme0n1" / "nvme0n1p1", part.parent))
    status = base / "zpool-status"
    status.write_text("  pool: tank\n state: ONLINE\nconfig:\n\n"
                      "\tNAME              STATE     READ WRITE CKSUM\n"
                      "\ttank              ONLINE       0     0     0\n"
                      "\t  /dev/nvme0n1p1  ONLINE       0     0     0\n\n"
                      "errors: No known data errors\n")
    path = FAKE_BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    srv = Server(base / "state", "--bench-dirs", bench, "--bench-worker", WORKER,
                 "--proc-root", base / "root", "--sys-root", base / "root",
                 "--bench-concurrency", "2", "--bench-max-runtime", "60",
                 env={**os.environ, "PATH": path, "FAKE_ZPOOL_STATUS": str(status)}).start()
    admin = srv.admin()
    # 4.5 s: three whole seconds even when one tick of the worker's grid comes late on a
    # busy machine (a late tick shortens the next interval below the 0.75 s counted)
    spec = {"pattern": "randread", "size": "2M", "readers": 1, "runtime_s": 4.5,
            "direct": True}
    a = submit(admin, dict(spec, name="find-4k", block_size="4k"))
    b = submit(admin, dict(spec, name="find-8k", block_size="8k"))
    jobs = [wait_state(admin, j["id"], {"done", "failed"}, timeout=30) for j in (a, b)]
    assert [j["state"] for j in jobs] == ["done", "done"], [j.get("reason") for j in jobs]
    yield {"base": base, "srv": srv, "admin": admin, "jobs": jobs}
    srv.stop()
    proc.stop()
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def intervals(admin, job_id):
    text = admin.get(f"{JOBS}/{job_id}/progress").text
    return [o for o in (json.loads(l) for l in text.splitlines() if l.strip())
            if o.get("type") == "interval"]


def per_second(lines):
    return [l["read"]["iops"] + l["write"]["iops"] for l in lines
            if l["phase"] == "measure" and 0.75 <= l["elapsed_s"] <= 1.5]


def mean_sd(v):
    m = sum(v) / len(v)
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def test_findings_match_the_stored_result(runs):
    admin = runs["admin"]
    for job in runs["jobs"]:
        res = job["result"]
        found = {f["id"]: f for f in res["findings"]}
        for f in found.values():
            assert f["title"] and f["rule"] and f["text"] and isinstance(f["flag"], bool)
            assert isinstance(f["inputs"], dict)
        dev, box, rd = res["device"], res["box_cpu"], res["read"]
        assert dev["disk"] == "tank" and dev["pool_disks"] == ["nvme0n1"], dev
        assert box["cpus"] == 2
        # the ARC of the synthetic /proc: 49000 hits/s, 1000 misses/s
        assert res["arc"]["seconds"] >= 1
        assert res["arc"]["hit_pct"] == pytest.approx(
            res["arc"]["hits_per_s"] / (res["arc"]["hits_per_s"] + res["arc"]["misses_per_s"])
            * 100, abs=0.06)
        assert res["arc"]["hit_pct"] == pytest.approx(98, abs=1)

        amp = found["read_amplification"]
        assert amp["value"] == pytest.approx(dev["read_bytes_per_s"] / rd["bytes_per_s"],
                                             abs=0.006)
        # on the dataset of 128k records: 4k random reads 32x at worst, 8k ones 16x
        bs = job["spec"]["block_size"]
        assert job["environment"]["zfs"]["recordsize"] == 131072
        assert amp["inputs"]["recordsize"] == 131072 and amp["inputs"]["block_size"] == bs
        assert amp["inputs"]["worst_case"] == 131072 / bs
        assert f"up to {131072 // bs}x" in amp["text"]
        assert amp["inputs"]["disk_read_bytes_per_s"] == dev["read_bytes_per_s"]
        assert amp["inputs"]["app_read_bytes_per_s"] == rd["bytes_per_s"]
        assert amp["flag"] == (amp["value"] > 1.5)

        cache = found["cache_served"]
        want = max(0.0, 1 - dev["reads_per_s"] / rd["iops"]) * 100
        assert cache["value"] == pytest.approx(want, abs=0.051)
        assert cache["inputs"]["arc_hits_per_s"] == res["arc"]["hits_per_s"]

        sys_us = found["sys_cpu_per_io"]
        iops = rd["iops"] + res["write"]["iops"]
        assert sys_us["value"] == pytest.approx(box["system_pct"] / 100 * 2 / iops * 1e6,
                                                abs=0.051)
        worker = res["cpu"]["system_s"] / (rd["ops"] + res["write"]["ops"]) * 1e6
        assert sys_us["inputs"]["worker_us_per_io"] == pytest.approx(worker, abs=0.006)

        # the synthetic disk is busy near 100 % of the time, the CPUs idle 40 %
        lim = found["limit"]
        want = ("device" if dev["busy_pct"] >= 95 else
                "cpu" if box["idle_pct"] < 5 else "neither")
        assert lim["value"] == want and lim["flag"] == (want != "neither")
        assert lim["inputs"] == {"busy_pct": dev["busy_pct"], "queue": dev["queue"],
                                 "idle_pct": box["idle_pct"], "cpus": 2}

        lat = rd["latency_ns"]
        assert found["tail"]["value"] == pytest.approx(lat["p99.9"] / lat["p50"], abs=0.051)

        v = per_second(intervals(admin, job["id"]))
        assert len(v) >= 3
        m, sd = mean_sd(v)
        st = res["stability"]
        assert st["seconds"] == len(v)
        assert st["iops_mean"] == pytest.approx(m, abs=0.051)
        assert st["iops_stddev"] == pytest.approx(sd, abs=0.051)
        assert found["stability"]["value"] == pytest.approx(sd / m * 100, abs=0.051)
        assert found["stability"]["inputs"]["iops_stddev"] == st["iops_stddev"]
        assert found["stability"]["flag"] == (sd / m > 0.10)
        assert ("warmup" in found) == (len(v) >= 5)


def test_compare_says_what_changed_and_whether_it_is_noise(runs):
    admin, (a, b) = runs["admin"], runs["jobs"]
    # the same dataset: only the spec changed (the target's path, which always does, is
    # listed but not in the line)
    cmp = expect(admin.get(f"{BENCH}/compare?jobs={a['id']},{b['id']}"), 200)["comparison"]
    assert cmp["differences"]["text"] == "block_size 4k → 8k"
    assert {f["name"] for f in cmp["differences"]["fields"]} >= {"block_size", "name",
                                                                "target", "target.path"}
    # another dataset's properties, written into the store as the resolver would have
    db = sqlite3.connect(runs["base"] / "state" / "spindle.db", isolation_level=None,
                         timeout=10)
    for job, rs, cache in ((a, 131072, "all"), (b, 8192, "metadata")):
        env = {"resolved_at": "2026-12-01T21:00:00Z",
               "zfs": {"dataset": "tank/bench", "recordsize": rs, "primarycache": cache},
               "system": {"cpus": 2}}
        db.execute("UPDATE bench_runs SET environment = ? WHERE id = ?",
                   (json.dumps(env), job["id"]))
    db.close()
    cmp = expect(admin.get(f"{BENCH}/compare?jobs={a['id']},{b['id']}"), 200)["comparison"]
    diff = cmp["differences"]
    assert diff["text"] == ("block_size 4k → 8k, recordsize 128k → 8k, "
                            "primarycache all → metadata")
    fields = {f["name"]: f for f in diff["fields"]}
    assert fields["block_size"] == {"name": "block_size", "in": "spec", "values": [4096, 8192],
                                    "text": "block_size 4k → 8k"}
    assert fields["name"]["values"] == ["find-4k", "find-8k"]  # listed, not in the line
    assert fields["zfs.recordsize"]["in"] == "environment"
    assert "system.cpus" not in fields and "zfs.dataset" not in fields
    assert cmp["findings"] == [a["result"]["findings"], b["result"]["findings"]]

    (note,) = cmp["significance"]
    sa, sb = a["result"]["stability"], b["result"]["stability"]
    se = math.sqrt(sa["iops_stddev"] ** 2 / sa["seconds"] + sb["iops_stddev"] ** 2 / sb["seconds"])
    assert note["job"] == b["id"]
    assert note["baseline_iops_mean"] == sa["iops_mean"] and note["iops_mean"] == sb["iops_mean"]
    assert note["diff"] == pytest.approx(sb["iops_mean"] - sa["iops_mean"], abs=0.051)
    assert note["stderr"] == pytest.approx(se, abs=0.006)
    if se > 0:
        t = (sb["iops_mean"] - sa["iops_mean"]) / se
        assert note["t"] == pytest.approx(t, abs=0.006)
        assert note["beyond_noise"] == (abs(t) > note["critical_t"])
    assert ("beyond the noise" in note["text"]) == note["beyond_noise"]
    # the verdict in words, without the statistics
    assert ("clearly beyond the noise" in note["summary"]) == note["beyond_noise"]
    assert "Welch" not in note["summary"] and "standard error" not in note["summary"]

    # the other way round: the 8k run the baseline
    cmp = expect(admin.get(f"{BENCH}/compare?jobs={a['id']},{b['id']}&baseline={b['id']}"),
                 200)["comparison"]
    assert cmp["differences"]["text"].startswith("block_size 8k → 4k, recordsize 8k → 128k")
    assert [n["job"] for n in cmp["significance"]] == [a["id"]]
