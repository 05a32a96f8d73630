# SPDX-License-Identifier: ISC
"""The top level of every appliance-shaped answer holds exactly the keys a real appliance's
top level holds: scripts iterate j.values() and index the one key they know, so a key of
Spindle's own beside it breaks them. Every route of the appliance's services (access,
system, user, role, log, hardware, problem, analytics, storage, network) is called here,
on a box with an enclosure, ZFS and a network, and its answer's keys held to the table; a
route of those services missing from the table fails the test, so a new one cannot skip
the rule. Faults are {"fault": ...} alone."""
import json
import os
from urllib.parse import quote

import pytest

from conftest import PASSWORD, expect, pattern_regex, routes, unique
from test_devices import Device
from test_appliance_network import link
from test_appliance_storage import FAKE_BIN, storage
from test_openapi_live import build_sys

APPLIANCE = {"access", "system", "user", "role", "log", "hardware", "problem", "analytics",
             "storage", "network"}
# Routes of those services with no counterpart on the appliance (they still answer one key)
SPINDLES_OWN = {("GET", "/api/openapi.json"), ("GET", "/api/system/v1/health"),
                ("GET", "/metrics")}
AN, HW, ST, NET = ("/api/analytics/v1", "/api/hardware/v1", "/api/storage/v1",
                   "/api/network/v1")
U, R = "/api/user/v1/users", "/api/role/v1/roles"


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    from conftest import Server, assert_stopped_cleanly
    base = tmp_path_factory.mktemp("toplevel")
    root = build_sys(base / "root").root
    link(root, "eth0", mac="00:21:28:a1:d9:68", speed=1000, duplex="full", device=True)
    (base / "storage.json").write_text(json.dumps(storage()))
    env = dict(os.environ, PATH=FAKE_BIN + os.pathsep + os.environ["PATH"],
               FAKE_STORAGE=str(base / "storage.json"))
    srv = Server(base / "state", "--sys-root", root, "--system-led-backend", "virtual",
                 "--disk-led-backend", "virtual", env=env).start()
    yield srv
    assert_stopped_cleanly(srv)


def calls(admin):
    """(method, path, body, status, keys) in the order a script meets them; keys None: no
    body (204)."""
    user, role, ws = unique("tl-user"), unique("tl-role"), unique("tl-ws")
    disk = expect(admin.get(HW + "/chassis/system/disk"), 200)["disks"][0]["href"]
    problem = expect(admin.get("/api/problem/v1/problems"), 200)["problems"][0]["href"]
    first = {k: expect(admin.get(f"{NET}/{k}"), 200)[k][0]["href"]
             for k in ("devices", "datalinks", "interfaces", "routes")}
    slashed = f"{AN}/datasets/arc.accesses[hit/miss]"
    out = [
        ("POST", "/api/access/v1", {"user": "admin", "password": None}, 201, ["access"]),
        ("GET", "/api/access/v1", None, 200, ["services"]),
        ("GET", "/api/system/v1/version", None, 200, ["version"]),
    ]
    for svc in ("system", "user", "role", "log", "hardware", "analytics", "problem",
                "storage", "network"):
        out.append(("GET", f"/api/{svc}/v1", None, 200, ["service"]))
    out += [
        ("POST", R, {"name": role, "authorizations": ["stat:read"]}, 201, ["role"]),
        ("GET", R, None, 200, ["roles"]),
        ("GET", f"{R}/{role}", None, 200, ["role"]),
        ("PUT", f"{R}/{role}", {"description": "x"}, 200, ["role"]),
        ("POST", U, {"name": user, "password": PASSWORD, "roles": [role]}, 201, ["user"]),
        ("GET", U, None, 200, ["users"]),
        ("GET", f"{U}/{user}", None, 200, ["user"]),
        ("PUT", f"{U}/{user}", {"fullname": "Top Level"}, 200, ["user"]),
        ("POST", f"{U}/{user}/tokens", {"name": "t"}, 201, ["token"]),
        ("GET", f"{U}/{user}/tokens", None, 200, ["tokens"]),
        ("GET", f"{U}/{user}/tokens/{{token}}", None, 200, ["token"]),
        ("DELETE", f"{U}/{user}/tokens/{{token}}", None, 204, None),
        # a browser kept signed in: its challenge, its list, its end
        ("POST", "/api/access/v1/challenge", None, 200, ["challenge"]),
        # (the credentials are the Basic ones every call here sends: the body adds the
        # device to them)
        ("POST", "/api/access/v1", {"device": Device().register()}, 201, ["access"]),
        ("GET", f"{U}/admin/devices", None, 200, ["devices"]),
        ("DELETE", f"{U}/admin/devices/{{device}}", None, 204, None),
        ("DELETE", f"{U}/{user}", None, 204, None),
        ("DELETE", f"{R}/{role}", None, 204, None),
        ("GET", "/api/log/v1/logs/audit", None, 200, ["logs"]),
        ("GET", HW + "/chassis", None, 200, ["chassis"]),
        ("GET", HW + "/chassis/system", None, 200, ["chassis"]),
        ("PUT", HW + "/chassis/system", {"locate": False}, 202, ["chassis"]),
        ("GET", HW + "/chassis/system/disk", None, 200, ["disks"]),
        ("GET", disk, None, 200, ["disk"]),
        ("PUT", disk, {"locate": False}, 202, ["disk"]),
        ("GET", HW + "/cluster", None, 200, ["cluster"]),
        ("GET", "/api/problem/v1/problems", None, 200, ["problems"]),
        ("GET", problem, None, 200, ["problem"]),
        ("GET", ST + "/pools", None, 200, ["pools"]),
        ("GET", ST + "/pools/tank", None, 200, ["pool"]),
        ("GET", ST + "/pools/tank/projects", None, 200, ["projects"]),
        ("GET", ST + "/pools/tank/projects/proj1", None, 200, ["project"]),
        ("GET", ST + "/pools/tank/projects/proj1/filesystems", None, 200, ["filesystems"]),
        ("GET", ST + "/pools/tank/projects/proj1/filesystems/home", None, 200, ["filesystem"]),
        ("GET", ST + "/pools/tank/projects/proj1/luns", None, 200, ["luns"]),
        ("GET", ST + "/pools/tank/projects/proj1/luns/vol1", None, 200, ["lun"]),
        ("GET", ST + "/projects", None, 200, ["projects"]),
        ("GET", ST + "/filesystems", None, 200, ["filesystems"]),
        ("GET", ST + "/luns", None, 200, ["luns"]),
        ("GET", f"{NET}/devices", None, 200, ["devices"]),
        ("GET", first["devices"], None, 200, ["devices"]),   # the guide's Get Network Device
        ("GET", f"{NET}/datalinks", None, 200, ["datalinks"]),
        ("GET", first["datalinks"], None, 200, ["datalink"]),
        ("GET", f"{NET}/interfaces", None, 200, ["interfaces"]),
        ("GET", first["interfaces"], None, 200, ["interface"]),
        ("GET", f"{NET}/routes", None, 200, ["routes"]),
        ("GET", first["routes"], None, 200, ["route"]),
        ("GET", AN + "/datasets", None, 200, ["datasets"]),
        ("POST", AN + "/datasets", {"statistic": "arc.accesses", "drilldown": "hit/miss"},
         201, ["dataset"]),
        ("GET", slashed, None, 200, ["dataset"]),
        ("GET", slashed + "/data?seconds=2", None, 200, ["data"]),
        ("PUT", AN + "/datasets/" + quote("arc.accesses[hit|miss]"), {"suspended": False},
         200, ["dataset"]),
        ("DELETE", AN + "/datasets/" + quote("arc.accesses[hit|miss]"), None, 204, None),
        ("GET", AN + "/datasets/cpu.utilization", None, 200, ["dataset"]),
        ("GET", AN + "/datasets/cpu.utilization/data?start=-1", None, 200, ["data"]),
        ("GET", AN + "/datasets/cpu.utilization/data?start=-3", None, 200, ["data"]),
        ("GET", AN + "/settings", None, 200, ["settings"]),
        ("PUT", AN + "/settings", {"retain_second_data": 24}, 200, ["settings"]),
        ("POST", AN + "/worksheets", {"name": ws}, 201, ["worksheet"]),
        ("GET", AN + "/worksheets?limit=1", None, 200, ["worksheets"]),
        ("GET", f"{AN}/worksheets/name={ws}", None, 200, ["worksheet"]),
        ("PUT", f"{AN}/worksheets/name={ws}", {"name": ws}, 200, ["worksheet"]),
        ("POST", f"{AN}/worksheets/name={ws}/datasets", {"name": "io.ops"}, 201, ["dataset"]),
        ("GET", f"{AN}/worksheets/name={ws}/datasets", None, 200, ["datasets"]),
        ("GET", f"{AN}/worksheets/name={ws}/datasets/dataset-000", None, 200, ["dataset"]),
        ("PUT", f"{AN}/worksheets/name={ws}/datasets/dataset-000", {"seconds": 60}, 200,
         ["dataset"]),
        ("DELETE", f"{AN}/worksheets/name={ws}/datasets/dataset-000", None, 204, None),
        ("DELETE", f"{AN}/worksheets/name={ws}", None, 204, None),
        ("DELETE", "/api/access/v1", None, 204, None),
    ]
    return out


def template(method, path):
    path = path.split("?")[0]
    found = sorted((p for m, p, *_ in routes() if m == method and pattern_regex(p).match(path)),
                   key=lambda p: p.count("{"))
    assert found, (method, path)
    return found[0]


def test_every_appliance_answer_has_exactly_the_appliances_top_level_keys(box):
    admin = box.admin()
    admin.http.auth = ("admin", box.admin_password)      # as the scripts: Basic everywhere
    seen, wrong, token, device = set(), [], None, None
    for method, path, body, status, keys in calls(admin):
        if body and "password" in body and body["password"] is None:
            body = dict(body, password=box.admin_password)
        path = path.replace("{token}", str(token)).replace("{device}", str(device))
        resp = admin.request(method, path, json=body) if body is not None else \
            admin.request(method, path)
        if resp.status_code != status:
            wrong.append(f"{method} {path}: {resp.status_code} {resp.text[:200]}")
            continue
        doc = resp.json() if resp.content else None
        got = None if doc is None else list(doc)
        if got != keys:
            wrong.append(f"{method} {path}: top level {got}, want {keys}")
        if keys == ["token"]:
            token = doc["token"]["id"]
        if keys == ["access"] and "device" in doc["access"]:
            device = doc["access"]["device"]["id"]
        seen.add((method, template(method, path)))
    assert not wrong, "\n".join(wrong)
    table = {(m, p) for m, p, svc, *_ in routes() if svc in APPLIANCE} - SPINDLES_OWN
    assert table - seen == set(), f"appliance routes not held to the rule: {table - seen}"


def test_every_fault_is_the_fault_alone(box):
    c = box.client()
    c.http.auth = ("admin", box.admin_password)
    for method, path, status in [("GET", ST + "/pools/nope", 404),
                                 ("GET", AN + "/datasets/no.such", 404),
                                 ("GET", AN + "/datasets/io.ops/data?start=x", 400),
                                 ("PUT", ST + "/pools/tank", 405),
                                 ("GET", NET + "/routes?x=1", 400)]:
        resp = c.request(method, path)
        assert resp.status_code == status, (method, path, resp.text)
        doc = resp.json()
        # the appliance's three keys, details as it says them; field (Spindle's, for
        # scripts) only repeats the part of details before ": "
        assert list(doc) == ["fault"], doc
        assert set(doc["fault"]) - {"field"} == {"message", "details", "code"}, doc
        if "field" in doc["fault"]:
            assert doc["fault"]["details"].startswith(doc["fault"]["field"] + ": "), doc
        assert doc["fault"]["code"] == status
    # an unknown dataset answers the appliance's fault, naming it
    doc = c.get(AN + "/datasets/nfs3.ops/data?start=now&seconds=1").json()
    assert doc["fault"]["message"] == "ERR_NOT_FOUND" and "nfs3.ops" in doc["fault"]["details"]
