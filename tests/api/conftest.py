# SPDX-License-Identifier: ISC
"""Helpers of the API suite, all in one place: start and stop a real spindled on
random ports with a throwaway state dir, log in, send requests, check faults.

Run from the repository: /usr/bin/python3 -m pytest tests/api   (Debian's pytest)

Environment:
  SPINDLED         the binary (default: <repo>/server/spindled)
  SPINDLE_WRAPPER  a command prefix, e.g. "valgrind --error-exitcode=99 --leak-check=full"
"""
import base64
import datetime
import http.client
import itertools
import json
import os
import re
import shlex
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
import urllib3

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

REPO = Path(__file__).resolve().parents[2]
SPINDLED = os.environ.get("SPINDLED", str(REPO / "server" / "spindled"))
WRAPPER = shlex.split(os.environ.get("SPINDLE_WRAPPER", ""))
SLOW = 4 if WRAPPER else 1              # everything takes longer under valgrind
START_TIMEOUT = 15 * SLOW
STOP_TIMEOUT = 10 * SLOW                # SIGTERM to exit, seconds
REQUEST_TIMEOUT = 15 * SLOW
TEST_KDF_ITERATIONS = 1000              # KDF_MIN_ITERATIONS: fast logins

USERS = "/api/user/v1/users"
ROLES = "/api/role/v1/roles"
ACCESS = "/api/access/v1"
AUDIT = "/api/log/v1/logs/audit"
PASSWORD = "Spindle-test-pw-1"          # for users the tests create

# Every authorization, and the built-in roles' contents (server/access/auth.c makes them at start-up).
ALL_AUTHS = {"stat:read", "worksheet:read", "worksheet:modify", "hardware:read",
             "hardware:locate", "bench:read", "bench:run", "user:read", "user:modify",
             "role:modify", "settings:modify"}
BUILTIN_ROLES = {
    "admin": ALL_AUTHS,
    "operator": {"stat:read", "worksheet:read", "worksheet:modify", "hardware:read",
                 "hardware:locate", "bench:read", "bench:run", "user:read"},
    "monitor": {"stat:read", "worksheet:read", "hardware:read", "hardware:locate",
                "bench:read"},
}
# The users of the shared server's authorization columns (besides admin).
ROLE_USERS = {"monitor": ("mon", "Mon-password-1"), "operator": ("op", "Op-password-1")}


# ---- the route table, read from api/routes.c -------------------------------------

ROUTES_C = REPO / "api" / "routes.c"
_ROUTE_RE = re.compile(
    r'\{\s*METHOD_(\w+)\s*,\s*(?:(\w+)\s+)?"([^"]*)"\s*,\s*"(\w+)"\s*,\s*(ROUTE_\w+)\s*,'
    r'\s*([\w|\s]+?)\s*,')


def routes():
    """[(method, pattern, service, access, perm)] of api/routes.c, macros expanded."""
    src = ROUTES_C.read_text()
    macros = dict(re.findall(r'#define\s+(\w+)\s+"([^"]*)"', src))
    return [(m, macros[prefix] + path if prefix else path, svc, access, perm.strip())
            for m, prefix, path, svc, access, perm in _ROUTE_RE.findall(src)]


def services():
    """{"user": "1.0", ...} from api_services in api/routes.c."""
    src = ROUTES_C.read_text()
    block = src[src.index("api_services[]"):]
    return dict(re.findall(r'\{\s*"(\w+)"\s*,\s*"([\d.]+)"\s*\}', block))


def pattern_regex(pattern):
    """Route pattern -> regex; "{x}" matches one non-empty segment."""
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(pattern)) + "$")


# ---- small utilities ------------------------------------------------------------

def free_ports(n):
    """n distinct loopback ports free right now (all held open together while chosen)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port():
    return free_ports(1)[0]


_counter = itertools.count(1)


def unique(prefix):
    """A name no other test uses: "prefix-7"."""
    return f"{prefix}-{next(_counter)}"


def parse_time(value):
    """ISO 8601 UTC ("...Z" or "+00:00") -> aware datetime; fails the test otherwise."""
    assert isinstance(value, str) and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", value), value
    t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert t.utcoffset() == datetime.timedelta(0), value
    return t


def iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_part(token, index):
    """Decoded JSON of a JWT's header (0) or payload (1), without verifying."""
    return json.loads(b64url_decode(token.split(".")[index]))


def keys_deep(doc):
    """Every object key anywhere in a JSON document."""
    if isinstance(doc, dict):
        return set(doc) | set().union(*(keys_deep(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(keys_deep(v) for v in doc))
    return set()


def daemon_lines(text):
    """The daemon's own stderr lines: without a valgrind wrapper's "==123==" lines."""
    return [line for line in text.splitlines()
            if line.strip() and not re.match(r"^==\d+==", line)]


# ---- checking answers -------------------------------------------------------------

def describe(resp):
    return f"{resp.request.method} {resp.request.path_url} -> {resp.status_code} {resp.text[:400]}"


def expect(resp, status):
    """Assert the status; return the JSON body (None when there is none)."""
    assert resp.status_code == status, describe(resp)
    if not resp.content:
        return None
    assert resp.headers.get("Content-Type", "").startswith("application/json"), describe(resp)
    return resp.json()


def expect_fault(resp, status, message=None, details=None):
    """Assert a {"fault":{...}} answer with this status; details: text it must contain."""
    body = expect(resp, status)
    assert body and set(body) == {"fault"}, describe(resp)
    fault = body["fault"]
    assert {"message", "details", "code"} <= set(fault), describe(resp)
    assert fault["code"] == status, describe(resp)
    assert fault["message"].startswith("ERR_"), describe(resp)
    if message:
        assert fault["message"] == message, describe(resp)
    if details:
        assert details in fault["details"], describe(resp)
    return fault


def expect_refusal(resp, *statuses):
    """A fault with one of these statuses (where the contract allows several); the fault."""
    assert resp.status_code in statuses, describe(resp)
    return expect_fault(resp, resp.status_code)


def check_common_headers(resp, path):
    """X-Spindle-Version always; X-Spindle-<Service>-Api for a known service's path."""
    assert resp.headers.get("X-Spindle-Version"), describe(resp)
    m = re.match(r"^/api/(\w+)/", path)
    service = "system" if path == "/api/openapi.json" else (m and m.group(1))
    versions = services()
    if service in versions:
        header = f"X-Spindle-{service.capitalize()}-Api"
        assert resp.headers.get(header) == versions[service], f"{header}: {describe(resp)}"


# ---- talking to a server ------------------------------------------------------------

_OWN = object()


class _SourceAdapter(requests.adapters.HTTPAdapter):
    """Connects from a chosen source address: the whole 127/8 is loopback on Linux, so a
    test can be a client at 127.0.0.2 of a server listening on 127.0.0.1."""

    def __init__(self, source):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kw):
        super().init_poolmanager(*args, source_address=(self.source, 0), **kw)


IDEMPOTENT = ("GET", "HEAD", "OPTIONS", "PUT", "DELETE")


class Client:
    """A keep-alive connection to one listener, optionally carrying a session token;
    source: the client's address (default: the kernel's choice, 127.0.0.1)."""

    def __init__(self, base, token=None, source=None):
        self.base, self.token = base, token
        self.http = requests.Session()
        self.http.verify = False        # self-signed certificate
        self.http.trust_env = False     # no proxies for 127.0.0.1
        if source:
            for prefix in ("http://", "https://"):
                self.http.mount(prefix, _SourceAdapter(source))

    def request(self, method, path, token=_OWN, headers=None, **kw):
        headers = dict(headers or {})
        token = self.token if token is _OWN else token
        if token:
            headers.setdefault("X-Auth-Session", token)
        kw.setdefault("timeout", REQUEST_TIMEOUT)
        try:
            return self.http.request(method, self.base + path, headers=headers, **kw)
        except requests.ConnectionError as e:
            # A kept-alive connection the server closed as idle (its --timeout, 60 s) just
            # as this request went out on it: no answer, and none was refused. As browsers
            # do (RFC 9112, 9.3.1), an idempotent request goes once more, on a new
            # connection; a server that drops every connection still fails the second.
            if method not in IDEMPOTENT or "RemoteDisconnected" not in repr(e):
                raise
            return self.http.request(method, self.base + path, headers=headers, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def put(self, path, **kw):
        return self.request("PUT", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


def require_binary():
    if not os.access(SPINDLED, os.X_OK):
        pytest.fail(f"no spindled at {SPINDLED}: build it (make) or set SPINDLED")


def run_daemon(*args, timeout=None):
    """Run spindled to completion (--help, bad flags): (exit code, stdout, stderr lines)."""
    require_binary()
    p = subprocess.run(WRAPPER + [SPINDLED, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout or START_TIMEOUT)
    return p.returncode, p.stdout, daemon_lines(p.stderr)


class Server:
    """One spindled in the foreground: HTTPS and plain HTTP on random loopback ports.

    kdf_iterations=None leaves the daemon's default; config=True passes the settings
    in an INI file (--config) instead of flags; env: the daemon's environment (None:
    inherited), e.g. a PATH with fake ledctl and ipmitool first."""

    def __init__(self, state_dir, *extra, kdf_iterations=TEST_KDF_ITERATIONS, config=False,
                 env=None):
        self.env = env
        self.state_dir = Path(state_dir)
        self.extra = [str(a) for a in extra]
        self.kdf_iterations = kdf_iterations
        self.config = config
        self.proc = None
        self.returncode = None
        self.log_path = self.state_dir.parent / f"{self.state_dir.name}-{unique('log')}.log"

    def settings(self):
        # Disk health off: a fake sys tree names disks (sda, nvme0n1) that smartctl would
        # look for in the host's /dev. test_smart.py turns it on, with a fake smartctl.
        s = {"state_dir": self.state_dir,
             "listen": f"127.0.0.1:{self.port}",
             "http_listen": f"127.0.0.1:{self.http_port}",
             "log_level": "debug",
             "smart_interval": 0}
        if self.kdf_iterations:
            s["kdf_iterations"] = self.kdf_iterations
        return s

    def argv(self):
        if self.config:
            ini = self.state_dir.parent / f"{self.state_dir.name}.conf"
            ini.write_text("".join(f"{k}={v}\n" for k, v in self.settings().items()))
            args = ["--config", ini]
        else:
            args = [a for k, v in self.settings().items()
                    for a in ("--" + k.replace("_", "-"), v)]
        return WRAPPER + [SPINDLED, "--foreground", *map(str, args), *self.extra]

    def start(self):
        """Starts the daemon on two free ports. The suite runs in two processes at once, so
        a port found free may be taken before the daemon binds it: then new ports."""
        for attempt in range(3):
            if self._start(last=attempt == 2):
                return self
        return self

    def _start(self, last):
        require_binary()
        self.port, self.http_port = free_ports(2)
        self.https = f"https://127.0.0.1:{self.port}"
        self.http = f"http://127.0.0.1:{self.http_port}"
        logged = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                         env=self.env)
        self.returncode = None
        deadline = time.monotonic() + START_TIMEOUT
        for base in (self.https, self.http):
            while not self._healthy(base):
                if self.proc.poll() is not None:
                    with open(self.log_path, "rb") as log:
                        log.seek(logged)
                        taken = b"Address already in use" in log.read()
                    if taken and not last:
                        return False
                    pytest.fail(f"spindled exited with {self.proc.returncode} at start:\n"
                                + self.log_tail())
                if time.monotonic() > deadline:
                    self.kill()
                    pytest.fail(f"spindled not ready after {START_TIMEOUT}s:\n" + self.log_tail())
                time.sleep(0.05)
        return True

    @staticmethod
    def _healthy(base):
        try:
            return requests.get(base + "/api/system/v1/health", verify=False, timeout=2,
                                proxies={"http": None, "https": None}).status_code == 200
        except requests.RequestException:
            return False

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM; returns (exit code, seconds it took). Kills it after STOP_TIMEOUT."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.returncode = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
        return self.returncode, time.monotonic() - t0

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.returncode = "killed"

    def log_text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines=40):
        return "\n".join(self.log_text().splitlines()[-lines:])

    @property
    def admin_password(self):
        return (self.state_dir / "initial-admin-password").read_text().strip()

    def client(self, token=None, scheme="https", source=None):
        return Client(self.https if scheme == "https" else self.http, token, source)

    def login(self, user, password, via="body", scheme="https", source=None):
        """POST /api/access/v1 with the credentials sent one of three ways; the response.
        source: the client's loopback address (127.0.0.2, ...), for the throttle."""
        c = self.client(scheme=scheme, source=source)
        if via == "headers":
            return c.post(ACCESS, headers={"X-Auth-User": user, "X-Auth-Key": password})
        if via == "basic":
            return c.post(ACCESS, auth=(user, password))
        return c.post(ACCESS, json={"user": user, "password": password})

    def login_client(self, user, password, scheme="https"):
        resp = self.login(user, password, scheme=scheme)
        expect(resp, 201)
        return self.client(resp.headers["X-Auth-Session"], scheme)

    def admin(self):
        return self.login_client("admin", self.admin_password)


def make_user(admin, roles=("monitor",), name=None, password=PASSWORD, **fields):
    """Create a user through the API; returns its name."""
    name = name or unique("u")
    body = {"name": name, "password": password, "roles": list(roles), **fields}
    expect(admin.post(USERS, json=body), 201)
    return name


def make_role(admin, name=None, authorizations=("stat:read",)):
    """Create a role through the API; returns its name."""
    name = name or unique("r")
    body = {"name": name, "authorizations": list(authorizations)}
    expect(admin.post(ROLES, json=body), 201)
    return name


def make_token(client, user, name=None, **fields):
    """Create an API token for user; returns the {"token":...} object."""
    body = {"name": name or unique("tok"), **fields}
    return expect(client.post(f"{USERS}/{user}/tokens", json=body), 201)["token"]


def assert_stopped_cleanly(srv):
    if srv.running:
        srv.stop()
    assert srv.returncode == 0, f"spindled exit code {srv.returncode}:\n" + srv.log_tail()


class FakeProc:
    """A synthetic /proc for --proc-root: a box of `disks` NVMe disks, `nics` NICs, `cpus`
    CPUs, memory, pressure and a ZFS ARC. Each counter is rate x (10 + seconds since
    start()); live=True rewrites the files every 0.2 s from a thread (each atomically), so
    the collector sees the rates below; live=False writes them once (rates read as 0).
    mounts: [(source, mount point, type)] for proc/self/mounts (the dashboard's capacity;
    written once, the kernel's escapes applied); None writes none. rates_of: {disk: m}
    gives a disk m times the rates."""
    RATES = {"reads": 12345, "writes": 6789, "read_sectors": 2411718, "write_sectors": 1325977,
             "read_ms": 152399, "write_ms": 23762, "io_ms": 999, "rx_bytes": 104857600,
             "tx_bytes": 52428800, "packets": 70000, "hits": 49000, "misses": 1000,
             "tick": 100}

    def __init__(self, root, disks=8, nics=2, cpus=64, arc=True, live=True, mounts=None):
        self.root = Path(root)
        self.mounts = mounts
        self.disks = [f"nvme{i}n1" for i in range(disks)]
        self.rates_of = {}
        self.nics = [f"eth{i}" for i in range(nics)]
        self.cpus, self.arc, self.live = cpus, arc, live
        self.t0 = time.monotonic()
        self.stopped = threading.Event()
        self.thread = None

    def value(self, name, t=0):
        return int(self.RATES[name] * (10 + t))

    def _write(self, rel, text):
        path = self.root / "proc" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def write(self, t):
        v = lambda name: self.value(name, t)  # noqa: E731
        tick = v("tick")
        # user nice system idle iowait irq softirq steal, each CPU alike
        per = [tick * 30, tick, tick * 20, tick * 40, tick * 5, tick, tick * 3, 0]
        cpu = " ".join(str(x) for x in per)
        self._write("stat", f"cpu  {' '.join(str(x * self.cpus) for x in per)} 0 0\n"
                    + "".join(f"cpu{i} {cpu} 0 0\n" for i in range(self.cpus))
                    + "btime 1700000000\n")
        def disk(i, d):
            m = self.rates_of.get(d, 1)
            w = lambda name: v(name) * m  # noqa: E731
            return (f" 259 {i} {d} {w('reads')} 0 {w('read_sectors')} {w('read_ms')} "
                    f"{w('writes')} 0 {w('write_sectors')} {w('write_ms')} 7 {w('io_ms')} "
                    f"{w('read_ms')}\n")
        self._write("diskstats", "".join(disk(i, d) for i, d in enumerate(self.disks)))
        self._write("net/dev", "Inter-|   Receive |  Transmit\n face |bytes packets\n"
                    + "    lo: 5 5 0 0 0 0 0 0 5 5 0 0 0 0 0 0\n"
                    + "".join(f"  {n}: {v('rx_bytes')} {v('packets')} 3 0 0 0 0 0 "
                              f"{v('tx_bytes')} {v('packets')} 4 0 0 0 0 0\n"
                              for n in self.nics))
        gib = 1024 * 1024  # in kB
        self._write("meminfo", f"MemTotal: {512 * gib} kB\nMemFree: {64 * gib} kB\n"
                    f"Buffers: {gib} kB\nCached: {128 * gib} kB\nSReclaimable: {8 * gib} kB\n")
        for res in ("cpu", "io", "memory"):
            self._write(f"pressure/{res}", f"some avg10=1.00 avg60=1.00 avg300=1.00 "
                        f"total={v('tick') * 1000}\nfull avg10=0 avg60=0 avg300=0 total=0\n")
        if self.arc:
            rows = {"hits": v("hits"), "misses": v("misses"), "iohits": 0,
                    "size": 256 * gib * 1024, "c": 300 * gib * 1024,
                    "mfu_size": 100 * gib * 1024, "mru_size": 120 * gib * 1024,
                    "data_size": 200 * gib * 1024, "metadata_size": 50 * gib * 1024}
            self._write("spl/kstat/zfs/arcstats", "13 1 0x01 123 456 789 1011\n"
                        "name                            type data\n"
                        + "".join(f"{k:32}4    {n}\n" for k, n in rows.items()))

    def _run(self):
        while not self.stopped.wait(0.2):
            self.write(time.monotonic() - self.t0)

    def write_mounts(self, mounts):
        esc = lambda f: "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c  # noqa: E731
                                for c in str(f))
        self._write("self/mounts", "".join(f"{esc(src)} {esc(path)} {esc(fstype)} rw 0 0\n"
                                           for src, path, fstype in mounts))

    def start(self):
        self.write(0)
        if self.mounts is not None:
            self.write_mounts(self.mounts)
        if self.live:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
        return self

    def stop(self):
        self.stopped.set()
        if self.thread:
            self.thread.join()


class EventStream:
    """A Server-Sent Events stream read as it comes (http.client: read1 returns each chunk
    as it arrives, where requests would wait to fill its buffer). A context manager."""

    def __init__(self, srv, token, path, scheme="https"):
        if scheme == "https":
            self.conn = http.client.HTTPSConnection(
                "127.0.0.1", srv.port, timeout=REQUEST_TIMEOUT,
                context=ssl._create_unverified_context())
        else:
            self.conn = http.client.HTTPConnection("127.0.0.1", srv.http_port,
                                                   timeout=REQUEST_TIMEOUT)
        self.conn.request("GET", path, headers={"X-Auth-Session": token,
                                                "Accept": "text/event-stream"})
        self.resp = self.conn.getresponse()
        self.status, self.headers = self.resp.status, self.resp.headers
        self.buf = b""

    def _read(self, timeout):
        self.conn.sock.settimeout(max(timeout, 0.01))
        return self.resp.read1(65536)

    def next_event(self, want=lambda e: True, timeout=5 * SLOW):
        """The next event (a dict of its fields, comments under "comments") that want()
        accepts; fails the test after timeout seconds or at the end of the stream."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n\n" not in self.buf:
                left = deadline - time.monotonic()
                assert left > 0, f"no event in {timeout}s; buffered {self.buf[:200]!r}"
                data = self._read(left)
                assert data, f"stream ended; buffered {self.buf[:200]!r}"
                self.buf += data
            block, self.buf = self.buf.split(b"\n\n", 1)
            event = {"comments": []}
            for line in block.decode().split("\n"):
                if line.startswith(":"):
                    event["comments"].append(line[1:].strip())
                else:
                    key, _, value = line.partition(":")
                    event[key] = value[1:] if value.startswith(" ") else value
            if want(event):
                return event

    def at_eof(self, timeout=3 * SLOW):
        """True when the server ends the stream within timeout (events before are skipped)."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not self._read(deadline - time.monotonic()):
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except (ConnectionError, ssl.SSLError, http.client.HTTPException):
            return True
        return False

    def close(self, abort=False):
        """abort: reset the connection (SO_LINGER 0) instead of closing it politely."""
        if abort and self.conn.sock:
            self.conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
        self.resp.close()
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- fixtures ---------------------------------------------------------------------

# The shared server reads the real /sys, but lights nothing: the LED backends are forced
# virtual, so authorization rows never run ledctl or ipmitool on the test machine.
SHARED_SERVER_HW = ("--system-led-backend", "virtual", "--disk-led-backend", "virtual")

@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The shared server most tests talk to."""
    srv = Server(tmp_path_factory.mktemp("shared") / "state", *SHARED_SERVER_HW).start()
    yield srv
    assert_stopped_cleanly(srv)


@pytest.fixture(scope="session")
def admin(server):
    """A Client logged in as admin on the shared server."""
    return server.admin()


@pytest.fixture(scope="session")
def credentials(server):
    """(user, password) for each authorization column; anonymous borrows mon's."""
    return {"anon": ROLE_USERS["monitor"], **ROLE_USERS,
            "admin": ("admin", server.admin_password)}


@pytest.fixture(scope="session")
def clients(server, admin):
    """A Client per column: anon (no token), monitor (mon), operator (op), admin."""
    out = {"anon": server.client(), "admin": admin}
    for role, (name, password) in ROLE_USERS.items():
        make_user(admin, [role], name=name, password=password)
        out[role] = server.login_client(name, password)
    return out


@pytest.fixture
def tmpfs(tmp_path):
    """mount(size) -> a new directory with a tmpfs of that size ("8m") mounted on it, for
    the full-filesystem checks; unmounted at the end. Request it before spawn, so that the
    servers stop first. Skips the test, saying why, where mounting is not permitted."""
    mounted = []

    def mount(size):
        path = tmp_path / unique("tmpfs")
        path.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                            str(path)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a {size} tmpfs here (root and mount(8) are needed): "
                        f"{p.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def spawn(tmp_path):
    """Start extra servers for one test: spawn(*flags, state_dir=, **Server options).
    Each must exit with 0 on SIGTERM at the end of the test."""
    started = []

    def start(*extra, state_dir=None, **options):
        srv = Server(state_dir or tmp_path / unique("state"), *extra, **options).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        assert_stopped_cleanly(srv)
