# SPDX-License-Identifier: ISC
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
  "device"    keep a browser signed in for the user in the path; its id is {id}
  "login"     call with a fresh session of the column's user, not the shared one
  "worksheet" create a worksheet named {target} (owner admin) with one dataset
              (io.ops[op]); its uuid is {uuid}
  "raw"       the answer is not JSON, maybe an endless stream: a 200 is checked by its
              status and headers, then closed
"""
from collections import namedtuple

COLUMNS = ("anon", "monitor", "operator", "admin")

Row = namedtuple("Row", "method path body expect setup", defaults=(None, ()))

U = "/api/user/v1"
R = "/api/role/v1"
WS = "/api/analytics/v1/worksheets"
BENCH = "/api/bench/v1"
HW = "/api/hardware/v1/chassis"
AN = "/api/analytics/v1"
CPU = AN + "/datasets/cpu.utilization%5Bmode%5D"
NEW_USER = {"name": "{target}", "password": "Spindle-test-pw-1", "roles": ["monitor"]}
NEW_ROLE = {"name": "{target}", "authorizations": ["stat:read"]}
ALL_200 = (200, 200, 200, 200)

ROWS = [
    # public
    Row("GET", "/api/openapi.json", None, ALL_200),
    Row("GET", "/api/system/v1/health", None, ALL_200),
    Row("POST", "/api/access/v1", {"user": "{self}", "password": "{password}"},
        (201, 201, 201, 201)),
    Row("POST", "/api/access/v1/challenge", None, ALL_200),
    # any session
    Row("GET", "/api/system/v1/version", None, (401, 200, 200, 200)),
    Row("GET", "/api/access/v1", None, (401, 200, 200, 200)),
    Row("DELETE", "/api/access/v1", None, (401, 204, 204, 204), ("login",)),
    *(Row("GET", f"/api/{service}/v1", None, (401, 200, 200, 200))
      for service in ("system", "user", "role", "log", "hardware", "analytics", "status",
                      "bench", "problem", "storage", "network")),
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
    Row("GET", U + "/users/{target}/tokens/{id}", None, (401, 403, 200, 200),
        ("user", "token")),
    Row("GET", U + "/users/{self}/tokens/{id}", None, (401, 200, 200, 200), ("token",)),
    Row("DELETE", U + "/users/{target}/tokens/{id}", None, (401, 403, 403, 204),
        ("user", "token")),
    Row("DELETE", U + "/users/{self}/tokens/{id}", None, (401, 204, 204, 204), ("token",)),
    Row("GET", U + "/users/admin/devices", None, (401, 403, 200, 200)),
    Row("GET", U + "/users/{self}/devices", None, (401, 200, 200, 200)),
    Row("DELETE", U + "/users/{target}/devices/{id}", None, (401, 403, 403, 204),
        ("user", "device")),
    Row("DELETE", U + "/users/{self}/devices/{id}", None, (401, 204, 204, 204), ("device",)),
    # roles: user:read / role:modify
    Row("GET", R + "/roles", None, (401, 403, 200, 200)),
    Row("POST", R + "/roles", NEW_ROLE, (401, 403, 403, 201)),
    Row("GET", R + "/roles/monitor", None, (401, 403, 200, 200)),
    Row("PUT", R + "/roles/{target}", {"description": "changed"}, (401, 403, 403, 200),
        ("role",)),
    Row("DELETE", R + "/roles/{target}", None, (401, 403, 403, 204), ("role",)),
    # audit log: user:read
    Row("GET", "/api/log/v1/logs/audit", None, (401, 403, 200, 200)),
    # worksheets: worksheet:read / worksheet:modify; only the owner (here admin) or a holder
    # of user:modify changes one
    Row("GET", WS, None, (401, 200, 200, 200)),
    Row("POST", WS, {"name": "{target}"}, (401, 403, 201, 201)),
    Row("GET", WS + "/{uuid}", None, (401, 200, 200, 200), ("worksheet",)),
    Row("PUT", WS + "/{uuid}", {"name": "{target}-renamed"}, (401, 403, 403, 200),
        ("worksheet",)),
    Row("DELETE", WS + "/{uuid}", None, (401, 403, 403, 204), ("worksheet",)),
    # a worksheet's datasets, as the appliance serves them (the setup's worksheet has one)
    Row("GET", WS + "/{uuid}/datasets", None, (401, 200, 200, 200), ("worksheet",)),
    Row("POST", WS + "/{uuid}/datasets", {"name": "io.ops[op]"}, (401, 403, 403, 201),
        ("worksheet",)),
    Row("GET", WS + "/{uuid}/datasets/dataset-000", None, (401, 200, 200, 200),
        ("worksheet",)),
    Row("PUT", WS + "/{uuid}/datasets/dataset-000", {"seconds": 120}, (401, 403, 403, 200),
        ("worksheet",)),
    Row("DELETE", WS + "/{uuid}/datasets/dataset-000", None, (401, 403, 403, 204),
        ("worksheet",)),
    # status: stat:read
    Row("GET", "/api/status/v1/dashboard", None, (401, 200, 200, 200)),
    Row("GET", "/api/status/v1/events", None, (401, 200, 200, 200), ("raw",)),
    Row("GET", "/api/status/v1/disks", None, (401, 200, 200, 200)),
    # Prometheus: the tests connect from loopback, in the default --metrics-allow
    # (test_metrics.py covers the token path)
    Row("GET", "/metrics", None, ALL_200, ("raw",)),
    # hardware: hardware:read / hardware:locate, which every built-in role holds (the phone's
    # monitor may light a locator). The shared server runs with virtual LED backends; the
    # disk rows use an id that is no disk, so they show the gate (401/403 vs 404).
    Row("GET", HW, None, (401, 200, 200, 200)),
    Row("GET", HW + "/system", None, (401, 200, 200, 200)),
    Row("PUT", HW + "/system", {"locate": False}, (401, 202, 202, 202)),
    Row("GET", HW + "/system/disk", None, (401, 200, 200, 200)),
    Row("GET", HW + "/system/disk/{target}", None, (401, 404, 404, 404)),
    Row("PUT", HW + "/system/disk/{target}", {"locate": False}, (401, 404, 404, 404)),
    Row("GET", "/api/hardware/v1/cluster", None, (401, 200, 200, 200)),
    # problems: stat:read, as the dashboard's count of them; {target} is no problem's uuid
    Row("GET", "/api/problem/v1/problems", None, (401, 200, 200, 200)),
    Row("GET", "/api/problem/v1/problems/{target}", None, (401, 404, 404, 404)),
    # storage and network, read-only: stat:read (the shared box has no ZFS: no pool)
    *(Row("GET", "/api/storage/v1" + p, None, (401, 200, 200, 200))
      for p in ("/pools", "/projects", "/filesystems", "/luns")),
    *(Row("GET", "/api/storage/v1/pools/tank" + p, None, (401, 404, 404, 404))
      for p in ("", "/projects", "/projects/p", "/projects/p/filesystems",
                "/projects/p/filesystems/f", "/projects/p/luns", "/projects/p/luns/l")),
    *(Row("GET", "/api/network/v1/" + k, None, (401, 200, 200, 200))
      for k in ("devices", "datalinks", "interfaces", "routes")),
    *(Row("GET", "/api/network/v1/" + k + "/none", None, (401, 404, 404, 404))
      for k in ("devices", "datalinks", "interfaces", "routes")),
    # analytics: stat:read reads; what is collected and kept is settings:modify (admin).
    # DELETE names no dataset, so the shared server keeps its datasets (403 vs 404 shows
    # the gate); POST makes the plain io.queue, which no other test creates.
    Row("GET", AN + "/datasets", None, (401, 200, 200, 200)),
    Row("POST", AN + "/datasets", {"statistic": "io.queue"}, (401, 403, 403, 201)),
    Row("GET", CPU, None, (401, 200, 200, 200)),
    Row("PUT", AN + "/datasets/mem.bytes%5Bcomponent%5D", {"suspended": False},
        (401, 403, 403, 200)),
    Row("DELETE", AN + "/datasets/no.such%5Bdataset%5D", None, (401, 403, 403, 404)),
    Row("GET", CPU + "/data", None, (401, 200, 200, 200)),
    # a name with a raw slash, as the appliance writes arc.accesses[hit/miss]
    Row("GET", AN + "/datasets/no.such[a/b]", None, (401, 404, 404, 404)),
    Row("GET", AN + "/datasets/no.such[a/b]/data", None, (401, 404, 404, 404)),
    Row("GET", AN + "/settings", None, (401, 200, 200, 200)),
    Row("PUT", AN + "/settings", {"retain_second_data": 24}, (401, 403, 403, 200)),
    # bench: bench:read reads, bench:run queues and cancels (monitor reads only). The POST
    # queues a tiny job on the shared server; the rows naming job 999999 (none) show the
    # gate, 401/403 against 404; compare without jobs= is 400 once past the gate.
    Row("GET", BENCH + "/jobs", None, (401, 200, 200, 200)),
    Row("POST", BENCH + "/jobs", {"pattern": "randread", "size": "64k", "block_size": "4k",
                                  "io_size": "4k"}, (401, 403, 201, 201)),
    # an import of a document that is no fio output: 400 once past the gate
    Row("POST", BENCH + "/jobs/import", {"jobs": []}, (401, 403, 400, 400)),
    Row("GET", BENCH + "/jobs/999999", None, (401, 404, 404, 404)),
    Row("DELETE", BENCH + "/jobs/999999", None, (401, 403, 404, 404)),
    Row("GET", BENCH + "/jobs/999999/progress", None, (401, 404, 404, 404)),
    Row("GET", BENCH + "/jobs/999999/result", None, (401, 404, 404, 404)),
    Row("GET", BENCH + "/jobs/999999/fio-log", None, (401, 400, 400, 400)),  # log= missing
    Row("GET", BENCH + "/compare", None, (401, 400, 400, 400)),
    Row("GET", BENCH + "/presets", None, (401, 200, 200, 200)),
    Row("GET", BENCH + "/sweeps", None, (401, 200, 200, 200)),
    Row("POST", BENCH + "/sweeps", {"spec": {"pattern": "randread", "size": "64k",
                                             "io_size": "4k"}, "axes": {"block_size": ["4k"]}},
        (401, 403, 201, 201)),
    Row("GET", BENCH + "/sweeps/999999", None, (401, 404, 404, 404)),
    Row("DELETE", BENCH + "/sweeps/999999", None, (401, 403, 404, 404)),
]

# ---- Users changing other users --------------------------------------------------------
# user:modify reaches no further than the actor's own authorizations: a user who holds one
# the actor lacks is not the actor's to change, whatever the write. Oneself always is.
#
# WRITES: every write on one user, each a column of OVER_ROWS. Placeholders as above, and
#   {actor_role}  the actor's own role (granting it needs nothing the actor lacks)
# Setup "token": admin makes an API token for the target; its id is {id}. Setup "device":
# the target keeps a browser signed in; its id is {id}.
# OVER_ROWS: the actor's authorizations, the target's ("self": the actor itself), each a
# name in HOLDS, and the status of each write. Actor and target are fresh users holding
# one fresh role with exactly those authorizations, both with conftest's PASSWORD.

Write = namedtuple("Write", "method path body setup", defaults=((),))
Over = namedtuple("Over", "actor target expect")

WRITES = {
    "password": Write("PUT", U + "/users/{target}", {"password": "Spindle-test-pw-2"}),
    "roles": Write("PUT", U + "/users/{target}", {"roles": ["{actor_role}"]}),
    "fullname": Write("PUT", U + "/users/{target}", {"fullname": "Changed"}),
    "timeout": Write("PUT", U + "/users/{target}", {"session_timeout_min": 5}),
    "token": Write("POST", U + "/users/{target}/tokens", {"name": "t"}),
    "revoke": Write("DELETE", U + "/users/{target}/tokens/{id}", None, ("token",)),
    "forget": Write("DELETE", U + "/users/{target}/devices/{id}", None, ("device",)),
    "delete": Write("DELETE", U + "/users/{target}", None),
}

MONITOR = ("stat:read", "worksheet:read", "hardware:read", "hardware:locate", "bench:read")
USERMOD = ("user:read", "user:modify")
HOLDS = {
    "nothing": (),
    "usermod": USERMOD,
    "usermod+stat": USERMOD + ("stat:read",),
    "usermod+monitor": USERMOD + MONITOR,
    "monitor": MONITOR,
    "operator": MONITOR + ("worksheet:modify", "bench:run", "user:read"),
    "all": MONITOR + ("worksheet:modify", "bench:run", "user:read", "user:modify",
                      "role:modify", "settings:modify"),
}
#            password roles fullname timeout token revoke forget delete
WRITES_OK = (200,     200,  200,     200,    201,  204,   204,   204)
DENIED = (403,) * len(WRITES)

OVER_ROWS = [
    # user:modify against more than the actor holds: admin's power, a monitor's, one more
    Over("usermod", "all", DENIED),
    Over("usermod", "monitor", DENIED),
    Over("usermod", "usermod+stat", DENIED),
    Over("usermod+monitor", "all", DENIED),
    # the actor holds all the target holds: as much, more, or the target holds nothing
    Over("usermod", "usermod", WRITES_OK),
    Over("usermod+monitor", "monitor", WRITES_OK),
    Over("usermod", "nothing", WRITES_OK),
    Over("all", "all", WRITES_OK),
    # without user:modify, another user is out of reach whatever they hold
    Over("operator", "monitor", DENIED),
    Over("operator", "nothing", DENIED),
    # oneself: everything with user:modify; without it, own password (with
    # current_password, so 400 here), fullname and tokens only
    Over("usermod", "self", WRITES_OK),
    Over("monitor", "self", (400, 403, 200, 403, 201, 204, 204, 403)),
]
