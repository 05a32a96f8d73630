# SPDX-License-Identifier: ISC
"""The audit log: who did what, from where, in order."""
import json
import sqlite3
import time

from conftest import (ACCESS, AUDIT, PASSWORD, ROLES, USERS, expect, expect_fault, iso,
                      make_role, make_token, make_user, parse_time, run_daemon)

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


def test_entries_past_audit_days_are_deleted(spawn, tmp_path):
    """--audit-days: what is older goes at start (and hourly after); the rest stays."""
    state = tmp_path / "audit-state"
    srv = spawn("--audit-days", "2", state_dir=state)
    srv.admin()  # a login: one entry of now
    srv.stop()
    now = int(time.time())
    with sqlite3.connect(state / "spindle.db") as c:
        for days, target in ((3, "three-days-old"), (1, "one-day-old")):
            c.execute("INSERT INTO audit (time, action, target, ok) VALUES (?, 'test', ?, 1)",
                      (now - days * 86400, target))
    srv.start()
    admin = srv.admin()
    logs = expect(admin.get(f"{AUDIT}?start=0&limit=1000"), 200)["logs"]
    targets = {e["target"] for e in logs}
    assert "one-day-old" in targets and "three-days-old" not in targets
    assert any(e["action"] == "login" for e in logs)
    srv.stop()
    rc, _, err = run_daemon("--foreground", "--state-dir", state, "--audit-days", "0")
    assert rc == 2 and any("--audit-days: '0' is not a whole number" in l for l in err), err
