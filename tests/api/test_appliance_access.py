"""The appliance's ways in, as the ZFS Storage Appliance RESTful API guide writes them:
credentials on every request (Basic, X-Auth-User/X-Auth-Key) as well as a session, the
X-Zfssa-<Service>-Api headers, the services list, and the system version."""
import base64
import re
import time

from conftest import (ACCESS, AUDIT, PASSWORD, ROLES, USERS, expect, expect_fault,
                      make_role, make_user, services)

VERSION = "/api/system/v1/version"
# Routes of several services that a monitor may read.
READ_ROUTES = [VERSION, ACCESS, "/api/hardware/v1/chassis", "/api/analytics/v1/datasets",
               "/api/status/v1/dashboard"]


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def user_key(user, password):
    return {"X-Auth-User": user, "X-Auth-Key": password}


def credential_checks(admin, user, start):
    """The audit lines of credential checks (one per KDF) for user since start."""
    logs = expect(admin.get(f"{AUDIT}?start={start}&limit=1000"), 200)["logs"]
    return [e for e in logs if e["action"] == "credentials" and e["target"] == user]


def test_credentials_on_every_request(server, admin):
    name = make_user(admin, ["monitor"])
    c = server.client()
    for how in (basic, user_key):
        for path in READ_ROUTES:
            expect(c.get(path, headers=how(name, PASSWORD)), 200)
        for scheme in ("https", "http"):
            expect(server.client(scheme=scheme).get(VERSION, headers=how(name, PASSWORD)), 200)
        # Authorizations hold as for sessions: a monitor may not list users.
        expect_fault(c.get(USERS, headers=how(name, PASSWORD)), 403, "ERR_DENIED")
        expect_fault(c.get(VERSION, headers=how(name, "Wrong-password-9")), 401,
                     "ERR_UNAUTHORIZED")
        expect_fault(c.get(VERSION, headers=how("nobody-here", PASSWORD)), 401)
    # requests' own auth= (what appliance scripts use) is Basic.
    expect(c.get(VERSION, auth=(name, PASSWORD)), 200)
    admin_pw = server.admin_password
    expect(c.get(USERS, auth=("admin", admin_pw)), 200)
    # A write too: an admin creates a role with per-request credentials.
    role = f"r-{name}"
    expect(c.post(ROLES, auth=("admin", admin_pw),
                  json={"name": role, "authorizations": ["stat:read"]}), 201)
    assert c.delete(f"{ROLES}/{role}", auth=("admin", admin_pw)).status_code == 204
    # Malformed credentials are named.
    expect_fault(c.get(VERSION, headers={"X-Auth-User": name}), 400, "ERR_MISSING_ARG",
                 "X-Auth-Key")
    expect_fault(c.get(VERSION, headers={"Authorization": "Basic !!!!"}), 400,
                 "ERR_INVALID_ARG", "Authorization")


def test_kdf_runs_once_for_many_requests(spawn):
    srv = spawn()
    admin = srv.admin()
    name = make_user(admin, ["monitor"])
    start = int(time.time()) - 1
    c = srv.client()
    for i in range(30):
        how = basic if i % 2 else user_key
        expect(c.get(READ_ROUTES[i % len(READ_ROUTES)], headers=how(name, PASSWORD)), 200)
    # Another connection, another scheme: still the same remembered check.
    expect(srv.client(scheme="http").get(VERSION, auth=(name, PASSWORD)), 200)
    checks = credential_checks(admin, name, start)
    assert len(checks) == 1 and checks[0]["result"] in (True, "ok", 1, "success"), checks
    assert PASSWORD not in srv.log_text()


def test_changes_seen_on_the_next_request(spawn):
    srv = spawn()
    admin = srv.admin()
    c = srv.client()
    # A role change: the next request has the new authorizations.
    name = make_user(admin, ["monitor"])
    expect_fault(c.get(USERS, auth=(name, PASSWORD)), 403)
    expect(admin.put(f"{USERS}/{name}", json={"roles": ["operator"]}), 200)
    expect(c.get(USERS, auth=(name, PASSWORD)), 200)
    expect(admin.put(f"{USERS}/{name}", json={"roles": ["monitor"]}), 200)
    expect_fault(c.get(USERS, auth=(name, PASSWORD)), 403)
    # A role's authorizations changed.
    role = make_role(admin, authorizations=["stat:read"])
    other = make_user(admin, [role])
    expect_fault(c.get(USERS, headers=user_key(other, PASSWORD)), 403)
    expect(admin.put(f"{ROLES}/{role}", json={"authorizations": ["stat:read", "user:read"]}),
           200)
    expect(c.get(USERS, headers=user_key(other, PASSWORD)), 200)
    # A password change: the old one is refused at once, the new one works.
    expect(c.get(VERSION, auth=(name, PASSWORD)), 200)
    expect(admin.put(f"{USERS}/{name}", json={"password": "Changed-pw-22"}), 200)
    expect_fault(c.get(VERSION, auth=(name, PASSWORD)), 401, "ERR_UNAUTHORIZED")
    expect(c.get(VERSION, auth=(name, "Changed-pw-22")), 200)
    # A deleted user: refused at once.
    assert admin.delete(f"{USERS}/{name}").status_code == 204
    expect_fault(c.get(VERSION, auth=(name, "Changed-pw-22")), 401, "ERR_UNAUTHORIZED")
    # Re-created with the same name and password: a new account, its own roles.
    make_user(admin, ["operator"], name=name, password="Changed-pw-22")
    expect(c.get(USERS, auth=(name, "Changed-pw-22")), 200)


def test_failed_credentials_are_throttled(spawn):
    srv = spawn()
    admin = srv.admin()
    name = make_user(admin, ["monitor"])
    c = srv.client(source="127.0.0.3")
    codes = [c.get(VERSION, auth=(name, f"Wrong-{i}")).status_code for i in range(8)]
    assert codes[0] == 401 and 429 in codes, codes
    resp = c.get(VERSION, auth=(name, PASSWORD))      # even the right one, from there
    expect_fault(resp, 429, "ERR_TOO_MANY")
    assert resp.reason == "Too Many Requests" and int(resp.headers["Retry-After"]) > 0
    # The owner elsewhere is not locked out; a login from the locked pair is refused too.
    expect(srv.client(source="127.0.0.4").get(VERSION, auth=(name, PASSWORD)), 200)
    expect_fault(srv.login(name, PASSWORD, source="127.0.0.3"), 429)


def test_session_still_works_beside(server, admin):
    """The guide's third way: X-Auth-Session from a login with X-Auth-User/X-Auth-Key."""
    resp = server.client().post(ACCESS, headers=user_key("admin", server.admin_password))
    expect(resp, 201)
    token = resp.headers["X-Auth-Session"]
    expect(server.client().get(VERSION, headers={"X-Auth-Session": token}), 200)
