# SPDX-License-Identifier: ISC
"""The appliance's hardware and problem services: the requests of Oracle's "ZFS Storage
Appliance RESTful API Guide" (Hardware Services, Problem Service) sent as the guide writes
them, their answers checked against the guide's keys and types; and each source of
problems raised and cleared (fake sysfs, a small tmpfs state dir, a failing fake worker,
a --proc-root with a file missing)."""
import os
import re
import time

import pytest

from conftest import SLOW, FakeProc, Server, assert_stopped_cleanly, expect, expect_fault
from test_hardware import ENC, HW, SDB, SDE, Box, build_box, put_locate, slot, small_box

PROBLEMS = "/api/problem/v1/problems"
GUIDE_HEADERS = {"Accept": "application/json"}
UUID_LEN = 36

# The guide's keys and types ((t, None): t, or null where the box cannot know it). Its
# strings stay strings ("" unknown): clients call string methods on them.
CHASSIS_KEYS = {"name": str, "model": str, "manufacturer": str, "serial": str,
                "revision": str, "part": str,
                "type": str, "faulted": bool, "fru": str, "uuid": str, "href": str,
                "locate": (bool, None), "path": int, "rpm": (int, None)}
DISK_KEYS = {"device": (str, None), "faulted": bool, "href": str, "interface": (str, None),
             "label": str, "locate": (bool, None), "manufacturer": str, "model": str,
             "pathcount": int, "present": bool, "revision": str, "rpm": (int, None),
             "serial": str, "fru": str,
             "size": (int, None), "uuid": str}
PROBLEM_KEYS = {"code": str, "description": str, "impact": str, "uuid": str,
                "repairable": bool, "type": str, "timestamp": str, "severity": str,
                "components": list, "href": str, "response": str, "action": str,
                "diagnosed": str, "phoned_home": str, "url": str}


def types_ok(obj, keys):
    """Every key of the guide is there, of the guide's type ((t, None): t or null)."""
    bad = []
    for key, want in keys.items():
        want = want if isinstance(want, tuple) else (want,)
        types = tuple(type(None) if t is None else t for t in want)
        if key not in obj:
            bad.append(f"{key} missing")
        elif isinstance(obj[key], bool) and bool not in types:
            bad.append(f"{key} is a boolean")
        elif not isinstance(obj[key], types):
            bad.append(f"{key}={obj[key]!r}")
    return bad


def wait_for(fn, what, timeout=10):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        value = fn()
        if value:
            return value
        assert time.monotonic() < deadline, f"no {what} after {timeout * SLOW} s"
        time.sleep(0.1)


def problems(client, code=None):
    got = expect(client.get(PROBLEMS, headers=GUIDE_HEADERS), 200)["problems"]
    return [p for p in got if code is None or p["code"] == code]


def open_count(client):
    """The open problems as the dashboard (rebuilt each second) and /metrics count them."""
    dash = expect(client.get("/api/status/v1/dashboard"), 200)["dashboard"]
    metrics = client.get("/metrics").text
    line = [ln for ln in metrics.splitlines() if ln.startswith("spindle_problems_open ")]
    return dash["problems"], int(line[0].split()[1])


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    b = Box(tmp_path_factory.mktemp("appl-hw"))
    yield b
    b.stop()


# ---- Hardware Services -------------------------------------------------------------

def test_list_chassis_as_the_guide_and_clients_read_it(box):
    """GET /api/hardware/v1/chassis: the guide's examples wrap the list in "hardware", real
    appliances (and the clients written against them) in "chassis", the one key; each
    chassis with the guide's keys."""
    body = expect(box.admin.get(HW, headers=GUIDE_HEADERS), 200)
    assert list(body) == ["chassis"], list(body)
    system, enc = body["chassis"]
    for c in (system, enc):
        assert not types_ok(c, CHASSIS_KEYS), types_ok(c, CHASSIS_KEYS)
        assert len(c["uuid"]) == UUID_LEN and c["fru"].startswith("hc://:chassis-mfg=")
    assert (system["type"], enc["type"]) == ("system", "storage")
    assert (system["manufacturer"], enc["manufacturer"]) == ("Supermicro", "LSI")
    # named as the appliance names them: the host, and a shelf by its serial (else its id)
    assert (system["name"], enc["name"]) == (os.uname().nodename, ENC)
    assert (system["display_name"], enc["display_name"]) == ("SSG-6029P-E1CR12L", "LSI SAS3x28")
    assert enc["faulted"] is True and system["faulted"] is False  # Slot 03 is faulted


def test_get_chassis_embeds_its_disks_each_with_its_href(box):
    """GET chassis/<c> answers with its components, "disk": [...], each with its href,
    and that href answers the disk (as appliance scripts walk chassis -> disk)."""
    chassis = expect(box.admin.get(HW), 200)["chassis"]
    for c in chassis:
        got = expect(box.admin.get(c["href"], headers=GUIDE_HEADERS), 200)["chassis"]
        assert got["disk"], c["href"]
        for d in got["disk"]:
            assert not types_ok(d, DISK_KEYS), (d["href"], types_ok(d, DISK_KEYS))
            assert d["label"].startswith("HDD ")
            assert expect(box.admin.get(d["href"]), 200)["disk"] == d
    enc = expect(box.admin.get(f"{HW}/{ENC}"), 200)["chassis"]
    assert [d["label"] for d in enc["disk"]] == [f"HDD {i}" for i in range(12)]
    sdb = next(d for d in enc["disk"] if d["id"] == SDB)
    assert (sdb["manufacturer"], sdb["revision"], sdb["rpm"], sdb["pathcount"],
            sdb["faulted"]) == ("SEAGATE", "A2D2", 7200, 1, False)
    assert next(d for d in enc["disk"] if d["id"] == SDE)["faulted"] is True
    # never null: an empty slot and a disk outside any enclosure are not faulted
    assert all(d["faulted"] is False for d in enc["disk"][4:])
    system = expect(box.admin.get(f"{HW}/system"), 200)["chassis"]
    assert all(d["faulted"] is False for d in system["disk"])


def test_cluster_answers_as_a_stand_alone_appliance(box):
    """GET /api/hardware/v1/cluster: a real unclustered appliance's answer, its resources a
    list (a Go client decodes them into a slice) of the pools and IP interfaces, each
    owned by this node; "cluster" the one key, with the appliance's headers."""
    resp = box.admin.get("/api/hardware/v1/cluster", headers=GUIDE_HEADERS)
    doc = expect(resp, 200)
    assert list(doc) == ["cluster"]
    cluster = doc["cluster"]
    resources = cluster.pop("resources")
    assert cluster == {"description": "Clustering is not configured", "peer_asn": "",
                       "peer_description": "", "peer_hostname": "", "peer_state": "",
                       "state": "AKCS_UNCONFIGURED"}
    assert isinstance(resources, list)
    node = expect(box.admin.get("/api/system/v1/version"), 200)["version"]["nodename"]
    for r in resources:   # as []clusterResource{Owner, Type, UserLabel, Details, Href}
        assert set(r) == {"owner", "type", "user_label", "details", "href"}, r
        assert r["owner"] == node and r["type"] == "singleton"
        assert isinstance(r["details"], list) and all(isinstance(d, str) for d in r["details"])
        assert re.match(r"^/api/hardware/v1/cluster/resources/(zfs|net)/[^/]+$", r["href"])
    assert (resp.headers["X-Zfssa-Hardware-Api"], resp.headers["X-Zfssa-Api-Version"]) == \
        ("1.0", "1.0")
    assert resp.headers["X-Zfssa-Version"].startswith("spindle.")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


def test_ids_and_uuids_stay_across_a_restart(tmp_path):
    b = Box(tmp_path)
    try:
        def inventory():
            out = {}
            for c in expect(b.admin.get(HW), 200)["chassis"]:
                got = expect(b.admin.get(c["href"]), 200)["chassis"]
                out[c["href"]] = c["uuid"]
                out.update({d["href"]: d["uuid"] for d in got["disk"]})
            return out
        before = inventory()
        assert len(set(before.values())) == len(before)  # one uuid each
        b.stop()
        b.start()
        assert inventory() == before
    finally:
        b.stop()


def test_the_system_uuid_is_the_dmi_one_where_readable(tmp_path):
    def build(root):
        fs = build_box(root)
        fs.dmi(product_uuid="4C4C4544-0042-3510-8052-B7C04F5A4B32")
        return fs
    b = Box(tmp_path, build=build)
    try:
        system = expect(b.admin.get(f"{HW}/system"), 200)["chassis"]
        assert system["uuid"] == "4c4c4544-0042-3510-8052-b7c04f5a4b32"
        b.stop()
        b.fs.dmi(product_uuid="00000000-0000-0000-0000-000000000000")  # a placeholder
        b.start()
        system = expect(b.admin.get(f"{HW}/system"), 200)["chassis"]
        assert system["uuid"][14] == "5"  # derived from the id instead
    finally:
        b.stop()


# ---- Problem Service ---------------------------------------------------------------

def test_the_problem_service_lists_its_methods(box):
    svc = expect(box.admin.get("/api/problem/v1"), 200)["service"]
    assert {m["uri"] for m in svc["methods"]} >= {PROBLEMS, PROBLEMS + "/{uuid}"}
    names = {s["name"] for s in expect(box.admin.get("/api/access/v1"), 200)["services"]}
    assert "problem" in names


def test_a_disk_the_enclosure_marks_faulted_is_a_problem_until_it_is_not(tmp_path):
    b = Box(tmp_path)
    try:
        got = wait_for(lambda: problems(b.admin, "SP-DISK-FAULT"), "disk problem")
        assert len(got) == 1
        p = got[0]
        assert not types_ok(p, PROBLEM_KEYS), types_ok(p, PROBLEM_KEYS)
        assert (p["type"], p["severity"], p["repairable"]) == ("Fault", "Major", False)
        assert len(p["uuid"]) == UUID_LEN and p["href"] == f"{PROBLEMS}/{p['uuid']}"
        assert time.strptime(p["timestamp"], "%Y-%m-%d %H:%M:%S")
        comp = p["components"][0]
        assert comp["href"] == f"{HW}/{ENC}/disk/{SDE}" and comp["chassis"] == ENC
        assert comp["label"] == "HDD 3" and "Slot 03" in p["description"]
        # one problem by its uuid, as the guide gets it
        one = expect(b.admin.get(p["href"], headers=GUIDE_HEADERS), 200)["problem"]
        assert one["uuid"] == p["uuid"] and one["first_seen"] == p["first_seen"]
        wait_for(lambda: open_count(b.admin) == (1, 1), "counts of 1")
        # the same uuid while it lasts
        expect(b.admin.get(f"{HW}/{ENC}/disk/{SDE}"), 200)
        assert problems(b.admin, "SP-DISK-FAULT")[0]["uuid"] == p["uuid"]
        # replaced: the enclosure clears its mark
        b.fs.write(slot(b.fs, "Slot 03", "fault"), 0)
        b.fs.write(slot(b.fs, "Slot 03", "status"), "OK")

        def cleared():
            expect(b.admin.get(f"{HW}/{ENC}/disk/{SDE}"), 200)
            return not problems(b.admin, "SP-DISK-FAULT")
        wait_for(cleared, "clearing")
        expect_fault(b.admin.get(p["href"]), 404, "ERR_NOT_FOUND")
        wait_for(lambda: open_count(b.admin) == (0, 0), "counts of 0")  # rebuilt each second
    finally:
        b.stop()


def test_a_locator_that_cannot_be_lit_again_at_start_is_a_problem(tmp_path):
    b = Box(tmp_path, build=small_box)
    disks = expect(b.admin.get(f"{HW}/system/disk"), 200)["disks"]
    sda = next(d["href"] for d in disks if d["device"] == "sda")  # ledctl: cannot be read
    try:
        expect(put_locate(b.admin, sda, True), 202)
        assert not problems(b.admin, "SP-LED-REAPPLY")
    finally:
        b.stop()
    b.cmds.set_mode("ledctl", "fail")
    b.start()
    try:
        p = wait_for(lambda: problems(b.admin, "SP-LED-REAPPLY"), "LED problem")[0]
        assert p["components"][0]["href"] == sda and "ledctl" in p["description"]
        # set anew: cleared
        b.cmds.set_mode("ledctl", "ok")
        expect(put_locate(b.admin, sda, True), 202)
        assert not problems(b.admin, "SP-LED-REAPPLY")
    finally:
        b.stop()


def test_a_source_the_collector_cannot_read_is_a_problem(tmp_path):
    root = tmp_path / "root"
    fake = FakeProc(root, live=False).start()
    srv = Server(tmp_path / "state", "--proc-root", root, "--sys-root", root).start()
    try:
        admin = srv.admin()
        time.sleep(1.5 * SLOW)  # a tick or two with every file there
        assert not problems(admin, "SP-COLLECT-READ")
        meminfo = root / "proc" / "meminfo"
        text = meminfo.read_text()
        meminfo.unlink()
        p = wait_for(lambda: problems(admin, "SP-COLLECT-READ"), "collector problem")[0]
        assert "/proc/meminfo" in p["description"]
        assert p["components"][0]["label"] == "/proc/meminfo"
        meminfo.write_text(text)
        wait_for(lambda: not problems(admin, "SP-COLLECT-READ"), "clearing")
    finally:
        fake.stop()
        assert_stopped_cleanly(srv)


def test_a_state_dir_near_full_is_a_problem(tmpfs, tmp_path):
    fs = tmpfs("16m")
    (tmp_path / "root").mkdir()
    srv = Server(fs / "state", "--proc-root", tmp_path / "root",
                 "--sys-root", tmp_path / "root").start()
    filler = fs / "filler"
    try:
        admin = srv.admin()
        assert not problems(admin, "SP-STATE-FULL")
        st = os.statvfs(fs)
        # leave 2 % free
        size = st.f_bavail * st.f_frsize - st.f_blocks * st.f_frsize // 50
        filler.write_bytes(b"\0" * size)
        p = wait_for(lambda: problems(admin, "SP-STATE-FULL"), "state dir problem")[0]
        assert str(fs / "state") in p["description"] and "% full" in p["description"]
        assert p["severity"] in ("Major", "Critical")
        filler.unlink()
        wait_for(lambda: not problems(admin, "SP-STATE-FULL"), "clearing")
    finally:
        if filler.exists():
            filler.unlink()
        assert_stopped_cleanly(srv)


FAILING_WORKER = """#!/bin/sh
# A worker that fails the jobs named fail-*, and runs the others until stopped.
spec=$(cat)
case "$spec" in
*'"name":"fail'*|*'"name": "fail'*) echo "simulated worker failure" >&2; exit 3 ;;
esac
exec sleep 30
"""


def test_the_last_benchmark_job_failing_is_a_problem(tmp_path):
    worker = tmp_path / "worker"
    worker.write_text(FAILING_WORKER)
    worker.chmod(0o755)
    (tmp_path / "bench").mkdir()
    srv = Server(tmp_path / "state", "--bench-worker", worker, "--bench-dirs",
                 tmp_path / "bench").start()
    jobs = "/api/bench/v1/jobs"
    spec = {"pattern": "randread", "size": "1M", "block_size": "4k", "io_size": "64k"}
    try:
        admin = srv.admin()
        job = expect(admin.post(jobs, json=dict(spec, name="fail-1")), 201)["job"]
        p = wait_for(lambda: problems(admin, "SP-BENCH-FAILED"), "job problem")[0]
        assert p["components"][0]["href"] == f"{jobs}/{job['id']}"
        assert "fail-1" in p["description"] and "status 3" in p["description"]
        wait_for(lambda: open_count(admin) == (1, 1), "counts of 1")
        # a later job that does not fail clears it (cancelled here: it did not fail)
        job = expect(admin.post(jobs, json=dict(spec, name="runs")), 201)["job"]
        wait_for(lambda: expect(admin.get(f"{jobs}/{job['id']}"), 200)["job"]["state"]
                 == "running", "running job")
        expect(admin.delete(f"{jobs}/{job['id']}"), 202)
        wait_for(lambda: not problems(admin, "SP-BENCH-FAILED"), "clearing")
    finally:
        assert_stopped_cleanly(srv)


def test_problems_need_stat_read(box):
    """Anyone who may read the dashboard's count may read the list; an unknown uuid is a
    404 in the fault shape."""
    expect_fault(box.admin.get(f"{PROBLEMS}/not-a-uuid"), 404, "ERR_NOT_FOUND")
    expect_fault(box.srv.client().get(PROBLEMS), 401)
