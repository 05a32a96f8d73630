# SPDX-License-Identifier: ISC
"""The environment a benchmark job records (GET /jobs/{id} "environment"): resolved at
submit time from a synthetic /sys and /proc and a fake `zfs` and `zpool` first on the
daemon's PATH (tests/api/fixtures/zfsbin). The target is a real file in a real scratch
dir; the fake /sys maps its st_dev to the faked block device stack and the fake mounts
map its directory to the faked filesystem, both rewritten before each case (the daemon
reads them at each submit). Cases: ZFS with recordsize 128k, xfs on a partition of an md
array, a dm device, and a job whose resolution the daemon's stop interrupted."""
import os
import shutil
import signal
import sqlite3
import time

import pytest

from conftest import SLOW, STOP_TIMEOUT, FakeProc, Server, assert_stopped_cleanly, expect, parse_time
from test_bench import JOBS, WORKER, quick, scratch, submit, wait_running, wait_state
from test_openapi_live import DOC, schema_errors

FAKE_BIN = os.path.join(os.path.dirname(__file__), "fixtures", "zfsbin")
GIB = 1024 ** 3
SYSTEM = {"kernel": "6.1.0-18-amd64", "cpu_model": "AMD EPYC 7313P 16-Core Processor",
          "cpus": 2, "memory_bytes": 512 * GIB}
SDA = "pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
SDB = "pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def link(path, target):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.symlink_to(os.path.relpath(target, path.parent))


def fake_disk(root, rel, model, rotational, scheduler, write_cache, sectors):
    d = root / "sys" / "devices" / rel
    write(d / "size", f"{sectors}\n")
    write(d / "device" / "model", model.ljust(16) + "\n")  # SCSI pads it with spaces
    write(d / "queue" / "rotational", f"{rotational}\n")
    write(d / "queue" / "scheduler", scheduler + "\n")
    write(d / "queue" / "nr_requests", "64\n")
    write(d / "queue" / "max_sectors_kb", "1280\n")
    write(d / "queue" / "write_cache", write_cache + "\n")
    return d


class Box:
    """The fake /sys and /proc around one daemon, and the bench dir's device number."""

    def __init__(self, base):
        self.root = base / "root"
        self.bench = (base / "bench").resolve()
        st = os.stat(self.bench)
        self.dev_link = self.root / "sys" / "dev" / "block" / f"{os.major(st.st_dev)}:" \
                                                               f"{os.minor(st.st_dev)}"
        self.proc = FakeProc(self.root, disks=1, nics=1, cpus=2, live=False).start()
        p = self.root / "proc"
        write(p / "sys" / "kernel" / "osrelease", SYSTEM["kernel"] + "\n")
        write(p / "cpuinfo", "".join(f"processor\t: {i}\nvendor_id\t: AuthenticAMD\n"
                                     f"model name\t: {SYSTEM['cpu_model']}\n\n"
                                     for i in range(2)))
        arc = p / "spl" / "kstat" / "zfs" / "arcstats"
        write(arc, arc.read_text() + "c_max                           4    8589934592\n")
        write(self.root / "sys" / "module" / "zfs" / "parameters" / "zfs_arc_max", "0\n")

    def mount(self, source, fstype, options):
        write(self.root / "proc" / "self" / "mounts",
              f"/dev/root / ext4 rw,relatime 0 0\n{source} {self.bench} {fstype} {options} 0 0\n")

    def point_at(self, devdir):
        if devdir is None:
            if self.dev_link.is_symlink():
                self.dev_link.unlink()
        else:
            link(self.dev_link, devdir)


@pytest.fixture(scope="module")
def env():
    base = scratch()
    (base / "bench").mkdir()
    box = Box(base)
    path = FAKE_BIN + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    srv = Server(base / "state", "--bench-dirs", base / "bench", "--bench-worker", WORKER,
                 "--proc-root", box.root, "--sys-root", box.root, "--bench-concurrency", "1",
                 env={**os.environ, "PATH": path,
                      "FAKE_ZFS_GATE": str(base / "zfs-gate")}).start()
    yield {"base": base, "box": box, "srv": srv, "admin": srv.admin()}
    assert_stopped_cleanly(srv)
    if not os.environ.get("SPINDLE_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def documented(job):
    """The job as api/openapi.json's BenchJob says it is."""
    assert schema_errors(DOC["components"]["schemas"]["BenchJob"], job) == []
    return job


def resolved(client, job_id):
    """The job once its environment is resolved (it is null until then)."""
    deadline = time.monotonic() + 15 * SLOW
    while True:
        job = expect(client.get(f"{JOBS}/{job_id}"), 200)["job"]
        if job["environment"] is not None:
            return documented(job)
        assert job["state"] == "queued", "a job started before its environment was resolved"
        assert time.monotonic() < deadline, "the environment was never resolved"
        time.sleep(0.05)


def environment_of(env, name):
    """Submits a small job named name; its environment, with resolved_at checked and
    removed, and the job's target."""
    admin = env["admin"]
    job = submit(admin, quick(name))
    assert "environment" in job  # null while it is being resolved
    job = resolved(admin, job["id"])
    e = job["environment"]
    assert abs(parse_time(e.pop("resolved_at")).timestamp() - time.time()) < 60
    assert e["target"] == {"path": str(env["box"].bench / name), "kind": "file"}
    # (the job may have started meanwhile: then the worker's version is there too)
    assert e["system"].pop("worker_version", None) in (None, "spindle-worker "
                                                        + e["system"]["spindle_version"])
    # the listing leaves it out
    listed = expect(admin.get(JOBS), 200)["jobs"]
    assert all("environment" not in j for j in listed)
    return job, e


def test_zfs_dataset_with_recordsize_128k(env):
    box = env["box"]
    box.mount("tank/bench", "zfs", "rw,xattr,noacl")
    box.point_at(None)  # a dataset's files have an anonymous device: no block device
    # the pool's leaves are partitions: their disks are what the collector reports
    sysd, cls = box.root / "sys" / "devices", box.root / "sys" / "class" / "block"
    for disk, part in ((SDA, "sda1"), (SDB, "sdb1"), ("pci0000:00/nvme/nvme0n1", "nvme0n1p1")):
        write(sysd / disk / part / "partition", "1\n")
        link(cls / part, sysd / disk / part)
    job, e = environment_of(env, "env-zfs")
    block_size = os.statvfs(box.bench).f_bsize
    assert e == {
        "target": e["target"],
        "filesystem": {"type": "zfs", "mount_point": str(box.bench), "source": "tank/bench",
                       "options": "rw,xattr,noacl", "block_size": block_size},
        "devices": [],
        "why": e["why"],
        "zfs": {"dataset": "tank/bench", "pool": "tank", "recordsize": 131072,
                "primarycache": "all", "secondarycache": "all", "compression": "lz4",
                "atime": "off", "sync": "standard", "logbias": "latency",
                "vdevs": [{"type": "mirror", "devices": ["sda1", "sdb1"]},
                          {"type": "disk", "devices": ["nvme0n1p1"], "class": "log"}],
                "disks": ["sda", "sdb", "nvme0n1"],
                "arc_max_bytes": 8589934592},  # zfs_arc_max 0: the ARC's c_max
        "system": {**SYSTEM, "spindle_version": e["system"]["spindle_version"]},
    }
    assert e["why"].startswith("devices: no block device behind the target")
    assert e["system"]["spindle_version"]
    # the worker's version joins it when the job starts
    job = documented(wait_state(env["admin"], job["id"], {"done", "failed"}))
    assert job["state"] == "done", job.get("reason")
    assert job["environment"]["system"]["worker_version"] == \
        "spindle-worker " + e["system"]["spindle_version"]
    assert job["environment"]["zfs"]["recordsize"] == 131072
    # the device figures are the pool's disks'
    device = expect(env["admin"].get(f"{JOBS}/{job['id']}/result"), 200)["result"]["device"]
    assert device["disk"] == "tank" and device["pool_disks"] == ["sda", "sdb", "nvme0n1"]


def test_xfs_on_a_partition_of_an_md_array(env):
    box, sysd = env["box"], env["box"].root / "sys" / "devices"
    sda = fake_disk(box.root, SDA, "Samsung SSD 870", 0, "[mq-deadline] kyber bfq none",
                    "write back", 1953525168)
    sdb = fake_disk(box.root, SDB, "ST4000NM0035-1V4", 1, "mq-deadline [bfq] none",
                    "write through", 7814037168)
    md0 = sysd / "virtual" / "block" / "md0"
    write(md0 / "size", "1953259520\n")
    write(md0 / "md" / "level", "raid1\n")
    link(md0 / "slaves" / "sdb", sdb)
    link(md0 / "slaves" / "sda", sda)
    write(md0 / "md0p1" / "partition", "1\n")
    write(md0 / "md0p1" / "size", "1953257472\n")
    box.point_at(md0 / "md0p1")
    box.mount("/dev/md0p1", "xfs", "rw,noatime,attr2,inode64,logbufs=8,noquota")
    job, e = environment_of(env, "env-md")
    assert e == {
        "target": e["target"],
        "filesystem": {"type": "xfs", "mount_point": str(box.bench), "source": "/dev/md0p1",
                       "options": "rw,noatime,attr2,inode64,logbufs=8,noquota",
                       "block_size": os.statvfs(box.bench).f_bsize},
        "devices": [
            {"name": "md0p1", "kind": "partition", "size_bytes": 1953257472 * 512,
             "below": ["md0"]},
            {"name": "md0", "kind": "md", "level": "raid1", "size_bytes": 1953259520 * 512,
             "below": ["sda", "sdb"]},
            {"name": "sda", "kind": "disk", "model": "Samsung SSD 870", "rotational": False,
             "scheduler": "mq-deadline", "nr_requests": 64, "max_sectors_kb": 1280,
             "write_cache": "write back", "size_bytes": 1953525168 * 512, "below": []},
            {"name": "sdb", "kind": "disk", "model": "ST4000NM0035-1V4", "rotational": True,
             "scheduler": "bfq", "nr_requests": 64, "max_sectors_kb": 1280,
             "write_cache": "write through", "size_bytes": 7814037168 * 512, "below": []},
        ],
        "system": {**SYSTEM, "spindle_version": e["system"]["spindle_version"]},
    }
    wait_state(env["admin"], job["id"], {"done", "failed"})


def test_dm_device_over_a_disk(env):
    box, sysd = env["box"], env["box"].root / "sys" / "devices"
    sdc = fake_disk(box.root, "pci0000:00/0000:00:1d.0/0000:3b:00.0/nvme/nvme1/nvme1n1",
                    "INTEL SSDPE2KX040T8", 0, "none", "write through", 7814037168)
    dm0 = sysd / "virtual" / "block" / "dm-0"
    write(dm0 / "size", "209715200\n")
    write(dm0 / "dm" / "name", "vg0-bench\n")
    write(dm0 / "queue" / "rotational", "0\n")
    write(dm0 / "queue" / "scheduler", "none\n")
    link(dm0 / "slaves" / "nvme1n1", sdc)
    box.point_at(dm0)
    box.mount("/dev/mapper/vg0-bench", "ext4", "rw,relatime")
    job, e = environment_of(env, "env-dm")
    assert e["filesystem"] == {"type": "ext4", "mount_point": str(box.bench),
                               "source": "/dev/mapper/vg0-bench", "options": "rw,relatime",
                               "block_size": os.statvfs(box.bench).f_bsize}
    assert e["devices"] == [
        {"name": "dm-0", "kind": "dm", "dm_name": "vg0-bench", "size_bytes": 209715200 * 512,
         "rotational": False, "scheduler": "none", "below": ["nvme1n1"]},
        {"name": "nvme1n1", "kind": "disk", "model": "INTEL SSDPE2KX040T8",
         "rotational": False, "scheduler": "none", "nr_requests": 64, "max_sectors_kb": 1280,
         "write_cache": "write through", "size_bytes": 7814037168 * 512, "below": []},
    ]
    assert "why" not in e and "zfs" not in e
    wait_state(env["admin"], job["id"], {"done", "failed"})


def test_a_resolution_the_stop_interrupted_is_done_again_at_the_next_start(env):
    """A job whose environment was not resolved when the daemon stopped stays queued; the
    next start resolves it before the job runs."""
    box, srv, admin = env["box"], env["srv"], env["admin"]
    box.point_at(None)
    box.mount("tank/slow", "zfs", "rw")  # the fake zfs never answers for tank/slow
    job = submit(admin, quick("env-restart"))
    time.sleep(0.3)  # (it waits on the fake zfs: nothing to poll for)
    assert expect(admin.get(f"{JOBS}/{job['id']}"), 200)["job"]["environment"] is None
    srv.stop()
    assert srv.returncode == 0, srv.log_tail()
    box.mount("tank/bench", "zfs", "rw")
    srv.start()
    env["admin"] = admin = srv.admin()
    job = resolved(admin, job["id"])
    assert job["environment"]["zfs"]["dataset"] == "tank/bench"
    assert job["environment"]["zfs"]["recordsize"] == 131072
    job = wait_state(admin, job["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")


def test_a_resolved_environment_still_with_the_writer_at_the_stop_is_stored(env):
    """SIGTERM while a queued job's resolved environment is still with the database
    writer (held back by a write lock the test takes, for less than its busy timeout).
    The job stays queued for the next start, and the write that names it finishes before
    it is freed (it was freed first: a use-after-free the sanitizer pass caught)."""
    box, srv, admin = env["box"], env["srv"], env["admin"]
    box.point_at(None)
    box.mount("tank/bench", "zfs", "rw")
    running = submit(admin, quick("env-held-run", runtime_s=30, io_size=None))
    wait_running(admin, running["id"])
    box.mount("tank/gated", "zfs", "rw")  # the fake zfs answers once the gate exists
    queued = submit(admin, quick("env-held-queued"))
    held = sqlite3.connect(srv.state_dir / "spindle.db", isolation_level=None, timeout=10)
    held.execute("BEGIN IMMEDIATE")
    try:
        (env["base"] / "zfs-gate").touch()
        deadline = time.monotonic() + 10 * SLOW
        while expect(admin.get(f"{JOBS}/{queued['id']}"), 200)["job"]["environment"] is None:
            assert time.monotonic() < deadline, "the environment was never resolved"
            time.sleep(0.05)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(1)  # the daemon stops, its writer waiting on the lock
    finally:
        held.execute("ROLLBACK")
        held.close()
    srv.returncode = srv.proc.wait(STOP_TIMEOUT)
    assert srv.returncode == 0, srv.log_tail()
    srv.start()
    env["admin"] = admin = srv.admin()
    job = expect(admin.get(f"{JOBS}/{queued['id']}"), 200)["job"]
    assert job["environment"]["zfs"]["dataset"] == "tank/gated", job
    assert expect(admin.get(f"{JOBS}/{running['id']}"), 200)["job"]["state"] == "interrupted"
    job = wait_state(admin, queued["id"], {"done", "failed"})
    assert job["state"] == "done", job.get("reason")


def test_a_dataset_zfs_does_not_know_leaves_its_properties_out_and_says_why(env):
    box = env["box"]
    box.point_at(None)
    box.mount("tank/gone", "zfs", "rw")
    job, e = environment_of(env, "env-zfs-gone")
    z = e["zfs"]
    assert z["why"] == "zfs get: exit status 1: cannot open 'tank/gone': dataset does not exist"
    assert not {"recordsize", "primarycache", "compression"} & set(z)
    assert z["vdevs"][0] == {"type": "mirror", "devices": ["sda1", "sdb1"]}  # the pool's
    assert z["arc_max_bytes"] == 8589934592
    wait_state(env["admin"], job["id"], {"done", "failed"})
