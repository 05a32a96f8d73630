"""The audit log: who did what, from where, in order."""
import json
import time

from conftest import (ACCESS, AUDIT, PASSWORD, ROLES, USERS, expect, expect_fault, iso,
                      make_role, make_token, make_user, parse_time)

ACTIONS = {"login", "logout", "token.create", "user.create", "user.update", "user.delete",
           "role.create", "role.update", "role.delete"}


def test_audit_trail(spawn):
    srv = spawn()   # own server: a known, short history with a failed login in it
    start = int(time.time()) - 1
    admin = srv.admin()
    expect_fault(srv.login("admin", "Wrong-password-1"), 401)
    name = make_user(admin)
    expect(admin.put(f"{USERS}/{name}", json={"fullname": "Audited"}), 200)
    make_token(admin, name, name="audit-token")
    assert admin.delete(f"{USERS}/{name}").status_code == 204
    make_role(admin, "audit-role")
    expect(admin.put(f"{ROLES}/audit-role", json={"description": "changed"}), 200)
    assert admin.delete(f"{ROLES}/audit-role").status_code == 204
    assert srv.admin().delete(ACCESS).status_code == 204

    logs = expect(admin.get(f"{AUDIT}?start={start}&limit=1000"), 200)["logs"]
    for entry in logs:
        assert {"id", "time", "user", "address", "action", "target", "details",
                "result"} <= set(entry), entry
    assert ACTIONS <= {e["action"] for e in logs}
    assert [e["id"] for e in logs] == sorted(e["id"] for e in logs)          # oldest first
    times = [parse_time(e["time"]) for e in logs]
    assert times == sorted(times)
    assert PASSWORD not in json.dumps(logs) and "Wrong-password-1" not in json.dumps(logs)

    ok, failed = [e for e in logs if e["action"] == "login"][:2]
    assert ok["user"] == failed["user"] == "admin"
    assert ok["address"] == failed["address"] == "127.0.0.1"
    assert ok["result"] != failed["result"]
    created = [e for e in logs if e["action"] == "user.create" and e["target"] == name]
    assert len(created) == 1 and created[0]["user"] == "admin"
    assert created[0]["address"] == "127.0.0.1"

    by_iso = expect(admin.get(f"{AUDIT}?start={iso(start)}&limit=1000"), 200)["logs"]
    assert [e["id"] for e in by_iso] == [e["id"] for e in logs]
    assert len(expect(admin.get(f"{AUDIT}?start={start}&limit=2"), 200)["logs"]) == 2
    assert expect(admin.get(f"{AUDIT}?start={start + 3600}"), 200)["logs"] == []
