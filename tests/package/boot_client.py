#!/usr/bin/python3
# SPDX-License-Identifier: ISC
"""The client side of the boot test (tests/package/boot.sh), run inside the container by
Debian's python3 alone (no requests): what a user does over HTTPS to the installed
spindled on https://127.0.0.1:8215, as admin with the initial password.

  boot_client.py wait                  until the service answers its health check
  boot_client.py seed FIO_JSON OUT     users, a worksheet, an imported fio run, a job, a lit
                                       LED (before an upgrade); what was made goes to OUT
  boot_client.py verify SEED           all of it is still there (after the upgrade)
  boot_client.py jobs [TARGET]         psync, io_uring and O_DIRECT jobs end done with IOPS
                                       (TARGET: a block device, with confirm)
  boot_client.py values                the dashboard and an analytics dataset have values
  boot_client.py led                   the system locator LED lights and goes out
  boot_client.py services              the storage and network services answer as an
                                       appliance's (no ZFS here: no pool; the container's
                                       only link is its loopback)
  boot_client.py iolat-on              the eBPF helper serves: io.ops offers latency, size
                                       and offset; io.ops[latency] made, direct reads done,
                                       and their seconds have buckets
  boot_client.py iolat-off             io.ops[latency] deleted (the helper is left)
  boot_client.py smb                   Samba's counters through spindle-smbstatus.socket:
                                       smb.ops and smb2.ops listed, and an smbclient
                                       session's requests counted in smb2.ops[op]
  boot_client.py start-job OUT         a 120 s job, running; its id goes to OUT
  boot_client.py job-state ID STATE    the job ended in STATE
  boot_client.py hold                  a TLS connection held open until the server closes
                                       it: prints close_notify, or fails on a bare EOF
Each prints one line per check and exits 1 on the first failure."""
import base64
import http.client
import json
import socket
import ssl
import sys
import time

HOST, PORT = "127.0.0.1", 8215
PASSWORD_FILE = "/var/lib/spindle/initial-admin-password"


def fail(msg):
    print(f"FAILED: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def tls():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the box's own self-signed certificate
    return ctx


class Client:
    def __init__(self, user="admin", password=None):
        self.user = user
        self.password = password
        self.token = None

    def call(self, method, path, body=None, headers=None, expect=None):
        conn = http.client.HTTPSConnection(HOST, PORT, context=tls(), timeout=30)
        h = dict(headers or {})
        if self.token:
            h["X-Auth-Session"] = self.token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        doc = json.loads(raw) if raw and resp.getheader("Content-Type", "").startswith(
            "application/json") else raw
        if expect is not None and resp.status != expect:
            fail(f"{method} {path}: {resp.status} (wanted {expect}): {raw[:300]!r}")
        return resp, doc

    def login(self):
        password = self.password or open(PASSWORD_FILE).read().strip()
        basic = base64.b64encode(f"{self.user}:{password}".encode()).decode()
        resp, _ = self.call("POST", "/api/access/v1", headers={"Authorization": f"Basic {basic}"},
                            expect=201)
        self.token = resp.getheader("X-Auth-Session")
        return self


def wait():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            resp, _ = Client().call("GET", "/api/system/v1/health")
            if resp.status == 200:
                ok("spindled answers https://127.0.0.1:8215/api/system/v1/health")
                return
        except OSError:
            pass
        time.sleep(0.2)
    fail("spindled did not answer its health check within 60 s")


def run_job(c, spec, timeout=120):
    resp, _ = c.call("POST", "/api/bench/v1/jobs", spec, expect=201)
    loc = resp.getheader("Location")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, doc = c.call("GET", loc, expect=200)
        job = doc["job"]
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.3)
    fail(f"{loc} did not end within {timeout} s")


def jobs(target=None):
    c = Client().login()
    base = {"pattern": "randread", "block_size": "8k", "runtime_s": 2, "size": "16M"}
    if target:
        base.update(target=target, confirm=True)
    for name, extra in [("psync", {"engine": "psync", "readers": 2}),
                        ("io_uring", {"engine": "io_uring", "iodepth": 8}),
                        ("io_uring O_DIRECT", {"engine": "io_uring", "iodepth": 8, "direct": True}),
                        ("psync O_DIRECT randrw", {"engine": "psync", "direct": True,
                                                   "pattern": "randrw", "readers": 1,
                                                   "writers": 1})]:
        spec = dict(base, name=f"boot-{name.replace(' ', '-')}", **extra)
        job = run_job(c, spec)
        if job["state"] != "done":
            fail(f"{name} job on {job.get('target')}: {job['state']}: {job.get('reason')}")
        iops = job["result"]["read"]["iops"]
        if not iops > 0:
            fail(f"{name} job: no read IOPS: {job['result']['read']}")
        ok(f"a {name} job on {job['target']} ended done, {iops:.0f} read IOPS")


def values():
    c = Client().login()
    deadline = time.monotonic() + 30
    while True:
        _, doc = c.call("GET", "/api/status/v1/dashboard", expect=200)
        d = doc["dashboard"]
        _, data = c.call("GET", "/api/analytics/v1/datasets/cpu.utilization/data?start=-5",
                         expect=200)
        samples = data["data"] if isinstance(data["data"], list) else [data["data"]]
        if (samples and all("value" in s["data"] for s in samples)
                and isinstance(d.get("cpu", {}).get("busy_pct"), (int, float))
                and d.get("disks") and d.get("mem_bytes", {}).get("total")):
            break
        if time.monotonic() > deadline:
            fail(f"no values: dashboard {d}, cpu.utilization {data}")
        time.sleep(1)
    ok(f"the dashboard has values (version {d['version']}, cpu {d['cpu']['busy_pct']} % busy, "
       f"disks {[x['n'] for x in d['disks']]}, memory {d['mem_bytes']['total']} bytes)")
    ok(f"cpu.utilization has {len(samples)} samples, the last {samples[-1]['data']['value']} %")
    _, m = c.call("GET", "/metrics", expect=200)
    if b"spindle_" not in m:
        fail("/metrics has no spindle_ series")
    ok(f"/metrics answers {len(m.splitlines())} lines")


def led_state(c):
    _, doc = c.call("GET", "/api/hardware/v1/chassis/system", expect=200)
    return doc["chassis"]["locate"], doc["chassis"].get("led_backend")


def set_led(c, on):
    c.call("PUT", "/api/hardware/v1/chassis/system", {"locate": on}, expect=202)
    deadline = time.monotonic() + 10
    while led_state(c)[0] is not on:
        if time.monotonic() > deadline:
            fail(f"the system LED did not turn {'on' if on else 'off'}")
        time.sleep(0.1)


def led():
    c = Client().login()
    for on in (True, False):
        set_led(c, on)
        ok(f"the system locator LED turned {'on' if on else 'off'} ({led_state(c)[1]})")


def services():
    """As an appliance's inventory script reads them: Basic on every request, one key."""
    c = Client()
    password = open(PASSWORD_FILE).read().strip()
    auth = {"Authorization": "Basic " + base64.b64encode(
        f"admin:{password}".encode()).decode()}
    for path, key in (("/api/storage/v1/pools", "pools"), ("/api/storage/v1/filesystems",
                                                            "filesystems"),
                      ("/api/network/v1/datalinks", "datalinks"),
                      ("/api/network/v1/interfaces", "interfaces"),
                      ("/api/network/v1/routes", "routes"),
                      ("/api/hardware/v1/cluster", "cluster")):
        _, doc = c.call("GET", path, headers=auth, expect=200)
        if list(doc) != [key]:
            fail(f"{path}: top level {list(doc)}, not [{key!r}]")
        ok(f"{path}: {json.dumps(doc)[:120]}")


def direct_reads(seconds):
    """O_DIRECT reads of a file of its own, so the disk under the container sees them."""
    import mmap
    import os
    path = "/var/tmp/iolat-reads"
    with open(path, "wb") as f:
        f.write(os.urandom(8 << 20))
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 8192)
    n, end = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            os.preadv(fd, [buf], (n * 8192 * 7919) % (8 << 20))
            n += 1
    finally:
        os.close(fd)
        os.unlink(path)
    return n


def iolat_on():
    c = Client().login()
    _, doc = c.call("GET", "/api/analytics/v1/datasets/io.ops%5Bop%5D", expect=200)
    offered = doc["dataset"]["available_drilldowns"]
    if "latency" not in offered:
        fail(f"io.ops offers {offered}: the helper under its unit cannot load its program "
             "(journalctl -u 'spindle-iolat@*')")
    ok(f"io.ops offers {offered}")
    c.call("POST", "/api/analytics/v1/datasets", {"statistic": "io.ops", "drilldown": "latency"},
           expect=201)
    reads = direct_reads(3)
    time.sleep(2)
    _, data = c.call("GET", "/api/analytics/v1/datasets/io.ops%5Blatency%5D/data?start=-8",
                     expect=200)
    samples = data["data"] if isinstance(data["data"], list) else [data["data"]]
    busy = [s for s in samples if s and (s["data"].get("value") or 0) > 0]
    if not busy:
        fail(f"io.ops[latency] has no operations after {reads} direct reads: {samples}")
    keys = {kv["key"] for s in busy for kv in s["data"]["data"]}
    if not keys or not all(k.endswith("+") or k.count("-") == 1 for k in keys):
        fail(f"io.ops[latency]'s keys are not latency ranges: {sorted(keys)}")
    ok(f"io.ops[latency]: {sum(s['data']['value'] for s in busy):.0f} operations in "
       f"{len(busy)} seconds during {reads} direct reads, buckets {sorted(keys)[:4]} ...")


def smb():
    import subprocess
    c = Client().login()
    want = {"smb.ops", "smb.ops[op]", "smb2.ops", "smb2.ops[op]"}
    deadline = time.monotonic() + 20
    while True:
        _, doc = c.call("GET", "/api/analytics/v1/datasets", expect=200)
        names = {d["name"] for d in doc["datasets"]}
        if want <= names:
            break
        if time.monotonic() > deadline:
            fail(f"no SMB datasets after 20 s: {sorted(n for n in names if 'smb' in n)} "
                 "(journalctl -u 'spindle-smbstatus@*')")
        time.sleep(0.5)
    ok(f"listed: {sorted(want)}")
    time.sleep(2)  # a round before the client's, to compare with
    for _ in range(3):
        run = subprocess.run(["smbclient", "//127.0.0.1/IPC$", "-N", "-c", "help"],
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            fail(f"smbclient: {run.stdout} {run.stderr}")
        time.sleep(0.5)
    time.sleep(2.5)
    _, data = c.call("GET", "/api/analytics/v1/datasets/smb2.ops%5Bop%5D/data?start=-8",
                     expect=200)
    samples = data["data"] if isinstance(data["data"], list) else [data["data"]]
    busy = [s for s in samples if s and (s["data"].get("value") or 0) > 0]
    keys = {kv["key"] for s in busy for kv in s["data"]["data"]}
    if not {"negprot", "sesssetup", "tcon"} <= keys:
        fail(f"smb2.ops[op] did not count three smbclient sessions: {samples}")
    ok(f"smb2.ops[op]: {sum(s['data']['value'] for s in busy):.1f} requests in {len(busy)} "
       f"seconds of three smbclient sessions, {sorted(keys)}")


def iolat_off():
    c = Client().login()
    c.call("DELETE", "/api/analytics/v1/datasets/io.ops%5Blatency%5D", expect=204)
    ok("io.ops[latency] deleted")


def seed(fio_json, out):
    c = Client().login()
    c.call("POST", "/api/user/v1/users", {"name": "ops", "password": "boot-test-ops-pw-1",
                                          "roles": ["operator"], "fullname": "Ops"}, expect=201)
    c.call("POST", "/api/user/v1/users", {"name": "phone", "password": "boot-test-phone-pw-1",
                                          "roles": ["monitor"]}, expect=201)
    _, ws = c.call("POST", "/api/analytics/v1/worksheets",
                   {"name": "disks", "datasets": [{"name": "io.ops[disk]", "seconds": 300}]},
                   expect=201)
    ws = ws["worksheet"]
    _, imp = c.call("POST", "/api/bench/v1/jobs/import", open(fio_json, "rb").read(),
                    expect=201)
    job = run_job(c, {"name": "before-upgrade", "pattern": "randread", "size": "4M",
                      "block_size": "8k", "runtime_s": 1})
    set_led(c, True)
    made = {"worksheet": ws["uuid"], "imported": imp["job"]["id"], "job": job["id"],
            "job_state": job["state"]}
    json.dump(made, open(out, "w"))
    ok(f"made users ops and phone, worksheet {ws['uuid']}, imported run {made['imported']}, "
       f"job {job['id']} ({job['state']}), a lit system LED")


def verify(seed_file):
    made = json.load(open(seed_file))
    c = Client().login()
    _, users = c.call("GET", "/api/user/v1/users", expect=200)
    names = {u["name"] for u in users["users"]}
    if not {"admin", "ops", "phone"} <= names:
        fail(f"users after the upgrade: {sorted(names)}")
    Client("ops", "boot-test-ops-pw-1").login()
    Client("phone", "boot-test-phone-pw-1").login()
    ok(f"users {sorted(names)} are there, and ops and phone log in with their passwords")
    _, ws = c.call("GET", f"/api/analytics/v1/worksheets/{made['worksheet']}", expect=200)
    ws = ws["worksheet"]
    if ws["name"] != "disks" or [d["name"] for d in ws["datasets"]] != ["io.ops[disk]"]:
        fail(f"the worksheet after the upgrade: {ws}")
    ok(f"worksheet {ws['uuid']} ({ws['name']}) is there with its dataset")
    for key in ("imported", "job"):
        _, doc = c.call("GET", f"/api/bench/v1/jobs/{made[key]}", expect=200)
        job = doc["job"]
        want = "done" if key == "imported" else made["job_state"]
        if job["state"] != want:
            fail(f"run {made[key]} is {job['state']}, was {want}")
        ok(f"run {made[key]} ({key}) is there, {job['state']}")
    on, backend = led_state(c)
    if on is not True:
        fail("the system LED is no longer lit after the upgrade")
    ok(f"the system LED is still lit ({backend})")


def start_job(out):
    c = Client().login()
    resp, _ = c.call("POST", "/api/bench/v1/jobs",
                     {"name": "long", "pattern": "randread", "size": "8M", "block_size": "8k",
                      "runtime_s": 120}, expect=201)
    loc = resp.getheader("Location")
    deadline = time.monotonic() + 30
    while c.call("GET", loc, expect=200)[1]["job"]["state"] != "running":
        if time.monotonic() > deadline:
            fail(f"{loc} did not start")
        time.sleep(0.2)
    job_id = loc.rsplit("/", 1)[1]
    open(out, "w").write(job_id)
    ok(f"job {job_id} is running")


def job_state(job_id, want):
    c = Client().login()
    _, doc = c.call("GET", f"/api/bench/v1/jobs/{job_id}", expect=200)
    if doc["job"]["state"] != want:
        fail(f"job {job_id} is {doc['job']['state']}, not {want}")
    ok(f"job {job_id} is {want}")


def hold():
    """A client connected and idle when the service stops: the server ends the TLS
    session with close_notify before it closes the socket."""
    raw = socket.create_connection((HOST, PORT), timeout=60)
    s = tls().wrap_socket(raw, suppress_ragged_eofs=False)
    print("connected", flush=True)
    try:
        while s.recv(1024):
            pass
    except ssl.SSLEOFError as e:
        fail(f"the server closed the connection without close_notify: {e}")
    except (socket.timeout, OSError) as e:
        fail(f"the held connection: {e}")
    ok("a held TLS connection ended with the server's close_notify")


def main(argv):
    cmds = {"wait": wait, "seed": seed, "verify": verify, "jobs": jobs, "values": values,
            "led": led, "services": services, "iolat-on": iolat_on, "iolat-off": iolat_off,
            "smb": smb,
            "start-job": start_job, "job-state": job_state, "hold": hold}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__)
        return 2
    cmds[argv[1]](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
