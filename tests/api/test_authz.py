# SPDX-License-Identifier: ISC
"""The authorization table (authz_table.py) against a live server, and against routes.c."""
import pytest
from test_devices import Device

from authz_table import COLUMNS, HOLDS, OVER_ROWS, ROWS, WRITES
from conftest import (PASSWORD, ROUTES_C, USERS, check_common_headers, expect, expect_fault,
                      make_role, make_token, make_user, pattern_regex, routes, unique)

FAULTS = {401: "ERR_UNAUTHORIZED", 403: "ERR_DENIED"}
WORKSHEETS = "/api/analytics/v1/worksheets"


def fill(value, names):
    """The body or path with its placeholders filled in."""
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    return value


@pytest.mark.parametrize("who", COLUMNS)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.method} {r.path}")
def test_authorization(server, clients, credentials, row, who):
    admin, client = clients["admin"], clients[who]
    user, password = credentials[who]
    names = {"self": user, "password": password, "target": unique(f"az-{who}")}
    if "user" in row.setup:
        make_user(admin, name=names["target"])
    if "role" in row.setup:
        make_role(admin, names["target"])
    if "token" in row.setup:
        owner = names["target"] if "user" in row.setup else user
        names["id"] = make_token(admin, owner)["id"]
    if "device" in row.setup:
        owner, pw = (names["target"], PASSWORD) if "user" in row.setup else (user, password)
        dev = Device()
        dev.keep(server, owner, pw)
        names["id"] = dev.id
    if "login" in row.setup and who != "anon":
        client = server.login_client(user, password)
    if "worksheet" in row.setup:
        ws = {"name": names["target"], "datasets": [{"name": "io.ops[op]"}]}
        names["uuid"] = expect(admin.post(WORKSHEETS, json=ws), 201)["worksheet"]["uuid"]

    path = fill(row.path, names)
    raw = "raw" in row.setup
    resp = client.request(row.method, path, json=fill(row.body, names), stream=raw)

    status = dict(zip(COLUMNS, row.expect))[who]
    if raw and resp.status_code == 200:
        resp.close()    # not JSON, maybe endless: the status and headers are the answer
        assert status == 200, f"{row.method} {path} -> 200, not {status}"
    elif status in FAULTS:
        expect_fault(resp, status, FAULTS[status])
    else:
        expect(resp, status)
    check_common_headers(resp, path)


def _rows_for(method, pattern):
    regex = pattern_regex(pattern)
    return [r for r in ROWS if r.method == method and regex.match(r.path)]


@pytest.mark.parametrize("route", routes(), ids=lambda r: f"{r[0]} {r[1]}")
def test_every_route_has_rows(route):
    method, pattern = route[:2]
    assert _rows_for(method, pattern), f"no row in authz_table.py for {method} {pattern}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.method} {r.path}")
def test_every_row_is_a_route(row):
    assert any(m == row.method and pattern_regex(p).match(row.path) for m, p, *_ in routes()), \
        f"{row.method} {row.path} is in no route of api/routes.c"


def _over_id(row):
    return f"{row.actor} on {row.target}"


def _user_state(admin, name):
    """What a refused write must leave as it was: the user object, its token and device
    ids."""
    user = expect(admin.get(f"{USERS}/{name}"), 200)["user"]
    tokens = expect(admin.get(f"{USERS}/{name}/tokens"), 200)["tokens"]
    devices = expect(admin.get(f"{USERS}/{name}/devices"), 200)["devices"]
    return user, sorted(t["id"] for t in tokens), sorted(d["id"] for d in devices)


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("row", OVER_ROWS, ids=_over_id)
def test_user_writes_over_target(server, admin, row, write):
    """OVER_ROWS x WRITES: an actor changes another user only when it holds all they hold."""
    w = WRITES[write]
    status = dict(zip(WRITES, row.expect))[write]
    actor_role = make_role(admin, unique("ow-ar"), HOLDS[row.actor])
    actor = make_user(admin, [actor_role], name=unique("ow-a"))
    client = server.login_client(actor, PASSWORD)
    if row.target == "self":
        target = actor
    else:
        target = make_user(admin, [make_role(admin, unique("ow-tr"), HOLDS[row.target])],
                           name=unique("ow-t"))
    names = {"target": target, "actor_role": actor_role}
    if "token" in w.setup:
        names["id"] = make_token(admin, target)["id"]
    if "device" in w.setup:
        dev = Device()
        dev.keep(server, target, PASSWORD)
        names["id"] = dev.id
    before = _user_state(admin, target)

    path = fill(w.path, names)
    resp = client.request(w.method, path, json=fill(w.body, names))

    if status != 403:
        expect(resp, status)
        return
    fault = expect_fault(resp, 403, "ERR_DENIED")
    holds = set(HOLDS[row.actor])
    missing = set() if row.target == "self" else set(HOLDS[row.target]) - holds
    if "user:modify" in holds and missing:
        for auth in missing:    # the refusal names what the actor lacks
            assert auth in fault["details"], fault
    else:
        assert "user:modify" in fault["details"], fault
    assert _user_state(admin, target) == before, "a refused write changed the user"
    expect(server.login(target, PASSWORD), 201)     # the password is the old one


def test_every_user_write_has_a_column():
    """A new write on a user (a route under /users/{name}) needs its column in WRITES."""
    writes = [(m, p) for m, p, *_ in routes()
              if p.startswith("/api/user/v1/users/{name}") and m in ("PUT", "POST", "DELETE")]
    assert writes
    for method, pattern in writes:
        regex = pattern_regex(pattern)
        assert any(w.method == method and regex.match(w.path) for w in WRITES.values()), \
            f"no column in WRITES (authz_table.py) for {method} {pattern}"


def test_route_table_is_parsed_whole():
    """Guards the regex of conftest.routes(): it must see every entry of routes.c."""
    assert len(routes()) == ROUTES_C.read_text().count("{METHOD_") > 0
