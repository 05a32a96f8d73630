# SPDX-License-Identifier: ISC
"""The recordsize story of the README, end to end through the API, on a box whose figures
are known: a ZFS dataset (fake mounts, the fake `zfs` and `zpool` of fixtures/zfsbin) on a
mirror of two disks (the synthetic /proc's), and the fake worker (fixtures/fakeworker.py)
reporting what a database's own report would.

1. 8k random reads on recordsize 128k: 6,000 IOPS for the job, while each disk read 3,000
   records of 128k a second. The run finds 16x read amplification (the worst case, 128k /
   8k, reached) and its limit.
2. `zfs set recordsize=8k`, a new file, the same job: 74,000 IOPS for the job, 60,000 a
   second from the disks (8k each). No amplification; 19 % served from cache.
3. The comparison says what changed (recordsize 128k → 8k) and that the IOPS
   difference is far beyond the noise of per-second IOPS.

The collector samples the synthetic counters once a second while they are rewritten every
0.2 s, so the disks' rates are exact to a few percent, not to the digit: the findings are
checked against the stored inputs exactly and against the story's figures within that.
Run with -s to print the findings as the README quotes them."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import REPO, FakeProc, Server, expect
from test_bench import BENCH, JOBS, scratch, submit, wait_state

FIXTURES = REPO / "tests" / "api" / "fixtures"
FAKE_BIN = FIXTURES / "zfsbin"
FAKE_WORKER = FIXTURES / "fakeworker.py"
DISKS = ("nvme0n1", "nvme1n1")


class Disks(FakeProc):
    """The synthetic /proc whose disks' rates the test changes as it goes: each counter
    keeps counting from where it was (no jump the collector would read as a burst)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        # (counters at `since`, rates, since): replaced whole, as the writer thread reads it
        self.state = ({name: rate * 10 for name, rate in self.RATES.items()},
                      dict(self.RATES), 0.0)

    def value(self, name, t=0):
        base, rates, since = self.state
        return int(base[name] + rates[name] * (t - since))

    def elapsed(self):
        return time.monotonic() - self.t0

    def set_rates(self, t, **changed):
        base = {name: self.value(name, t) for name in self.RATES}
        self.state = (base, {**self.state[1], **changed}, t)


def per_disk(reads, record):
    """Rates for each of the two disks: reads a second of record bytes each."""
    return {"reads": reads, "read_sectors": reads * record // 512, "writes": 0,
            "write_sectors": 0, "write_ms": 0, "read_ms": reads // 10, "io_ms": 700}


@pytest.fixture(scope="module")
def box():
    base = scratch()
    db = base / "tank-db"
    db.mkdir()
    db = db.resolve()
    root = base / "root"
    proc = Disks(root, disks=2, nics=1, cpus=2, mounts=[("tank/db", db, "zfs")])
    proc.set_rates(0, **per_disk(3000, 131072))
    proc.start()
    # the pool: a mirror of a partition of each disk
    for disk in DISKS:
        part = root / "sys" / "devices" / "pci0000:00" / "nvme" / disk / f"{disk}p1"
        (part / "partition").parent.mkdir(parents=True, exist_ok=True)
        (part / "partition").write_text("1\n")
        link = root / "sys" / "class" / "block" / f"{disk}p1"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(part, link.parent))
    status = base / "zpool-status"
    status.write_text("  pool: tank\n state: ONLINE\nconfig:\n\n"
                      "\tNAME                STATE     READ WRITE CKSUM\n"
                      "\ttank                ONLINE       0     0     0\n"
                      "\t  mirror-0          ONLINE       0     0     0\n"
                      + "".join(f"\t    /dev/{d}p1    ONLINE       0     0     0\n"
                                for d in DISKS)
                      + "\nerrors: No known data errors\n")
    zfs_state = base / "zfs-state.json"
    zfs_state.write_text(json.dumps({"tank/db": {
        "recordsize": "131072", "primarycache": "all", "secondarycache": "all",
        "compression": "lz4", "atime": "off", "sync": "standard", "logbias": "latency"}}))
    model = base / "worker-model.json"
    env = {**os.environ, "PATH": f"{FAKE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "FAKE_ZFS_STATE": str(zfs_state), "FAKE_ZPOOL_STATUS": str(status),
           "FAKEWORKER_MODEL": str(model)}
    srv = Server(base / "state", "--bench-dirs", db, "--bench-worker", FAKE_WORKER,
                 "--proc-root", root, "--sys-root", root, env=env).start()
    yield {"base": base, "db": db, "proc": proc, "srv": srv, "admin": srv.admin(),
           "env": env, "model": model}
    srv.stop()
    proc.stop()
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def run(box, name, iops_per_thread):
    """The README's job: 8 threads of 8k random reads for 5 s, on a file of the dataset."""
    box["model"].write_text(json.dumps({"iops_per_thread": iops_per_thread, "step_s": 1.0,
                                        "jitter": [0.99, 1.01, 1.0, 0.98, 1.02]}))
    spec = {"name": name, "label": "oltp", "pattern": "randread", "block_size": "8k",
            "threads": 8, "size": "64M", "runtime_s": 5, "target": str(box["db"] / name)}
    job = submit(box["admin"], spec)
    job = wait_state(box["admin"], job["id"], {"done", "failed"}, timeout=40)
    assert job["state"] == "done", job.get("reason")
    return job


def findings(job):
    return {f["id"]: f for f in job["result"]["findings"]}


def show(title, found):
    print(f"\n{title}")
    for f in found.values():
        print(f"  {f['id']:20} {f['value']!s:>8} {f['unit'] or '':8} {'!' if f['flag'] else ' '} "
              f"{f['text']}")


@pytest.fixture(scope="module")
def story(box):
    before = run(box, "db-128k.dat", 750)  # 6,000 IOPS
    subprocess.run(["zfs", "set", "recordsize=8k", "tank/db"], env=box["env"], check=True)
    box["proc"].set_rates(box["proc"].elapsed(), **per_disk(30000, 8192))
    after = run(box, "db-8k.dat", 9250)  # 74,000 IOPS
    return before, after


def test_recordsize_128k_reads_16_times_what_the_job_asked(story):
    before, _ = story
    env, res = before["environment"], before["result"]
    assert env["zfs"]["recordsize"] == 131072 and env["zfs"]["disks"] == list(DISKS)
    dev = res["device"]
    assert dev["disk"] == "tank" and dev["pool_disks"] == list(DISKS)
    assert res["read"]["iops"] == 6000
    assert dev["reads_per_s"] == pytest.approx(6000, rel=0.06)
    found = findings(before)
    show("recordsize 128k:", found)
    amp = found["read_amplification"]
    assert amp["value"] == pytest.approx(dev["read_bytes_per_s"] / res["read"]["bytes_per_s"],
                                         abs=0.006)
    assert amp["value"] == pytest.approx(16, rel=0.06) and amp["flag"]
    assert amp["inputs"]["worst_case"] == 16 and "up to 16x" in amp["text"]
    # every read went to the disks (give or take the synthetic counters' few percent)
    cache = found["cache_served"]
    assert cache["value"] == pytest.approx(
        max(0.0, 1 - dev["reads_per_s"] / res["read"]["iops"]) * 100, abs=0.051)
    assert cache["value"] < 7
    assert found["stability"]["flag"] is False


def test_recordsize_8k_no_amplification_and_a_share_from_cache(story):
    _, after = story
    res = after["result"]
    assert after["environment"]["zfs"]["recordsize"] == 8192
    assert res["read"]["iops"] == 74000
    found = findings(after)
    show("recordsize 8k:", found)
    amp = found["read_amplification"]
    assert amp["value"] == pytest.approx(60000 / 74000, rel=0.06) and not amp["flag"]
    assert "worst_case" not in amp["inputs"]  # records no larger than the reads
    cache = found["cache_served"]
    want = (1 - res["device"]["reads_per_s"] / res["read"]["iops"]) * 100
    assert cache["value"] == pytest.approx(want, abs=0.051)
    assert cache["value"] == pytest.approx(100 * (1 - 60000 / 74000), abs=5)


def test_the_comparison_says_what_changed_and_that_it_is_no_noise(box, story):
    before, after = story
    cmp = expect(box["admin"].get(f"{BENCH}/compare?jobs={before['id']},{after['id']}"),
                 200)["comparison"]
    diff = cmp["differences"]
    print(f"\nwhat changed: {diff['text']}")
    assert "recordsize 128k → 8k" in diff["text"]
    assert "block_size" not in diff["text"] and "threads" not in diff["text"]
    iops = next(f for f in cmp["figures"] if f["name"] == "summary.iops")
    assert iops["values"] == [6000, 74000] and iops["diff_pct"] == [0, 1133.3]
    note, = cmp["significance"]
    print(f"significance: {note['summary']} {note['text']}")
    assert note["job"] == after["id"] and note["beyond_noise"] is True
    assert note["summary"] == ("1133.3 % more IOPS than the baseline, clearly beyond the "
                               "noise of these runs: a real difference.")
    assert [f["id"] for f in cmp["findings"][0]] == [f["id"] for f in
                                                     before["result"]["findings"]]
