# SPDX-License-Identifier: ISC
"""A contract fuzzer, from api/openapi.json alone: hypothesis (python3-hypothesis) draws
requests to every operation of the document, valid ones (bodies, query and path
parameters from their schemas) and broken ones (a field of the wrong type, an unknown
field or parameter, a required field left out, a body that is not JSON or not declared
as JSON), for about CONTRACT_FUZZ_SECONDS (60) on a server of its own; each answer must be a
status the document lists for the operation, never a 500, with a body that validates
against the document's schema for it. The server must be alive and answering at the end.

Requests that would harm the fuzzer's own footing are shaped, not skipped: a benchmark
spec is kept small (sizes of a megabyte at most, runs of half a second, two threads, no
target of its own), the admin account and the fuzzer's own are never a path's {name},
and logging out (DELETE /api/access/v1) ends a session made for it."""
import json
import os
import re
import time
from datetime import datetime, timezone
from urllib.parse import quote

import pytest
import requests
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import PASSWORD, Server, assert_stopped_cleanly, expect
from test_openapi_live import DOC, resolve, schema_errors

FUZZ_SECONDS = float(os.environ.get("CONTRACT_FUZZ_SECONDS", "60"))
PER_OP = 4                              # requests to each operation before the rest
FUZZER = "fuzzer"                       # the account the requests are sent as (admin role)
NEVER_NAMED = {"admin", FUZZER}
READ_LIMIT = 4 << 20                    # bytes read of an answer; a stream is cut there
READ_SECONDS = 2.0                      # and after this long

# The benchmark spec, shaped so that a valid job is small and short.
SMALL = {"enum": ["4k", "8k", "64k", "1M"]}
SHORT = {"type": "number", "minimum": 0, "maximum": 0.5}
FEW = {"type": "integer", "minimum": 1, "maximum": 2}
SPEC_SHAPE = {"size": SMALL, "file_size": SMALL, "block_size": SMALL, "record_size": SMALL,
              "io_size": SMALL, "runtime_s": SHORT, "run_time": SHORT, "ramp_s": SHORT,
              "threads": FEW, "readers": FEW, "writers": FEW, "sessions": FEW,
              "iodepth": FEW, "iodepth_batch": FEW, "fsync_every": FEW}


def operations():
    """[(method, template, operation)] of the document, HEAD left to its GET."""
    out = []
    for template, item in DOC["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                params = item.get("parameters", []) + op.get("parameters", [])
                out.append((method.upper(), template, op, [resolve(p) for p in params]))
    return out


OPS = operations()


# ---- strategies from JSON Schema (the subset the document uses) ----------------------

def from_schema(schema, depth=0):
    schema = resolve(schema)
    if depth > 6:
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of([from_schema(s, depth + 1) for s in schema[key]])
    if "allOf" in schema:
        return from_schema(schema["allOf"][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, depth + 1) for k in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        required = [k for k in schema.get("required", []) if k in props]
        optional = [k for k in props if k not in required]
        return st.fixed_dictionaries(
            {k: from_schema(props[k], depth + 1) for k in required},
            optional={k: from_schema(props[k], depth + 1) for k in optional})
    if kind == "array":
        lo = schema.get("minItems", 0)
        return st.lists(from_schema(schema.get("items", {}), depth + 1), min_size=lo,
                        max_size=max(lo, min(schema.get("maxItems", 3), 3)),
                        unique_by=(lambda x: json.dumps(x, sort_keys=True))
                        if schema.get("uniqueItems") else None)
    if kind == "string":
        if schema.get("format") == "date-time":
            return st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                                timezones=st.just(timezone.utc)).map(
                lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
        lo, hi = schema.get("minLength", 0), min(schema.get("maxLength", 40), 40)
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: lo <= len(s) <= schema.get("maxLength", 1 << 30))
        return st.text(st.characters(min_codepoint=32, max_codepoint=0x2fff,
                                     blacklist_categories=("Cs",)),
                       min_size=lo, max_size=max(lo, hi))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -(1 << 40)),
                           max_value=schema.get("maximum", 1 << 40))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", -1e12),
                         max_value=schema.get("maximum", 1e12), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))


def body_schema(op, template):
    content = op.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return None
    schema = resolve(schema)
    if template.startswith("/api/bench/v1/"):
        schema = shape_bench(schema)
    return schema


def shape_bench(schema):
    """The spec (or a sweep's spec) with SPEC_SHAPE over its sizes and times, no target."""
    schema = resolve(schema)
    if schema.get("type") != "object" or "properties" not in schema:
        return schema
    props = dict(schema["properties"])
    for key, value in props.items():
        if key in SPEC_SHAPE:
            props[key] = SPEC_SHAPE[key]
        elif key == "spec":
            props[key] = shape_bench(value)
    props.pop("target", None)
    return {**schema, "properties": props,
            "required": [k for k in schema.get("required", []) if k in props]}


WRONG = st.one_of(st.just(None), st.booleans(), st.integers(-5, 5),
                  st.just("not-what-is-wanted"), st.just([]), st.just({"x": 1}))


@st.composite
def broken(draw, body, schema):
    """A body that is wrong in one way the server must name."""
    how = draw(st.sampled_from(["type", "unknown", "missing", "not-json", "media"]))
    if isinstance(body, dict) and body and how == "type":
        key = draw(st.sampled_from(sorted(body)))
        return how, json.dumps({**body, key: draw(WRONG)}), "application/json"
    if isinstance(body, dict) and how == "unknown":
        return how, json.dumps({**body, "spindle_fuzz": 1}), "application/json"
    required = resolve(schema).get("required", []) if schema else []
    if isinstance(body, dict) and required and how == "missing":
        key = draw(st.sampled_from(required))
        return how, json.dumps({k: v for k, v in body.items() if k != key}), \
            "application/json"
    if how == "media":
        return how, json.dumps(body), "text/plain"
    return "not-json", draw(st.sampled_from(["{", "[1,", "nul", "{\"a\":}", "\x00"])), \
        "application/json"


class Box:
    """The server under fuzz, its accounts and some names that exist on it."""

    def __init__(self, srv):
        self.srv = srv
        admin = srv.admin()
        expect(admin.post("/api/user/v1/users", json={
            "name": FUZZER, "password": PASSWORD, "roles": ["admin"]}), 201)
        expect(admin.post("/api/user/v1/users", json={
            "name": "fuzz-target", "password": PASSWORD, "roles": ["monitor"]}), 201)
        sheet = expect(admin.post("/api/analytics/v1/worksheets",
                                  json={"name": "fuzz-sheet"}), 201)["worksheet"]
        self.known = {"name": ["fuzz-target", "monitor", "operator", "cpu.utilization"],
                      "uuid": [sheet["uuid"]], "id": ["1", "2"],
                      "dataset": ["dataset-000"]}
        self.http = requests.Session()
        self.http.verify = False
        self.http.trust_env = False
        self.token = self.login()
        self.seen = {}                                  # (method, template) -> answers
        self.tally = {}                                 # (what, status) -> requests
        self.failures = []
        self.count = 0

    def login(self):
        """A session of the fuzzer's account, logged in from 127.0.0.2: the fuzzed logins
        from 127.0.0.1 (unknown names, wrong passwords, unknown devices) are a guesser's,
        and the throttle locks that address for a while once they are twenty."""
        resp = self.srv.login(FUZZER, PASSWORD, source="127.0.0.2")
        assert resp.status_code == 201, resp.text
        return resp.headers["X-Auth-Session"]

    def send(self, method, path, headers, data):
        resp = self.http.request(method, self.srv.https + path, headers=headers, data=data,
                                 stream=True, timeout=(10, READ_SECONDS + 10))
        body, deadline, whole = b"", time.monotonic() + READ_SECONDS, True
        try:
            for chunk in resp.iter_content(chunk_size=65536):
                body += chunk
                if len(body) > READ_LIMIT or time.monotonic() > deadline:
                    whole = False
                    break
        except requests.exceptions.RequestException:
            whole = False
        finally:
            resp.close()
        return resp, body, whole

    def check(self, method, template, op, path, resp, body, whole, what):
        self.count += 1
        status = str(resp.status_code)
        where = f"{method} {path} ({what}) -> {status}"
        self.seen.setdefault((method, template), set()).add(status)
        self.tally[what, status] = self.tally.get((what, status), 0) + 1
        if resp.status_code >= 500 and resp.status_code != 503:
            self.failures.append(f"{where}: a server error: {body[:300]!r}")
            return
        if status not in op["responses"]:
            self.failures.append(f"{where}: not documented: {body[:300]!r}")
            return
        content = resolve(op["responses"][status]).get("content")
        if not content or not whole or method == "HEAD" or status in ("204", "304"):
            return
        ctype = resp.headers.get("Content-Type", "").split(";")[0].strip()
        media = next((m for m in content if m.split(";")[0] == ctype), None)
        if media is None:
            self.failures.append(f"{where}: Content-Type {ctype!r} not documented")
        elif media == "application/json":
            try:
                doc = json.loads(body)
            except ValueError:
                self.failures.append(f"{where}: not JSON: {body[:200]!r}")
                return
            for err in schema_errors(content[media].get("schema", {}), doc)[:3]:
                self.failures.append(f"{where}: {err}")


def path_value(box, name, schema):
    names = [v for v in box.known.get(name, []) if v not in NEVER_NAMED]
    drawn = from_schema(schema).map(str).filter(lambda v: v and v not in NEVER_NAMED)
    return st.one_of(st.sampled_from(names), drawn) if names else drawn


@st.composite
def request_of(draw, box, method, template, op, params):
    path = template
    for p in params:
        if p["in"] == "path":
            value = draw(path_value(box, p["name"], p.get("schema", {})))
            path = path.replace("{" + p["name"] + "}", quote(value, safe=""))
    query = {}
    for p in params:
        if p["in"] == "query" and (p.get("required") or draw(st.booleans())):
            value = draw(from_schema(p.get("schema", {})))
            query[p["name"]] = json.dumps(value) if isinstance(value, (dict, list)) else \
                ("true" if value is True else "false" if value is False else str(value))
    what = "valid"
    # (hypothesis leans to the smallest choice: the rarer branch is the larger number)
    if draw(st.integers(0, 5)) == 5:
        what = "unknown parameter"
        query["spindle_fuzz"] = "1"
    if query:
        path += "?" + "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items())
    schema = body_schema(op, template)
    data, ctype = None, None
    if schema is not None:
        body = draw(from_schema(schema))
        if what == "valid" and draw(st.integers(0, 2)) == 2:
            what, data, ctype = draw(broken(body, schema))
        else:
            data, ctype = json.dumps(body), "application/json"
    return path, data, ctype, what


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("fuzz") / "state", "--system-led-backend",
                 "virtual", "--disk-led-backend", "virtual").start()
    yield Box(srv)
    assert_stopped_cleanly(srv)


def fuzz(box, ops, examples, until):
    """examples requests drawn for operations drawn from ops (until the clock says)."""

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data):
        method, template, op, params = data.draw(st.sampled_from(ops))
        path, body, ctype, what = data.draw(request_of(box, method, template, op, params))
        if time.monotonic() > until:
            return
        headers = {"Content-Type": ctype} if ctype else {}
        if op.get("security") != [] and {} not in op.get("security", [{}]):
            headers["X-Auth-Session"] = box.token
        if (method, template) == ("DELETE", "/api/access/v1"):
            headers["X-Auth-Session"] = box.login()      # a session of its own to end
        resp, raw, whole = box.send(method, path, headers, body)
        box.check(method, template, op, path, resp, raw, whole, what)

    one()


def test_the_document_holds_under_fuzzing(box):
    started = time.monotonic()
    until = started + FUZZ_SECONDS
    # every operation a few times, then operations at random while the time lasts
    for op in OPS:
        fuzz(box, [op], PER_OP, until + 60)
    while time.monotonic() < until:
        fuzz(box, OPS, 50, until)
    elapsed = time.monotonic() - started
    ops = {(m, t) for m, t, *_ in OPS}
    print(f"\ncontract fuzzer: {box.count} requests to {len(box.seen)} of {len(ops)} "
          f"operations in {elapsed:.0f} s; {len(box.failures)} failures")
    for what in sorted({w for w, _ in box.tally}):
        print(f"  {what}: " + ", ".join(f"{s} x{n}" for (w, s), n in sorted(box.tally.items())
                                        if w == what))
    assert box.seen.keys() == ops, f"never sent: {sorted(ops - box.seen.keys())}"
    # the valid requests were valid often enough to reach the handlers' success paths
    ok = sum(n for (w, s), n in box.tally.items() if w == "valid" and s < "300")
    assert ok > box.count / 10, box.tally
    # the server is alive and answering, and the fuzzer's own account still works
    expect(box.srv.client().get("/api/system/v1/health"), 200)
    assert box.login()
    assert not box.failures, "\n".join(sorted(set(box.failures))[:60])
