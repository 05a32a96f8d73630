# SPDX-License-Identifier: ISC
"""The real eBPF helper (server/iolat/spindle-iolat) on real I/O: fio reads a loop device
(8 KiB random, O_DIRECT) while spindled collects io.ops[latency], [size] and [offset] from
the helper, which runs per connection as spindle-iolat.socket would start it. spindled
reads a /proc whose diskstats is the loop device's own line, copied live from the kernel's,
so the datasets sum over that device alone.

Held: the histograms count the I/Os fio reports, which the kernel's own diskstats counts
in the same seconds, but for at most one in 200 the kernel never ran the program for; every one is
8 KiB; the offsets cover the device evenly; the latency's median lies in fio's median's bucket or just below it (the block
layer's time is part of the system call's that fio times), and its mean is the kernel's
own (diskstats' read time over its reads). Needs root and a kernel with BTF that lets the
program load; where it does not, the test says why and skips only this file."""
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, Server, expect
from fixtures.iolat import lat_index, lat_low
from fixtures.unixsock import UnixListener

AN = "/api/analytics/v1"
HELPER = os.environ.get("SPINDLE_IOLAT", str(REPO / "server" / "iolat" / "spindle-iolat"))


class HelperSocket(UnixListener):
    """Runs the helper on each connection, the connection as its stdin and stdout."""

    def __init__(self, path):
        self.procs = []
        super().__init__(path, self.run)

    def run(self, conn):
        self.procs.append(subprocess.Popen([HELPER], stdin=conn, stdout=conn))
        conn.close()

    def close(self):
        super().close()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
            p.wait(10)


def ask_helper():
    """The helper's own answer on a pair of sockets: its first two lines."""
    a, b = socket.socketpair()
    p = subprocess.Popen([HELPER], stdin=b, stdout=b, stderr=subprocess.PIPE)
    b.close()
    a.settimeout(20)
    got = b""
    try:
        while got.count(b"\n") < 2:
            chunk = a.recv(4096)
            if not chunk:
                break
            got += chunk
    finally:
        a.close()
        p.wait(10)
    return got.decode(errors="replace").splitlines()


class LiveDiskstats:
    """<root>/proc/diskstats: the kernel's line for one device, rewritten every 0.1 s."""

    def __init__(self, root, device):
        self.path = Path(root) / "proc" / "diskstats"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.device = device
        self.stopped = threading.Event()
        self.copy()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def line(self):
        for line in Path("/proc/diskstats").read_text().splitlines():
            if line.split()[2] == self.device:
                return line
        raise AssertionError(f"{self.device} is not in /proc/diskstats")

    def copy(self):
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(self.line() + "\n")
        os.replace(tmp, self.path)

    def run(self):
        while not self.stopped.wait(0.1):
            self.copy()

    def stop(self):
        self.stopped.set()
        self.thread.join()


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the eBPF helper's real run needs root (CAP_BPF, CAP_PERFMON, losetup)")
    if not os.access(HELPER, os.X_OK):
        pytest.fail(f"no {HELPER}: build it (make)")
    if not shutil.which("fio") or not shutil.which("losetup"):
        pytest.fail("fio and losetup are needed (./quickstart deps)")
    answer = ask_helper()
    if len(answer) < 2 or not answer[1].startswith("ok"):
        pytest.skip(f"BPF does not load here, so the real run is skipped: the helper said {answer}")
    tmp = tmp_path_factory.mktemp("iolat")
    img = tmp / "disk.img"
    # written out (not sparse), so every read reaches the disk under it
    with open(img, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())
    dev = subprocess.run(["losetup", "--direct-io=on", "--find", "--show", str(img)],
                         check=True, capture_output=True, text=True).stdout.strip()
    time.sleep(1)  # what udev reads of a new device is over before anything is counted
    yield dev
    subprocess.run(["losetup", "-d", dev], check=False)


@pytest.fixture(scope="module")
def box(loop, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("iolatbox")
    name = os.path.basename(loop)
    stats = LiveDiskstats(tmp / "root", name)
    helper = HelperSocket(tmp / "iolat.sock")
    srv = Server(tmp / "state", "--proc-root", tmp / "root", "--analytics-loop-devices",
                 "--iolat-socket", helper.path).start()
    b = type("Box", (), {})()
    b.srv, b.admin, b.dev, b.name = srv, srv.admin(), loop, name
    yield b
    srv.stop()
    helper.close()
    stats.stop()


def per_second(admin, name, start, seconds):
    path = f"{AN}/datasets/{name.replace('[', '%5B').replace(']', '%5D')}/data"
    doc = expect(admin.get(f"{path}?start={start}&seconds={seconds}"), 200)
    data = doc["data"] if isinstance(doc["data"], list) else [doc["data"]]
    return [(s["sample"], s["data"]["value"]) for s in data if s]


def window(admin, name, start, seconds):
    path = f"{AN}/datasets/{name.replace('[', '%5B').replace(']', '%5D')}/data"
    doc = expect(admin.get(f"{path}?start={start}&seconds={seconds}"), 200)
    data = doc["data"] if isinstance(doc["data"], list) else [doc["data"]]
    total, keys = 0, {}
    for s in data:
        if not s or s["data"]["value"] is None:
            continue
        total += s["data"]["value"]
        for kv in s["data"]["data"]:
            keys[kv["key"]] = keys.get(kv["key"], 0) + kv["value"]
    return total, keys


def missed_runs():
    """The runs of the helper's program the kernel skipped (bpftool shows recursion_misses
    once there are any)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show", "name", "iolat_complete"],
                         capture_output=True, text=True, check=False).stdout
    progs = json.loads(out or "[]")
    progs = progs if isinstance(progs, list) else [progs]
    return sum(p.get("recursion_misses", 0) for p in progs)


def kernel_reads(device):
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == device:
            return int(f[3]), int(f[6])  # reads completed, ms spent reading
    raise AssertionError(device)


def test_the_histograms_count_what_fio_and_the_kernel_count(box):
    # The helper loads its program when spindled first connects: until it has answered,
    # its drilldowns are refused, saying so (a busy machine takes a few seconds).
    deadline = time.monotonic() + 20
    for drill in ("latency", "size", "offset"):
        while True:
            resp = box.admin.post(f"{AN}/datasets", json={"statistic": "io.ops",
                                                          "drilldown": drill})
            if resp.status_code != 400 or "has not answered yet" not in resp.text \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        expect(resp, 201)
    # streaming: seconds with a value (0 while the device is idle)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc = expect(box.admin.get(f"{AN}/datasets/io.ops%5Blatency%5D/data?start=-3"), 200)
        data = doc["data"] if isinstance(doc["data"], list) else [doc["data"]]
        if any(s and s["data"]["value"] is not None for s in data):
            break
        time.sleep(0.5)
    else:
        pytest.fail("io.ops[latency] got no values from the helper")
    time.sleep(2)
    start = int(time.time()) - 1
    reads0, ms0 = kernel_reads(box.name)
    missed0 = missed_runs()
    run = subprocess.run(["fio", "--name=iolat", f"--filename={box.dev}", "--rw=randread",
                          "--bs=8k", "--direct=1", "--ioengine=psync", "--runtime=3",
                          "--time_based", "--output-format=json"],
                         check=True, capture_output=True, text=True, timeout=60)
    reads1, ms1 = kernel_reads(box.name)
    missed = missed_runs() - missed0
    end = time.time()
    job = json.loads(run.stdout)["jobs"][0]["read"]
    ios = job["total_ios"]
    assert ios > 1000, job
    # The last seconds come through the helper (each half second) and the collector's next
    # tick: on a busy machine a little later. Read until two idle seconds have followed
    # fio's end and the window's total has stopped moving.
    deadline, last = time.monotonic() + 30, None
    while True:
        time.sleep(1)
        seconds = int(time.time()) - start - 1
        total, lat = window(box.admin, "io.ops[latency]", start, seconds)
        if total == ios or (total == last and time.time() - end >= 5) or time.monotonic() > deadline:
            break
        last = total
    # What fio did, less the completions the kernel never ran the program for. Measured on
    # this machine's kernel (6.18) with the program counting its own runs (a counter at its
    # first instruction, equal to the kernel's run_cnt): perf counts block_rq_complete for
    # the loop device exactly as fio and diskstats do, the program is entered 0 to 6 times
    # fewer in 17,000 while two other processes keep both CPUs busy (0 to 3 in 130,000
    # idle), and recursion_misses stays 0; the CI machine lost 22 in 20,000. The helper and
    # spindled add nothing to that (the helper's own sums equal the program's counts). One
    # in 200 is allowed for it, about five times the worst seen; never more than fio did.
    lost = ios - total
    assert 0 <= lost <= missed + ios // 200, (
        total, ios, missed, per_second(box.admin, "io.ops[latency]", start, seconds),
        per_second(box.admin, "io.ops", start, seconds))
    assert reads1 - reads0 == ios
    ops, _ = window(box.admin, "io.ops", start, seconds)
    assert ops == ios
    assert sum(lat.values()) == total

    size_total, size = window(box.admin, "io.ops[size]", start, seconds)
    assert size_total == total and size == {"8192-16384": total}

    off_total, off = window(box.admin, "io.ops[offset]", start, seconds)
    assert off_total == total
    assert sorted(off, key=lambda k: int(k.split("-")[0])) == [f"{i}-{i + 1}" for i in range(64)]
    assert min(off.values()) > ios / 64 / 2, off

    # the latency: the median in fio's median's bucket or the one or two below it (fio's
    # time is the whole system call, the block layer's a part of it) ...
    buckets = sorted((int(k.split("-")[0]), n) for k, n in lat.items())
    acc, median = 0, None
    for low, n in buckets:
        acc += n
        if acc * 2 >= ios:
            median = lat_index(low)
            break
    fio_median = lat_index(int(job["clat_ns"]["percentile"]["50.000000"]))
    assert fio_median - 2 <= median <= fio_median, (median, fio_median, buckets)
    # ... and the mean the kernel's own, within the buckets' width
    mean = sum((lat_low(lat_index(low)) + lat_low(lat_index(low) + 1)) / 2 * n
               for low, n in buckets) / ios
    kernel_mean = (ms1 - ms0) * 1e6 / ios
    assert abs(mean - kernel_mean) <= 0.15 * kernel_mean, (mean, kernel_mean)
