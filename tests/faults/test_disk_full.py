# SPDX-License-Identifier: ISC
"""The state filesystem full: spindled's state dir on a 16 MiB tmpfs of the test's own,
filled to the last byte while it runs. Every change is refused with 507 ERR_NO_SPACE
naming what failed, reads and logins keep working, what waited in memory is stored once
space returns, and a SIGKILL then shows that nothing answered as done was lost and
nothing refused was kept."""
import re
import time

from conftest import (AUDIT, ROLES, SLOW, USERS, FakeProc, Server, assert_stopped_cleanly,
                      expect, expect_fault, fill, integrity, unique, wait_log)
from tests.api.fixtures.hw import FakeCommands, FakeSys

LED = "/api/hardware/v1/chassis/system"
WS = "/api/analytics/v1/worksheets"
DATA = "/api/analytics/v1/datasets/io.ops%5Bop%5D/data"
NVME = "eui.36344630528012340025384500000001"
FULL = "the state filesystem is full"


def seconds(client, start, n):
    """{epoch second: sample} of io.ops[op] for [start, start + n), at 1 s granularity."""
    doc = expect(client.get(f"{DATA}?start={start}&seconds={n}&granularity=second"), 200)
    data = doc["data"]  # one second answers with the sample itself, as the appliance
    data = [data] if isinstance(data, dict) else data or []
    return {s["sample"]: s for s in data}


def audit(client):
    return expect(client.get(AUDIT, params={"limit": 1000}), 200)["logs"]


def test_a_full_disk_refuses_changes_keeps_reads_and_logins_and_loses_nothing(small_fs,
                                                                               tmp_path):
    proc = FakeProc(tmp_path / "root", disks=1, nics=1, cpus=2).start()
    state = small_fs  # the mount itself: the log goes beside it, off the full disk
    srv = Server(state, "--proc-root", tmp_path / "root", "--system-led-backend", "virtual",
                 "--disk-led-backend", "virtual")
    try:
        admin = srv.start().admin()
        expect(admin.put(LED, json={"locate": True}), 202)
        kept_ws = expect(admin.post(WS, json={"name": "before"}), 201)["worksheet"]

        filler = fill(small_fs)
        # every change is refused, naming what failed, and changes nothing
        fault = expect_fault(admin.put(LED, json={"locate": False}), 507, "ERR_NO_SPACE",
                             "locate: chassis/system off")
        assert FULL in fault["details"], fault
        refused = {"user": (USERS, {"name": "during", "password": "Full-disk-pw-1",
                                    "roles": ["monitor"]}),
                   "role": (ROLES, {"name": "during", "authorizations": ["stat:read"]}),
                   "worksheet": (WS, {"name": "during"}),
                   "token": (f"{USERS}/admin/tokens", {"name": "during"})}
        for what, (path, body) in refused.items():
            expect_fault(admin.post(path, json=body), 507, "ERR_NO_SPACE", f"{what}: ")
        # reads work, and show what is stored
        assert expect(admin.get(LED), 200)["chassis"]["locate"] is True
        assert "during" not in [u["name"] for u in expect(admin.get(USERS), 200)["users"]]
        expect(admin.get(f"{WS}/{kept_ws['uuid']}"), 200)
        expect(admin.get("/api/status/v1/dashboard"), 200)
        # a login works: its session lives in memory until it can be stored
        late = srv.admin()
        expect(late.get(f"{USERS}/admin"), 200)
        # the analytics writer is refused a flush, and keeps it
        at = wait_log(srv, f"could not be stored ({FULL}); they are kept in memory")

        filler.unlink()
        stored = wait_log(srv, "kept in memory while the disk refused them, are stored now",
                          at)
        wait_log(srv, "session(s) kept in memory while the disk was full are stored now", at)
        wait_log(srv, "entries kept in memory while the disk was full are stored now", at)
        lo, hi = map(int, re.findall(r"series: the samples from (\d+) to (\d+), kept in memory",
                                     srv.log_text()[:stored])[-1])
        held = seconds(admin, lo, hi - lo)
        assert len(held) >= hi - lo - 2, f"memory lacks seconds of [{lo}, {hi}): {held}"
        expect(admin.put(LED, json={"locate": False}), 202)

        srv.kill()  # SIGKILL: what is on disk is all there is
        assert integrity(state) == "ok"
        admin = srv.start().admin()
        # answered done: there; refused: not there
        assert expect(admin.get(LED), 200)["chassis"]["locate"] is False
        expect(srv.client(late.token).get(f"{USERS}/admin"), 200)  # made on the full disk
        assert "during" not in [u["name"] for u in expect(admin.get(USERS), 200)["users"]]
        assert "during" not in [r["name"] for r in expect(admin.get(ROLES), 200)["roles"]]
        assert [w["name"] for w in expect(admin.get(WS), 200)["worksheets"]] == ["before"]
        assert expect(admin.get(f"{USERS}/admin/tokens"), 200)["tokens"] == []
        # the trail holds what happened while the disk was full: it waited in memory
        logs = audit(admin)
        locates = [(e["result"], e["details"]) for e in logs if e["action"] == "hardware.locate"]
        assert locates == [("success", "locate off -> on (virtual)"),
                           ("failure", f"locate on -> off (virtual) not recorded: {FULL}"),
                           ("success", "locate on -> off (virtual)")], locates
        assert sum(e["action"] == "login" and e["result"] == "success" for e in logs) >= 3
        # the seconds the disk refused are on it now, value for value
        kept = seconds(admin, lo, hi - lo)
        lost = [t for t, s in held.items() if kept.get(t) != s]
        assert not lost, f"seconds shown in memory but lost on disk: {lost}"
        assert_stopped_cleanly(srv)
    finally:
        proc.stop()
        if srv.running:
            srv.kill()


def test_a_locator_change_the_disk_refuses_is_undone(small_fs, tmp_path):
    """ledctl lights the LED, then its record is refused: the LED is turned back off and
    the answer is the fault, so nothing says on that a restart would say off."""
    fs = FakeSys(tmp_path / "root")
    fs.nvme_disk("nvme0n1", "nvme0", model="SAMSUNG MZQL2960HCJR-00A07", serial="S64FNE0R1",
                 wwid=NVME, size_bytes=960197124096)
    cmds = FakeCommands(tmp_path / "bin")
    state = small_fs  # the mount itself: the log goes beside it, off the full disk
    flags = ("--sys-root", fs.root, "--led-command-timeout", "1")
    srv = Server(state, *flags, env=cmds.env()).start()
    try:
        admin = srv.admin()
        disk = f"/api/hardware/v1/chassis/system/disk/{NVME}"
        expect(admin.get(disk), 200)
        filler = fill(small_fs)
        fault = expect_fault(admin.put(disk, json={"locate": True}), 507, "ERR_NO_SPACE",
                             f"locate: chassis/system/disk/{NVME} on")
        assert FULL in fault["details"], fault
        assert cmds.calls() == ["ledctl locate=/dev/nvme0n1", "ledctl locate_off=/dev/nvme0n1"]
        assert expect(admin.get(disk), 200)["disk"]["locate"] is False
        filler.unlink()
        expect(admin.put(disk, json={"locate": True}), 202)
        assert_stopped_cleanly(srv)
        srv = Server(state, *flags, env=cmds.env()).start()
        assert expect(srv.admin().get(disk), 200)["disk"]["locate"] is True
        assert_stopped_cleanly(srv)
    finally:
        if srv.running:
            srv.kill()
