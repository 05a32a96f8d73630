"""Who may call what: every route of api/routes.c, as data.

Each row: method, path, body, the expected status per column, and setup steps.
Placeholders, filled for each call:
  {self}      the column's own user (anonymous borrows "mon"), {password} theirs
  {target}    a name no other call uses (a fresh user, role or token name)
  {id}        the id of the token made by the "token" setup step
Setup steps, run with the admin token before the call:
  "user"      create user {target} (role monitor)
  "role"      create role {target}
  "token"     create an API token for the user in the path; its id is {id}
  "login"     call with a fresh session of the column's user, not the shared one
"""
from collections import namedtuple

COLUMNS = ("anon", "monitor", "operator", "admin")

Row = namedtuple("Row", "method path body expect setup", defaults=(None, ()))

U = "/api/user/v1"
R = "/api/role/v1"
NEW_USER = {"name": "{target}", "password": "Spindle-test-pw-1", "roles": ["monitor"]}
NEW_ROLE = {"name": "{target}", "authorizations": ["stat:read"]}
ALL_200 = (200, 200, 200, 200)

ROWS = [
    # public
    Row("GET", "/api/openapi.json", None, ALL_200),
    Row("GET", "/api/system/v1/health", None, ALL_200),
    Row("POST", "/api/access/v1", {"user": "{self}", "password": "{password}"},
        (201, 201, 201, 201)),
    # any session
    Row("GET", "/api/system/v1/version", None, (401, 200, 200, 200)),
    Row("GET", "/api/access/v1", None, (401, 200, 200, 200)),
    Row("DELETE", "/api/access/v1", None, (401, 204, 204, 204), ("login",)),
    # users: user:read / user:modify
    Row("GET", U + "/users", None, (401, 403, 200, 200)),
    Row("POST", U + "/users", NEW_USER, (401, 403, 403, 201)),
    Row("DELETE", U + "/users/{target}", None, (401, 403, 403, 204), ("user",)),
    # users: oneself, or user:read / user:modify for others
    Row("GET", U + "/users/admin", None, (401, 403, 200, 200)),
    Row("GET", U + "/users/{self}", None, (401, 200, 200, 200)),
    Row("PUT", U + "/users/{target}", {"fullname": "Changed"}, (401, 403, 403, 200), ("user",)),
    Row("PUT", U + "/users/{self}", {"fullname": "Changed"}, (401, 200, 200, 200)),
    Row("GET", U + "/users/admin/tokens", None, (401, 403, 200, 200)),
    Row("GET", U + "/users/{self}/tokens", None, (401, 200, 200, 200)),
    Row("POST", U + "/users/{target}/tokens", {"name": "t"}, (401, 403, 403, 201), ("user",)),
    Row("POST", U + "/users/{self}/tokens", {"name": "{target}"}, (401, 201, 201, 201)),
    Row("DELETE", U + "/users/{target}/tokens/{id}", None, (401, 403, 403, 204),
        ("user", "token")),
    Row("DELETE", U + "/users/{self}/tokens/{id}", None, (401, 204, 204, 204), ("token",)),
    # roles: user:read / role:modify
    Row("GET", R + "/roles", None, (401, 403, 200, 200)),
    Row("POST", R + "/roles", NEW_ROLE, (401, 403, 403, 201)),
    Row("GET", R + "/roles/monitor", None, (401, 403, 200, 200)),
    Row("PUT", R + "/roles/{target}", {"description": "changed"}, (401, 403, 403, 200),
        ("role",)),
    Row("DELETE", R + "/roles/{target}", None, (401, 403, 403, 204), ("role",)),
    # audit log: user:read
    Row("GET", "/api/log/v1/logs/audit", None, (401, 403, 200, 200)),
]
