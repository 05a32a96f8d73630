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

Its own server: the lock-out would refuse the other tests' logins."""
import pytest

from conftest import Server, assert_stopped_cleanly, expect, routes
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
