# SPDX-License-Identifier: ISC
"""A client written the way scripts for the ZFS Storage Appliance are written: requests,
Basic credentials on every request (no login), the appliance's wrappers and keys, and the
hrefs the server hands out followed as they are. It walks the flows such scripts walk:
version -> chassis -> disk -> locate, and dataset -> data. Nothing in it knows Spindle."""
import time

import pytest
import requests

from conftest import SLOW, FakeProc, Server, assert_stopped_cleanly
from test_hardware import build_box
from fixtures.hw import FakeCommands


class ApplianceClient:
    """As an inventory reporter or a monitoring poller would write it."""

    def __init__(self, host, port, user, password):
        self.base = f"https://{host}:{port}"
        self.http = requests.Session()
        self.http.auth = (user, password)  # sent with every request
        self.http.verify = False
        self.http.trust_env = False
        self.http.headers.update({"Accept": "application/json",
                                  "Content-Type": "application/json"})

    def _call(self, method, path, **kw):
        resp = self.http.request(method, self.base + path, timeout=15 * SLOW, **kw)
        resp.raise_for_status()
        return resp.json() if resp.content else None

    def get(self, path):
        return self._call("GET", path)

    def put(self, path, body):
        return self._call("PUT", path, json=body)

    def version(self):
        return self.get("/api/system/v1/version")["version"]

    def chassis(self):
        return self.get("/api/hardware/v1/chassis")["chassis"]

    def disks(self, chassis):
        return self.get(chassis["href"])["chassis"]["disk"]

    def locate(self, disk, on):
        self.put(disk["href"], {"locate": on})
        return self.get(disk["href"])["disk"]["locate"]

    def datasets(self):
        return self.get("/api/analytics/v1/datasets")["datasets"]

    def read(self, dataset, seconds=1):
        # the appliance's own way of naming a dataset in a URL: its name, brackets and all
        return self.get(f"/api/analytics/v1/datasets/{dataset}/data"
                        f"?start=now&seconds={seconds}")["data"]


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("appl-client")
    fs = build_box(tmp / "root")
    proc = FakeProc(tmp / "root", disks=2, nics=1, cpus=2).start()
    cmds = FakeCommands(tmp / "bin")
    srv = Server(tmp / "state", "--sys-root", fs.root, "--proc-root", tmp / "root",
                 "--led-command-timeout", "1", env=cmds.env()).start()
    yield ApplianceClient("127.0.0.1", srv.port, "admin", srv.admin_password)
    assert_stopped_cleanly(srv)
    proc.stop()


def test_version_then_inventory_then_locate(box):
    v = box.version()
    for key in ("hw_asn", "hw_product", "os_nodename", "os_version", "ak_product", "asn",
                "nodename", "version", "ak_version", "csn"):
        assert isinstance(v[key], str), key
    chassis = box.chassis()
    assert chassis and all(isinstance(c["faulted"], bool) for c in chassis)
    storage = [c for c in chassis if c["type"] == "storage"]
    assert storage, [c["type"] for c in chassis]
    disks = box.disks(storage[0])
    assert disks and all(d["href"].startswith("/api/hardware/v1/chassis/") for d in disks)
    report = [(d["label"], d["manufacturer"], d["model"], d["serial"], d["faulted"])
              for d in disks]
    assert all(isinstance(label, str) and label.startswith("HDD ") for label, *_ in report)
    seated = next(d for d in disks if d["present"])
    assert box.locate(seated, True) is True
    assert box.locate(seated, False) is False


def test_dataset_then_data(box):
    names = {d["name"] for d in box.datasets()}
    for name in ("cpu.utilization", "io.ops", "nic.kilobytes", "io.ops[disk]"):
        assert name in names, name
    deadline = time.monotonic() + 10 * SLOW
    while True:  # the first sample is taken within a second of the start
        one = box.read("cpu.utilization")
        if one and one["data"]["value"] is not None:
            break
        assert time.monotonic() < deadline, one
        time.sleep(0.3)
    assert one["samples"] == one["sample"] + 1 and isinstance(one["startTime"], str)
    three = box.read("io.ops[disk]", seconds=3)
    assert len(three) == 3
    for s in three:
        assert isinstance(s["data"]["value"], (int, float))
        assert {kv["key"] for kv in s["data"]["data"]} <= {"nvme0n1", "nvme1n1"}
