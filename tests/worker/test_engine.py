# SPDX-License-Identifier: ISC
"""spindle-worker: every pattern and engine on small files, exact byte counts, the NDJSON
protocol, layout data, presets, spec errors, signals and confinement. Correctness only:
nothing here asserts a speed."""
import collections
import hashlib
import json
import os
import signal
import subprocess
import time
import zlib

import pytest

from workerlib import WORKER, run_worker

BS = 4096
PATTERNS = ["read", "write", "randread", "randwrite", "randrw"]
PERCENTILES = ["p1", "p5", "p10", "p20", "p30", "p40", "p50", "p60", "p70", "p80", "p90",
               "p95", "p99", "p99.5", "p99.9", "p99.95", "p99.99"]
INTERVAL_KEYS = {"ops", "bytes", "iops", "bytes_per_s", "lat_mean_ns", "lat_max_ns",
                 "lat_p99_ns"}



def hist_bucket_low(idx):
    """server/worker/hist.c hist_bucket_low: 128 sub-buckets a power of two."""
    if idx < 128:
        return idx
    shift = (idx - 128) // 128
    return (128 + (idx - 128) % 128) << shift


def fio_coarse_index(v):
    """server/worker/hist.h hist_fio_index >> HIST_FIO_COARSE: fio's bucket (64 a power of
    two, values below 128 exact), merged four at a time."""
    if v < 128:
        return v >> 2
    err = v.bit_length() - 1 - 6
    return min(((err + 1) << 6) + ((v >> err) & 63), 1855) >> 2

def check_protocol(run):
    """Line order and shapes; the measured intervals add up to the result."""
    assert run.status == 0, run.lines or run.stderr
    kinds = [l["type"] for l in run.lines]
    assert kinds[0] == "start" and kinds[-1] == "result"
    assert set(kinds[1:-1]) <= {"interval"}
    res = run.result
    for d in ("read", "write"):
        r = res[d]
        assert r["bytes"] == r["ops"] * run.start["spec"]["block_size"]
        assert r["hist"]["count"] == r["ops"]
        lat = r["latency_ns"]
        if r["ops"]:
            vals = [lat["min"]] + [lat[p] for p in PERCENTILES] + [lat["max"]]
            assert vals == sorted(vals), lat
            assert lat["min"] > 0
        measured = [iv for iv in run.of("interval") if iv["phase"] == "measure"]
        assert sum(iv[d]["ops"] for iv in measured) == r["ops"]
        for iv in run.of("interval"):
            # a direction with I/O also carries the interval's histogram, which adds up
            assert set(iv[d]) == INTERVAL_KEYS | ({"hist"} if iv[d]["ops"] else set())
            if iv[d]["ops"]:
                assert sum(iv[d]["hist"]["bins"][1::2]) == iv[d]["ops"]
        # the measured intervals' histograms (fio's buckets, merged four at a time) add up
        # to the result's folded the same way, bucket by bucket
        summed = {}
        for iv in measured:
            bins = iv[d].get("hist", {"bins": []})["bins"]
            for k in range(0, len(bins), 2):
                summed[bins[k]] = summed.get(bins[k], 0) + bins[k + 1]
        folded = {}
        rb = r["hist"]["bins"]
        for k in range(0, len(rb), 2):
            c = fio_coarse_index(hist_bucket_low(rb[k]))
            folded[c] = folded.get(c, 0) + rb[k + 1]
        assert summed == folded
    seqs = [iv["seq"] for iv in run.of("interval")]
    assert seqs == list(range(1, len(seqs) + 1))
    assert res["cpu"]["user_s"] >= 0 and res["cpu"]["system_s"] >= 0
    return res


@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "direct"])
@pytest.mark.parametrize("engine", ["psync", "io_uring"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_engine_exact_bytes(bench_dir, pattern, engine, direct):
    target = os.path.join(bench_dir, "t")
    spec = {"pattern": pattern, "target": target, "size": "2M", "block_size": "4k",
            "threads": 3, "io_size": 300 * BS, "engine": engine, "direct": direct}
    if engine == "io_uring":
        spec["iodepth"] = 8
    if pattern == "randrw":
        spec["rwmix_read"] = 60
    run = run_worker(spec)
    res = check_protocol(run)
    assert run.start["target"]["direct"] is direct
    assert run.start["spec"]["engine"] == engine
    total = res["read"]["bytes"] + res["write"]["bytes"]
    assert total == 300 * BS
    if pattern in ("read", "randread"):
        assert res["write"]["ops"] == 0
    elif pattern in ("write", "randwrite"):
        assert res["read"]["ops"] == 0
    else:
        assert res["read"]["ops"] > 0 and res["write"]["ops"] > 0
    assert os.path.getsize(target) == 2 << 20


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_io_uring_submits_in_batches_of_iodepth_batch(bench_dir, batch):
    """Each I/O handed over as it is queued (1, fio's default), in threes (not a divisor of
    the depth) or the whole depth at once: the same exact bytes either way."""
    target = os.path.join(bench_dir, "t")
    spec = {"pattern": "randrw", "target": target, "size": "2M", "block_size": "4k",
            "threads": 2, "io_size": 301 * BS, "engine": "io_uring", "iodepth": 8,
            "iodepth_batch": batch, "direct": True}
    run = run_worker(spec)
    res = check_protocol(run)
    assert run.start["spec"]["iodepth_batch"] == batch
    assert res["read"]["bytes"] + res["write"]["bytes"] == 301 * BS


def test_iodepth_batch_defaults_to_one_for_io_uring_only():
    out = subprocess.run([WORKER, "--check", "--spec", "-"], capture_output=True, text=True,
                         input='{"pattern":"randread","target":"/x","engine":"io_uring",'
                               '"iodepth":16}')
    assert out.returncode == 0 and json.loads(out.stdout)["iodepth_batch"] == 1
    out = subprocess.run([WORKER, "--check", "--spec", "-"], capture_output=True, text=True,
                         input='{"pattern":"randread","target":"/x"}')
    assert out.returncode == 0 and "iodepth_batch" not in json.loads(out.stdout)


@pytest.mark.parametrize("engine", ["psync", "io_uring"])
def test_reader_and_writer_groups(bench_dir, engine):
    spec = {"pattern": "randrw", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "block_size": "8k", "readers": 3, "writers": 2, "io_size": 50 * 8192,
            "engine": engine, "direct": True}
    run = run_worker(spec)
    res = check_protocol(run)
    assert run.start["threads"] == {"readers": 3, "writers": 2, "mixed": 0}
    # the amount is shared out over the five threads: 10 I/Os each
    assert res["read"]["ops"] == 30 and res["write"]["ops"] == 20


@pytest.mark.parametrize("blocks,threads", [(7, 3), (2, 4), (1, 1)])
def test_amount_not_divisible_by_threads(bench_dir, blocks, threads):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "256k",
            "block_size": "4k", "readers": threads, "io_size": blocks * BS}
    res = check_protocol(run_worker(spec))
    assert res["read"]["ops"] == blocks


def test_one_pass_by_default(bench_dir):
    # neither runtime_s nor io_size: one pass over size, shared out in slices
    spec = {"pattern": "read", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "block_size": "64k", "readers": 3}
    res = check_protocol(run_worker(spec))
    assert res["read"]["bytes"] == 1 << 20


@pytest.mark.parametrize("bs,size", [("512", 256 << 10), ("16M", 32 << 20)])
def test_block_size_limits(bench_dir, bs, size):
    spec = {"pattern": "write", "target": os.path.join(bench_dir, "t"), "size": size,
            "block_size": bs, "direct": True}
    res = check_protocol(run_worker(spec, timeout=120))
    assert res["write"]["bytes"] == size


def test_runtime_ramp_and_intervals(bench_dir):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "4M",
            "readers": 2, "runtime_s": 1.2, "ramp_s": "500ms", "direct": True}
    run = run_worker(spec)
    res = check_protocol(run)
    ivs = run.of("interval")
    phases = [iv["phase"] for iv in ivs]
    assert phases[0] == "ramp" and phases[-1] == "measure"
    assert phases == sorted(phases, key=lambda p: p != "ramp"), "ramp intervals come first"
    assert abs(sum(iv["elapsed_s"] for iv in ivs if iv["phase"] == "ramp") - 0.5) < 0.2
    measured = [iv for iv in ivs if iv["phase"] == "measure"]
    # a full one-second interval, then the last partial one
    assert len(measured) == 2
    assert abs(measured[0]["elapsed_s"] - 1.0) < 0.25
    assert 0.9 < res["elapsed_s"] < 3
    assert res["ramp_s"] == 0.5
    assert res["read"]["ops"] > 0
    assert ivs[-1]["progress_pct"] == 100.0
    # per-interval figures are deltas, not running totals
    assert measured[1]["read"]["ops"] < res["read"]["ops"]
    for iv in measured:
        r = iv["read"]
        if r["ops"]:
            assert r["lat_max_ns"] >= r["lat_p99_ns"] > 0
            assert r["lat_max_ns"] >= r["lat_mean_ns"]


def test_runtime_and_amount_whichever_first(bench_dir):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "block_size": "4k", "runtime_s": 30, "io_size": 100 * BS}
    res = check_protocol(run_worker(spec))
    assert res["read"]["ops"] == 100 and res["elapsed_s"] < 10


def blocks_of(path, bs=4096):
    with open(path, "rb") as f:
        data = f.read()
    return data, [data[i:i + bs] for i in range(0, len(data), bs)]


def assert_unflattering(path):
    """Data a compressing or deduplicating store cannot shrink."""
    data, blocks = blocks_of(path)
    counts = collections.Counter(hashlib.sha1(b).digest() for b in blocks)
    assert max(counts.values()) == 1, "a 4k block repeats"
    _, sectors = blocks_of(path, 512)
    assert len(set(sectors)) == len(sectors), "a 512-byte sector repeats"
    assert len(zlib.compress(data, 6)) > 0.99 * len(data), "the data compresses"
    assert data.count(b"\0" * 64) == 0


def test_layout_is_incompressible_and_unique(bench_dir):
    target = os.path.join(bench_dir, "t")
    run = run_worker({"pattern": "randread", "target": target, "size": "4M", "io_size": "8k"})
    check_protocol(run)
    assert run.start["target"]["laid_out_bytes"] == 4 << 20
    assert os.path.getsize(target) == 4 << 20
    assert_unflattering(target)


@pytest.mark.parametrize("engine", ["psync", "io_uring"])
def test_written_data_is_incompressible_and_unique(bench_dir, engine):
    # sequential 8k writes over the whole file: adjacent blocks come from one thread's
    # buffers, the case where a reused buffer would compress and deduplicate
    target = os.path.join(bench_dir, "t")
    spec = {"pattern": "write", "target": target, "size": "4M", "block_size": "8k",
            "engine": engine, "iodepth": 4 if engine == "io_uring" else 1, "direct": True}
    check_protocol(run_worker(spec))
    assert_unflattering(target)
    # and again over the same file: the second pass writes different data
    before, _ = blocks_of(target)
    check_protocol(run_worker(spec))
    after, blocks = blocks_of(target)
    assert before != after
    same = sum(1 for i in range(0, len(after), 512) if after[i:i + 512] == before[i:i + 512])
    assert same == 0


def test_layout_extends_a_small_file_and_keeps_a_big_one(bench_dir):
    target = os.path.join(bench_dir, "t")
    with open(target, "wb") as f:
        f.write(os.urandom(1 << 20))
    run = run_worker({"pattern": "randread", "target": target, "size": "3M", "io_size": "8k"})
    check_protocol(run)
    assert run.start["target"]["laid_out_bytes"] == 2 << 20
    assert os.path.getsize(target) == 3 << 20
    run = run_worker({"pattern": "randread", "target": target, "size": "1M", "io_size": "8k"})
    check_protocol(run)
    assert run.start["target"]["laid_out_bytes"] == 0
    assert os.path.getsize(target) == 3 << 20
    # no size: the file's own
    run = run_worker({"pattern": "read", "target": target, "block_size": "64k"})
    res = check_protocol(run)
    assert run.start["target"]["size"] == 3 << 20 and res["read"]["bytes"] == 3 << 20


@pytest.mark.parametrize("engine", ["psync", "io_uring"])
def test_fsync_every(bench_dir, engine):
    spec = {"pattern": "randwrite", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "block_size": "4k", "writers": 2, "io_size": 64 * BS, "fsync_every": 8,
            "engine": engine}
    res = check_protocol(run_worker(spec))
    assert res["write"]["ops"] == 64
    assert res["sync"]["ops"] == 8  # 32 writes per thread, every 8th
    assert res["sync"]["hist"]["count"] == 8


def test_iozone_passes(bench_dir):
    target = os.path.join(bench_dir, "t")
    spec = {"pattern": "iozone", "target": target, "file_size": "2M", "record_size": "64k",
            "direct": True}
    run = run_worker(spec)
    res = check_protocol(run)
    names = ["write", "rewrite", "read", "reread", "random_read", "random_write"]
    assert [p["pass"] for p in res["passes"]] == names
    for p in res["passes"]:
        assert p["bytes"] == 2 << 20 and p["bytes_per_s"] > 0
        assert p["hist"]["count"] == p["ops"] == 32
    for p in res["passes"]:
        if p["pass"] in ("write", "rewrite", "random_write"):
            assert p["sync"]["ops"] == 1  # the flush inside the timing, as iozone -e
    table = res["iozone"]
    assert table["unit"] == "bytes_per_s" and table["file_size"] == 2 << 20
    assert table["record_size"] == 65536
    for n in names:
        assert table[n] > 0
    assert res["read"]["bytes"] == 3 * (2 << 20) and res["write"]["bytes"] == 3 * (2 << 20)
    assert {iv.get("pass") for iv in run.of("interval")} == set(names)
    assert os.path.getsize(target) == 2 << 20


def test_iozone_subset_of_passes(bench_dir):
    spec = {"pattern": "iozone", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "record_size": "4k", "threads": 2, "passes": ["read", "random_read"]}
    res = check_protocol(run_worker(spec))
    assert [p["pass"] for p in res["passes"]] == ["read", "random_read"]
    assert set(res["iozone"]) >= {"read", "random_read"}
    assert "write" not in res["iozone"]


def test_slob_preset(bench_dir):
    spec = {"pattern": "slob", "target": os.path.join(bench_dir, "t"), "size": "4M",
            "sessions": 4, "update_pct": 50, "run_time": 0.3}
    run = run_worker(spec)
    res = check_protocol(run)
    assert run.start["threads"] == {"readers": 2, "writers": 2, "mixed": 0}
    assert run.start["spec"]["block_size"] == 8192
    assert res["read"]["ops"] > 0 and res["write"]["ops"] > 0


def test_result_bins_can_be_merged_later(bench_dir):
    spec = {"pattern": "randrw", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "block_size": "4k", "threads": 2, "io_size": 200 * BS}
    res = check_protocol(run_worker(spec))
    for d in ("read", "write"):
        h = res[d]["hist"]
        assert h["scheme"].startswith("loglin")
        assert sum(h["bins"][1::2]) == h["count"]
        assert h["min"] == res[d]["latency_ns"]["min"]


@pytest.mark.parametrize("spec,field", [
    ("not json", "spec"),
    ({"pattern": "randread"}, "target"),
    ({"pattern": "bogus", "target": "/nonexistent/x"}, "pattern"),
    ({"pattern": "randread", "target": "/nonexistent/x", "block_size": "3000"}, "block_size"),
    ({"pattern": "randread", "target": "/nonexistent/x", "iodepth": 4}, "iodepth"),
    ({"pattern": "randread", "target": "/nonexistent/x", "engine": "io_uring", "iodepth": 4,
      "iodepth_batch": 5}, "iodepth_batch"),
    ({"pattern": "randread", "target": "/nonexistent/x", "iodepth_batch": 2}, "iodepth_batch"),
    ({"pattern": "randread", "target": "/nonexistent/x", "engine": "io_uring",
      "iodepth_batch": 0}, "iodepth_batch"),
    ({"pattern": "randread", "target": "/nonexistent/x", "frobnicate": 1}, "frobnicate"),
    ({"pattern": "randread", "target": "/nonexistent/x", "runtime_s": "soon"}, "runtime_s"),
])
def test_spec_errors(spec, field):
    run = run_worker(spec)
    assert run.status == 2
    assert [l["type"] for l in run.lines] == ["error"]
    err = run.error
    assert err["code"] == "spec" and err["field"] == field
    assert err["message"].startswith(field + ": ")
    assert err["errors"][0]["field"] == field


def test_missing_size_and_target_dir(bench_dir):
    run = run_worker({"pattern": "randread", "target": os.path.join(bench_dir, "nothing")})
    assert run.status == 1 and run.error["field"] == "size"
    run = run_worker({"pattern": "randread", "target": os.path.join(bench_dir, "no", "dir"),
                      "size": "1M"})
    assert run.status == 1 and run.error["field"] == "target"
    assert [l["type"] for l in run.lines] == ["error"]


def test_target_must_be_file_or_device(bench_dir):
    run = run_worker({"pattern": "randread", "target": bench_dir, "size": "1M"})
    assert run.status == 1 and run.error["field"] == "target"


def odirect_refusing_dir():
    """A writable directory whose filesystem refuses O_DIRECT, if this machine has one."""
    for d in ("/dev/shm", "/run", "/run/user/%d" % os.getuid(), "/tmp"):
        path = os.path.join(d, ".spindle-odirect-probe-%d" % os.getpid())
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError:
            continue
        os.close(fd)
        try:
            fd = os.open(path, os.O_RDWR | os.O_DIRECT)
            os.close(fd)
        except OSError:
            return d
        finally:
            os.unlink(path)
    return None


def test_direct_refused_by_filesystem():
    d = odirect_refusing_dir()
    if not d:
        pytest.skip("no filesystem here refuses O_DIRECT (tmpfs supports it since Linux 6.6)")
    target = os.path.join(d, "spindle-odirect-%d" % os.getpid())
    try:
        run = run_worker({"pattern": "randread", "target": target, "size": "1M",
                          "direct": True})
        assert run.status == 1
        assert run.error["field"] == "direct"
        assert "O_DIRECT" in run.error["message"]
    finally:
        if os.path.exists(target):
            os.unlink(target)


def test_sigterm_stops_with_the_part_done(bench_dir):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "runtime_s": 60}
    p = subprocess.Popen([WORKER, "--spec", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps(spec))
    p.stdin.close()
    first = json.loads(p.stdout.readline())
    assert first["type"] == "start"
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    rest = [json.loads(l) for l in p.stdout]
    assert p.wait(timeout=10) == 3
    err = rest[-1]
    assert err["type"] == "error" and err["code"] == "interrupted"
    assert "SIGTERM" in err["message"]
    assert err["partial"]["read"]["ops"] > 0


def test_stops_when_stdout_goes_away(bench_dir):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "runtime_s": 60}
    p = subprocess.Popen([WORKER, "--spec", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps(spec))
    p.stdin.close()
    assert json.loads(p.stdout.readline())["type"] == "start"
    p.stdout.close()
    # the next interval line fails to write: the worker stops instead of running on
    assert p.wait(timeout=10) == 1


def test_confine(bench_dir, opener):
    inside = os.path.join(bench_dir, "in")
    outside = os.path.join(bench_dir, "out")
    os.mkdir(inside)
    os.mkdir(outside)
    with open(os.path.join(outside, "secret"), "wb") as f:
        f.write(b"x" * 65536)
    os.symlink(os.path.join(outside, "secret"), os.path.join(inside, "link"))
    os.symlink(outside, os.path.join(inside, "dirlink"))
    os.symlink("/proc/self/root" + outside, os.path.join(inside, "magic"))
    base = {"pattern": "randread", "size": "64k", "io_size": "4k", "block_size": "4k"}
    for target, why in [
        (os.path.join(outside, "secret"), "is not inside"),
        (os.path.join(inside, "..", "out", "secret"), "resolves outside"),
        (os.path.join(inside, "link"), "resolves outside"),
        (os.path.join(inside, "dirlink", "secret"), "resolves outside"),
        (os.path.join(inside, "magic", "secret"), "resolves outside"),
        (os.path.join(inside, "dirlink", "new"), "resolves outside"),
    ]:
        run = run_worker(dict(base, target=target), "--confine", inside, wrapper=opener)
        assert run.status == 1, target
        assert run.error["field"] == "target" and why in run.error["message"], run.error
        assert not run.of("start")
    assert os.listdir(outside) == ["secret"]
    run = run_worker(dict(base, target=os.path.join(inside, "ok")), "--confine", inside,
                     wrapper=opener)
    check_protocol(run)
    assert os.path.getsize(os.path.join(outside, "secret")) == 65536


@pytest.mark.parametrize("engine", ["psync", "io_uring"])
def test_confined_runs_beneath_subdirectories(bench_dir, opener, engine):
    """A target some directories below the confine dir is laid out and run, buffered and
    O_DIRECT, by both ways of opening it (the walk opens each component in turn)."""
    sub = os.path.join(bench_dir, "a", "b")
    os.makedirs(sub)
    for direct in (False, True):
        spec = {"pattern": "randrw", "size": "256k", "io_size": "64k", "block_size": "4k",
                "engine": engine, "iodepth": 4 if engine == "io_uring" else 1,
                "direct": direct,
                "target": os.path.join(bench_dir, "a", ".", "b", f"t{int(direct)}")}
        run = run_worker(spec, "--confine", bench_dir + "/", wrapper=opener)
        check_protocol(run)
        assert run.result["read"]["ops"] > 0 and run.result["write"]["ops"] > 0
    # the confine dir itself is no target
    run = run_worker(dict(spec, target=bench_dir), "--confine", bench_dir, wrapper=opener)
    assert run.status == 1 and run.error["field"] == "target", run.lines


def test_the_walk_refuses_links_that_stay_inside(bench_dir):
    """Without openat2, no symbolic link is followed at all, not even one to a file beside
    it (RESOLVE_BENEATH follows those): the refusal names the link."""
    from workerlib import NO_OPENAT2
    with open(os.path.join(bench_dir, "real"), "wb") as f:
        f.write(b"r" * 65536)
    os.symlink("real", os.path.join(bench_dir, "alias"))
    spec = {"pattern": "randread", "size": "64k", "io_size": "4k", "block_size": "4k",
            "target": os.path.join(bench_dir, "alias")}
    check_protocol(run_worker(spec, "--confine", bench_dir))
    run = run_worker(spec, "--confine", bench_dir, wrapper=(NO_OPENAT2,))
    assert run.status == 1 and "through a symbolic link (alias is one)" in run.error["message"]


def test_confine_refuses_hard_links_and_other_users_files(bench_dir, opener):
    """Under --confine, a file with a second name (which may be outside DIR) or of another
    user is refused on the descriptor opened, before any I/O; without it, as before."""
    inside = os.path.join(bench_dir, "in")
    os.mkdir(inside)
    secret = os.path.join(bench_dir, "secret")
    with open(secret, "wb") as f:
        f.write(b"s" * 65536)
    os.link(secret, os.path.join(inside, "hl"))
    foreign = os.path.join(inside, "foreign")
    with open(foreign, "wb") as f:
        f.write(b"f" * 65536)
    os.chown(foreign, 65534, 65534)
    base = {"pattern": "randwrite", "size": "64k", "io_size": "16k", "block_size": "4k"}
    for name, why in [("hl", "has 2 hard links"), ("foreign", "belongs to uid 65534")]:
        run = run_worker(dict(base, target=os.path.join(inside, name)), "--confine", inside,
                         wrapper=opener)
        assert run.status == 1, run.lines
        assert run.error["field"] == "target" and why in run.error["message"], run.error
        assert not run.of("start")
    for path, fill in [(secret, b"s"), (foreign, b"f")]:
        with open(path, "rb") as f:
            assert f.read() == fill * 65536
    # the standalone CLI (no --confine) is the user's own business
    check_protocol(run_worker(dict(base, target=os.path.join(inside, "hl"))))


def test_a_failed_layout_is_undone(small_fs, opener):
    """A layout that meets a full disk leaves it as it was: a file the run created is
    removed, one that existed gets its size (and content) back."""
    spec = {"pattern": "randread", "size": "4M", "io_size": "4k", "block_size": "4k"}
    new = os.path.join(small_fs, "new")
    run = run_worker(dict(spec, target=new), "--confine", small_fs, wrapper=opener)
    assert run.status == 1 and "No space left" in run.error["message"], run.lines
    assert os.listdir(small_fs) == []
    old = os.path.join(small_fs, "old")
    with open(old, "wb") as f:
        f.write(b"o" * 65536)
    run = run_worker(dict(spec, target=old), "--confine", small_fs, wrapper=opener)
    assert run.status == 1 and "No space left" in run.error["message"], run.lines
    with open(old, "rb") as f:
        assert f.read() == b"o" * 65536
    st = os.statvfs(small_fs)
    assert st.f_bfree * st.f_frsize >= (1 << 20) - 128 * 1024  # the space is back


def test_help_check_and_version():
    out = subprocess.run([WORKER, "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for word in ("rwmix_read", "readers", "writers", "runtime_s", "ramp_s", "io_size",
                 "fsync_every", "iodepth", "direct", "slob", "iozone", "update_pct", "8k",
                 "30s", "Exit status"):
        assert word in out.stdout, word
    out = subprocess.run([WORKER, "--check", "--spec", "-"], capture_output=True, text=True,
                         input='{"pattern":"slob","sessions":4,"run_time":"2m"}')
    assert out.returncode == 0
    assert json.loads(out.stdout)["runtime_s"] == 120
    assert subprocess.run([WORKER], capture_output=True).returncode == 2
    out = subprocess.run([WORKER, "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "spindle-worker" in out.stdout


def test_nice(bench_dir):
    spec = {"pattern": "randread", "target": os.path.join(bench_dir, "t"), "size": "1M",
            "runtime_s": 1.5}
    p = subprocess.Popen([WORKER, "--spec", "-", "--nice", "7"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdin.write(json.dumps(spec))
    p.stdin.close()
    assert json.loads(p.stdout.readline())["type"] == "start"
    assert json.loads(p.stdout.readline())["type"] == "interval"  # the threads run now
    # every thread runs at the nice value (field 19 of /proc/<pid>/task/<tid>/stat)
    tasks = os.listdir(f"/proc/{p.pid}/task")
    nices = set()
    for t in tasks:
        with open(f"/proc/{p.pid}/task/{t}/stat") as f:
            nices.add(int(f.read().rsplit(")", 1)[1].split()[16]))
    assert nices == {7} and len(tasks) >= 2
    p.stdout.read()
    assert p.wait(timeout=10) == 0
    bad = subprocess.run([WORKER, "--spec", "-", "--nice", "99"], input="{}",
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--nice" in bad.stderr
