# SPDX-License-Identifier: ISC
"""Every route of api/routes.c, asked what its code answers to a request that is wrong in
each of the ways a script gets wrong, and every answer held to api/openapi.json: its
status documented for the operation, its body the document's Fault. test_openapi_live.py
calls each route as it is meant to be called; this walks the refusals:

- a query parameter the route does not take (400 ERR_UNKNOWN_ARG, on every route);
- a path parameter that names nothing, or is not one at all (a job id "abc");
- a wrong password sent with Basic or X-Auth-User/X-Auth-Key, on every route that takes
  one (401), then again once the address is locked out (429 with Retry-After): any route
  that checks a password can answer 429.

And what no request can make it show: every fault its code can give, read from the C
(test_every_status_a_handler_can_give_is_documented).

Its own server: the lock-out would refuse the other tests' logins."""
import re
from collections import deque

import pytest

from conftest import REPO, ROUTES_C, Server, assert_stopped_cleanly, expect, routes
from test_openapi_live import DOC, Checker, template_of, resolve

# Path parameters: a value of the right form that names nothing, and one of no right form.
MISSING = {"id": "999999", "uuid": "00000000-0000-4000-8000-000000000000"}
MALFORMED = {"id": "abc", "uuid": "not-a-uuid"}
# Routes whose call would end the walk's own session or the server.
SKIP = {("DELETE", "/api/access/v1")}


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("statuses") / "state", "--system-led-backend",
                 "virtual", "--disk-led-backend", "virtual").start()
    yield srv
    assert_stopped_cleanly(srv)


def path_of(pattern, values):
    """pattern with each {param} filled from values (else "spindle-none")."""
    out = pattern
    while "{" in out:
        a, b = out.index("{"), out.index("}")
        out = out[:a] + values.get(out[a + 1:b], "spindle-none") + out[b + 1:]
    return out


def body_kw(method):
    return {"json": {}} if method in ("POST", "PUT") else {}


def authenticated():
    """(method, pattern) of every route that takes credentials and so a password: all but
    the public ones (/metrics takes only a token)."""
    return [(m, p) for m, p, s, access, perm in routes()
            if access != "ROUTE_PUBLIC" and (m, p) not in SKIP]


def test_unknown_parameters_and_bad_path_parameters(box):
    admin = box.admin()
    c = Checker()
    for method, pattern, *_ in routes():
        if (method, pattern) in SKIP or pattern == "/metrics":
            continue
        path = path_of(pattern, MISSING)
        resp = admin.request(method, path + "?spindle_unknown=1", **body_kw(method))
        c.validate(method, path, resp, template_of(method, path))
        if resp.status_code != 400 or resp.json()["fault"]["message"] != "ERR_UNKNOWN_ARG":
            c.failures.append(f"{method} {path}?spindle_unknown=1: {resp.status_code} "
                              f"{resp.text[:200]}, not 400 ERR_UNKNOWN_ARG")
        elif "spindle_unknown" not in resp.json()["fault"]["details"]:
            c.failures.append(f"{method} {path}: the fault does not name the parameter")
        if "{" not in pattern:
            continue
        for values in (MISSING, MALFORMED):
            path = path_of(pattern, values)
            resp = admin.request(method, path, **body_kw(method))
            c.validate(method, path, resp, template_of(method, path))
            if resp.status_code < 400:
                c.failures.append(f"{method} {path}: {resp.status_code}, for a name that "
                                  f"names nothing")
    c.report()


def test_every_route_that_checks_a_password_answers_as_documented(box):
    c = Checker()
    ways = (("basic", {"auth": ("admin", "Wrong-password-1")}),
            ("headers", {"headers": {"X-Auth-User": "admin", "X-Auth-Key": "Wrong-1"}}))
    anon = box.client()
    # each route refuses a wrong password (401), until the address is locked out
    locked = False
    for method, pattern in authenticated():
        path = path_of(pattern, MISSING)
        for _, kw in ways:
            resp = anon.request(method, path, **kw, **body_kw(method))
            c.validate(method, path, resp, template_of(method, path))
            locked = locked or resp.status_code == 429
    # then every one answers 429, with Retry-After, as documented
    for _ in range(30):
        if locked:
            break
        locked = anon.get("/api/access/v1", auth=("admin", "Wrong-password-1")).status_code == 429
    assert locked, "thirty wrong passwords from one address did not lock it out"
    for method, pattern in authenticated():
        path = path_of(pattern, MISSING)
        for name, kw in ways:
            resp = anon.request(method, path, **kw, **body_kw(method))
            c.validate(method, path, resp, template_of(method, path))
            if resp.status_code != 429 or not resp.headers.get("Retry-After"):
                c.failures.append(f"{method} {path} ({name}): {resp.status_code}, not 429 "
                                  f"with Retry-After, for a locked-out address")
    c.report()


def test_every_operation_that_takes_a_password_documents_the_lockout():
    """The document says it as the server does: every operation whose security takes
    Basic or X-Auth-User/X-Auth-Key lists 429 (locked out) and 503 (too many checks in
    progress) among its answers."""
    missing = []
    for path, ops in DOC["paths"].items():
        for method, op in ops.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            takes = any("basic" in alt or "authUser" in alt for alt in op.get("security", []))
            for status in ("429", "503"):
                if takes and status not in op["responses"]:
                    missing.append(f"{method.upper()} {path}: {status}")
                elif takes:
                    answer = resolve(op["responses"][status])
                    assert "Retry-After" in answer.get("headers", {}), (path, method, status)
    assert not missing, "\n".join(missing)


# ---- what the code can give, read from it ---------------------------------------------
#
# Each handler of api/routes.c and every function it reaches (a name its body mentions,
# resolved as C does: the file's own static first, else the one external definition) is
# searched for the fault codes it sets; each code's status (server/base/fault.c) must be
# among the operation's documented answers. The reading ignores the flow, so a few codes
# reachable only on another route's path through a shared function are listed here, each
# with why the route cannot give it.

NOT_GIVEN = {
    ("POST", "/api/access/v1", 404): "session_create's ERR_NOT_FOUND is a token's user (a "
                                     "login's deleted meanwhile is a 401)",
    ("POST", "/api/access/v1", 409): "session_create's ERR_OBJECT_EXISTS is a token's name",
    ("POST", "/api/access/v1", 507): "a login's session on a full disk lives in memory "
                                     "until it can be stored (session_create)",
    ("POST", "/api/user/v1/users", 404): "user_done's update path (user_update_finish)",
    ("GET", "/api/hardware/v1/chassis", 404): "op_run's lookup is a chassis or disk's",
    ("GET", "/api/hardware/v1/chassis", 507): "op_run's store is a locator's change",
    ("GET", "/api/hardware/v1/chassis/{chassis}", 507): "op_run's store is a locator's",
    ("GET", "/api/hardware/v1/chassis/{chassis}/disk", 507): "op_run's store is a locator's",
    ("GET", "/api/hardware/v1/chassis/{chassis}/disk/{disk}", 507):
        "op_run's store is a locator's",
    ("GET", "/api/storage/v1/pools", 404): "answer()'s 404 is a named object's or a pool's",
    ("GET", "/api/storage/v1/projects", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/storage/v1/filesystems", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/storage/v1/luns", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/network/v1/devices", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/network/v1/datalinks", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/network/v1/interfaces", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/network/v1/routes", 404): "answer()'s 404 is a named object's",
    ("GET", "/api/bench/v1/sweeps", 404): "a sweep's runs are read by id from the rows "
                                          "that name them (jobs_run_get)",
    ("POST", "/api/bench/v1/sweeps", 404): "the same: its runs were just stored",
}

_DEF = re.compile(r"^([A-Za-z_][\w \t*]*?)\b(\w+)\(([^;{}]*?)\)\s*\n\{(.*?)^\}",
                  re.M | re.S)
# A code set or passed on, not one compared with
_CODE = re.compile(r"(?<![=!]= )(?<!case )\bERR_[A-Z_]+\b")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def c_functions():
    """{name: [(file, static, body)]} of spindled's C (the worker is another program)."""
    funcs = {}
    for d in ("server", "api", "db"):
        for f in sorted((REPO / d).rglob("*.c")):
            rel = f.relative_to(REPO)
            if "worker" in rel.parts or "iolat" in rel.parts:
                continue
            src = re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S)
            src = re.sub(r"\"(?:\\.|[^\"\\\n])*\"", '""', src)
            for m in _DEF.finditer(src):
                if m.group(2) not in ("if", "for", "while", "switch", "return", "main"):
                    funcs.setdefault(m.group(2), []).append(
                        (str(rel), "static" in m.group(1), m.group(4)))
    return funcs


def fault_statuses():
    text = (REPO / "server/base/fault.c").read_text()
    return {code: int(st) for code, st in re.findall(r'\[(ERR_\w+)\] = \{"\w+", (\d+)\}', text)}


def reachable_codes(funcs, handler):
    """{code: the chain of calls that reaches it first} from the handler."""
    def resolve(name, caller_file):
        found = funcs.get(name, [])
        own = [x for x in found if x[0] == caller_file]
        return own or [x for x in found if not x[1]]
    codes, seen = {}, set()
    queue = deque([(handler, "api/routes.c", [handler])])
    while queue:
        name, caller, chain = queue.popleft()
        for file, _, body in resolve(name, caller):
            if (name, file) in seen:
                continue
            seen.add((name, file))
            for code in _CODE.findall(body):
                codes.setdefault(code, chain)
            for ident in sorted(set(_IDENT.findall(body)) - {name}):
                if ident in funcs:
                    queue.append((ident, file, chain + [ident]))
    return codes


def test_every_status_a_handler_can_give_is_documented():
    funcs, status = c_functions(), fault_statuses()
    src = ROUTES_C.read_text()
    handlers = re.findall(r"\{\s*METHOD_(\w+)\s*,\s*(?:\w+\s+)?\"[^\"]*\"\s*,\s*\"\w+\"\s*,"
                          r"\s*ROUTE_\w+\s*,\s*[\w|\s]+?\s*,\s*(\w+)\s*,", src)
    table = routes()
    assert len(handlers) == len(table) > 50, "api/routes.c's table was not read"
    missing, unused = [], set(NOT_GIVEN)
    for (method, pattern, *_), (m2, handler) in zip(table, handlers):
        assert method == m2
        assert handler in funcs, f"{handler}: its definition was not found"
        op = DOC["paths"][pattern][method.lower()]
        documented = {int(k) for k in op["responses"] if k.isdigit()}
        for code, chain in sorted(reachable_codes(funcs, handler).items()):
            st = status.get(code)
            if st is None or st in documented:
                continue
            unused.discard((method, pattern, st))
            if (method, pattern, st) not in NOT_GIVEN:
                missing.append(f"{method} {pattern}: {st} ({code}, via {' > '.join(chain)})")
    assert not missing, "statuses the code can give that the document does not list:\n" + \
        "\n".join(sorted(set(missing)))
    assert not unused, f"NOT_GIVEN lists what is no longer reached: {sorted(unused)}"
