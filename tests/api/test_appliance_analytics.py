# SPDX-License-Identifier: ISC
"""Analytics as the ZFS Storage Appliance RESTful API Guide writes it (chapter Analytics
Services): its example requests sent as it writes them (compact start times, raw brackets
and slashes in dataset names, worksheets named name=...), and the answers checked against
its keys and types. Spindle's own fields may sit inside the objects, never beside the
top-level keys a real appliance answers (the data answer's one key is "data")."""
import http.client
import json
import time

from conftest import PASSWORD, SLOW, expect, expect_fault, make_user, unique

AN = "/api/analytics/v1"

# The datasets a fresh appliance has that this box can measure (the guide's list, less the
# protocols Spindle does not serve and the ARC's, which need ZFS).
FRESH = ["cpu.utilization", "cpu.utilization[mode]", "io.bytes", "io.bytes[op]", "io.ops",
         "io.ops[disk]", "io.ops[op]", "nic.kilobytes", "nic.kilobytes[device]",
         "nic.kilobytes[direction]"]
DATASET_KEYS = {"name": str, "grouping": str, "explanation": str, "incore": int, "size": int,
                "suspended": bool, "activity": str, "dataset": str, "href": str}
SAMPLE_KEYS = {"sample": int, "samples": int, "startTime": str, "data": dict}
COMPACT = "%Y%m%dT%H:%M:%S"


def compact(epoch):
    return time.strftime(COMPACT, time.gmtime(epoch))


def check_types(obj, keys):
    for key, kind in keys.items():
        assert key in obj, (key, obj)
        assert isinstance(obj[key], kind) and not (kind is int and isinstance(obj[key], bool)), \
            (key, obj[key])


def check_sample(s):
    check_types(s, SAMPLE_KEYS)
    assert s["samples"] == s["sample"] + 1, s
    assert time.strptime(s["startTime"], COMPACT)
    value = s["data"]["value"]
    assert isinstance(value, (int, float)), s
    for kv in s["data"].get("data", []):
        assert set(kv) >= {"key", "value"} and isinstance(kv["key"], str), kv


def raw_get(server, token, path):
    """GET with the path sent byte for byte (requests would encode the brackets), on the
    plain loopback listener: (status, document)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    try:
        conn.request("GET", path, headers={"X-Auth-Session": token})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def test_list_datasets_has_a_fresh_appliances(admin):
    """GET /api/analytics/v1/datasets: every item carries dataset, href and name; the
    undrilled datasets a fresh appliance has are there."""
    doc = expect(admin.get(AN + "/datasets"), 200)
    names = {d["name"] for d in doc["datasets"]}
    assert set(FRESH) <= names, set(FRESH) - names
    for d in doc["datasets"]:
        check_types(d, {"dataset": str, "href": str, "name": str})
        assert d["dataset"].startswith("dataset-"), d


def test_get_dataset_as_the_guide_writes_it(admin):
    """GET /api/analytics/v1/datasets/nfs4.ops, here cpu.utilization: the guide's
    properties with its types."""
    d = expect(admin.get(AN + "/datasets/cpu.utilization"), 200)["dataset"]
    check_types(d, DATASET_KEYS)
    assert d["name"] == "cpu.utilization" and d["activity"] == "none"
    assert d["href"] == AN + "/datasets/cpu.utilization"


def test_raw_brackets_and_slashes_in_dataset_names(server, admin):
    """Names as the guide writes them in URLs: brackets unencoded, and the slash of
    [hit/miss] as the appliance's href has it; the encoded forms still work."""
    for path in ("io.ops[op]", "io.ops%5Bop%5D", "nic.kilobytes[direction]"):
        status, doc = raw_get(server, admin.token, f"{AN}/datasets/{path}")
        assert status == 200, doc
        assert doc["dataset"]["name"] == path.replace("%5B", "[").replace("%5D", "]")
        status, doc = raw_get(server, admin.token,
                              f"{AN}/datasets/{path}/data?start=now&seconds=1")
        assert status == 200 and "data" in doc, doc
    # a dataset whose name holds a slash, made here as the ARC's are on a ZFS box
    made = admin.post(AN + "/datasets", json={"statistic": "arc.accesses",
                                              "drilldown": "hit/miss"})
    assert made.status_code in (201, 409), made.text
    status, doc = raw_get(server, admin.token, AN + "/datasets/arc.accesses[hit/miss]")
    assert status == 200 and doc["dataset"]["name"] == "arc.accesses[hit/miss]", doc
    status, doc = raw_get(server, admin.token,
                          AN + "/datasets/arc.accesses[hit/miss]/data?seconds=3")
    assert status == 200 and isinstance(doc["data"], list), doc
    # as requests sends it: brackets encoded, the slash not
    expect(admin.get(AN + "/datasets/arc.accesses[hit/miss]"), 200)


def test_create_dataset_named_whole(admin):
    """POST {"statistic": "io.latency[disk]"}: the appliance names the whole dataset as the
    statistic. (Deleted again after, as other tests make it themselves.)"""
    path = AN + "/datasets/io.latency%5Bdisk%5D"
    assert admin.delete(path).status_code in (204, 404)
    made = admin.post(AN + "/datasets", json={"statistic": "io.latency[disk]"})
    d = expect(made, 201)["dataset"]
    check_types(d, DATASET_KEYS)
    assert d["name"] == "io.latency[disk]" and made.headers["Location"] == d["href"]
    expect(admin.delete(path), 204)
    expect_fault(admin.post(AN + "/datasets", json={"statistic": "io.ops[nothing]"}), 400,
                 details="drilldown")


def test_data_one_second_compact_start(admin):
    """?start=20130912T21:42:38 (a second in the past) answers that second, the sample
    itself under "data", with the guide's sample, samples, startTime and data.value."""
    # a server just started (the first file on its worker) has no second behind it yet:
    # the first one it has, 2 s back
    deadline = time.monotonic() + 15 * SLOW
    while True:
        t = int(time.time()) - 2
        doc = expect(admin.get(f"{AN}/datasets/cpu.utilization/data?start={compact(t)}"), 200)
        s = doc["data"]
        if s is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    check_sample(s)
    assert s["startTime"] == compact(t) and s["sample"] == t
    # a real appliance answers "data" alone (the guide's YAML shows a "size" no JSON
    # answer has): a poller reads each top-level value's ["data"]["value"]
    assert list(doc) == ["data"], doc
    for data in doc.values():
        assert isinstance(data["data"]["value"], (int, float))


def test_data_start_now_streams_three_seconds(admin):
    """The guide's ?start=now&seconds=3: the server waits for each sample; three samples,
    consecutive indexes, and "data" the one key."""
    doc = expect(admin.get(f"{AN}/datasets/io.ops[op]/data?start=now&seconds=3"), 200)
    assert list(doc) == ["data"] and len(doc["data"]) == 3, doc
    for s in doc["data"]:
        check_sample(s)
    idx = [s["sample"] for s in doc["data"]]
    assert idx == list(range(idx[0], idx[0] + 3))
    for s in doc["data"]:
        # the appliance's two, and the discards and flushes Linux counts apart
        assert {kv["key"] for kv in s["data"]["data"]} <= {"read", "write", "discard", "flush"}


def test_data_drilldown_keys_min_max(admin):
    """A drilled dataset: data.value with data.data[] of {key, value}, and min/max."""
    time.sleep(1.5)
    doc = expect(admin.get(f"{AN}/datasets/cpu.utilization[mode]/data?start=-1"), 200)
    s = doc["data"]
    check_sample(s)
    assert {"min", "max"} <= set(s["data"]) and s["data"]["data"]
    assert {kv["key"] for kv in s["data"]["data"]} >= {"user", "system", "idle"}


def test_bad_start_names_the_field(admin):
    for bad in ("2013091T21:42:38", "20130912T25:42:38", "20130912 21:42:38"):
        expect_fault(admin.get(f"{AN}/datasets/io.ops/data?start={bad}"), 400, details="start")


def test_worksheets_as_the_guide_writes_them(admin):
    """Create {"name"}, list (href and uuid per item), get, list/add/modify its datasets,
    by uuid and by name=..., then destroy by name=..."""
    name = unique("myworksheet")
    resp = admin.post(AN + "/worksheets", json={"name": name})
    ws = expect(resp, 201)["worksheet"]
    check_types(ws, {"uuid": str, "name": str, "owner": str, "ctime": str, "mtime": str,
                     "href": str})
    assert resp.headers["Location"] == ws["href"]
    listed = expect(admin.get(AN + "/worksheets"), 200)["worksheets"]
    assert {"href": ws["href"], "uuid": ws["uuid"]}.items() <= \
        next(w for w in listed if w["uuid"] == ws["uuid"]).items()
    by_name = f"{AN}/worksheets/name={name}"
    assert expect(admin.get(by_name), 200)["worksheet"]["uuid"] == ws["uuid"]

    assert expect(admin.get(by_name + "/datasets"), 200)["datasets"] == []
    added = expect(admin.post(by_name + "/datasets",
                              json={"name": "nic.kilobytes", "seconds": 300}), 201)["dataset"]
    check_types(added, {"name": str, "drilldowns": list, "seconds": int, "href": str})
    assert added["name"] == "nic.kilobytes" and added["seconds"] == 300
    one = expect(admin.get(added["href"]), 200)["dataset"]
    assert one == added
    changed = expect(admin.put(added["href"], json={"seconds": 60}), 200)["dataset"]
    assert changed["seconds"] == 60 and changed["name"] == "nic.kilobytes"
    listed = expect(admin.get(ws["href"] + "/datasets"), 200)["datasets"]
    assert [d["name"] for d in listed] == ["nic.kilobytes"] and listed[0]["seconds"] == 60
    expect_fault(admin.post(by_name + "/datasets", json={"name": "no.such"}), 400,
                 details="name")

    expect(admin.delete(by_name), 204)
    expect_fault(admin.get(ws["href"]), 404)


def test_one_second_from_now_is_the_sample_streamed(admin):
    """?start=now&seconds=1: the server waits for the second, then answers it alone."""
    doc = expect(admin.get(f"{AN}/datasets/cpu.utilization/data?start=now&seconds=1"), 200)
    check_sample(doc["data"])
    assert list(doc) == ["data"], doc


def test_worksheet_dataset_faults(server, admin):
    """A place past the end, a malformed one, an unknown name=..., another's worksheet."""
    name = unique("ws")
    ws = expect(admin.post(AN + "/worksheets", json={"name": name,
                                                      "datasets": [{"name": "io.ops"}]}), 201)
    ws = ws["worksheet"]
    for bad in ("dataset-001", "dataset-x", "dataset-", "io.ops", "dataset-99999999999"):
        expect_fault(admin.get(f"{ws['href']}/datasets/{bad}"), 404, details="dataset")
    expect_fault(admin.get(f"{AN}/worksheets/name={unique('none')}"), 404, details="name")
    expect_fault(admin.put(f"{ws['href']}/datasets/dataset-000", json={"seconds": 0}), 400,
                 details="seconds")
    expect_fault(admin.put(f"{ws['href']}/datasets/dataset-000", json={"name": "x"}), 400,
                 details="name")
    # another user with worksheet:modify may read it but not change it
    user = make_user(admin, ["operator"])
    other = server.login_client(user, PASSWORD)
    expect(other.get(f"{ws['href']}/datasets/dataset-000"), 200)
    expect_fault(other.post(f"{ws['href']}/datasets", json={"name": "io.ops"}), 403)
    expect_fault(other.delete(f"{ws['href']}/datasets/dataset-000"), 403)
    # their own worksheet of the same name is what name= finds for them
    mine = expect(other.post(AN + "/worksheets", json={"name": name}), 201)["worksheet"]
    assert expect(other.get(f"{AN}/worksheets/name={name}"), 200)["worksheet"]["uuid"] == \
        mine["uuid"]
    assert expect(admin.get(f"{AN}/worksheets/name={name}"), 200)["worksheet"]["uuid"] == \
        ws["uuid"]
    expect(admin.delete(f"{ws['href']}/datasets/dataset-000"), 204)
    assert expect(admin.get(ws["href"] + "/datasets"), 200)["datasets"] == []
