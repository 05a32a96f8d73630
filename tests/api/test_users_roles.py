# SPDX-License-Identifier: ISC
"""Users, their API tokens, and roles: the life cycles and the rules around them."""
import time

import pytest

from conftest import (ACCESS, AUDIT, BUILTIN_ROLES, PASSWORD, ROLES, USERS, expect,
                      expect_fault, expect_refusal, jwt_part, keys_deep, make_role, make_token,
                      make_user, parse_time, unique)

SECRET_KEYS = {"password", "pwhash", "hash", "salt", "secret", "current_password"}
NEW_PASSWORD = "Spindle-new-pw-2"


def user_url(name):
    return f"{USERS}/{name}"


def roles_of(admin, name):
    return expect(admin.get(user_url(name)), 200)["user"]["roles"]


# ---- users --------------------------------------------------------------------------

def test_create_get_list(admin):
    name = unique("alice")
    resp = admin.post(USERS, json={"name": name, "password": PASSWORD, "roles": ["monitor"],
                                   "fullname": "Alice Example", "session_timeout_min": 30})
    user = expect(resp, 201)["user"]
    assert resp.headers["Location"].endswith(user_url(name))
    assert user["name"] == name and user["fullname"] == "Alice Example"
    assert user["roles"] == ["monitor"]
    assert set(user["authorizations"]) == BUILTIN_ROLES["monitor"]
    assert user["session_timeout_min"] == 30
    assert parse_time(user["ctime"]) <= parse_time(user["mtime"])
    assert user["href"].endswith(user_url(name))
    assert not keys_deep(user) & SECRET_KEYS

    assert expect(admin.get(user_url(name)), 200)["user"] == user
    listing = expect(admin.get(USERS), 200)["users"]
    assert [u for u in listing if u["name"] == name] == [user]
    assert all(u["href"].endswith(user_url(u["name"])) for u in listing)
    assert not keys_deep(listing) & SECRET_KEYS


def test_json_with_charset_is_json(admin):
    body = '{"name": "%s", "password": "%s", "roles": ["monitor"]}' % (unique("cs"), PASSWORD)
    resp = admin.post(USERS, data=body.encode(),
                      headers={"Content-Type": "application/json; charset=utf-8"})
    expect(resp, 201)


def test_update(admin):
    name = make_user(admin)
    created = expect(admin.get(user_url(name)), 200)["user"]
    time.sleep(1.1)     # so mtime can move
    updated = expect(admin.put(user_url(name), json={"fullname": "New Name",
                                                     "session_timeout_min": 45}), 200)["user"]
    assert updated["fullname"] == "New Name" and updated["session_timeout_min"] == 45
    assert updated["ctime"] == created["ctime"]
    assert parse_time(updated["mtime"]) > parse_time(created["mtime"])
    assert expect(admin.get(user_url(name)), 200)["user"] == updated


def test_new_user_logs_in_with_its_roles(server, admin):
    name = make_user(admin, ["operator", "monitor"])
    access = expect(server.login(name, PASSWORD), 201)["access"]
    assert access["user"] == name
    assert set(access["authorizations"]) == BUILTIN_ROLES["operator"] | BUILTIN_ROLES["monitor"]


def test_own_password_change(server, admin):
    name = make_user(admin)
    me = server.login_client(name, PASSWORD)
    resp = me.put(user_url(name), json={"password": NEW_PASSWORD, "current_password": PASSWORD})
    assert resp.status_code in (200, 204), resp.text
    expect(server.login(name, NEW_PASSWORD), 201)
    expect_fault(server.login(name, PASSWORD), 401, "ERR_UNAUTHORIZED")


@pytest.mark.parametrize("current", [None, "Wrong-current-pw-9"], ids=["missing", "wrong"])
def test_own_password_change_needs_current_password(server, admin, current):
    name = make_user(admin)
    me = server.login_client(name, PASSWORD)
    body = {"password": NEW_PASSWORD, "current_password": current}
    resp = me.put(user_url(name), json={k: v for k, v in body.items() if v})
    assert "current_password" in expect_refusal(resp, 400, 403)["details"]
    expect(server.login(name, PASSWORD), 201)


@pytest.mark.parametrize("change", [{"roles": ["admin"]}, {"roles": []},
                                    {"session_timeout_min": 600}], ids=str)
def test_monitor_cannot_change_own_account(server, admin, change):
    name = make_user(admin)
    me = server.login_client(name, PASSWORD)
    before = expect(admin.get(user_url(name)), 200)["user"]
    expect_fault(me.put(user_url(name), json=change), 403, "ERR_DENIED")
    assert expect(admin.get(user_url(name)), 200)["user"] == before


def test_monitor_cannot_change_another_password(server, admin):
    victim, name = make_user(admin), make_user(admin)
    me = server.login_client(name, PASSWORD)
    expect_fault(me.put(user_url(victim), json={"password": NEW_PASSWORD,
                                                "current_password": PASSWORD}),
                 403, "ERR_DENIED")
    expect(server.login(victim, PASSWORD), 201)


def test_user_modify_alone_cannot_take_over_admin(spawn):
    """user:modify + user:read is no way to admin: setting admin's password, or minting a
    token that carries all of admin's authorizations, is refused, named and audited."""
    srv = spawn()   # own server: its real admin is the target
    admin = srv.admin()
    role = make_role(admin, authorizations=("user:modify", "user:read"))
    name = make_user(admin, [role])
    me = srv.login_client(name, PASSWORD)
    fault = expect_fault(me.put(user_url("admin"), json={"password": NEW_PASSWORD}),
                         403, "ERR_DENIED")
    assert "settings:modify" in fault["details"] and "role:modify" in fault["details"]
    expect_fault(me.post(user_url("admin") + "/tokens", json={"name": "mine"}), 403,
                 "ERR_DENIED", "settings:modify")
    expect_fault(me.put(user_url(name), json={"roles": ["admin"]}), 403, "ERR_DENIED")
    expect(srv.login("admin", srv.admin_password), 201)
    assert expect(admin.get(user_url("admin") + "/tokens"), 200)["tokens"] == []
    refused = [e for e in expect(admin.get(AUDIT + "?start=0&limit=1000"), 200)["logs"]
               if e["user"] == name and e["result"] == "failure"]
    assert {e["action"] for e in refused} >= {"user.update", "token.create"}
    # oneself keeps working: own password (user:modify needs no current_password), tokens
    expect(me.put(user_url(name), json={"password": NEW_PASSWORD}), 200)
    make_token(me, name)


def test_admin_sets_password_and_revokes_sessions(server, admin):
    name = make_user(admin)
    session = server.login_client(name, PASSWORD)
    token = make_token(admin, name)
    resp = admin.put(user_url(name), json={"password": NEW_PASSWORD})
    assert resp.status_code in (200, 204), resp.text
    expect_fault(session.get(ACCESS), 401, "ERR_UNAUTHORIZED")
    expect_fault(server.client(token["secret"]).get(ACCESS), 401, "ERR_UNAUTHORIZED")
    expect(server.login(name, NEW_PASSWORD), 201)


def test_role_change_applies_to_the_next_request(server, admin):
    name = make_user(admin, ["monitor"])
    me = server.login_client(name, PASSWORD)
    expect_fault(me.get(USERS), 403, "ERR_DENIED")
    expect(admin.put(user_url(name), json={"roles": ["operator"]}), 200)
    expect(me.get(USERS), 200)
    expect(admin.put(user_url(name), json={"roles": ["monitor"]}), 200)
    expect_fault(me.get(USERS), 403, "ERR_DENIED")


def test_delete_user_kills_sessions_and_tokens(server, admin):
    name = make_user(admin)
    session = server.login_client(name, PASSWORD)
    token = make_token(admin, name)
    assert admin.delete(user_url(name)).status_code == 204
    expect_fault(session.get(ACCESS), 401, "ERR_UNAUTHORIZED")
    expect_fault(server.client().get(ACCESS, headers={"Authorization":
                                                      f"Bearer {token['secret']}"}), 401)
    expect_fault(admin.get(user_url(name)), 404, "ERR_NOT_FOUND")
    expect_fault(admin.delete(user_url(name)), 404, "ERR_NOT_FOUND")
    expect_fault(server.login(name, PASSWORD), 401, "ERR_UNAUTHORIZED")
    make_user(admin, name=name)                 # the same name again is a new account
    expect_fault(session.get(ACCESS), 401, "ERR_UNAUTHORIZED")


def test_last_admin_stays(spawn):
    srv = spawn()   # own server: nobody else may hold the admin role here
    admin = srv.admin()
    assert "admin" in expect_refusal(admin.delete(user_url("admin")), 400, 403, 409)["details"]
    change = admin.put(user_url("admin"), json={"roles": ["operator"]})
    assert "admin" in expect_refusal(change, 400, 403, 409)["details"]
    assert roles_of(admin, "admin") == ["admin"]
    expect(admin.get(USERS), 200)

    second = make_user(admin, ["admin"])          # with two admins, one may go
    expect(admin.put(user_url(second), json={"roles": ["monitor"]}), 200)
    assert admin.delete(user_url(second)).status_code == 204
    expect_refusal(admin.delete(user_url("admin")), 400, 403, 409)


# ---- API tokens -----------------------------------------------------------------

def test_api_token_life_cycle(server, admin):
    name = make_user(admin)
    me = server.login_client(name, PASSWORD)
    tokens = f"{user_url(name)}/tokens"
    resp = me.post(tokens, json={"name": "phone", "expires_days": 1})
    token = expect(resp, 201)["token"]
    assert {"id", "name", "user", "ctime", "expires", "secret", "href"} <= set(token)
    assert token["name"] == "phone" and token["user"] == name
    assert token["href"].endswith(f"{tokens}/{token['id']}")
    assert abs(parse_time(token["expires"]).timestamp() - (time.time() + 86400)) < 3600
    assert jwt_part(token["secret"], 1)["sub"] == name

    bearer = {"Authorization": f"Bearer {token['secret']}"}
    anon = server.client()
    expect(anon.get("/api/system/v1/version", headers=bearer), 200)
    expect_fault(anon.get(USERS, headers=bearer), 403, "ERR_DENIED")   # a monitor's token

    listing = expect(me.get(tokens), 200)["tokens"]
    assert [t["id"] for t in listing] == [token["id"]]
    assert not keys_deep(listing) & SECRET_KEYS
    # its Location answers GET: the token as the list shows it, never its secret
    assert resp.headers["Location"] == token["href"]
    one = expect(me.get(resp.headers["Location"]), 200)["token"]
    assert one == listing[0] and "secret" not in one
    expect_fault(me.get(f"{tokens}/nope"), 404, "ERR_NOT_FOUND", details="nope")
    other = server.login_client(make_user(admin), PASSWORD)
    expect_fault(other.get(resp.headers["Location"]), 403, "ERR_DENIED")
    expect_fault(me.post(tokens, json={"name": "phone"}), 409, "ERR_OBJECT_EXISTS")

    assert me.delete(f"{tokens}/{token['id']}").status_code == 204
    expect_fault(anon.get("/api/system/v1/version", headers=bearer), 401, "ERR_UNAUTHORIZED")
    assert expect(me.get(tokens), 200)["tokens"] == []
    expect(me.get(ACCESS), 200)                        # the login session is untouched


# ---- roles --------------------------------------------------------------------------

def test_builtin_roles(admin):
    listing = {r["name"]: r for r in expect(admin.get(ROLES), 200)["roles"]}
    for name, auths in BUILTIN_ROLES.items():
        role = expect(admin.get(f"{ROLES}/{name}"), 200)["role"]
        assert role == listing[name]
        assert role["builtin"] is True and set(role["authorizations"]) == auths
        assert role["href"].endswith(f"{ROLES}/{name}")


def test_custom_role_life_cycle(server, admin):
    name = unique("auditor")
    resp = admin.post(ROLES, json={"name": name, "description": "Reads users",
                                   "authorizations": ["user:read"]})
    role = expect(resp, 201)["role"]
    assert resp.headers["Location"].endswith(f"{ROLES}/{name}")
    assert role["builtin"] is False and role["authorizations"] == ["user:read"]
    assert role["description"] == "Reads users"

    holder = make_user(admin, ["monitor", name])
    user = expect(admin.get(user_url(holder)), 200)["user"]
    assert set(user["authorizations"]) == BUILTIN_ROLES["monitor"] | {"user:read"}
    me = server.login_client(holder, PASSWORD)
    expect(me.get(USERS), 200)
    expect_fault(me.post(USERS, json={"name": unique("x"), "password": PASSWORD,
                                      "roles": ["monitor"]}), 403, "ERR_DENIED")

    changed = expect(admin.put(f"{ROLES}/{name}", json={"authorizations": ["stat:read"]}),
                     200)["role"]
    assert changed["authorizations"] == ["stat:read"]
    expect_fault(me.get(USERS), 403, "ERR_DENIED")      # on the very next request

    # still held: the appliance's "conflict in system state", not "object exists"
    expect_fault(admin.delete(f"{ROLES}/{name}"), 409, "ERR_STATE_CHANGED", "held by")
    expect(admin.get(f"{ROLES}/{name}"), 200)
    expect(admin.put(user_url(holder), json={"roles": ["monitor"]}), 200)
    assert admin.delete(f"{ROLES}/{name}").status_code == 204
    expect_fault(admin.get(f"{ROLES}/{name}"), 404, "ERR_NOT_FOUND")


@pytest.mark.parametrize("name", sorted(BUILTIN_ROLES))
def test_builtin_roles_are_fixed(admin, name):
    before = expect(admin.get(f"{ROLES}/{name}"), 200)["role"]
    expect_fault(admin.put(f"{ROLES}/{name}", json={"description": "mine now"}),
                 403, "ERR_DENIED")
    expect_fault(admin.delete(f"{ROLES}/{name}"), 403, "ERR_DENIED")
    assert expect(admin.get(f"{ROLES}/{name}"), 200)["role"] == before
