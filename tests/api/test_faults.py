# SPDX-License-Identifier: ISC
"""Every fault a client can reach, as a table; then the ones that need their own server
(413 with a small --max-body, 429 after failed logins)."""
import socket
from collections import namedtuple

import pytest

from conftest import (ACCESS, AUDIT, PASSWORD, REQUEST_TIMEOUT, ROLES, USERS,
                      check_common_headers, expect, expect_fault, pattern_regex, routes, unique)

Raw = namedtuple("Raw", "data content_type")   # a body sent exactly as given
VALID = '{"name": "f-media", "password": "%s", "roles": ["monitor"]}' % PASSWORD


def new_user(**fields):
    """A create-user body that is valid except for what fields change (None drops a key)."""
    body = {"name": unique("f-user"), "password": PASSWORD, "roles": ["monitor"], **fields}
    return {k: v for k, v in body.items() if v is not None}


# who, method, path, body (dict: JSON; str: raw JSON text; Raw), status, message, details
# (text the details must hold), headers (extra request headers)
Case = namedtuple("Case", "who method path body status message details headers",
                  defaults=(None,))
CASES = {
    # 400: bad bodies
    "roles not a list": Case("admin", "POST", USERS, new_user(roles="x"),
                             400, "ERR_INVALID_ARG", "roles"),
    "roles of numbers": Case("admin", "POST", USERS, new_user(roles=[1]),
                             400, "ERR_INVALID_ARG", "roles"),
    "name not a string": Case("admin", "POST", USERS, new_user(name=5),
                              400, "ERR_INVALID_ARG", "name"),
    "timeout negative": Case("admin", "POST", USERS, new_user(session_timeout_min=-1),
                             400, "ERR_INVALID_ARG", "session_timeout_min"),
    "timeout huge": Case("admin", "POST", USERS, new_user(session_timeout_min=10**12),
                         400, "ERR_INVALID_ARG", "session_timeout_min"),
    "timeout 2^32+30": Case("admin", "POST", USERS, new_user(session_timeout_min=2**32 + 30),
                            400, "ERR_INVALID_ARG", "session_timeout_min"),
    "timeout a string": Case("admin", "POST", USERS, new_user(session_timeout_min="30"),
                             400, "ERR_INVALID_ARG", "session_timeout_min"),
    "unknown key": Case("admin", "POST", USERS, new_user(colour="red"),
                        400, "ERR_UNKNOWN_ARG", "colour"),
    "no password": Case("admin", "POST", USERS, new_user(password=None),
                        400, "ERR_MISSING_ARG", "password"),
    "no name": Case("admin", "POST", USERS, new_user(name=None),
                    400, "ERR_MISSING_ARG", "name"),
    "no roles": Case("admin", "POST", USERS, new_user(roles=None),
                     400, "ERR_MISSING_ARG", "roles"),
    "name with a slash": Case("admin", "POST", USERS, new_user(name="a/b"),
                              400, "ERR_INVALID_ARG", "name"),
    "name too long": Case("admin", "POST", USERS, new_user(name="n" * 65),
                          400, "ERR_INVALID_ARG", "name"),
    "name empty": Case("admin", "POST", USERS, new_user(name=""), 400, "ERR_INVALID_ARG", "name"),
    "password empty": Case("admin", "POST", USERS, new_user(password=""),
                           400, "ERR_INVALID_ARG", "password"),
    "fullname too long": Case("admin", "POST", USERS, new_user(fullname="f" * 129),
                              400, "ERR_INVALID_ARG", "fullname"),
    "unknown role": Case("admin", "POST", USERS, new_user(roles=["no-such-role"]),
                         400, None, None),
    "malformed JSON": Case("admin", "POST", USERS, '{"name": ', 400, None, None),
    "duplicate keys": Case("admin", "POST", USERS,
                           '{"name": "f-dup1", "name": "f-dup2", "password": "%s", '
                           '"roles": ["monitor"]}' % PASSWORD, 400, None, "name"),
    "body an array": Case("admin", "POST", USERS, "[]", 400, None, None),
    "empty body": Case("admin", "POST", USERS, "", 400, None, None),
    "NUL in a string": Case("admin", "POST", USERS,
                            VALID.replace("f-media", "f-\\u0000nul"), 400, None, None),
    "token expires_days negative": Case("admin", "POST", USERS + "/admin/tokens",
                                        {"name": "f-tok", "expires_days": -1},
                                        400, "ERR_INVALID_ARG", "expires_days"),
    "token without name": Case("admin", "POST", USERS + "/admin/tokens", {},
                               400, "ERR_MISSING_ARG", "name"),
    "role unknown authorization": Case("admin", "POST", ROLES,
                                       {"name": "f-role1", "authorizations": ["nope:read"]},
                                       400, "ERR_INVALID_ARG", "authorizations"),
    "role unknown key": Case("admin", "POST", ROLES,
                             {"name": "f-role2", "authorizations": [], "colour": "red"},
                             400, "ERR_UNKNOWN_ARG", "colour"),
    "a user renamed": Case("admin", "PUT", USERS + "/admin", {"name": "f-renamed"},
                           400, "ERR_INVALID_ARG", "name: cannot be changed"),
    "a user renamed to the same name": Case("admin", "PUT", USERS + "/admin",
                                            {"name": "admin", "fullname": "f-admin"},
                                            400, "ERR_INVALID_ARG", "name: cannot be changed"),
    "a role renamed": Case("admin", "PUT", ROLES + "/monitor", {"name": "f-renamed"},
                           400, "ERR_INVALID_ARG", "name: cannot be changed"),
    "audit limit not a number": Case("admin", "GET", AUDIT + "?limit=abc", None,
                                     400, "ERR_INVALID_ARG", "limit"),
    "audit limit negative": Case("admin", "GET", AUDIT + "?limit=-1", None,
                                 400, "ERR_INVALID_ARG", "limit"),
    "audit start not a time": Case("admin", "GET", AUDIT + "?start=yesterday", None,
                                   400, "ERR_INVALID_ARG", "start"),
    "login, user header alone": Case("anon", "POST", ACCESS, None, 400, "ERR_MISSING_ARG",
                                     "X-Auth-Key", {"X-Auth-User": "admin"}),
    "login, Basic not base64": Case("anon", "POST", ACCESS, None, 400, "ERR_INVALID_ARG",
                                    "Authorization", {"Authorization": "Basic !!!!"}),
    "login, body without password": Case("anon", "POST", ACCESS, {"user": "admin"},
                                         400, "ERR_MISSING_ARG", "password"),
    "login, unknown key": Case("anon", "POST", ACCESS, {"user": "admin", "password": "x",
                                                        "otp": "1"},
                               400, "ERR_UNKNOWN_ARG", "otp"),
    # 400: a misspelt name is answered with the one meant
    "a field misspelt": Case("admin", "POST", USERS, new_user(fulname="Ann"), 400,
                             "ERR_UNKNOWN_ARG", "fulname: unknown property; did you mean "
                             "fullname?"),
    "a field in camel case": Case("admin", "POST", USERS, new_user(sessionTimeoutMin=5), 400,
                                  "ERR_UNKNOWN_ARG", "did you mean session_timeout_min?"),
    "a query parameter misspelt": Case("admin", "GET", AUDIT + "?limt=3", None, 400,
                                       "ERR_UNKNOWN_ARG", "limt: unknown query parameter; "
                                       "did you mean limit?"),
    "a job spec field misspelt": Case("admin", "POST", "/api/bench/v1/jobs",
                                      {"pattern": "randread", "blocksize": "8k",
                                       "size": "1M"}, 400, "ERR_UNKNOWN_ARG",
                                      "blocksize: unknown field; did you mean block_size?"),
    "a worksheet field misspelt": Case("admin", "POST", "/api/analytics/v1/worksheets",
                                       {"name": "f-ws", "dataset": []}, 400, "ERR_UNKNOWN_ARG",
                                       "dataset: unknown property; did you mean datasets?"),
    "a worksheet view's field misspelt": Case(
        "admin", "POST", "/api/analytics/v1/worksheets",
        {"name": "f-ws", "datasets": [{"name": "io.ops[op]", "drilldown": []}]}, 400,
        "ERR_UNKNOWN_ARG", "datasets[0].drilldown: unknown property; did you mean drilldowns?"),
    "unknown and like nothing": Case("admin", "POST", USERS, new_user(colour="red"), 400,
                                     "ERR_UNKNOWN_ARG", "colour: unknown property"),
    # 401, 403
    "no token": Case("anon", "GET", USERS, None, 401, "ERR_UNAUTHORIZED", None),
    "no token, mutating": Case("anon", "POST", USERS, new_user(name="f-anon"),
                               401, "ERR_UNAUTHORIZED", None),
    "monitor lists users": Case("monitor", "GET", USERS, None, 403, "ERR_DENIED", None),
    "monitor creates a user": Case("monitor", "POST", USERS, new_user(name="f-mon"),
                                   403, "ERR_DENIED", None),
    "builtin role changed": Case("admin", "PUT", ROLES + "/operator",
                                 {"authorizations": ["stat:read"]}, 403, "ERR_DENIED", None),
    "builtin role deleted": Case("admin", "DELETE", ROLES + "/admin", None,
                                 403, "ERR_DENIED", None),
    # 404
    "unknown service": Case("admin", "GET", "/api/nosuch/v1/things", None,
                            404, "ERR_NOT_FOUND", None),
    "unknown path in a service": Case("admin", "GET", "/api/user/v1/nosuch", None,
                                      404, "ERR_NOT_FOUND", None),
    "not the API": Case("admin", "GET", "/api/", None, 404, "ERR_NOT_FOUND", None),
    "unknown user": Case("admin", "GET", USERS + "/nosuchuser", None,
                         404, "ERR_NOT_FOUND", None),
    "encoded slash": Case("admin", "GET", USERS + "/a%2Fb", None, 404, "ERR_NOT_FOUND", None),
    "a trailing slash": Case("admin", "GET", USERS + "/", None, 404, "ERR_NOT_FOUND",
                             "no trailing slash: use /api/user/v1/users"),
    "a trailing slash on a POST": Case("admin", "POST", USERS + "/", new_user(), 404,
                                       "ERR_NOT_FOUND",
                                       "no trailing slash: use /api/user/v1/users"),
    "a trailing slash after a name": Case("admin", "GET", USERS + "/admin/", None, 404,
                                          "ERR_NOT_FOUND",
                                          "no trailing slash: use /api/user/v1/users/admin"),
    "a trailing slash, unauthenticated": Case("anon", "GET", "/metrics/", None, 404,
                                              "ERR_NOT_FOUND", "no trailing slash: use /metrics"),
    "dot-dot segment": Case("admin", "GET", USERS + "/%2e%2e", None,
                            404, "ERR_NOT_FOUND", None),
    "unknown role GET": Case("admin", "GET", ROLES + "/nosuchrole", None,
                             404, "ERR_NOT_FOUND", None),
    "unknown user's tokens": Case("admin", "GET", USERS + "/nosuchuser/tokens", None,
                                  404, "ERR_NOT_FOUND", None),
    "unknown token": Case("admin", "DELETE", USERS + "/admin/tokens/nosuchtoken", None,
                          404, "ERR_NOT_FOUND", None),
    # 405 (the Allow header is checked against routes.c)
    "PATCH users": Case("admin", "PATCH", USERS, new_user(), 405, "ERR_METHOD", None),
    "PUT users": Case("admin", "PUT", USERS, new_user(), 405, "ERR_METHOD", None),
    "PUT access": Case("admin", "PUT", ACCESS, {}, 405, "ERR_METHOD", None),
    "DELETE health": Case("anon", "DELETE", "/api/system/v1/health", None,
                          405, "ERR_METHOD", None),
    # 409
    "user exists": Case("admin", "POST", USERS, new_user(name="admin"),
                        409, "ERR_OBJECT_EXISTS", None),
    "role exists": Case("admin", "POST", ROLES, {"name": "monitor", "authorizations": []},
                        409, "ERR_OBJECT_EXISTS", None),
    # 415
    "no content type": Case("admin", "POST", USERS, Raw(VALID, None),
                            415, "ERR_UNSUPPORTED_MEDIA", None),
    "text/plain": Case("admin", "POST", USERS, Raw(VALID, "text/plain"),
                       415, "ERR_UNSUPPORTED_MEDIA", None),
    "form data": Case("admin", "POST", USERS,
                      Raw("name=f-form", "application/x-www-form-urlencoded"),
                      415, "ERR_UNSUPPORTED_MEDIA", None),
}


def send(client, method, path, body, headers=None):
    headers = dict(headers or {})
    if body is None or isinstance(body, dict):
        return client.request(method, path, json=body, headers=headers)
    if isinstance(body, str):
        body = Raw(body, "application/json")
    if body.content_type:
        headers["Content-Type"] = body.content_type
    return client.request(method, path, data=body.data.encode(), headers=headers)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_fault(clients, case):
    resp = send(clients[case.who], case.method, case.path, case.body, case.headers)
    expect_fault(resp, case.status, case.message, case.details)
    check_common_headers(resp, case.path)
    if case.status == 405:
        allowed = {m for m, p, *_ in routes() if pattern_regex(p).match(case.path)}
        allowed |= {"HEAD"} if "GET" in allowed else set()      # HEAD: GET without the body
        assert set(resp.headers["Allow"].replace(" ", "").split(",")) == allowed


def test_options_answers_what_a_route_allows(clients):
    """OPTIONS: 204 with Allow (the route's methods, HEAD with GET, and OPTIONS), no
    credentials needed, and no CORS header: the API answers its own origin only."""
    anon = clients["anon"]
    for path in (USERS, ACCESS, "/api/bench/v1/jobs/7", "/api/openapi.json", "/metrics"):
        resp = anon.request("OPTIONS", path, headers={
            "Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"})
        assert resp.status_code == 204 and resp.content == b"", (path, resp.status_code)
        allowed = {m for m, p, *_ in routes() if pattern_regex(p).match(path)}
        allowed |= {"HEAD"} if "GET" in allowed else set()
        assert set(resp.headers["Allow"].replace(" ", "").split(",")) == allowed | {"OPTIONS"}
        assert not [h for h in resp.headers if h.lower().startswith("access-control-")], \
            resp.headers
    expect_fault(anon.request("OPTIONS", "/api/no/such"), 404, "ERR_NOT_FOUND")


def test_nothing_was_created_by_the_faults(admin):
    names = {u["name"] for u in expect(admin.get(USERS), 200)["users"]}
    assert not {n for n in names if n.startswith("f-")}, names
    roles = {r["name"] for r in expect(admin.get(ROLES), 200)["roles"]}
    assert not {n for n in roles if n.startswith("f-")}, roles


def test_body_under_default_max_body(admin):
    body = '{"name": "big", "password": "%s", "roles": ["monitor"]}' % PASSWORD
    expect(send(admin, "POST", USERS, body + " " * (1000 * 1000 - len(body))), 201)


def test_body_over_max_body(spawn):
    srv = spawn("--max-body", 4096)
    admin = srv.admin()
    small = '{"name": "fits", "password": "%s", "roles": ["monitor"]}' % PASSWORD
    expect(send(admin, "POST", USERS, small + " " * (4000 - len(small))), 201)
    big = small.replace("fits", "too-big") + " " * 8192
    resp = send(admin, "POST", USERS, big)
    expect_fault(resp, 413, "ERR_OVER_LIMIT")
    check_common_headers(resp, USERS)
    expect_fault(admin.get(USERS + "/too-big"), 404, "ERR_NOT_FOUND")


def test_login_throttle(spawn):
    srv = spawn()
    admin = srv.admin()
    for _ in range(5):
        expect_fault(srv.login("admin", "wrong-password"), 401, "ERR_UNAUTHORIZED")
    resp = srv.login("admin", srv.admin_password)       # right password, still locked
    expect_fault(resp, 429, "ERR_TOO_MANY")
    assert resp.reason == "Too Many Requests"
    assert int(resp.headers["Retry-After"]) > 0
    expect(admin.get(ACCESS), 200)                      # existing sessions keep working


def test_login_throttle_spares_other_addresses(spawn):
    """Guesses from one address do not lock the account out elsewhere: after 5 wrong admin
    passwords from 127.0.0.2, admin still logs in from 127.0.0.1. The guesser locks out
    itself (per user and address, per address); a lock on the name holds only against
    addresses that failed on it."""
    srv = spawn()
    for _ in range(5):
        expect_fault(srv.login("admin", "wrong-password", source="127.0.0.2"), 401,
                     "ERR_UNAUTHORIZED")
    resp = srv.login("admin", srv.admin_password, source="127.0.0.2")
    expect_fault(resp, 429, "ERR_TOO_MANY")             # the guesser's own address
    assert int(resp.headers["Retry-After"]) > 0
    expect(srv.login("admin", srv.admin_password), 201)  # the owner, from 127.0.0.1
    expect(srv.login("admin", srv.admin_password, source="127.0.0.3"), 201)
    # failures for admin from ten addresses lock the name, but only for those addresses
    for i in range(3, 13):
        expect_fault(srv.login("admin", "wrong-password", source=f"127.0.0.{i}"), 401,
                     "ERR_UNAUTHORIZED")
    expect_fault(srv.login("admin", srv.admin_password, source="127.0.0.4"), 429,
                 "ERR_TOO_MANY")
    expect(srv.login("admin", srv.admin_password), 201)
    expect(srv.login("admin", srv.admin_password, source="127.0.0.99"), 201)


@pytest.mark.parametrize("path", ["/api/system/v1/health", "/api/user/v1/users", "/api/nosuch"])
def test_head_answer_carries_no_body(server, path):
    """Whatever HEAD gets (200, 401, 404, 405), a body after its headers would be read as
    the start of the next answer on the keep-alive connection."""
    wire = (f"HEAD {path} HTTP/1.1\r\nHost: s\r\n\r\n"
            "GET /api/system/v1/health HTTP/1.1\r\nHost: s\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.http_port), REQUEST_TIMEOUT) as sock:
        sock.sendall(wire.encode())
        data = b""
        while b'{"health":' not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {data!r}"
            data += chunk
    head, after = data.split(b"\r\n\r\n", 1)
    assert head.split()[1] in (b"200", b"401", b"404", b"405"), head
    assert after.startswith(b"HTTP/1.1 200"), f"HEAD {path} answer had a body: {after[:120]!r}"
