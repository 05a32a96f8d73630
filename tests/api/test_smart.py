# SPDX-License-Identifier: ISC
"""Disk health (server/hardware/smart.c): spindled reads each disk with smartctl (a fake on
its PATH, tests/api/fixtures/smartbin/smartctl, answering the JSON of real kinds of drive
from tests/api/fixtures/smart/), one at a time, and each disk of the hardware service
gains its health, why, temperature, hours and the counters of its kind. A spun-down disk
is not woken; one that hangs is given up at the timeout; an answer that is not JSON, and a
device smartctl cannot open, are unknown with why; a virtual disk has no SMART. Then the
same through the root helper's socket (spindle-smart-helper, started per connection as
systemd's Accept=yes would), with no smartctl on the daemon's own PATH."""
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, SLOW, WRAPPER, Server, assert_stopped_cleanly, expect
from fixtures.hw import FakeSys
from fixtures.unixsock import UnixListener
from test_hardware import ENC, HW, TB
from test_bench import JOBS, WORKER, quick, scratch, submit, wait_state
from test_analytics import AN, data_path, rows
from test_metrics import parse

SMARTBIN = Path(__file__).resolve().parent / "fixtures" / "smartbin"
HELPER = os.environ.get("SPINDLE_SMART_HELPER", str(REPO / "server" / "spindle-smart-helper"))

# device -> what the fake smartctl answers for it (a fixture, "hang" or "garbage"; none:
# it cannot open the device)
DRIVES = {"sda": "sata_ssd_ok", "sdb": "hdd_pending", "sdc": "sas_grown_defects",
          "nvme0n1": "nvme_critical_warning", "sdd": "hdd_standby", "sde": "hang",
          "sdf": "garbage"}


def build(root):
    """The system's disks (SATA SSD and HDDs, an NVMe drive, a virtio disk) and a SAS
    drive in an enclosure slot."""
    fs = FakeSys(root)
    enc = fs.enclosure("6:0:13:0", id=ENC, vendor="LSI", model="SAS3x28", slots=4)
    sas = fs.scsi_disk("sdc", "6:0:1:0", transport="sas", vendor="SEAGATE",
                       model="ST4000NM0023", serial="Z1Z0A1B2", wwid="naa.5000c5005e1a2b3c",
                       size_bytes=4 * TB)
    fs.seat(enc, "Slot 00", sas)
    for i, (name, model, serial) in enumerate((
            ("sda", "Samsung SSD 860", "S3Z9NB0K123456"), ("sdb", "WDC WD40EFRX-68N", "WCC7K3A"),
            ("sdd", "WDC WD40EFRX-68N", "WCC7K3D"), ("sde", "WDC WD40EFRX-68N", "WCC7K3E"),
            ("sdf", "WDC WD40EFRX-68N", "WCC7K3F"), ("sdg", "WDC WD40EFRX-68N", "WCC7K3G"))):
        fs.scsi_disk(name, f"{i}:0:0:0", transport="sata", vendor="ATA", model=model,
                     serial=serial, wwid=f"t10.ATA     {model} {serial}", size_bytes=4 * TB,
                     rotational=name != "sda")
    fs.nvme_disk("nvme0n1", "nvme0", model="INTEL SSDPE2KX010T8", serial="PHLJ9123004L1P0FGN",
                 wwid="eui.0100000001000000e4d25c1a2b3c4d01", size_bytes=TB)
    fs.virtio_disk("vda", "virtio1", serial="vd0", size_bytes=16 << 30)
    return fs


def fake_smart(directory):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "calls.log").write_text("")
    for dev, mode in DRIVES.items():
        (directory / dev).write_text(mode + "\n")
    return directory


def all_disks(client):
    out = {}
    for ch in expect(client.get(HW), 200)["chassis"]:
        for d in expect(client.get(ch["href"] + "/disk"), 200)["disks"]:
            if d["device"]:
                out[d["device"]] = d
    return out


def wait_read(client, devices, timeout=30 * SLOW):
    """The disks once none of devices is waiting for its first reading."""
    deadline = time.monotonic() + timeout
    while True:
        disks = all_disks(client)
        if all(disks[d]["health_details"] != "not read yet" for d in devices):
            return disks
        assert time.monotonic() < deadline, {d: disks[d]["health_details"] for d in devices}
        time.sleep(0.2)


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("smart")
    fs = build(tmp / "root")
    smart = fake_smart(tmp / "smart")
    env = dict(os.environ, SPINDLE_FAKE_SMART=str(smart),
               PATH=f"{SMARTBIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    srv = Server(tmp / "state", "--sys-root", fs.root, "--smart-interval", "3",
                 "--smart-timeout", "2", "--smart-socket", tmp / "no-helper.sock",
                 env=env).start()
    b = type("Box", (), {})()
    b.srv, b.admin, b.smart, b.fs = srv, srv.admin(), smart, fs
    b.disks = wait_read(b.admin, list(DRIVES) + ["sdg"])
    yield b
    assert_stopped_cleanly(srv)


def test_a_healthy_sata_ssd(box):
    d = box.disks["sda"]
    assert (d["health"], d["health_details"], d["temperature_c"], d["power_on_hours"]) == \
        ("ok", "", 31, 12011)
    s = d["smart"]
    assert s["protocol"] == "ATA" and s["overall_passed"] is True and s["asleep"] is False
    assert (s["reallocated_sectors"], s["pending_sectors"], s["offline_uncorrectable"],
            s["crc_errors"]) == (0, None, None, 2)
    assert s["read"].endswith("Z") and "grown_defects" not in s and "media_errors" not in s


def test_an_hdd_with_pending_sectors_is_a_warning(box):
    d = box.disks["sdb"]
    assert d["health"] == "warning", d
    assert d["health_details"] == "8 sectors pending reallocation; 2 sectors uncorrectable offline"
    assert (d["smart"]["pending_sectors"], d["smart"]["temperature_limit_c"]) == (8, 60)


def test_a_sas_drive_with_grown_defects_in_its_slot(box):
    d = box.disks["sdc"]
    assert (d["health"], d["health_details"], d["enclosure"], d["slot"]) == \
        ("warning", "12 grown defects", ENC, "Slot 00")
    s = d["smart"]
    assert (s["protocol"], s["grown_defects"], s["uncorrected_read_errors"],
            s["temperature_limit_c"]) == ("SCSI", 12, 0, 60)
    assert "pending_sectors" not in s


def test_an_nvme_critical_warning_is_failing(box):
    d = box.disks["nvme0n1"]
    assert d["health"] == "failing", d
    assert "reliability degraded" in d["health_details"]
    s = d["smart"]
    assert (s["critical_warning"], s["percentage_used"], s["available_spare"],
            s["available_spare_threshold"], s["media_errors"], s["overall_passed"]) == \
        (4, 104, 87, 10, 3, False)


def test_a_sleeping_disk_is_not_woken(box):
    d = box.disks["sdd"]
    assert (d["health"], d["smart"]["asleep"], d["smart"]["read"]) == ("unknown", True, None)
    assert "spun down" in d["health_details"]
    calls = (box.smart / "calls.log").read_text().splitlines()
    assert "--json -a -n standby /dev/sdd" in calls, calls
    assert all(c.startswith("--json -a -n standby /dev/") for c in calls), calls


def test_a_hung_disk_garbage_and_one_that_does_not_open(box):
    assert box.disks["sde"]["health"] == "unknown"
    assert box.disks["sde"]["health_details"] == "smartctl gave no answer within 2 s"
    assert box.disks["sdf"]["health"] == "unknown"
    assert "not JSON" in box.disks["sdf"]["health_details"]
    assert box.disks["sdg"]["health_details"] == \
        "smartctl cannot read it: Smartctl open device: /dev/sdg failed: No such device"


def test_a_virtual_disk_has_no_smart(box):
    d = box.disks["vda"]
    assert (d["health"], d["smart"]["protocol"]) == ("unknown", None)
    assert d["health_details"] == "a virtio disk of a virtual machine: it has no SMART"
    calls = (box.smart / "calls.log").read_text()
    assert "/dev/vda" not in calls


def test_a_disk_falling_asleep_keeps_its_reading_and_one_waking_is_read(box):
    """The next readings come at the interval (3 s; 3 s too for a disk not ok)."""
    (box.smart / "sda").write_text("hdd_standby\n")
    (box.smart / "sdd").write_text("sata_ssd_ok\n")
    deadline = time.monotonic() + 20 * SLOW
    while True:
        disks = all_disks(box.admin)
        if disks["sda"]["smart"]["asleep"] and disks["sdd"]["health"] == "ok":
            break
        assert time.monotonic() < deadline, (disks["sda"], disks["sdd"])
        time.sleep(0.2)
    sda = disks["sda"]
    assert (sda["health"], sda["temperature_c"], sda["smart"]["crc_errors"]) == ("ok", 31, 2)
    assert sda["smart"]["read"] is not None
    (box.smart / "sda").write_text("sata_ssd_ok\n")
    (box.smart / "sdd").write_text("hdd_standby\n")


def smart_problems(client):
    return {p["code"] + " " + p["components"][0]["href"].rsplit("/", 1)[1]: p
            for p in expect(client.get("/api/problem/v1/problems"), 200)["problems"]
            if p["code"] in ("SP-DISK-FAILING", "SP-DISK-WARNING")}


def test_a_failing_disk_and_disks_reporting_trouble_are_problems(box):
    """Each names the disk (slot or label, device, serial), links it (the console's Locate),
    and says why; ok, unknown and virtual disks raise none."""
    probs = smart_problems(box.admin)
    ids = {d: box.disks[d]["id"] for d in box.disks}
    assert set(probs) == {f"SP-DISK-FAILING {ids['nvme0n1']}", f"SP-DISK-WARNING {ids['sdb']}",
                          f"SP-DISK-WARNING {ids['sdc']}"}, set(probs)
    nvme = probs[f"SP-DISK-FAILING {ids['nvme0n1']}"]
    assert nvme["severity"] == "Critical" and nvme["type"] == "Fault"
    assert nvme["description"].startswith(
        f"The disk in {box.disks['nvme0n1']['label']} (nvme0n1, serial PHLJ9123004L1P0FGN) is "
        "failing: the drive's own health check failed; NVMe critical warning 0x04"), nvme
    assert nvme["components"][0]["href"] == box.disks["nvme0n1"]["href"]
    assert "locator LED" in nvme["action"]
    sas = probs[f"SP-DISK-WARNING {ids['sdc']}"]
    assert sas["severity"] == "Major"
    assert sas["description"] == ("The disk in Slot 00 (sdc, serial Z1Z0A1B2) reports trouble: "
                                  "12 grown defects"), sas
    assert sas["components"][0]["chassis"] == ENC


def test_a_problem_clears_when_its_cause_goes(box):
    """sdb's pending sectors remapped (the next reading says ok): its problem goes; back,
    it is raised again."""
    sdb = box.disks["sdb"]["id"]
    (box.smart / "sdb").write_text("sata_ssd_ok\n")
    deadline = time.monotonic() + 20 * SLOW
    while f"SP-DISK-WARNING {sdb}" in smart_problems(box.admin):
        assert time.monotonic() < deadline, "sdb's problem never cleared"
        time.sleep(0.2)
    assert all_disks(box.admin)["sdb"]["health"] == "ok"
    (box.smart / "sdb").write_text("hdd_pending\n")
    while f"SP-DISK-WARNING {sdb}" not in smart_problems(box.admin):
        assert time.monotonic() < deadline, "sdb's problem never came back"
        time.sleep(0.2)


def test_metrics_in_the_smartctl_exporters_names(box):
    """/metrics carries each disk's health and its counters as Prometheus' smartctl
    exporter names them, so its Grafana dashboards fit; a disk never read has its health
    (-1, unknown) and nothing else."""
    m = parse(box.admin.get("/metrics").text)
    health = m["spindle_disk_health"]
    assert (health['{device="sda"}'], health['{device="sdb"}'], health['{device="nvme0n1"}'],
            health['{device="sde"}'], health['{device="vda"}']) == (0, 1, 2, -1, -1), health
    assert m["smartctl_device_temperature"]['{device="sda",temperature_type="current"}'] == 31
    assert m["smartctl_device_power_on_seconds"]['{device="sda"}'] == 12011 * 3600
    assert m["smartctl_device_smart_status"]['{device="nvme0n1"}'] == 0
    attrs = m["smartctl_device_attribute"]
    assert attrs['{device="sdb",attribute_id="197",attribute_name="Current_Pending_Sector",'
                 'attribute_value_type="raw"}'] == 8
    assert attrs['{device="sda",attribute_id="199",attribute_name="UDMA_CRC_Error_Count",'
                 'attribute_value_type="raw"}'] == 2
    assert m["smartctl_scsi_grown_defect_list"] == {'{device="sdc"}': 12}
    assert m["smartctl_device_critical_warning"] == {'{device="nvme0n1"}': 4}
    assert m["smartctl_device_percentage_used"] == {'{device="nvme0n1"}': 104}
    assert m["smartctl_device_media_errors"] == {'{device="nvme0n1"}': 3}
    never = ('device="sde"', 'device="sdf"', 'device="vda"')  # hung, garbage, virtual
    assert not any(n in k for f, v in m.items() if f.startswith("smartctl_") for k in v
                   for n in never), m


def test_temperatures_are_a_dataset(box):
    """disk.temperature[disk] is made once a disk gives its temperature, and every second
    holds each disk's last one; the value is the hottest's."""
    deadline = time.monotonic() + 20 * SLOW
    while True:
        names = {d["name"] for d in expect(box.admin.get(AN + "/datasets"), 200)["datasets"]}
        samples = rows(expect(box.admin.get(data_path("disk.temperature[disk]", start=-3,
                                                      seconds=3)), 200)) \
            if "disk.temperature[disk]" in names else []
        if samples and len(samples[-1]["data"]["data"]) >= 4:
            break
        assert time.monotonic() < deadline, (names, samples)
        time.sleep(0.3)
    last = samples[-1]["data"]
    temps = {kv["key"]: kv["value"] for kv in last["data"]}
    # (the disks no other test re-maps)
    assert {k: temps[k] for k in ("sdc", "nvme0n1")} == {"sdc": 35, "nvme0n1": 41}, temps
    assert last["value"] == max(temps.values()), last
    assert "sde" not in temps and "vda" not in temps  # never read, no SMART


def test_a_job_on_a_disk_reporting_trouble_says_so():
    """The bench dir sits on a partition of sdb (the HDD with pending sectors): the job's
    environment records sdb's health, and its findings flag it: a slow run on a failing
    disk is not a result."""
    base = scratch()
    (base / "bench").mkdir()
    fs = build(base / "root")
    part = (fs.root / "sys" / "block" / "sdb").resolve() / "sdb1"
    part.mkdir()
    (part / "partition").write_text("1\n")
    dev = os.stat(base / "bench").st_dev
    fs.link(f"dev/block/{os.major(dev)}:{os.minor(dev)}", os.path.relpath(part, fs.root / "sys"))
    smart = fake_smart(base / "smart")
    env = dict(os.environ, SPINDLE_FAKE_SMART=str(smart),
               PATH=f"{SMARTBIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    srv = Server(base / "state", "--sys-root", fs.root, "--bench-dirs", base / "bench",
                 "--bench-worker", WORKER, "--smart-interval", "60", "--smart-timeout", "2",
                 "--smart-socket", base / "no-helper.sock", env=env).start()
    try:
        admin = srv.admin()
        wait_read(admin, ["sdb"])
        job = submit(admin, quick("on-sdb"))
        job = wait_state(admin, job["id"], {"done", "failed"})
        assert job["state"] == "done", job.get("reason")
        assert job["environment"]["disks"] == [{
            "name": "sdb", "health": "warning",
            "details": "8 sectors pending reallocation; 2 sectors uncorrectable offline"}]
        res = expect(admin.get(f"{JOBS}/{job['id']}/result"), 200)["result"]
        found = {f["id"]: f for f in res["findings"]}["disk_health"]
        assert (found["flag"], found["value"], found["inputs"]) == (True, 1, {"sdb": "warning"})
        assert found["text"].startswith("sdb (warning: 8 sectors pending reallocation; 2 "
                                         "sectors uncorrectable offline). A run on a disk"), found
    finally:
        assert_stopped_cleanly(srv)
        shutil.rmtree(base, ignore_errors=True)


# ---- through the root helper's socket ----------------------------------------------------

class HelperSocket(UnixListener):
    """A listening socket that runs the helper on each connection, stdin and stdout."""

    def __init__(self, path, sys_root, env):
        self.args = [HELPER, "--sys-root", str(sys_root), "--timeout", "2"]
        self.env = env
        super().__init__(path, self.run)

    def run(self, conn):
        with conn:
            subprocess.run(self.args, stdin=conn, stdout=conn, env=self.env, timeout=30,
                           check=False)


def test_through_the_helper(tmp_path):
    if not os.access(HELPER, os.X_OK):
        pytest.fail(f"no {HELPER}: build it (make)")
    fs = build(tmp_path / "root")
    smart = fake_smart(tmp_path / "smart")
    helper_env = dict(os.environ, SPINDLE_FAKE_SMART=str(smart),
                      PATH=f"{SMARTBIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    helper = HelperSocket(tmp_path / "smart.sock", fs.root, helper_env)
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no smartctl for the daemon itself
    srv = Server(tmp_path / "state", "--sys-root", fs.root, "--smart-interval", "60",
                 "--smart-timeout", "5", "--smart-socket", helper.path, env=env).start()
    try:
        disks = wait_read(srv.admin(), list(DRIVES))
        assert (disks["sda"]["health"], disks["sda"]["temperature_c"]) == ("ok", 31)
        assert disks["nvme0n1"]["health"] == "failing"
        assert disks["sdd"]["smart"]["asleep"] is True
        assert disks["sde"]["health_details"] == \
            "smartctl /dev/sde gave no answer within 2 s and was killed", disks["sde"]
        assert disks["sdf"]["health_details"] == "smartctl /dev/sdf gave no JSON (exit status 4)"
        assert helper.accepted >= len(DRIVES)
    finally:
        assert_stopped_cleanly(srv)
        helper.close()


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


@pytest.mark.skipif("ASAN_OPTIONS" in os.environ or WRAPPER,
                    reason="a sanitizer's or valgrind's allocator keeps freed memory")
def test_a_helper_answering_a_huge_tree_is_not_parsed(tmp_path):
    """The attacker's helper answers every disk with a megabyte of JSON that is all empty
    objects ({},{},...): jansson made a tree of some 80 MB of it on the loop, for every
    reading. smartctl -a's JSON is some 10 to 60 KB: an answer past 256 KB is not parsed
    (the disk's health is unknown, saying why), and one just short of it costs a few MB."""
    def tree(size):
        head, tail = b'{"smartctl":{"exit_status":0},"x":[', b'{}]}'
        return head + b'{},' * ((size - len(head) - len(tail)) // 3) + tail
    answers = [tree(1 << 20), tree((256 << 10) - 64)]
    go = threading.Event()  # set once the peak before any answer is read

    def answer(conn):
        with conn:
            try:
                conn.recv(200)
                go.wait(30)
                conn.sendall(answers[min(helper.accepted, len(answers)) - 1])
            except OSError:
                pass
    fs = build(tmp_path / "root")
    helper = UnixListener(tmp_path / "smart.sock", answer)
    srv = Server(tmp_path / "state", "--sys-root", fs.root, "--smart-interval", "60",
                 "--smart-timeout", "5", "--smart-socket", helper.path).start()
    try:
        peak = status_kb(srv.proc.pid, "VmHWM")
        go.set()
        disks = wait_read(srv.admin(), list(DRIVES))
        assert helper.accepted >= len(DRIVES)
        grown = status_kb(srv.proc.pid, "VmHWM") - peak
        assert grown < 32 << 10, f"the peak RSS grew by {grown} kB"
        first = [d for d in disks.values() if "256 KB" in d["health_details"]]
        assert first and first[0]["health"] == "unknown", \
            {d: disks[d]["health_details"] for d in DRIVES}
    finally:
        assert_stopped_cleanly(srv)
        helper.close()
