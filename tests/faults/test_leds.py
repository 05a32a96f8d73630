# SPDX-License-Identifier: ISC
"""A hung LED backend: ipmitool (the system chassis) and ledctl (an NVMe disk) that never
answer and ignore SIGTERM, fakes first on the daemon's PATH (tests/api/fixtures/hw.py).
Each change gets 504 after --led-command-timeout; meanwhile every other request is
answered, another LED changes, and the hung commands are killed in the end."""
import os
import threading
import time

from conftest import SLOW, Server, assert_stopped_cleanly, expect, expect_fault
from tests.api.fixtures.hw import FakeCommands, FakeSys

HW = "/api/hardware/v1/chassis"
NVME = "eui.36344630528012340025384500000001"
VDA = "virt-disk-01"


def fakes_running(cmds):
    """Pids of the fake commands (and their sleeps) still alive, zombies aside."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(cmds.dir).encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] != "Z":
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def test_hung_led_commands_time_out_while_everything_else_is_answered(tmp_path):
    fs = FakeSys(tmp_path / "root")
    fs.ipmi()
    fs.nvme_disk("nvme0n1", "nvme0", model="SAMSUNG MZQL2960HCJR-00A07", serial="S64FNE0R1",
                 wwid=NVME, size_bytes=960197124096)
    fs.virtio_disk("vda", "virtio1", serial=VDA, size_bytes=16 << 30)
    cmds = FakeCommands(tmp_path / "bin")
    srv = Server(tmp_path / "state", "--sys-root", fs.root, "--led-command-timeout", "1",
                 env=cmds.env()).start()
    try:
        admin = srv.admin()
        system, nvme = f"{HW}/system", f"{HW}/system/disk/{NVME}"
        assert expect(admin.get(system), 200)["chassis"]["led_backend"] == "ipmi"
        assert expect(admin.get(nvme), 200)["disk"]["led_backend"] == "ledctl"
        cmds.set_mode("ipmitool", "hang")
        cmds.set_mode("ledctl", "hang")
        results = {}

        def change(path):
            t0 = time.monotonic()
            results[path] = (srv.admin().put(path, json={"locate": True}),
                             time.monotonic() - t0)

        threads = [threading.Thread(target=change, args=(p,)) for p in (system, nvme)]
        for t in threads:
            t.start()
        assert len(cmds.wait_calls(2, 5 * SLOW)) == 2, "both commands started"
        # while they hang: reads, the dashboard, and a change of another LED
        answered = 0
        while any(t.is_alive() for t in threads) and answered < 5:
            expect(admin.get(HW), 200)
            expect(admin.get(f"{HW}/system/disk"), 200)
            expect(admin.get("/api/status/v1/dashboard"), 200)
            answered += 1
        virtual = expect(admin.put(f"{HW}/system/disk/{VDA}", json={"locate": True}), 202)
        still_hanging = any(t.is_alive() for t in threads)
        for t in threads:
            t.join(15 * SLOW)
        assert answered == 5 and still_hanging, "the loop served while both commands hung"
        assert virtual["disk"]["locate"] is True
        for path, command in ((system, "ipmitool chassis identify force"),
                              (nvme, "ledctl locate=/dev/nvme0n1")):
            resp, took = results[path]
            fault = expect_fault(resp, 504, "ERR_TIMEOUT", "locate: ")
            assert f"{command} gave no answer within 1 s" in fault["details"], fault
            assert took >= 1
        # nothing changed, and the hung commands are gone
        assert expect(admin.get(system), 200)["chassis"]["locate"] is False
        assert expect(admin.get(nvme), 200)["disk"]["locate"] is False
        deadline = time.monotonic() + 5 * SLOW
        while fakes_running(cmds):
            assert time.monotonic() < deadline, "the hung commands were not killed"
            time.sleep(0.1)
        cmds.set_mode("ipmitool", "ok")
        cmds.set_mode("ledctl", "ok")
        expect(admin.put(nvme, json={"locate": True}), 202)
    finally:
        assert_stopped_cleanly(srv)
