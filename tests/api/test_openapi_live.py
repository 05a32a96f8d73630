# SPDX-License-Identifier: ISC
"""api/openapi.json against live answers: every route of api/routes.c is called on a real
spindled (as admin, with realistic parameters: a user, a role, an API token, a worksheet,
a dataset, finished benchmark jobs of each kind), and each answer is validated with
python3-jsonschema (Draft 2020-12, $refs resolved in the document) against the schema the
document gives for that operation and status. A status the document does not list fails
too, and so does a route nobody called, so the document cannot drift from the daemon.

The same calls check what holds for every route: HEAD on a GET route answers as the GET
without the body, the path with a trailing slash is a 404 naming the canonical one, and a
route that needs a session answers 401 without one, in the document's Fault shape."""
import json
import os
import re
import time
from urllib.parse import quote

import jsonschema
import pytest
from jsonschema import Draft202012Validator, RefResolver

from test_devices import Device
from conftest import (REPO, SLOW, USERS, ROLES, Server, assert_stopped_cleanly, expect,
                      pattern_regex, routes, unique)
from fixtures.hw import FakeSys
from test_appliance_storage import FAKE_BIN, storage

DOC = json.loads((REPO / "api" / "openapi.json").read_text())
RESOLVER = RefResolver.from_schema(DOC)
AN = "/api/analytics/v1"
BENCH = "/api/bench/v1"
HW = "/api/hardware/v1/chassis"
JOB_TIMEOUT = 60 * SLOW


def resolve(obj):
    """Follows a local $ref ("#/components/...") to what it names."""
    while isinstance(obj, dict) and "$ref" in obj:
        obj = RESOLVER.resolve(obj["$ref"])[1]
    return obj


def template_of(method, path):
    """The document's path template that path (without its query) matches."""
    path = path.split("?")[0]
    found = [t for t in DOC["paths"] if pattern_regex(t).match(path)
             and method.lower() in DOC["paths"][t]]
    # a literal segment wins over a parameter ("/chassis/system" is not "/chassis/{c}"
    # when both exist); the templates here never overlap otherwise
    found.sort(key=lambda t: t.count("{"))
    assert found, f"{method} {path}: no operation in openapi.json"
    return found[0]


def media_of(content, content_type):
    """The documented media type an answer's Content-Type is (parameters ignored unless
    the document names them)."""
    if content_type in content:
        return content_type
    base = content_type.split(";")[0].strip()
    for key in content:
        if key.split(";")[0].strip() == base:
            return key
    raise AssertionError(f"Content-Type {content_type} is not documented: {list(content)}")


def schema_errors(schema, doc):
    validator = Draft202012Validator(schema, resolver=RESOLVER,
                                     format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))]


class Checker:
    """Sends requests and validates each answer against the document; remembers which
    routes were called and which answers failed, so all failures are reported at once."""

    def __init__(self):
        self.called = set()             # (METHOD, template)
        self.failures = []
        self.answers = []               # (method, path, template, response) of each call

    def validate(self, method, path, resp, template=None, body=True):
        template = template or template_of(method, path)
        op = DOC["paths"][template][method.lower()]
        status = str(resp.status_code)
        where = f"{method} {path} -> {status}"
        if status not in op["responses"]:
            self.failures.append(f"{where}: status not documented ({resp.text[:200]})")
            return template
        answer = resolve(op["responses"][status])
        content = answer.get("content")
        if method == "HEAD" or resp.status_code in (204, 304) or not content:
            if resp.content:
                self.failures.append(f"{where}: a body, but none is documented")
            return template
        try:
            media = media_of(content, resp.headers.get("Content-Type", ""))
        except AssertionError as e:
            self.failures.append(f"{where}: {e}")
            return template
        schema = content[media].get("schema", {})
        if not body:
            return template                 # an endless stream: its events are read apart
        if "json" in media and "ndjson" not in media:
            body = resp.json()
        else:
            body = resp.text
        for err in schema_errors(schema, body):
            self.failures.append(f"{where}: {err}")
        return template

    def call(self, client, method, path, status, **kw):
        """One request; the answer must have this status and match the document."""
        resp = client.request(method, path, **kw)
        if resp.status_code != status:
            self.failures.append(f"{method} {path}: want {status}, got {resp.status_code} "
                                 f"{resp.text[:300]}")
        template = self.validate(method, path, resp, body=not kw.get("stream"))
        self.called.add((method, template))
        self.answers.append((method, path, template, resp))
        if method == "GET" and resp.status_code == 200:
            self.head(client, path, template, resp, kw.get("headers"))
        return resp

    def head(self, client, path, template, resp, headers):
        """HEAD answers as the GET did, without the body."""
        head = client.request("HEAD", path, headers=headers)
        where = f"HEAD {path}"
        if head.status_code != 200 or head.content:
            self.failures.append(f"{where}: {head.status_code}, {len(head.content)} bytes of "
                                 f"body")
        if head.headers.get("Content-Type") != resp.headers.get("Content-Type"):
            self.failures.append(f"{where}: Content-Type {head.headers.get('Content-Type')}, "
                                 f"not the GET's {resp.headers.get('Content-Type')}")
        # The same bytes give the same length (answers built anew, with uptime or a new
        # sample in them, may differ; streams have none).
        if template in ("/api/openapi.json", "/api/bench/v1/presets") and \
                head.headers.get("Content-Length") != resp.headers.get("Content-Length"):
            self.failures.append(f"{where}: Content-Length {head.headers.get('Content-Length')}"
                                 f", not the GET's {resp.headers.get('Content-Length')}")

    def report(self):
        assert not self.failures, "\n".join(self.failures)


def build_sys(root):
    """A small box: DMI, an SES enclosure with disks in two slots of four (one faulted), a
    virtio disk outside it."""
    fs = FakeSys(root)
    fs.dmi(sys_vendor="Supermicro", product_name="SSG-6029P", product_serial="S1")
    enc = fs.enclosure("6:0:13:0", id="0x500304801f0c7a3f", vendor="LSI", model="SAS3x28",
                       slots=4)
    disk = fs.scsi_disk("sdb", "6:0:1:0", transport="sas", vendor="SEAGATE",
                        model="ST4000NM0023", serial="Z1Z0A1B1", wwid="naa.5000c500a1b2c301",
                        size_bytes=4 * 1000 ** 4)
    fs.seat(enc, "Slot 00", disk)
    disk = fs.scsi_disk("sdc", "6:0:2:0", transport="sas", vendor="SEAGATE",
                        model="ST4000NM0023", serial="Z1Z0A1C2", wwid="naa.5000c500a1b2c302",
                        size_bytes=4 * 1000 ** 4, rev="0004", rpm=7200)
    fs.seat(enc, "Slot 01", disk, status="critical")  # an open problem to fetch
    fs.virtio_disk("vda", "virtio1", serial="virt-disk-01", size_bytes=16 << 30)
    return fs


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A spindled on the real /proc and /sys (the benchmark's device figures come from the
    disk under the state dir), and one on a fake /sys with an enclosure."""
    base = tmp_path_factory.mktemp("openapi")
    real = Server(base / "state", "--system-led-backend", "virtual",
                  "--disk-led-backend", "virtual").start()
    # the fake box has ZFS too: two pools (one degraded), projects, filesystems, LUNs
    (base / "storage.json").write_text(json.dumps(storage()))
    env = dict(os.environ, PATH=FAKE_BIN + os.pathsep + os.environ["PATH"],
               FAKE_STORAGE=str(base / "storage.json"))
    fake = Server(base / "fake-state", "--sys-root", build_sys(base / "root").root,
                  "--system-led-backend", "virtual", "--disk-led-backend", "virtual",
                  env=env).start()
    yield real, fake
    assert_stopped_cleanly(real)
    assert_stopped_cleanly(fake)


def wait_job(admin, job_id):
    deadline = time.monotonic() + JOB_TIMEOUT
    while True:
        job = expect(admin.get(f"{BENCH}/jobs/{job_id}"), 200)["job"]
        if job["state"] not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.2)


# Small jobs of each kind, so every shape of a result is seen: both directions, the
# preset groups, the iozone table.
JOBS = [
    {"name": "live-randrw", "pattern": "randrw", "size": "1M", "block_size": "4k",
     "threads": 2, "rwmix_read": 70, "runtime_s": 2, "label": "openapi"},
    {"name": "live-slob", "pattern": "slob", "size": "1M", "sessions": 2, "update_pct": 50,
     "run_time": 1},
    {"name": "live-iozone", "pattern": "iozone", "size": "1M", "record_size": "64k"},
]


def exercise(c, srv, admin):
    """Every route, in the order a user would meet them."""
    anon = srv.client()
    pw = srv.admin_password
    c.call(anon, "GET", "/api/openapi.json", 200)
    c.call(anon, "GET", "/api/system/v1/health", 200)
    c.call(admin, "GET", "/api/system/v1/version", 200)
    c.call(anon, "POST", "/api/access/v1", 201, json={"user": "admin", "password": pw})
    login = c.call(anon, "POST", "/api/access/v1", 201,
                   headers={"X-Auth-User": "admin", "X-Auth-Key": pw})
    c.call(admin, "GET", "/api/access/v1", 200)
    for svc in expect(admin.get("/api/access/v1"), 200)["services"]:
        c.call(admin, "GET", svc["href"], 200)
    c.call(srv.client(login.headers["X-Auth-Session"]), "DELETE", "/api/access/v1", 204)

    # users, their tokens, roles
    role = unique("live-role")
    c.call(admin, "POST", ROLES, 201, json={"name": role, "authorizations": ["stat:read"],
                                            "description": "For the document's test"})
    c.call(admin, "GET", ROLES, 200)
    c.call(admin, "GET", f"{ROLES}/{role}", 200)
    c.call(admin, "PUT", f"{ROLES}/{role}", 200,
           json={"authorizations": ["stat:read", "bench:read"]})
    user = unique("live-user")
    c.call(admin, "POST", USERS, 201, json={"name": user, "password": "Live-password-1",
                                            "roles": ["monitor", role], "fullname": "Live"})
    c.call(admin, "GET", USERS, 200)
    c.call(admin, "GET", f"{USERS}/{user}", 200)
    c.call(admin, "PUT", f"{USERS}/{user}", 200, json={"fullname": "Live User",
                                                        "session_timeout_min": 30})
    tok = c.call(admin, "POST", f"{USERS}/{user}/tokens", 201, json={"name": "ci"})
    c.call(admin, "GET", f"{USERS}/{user}/tokens", 200)
    c.call(admin, "GET", tok.headers["Location"], 200)
    c.call(admin, "DELETE", f"{USERS}/{user}/tokens/{tok.json()['token']['id']}", 204)
    # a browser kept signed in: registered at a login, then logging in with its key
    dev = Device()
    kept = c.call(anon, "POST", "/api/access/v1", 201,
                  json={"user": user, "password": "Live-password-1", "device": dev.register()})
    dev.id = kept.json()["access"]["device"]["id"]
    ch = c.call(anon, "POST", "/api/access/v1/challenge", 200).json()["challenge"]["value"]
    c.call(anon, "POST", "/api/access/v1", 201,
           json={"device_id": dev.id, "challenge": ch, "signature": dev.sign(ch)})
    c.call(admin, "GET", f"{USERS}/{user}/devices", 200)
    c.call(admin, "DELETE", f"{USERS}/{user}/devices/{dev.id}", 204)
    c.call(admin, "DELETE", f"{USERS}/{user}", 204)
    c.call(admin, "DELETE", f"{ROLES}/{role}", 204)
    c.call(admin, "GET", "/api/log/v1/logs/audit?limit=20", 200)

    # hardware
    c.call(admin, "GET", HW, 200)
    c.call(admin, "GET", f"{HW}/system", 200)
    c.call(admin, "PUT", f"{HW}/system", 202, json={"locate": True})
    disks = c.call(admin, "GET", f"{HW}/system/disk", 200).json()["disks"]
    if disks:
        disk = quote(disks[0]["id"], safe="")
        c.call(admin, "GET", f"{HW}/system/disk/{disk}", 200)
        c.call(admin, "PUT", f"{HW}/system/disk/{disk}", 202, json={"locate": True})

    # analytics: datasets, data, settings, worksheets
    c.call(admin, "GET", f"{AN}/datasets", 200)
    c.call(admin, "POST", f"{AN}/datasets", 201,
           json={"statistic": "io.latency", "drilldown": "disk"})
    ds = f"{AN}/datasets/{quote('io.latency[disk]', safe='')}"
    c.call(admin, "GET", ds, 200)
    c.call(admin, "PUT", ds, 200, json={"suspended": True})
    c.call(admin, "DELETE", ds, 204)
    cpu = f"{AN}/datasets/{quote('cpu.utilization[mode]', safe='')}/data"
    c.call(admin, "GET", f"{cpu}?start=-10&seconds=8&points=4", 200)
    c.call(admin, "GET", f"{cpu}?start=-1&seconds=2", 200)       # streamed to its end
    c.call(admin, "GET", f"{cpu}?start=-7200&granularity=minute", 200)
    c.call(admin, "GET", f"{cpu}?start=-2", 200)                 # one second: the sample
    # a name with a raw slash, as the appliance writes it (no ARC here: 404, documented)
    c.call(admin, "GET", f"{AN}/datasets/arc.accesses%5Bhit/miss%5D", 404)
    c.call(admin, "GET", f"{AN}/datasets/arc.accesses%5Bhit/miss%5D/data", 404)
    c.call(admin, "GET", f"{AN}/settings", 200)
    c.call(admin, "PUT", f"{AN}/settings", 200, json={"retain_second_data": 24})
    sheet = {"name": unique("live-sheet"),
             "datasets": [{"name": "io.ops[disk]", "drilldowns": [], "seconds": 300},
                          {"name": "cpu.utilization[mode]"}]}
    uuid = c.call(admin, "POST", f"{AN}/worksheets", 201, json=sheet).json()["worksheet"]["uuid"]
    c.call(admin, "GET", f"{AN}/worksheets?limit=1", 200)
    c.call(admin, "GET", f"{AN}/worksheets/{uuid}", 200)
    c.call(admin, "PUT", f"{AN}/worksheets/{uuid}", 200, json={"name": sheet["name"] + "-2"})
    c.call(admin, "GET", f"{AN}/worksheets/{uuid}/datasets", 200)
    view = c.call(admin, "POST", f"{AN}/worksheets/{uuid}/datasets", 201,
                  json={"name": "nic.kilobytes", "seconds": 120}).json()["dataset"]
    c.call(admin, "GET", view["href"], 200)
    c.call(admin, "PUT", view["href"], 200, json={"seconds": 60})
    c.call(admin, "DELETE", view["href"], 204)
    c.call(admin, "DELETE", f"{AN}/worksheets/{uuid}", 204)

    # status and metrics
    # The 304 for the current tag: a collector tick between the two requests makes a new
    # document and tag, so a 200 there is tried again (five times), not counted.
    for attempt in range(5):
        dash = c.call(admin, "GET", "/api/status/v1/dashboard", 200)
        seen = len(c.failures)
        again = c.call(admin, "GET", "/api/status/v1/dashboard", 304,
                       headers={"If-None-Match": dash.headers["ETag"]})
        if again.status_code == 304 or attempt == 4:
            break
        if again.status_code == 200 and again.headers["ETag"] != dash.headers["ETag"]:
            del c.failures[seen:]
    c.call(admin, "GET", "/api/status/v1/disks", 200)
    resp = c.call(admin, "GET", "/api/status/v1/events", 200, stream=True)
    event = b""
    for chunk in resp.iter_content(chunk_size=None):
        event += chunk
        if b"event: dashboard" in event and event.endswith(b"\n\n"):
            break
    resp.close()
    data = re.search(rb"event: dashboard\n(?:id: \d+\n)?data: (.*)\n", event)
    assert data, event
    dashboard_schema = resolve(DOC["paths"]["/api/status/v1/dashboard"]["get"]["responses"]
                               ["200"])["content"]["application/json"]["schema"]
    c.failures += [f"events: the dashboard event: {e}"
                   for e in schema_errors(dashboard_schema, json.loads(data.group(1)))]
    c.call(anon, "GET", "/metrics", 200)

    # benchmarks: one running (then cancelled), small jobs that finish, their results
    c.call(admin, "GET", f"{BENCH}/presets", 200)
    long_job = c.call(admin, "POST", f"{BENCH}/jobs", 201,
                      json={"name": "live-cancelled", "pattern": "randread", "size": "1M",
                            "runtime_s": 60}).json()["job"]["id"]
    ids = [c.call(admin, "POST", f"{BENCH}/jobs", 201, json=spec).json()["job"]["id"]
           for spec in JOBS]
    c.call(admin, "GET", f"{BENCH}/jobs/{ids[0]}", 200)                # queued
    deadline = time.monotonic() + JOB_TIMEOUT
    while True:                         # running, and an interval line in
        job = expect(admin.get(f"{BENCH}/jobs/{long_job}"), 200)["job"]
        if "worker_pid" in job and job.get("progress_pct"):
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    c.call(admin, "GET", f"{BENCH}/jobs/{long_job}", 200)
    c.call(admin, "GET", f"{BENCH}/jobs?state=running", 200)
    c.call(admin, "GET", "/api/status/v1/dashboard", 200)
    c.call(admin, "DELETE", f"{BENCH}/jobs/{long_job}", 202)
    for job_id in ids:
        assert wait_job(admin, job_id)["state"] == "done", job_id
    assert wait_job(admin, long_job)["state"] == "cancelled"
    c.call(admin, "GET", f"{BENCH}/jobs", 200)
    c.call(admin, "GET", f"{BENCH}/jobs?state=done&limit=2", 200)
    for job_id in ids + [long_job]:
        c.call(admin, "GET", f"{BENCH}/jobs/{job_id}", 200)
        c.call(admin, "GET", f"{BENCH}/jobs/{job_id}/progress", 200)
    c.call(admin, "GET", f"{BENCH}/jobs/{ids[0]}/progress", 200,
           headers={"Accept": "text/event-stream"})
    for job_id in ids:
        c.call(admin, "GET", f"{BENCH}/jobs/{job_id}/result", 200)
        c.call(admin, "GET", f"{BENCH}/jobs/{job_id}/result?format=fio", 200)
    # fio interchange: fio's log files, and a fio document (here a job's own) imported
    for log in ("iops", "bw", "lat", "clat_hist"):
        c.call(admin, "GET", f"{BENCH}/jobs/{ids[0]}/fio-log?log={log}", 200)
    fio_doc = expect(admin.get(f"{BENCH}/jobs/{ids[0]}/result?format=fio"), 200)
    imported = c.call(admin, "POST", f"{BENCH}/jobs/import", 201,
                      json=fio_doc).json()["job"]["id"]
    c.call(admin, "POST", f"{BENCH}/jobs/import", 400, json={"jobs": []})
    c.call(admin, "GET", f"{BENCH}/jobs/{imported}", 200)
    c.call(admin, "GET", f"{BENCH}/jobs/{imported}/result", 200)
    c.call(admin, "GET", f"{BENCH}/jobs/{imported}/result?format=fio", 200)
    c.call(admin, "GET", f"{BENCH}/jobs/{long_job}/result", 200)     # the part it did
    c.call(admin, "GET", f"{BENCH}/jobs/{long_job}/result?format=fio", 200)
    c.call(admin, "GET", f"{BENCH}/compare?jobs={','.join(map(str, ids))}&baseline={ids[0]}",
           200)
    c.call(admin, "DELETE", f"{BENCH}/jobs/{long_job}", 204)

    # sweeps: one run to done (its table and knee), one cancelled as a whole, then deleted
    sweep = c.call(admin, "POST", f"{BENCH}/sweeps", 201, json={
        "name": "live-sweep", "spec": {"pattern": "randread", "size": "1M", "io_size": "64k"},
        "axes": {"threads": [1, 2]}}).json()["sweep"]["id"]
    cancelled = c.call(admin, "POST", f"{BENCH}/sweeps", 201, json={
        "name": "live-sweep-long", "spec": {"pattern": "randread", "size": "1M",
                                            "runtime_s": 60},
        "axes": {"block_size": ["4k", "8k"]}}).json()["sweep"]["id"]
    c.call(admin, "DELETE", f"{BENCH}/sweeps/{cancelled}", 202)
    deadline = time.monotonic() + JOB_TIMEOUT
    for sweep_id in (sweep, cancelled):
        while True:
            got = expect(admin.get(f"{BENCH}/sweeps/{sweep_id}"), 200)["sweep"]
            if not got["counts"]["queued"] and not got["counts"]["running"]:
                break
            assert time.monotonic() < deadline, got
            time.sleep(0.2)
    c.call(admin, "GET", f"{BENCH}/sweeps", 200)
    c.call(admin, "GET", f"{BENCH}/sweeps/{sweep}", 200)
    c.call(admin, "GET", f"{BENCH}/jobs/{got['table'][0]['job']}", 200)     # "sweep": id
    c.call(admin, "DELETE", f"{BENCH}/sweeps/{cancelled}", 204)


def exercise_hardware(c, srv, admin):
    """The fake box: an enclosure as a chassis, its slots (one empty), a system disk."""
    chassis = c.call(admin, "GET", HW, 200).json()["chassis"]
    for ch in chassis:
        c.call(admin, "GET", ch["href"], 200)
        for disk in c.call(admin, "GET", ch["href"] + "/disk", 200).json()["disks"]:
            c.call(admin, "GET", disk["href"], 200)
        c.call(admin, "PUT", ch["href"], 202, json={"locate": True})
    disk = c.call(admin, "GET", f"{HW}/system/disk", 200).json()["disks"][0]
    c.call(admin, "PUT", disk["href"], 202, json={"locate": False})
    c.call(admin, "GET", "/api/hardware/v1/cluster", 200)
    problems = c.call(admin, "GET", "/api/problem/v1/problems", 200).json()["problems"]
    assert problems, "the faulted disk is an open problem"
    c.call(admin, "GET", problems[0]["href"], 200)
    c.call(admin, "GET", "/api/problem/v1/problems/00000000-0000-4000-8000-000000000000", 404)

    # storage: every list and object of the fake ZFS, and a 404
    st = "/api/storage/v1"
    for kind in ("projects", "filesystems", "luns"):
        c.call(admin, "GET", f"{st}/{kind}", 200)
    for pool in c.call(admin, "GET", f"{st}/pools", 200).json()["pools"]:
        c.call(admin, "GET", pool["href"], 200)
        for pr in c.call(admin, "GET", pool["href"] + "/projects", 200).json()["projects"]:
            c.call(admin, "GET", pr["href"], 200)
            for kind in ("filesystems", "luns"):
                for o in c.call(admin, "GET", pr["href"] + "/" + kind, 200).json()[kind]:
                    c.call(admin, "GET", o["href"], 200)
    c.call(admin, "GET", f"{st}/pools/nope", 404)


def exercise_network(c, srv, admin):
    """The real box's network: every list, and each object (a 404 for a kind it has none
    of)."""
    net = "/api/network/v1"
    for kind in ("devices", "datalinks", "interfaces", "routes"):
        items = c.call(admin, "GET", f"{net}/{kind}", 200).json()[kind]
        if items:
            c.call(admin, "GET", items[0]["href"], 200)
        else:
            c.call(admin, "GET", f"{net}/{kind}/none", 404)


def sweep(c, srv):
    """What holds for every route called: the trailing slash, 401 without a session."""
    anon = srv.client()
    public = {(m, p) for m, p, s, access, perm in routes() if access == "ROUTE_PUBLIC"}
    seen = set()
    for method, path, template, resp in list(c.answers):
        if (method, template) in seen:
            continue
        seen.add((method, template))
        bare = path.split("?")[0]
        slash = anon.request(method, bare + "/")
        want = f"no trailing slash: use {bare}"
        if slash.status_code != 404 or want not in slash.text:
            c.failures.append(f"{method} {bare}/: {slash.status_code} {slash.text[:200]}")
        if (method, template) not in public and not (method, template) == ("GET", "/metrics"):
            c.validate(method, path, anon.request(method, path), template)


def test_every_route_answers_as_documented(live):
    real, fake = live
    c = Checker()
    exercise(c, real, real.admin())
    exercise_hardware(c, fake, fake.admin())
    exercise_network(c, real, real.admin())
    sweep(c, real)
    missing = {(m, p) for m, p, *_ in routes()} - c.called
    assert not missing, f"routes never called: {sorted(missing)}"
    c.report()


def test_the_result_oneof_tells_its_answers_apart(live):
    """A result and its fio form each match exactly one branch of the oneOf."""
    real, _ = live
    admin = real.admin()
    jobs = expect(admin.get(f"{BENCH}/jobs?state=done&limit=1"), 200)["jobs"]
    if not jobs:
        job = expect(admin.post(f"{BENCH}/jobs", json=JOBS[0]), 201)["job"]
        jobs = [wait_job(admin, job["id"])]
    path = f"{BENCH}/jobs/{jobs[0]['id']}/result"
    schema = resolve(DOC["paths"]["/api/bench/v1/jobs/{id}/result"]["get"]["responses"]["200"])
    branches = schema["content"]["application/json"]["schema"]["oneOf"]
    for query, want in (("", "BenchResultResponse"), ("?format=fio", "BenchFioResult")):
        body = expect(admin.get(path + query), 200)
        matching = [b["$ref"].rsplit("/", 1)[1] for b in branches
                    if not schema_errors(b, body)]
        assert matching == [want], (query, matching)


def closed_schema_gaps():
    """Object schemas reachable from a response that leave required or
    additionalProperties unsaid: each open shape must be a choice, written down."""
    gaps, seen = [], set()

    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node:
                ref = node["$ref"]
                if ref not in seen:
                    seen.add(ref)
                    walk(resolve(node), ref)
                return
            if node.get("type") == "object" or "properties" in node:
                if "properties" in node and "required" not in node:
                    gaps.append(f"{where}: no required")
                if "additionalProperties" not in node and "patternProperties" not in node:
                    gaps.append(f"{where}: additionalProperties unsaid")
            for key, value in node.items():
                if key in ("examples", "example", "enum", "const", "default"):
                    continue
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}/{i}")

    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                for status, answer in op["responses"].items():
                    walk(resolve(answer).get("content", {}), f"{method} {path} {status}")
    return gaps


def test_every_answer_schema_says_what_is_required_and_whether_more_may_come():
    gaps = closed_schema_gaps()
    assert not gaps, "\n".join(gaps)
