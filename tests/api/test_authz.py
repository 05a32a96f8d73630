"""The authorization table (authz_table.py) against a live server, and against routes.c."""
import pytest

from authz_table import COLUMNS, ROWS
from conftest import (ROUTES_C, check_common_headers, expect, expect_fault, make_role,
                      make_token, make_user, pattern_regex, routes, unique)

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
    if "login" in row.setup and who != "anon":
        client = server.login_client(user, password)
    if "worksheet" in row.setup:
        ws = {"name": names["target"]}
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


def test_route_table_is_parsed_whole():
    """Guards the regex of conftest.routes(): it must see every entry of routes.c."""
    assert len(routes()) == ROUTES_C.read_text().count("{METHOD_") > 0
