# SPDX-License-Identifier: ISC
"""Hardware inventory and locator LEDs, against fake sysfs trees and fake ledctl and
ipmitool first on the daemon's PATH (tests/api/fixtures/hw.py builds both)."""
import os
import threading
import time

import pytest

from conftest import (AUDIT, SLOW, Server, assert_stopped_cleanly, check_common_headers, expect,
                      expect_fault, make_role, make_user, run_daemon, unique)
from fixtures.hw import FakeCommands, FakeSys

HW = "/api/hardware/v1/chassis"
ENC = "0x500304801f0c7a3f"
SDB = "naa.5000c500a1b2c301"  # SAS, Slot 00, linked both ways
SDC = "naa.5000c500b1b2c302"  # SATA behind the SAS HBA, Slot 01, linked from the disk only
SDD = "naa.5000cca0a1b2c303"  # SAS, Slot 02, linked from the slot only
SDE = "naa.5000c500d1b2c304"  # Slot 03, the enclosure says it is faulted
SDA = "t10.ATA-Samsung-SSD-860-EVO-500GB-S3Z9NB0K123456"  # boot disk, no enclosure
NVME = "eui.36344630528012340025384500000001"
VDA = "virt-disk-01"
IDENTIFY = "chassis::identify"
PASSWORD = "Hw-test-password-1"
TB = 1000 ** 4
# A disk's health keys (test_smart.py) while disk health is off, as the suite runs it
HEALTH_OFF = {"health": "unknown", "health_details": "disk health is not read (--smart-interval 0)",
              "temperature_c": None, "power_on_hours": None, "smart": None}


def build_box(root):
    """A storage server: DMI data, a 12-slot SES enclosure holding four disks (linked both
    ways, each way alone, one faulted), a SATA boot disk, an NVMe and a virtio disk, loop,
    ram and zram devices, a partition, and a system identify LED."""
    fs = FakeSys(root)
    fs.dmi(sys_vendor="Supermicro", product_name="SSG-6029P-E1CR12L",
           product_serial="S123456X9", chassis_serial="To Be Filled By O.E.M.",
           board_vendor="Supermicro", board_name="X11DSC+")
    enc = fs.enclosure("6:0:13:0", id=ENC, vendor="LSI", model="SAS3x28", slots=12)
    d = fs.scsi_disk("sdb", "6:0:1:0", transport="sas", vendor="SEAGATE", model="ST4000NM0023",
                     serial="Z1Z0A1B1", wwid=SDB, size_bytes=4 * TB, rev="A2D2", rpm=7200)
    fs.seat(enc, "Slot 00", d)
    d = fs.scsi_disk("sdc", "6:0:2:0", transport="sas", vendor="ATA", model="ST8000NM0055",
                     serial="ZA1B2C3D", wwid=SDC, size_bytes=8 * TB)
    fs.seat(enc, "Slot 01", d, backward=False)
    d = fs.scsi_disk("sdd", "6:0:3:0", transport="sas", vendor="HGST", model="HUH721212AL5200",
                     serial="8HJ1ABCD", wwid=SDD, size_bytes=12 * TB)
    fs.seat(enc, "Slot 02", d, forward=False)
    d = fs.scsi_disk("sde", "6:0:4:0", transport="sas", vendor="SEAGATE", model="ST4000NM0023",
                     serial="Z1Z0A1E5", wwid=SDE, size_bytes=4 * TB)
    fs.seat(enc, "Slot 03", d, status="critical")
    fs.write(fs.slot_file(enc, "Slot 03", "fault"), 1)
    fs.scsi_disk("sda", "0:0:0:0", transport="sata", vendor="ATA", model="Samsung SSD 860",
                 serial="S3Z9NB0K123456",
                 wwid="t10.ATA     Samsung SSD 860 EVO 500GB               S3Z9NB0K123456",
                 size_bytes=500107862016, rotational=False, rpm=1)
    fs.partition("sda", "sda1")
    fs.nvme_disk("nvme0n1", "nvme0", model="SAMSUNG MZQL2960HCJR-00A07",
                 serial="S64FNE0R123456", wwid=NVME, size_bytes=960197124096)
    fs.virtio_disk("vda", "virtio1", serial=VDA, size_bytes=16 << 30)
    for name in ("loop0", "ram0", "zram0"):
        fs.virtual_block(name)
    fs.led(IDENTIFY, max_brightness=255)
    return fs


class Box:
    """A running spindled on a fake box, with its fake commands and logged-in clients."""

    def __init__(self, tmp, *flags, build=build_box, start=True):
        self.fs = build(tmp / "root")
        self.cmds = FakeCommands(tmp / "bin")
        self.state = tmp / "state"
        self.flags = ["--sys-root", self.fs.root, "--led-command-timeout", "1", *flags]
        self.srv = None
        if start:
            self.start()

    def start(self):
        self.srv = Server(self.state, *self.flags, env=self.cmds.env()).start()
        self.admin = self.srv.admin()
        return self

    def stop(self):
        assert_stopped_cleanly(self.srv)

    def login(self, user, password=PASSWORD):
        return self.srv.login_client(user, password)


def slot(fs, name, attr="locate"):
    return fs.slot_file("6:0:13:0", name, attr)


def audit_entries(admin, target=None):
    logs = expect(admin.get(AUDIT, params={"limit": 1000}), 200)["logs"]
    return [e for e in logs if e["action"] == "hardware.locate"
            and (target is None or e["target"] == target)]


def put_locate(client, path, on):
    return client.put(path, json={"locate": on})


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    b = Box(tmp_path_factory.mktemp("hw"), "--system-led", IDENTIFY)
    make_user(b.admin, ["monitor"], name="hwmon", password=PASSWORD)
    b.mon = b.login("hwmon")
    yield b
    b.stop()


def disks_of(client, chassis):
    return expect(client.get(f"{HW}/{chassis}/disk"), 200)["disks"]


# ---- inventory ------------------------------------------------------------------------

def test_chassis_list(box):
    resp = box.mon.get(HW)
    body = expect(resp, 200)
    check_common_headers(resp, HW)
    # The one key real appliances answer and their clients read.
    assert set(body) == {"chassis"}
    system, enc = body["chassis"]
    uuids = (system.pop("uuid"), enc.pop("uuid"))
    assert all(len(u) == 36 and u[14] == "5" for u in uuids) and uuids[0] != uuids[1]
    assert system == {
        "id": "system", "name": os.uname().nodename, "display_name": "SSG-6029P-E1CR12L",
        "type": "system", "kind": "system",
        "vendor": "Supermicro", "manufacturer": "Supermicro", "model": "SSG-6029P-E1CR12L",
        "serial": "S123456X9", "revision": "", "part": "", "faulted": False, "rpm": None,
        "path": 1, "hostname": os.uname().nodename,
        "fru": "hc://:chassis-mfg=Supermicro:chassis-name=SSG-6029P-E1CR12L"
               ":chassis-part=unknown:chassis-serial=S123456X9",
        "locate": False, "led_backend": "leds", "disk_count": 3, "href": f"{HW}/system"}
    assert enc == {
        "id": ENC, "name": ENC, "display_name": "LSI SAS3x28", "type": "storage",
        "kind": "enclosure",
        "vendor": "LSI", "manufacturer": "LSI", "model": "SAS3x28", "serial": "",
        "revision": "", "part": "", "faulted": True, "rpm": None, "path": 1,
        "fru": "hc://:chassis-mfg=LSI:chassis-name=SAS3x28:chassis-part=unknown"
               ":chassis-serial=unknown",
        "locate": False, "led_backend": "virtual",
        "disk_count": 4, "slot_count": 12, "href": f"{HW}/{ENC}"}
    for c, u in zip(body["chassis"], uuids):
        got = expect(box.mon.get(c["href"]), 200)["chassis"]
        disks = got.pop("disk")
        assert got == dict(c, uuid=u)
        # It embeds its components, each with its href, as the appliance does.
        assert disks == disks_of(box.mon, c["id"])


def test_system_disks_are_whole_disks_outside_enclosures(box):
    disks = {d["device"]: d for d in disks_of(box.mon, "system")}
    assert set(disks) == {"sda", "nvme0n1", "vda"}  # no loop, ram, zram, partition
    assert len(disks["sda"].pop("uuid")) == 36
    assert disks["sda"].pop("fru") == (
        "hc://:chassis-serial=S123456X9:fru-serial=S3Z9NB0K123456:fru-part=Samsung SSD 860/bay=1")
    assert disks["sda"] == {
        "id": SDA, "chassis": "system", "device": "sda", "label": "HDD 1",
        "location": "sda", "vendor": None, "manufacturer": "Samsung",
        "model": "Samsung SSD 860", "serial": "S3Z9NB0K123456", "revision": "",
        "part": "", "wwid": "t10.ATA     Samsung SSD 860 EVO 500GB               S3Z9NB0K123456",
        "size": 500107862016, "rotational": False, "rpm": None, "interface": "sata",
        "present": True, "faulted": False, "fault_status": "unknown", "pathcount": 1,
        "enclosure": None, "slot": None, "locate": False,
        "led_backend": "ledctl", "href": f"{HW}/system/disk/{SDA}", **HEALTH_OFF}
    assert [disks[n]["label"] for n in ("nvme0n1", "sda", "vda")] == ["HDD 0", "HDD 1", "HDD 2"]
    nvme = disks["nvme0n1"]
    assert (nvme["id"], nvme["interface"], nvme["model"], nvme["serial"], nvme["wwid"],
            nvme["size"], nvme["rotational"], nvme["led_backend"]) == (
        NVME, "nvme", "SAMSUNG MZQL2960HCJR-00A07", "S64FNE0R123456", NVME, 960197124096,
        False, "ledctl")
    vda = disks["vda"]
    assert (vda["id"], vda["interface"], vda["serial"], vda["wwid"], vda["model"],
            vda["size"], vda["rotational"], vda["led_backend"]) == (
        VDA, "virtio", VDA, None, "", 16 << 30, True, "virtual")


def test_enclosure_lists_every_slot(box):
    slots = disks_of(box.mon, ENC)
    assert [s["slot"] for s in slots] == [f"Slot {i:02d}" for i in range(12)]
    seated = {s["device"]: s for s in slots[:4]}
    assert [s["device"] for s in slots[:4]] == ["sdb", "sdc", "sdd", "sde"]
    assert [s["id"] for s in slots[:4]] == [SDB, SDC, SDD, SDE]
    sdb = seated["sdb"]
    assert len(sdb.pop("uuid")) == 36
    assert sdb.pop("fru") == f"hc://:chassis-serial={ENC}:fru-serial=Z1Z0A1B1:fru-part=ST4000NM0023/bay=0"
    assert sdb == {
        "id": SDB, "chassis": ENC, "device": "sdb", "label": "HDD 0", "location": "Slot 00",
        "vendor": "SEAGATE", "manufacturer": "SEAGATE", "model": "ST4000NM0023",
        "serial": "Z1Z0A1B1", "revision": "A2D2", "part": "", "wwid": SDB, "size": 4 * TB,
        "rotational": True, "rpm": 7200, "interface": "sas", "present": True,
        "faulted": False, "fault_status": "ok", "pathcount": 1,
        "enclosure": ENC, "slot": "Slot 00", "locate": False, "led_backend": "ses",
        "href": f"{HW}/{ENC}/disk/{SDB}", **HEALTH_OFF}
    assert seated["sdc"]["interface"] == "sata" and seated["sdc"]["vendor"] is None
    assert seated["sde"]["faulted"] is True and seated["sde"]["fault_status"] == "faulted"
    assert all(s["present"] and s["led_backend"] == "ses" for s in slots[:4])
    for i, s in enumerate(slots[4:], start=4):
        assert s["id"] == f"{ENC}-Slot-{i:02d}"
        assert (s["present"], s["device"], s["size"], s["faulted"], s["locate"],
                s["led_backend"], s["enclosure"]) == (False, None, None, False, False, "ses",
                                                      ENC)


def test_one_disk_and_not_found(box):
    listed = {d["id"]: d for d in disks_of(box.mon, ENC)}
    assert expect(box.mon.get(f"{HW}/{ENC}/disk/{SDD}"), 200) == {"disk": listed[SDD]}
    expect_fault(box.mon.get(f"{HW}/nosuch"), 404, "ERR_NOT_FOUND", "chassis: ")
    expect_fault(box.mon.get(f"{HW}/nosuch/disk"), 404, "ERR_NOT_FOUND", "chassis: ")
    expect_fault(box.mon.get(f"{HW}/system/disk/nosuch"), 404, "ERR_NOT_FOUND", "disk: ")
    # a disk is found under its own chassis only
    expect_fault(box.mon.get(f"{HW}/system/disk/{SDB}"), 404, "ERR_NOT_FOUND", "disk: ")
    expect_fault(box.mon.put(f"{HW}/{ENC}/disk/nosuch", json={"locate": True}), 404,
                 "ERR_NOT_FOUND", "disk: ")
    expect_fault(box.mon.get(HW, params={"verbose": "1"}), 400, "ERR_UNKNOWN_ARG", "verbose")


def test_ids_are_stable_across_restarts_and_probe_order(tmp_path):
    """Ids come from wwid, serial or slot: a rebuilt tree with other kernel names gives the
    same ids."""
    def renamed(root):
        fs = FakeSys(root)
        enc = fs.enclosure("7:0:9:0", id=ENC, vendor="LSI", model="SAS3x28", slots=12)
        d = fs.scsi_disk("sdq", "7:0:5:0", transport="sas", vendor="SEAGATE",
                         model="ST4000NM0023", serial="Z1Z0A1B1", wwid=SDB, size_bytes=4 * TB)
        fs.seat(enc, "Slot 00", d)
        fs.virtio_disk("vdc", "virtio7", serial=VDA, size_bytes=16 << 30)
        return fs
    b = Box(tmp_path, build=renamed)
    try:
        assert [d["id"] for d in disks_of(b.admin, "system")] == [VDA]
        assert [d["id"] for d in disks_of(b.admin, ENC)][:2] == [SDB, f"{ENC}-Slot-01"]
        assert disks_of(b.admin, ENC)[0]["device"] == "sdq"
    finally:
        b.stop()


def kernel_uevent():
    """Has the kernel send a uevent, as it does when a disk comes or goes: a "change" of a
    real disk of this machine (what `udevadm trigger` does; it changes nothing). spindled
    rescans the tree it reads on any such event, the fake one here too. Needs root."""
    for dev in sorted(os.listdir("/sys/block")):
        if dev.startswith(("loop", "ram", "zram", "dm-", "md", "nbd", "sr", "fd", "zd")):
            continue
        try:
            with open(f"/sys/block/{dev}/uevent", "w") as f:
                f.write("change\n")
            return dev
        except OSError:
            continue
    pytest.skip("no disk here whose uevent file may be written (root can)")


def scans(client, why):
    resp = client.get("/metrics")
    assert resp.status_code == 200, resp.text
    text = resp.text
    line = f'spindle_hardware_scans_total{{why="{why}"}} '
    return int(next(x for x in text.splitlines() if x.startswith(line)).split()[1])


def test_hotplugged_disk_appears_and_goes(box):
    """A disk comes: reads alone do not go looking for it (a rescan of a shelf of disks
    per read, or per second of reads, is what the kernel's uevents spare); the kernel's
    uevent makes spindled rescan, and it is listed; it goes, and the next uevent says so."""
    box.fs.virtio_disk("vdb", "virtio2", serial="hotplug-01", size_bytes=1 << 30)
    before = scans(box.mon, "request") + scans(box.mon, "uevent")
    for _ in range(3):
        assert "hotplug-01" not in [d["id"] for d in disks_of(box.mon, "system")]
        time.sleep(0.6)  # past the second after which a read once rescanned
    assert scans(box.mon, "request") + scans(box.mon, "uevent") == before
    uevents = scans(box.mon, "uevent")
    kernel_uevent()
    deadline = time.monotonic() + 5 * SLOW
    ids = []
    while "hotplug-01" not in ids and time.monotonic() < deadline:
        ids = [d["id"] for d in disks_of(box.mon, "system")]
        time.sleep(0.1)
    assert "hotplug-01" in ids
    assert scans(box.mon, "uevent") + scans(box.mon, "request") > uevents
    box.fs.path("block/vdb").unlink()
    kernel_uevent()
    while "hotplug-01" in ids and time.monotonic() < deadline + 5 * SLOW:
        ids = [d["id"] for d in disks_of(box.mon, "system")]
        time.sleep(0.1)
    assert "hotplug-01" not in ids


# ---- locator LEDs on sysfs backends --------------------------------------------------

def test_ses_locate_is_written_and_read_back(box):
    fs, mon = box.fs, box.mon
    body = expect(put_locate(mon, f"{HW}/{ENC}/disk/{SDB}", True), 202)
    assert body["disk"]["locate"] is True and body["disk"]["led_backend"] == "ses"
    assert body["disk"]["href"] == f"{HW}/{ENC}/disk/{SDB}"
    assert fs.read(slot(fs, "Slot 00")) == "1"
    assert expect(mon.get(f"{HW}/{ENC}/disk/{SDB}"), 200)["disk"]["locate"] is True
    # GET reports what the enclosure says, not what was last written
    fs.write(slot(fs, "Slot 00"), 0)
    assert expect(mon.get(f"{HW}/{ENC}/disk/{SDB}"), 200)["disk"]["locate"] is False
    fs.write(slot(fs, "Slot 00"), 1)
    assert {d["id"]: d["locate"] for d in disks_of(mon, ENC)}[SDB] is True
    fs.write(slot(fs, "Slot 03", "fault"), 0)
    assert expect(mon.get(f"{HW}/{ENC}/disk/{SDE}"), 200)["disk"]["faulted"] is False
    fs.write(slot(fs, "Slot 03", "fault"), 1)
    body = expect(put_locate(mon, f"{HW}/{ENC}/disk/{SDB}", False), 202)
    assert body["disk"]["locate"] is False and fs.read(slot(fs, "Slot 00")) == "0"
    # an empty slot can be lit too, to show where a new disk goes
    empty = f"{ENC}-Slot-07"
    assert expect(put_locate(mon, f"{HW}/{ENC}/disk/{empty}", True), 202)["disk"]["locate"]
    assert fs.read(slot(fs, "Slot 07")) == "1"
    expect(put_locate(mon, f"{HW}/{ENC}/disk/{empty}", False), 202)
    assert fs.read(slot(fs, "Slot 07")) == "0"


def test_ses_write_failure_is_a_backend_fault(box):
    fs = box.fs
    locate = fs.path(slot(fs, "Slot 02"))
    locate.unlink()
    locate.mkdir()  # even root cannot write a directory
    try:
        # what cannot be read is not guessed
        assert expect(box.mon.get(f"{HW}/{ENC}/disk/{SDD}"), 200)["disk"]["locate"] is None
        fault = expect_fault(put_locate(box.mon, f"{HW}/{ENC}/disk/{SDD}", True), 502,
                             "ERR_BACKEND", "locate: cannot write")
        assert "Is a directory" in fault["details"]
    finally:
        locate.rmdir()
        fs.write(slot(fs, "Slot 02"), 0)
    entry = audit_entries(box.admin, f"chassis/{ENC}/disk/{SDD}")[-1]
    assert entry["result"] == "failure" and "cannot write" in entry["details"]


def test_system_identify_led(box):
    fs, mon = box.fs, box.mon
    led = f"class/leds/{IDENTIFY}/brightness"
    body = expect(put_locate(mon, f"{HW}/system", True), 202)
    assert body["chassis"]["locate"] is True and body["chassis"]["led_backend"] == "leds"
    assert fs.read(led) == "255"  # max_brightness
    fs.write(led, 0)
    assert expect(mon.get(f"{HW}/system"), 200)["chassis"]["locate"] is False
    fs.write(led, 255)
    assert expect(mon.get(HW), 200)["chassis"][0]["locate"] is True
    expect(put_locate(mon, f"{HW}/system", False), 202)
    assert fs.read(led) == "0"


def test_virtual_backends_keep_state(box):
    for path, key in ((f"{HW}/{ENC}", "chassis"), (f"{HW}/system/disk/{VDA}", "disk")):
        body = expect(put_locate(box.mon, path, True), 202)[key]
        assert (body["locate"], body["led_backend"]) == (True, "virtual")
        assert expect(box.mon.get(path), 200)[key]["locate"] is True
        expect(put_locate(box.mon, path, False), 202)
        assert expect(box.mon.get(path), 200)[key]["locate"] is False


@pytest.mark.parametrize("body, status, message, field", [
    ({"locate": True, "name": "x"}, 400, "ERR_UNKNOWN_ARG", "name"),
    ({"name": "x"}, 400, "ERR_UNKNOWN_ARG", "name"),
    ({"locate": "yes"}, 400, "ERR_INVALID_ARG", "locate"),
    ({"locate": 1}, 400, "ERR_INVALID_ARG", "locate"),
    ({"locate": None}, 400, "ERR_INVALID_ARG", "locate"),
    ({}, 400, "ERR_MISSING_ARG", "locate"),
    ([True], 400, "ERR_INVALID_ARG", "body"),
    ("not json", 400, "ERR_INVALID_ARG", "body"),
    ("text", 415, "ERR_UNSUPPORTED_MEDIA", "Content-Type"),
])
def test_a_monitor_can_change_nothing_else(box, body, status, message, field):
    before = len(audit_entries(box.admin))
    calls = len(box.cmds.calls())
    for path in (f"{HW}/{ENC}/disk/{SDB}", f"{HW}/system/disk/{SDA}", f"{HW}/system"):
        if body == "not json":
            resp = box.mon.put(path, data="{locate: true",
                               headers={"Content-Type": "application/json"})
        elif body == "text":
            resp = box.mon.put(path, data="locate=true", headers={"Content-Type": "text/plain"})
        else:
            resp = box.mon.put(path, json=body)
        fault = expect_fault(resp, status, message)
        assert fault["details"].startswith(field), fault
    assert box.fs.read(slot(box.fs, "Slot 00")) == "0"
    assert box.fs.read(f"class/leds/{IDENTIFY}/brightness") == "0"
    assert len(box.cmds.calls()) == calls, "no command ran"
    assert len(audit_entries(box.admin)) == before, "nothing happened, nothing audited"


# ---- command backends ---------------------------------------------------------------

def test_ledctl_commands(box):
    box.cmds.clear()
    body = expect(put_locate(box.mon, f"{HW}/system/disk/{SDA}", True), 202)["disk"]
    assert (body["locate"], body["led_backend"]) == (True, "ledctl")
    assert box.cmds.calls() == ["ledctl locate=/dev/sda"]
    assert expect(box.mon.get(f"{HW}/system/disk/{SDA}"), 200)["disk"]["locate"] is True
    expect(put_locate(box.mon, f"{HW}/system/disk/{SDA}", False), 202)
    expect(put_locate(box.mon, f"{HW}/system/disk/{NVME}", True), 202)
    expect(put_locate(box.mon, f"{HW}/system/disk/{NVME}", False), 202)
    assert box.cmds.calls() == ["ledctl locate=/dev/sda", "ledctl locate_off=/dev/sda",
                                "ledctl locate=/dev/nvme0n1", "ledctl locate_off=/dev/nvme0n1"]


def test_ledctl_failure_leaves_the_state(box):
    path = f"{HW}/system/disk/{SDA}"
    box.cmds.set_mode("ledctl", "fail")
    try:
        fault = expect_fault(put_locate(box.mon, path, True), 502, "ERR_BACKEND", "locate: ")
    finally:
        box.cmds.set_mode("ledctl", "ok")
    assert "ledctl locate=/dev/sda failed with exit status 3" in fault["details"]
    assert "simulated failure for locate=/dev/sda" in fault["details"]
    assert expect(box.mon.get(path), 200)["disk"]["locate"] is False
    entry = audit_entries(box.admin, f"chassis/system/disk/{SDA}")[-1]
    assert entry["result"] == "failure" and "exit status 3" in entry["details"]


def fake_running(cmds):
    """Pids of fake commands still running (their command line names the fake's path)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(cmds.dir).encode() in f.read():
                    pids.append(int(pid))
        except (OSError, ValueError):
            pass
    return pids


def test_hung_ledctl_times_out_while_the_loop_serves(box):
    path = f"{HW}/system/disk/{NVME}"
    box.cmds.clear()
    box.cmds.set_mode("ledctl", "hang")
    result = {}

    def change():
        t0 = time.monotonic()
        result["resp"] = put_locate(box.login("hwmon"), path, True)
        result["s"] = time.monotonic() - t0

    worker = threading.Thread(target=change)
    try:
        worker.start()
        assert box.cmds.wait_calls(1, 5 * SLOW) == ["ledctl locate=/dev/nvme0n1"]
        # meanwhile the daemon answers, and refuses a second change of the same LED
        answered = 0
        while worker.is_alive() and answered < 5:
            expect(box.admin.get(f"{HW}/system/disk"), 200)
            answered += 1
        busy = put_locate(box.admin, path, False)
        still_hanging = worker.is_alive()
        worker.join(15 * SLOW)
    finally:
        box.cmds.set_mode("ledctl", "ok")
    assert answered == 5 and still_hanging, "the loop served while ledctl hung"
    expect_fault(busy, 503, "ERR_BUSY", "locate: ")
    fault = expect_fault(result["resp"], 504, "ERR_TIMEOUT", "locate: ")
    assert "ledctl locate=/dev/nvme0n1 gave no answer within 1 s" in fault["details"]
    assert result["s"] >= 1  # the timeout, then SIGTERM (ignored), then SIGKILL
    assert expect(box.mon.get(path), 200)["disk"]["locate"] is False
    assert not fake_running(box.cmds), "the hung ledctl and its sleep were killed"


# ---- the trail and the dashboard ------------------------------------------------------

def test_changes_are_audited(box):
    target = f"chassis/{ENC}/disk/{SDD}"
    before = len(audit_entries(box.admin, target))
    expect(put_locate(box.mon, f"{HW}/{ENC}/disk/{SDD}", True), 202)
    expect(put_locate(box.mon, f"{HW}/{ENC}/disk/{SDD}", False), 202)
    on, off = audit_entries(box.admin, target)[before:]
    assert {k: on[k] for k in ("user", "address", "action", "target", "details", "result")} == {
        "user": "hwmon", "address": "127.0.0.1", "action": "hardware.locate", "target": target,
        "details": "locate off -> on (ses); disk sdd · Slot 02 · serial 8HJ1ABCD",
        "result": "success"}
    # the disk named as it was then, so the trail still says which one after a swap
    assert off["details"] == "locate on -> off (ses); disk sdd · Slot 02 · serial 8HJ1ABCD"


def test_dashboard_counts_lit_leds(box):
    dash = box.mon.get("/api/status/v1/dashboard")
    if dash.status_code == 404:
        pytest.skip("no dashboard in this build")

    def lit():
        return expect(box.mon.get("/api/status/v1/dashboard"), 200)["dashboard"]["leds_lit"]

    def wait_for(n, seconds=5):
        deadline = time.monotonic() + seconds * SLOW
        while lit() != n and time.monotonic() < deadline:
            time.sleep(0.1)
        return lit()

    def lit_in_inventory():
        """What the hardware says now (GETs read the LEDs back)."""
        n = 0
        for chassis in expect(box.mon.get(HW), 200)["chassis"]:
            n += chassis["locate"] is True
            n += sum(d["locate"] is True for d in disks_of(box.mon, chassis["id"]))
        return n

    # An LED an earlier test lit behind spindled's back counts once a read of the
    # hardware has seen it (the count itself asks the enclosures nothing): start from
    # what the hardware says, read just now.
    base = lit_in_inventory()
    assert wait_for(base) == base
    changes = [f"{HW}/{ENC}/disk/{SDC}", f"{HW}/system/disk/{VDA}", f"{HW}/system"]
    for path in changes:
        expect(put_locate(box.mon, path, True), 202)
    assert wait_for(base + 3) == base + 3
    for path in changes:
        expect(put_locate(box.mon, path, False), 202)
    assert wait_for(base) == base


def test_the_lit_count_asks_the_enclosure_nothing(tmp_path):
    """A slot's LED lit behind spindled's back (its button) is not read for the dashboard's
    count, however long the dashboard is polled (the count once re-read every LED each
    10 s: SCSI traffic to every enclosure for a number on a phone); a read of the disk
    sees it, and the count follows."""
    b = Box(tmp_path, "--disk-led-backend", "ses", "--hardware-watch", "0")
    try:
        mon = b.admin

        def lit():
            return expect(mon.get("/api/status/v1/dashboard"), 200)["dashboard"]["leds_lit"]
        assert wait_for_value(lit, 0)
        b.fs.write(slot(b.fs, "Slot 00"), 1)
        deadline = time.monotonic() + 11
        while time.monotonic() < deadline:
            assert lit() == 0, "the count read the slot"
            time.sleep(0.5)
        assert expect(mon.get(f"{HW}/{ENC}/disk/{SDB}"), 200)["disk"]["locate"] is True
        assert wait_for_value(lit, 1)
    finally:
        b.stop()


def test_the_watch_reads_the_slots_with_nobody_looking(tmp_path):
    """--hardware-watch 1: a disk the enclosure marks faulted, or calls critical, behind
    spindled's back is a problem without any read of the hardware, and cleared as well.
    The watch reads each slot's status and fault and nothing else: no rescan of the
    inventory (the uevents' business), no locate (an LED lit by its button is seen by a
    read of the disk)."""
    b = Box(tmp_path, "--disk-led-backend", "ses", "--hardware-watch", "1")
    try:
        mon = b.admin

        def lit():
            return expect(mon.get("/api/status/v1/dashboard"), 200)["dashboard"]["leds_lit"]

        def faulted():
            return sum(p["code"] == "SP-DISK-FAULT" for p in expect(
                mon.get("/api/problem/v1/problems"), 200)["problems"])

        def rescans():
            return sum(scans(mon, why) for why in ("start", "uevent", "request"))
        assert wait_for_value(lit, 0) and wait_for_value(faulted, 1)  # Slot 03, at start
        passes, before = scans(mon, "watch"), rescans()
        b.fs.write(slot(b.fs, "Slot 00"), 1)
        b.fs.write(slot(b.fs, "Slot 00", "fault"), 1)
        b.fs.write(slot(b.fs, "Slot 01", "status"), "Critical")
        assert wait_for_value(faulted, 3), faulted()
        assert lit() == 0, "the watch read a locate"
        b.fs.write(slot(b.fs, "Slot 00", "fault"), 0)
        b.fs.write(slot(b.fs, "Slot 01", "status"), "OK")
        assert wait_for_value(faulted, 1), faulted()
        assert scans(mon, "watch") > passes
        assert rescans() == before, "the watch rescanned the inventory"
        expect(mon.get(f"{HW}/{ENC}/disk/{SDB}"), 200)
        assert wait_for_value(lit, 1), lit()
    finally:
        b.stop()


def wait_for_value(fn, want, seconds=5):
    deadline = time.monotonic() + seconds * SLOW
    while fn() != want:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_authorization_needs_hardware_read_and_locate(box):
    reader = make_role(box.admin, authorizations=["hardware:read"])
    stats = make_role(box.admin, authorizations=["stat:read"])
    r_user = make_user(box.admin, [reader], password=PASSWORD)
    s_user = make_user(box.admin, [stats], password=PASSWORD)
    r, s = box.login(r_user), box.login(s_user)
    expect(r.get(f"{HW}/{ENC}/disk"), 200)
    expect_fault(put_locate(r, f"{HW}/{ENC}/disk/{SDB}", True), 403, "ERR_DENIED",
                 "authorization")
    expect_fault(put_locate(r, f"{HW}/system", True), 403, "ERR_DENIED")
    for path in (HW, f"{HW}/system", f"{HW}/system/disk", f"{HW}/system/disk/{VDA}"):
        expect_fault(s.get(path), 403, "ERR_DENIED")
        expect_fault(box.srv.client().get(path), 401, "ERR_UNAUTHORIZED")
    assert box.fs.read(slot(box.fs, "Slot 00")) == "0"


# ---- other machines -------------------------------------------------------------------

def ipmi_box(root):
    """A board with a BMC, no configured LED, one virtio disk; its product serial cannot
    be read (as for a non-root reader), the chassis serial can."""
    fs = FakeSys(root)
    fs.dmi(sys_vendor="Dell Inc.", product_name="PowerEdge R740xd", chassis_serial="7XYZ123")
    fs.path("devices/virtual/dmi/id/product_serial").mkdir()
    fs.ipmi()
    fs.virtio_disk("vda", "virtio1", serial=VDA, size_bytes=16 << 30)
    return fs


def test_ipmi_identify(tmp_path):
    b = Box(tmp_path, build=ipmi_box)
    try:
        system = expect(b.admin.get(f"{HW}/system"), 200)["chassis"]
        assert (system["vendor"], system["model"], system["serial"], system["led_backend"]) == (
            "Dell Inc.", "PowerEdge R740xd", "7XYZ123", "ipmi")
        assert expect(put_locate(b.admin, f"{HW}/system", True), 202)["chassis"]["locate"]
        assert expect(b.admin.get(HW), 200)["chassis"][0]["locate"] is True
        expect(put_locate(b.admin, f"{HW}/system", False), 202)
        assert b.cmds.calls() == ["ipmitool chassis identify force", "ipmitool chassis identify 0"]
        b.cmds.set_mode("ipmitool", "fail")
        fault = expect_fault(put_locate(b.admin, f"{HW}/system", True), 502, "ERR_BACKEND",
                             "locate: ipmitool chassis identify force failed")
        assert "simulated failure" in fault["details"]
        assert expect(b.admin.get(f"{HW}/system"), 200)["chassis"]["locate"] is False
    finally:
        b.stop()


def test_backend_overrides(tmp_path, spawn):
    b = Box(tmp_path, "--system-led-backend", "virtual", "--disk-led-backend", "virtual",
            build=ipmi_box, start=False)
    srv = spawn(*b.flags, state_dir=b.state, env=b.cmds.env())
    admin = srv.admin()
    assert expect(admin.get(f"{HW}/system"), 200)["chassis"]["led_backend"] == "virtual"
    expect(put_locate(admin, f"{HW}/system", True), 202)
    assert b.cmds.calls() == [], "a forced virtual backend runs nothing"
    # forced ipmi where /sys shows no BMC: ipmitool is still asked
    (tmp_path / "empty").mkdir()
    srv2 = spawn("--sys-root", tmp_path / "empty", "--system-led-backend", "ipmi",
                 env=b.cmds.env())
    admin2 = srv2.admin()
    system = expect(admin2.get(f"{HW}/system"), 200)["chassis"]
    # Spindle's vendor says unknown with null; the guide's serial is a string, "" then
    assert (system["led_backend"], system["vendor"], system["serial"]) == ("ipmi", None, "")
    assert disks_of(admin2, "system") == []
    expect(put_locate(admin2, f"{HW}/system", True), 202)
    assert b.cmds.calls()[-1] == "ipmitool chassis identify force"
    code, _, err = run_daemon("--disk-led-backend", "sgpio")
    assert code == 2 and "--disk-led-backend" in err[-1]


def small_box(root):
    """An enclosure of 4 slots with two disks, a SATA disk for ledctl, a virtio disk."""
    fs = FakeSys(root)
    enc = fs.enclosure("6:0:13:0", id=ENC, vendor="LSI", model="SAS3x28", slots=4)
    for i, (name, wwid) in enumerate((("sdb", SDB), ("sdc", SDC))):
        d = fs.scsi_disk(name, f"6:0:{i + 1}:0", transport="sas", vendor="SEAGATE",
                         model="ST4000NM0023", serial=f"Z{i}", wwid=wwid, size_bytes=4 * TB)
        fs.seat(enc, f"Slot {i:02d}", d)
    fs.scsi_disk("sda", "0:0:0:0", transport="sata", vendor="ATA", model="Samsung SSD 860",
                 serial="S3Z9NB0K123456",
                 wwid="t10.ATA     Samsung SSD 860 EVO 500GB               S3Z9NB0K123456",
                 size_bytes=500107862016, rotational=False)
    fs.virtio_disk("vda", "virtio1", serial=VDA, size_bytes=16 << 30)
    return fs


def test_led_state_survives_a_restart(tmp_path):
    b = Box(tmp_path, build=small_box)
    paths = {"sdb": f"{HW}/{ENC}/disk/{SDB}", "sdc": f"{HW}/{ENC}/disk/{SDC}",
             "sda": f"{HW}/system/disk/{SDA}", "vda": f"{HW}/system/disk/{VDA}"}
    for path in paths.values():
        expect(put_locate(b.admin, path, True), 202)
    b.stop()
    b.cmds.clear()
    b.fs.write(slot(b.fs, "Slot 01"), 0)  # the enclosure lost one while we were down

    def locate(name):
        return expect(b.admin.get(paths[name]), 200)["disk"]

    b.start()
    try:
        # the ledctl LED cannot be read: it is lit again at start
        assert b.cmds.wait_calls(1, 5 * SLOW) == ["ledctl locate=/dev/sda"]
        assert locate("sda")["locate"] is True and "led_fault" not in locate("sda")
        assert locate("vda")["locate"] is True  # virtual: as recorded
        assert locate("sdb")["locate"] is True  # ses: read back
        assert locate("sdc")["locate"] is False  # ses: the hardware wins over the record
    finally:
        b.stop()
    # a re-apply that fails is reported on the object, and logged
    b.cmds.clear()
    b.cmds.set_mode("ledctl", "fail")
    b.start()
    try:
        assert b.cmds.wait_calls(1, 5 * SLOW) == ["ledctl locate=/dev/sda"]
        deadline = time.monotonic() + 5 * SLOW
        while "led_fault" not in locate("sda") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "re-applying at start failed" in locate("sda")["led_fault"]
        assert "re-applying" in b.srv.log_text()
        b.cmds.set_mode("ledctl", "ok")
        assert "led_fault" not in expect(put_locate(b.admin, paths["sda"], True), 202)["disk"]
    finally:
        b.stop()
