#!/usr/bin/python3
# SPDX-License-Identifier: ISC
"""A fake storage box for the browser tests: a real spindled over HTTPS and plain HTTP,
reading fake /proc and /sys trees.

    /usr/bin/python3 tests/e2e/box.py [--webroot DIR] [-- extra spindled flags...]

It prints one JSON line on stdout once spindled answers on both listeners:
    {"https": "https://127.0.0.1:PORT", "http": "http://127.0.0.1:PORT",
     "admin_password": "...", "root": tmp dir, "sys_root": ..., "proc_root": ...,
     "state_dir": ..., "bench_dir": ..., "log": spindled's log file,
     "mounts": [filesystem dirs], "enclosure": id, "system_led": path of its brightness,
     "disks": {disk id: device name}, "locate_files": {disk id: path of its locate file},
     "iolat": {"socket": the fake eBPF helper's socket,
               "latency_keys": [io.ops[latency] keys it sends every second]}}
and runs until its stdin closes; then it stops spindled (SIGTERM; the exit code must be 0)
and removes its temp dir. Exit status: spindled's (0 on a clean stop).

The box (with --shelves N, N more SES shelves of 24 disks each: "shelf_disks" maps their
ids to their names): 8 SAS disks (sda..sdh) in slots 0-7 of a 12-slot SES enclosure, sdh faulted, so
the disk locators are the sysfs "locate" files (backend ses); a system identify LED
(backend leds); DMI data; a live /proc (tests/api/conftest.py FakeProc) whose rates swing
by +-50% on a 20 s sine, so the dashboard's figures move; a fake proc/self/mounts listing
four real temp dirs (ext4 and xfs) as the data filesystems; a bench dir, a real temp
dir, for small jobs; and a scripted eBPF helper (--iolat-socket), so io.ops offers its
latency, size and offset heat maps: its seconds (iolat_second) change over time, so the
heat maps have structure. The helpers are the API suite's (conftest.Server, FakeProc,
fixtures/hw.py, fixtures/iolat_helper.py), imported, not copied; SPINDLED names the
binary, as there.
"""
import argparse
import json
import math
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "api"))

from conftest import FakeProc, Server  # noqa: E402
from fixtures.hw import FakeCommands, FakeSys  # noqa: E402
from fixtures.iolat import LAT_BUCKETS, lat_low  # noqa: E402
from fixtures.iolat_helper import FakeHelper  # noqa: E402
SMARTBIN = HERE.parent / "api" / "fixtures" / "smartbin"

ENCLOSURE = "0x500304801f0c7a3f"
ENC_HCTL = "6:0:13:0"
IDENTIFY = "chassis::identify"
DISKS = [f"sd{chr(ord('a') + i)}" for i in range(8)]
FAULTED = "sdh"
TB = 1000 ** 4
PERIOD = 20.0  # seconds, of the rates' swing
SWING = 0.5


class SwingingProc(FakeProc):
    """FakeProc whose rates follow rate x (1 + SWING sin(2 pi t / PERIOD)): each counter
    is the integral, so it only grows, and the collector's per-second figures move."""

    def __init__(self, root, disks, mounts):
        super().__init__(root, disks=len(disks), mounts=mounts)
        self.disks = list(disks)

    def value(self, name, t=0):
        w = 2 * math.pi / PERIOD
        return int(self.RATES[name] * (10 + t + SWING * (1 - math.cos(w * t)) / w))


def build_sys(root):
    """DMI data, the enclosure with the 8 disks seated, and the identify LED."""
    fs = FakeSys(root)
    fs.dmi(sys_vendor="Supermicro", product_name="SSG-6029P-E1CR12L",
           product_serial="S123456X9", chassis_serial="C0E2E0001",
           board_vendor="Supermicro", board_name="X11DSC+")
    enc = fs.enclosure(ENC_HCTL, id=ENCLOSURE, vendor="LSI", model="SAS3x28", slots=12)
    disks, locate = {}, {}
    for i, name in enumerate(DISKS):
        wwid = f"naa.5000c500a1b2c3{i:02x}"
        devdir = fs.scsi_disk(name, f"6:0:{i + 1}:0", transport="sas", vendor="SEAGATE",
                              model="ST4000NM0023", serial=f"Z1Z0A1{i:02d}", wwid=wwid,
                              size_bytes=4 * TB, rev="A2D2", rpm=7200)
        slot = f"Slot {i:02d}"
        fs.seat(enc, slot, devdir, status="critical" if name == FAULTED else "OK")
        if name == FAULTED:
            fs.write(fs.slot_file(enc, slot, "fault"), 1)
        disks[wwid] = name
        locate[wwid] = str(fs.path(fs.slot_file(enc, slot, "locate")).resolve())
    led = fs.led(IDENTIFY, max_brightness=255)
    return fs, disks, locate, str(fs.path(f"{led}/brightness").resolve())


def sd_name(i):
    """The kernel's name of the i-th SCSI disk: sda .. sdz, sdaa .. sdzz, ..."""
    name = ""
    i += 1
    while i:
        i -= 1
        name = chr(ord("a") + i % 26) + name
        i //= 26
    return "sd" + name


def add_shelves(fs, n):
    """n more SES shelves of 24 SAS disks each (a rack of them: the console folds them),
    on hosts of their own; returns {disk id: device name}. Their disks are named on from
    the enclosure's (sdi, sdj, ... sdaa, ...) and their serials say where they sit:
    SH<shelf>S<slot>."""
    disks = {}
    for e in range(n):
        host = 20 + e
        enc = fs.enclosure(f"{host}:0:100:0", id=f"0x5003048{e + 1:09x}", vendor="ORACLE",
                           model="DE3-24C", slots=24)
        for slot in range(24):
            i = 24 * e + slot
            name = sd_name(len(DISKS) + i)
            wwid = f"naa.5000cca{e:05x}{slot:04x}"
            d = fs.scsi_disk(name, f"{host}:0:{slot}:0", transport="sas", vendor="HGST",
                             model="H7280A520SUN8.0T", serial=f"SH{e + 1:02d}S{slot:02d}",
                             wwid=wwid, size_bytes=8 * TB, rpm=7200)
            fs.seat(enc, f"Slot {slot:02d}", d)
            disks[wwid] = name
    return disks


def lat_key(i):
    """io.ops[latency]'s key of latency bucket i (iolat.h), as spindled writes it."""
    return f"{lat_low(i)}+" if i >= LAT_BUCKETS - 1 else f"{lat_low(i)}-{lat_low(i + 1)}"


# Latency buckets (iolat.h) of the fake helper's seconds: sda's reads around 130-260 us,
# their counts swinging on a 30 s sine; sdd's reads steady in one bucket (32.8-41 us);
# sdb's writes around 2 ms, drifting a few buckets up and down on a 60 s sine; and every
# seventh second one slow read of sdc (84-101 ms). Each line's sizes and offsets count its
# operations once more: sda reads 4 KiB sequentially, sdb writes 32 KiB here and there.
FAST = (29, 30, 31, 32)
STEADY = 21
SLOW = 45
OUTLIER = 66


def iolat_second(t):
    """The helper's "D" lines for the second at unix time t (whole seconds): the same t
    gives the same lines."""
    swing = 1 + 0.5 * math.sin(2 * math.pi * t / 30)
    fast = [max(1, round(n * swing)) for n in (30, 90, 60, 15)]
    c = SLOW + round(3 * math.sin(2 * math.pi * t / 60))
    slow = {c - 1: 4, c: 12, c + 1: 4}
    lines = [
        f"D sda r L {' '.join(f'{i}:{n}' for i, n in zip(FAST, fast))} S 4:{sum(fast)} "
        f"O {t % 64}:{sum(fast)}",
        f"D sdd r L {STEADY}:10 S 3:10 O 0:10",
        f"D sdb w L {' '.join(f'{i}:{n}' for i, n in slow.items())} S 7:20 "
        f"O {t * 37 % 64}:20",
    ]
    if t % 7 == 0:
        lines.append(f"D sdc r L {OUTLIER}:1 S 9:1 O 32:1")
    return lines


class Stop(Exception):
    pass


def on_signal(signum, frame):
    raise Stop()


def main():
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--webroot", default=str(HERE.parents[1] / "webroot"),
                    help="the tree spindled serves at / (default: the repository's webroot)")
    ap.add_argument("--shelves", type=int, default=0,
                    help="more SES shelves of 24 disks each (default 0)")
    ap.add_argument("--smart", default="",
                    help="disk health on, the fake smartctl answering each disk as "
                         "DEV=FIXTURE,... (tests/api/fixtures/smart/*.json) says; a disk "
                         "not named is one smartctl cannot open (default: health off)")
    ap.add_argument("extra", nargs="*", help="more spindled flags (after --)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="spindle-e2e-"))
    proc = None
    srv = None
    helper = None
    try:
        fs, disks, locate, led = build_sys(tmp / "root")
        shelves = add_shelves(fs, args.shelves)
        cmds = FakeCommands(tmp / "bin")  # nothing may reach a real ledctl or ipmitool
        env = cmds.env()
        smart_flags = []
        if args.smart:
            smart = tmp / "smart"
            smart.mkdir()
            (smart / "calls.log").write_text("")
            for pair in args.smart.split(","):
                dev, fixture = pair.split("=")
                (smart / dev).write_text(fixture + "\n")
            env["PATH"] = f"{SMARTBIN}:{env['PATH']}"
            env["SPINDLE_FAKE_SMART"] = str(smart)
            smart_flags = ["--smart-interval", "60", "--smart-timeout", "5",
                           "--smart-socket", str(tmp / "no-smart-helper.sock")]
        data = [(tmp / "data" / name, fstype) for name, fstype in
                (("pool0", "xfs"), ("pool1", "xfs"), ("backup", "ext4"), ("scratch", "ext4"))]
        for d, _ in data:
            d.mkdir(parents=True)
        bench = data[0][0] / "bench"
        bench.mkdir()
        # pool0 is /dev/sda1 in the fake mounts: the real device of its directory leads to
        # the fake sda's first partition in the fake /sys too, so a run's disk is sda, whose
        # figures the fake /proc moves (the job's findings on its disk have inputs)
        sda1 = fs.partition("sda", "sda1")
        dev = os.stat(bench).st_dev
        fs.link(f"dev/block/{os.major(dev)}:{os.minor(dev)}", sda1)
        proc_root = tmp / "proc-root"
        # proc/self/mounts: a pseudo filesystem (holds no data) and each data dir as a
        # filesystem of its own (statvfs on them reads the real disk)
        mounts = [("proc", "/proc", "proc")] + [
            (f"/dev/sd{chr(ord('a') + i)}1", str(d), t) for i, (d, t) in enumerate(data)]
        proc = SwingingProc(proc_root, DISKS, mounts).start()
        # listening before spindled starts: it asks the helper once, at its start
        helper = FakeHelper(tmp / "iolat.sock", status=f"ok {len(DISKS)}", second=iolat_second)
        srv = Server(tmp / "state",
                     "--sys-root", fs.root, "--proc-root", proc_root,
                     "--iolat-socket", helper.path,
                     "--system-led", IDENTIFY, "--led-command-timeout", "1",
                     "--bench-dirs", bench, "--webroot", Path(args.webroot).resolve(),
                     *smart_flags, *args.extra, env=env)
        try:
            srv.start()
        except BaseException as e:  # conftest fails through pytest: say why, plainly
            print(f"box: spindled did not start: {e}", file=sys.stderr)
            return 1
        print(json.dumps({
            "https": srv.https, "http": srv.http, "admin_password": srv.admin_password,
            "root": str(tmp), "sys_root": str(fs.root), "proc_root": str(proc_root),
            "state_dir": str(srv.state_dir), "bench_dir": str(bench),
            "log": str(srv.log_path), "mounts": [str(d) for d, _ in data],
            "enclosure": ENCLOSURE, "system_led": led, "disks": disks,
            "locate_files": locate, "shelf_disks": shelves,
            "iolat": {"socket": helper.path,
                      "latency_keys": [lat_key(i) for i in (STEADY, *FAST)]}}), flush=True)
        try:
            sys.stdin.read()  # until the harness closes it (or dies)
        except Stop:
            pass
        code, _ = srv.stop()
        if code != 0:
            print(f"box: spindled exit code {code}; its log:\n{srv.log_tail()}",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        if srv and srv.running:
            srv.kill()
        if proc:
            proc.stop()
        if helper:
            helper.close()
        if os.environ.get("SPINDLE_E2E_KEEP"):
            print(f"box: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
