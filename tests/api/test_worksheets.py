# SPDX-License-Identifier: ISC
"""Worksheets: saved sets of dataset views. Life cycle, the rules (dataset names from the
catalog, names unique per owner, who may change what), bad input as a table, persistence,
listings as pages of summaries, and what one owner's worksheets may take."""
import json
import re
import sqlite3
import time
import uuid

import pytest

from conftest import (AUDIT, PASSWORD, expect, expect_fault, iso, make_role, make_user,
                      parse_time, unique)

WS = "/api/analytics/v1/worksheets"
# Two names from the dataset catalog (GET /api/analytics/v1/datasets).
DISK_OPS = "io.ops[disk]"
CPU_MODE = "cpu.utilization[mode]"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
NO_SUCH = "00000000-0000-4000-8000-000000000000"
SUMMARY_KEYS = {"uuid", "name", "owner", "ctime", "mtime", "dataset_count", "href"}
BYTES_PER_OWNER = 4 << 20           # WORKSHEET_BYTES_PER_OWNER (server/analytics/worksheets.h)
LIST_DEFAULT, LIST_MAX = 100, 1000  # WORKSHEETS_LIST_DEFAULT, WORKSHEETS_LIST_MAX


def create(client, name=None, datasets=None, status=201):
    body = {"name": name or unique("ws")}
    if datasets is not None:
        body["datasets"] = datasets
    return expect(client.post(WS, json=body), status)["worksheet"]


def ws_url(ws):
    return f"{WS}/{ws['uuid']}"


def summary(ws):
    """What a listing shows of a worksheet."""
    return {**{k: ws[k] for k in SUMMARY_KEYS - {"dataset_count"}},
            "dataset_count": len(ws["datasets"])}


def list_all(client, **params):
    """The whole listing, page after page as each page's Link rel="next" says."""
    resp = client.get(WS, params=params)
    items = expect(resp, 200)["worksheets"]
    while "next" in resp.links:
        resp = client.get(resp.links["next"]["url"])
        items += expect(resp, 200)["worksheets"]
    return items


def page(client, path=WS, **params):
    """One page: (its document, the path of the next page or None)."""
    resp = client.get(path, params=params)
    doc = expect(resp, 200)
    return doc, resp.links.get("next", {}).get("url")


def largest(tag=""):
    """Datasets of the largest shape: 64 views of 64 drilldowns of 128 bytes (~540 KB)."""
    return [{"name": DISK_OPS, "seconds": 31536000,
             "drilldowns": [f"{tag}{i:02d}-{j:02d}".ljust(128, "x") for j in range(64)]}
            for i in range(64)]


def test_create_get_list(clients):
    op, mon = clients["operator"], clients["monitor"]
    name = unique("disks")
    resp = op.post(WS, json={"name": name, "datasets": [
        {"name": DISK_OPS, "drilldowns": ["sda", "sdb"], "seconds": 300},
        {"name": CPU_MODE}]})
    ws = expect(resp, 201)["worksheet"]
    assert set(ws) == {"uuid", "name", "owner", "ctime", "mtime", "datasets", "href"}
    assert UUID_RE.match(ws["uuid"]), ws["uuid"]
    assert ws["name"] == name and ws["owner"] == "op"
    assert parse_time(ws["ctime"]) == parse_time(ws["mtime"])
    # Defaults filled in: no drilldowns, a minute.
    assert ws["datasets"] == [
        {"name": DISK_OPS, "drilldowns": ["sda", "sdb"], "seconds": 300},
        {"name": CPU_MODE, "drilldowns": [], "seconds": 60}]
    assert ws["href"] == ws_url(ws)
    assert resp.headers["Location"] == ws["href"]

    # Anyone with worksheet:read reads every worksheet, the owner's or not.
    assert expect(mon.get(ws_url(ws)), 200)["worksheet"] == ws
    listing = list_all(mon)
    assert [w for w in listing if w["uuid"] == ws["uuid"]] == [summary(ws)]
    assert all(set(w) == SUMMARY_KEYS and w["href"] == ws_url(w) for w in listing)


def test_list_by_owner(clients):
    op, admin = clients["operator"], clients["admin"]
    mine = create(op)
    theirs = create(admin)
    by_op = list_all(admin, owner="op")
    assert mine["uuid"] in {w["uuid"] for w in by_op}
    assert all(w["owner"] == "op" for w in by_op)
    assert theirs["uuid"] not in {w["uuid"] for w in by_op}
    # Ordered by owner, then name.
    listing = list_all(admin)
    keys = [(w["owner"], w["name"]) for w in listing]
    assert keys == sorted(keys)
    assert page(admin, owner=unique("nobody")) == ({"worksheets": []}, None)
    expect_fault(admin.get(WS, params={"sort": "name"}), 400, "ERR_UNKNOWN_ARG", "sort")


def test_update(clients):
    op = clients["operator"]
    ws = create(op, datasets=[{"name": CPU_MODE}])
    time.sleep(1.1)     # so mtime can move
    new_name = unique("renamed")
    upd = expect(op.put(ws_url(ws), json={"name": new_name}), 200)["worksheet"]
    assert upd["name"] == new_name and upd["datasets"] == ws["datasets"]   # partial: kept
    assert upd["uuid"] == ws["uuid"] and upd["owner"] == "op" and upd["ctime"] == ws["ctime"]
    assert parse_time(upd["mtime"]) > parse_time(ws["mtime"])

    views = [{"name": DISK_OPS, "drilldowns": ["nvme0n1"], "seconds": 3600}]
    upd = expect(op.put(ws_url(ws), json={"datasets": views}), 200)["worksheet"]
    assert upd["datasets"] == views and upd["name"] == new_name
    upd = expect(op.put(ws_url(ws), json={"datasets": []}), 200)["worksheet"]
    assert upd["datasets"] == []
    assert expect(op.get(ws_url(ws)), 200)["worksheet"] == upd

    # saved paused: where the window ends goes with it (any ISO 8601 UTC spelling, kept in
    # one); null or absent is live
    views = [{"name": CPU_MODE, "seconds": 120, "end": "2026-12-06T10:00:00+00:00"},
             {"name": DISK_OPS, "seconds": 120, "end": None}]
    upd = expect(op.put(ws_url(ws), json={"datasets": views}), 200)["worksheet"]
    assert upd["datasets"][0] == {"name": CPU_MODE, "drilldowns": [], "seconds": 120,
                                  "end": "2026-12-06T10:00:00Z"}
    assert "end" not in upd["datasets"][1]
    assert expect(op.get(ws_url(ws)), 200)["worksheet"]["datasets"] == upd["datasets"]


def test_uuid_case_insensitive(clients):
    op = clients["operator"]
    ws = create(op)
    assert expect(op.get(f"{WS}/{ws['uuid'].upper()}"), 200)["worksheet"] == ws


def test_delete(clients):
    op = clients["operator"]
    ws = create(op)
    resp = op.delete(ws_url(ws))
    assert resp.status_code == 204 and not resp.content
    expect_fault(op.get(ws_url(ws)), 404, "ERR_NOT_FOUND", "uuid")
    expect_fault(op.delete(ws_url(ws)), 404, "ERR_NOT_FOUND", "uuid")
    assert ws["uuid"] not in {w["uuid"] for w in list_all(op)}


def test_names_unique_per_owner(clients):
    op, admin = clients["operator"], clients["admin"]
    name = unique("same")
    first = create(op, name)
    expect_fault(op.post(WS, json={"name": name}), 409, "ERR_OBJECT_EXISTS", "name")
    # Another owner may use the name.
    other = create(admin, name)
    assert other["owner"] == "admin" and other["uuid"] != first["uuid"]
    # Renaming onto a name the owner uses is refused too, and changes nothing.
    second = create(op)
    expect_fault(op.put(ws_url(second), json={"name": name}), 409, "ERR_OBJECT_EXISTS", "name")
    assert expect(op.get(ws_url(second)), 200)["worksheet"] == second
    # Keeping one's own name is no conflict.
    expect(op.put(ws_url(first), json={"name": name}), 200)


def test_owner_or_admin_changes(server, clients):
    op, admin, mon = clients["operator"], clients["admin"], clients["monitor"]
    ws = create(admin)
    # Another user with worksheet:modify may read it, not change or delete it.
    expect_fault(op.put(ws_url(ws), json={"name": unique("x")}), 403, "ERR_DENIED", "owner")
    expect_fault(op.delete(ws_url(ws)), 403, "ERR_DENIED", "owner")
    assert expect(op.get(ws_url(ws)), 200)["worksheet"] == ws
    # user:modify (admin) manages anyone's; the owner stays who it was.
    theirs = create(op)
    upd = expect(admin.put(ws_url(theirs), json={"name": unique("fixed")}), 200)["worksheet"]
    assert upd["owner"] == "op"
    expect(admin.delete(ws_url(theirs)), 204)
    # A monitor reads but never writes (worksheet:modify).
    expect_fault(mon.post(WS, json={"name": unique("m")}), 403, "ERR_DENIED")
    expect_fault(mon.put(ws_url(ws), json={"name": "m"}), 403, "ERR_DENIED")
    expect_fault(mon.delete(ws_url(ws)), 403, "ERR_DENIED")
    # Without worksheet:read, not even reading.
    stat_only = make_user(admin, [make_role(admin, authorizations=["stat:read"])])
    c = server.login_client(stat_only, PASSWORD)
    expect_fault(c.get(WS), 403, "ERR_DENIED", "worksheet:read")
    expect_fault(c.get(ws_url(ws)), 403, "ERR_DENIED", "worksheet:read")


def test_changes_are_audited(clients):
    op, admin = clients["operator"], clients["admin"]
    start = iso(time.time() - 1)
    ws = create(op)
    expect(op.put(ws_url(ws), json={"name": unique("a")}), 200)
    expect_fault(clients["operator"].delete(ws_url(create(admin))), 403, "ERR_DENIED")
    expect(op.delete(ws_url(ws)), 204)
    logs = expect(admin.get(AUDIT, params={"start": start, "limit": 1000}), 200)["logs"]
    mine = [(e["action"], e["user"]) for e in logs if e["target"] == ws["uuid"]]
    assert mine == [("worksheet.create", "op"), ("worksheet.update", "op"),
                    ("worksheet.delete", "op")]
    assert any(e["action"] == "worksheet.delete" and e["user"] == "op"
               and e["target"] != ws["uuid"] for e in logs)


@pytest.mark.parametrize("path", [NO_SUCH, "not-a-uuid", NO_SUCH + "0", "%ff%fe"])
def test_unknown_uuid(clients, path):
    op = clients["operator"]
    expect_fault(op.get(f"{WS}/{path}"), 404, "ERR_NOT_FOUND", "uuid")
    expect_fault(op.put(f"{WS}/{path}", json={"name": "x"}), 404, "ERR_NOT_FOUND", "uuid")
    expect_fault(op.delete(f"{WS}/{path}"), 404, "ERR_NOT_FOUND", "uuid")


# (body, status, message, details prefix): every field's rules, each refusal naming its field.
BAD = [
    ({}, 400, "ERR_MISSING_ARG", "name"),
    ({"name": ""}, 400, "ERR_INVALID_ARG", "name"),
    ({"name": "   "}, 400, "ERR_INVALID_ARG", "name"),
    ({"name": "x" * 129}, 400, "ERR_INVALID_ARG", "name"),
    ({"name": "tab\there"}, 400, "ERR_INVALID_ARG", "name"),
    ({"name": 7}, 400, "ERR_INVALID_ARG", "name"),
    ({"name": "n", "owner": "admin"}, 400, "ERR_UNKNOWN_ARG", "owner"),
    ({"name": "n", "datasets": {}}, 400, "ERR_INVALID_ARG", "datasets"),
    ({"name": "n", "datasets": [{"name": CPU_MODE}] * 65}, 400, "ERR_INVALID_ARG", "datasets"),
    ({"name": "n", "datasets": ["io.ops[disk]"]}, 400, "ERR_INVALID_ARG", "datasets[0]"),
    ({"name": "n", "datasets": [{}]}, 400, "ERR_MISSING_ARG", "datasets[0].name"),
    ({"name": "n", "datasets": [{"name": CPU_MODE}, {"name": "no.such[thing]"}]}, 400,
     "ERR_INVALID_ARG", "datasets[1].name"),
    ({"name": "n", "datasets": [{"name": 5}]}, 400, "ERR_INVALID_ARG", "datasets[0].name"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "color": "red"}]}, 400, "ERR_UNKNOWN_ARG",
     "datasets[0].color"),
    # A long key quoted in the fault is cut on a character, never inside one.
    ({"name": "n", "datasets": [{"name": CPU_MODE, "é" * 80: 1}]}, 400, "ERR_UNKNOWN_ARG",
     "datasets[0]." + "é" * 50),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "seconds": 0}]}, 400, "ERR_INVALID_ARG",
     "datasets[0].seconds"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "seconds": 31536001}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].seconds"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "seconds": "60"}]}, 400, "ERR_INVALID_ARG",
     "datasets[0].seconds"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "seconds": 1.5}]}, 400, "ERR_INVALID_ARG",
     "datasets[0].seconds"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "end": "yesterday"}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].end"),
    ({"name": "n", "datasets": [{"name": CPU_MODE, "end": 1765015200}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].end"),
    ({"name": "n", "datasets": [{"name": DISK_OPS, "drilldowns": "sda"}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].drilldowns"),
    ({"name": "n", "datasets": [{"name": DISK_OPS, "drilldowns": ["sda", "sda"]}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].drilldowns[1]"),
    ({"name": "n", "datasets": [{"name": DISK_OPS, "drilldowns": [""]}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].drilldowns[0]"),
    ({"name": "n", "datasets": [{"name": DISK_OPS, "drilldowns": [3]}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].drilldowns[0]"),
    ({"name": "n", "datasets": [{"name": DISK_OPS, "drilldowns": ["d"] * 65}]}, 400,
     "ERR_INVALID_ARG", "datasets[0].drilldowns"),
]


@pytest.mark.parametrize("body,status,message,field", BAD,
                         ids=[f"{i}-{b[3]}" for i, b in enumerate(BAD)])
def test_bad_input(clients, body, status, message, field):
    op = clients["operator"]
    fault = expect_fault(op.post(WS, json=body), status, message)
    assert fault["details"].startswith(field + ":"), fault["details"]
    if body.get("name") != "n":
        return
    # The same rules hold on update, and a refused update changes nothing.
    ws = create(op)
    update = {k: v for k, v in body.items() if k != "name"}
    fault = expect_fault(op.put(ws_url(ws), json=update), status, message)
    assert fault["details"].startswith(field + ":"), fault["details"]
    assert expect(op.get(ws_url(ws)), 200)["worksheet"] == ws


def test_dataset_names_follow_the_catalog(spawn):
    """A dataset is usable once it is collected (POST .../datasets), not before; a
    worksheet keeps the catalog's spelling."""
    srv = spawn()
    admin = srv.admin()
    views = [{"name": "io.latency[disk]"}]
    fault = expect_fault(admin.post(WS, json={"name": "lat", "datasets": views}), 400,
                         "ERR_INVALID_ARG")
    assert fault["details"].startswith("datasets[0].name:"), fault
    expect(admin.post("/api/analytics/v1/datasets",
                      json={"statistic": "io.latency", "drilldown": "disk"}), 201)
    ws = create(admin, "lat", views)
    assert ws["datasets"] == [{"name": "io.latency[disk]", "drilldowns": [], "seconds": 60}]


def test_not_json(clients):
    op = clients["operator"]
    expect_fault(op.post(WS, data=b"name=x", headers={"Content-Type": "text/plain"}), 415,
                 "ERR_UNSUPPORTED_MEDIA")
    expect_fault(op.post(WS, data=b'{"name": "a", "name": "b"}',
                         headers={"Content-Type": "application/json"}), 400, "ERR_INVALID_ARG")


def test_survive_restart(spawn):
    srv = spawn()
    admin = srv.admin()
    ws = create(admin, datasets=[{"name": DISK_OPS, "drilldowns": ["sda"], "seconds": 600}])
    srv.stop()
    srv.start()
    assert expect(srv.admin().get(ws_url(ws)), 200)["worksheet"] == ws


# ---- listings are pages of summaries; what one owner may store ----------------------

def stored_bytes(name, datasets):
    """What a worksheet counts against its owner's cap: its name and its datasets as
    stored (compact JSON, drilldowns and seconds filled in)."""
    norm = [{"name": d["name"], "drilldowns": d.get("drilldowns", []),
             "seconds": d.get("seconds", 60)} for d in datasets]
    return len(name.encode()) + len(json.dumps(norm, separators=(",", ":"),
                                               ensure_ascii=False).encode())


def test_list_pages(spawn):
    """A listing is a page of summaries in (owner, name) order: limit of them (100 unless
    asked, 1000 at most) from the start-th on; the Link header's rel="next" is the path of
    the page after, and absent on the last: "worksheets" is the answer's one key, as the
    appliance's."""
    srv = spawn()
    admin = srv.admin()
    other = make_user(admin, ["operator"])
    mine = [create(admin, f"w{i:03d}", [{"name": CPU_MODE}] * (i % 3)) for i in range(105)]
    theirs = [create(srv.login_client(other, PASSWORD), f"t{i}") for i in range(3)]
    everything = sorted(mine + theirs, key=lambda w: (w["owner"], w["name"]))

    doc, nxt = page(admin)
    assert list(doc) == ["worksheets"]
    assert doc["worksheets"] == [summary(w) for w in everything[:LIST_DEFAULT]]
    assert nxt == f"{WS}?start={LIST_DEFAULT}&limit={LIST_DEFAULT}"
    assert page(admin, nxt) == (
        {"worksheets": [summary(w) for w in everything[LIST_DEFAULT:]]}, None)
    assert page(admin, limit=LIST_MAX) == (
        {"worksheets": [summary(w) for w in everything]}, None)
    assert list_all(admin, limit=7) == [summary(w) for w in everything]
    assert page(admin, start=104, limit=1) == (
        {"worksheets": [summary(everything[104])]}, f"{WS}?start=105&limit=1")
    assert page(admin, start=500) == ({"worksheets": []}, None)

    # The owner filter stays in the next page's path.
    doc, nxt = page(admin, owner="admin", limit=50)
    assert nxt == f"{WS}?start=50&limit=50&owner=admin"
    assert list_all(admin, owner=other, limit=2) == [summary(w) for w in theirs]

    for params, field in [({"start": -1}, "start"), ({"start": "x"}, "start"),
                          ({"start": "1.5"}, "start"), ({"start": ""}, "start"),
                          ({"limit": 0}, "limit"), ({"limit": LIST_MAX + 1}, "limit"),
                          ({"limit": "ten"}, "limit")]:
        fault = expect_fault(admin.get(WS, params=params), 400, "ERR_INVALID_ARG")
        assert fault["details"].startswith(field + ":"), (params, fault)


def test_what_one_owner_may_store(spawn):
    """One owner's worksheets take at most 4 MiB (names and datasets as stored). A create
    or an update that would pass it is 413 ERR_OVER_LIMIT naming the field, the total and
    the cap, and changes nothing; what does not grow the total is allowed; other owners
    have their own."""
    srv = spawn()
    admin = srv.admin()
    other = srv.login_client(make_user(admin, ["operator"]), PASSWORD)
    big = [create(admin, f"big{i}", largest(str(i))) for i in range(7)]
    used = sum(stored_bytes(w["name"], w["datasets"]) for w in big)
    assert used + stored_bytes("big7", largest()) > BYTES_PER_OWNER > used

    fault = expect_fault(admin.post(WS, json={"name": "big7", "datasets": largest()}), 413,
                         "ERR_OVER_LIMIT")
    assert fault["details"].startswith("datasets: admin's worksheets would take "
                                       f"{used + stored_bytes('big7', largest())} bytes, "
                                       f"over the cap of {BYTES_PER_OWNER} bytes"), fault
    assert [w["name"] for w in list_all(admin, owner="admin")] == [w["name"] for w in big]

    small = create(admin, "small", [{"name": CPU_MODE}])
    fault = expect_fault(admin.put(ws_url(small), json={"datasets": largest()}), 413,
                         "ERR_OVER_LIMIT")
    assert fault["details"].startswith("datasets:"), fault
    assert expect(admin.get(ws_url(small)), 200)["worksheet"] == small
    # Same size, smaller, renamed within the cap: fine.
    expect(admin.put(ws_url(big[0]), json={"datasets": largest("x")}), 200)
    expect(admin.put(ws_url(big[1]), json={"datasets": largest()[:1]}), 200)
    expect(admin.put(ws_url(big[2]), json={"name": "big2-renamed"}), 200)
    # Another owner stores as much again; a holder of user:modify changing it counts
    # against that owner, not itself.
    theirs = create(other, "big", largest())
    expect(admin.put(ws_url(theirs), json={"datasets": largest("y")}), 200)
    # Room made, the refused one fits.
    expect(admin.delete(ws_url(big[3])), 204)
    create(admin, "big7", largest())


def test_a_listing_of_the_largest_worksheets_stays_small(spawn):
    """256 worksheets of the largest shape (138 MB of datasets), stored before listings
    were summaries and the cap existed (a database of schema version 5, upgraded at
    start): a page of all of them is tens of KB; the owner, far over the cap, may shrink
    and delete but not grow."""
    srv = spawn()
    admin = srv.admin()
    first = create(admin, "big000", largest())
    srv.stop()
    with sqlite3.connect(srv.state_dir / "spindle.db") as c:
        c.execute("DROP TABLE devices")  # step 9
        c.execute("DELETE FROM analytics_datasets WHERE name = 'io.disks[utilization]'")  # step 8
        c.execute("UPDATE analytics_datasets SET name = 'io.disks[utilization]',"
                  " statistic = 'io.disks', drilldown = 'utilization'"
                  " WHERE name = 'io.busy[disk]'")
        c.execute("DROP INDEX bench_runs_sweep")  # step 7
        for column in ("environment", "sweep", "imported"):
            c.execute(f"ALTER TABLE bench_runs DROP COLUMN {column}")
        c.execute("DROP TABLE bench_sweeps")
        c.execute("DROP INDEX worksheets_summary")  # step 6
        c.execute("ALTER TABLE worksheets DROP COLUMN bytes")
        c.execute("ALTER TABLE worksheets DROP COLUMN dataset_count")
        c.executemany("INSERT INTO worksheets (uuid, name, owner, ctime, mtime, datasets)"
                      " SELECT ?, ?, owner, ctime, mtime, datasets FROM worksheets"
                      " WHERE uuid = ?",
                      [(str(uuid.uuid4()), f"big{i:03d}", first["uuid"]) for i in range(1, 256)])
        c.execute("PRAGMA user_version = 5")
    c.close()
    srv.start()
    admin = srv.admin()

    resp = admin.get(WS, params={"limit": LIST_MAX})
    doc = expect(resp, 200)
    assert [w["name"] for w in doc["worksheets"]] == [f"big{i:03d}" for i in range(256)]
    assert all(set(w) == SUMMARY_KEYS and w["dataset_count"] == 64 for w in doc["worksheets"])
    assert "next" not in resp.links and list(doc) == ["worksheets"]
    assert len(resp.content) < 256 * 400, len(resp.content)
    assert expect(admin.get(ws_url(first)), 200)["worksheet"] == first

    expect_fault(admin.post(WS, json={"name": "more"}), 413, "ERR_OVER_LIMIT", "256")
    expect(admin.delete(doc["worksheets"][1]["href"]), 204)
    fault = expect_fault(admin.post(WS, json={"name": "more"}), 413, "ERR_OVER_LIMIT")
    assert fault["details"].startswith("name: admin's worksheets would take"), fault
    expect(admin.put(ws_url(first), json={"datasets": [{"name": CPU_MODE}]}), 200)
    listing = list_all(admin)
    assert len(listing) == 255 and listing[0]["dataset_count"] == 1
