# SPDX-License-Identifier: ISC
"""Logging in and out, session tokens, and the public documents (health, version, OpenAPI)."""
import hashlib
import hmac
import json
import os
import socket
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from conftest import (ACCESS, ALL_AUTHS, PASSWORD, b64url_encode, expect, expect_fault,
                      jwt_part, make_user, parse_time, routes, services)

VIAS = ["headers", "basic", "body"]
SCHEMES = ["https", "http"]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("via", VIAS)
def test_login_use_logout(server, scheme, via):
    resp = server.login("admin", server.admin_password, via=via, scheme=scheme)
    access = expect(resp, 201)["access"]
    token = resp.headers["X-Auth-Session"]
    assert access["token"] == token
    assert resp.headers["Location"] == ACCESS    # the session made: GET it, DELETE it
    assert access["user"] == "admin"
    assert set(access["authorizations"]) == ALL_AUTHS
    assert parse_time(access["expires"]).timestamp() > time.time()
    assert {s["name"] for s in access["services"]} == set(services())
    for s in access["services"]:
        assert s["version"] == services()[s["name"]] and s["href"], s

    c = server.client(scheme=scheme)
    for auth in ({"X-Auth-Session": token}, {"Authorization": f"Bearer {token}"}):
        body = expect(c.get(ACCESS, headers=auth), 200)
        assert {s["name"] for s in body["services"]} == set(services())

    assert c.delete(ACCESS, token=token).status_code == 204
    expect_fault(c.get(ACCESS, token=token), 401, "ERR_UNAUTHORIZED")
    expect_fault(c.get(ACCESS, headers={"Authorization": f"Bearer {token}"}), 401)


def test_token_is_valid_on_both_listeners(server):
    token = server.admin().token
    for scheme in SCHEMES:
        expect(server.client(token, scheme).get(ACCESS), 200)


def test_token_is_hs256_jwt_with_claims(server, admin):
    header, claims = jwt_part(admin.token, 0), jwt_part(admin.token, 1)
    assert header["alg"] == "HS256"
    assert claims["sub"] == "admin"
    assert {"jti", "iat", "exp"} <= set(claims)
    assert claims["iat"] <= time.time() + 60 < claims["exp"]


def _forged(token, how):
    """A token the server must refuse, derived from a good one."""
    head, payload, sig = token.split(".")

    def b64(doc):
        return b64url_encode(json.dumps(doc).encode())

    if how == "tampered signature":
        return f"{head}.{payload}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BB'}"
    if how == "tampered payload":
        claims = jwt_part(token, 1)
        claims["exp"] += 3600
        return f"{head}.{b64(claims)}.{sig}"
    if how == "alg none":
        return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{payload}."
    if how == "other key":
        signing = f"{head}.{payload}".encode()
        mac = hmac.new(b"k" * 32, signing, hashlib.sha256).digest()
        return f"{head}.{payload}.{b64url_encode(mac)}"
    return {"garbage": "not-a-token", "empty": ""}[how]


@pytest.mark.parametrize("how", ["tampered signature", "tampered payload", "alg none",
                                 "other key", "garbage", "empty"])
def test_forged_tokens_are_refused(server, admin, how):
    bad = _forged(admin.token, how)
    c = server.client()
    expect_fault(c.get(ACCESS, headers={"X-Auth-Session": bad}), 401, "ERR_UNAUTHORIZED")
    expect_fault(c.get(ACCESS, headers={"Authorization": f"Bearer {bad}"}), 401,
                 "ERR_UNAUTHORIZED")


def test_no_token_is_refused(server):
    expect_fault(server.client().get(ACCESS), 401, "ERR_UNAUTHORIZED")


def test_logout_kills_only_that_session(server):
    one, two = server.admin(), server.admin()
    assert one.delete(ACCESS).status_code == 204
    expect_fault(one.get(ACCESS), 401)
    expect(two.get(ACCESS), 200)


def test_bad_password_and_unknown_user_look_alike(spawn):
    srv = spawn()   # own server: failed logins must not throttle the shared one
    admin = srv.admin()
    make_user(admin, name="alice")
    bad = expect_fault(srv.login("alice", "wrong-" + PASSWORD), 401, "ERR_UNAUTHORIZED")
    unknown = expect_fault(srv.login("nobody", PASSWORD), 401, "ERR_UNAUTHORIZED")
    assert bad["details"] == unknown["details"]
    assert "X-Auth-Session" not in srv.login("alice", "wrong").headers
    expect(srv.login("alice", PASSWORD), 201)


def test_health_needs_no_token(server):
    health = expect(server.client().get("/api/system/v1/health"), 200)["health"]
    assert health["status"] == "ok"


def test_version(server, admin):
    resp = admin.get("/api/system/v1/version")
    version = expect(resp, 200)["version"]
    assert {"product", "version", "build", "os", "hostname", "boot_time_iso",
            "uptime_s"} <= set(version)
    assert version["hostname"] == socket.gethostname()
    assert isinstance(version["uptime_s"], int) and version["uptime_s"] >= 0
    assert parse_time(version["boot_time_iso"]).timestamp() <= time.time()
    assert resp.headers["X-Spindle-Version"] == version["version"]
    # the box's time zone, for the console's time picker: the server's own, whatever it is
    # (the shared server runs in this process's zone)
    assert isinstance(version["timezone"], str)
    assert version["utc_offset_s"] == datetime.now().astimezone().utcoffset().total_seconds()


@pytest.mark.parametrize("tz", ["America/New_York", "Asia/Kolkata", "UTC"])
def test_version_says_the_box_time_zone(spawn, tz):
    """The time zone the box runs in (here TZ in spindled's environment), with its offset
    now, as the console's time picker shows them."""
    srv = spawn(env={**os.environ, "TZ": tz})
    version = expect(srv.admin().get("/api/system/v1/version"), 200)["version"]
    assert version["timezone"] == tz
    want = datetime.now(ZoneInfo(tz)).utcoffset().total_seconds()
    assert version["utc_offset_s"] == want, version


def test_openapi_document_lists_every_route(server):
    doc = expect(server.client().get("/api/openapi.json"), 200)
    assert doc["openapi"].startswith("3.1.")
    prefixes = [""] + [s["url"].rstrip("/") for s in doc.get("servers", [])]
    for method, pattern, *_ in routes():
        found = [doc["paths"][pattern[len(p):]] for p in prefixes
                 if pattern.startswith(p) and pattern[len(p):] in doc["paths"]]
        assert found and method.lower() in found[0], f"{method} {pattern} not in openapi.json"


def test_openapi_document_is_cached_and_gzipped(server):
    """The document (some 250 KB) is the same bytes for the life of the binary: an ETag
    and a 304 for a client that has it, gzip for one that takes it (another
    representation, another tag), and the gzip unpacks to the plain bytes."""
    import gzip
    c = server.client()
    plain = c.get("/api/openapi.json", headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "Content-Encoding" not in plain.headers
    assert plain.headers["Vary"] == "Accept-Encoding"
    assert plain.headers["Cache-Control"] == "public, no-cache"
    etag = plain.headers["ETag"]
    gz = c.get("/api/openapi.json", headers={"Accept-Encoding": "gzip"}, stream=True)
    raw = gz.raw.read(decode_content=False)
    assert gz.headers["Content-Encoding"] == "gzip" and gz.headers["ETag"] != etag
    assert gzip.decompress(raw) == plain.content
    assert len(raw) < len(plain.content) / 5, (len(raw), len(plain.content))
    for enc, tag in (("identity", etag), ("gzip", gz.headers["ETag"])):
        again = c.get("/api/openapi.json",
                      headers={"Accept-Encoding": enc, "If-None-Match": tag})
        assert again.status_code == 304 and again.content == b"", (enc, again.status_code)
        assert again.headers["ETag"] == tag and "Content-Type" not in again.headers
    # the other representation's tag is not this one's
    other = c.get("/api/openapi.json",
                  headers={"Accept-Encoding": "identity", "If-None-Match": gz.headers["ETag"]})
    assert other.status_code == 200 and other.content == plain.content


def test_every_service_href_answers_with_its_methods(server, clients):
    """The login answer's services[].href lead somewhere: GET /api/<service>/v1 lists the
    service's methods (the appliance's "get service commands"), from api/routes.c."""
    monitor = clients["monitor"]         # any session will do
    services = expect(monitor.get(ACCESS), 200)["services"]
    for svc in services:
        got = expect(monitor.get(svc["href"]), 200)
        if svc["name"] == "access":      # the list of services itself
            assert got == {"services": services}
            continue
        assert set(got) == {"service"}
        service = got["service"]
        assert (service["name"], service["version"], service["href"]) == \
            (svc["name"], svc["version"], svc["href"])
        base = svc["href"]
        want = {(m, p) for m, p, s, *_ in routes()
                if s == svc["name"] and p.startswith(base + "/")}
        assert want, svc
        got_methods = {(m["request"], m["uri"]) for m in service["methods"]}
        assert got_methods == want
        for m in service["methods"]:
            assert m["uri"] == base + m["path"].replace("<", "{").replace(">", "}"), m
            assert m["description"] and m["authorization"], m
    # the appliance's version spelling, and the authorization every route wants
    user = expect(monitor.get("/api/user/v1.0"), 200)["service"]
    by_uri = {(m["request"], m["uri"]): m for m in user["methods"]}
    assert by_uri[("GET", "/api/user/v1/users")]["authorization"] == "user:read"
    assert by_uri[("PUT", "/api/user/v1/users/{name}")]["authorization"] == \
        "self or user:modify"
    assert by_uri[("GET", "/api/user/v1/users/{name}")]["path"] == "/users/<name>"
    expect_fault(server.client().get("/api/user/v1"), 401, "ERR_UNAUTHORIZED")
