# SPDX-License-Identifier: ISC
"""The appliance's ways in, as the ZFS Storage Appliance RESTful API guide writes them:
credentials on every request (Basic, X-Auth-User/X-Auth-Key) as well as a session, the
X-Zfssa-<Service>-Api headers, the services list, and the system version."""
import base64
import calendar
import os
import re
import socket
import time

import pytest

from conftest import (ACCESS, AUDIT, PASSWORD, ROLES, SPINDLED, USERS, expect, expect_fault,
                      make_role, make_user, parse_time, services)

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


@pytest.mark.parametrize("form", ["basic", "x-auth"])
def test_a_remembered_password_is_no_way_past_the_throttle(spawn, form):
    """The victim's client sends its password once, which is remembered. A guesser from
    another address is locked after a few wrong guesses; its right guess then is a 429 as
    a wrong one is, and so from a 13th address once 12 have locked the name, whatever the
    credential form. The victim's own address keeps working."""
    srv = spawn()
    admin = srv.admin()
    name = make_user(admin, ["monitor"])

    def send(source, password):
        c = srv.client(source=source)
        if form == "basic":
            return c.get(VERSION, auth=(name, password))
        return c.get(VERSION, headers=user_key(name, password))

    expect(send("127.0.0.1", PASSWORD), 200)          # the victim's client: now remembered
    codes = [send("127.0.0.2", f"Wrong-{i}").status_code for i in range(8)]
    assert codes[0] == 401 and codes[-1] == 429, codes
    expect_fault(send("127.0.0.2", PASSWORD), 429, "ERR_TOO_MANY")
    expect_fault(srv.login(name, PASSWORD, source="127.0.0.2"), 429, "ERR_TOO_MANY")
    # twelve addresses lock the name (for the addresses that failed on it)
    for i in range(3, 15):
        for _ in range(2):
            send(f"127.0.0.{i}", "Wrong-x")
    expect_fault(send("127.0.0.13", PASSWORD), 429, "ERR_TOO_MANY")
    expect(send("127.0.0.1", PASSWORD), 200)          # the owner, from where it was


def test_session_still_works_beside(server, admin):
    """The guide's third way: X-Auth-Session from a login with X-Auth-User/X-Auth-Key."""
    resp = server.client().post(ACCESS, headers=user_key("admin", server.admin_password))
    expect(resp, 201)
    token = resp.headers["X-Auth-Session"]
    expect(server.client().get(VERSION, headers={"X-Auth-Session": token}), 200)


# ---- headers, services, version -------------------------------------------------------

def test_zfssa_headers_on_every_answer(server, admin):
    for path in [ACCESS, VERSION, "/api/hardware/v1/chassis", "/api/analytics/v1/datasets",
                 "/api/user/v1/nope"]:
        resp = admin.get(path)
        service = path.split("/")[2]
        assert resp.headers[f"X-Zfssa-{service.capitalize()}-Api"] == services()[service]
        assert resp.headers[f"X-Spindle-{service.capitalize()}-Api"] == services()[service]
        assert resp.headers["X-Zfssa-Version"] == "spindle." + resp.headers["X-Spindle-Version"]
    # The guide's login: X-Auth-User/X-Auth-Key, 201, X-Auth-Session, X-Zfssa-Access-Api.
    resp = server.client().post(ACCESS, headers=user_key("admin", server.admin_password))
    expect(resp, 201)
    assert resp.headers["X-Zfssa-Access-Api"] == "1.0" and resp.headers["X-Auth-Session"]


def check_services(listing, base):
    assert listing and {s["name"] for s in listing} == set(services())
    for s in listing:
        assert isinstance(s["version"], str) and s["version"] == services()[s["name"]]
        assert s["uri"] == f"{base}/api/{s['name']}/v1" and s["href"] == f"/api/{s['name']}/v1"


def test_services_list_as_the_guide_shows(server):
    """List Services with credentials and no session, as a real OS8.8 appliance answers
    it: "services" alone (the 2013.1 to OS8.7 guides wrap it in "access", as the login
    answer still does)."""
    for scheme in ("https", "http"):
        c = server.client(scheme=scheme)
        base = server.https if scheme == "https" else server.http
        body = expect(c.get(ACCESS, headers=user_key("admin", server.admin_password)), 200)
        assert list(body) == ["services"], list(body)
        check_services(body["services"], base)
        # The uri follows the name the client used for us.
        port = base.rsplit(":", 1)[1]
        body = expect(c.get(ACCESS, auth=("admin", server.admin_password),
                            headers={"Host": f"zfs-storage.example.com:{port}"}), 200)
        check_services(body["services"], f"{scheme}://zfs-storage.example.com:{port}")
        login = expect(c.post(ACCESS, auth=("admin", server.admin_password)), 201)
        check_services(login["access"]["services"], base)


def test_service_commands_as_the_guide_shows(server):
    c = server.client()
    got = expect(c.get("/api/system/v1", auth=("admin", server.admin_password)), 200)
    service = got["service"]
    assert service["name"] == "system" and service["methods"]
    for m in service["methods"]:
        assert {"description", "path", "request"} <= set(m)
        assert all(isinstance(m[k], str) for k in ("description", "path", "request"))
    assert {"request": "GET", "path": "/version"}.items() <= \
        next(m for m in service["methods"] if m["path"] == "/version").items()


GUIDE_VERSION_KEYS = ["hw_csn", "updated", "fw_vendor", "os_isa", "os_boot", "hw_product",
                      "http_version", "hw_asn", "ssl_version", "os_machine", "os_nodename",
                      "os_version", "ak_product", "fw_version", "os_release", "installed",
                      "sp_version", "os_platform", "fw_release"]
OLDER_VERSION_KEYS = ["asn", "nodename", "version", "ak_version", "csn"]
# What a real OS8.8.0 appliance answers, in its order (an inventory exporter writes each
# into a CSV column, by key).
REAL_VERSION_KEYS = ["href", "nodename", "product", "mkt_product", "version", "ak_version",
                     "ak_release", "os_version", "install_time", "update_time", "boot_time",
                     "asn", "csn", "part", "urn", "navname", "navagent", "http", "ssl",
                     "bios_version", "sp_version"]
REAL_TIME = "%a %b %d %Y %H:%M:%S GMT+0000 (UTC)"   # Thu Nov 15 2018 23:10:39 GMT+0000 (UTC)
APPLIANCE_TIME = re.compile(r"^\d{8}T\d\d:\d\d:\d\d$")


def fake_machine(root):
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "machine-id").write_text("2f4aeeb3b670ee53e0a7d8e0ae410749\n")
    dmi = root / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    for name, value in {"product_serial": "1211FM2009", "product_name": "Netra X4270 M3",
                        "sys_vendor": "Sun", "bios_vendor": "American Megatrends Inc.",
                        "bios_version": "21000208", "bios_date": "10/22/2012",
                        "product_sku": "7041262"}.items():
        (dmi / name).write_text(value + "\n")


def test_version_as_the_guide_shows(spawn, tmp_path):
    root = tmp_path / "machine"
    fake_machine(root)
    srv = spawn("--sys-root", root)
    resp = srv.client().get(VERSION, headers={"Accept": "application/json"},
                            auth=("admin", srv.admin_password))
    v = expect(resp, 200)["version"]
    for key in GUIDE_VERSION_KEYS + OLDER_VERSION_KEYS:
        assert isinstance(v.get(key), str), (key, v)
    assert v["hw_asn"] == v["asn"] == "2f4aeeb3-b670-ee53-e0a7-d8e0ae410749"
    assert v["hw_csn"] == v["csn"] == "1211FM2009"
    assert v["hw_product"] == "Sun Netra X4270 M3"
    assert (v["fw_vendor"], v["fw_version"], v["fw_release"]) == \
        ("American Megatrends Inc.", "21000208", "10/22/2012")
    # ... and as a real appliance names them: the hardware is the product
    assert v["product"] == "Sun Netra X4270 M3" and v["mkt_product"] == "Spindle"
    assert v["bios_version"] == "American Megatrends Inc. 21000208 10/22/2012"
    assert v["part"] == "7041262" and v["urn"] == "urn:uuid:" + v["asn"]
    assert v["os_nodename"] == v["nodename"] == v["hostname"]
    assert v["version"] == resp.headers["X-Spindle-Version"]
    assert v["ak_version"] == v["os_version"] and v["version"] in v["os_version"]
    for key in ("os_boot", "installed", "updated"):
        assert APPLIANCE_TIME.match(v[key]), (key, v[key])
    # os_boot is /proc/stat's btime, in the guide's format, UTC.
    # (the kernel's btime is derived from the clock: an NTP step can move it a second
    # between the daemon's read and this one)
    btime = int(next(l.split()[1] for l in open("/proc/stat") if l.startswith("btime")))
    assert v["os_boot"] in [time.strftime("%Y%m%dT%H:%M:%S", time.gmtime(btime + d))
                            for d in (-1, 0, 1)]
    assert v["http_version"].startswith("libevent/")
    assert v["ssl_version"].startswith("OpenSSL ")
    # Spindle's own keys are inside the object too; the boot time in ISO 8601 has a name of
    # its own, as boot_time is the appliance's.
    assert {"build", "os", "hostname", "boot_time_iso", "uptime_s"} <= set(v)
    assert parse_time(v["boot_time_iso"]).timestamp() == \
        calendar.timegm(time.strptime(v["boot_time"], REAL_TIME))


def test_version_as_a_real_appliance_answers(spawn, tmp_path):
    """An inventory exporter written against a real OS8.8.0 appliance reads every key of its
    version answer into a CSV; it must find each (KeyError: 'href' before), as a string,
    the times as the appliance writes them, and "version" the one top-level key."""
    import csv
    import io
    root = tmp_path / "machine"
    fake_machine(root)
    srv = spawn("--sys-root", root)
    doc = expect(srv.client().get(VERSION, auth=("admin", srv.admin_password)), 200)
    assert list(doc) == ["version"]
    v = doc["version"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(REAL_VERSION_KEYS)
    writer.writerow([v[k] for k in REAL_VERSION_KEYS])        # the exporter, unmodified
    assert all(isinstance(v[k], str) for k in REAL_VERSION_KEYS)
    assert list(v)[:len(REAL_VERSION_KEYS)] == REAL_VERSION_KEYS
    assert v["href"] == VERSION and v["sp_version"] == "-"
    # update_time: when the running binary was put in place (its inode's change time: a
    # package keeps the build's modification times)
    exe = os.stat(os.path.realpath(SPINDLED))
    assert v["update_time"] == time.strftime(REAL_TIME, time.gmtime(exe.st_ctime))
    for key in ("install_time", "update_time", "boot_time"):
        assert time.strptime(v[key], REAL_TIME), (key, v[key])
    assert v["http"].startswith("libevent/") and v["ssl"].startswith("OpenSSL ")
    assert v["nodename"] == socket.gethostname()
    # install_time: the state dir's first start (its JWT key), so not after the update
    key_made = os.stat(srv.state_dir / "jwt.key").st_mtime
    assert v["install_time"] == time.strftime(REAL_TIME, time.gmtime(key_made))


def test_version_without_dmi(spawn, tmp_path):
    """A machine that shows no DMI (a VM, a container): the keys are there, empty."""
    srv = spawn("--sys-root", tmp_path / "empty")
    v = expect(srv.client().get(VERSION, auth=("admin", srv.admin_password)), 200)["version"]
    for key in GUIDE_VERSION_KEYS + OLDER_VERSION_KEYS:
        assert isinstance(v.get(key), str), (key, v)
    assert v["hw_csn"] == v["csn"] == "" and v["hw_asn"] == v["asn"] == ""


def test_logout_with_credentials_ends_nothing(server, admin):
    """DELETE /api/access/v1 with the password and no session: nothing to end, 204; the
    sessions of that user live on."""
    c = server.client()
    assert c.delete(ACCESS, auth=("admin", server.admin_password)).status_code == 204
    expect(admin.get(VERSION), 200)


def test_faults_carry_the_guides_names(server, admin):
    """{"fault":{"message","details","code"}} with the guide's ERR_ names and codes."""
    c = server.client()
    f = expect_fault(c.get(VERSION, auth=("admin", "Wrong-password-7")), 401, "ERR_UNAUTHORIZED")
    assert isinstance(f["details"], str) and f["code"] == 401
    expect_fault(c.get("/api/user/v1/users/nobody-at-all",
                       auth=("admin", server.admin_password)), 404, "ERR_NOT_FOUND")
    role = make_role(admin)
    holder = make_user(admin, [role])
    # Deleting a role someone holds conflicts with the system's state: the guide's
    # ERR_STATE_CHANGED (ERR_OBJECT_EXISTS means a create whose object exists).
    expect_fault(c.delete(f"{ROLES}/{role}", auth=("admin", server.admin_password)), 409,
                 "ERR_STATE_CHANGED", role)
    expect_fault(admin.post(ROLES, json={"name": role, "authorizations": ["stat:read"]}), 409,
                 "ERR_OBJECT_EXISTS")
    assert admin.delete(f"{USERS}/{holder}").status_code == 204
