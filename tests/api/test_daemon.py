# SPDX-License-Identifier: ISC
"""The daemon as a program: flags, first start, restart, SIGTERM, what it keeps on disk."""
import hashlib
import os
import re
import signal
import socket
import sqlite3
import ssl
import stat
import subprocess
import time

import pytest

from conftest import (ACCESS, PASSWORD, REPO, SPINDLED, STOP_TIMEOUT, TEST_KDF_ITERATIONS,
                      USERS, WRAPPER, b64url_decode, expect, expect_fault, free_port,
                      make_token, make_user, run_daemon)

FLAGS = ["--foreground", "--state-dir", "--listen", "--http-listen", "--log-level",
         "--kdf-iterations", "--config", "--max-body", "--max-connections",
         "--allow-insecure-http", "--webroot", "--bench-reserve", "--help", "--version"]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def pems(directory, marker):
    """Files under directory whose text holds the PEM marker (b"PRIVATE KEY", ...)."""
    return [p for p in directory.rglob("*") if p.is_file() and marker in p.read_bytes()]


def pwhash(state_dir, user):
    with sqlite3.connect(state_dir / "spindle.db") as db:
        return db.execute("SELECT pwhash FROM users WHERE name = ?", (user,)).fetchone()[0]


# ---- flags -----------------------------------------------------------------------

def test_help():
    rc, out, _ = run_daemon("--help")
    assert rc == 0
    for flag in FLAGS:
        assert flag in out, f"--help does not mention {flag}"


def test_version():
    version = re.search(r"AC_INIT\(\[spindle\],\s*\[([^\]]+)\]", (REPO / "configure.ac")
                        .read_text()).group(1)
    rc, out, _ = run_daemon("--version")
    assert rc == 0 and version in out


# Each is appended to an otherwise good command line; the daemon must refuse to start
# with one line on stderr, naming one of the given words (if any).
BAD_ARGS = {
    "unknown flag": (["--no-such-flag"], ["no-such-flag"]),
    "stray argument": (["stray"], ["stray"]),
    "flag without its value": (["--state-dir"], ["state-dir"]),
    "max-body not a number": (["--max-body", "lots"], ["max-body", "lots"]),
    "unknown log level": (["--log-level", "loud"], ["log-level", "loud"]),
    "plain HTTP off loopback": (["--http-listen", "0.0.0.0:{port}"], []),
    "unknown config key": (["--config", "{config}"], ["no_such_key"]),
    "a flag misspelt": (["--lisen", "127.0.0.1:1"], ["'--lisen'; did you mean --listen?"]),
    "a flag misspelt, with =": (["--state_dir=/tmp"], ["did you mean --state-dir?"]),
    "a config key misspelt": (["--config", "{typo}"], ["'kdf_iteration'; did you mean "
                                                       "kdf_iterations?"]),
    "bench-reserve neither size nor share": (["--bench-reserve", "lots"],
                                             ["bench-reserve", "lots"]),
    "bench-reserve share too large": (["--bench-reserve", "95%"], ["bench-reserve", "95%"]),
}


@pytest.mark.parametrize("args, words", BAD_ARGS.values(), ids=BAD_ARGS.keys())
def test_bad_invocation_exits_2(tmp_path, args, words):
    config = tmp_path / "bad.conf"
    config.write_text(f"state_dir={tmp_path / 'state'}\nno_such_key=1\n")
    typo = tmp_path / "typo.conf"
    typo.write_text("kdf_iteration=1000\n")
    args = [a.format(port=free_port(), config=config, typo=typo) for a in args]
    rc, _, err = run_daemon("--foreground", "--state-dir", tmp_path / "state",
                            "--listen", f"127.0.0.1:{free_port()}", *args)
    assert rc == 2, err
    assert len(err) == 1, err
    assert not words or any(w in err[0] for w in words), err


def test_port_in_use_fails_start(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        rc, _, err = run_daemon("--foreground", "--state-dir", tmp_path / "state",
                                "--kdf-iterations", TEST_KDF_ITERATIONS,
                                "--listen", f"127.0.0.1:{busy.getsockname()[1]}")
    assert rc not in (0, None) and err


def test_config_file(spawn):
    srv = spawn(config=True)      # every setting from the INI file, none as flags
    expect(srv.admin().get(ACCESS), 200)
    assert (srv.state_dir / "initial-admin-password").exists()


# ---- state on disk ---------------------------------------------------------------

def test_first_start_writes_state(spawn):
    srv = spawn()
    state = srv.state_dir
    password_file = state / "initial-admin-password"
    assert mode(password_file) == 0o600
    assert re.fullmatch(r"\S{12,}\n", password_file.read_text())
    assert mode(state / "jwt.key") == 0o600
    assert len((state / "jwt.key").read_bytes()) == 32
    assert (state / "spindle.db").is_file()

    keys = pems(state / "tls", b"PRIVATE KEY")
    assert keys and all(mode(k) == 0o600 for k in keys), keys
    certs = pems(state / "tls", b"BEGIN CERTIFICATE")
    assert certs
    served = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", srv.port)))
    stored = re.search(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----",
                       certs[0].read_bytes(), re.S).group().decode()
    assert served == ssl.PEM_cert_to_DER_cert(stored)


def test_restart_keeps_state_and_sessions(spawn):
    first = spawn()
    state = first.state_dir
    kept = ["initial-admin-password", "jwt.key"] + [
        str(p.relative_to(state)) for p in (state / "tls").rglob("*") if p.is_file()]
    before = {f: (state / f).read_bytes() for f in kept}
    admin = first.admin()
    logged_out = first.admin()
    assert logged_out.delete(ACCESS).status_code == 204
    name = make_user(admin, ["operator"])
    token = make_token(admin, name)
    assert first.stop()[0] == 0

    second = spawn(state_dir=state)
    assert {f: (state / f).read_bytes() for f in kept} == before
    expect(second.client(admin.token).get(ACCESS), 200)
    expect_fault(second.client(logged_out.token).get(ACCESS), 401, "ERR_UNAUTHORIZED")
    bearer = {"Authorization": f"Bearer {token['secret']}"}
    expect(second.client().get(USERS, headers=bearer), 200)
    expect(second.admin().get(f"{USERS}/{name}"), 200)
    expect(second.login(name, PASSWORD), 201)


def test_sigterm_exits_promptly_with_intact_db(spawn):
    srv = spawn()
    admin = srv.admin()                 # its keep-alive connection stays open
    name = make_user(admin)
    with socket.create_connection(("127.0.0.1", srv.http_port)) as half:
        half.sendall(b"GET /api/system/v1/health HTTP/1.1\r\n")     # and a half request
        rc, seconds = srv.stop()
    assert rc == 0, srv.log_tail()
    assert seconds < STOP_TIMEOUT
    with sqlite3.connect(srv.state_dir / "spindle.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert {"admin", name} <= {n for (n,) in db.execute("SELECT name FROM users")}


@pytest.mark.parametrize("iterations, least", [(None, 600000),
                                               (TEST_KDF_ITERATIONS, TEST_KDF_ITERATIONS)],
                         ids=["default", "--kdf-iterations"])
def test_password_hash_is_pbkdf2(spawn, iterations, least):
    srv = spawn(kdf_iterations=iterations)
    password = srv.admin_password
    srv.admin()
    srv.stop()
    algo, count, salt, digest = pwhash(srv.state_dir, "admin").split("$")
    assert algo == "pbkdf2-sha256"
    if iterations is None:
        assert int(count) >= least
    else:
        assert int(count) == least
    expected = hashlib.pbkdf2_hmac("sha256", password.encode(), b64url_decode(salt), int(count))
    assert b64url_decode(digest) == expected, "hash is not PBKDF2-HMAC-SHA256(password, salt)"


def test_password_hash_upgraded_at_login(spawn):
    """After --kdf-iterations goes up, a hash is redone at its user's next successful login
    (and only then), stored where the password lives."""
    first = spawn()
    name = make_user(first.admin())
    first.stop()
    srv = spawn(state_dir=first.state_dir, kdf_iterations=2 * TEST_KDF_ITERATIONS)
    assert pwhash(srv.state_dir, name).split("$")[1] == str(TEST_KDF_ITERATIONS)
    expect_fault(srv.login(name, "wrong-" + PASSWORD), 401, "ERR_UNAUTHORIZED")
    assert pwhash(srv.state_dir, name).split("$")[1] == str(TEST_KDF_ITERATIONS)
    expect(srv.login(name, PASSWORD), 201)
    algo, count, salt, digest = pwhash(srv.state_dir, name).split("$")
    assert int(count) == 2 * TEST_KDF_ITERATIONS
    expected = hashlib.pbkdf2_hmac("sha256", PASSWORD.encode(), b64url_decode(salt), int(count))
    assert b64url_decode(digest) == expected
    expect(srv.login(name, PASSWORD), 201)


def test_log_says_where_it_listens(spawn, tmp_path):
    """./quickstart run leaves it to spindled to say where it listens."""
    srv = spawn()
    log = srv.log_text()
    assert f"listening on https://127.0.0.1:{srv.port}\n" in log, log
    assert f"listening on http://127.0.0.1:{srv.http_port}\n" in log, log
    # On every address: the line also gives the URL to open on the machine itself.
    port = free_port()
    proc = subprocess.Popen(WRAPPER + [SPINDLED, "--foreground", "--state-dir",
                                       str(tmp_path / "any"), "--kdf-iterations",
                                       str(TEST_KDF_ITERATIONS), "--listen", f"0.0.0.0:{port}"],
                            stderr=subprocess.PIPE, text=True)
    try:
        want = (f"listening on https://0.0.0.0:{port} (every address; on this machine "
                f"https://localhost:{port})")
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if " ready" in line:     # SIGTERM is handled from here on
                break
        assert any(want in line for line in seen), seen
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(STOP_TIMEOUT) == 0


def test_initial_password_is_in_its_file_not_the_log(spawn):
    """What README says: the first start writes the password to a file and logs where."""
    srv = spawn()
    srv.stop()
    log = srv.log_text()
    assert srv.admin_password not in log
    assert f"initial admin password written to {srv.state_dir}/initial-admin-password" in log


def test_log_holds_no_secrets(spawn):
    srv = spawn()       # at --log-level debug
    admin = srv.admin()
    secret = "Never-Log-Me-71"
    name = make_user(admin, password=secret)
    session = srv.login_client(name, secret)
    token = make_token(session, name)
    srv.stop()
    log = srv.log_text()
    for value in (secret, admin.token, session.token, token["secret"]):
        assert value not in log


def test_sigterm_finishes_a_reply_in_flight(spawn):
    """A login still hashing on a helper thread when SIGTERM comes is answered first."""
    # How long one password check takes on this machine and build (a sanitizer build is
    # five times slower, and a busy machine leaves the helper threads, which run below the
    # loop's priority, less): the admin's login, timed. The login in flight is another
    # user's, whose password nothing has checked yet, and SIGTERM comes a fifth of that
    # time after it, while its check runs and well inside the 10 s shutdown waits for it.
    # Where a check takes longer than 4 s, the daemon starts again with as many iterations
    # as take about 2 s here.
    iterations = 1_000_000
    for _ in range(3):
        srv = spawn(kdf_iterations=iterations)
        started = time.monotonic()
        admin = srv.admin()
        check_s = time.monotonic() - started
        if check_s <= 4:
            break
        srv.stop()
        iterations = max(10_000, int(iterations * 2 / check_s))
    assert check_s < 8, f"a password check took {check_s:.1f} s: past the shutdown's wait"
    user = make_user(admin)
    body = f'{{"user":"{user}","password":"{PASSWORD}"}}'.encode()
    sock = socket.create_connection(("127.0.0.1", srv.http_port), timeout=30)
    sock.sendall(b"POST /api/access/v1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(check_s / 5)  # the request is read and its check is running
    srv.proc.send_signal(signal.SIGTERM)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.1 201"), data[:200]
    srv.proc.wait(STOP_TIMEOUT)
    srv.returncode = srv.proc.returncode
    assert srv.returncode == 0
    assert "finishing 1 requests in flight" in srv.log_text(), srv.log_tail()


# ---- one daemon per state dir ---------------------------------------------------------

SLEEPING_WORKER = """#!/usr/bin/python3
# A worker that takes its spec and keeps its job running until it is stopped.
import sys, time
sys.stdin.read()
time.sleep(120)
"""


def test_second_daemon_on_the_same_state_dir_refuses_to_start(spawn, tmp_path):
    """A second spindled on a state dir in use exits at once (status 1, one line naming
    the dir and the first one's pid) without touching its state: the running job stays
    running, the queued one queued. Workers do not hold the lock; once the first has
    stopped, the dir is free again."""
    worker = tmp_path / "sleeping-worker"
    worker.write_text(SLEEPING_WORKER)
    worker.chmod(0o755)
    (tmp_path / "bench").mkdir()
    bench = ("--bench-dirs", tmp_path / "bench", "--bench-worker", worker)
    first = spawn(*bench)
    admin = first.admin()
    spec = {"pattern": "randread", "size": "1M", "runtime_s": 60}
    running = expect(admin.post("/api/bench/v1/jobs", json=spec), 201)["job"]
    queued = expect(admin.post("/api/bench/v1/jobs", json=spec), 201)["job"]
    deadline = time.monotonic() + 10
    while "worker_pid" not in (job := expect(admin.get(running["href"]), 200)["job"]):
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    pid = job["worker_pid"]

    def stored_states():
        with sqlite3.connect(first.state_dir / "spindle.db") as db:
            return dict(db.execute("SELECT id, state FROM bench_runs"))

    want = {running["id"]: "running", queued["id"]: "queued"}
    while stored_states() != want:  # the running row is written off the loop
        assert time.monotonic() < deadline, stored_states()
        time.sleep(0.05)
    lock = first.state_dir / "spindled.lock"
    assert lock.read_text().strip() == str(first.proc.pid)

    rc, _, err = run_daemon("--foreground", "--state-dir", first.state_dir,
                            "--kdf-iterations", TEST_KDF_ITERATIONS,
                            "--listen", f"127.0.0.1:{free_port()}", *bench)
    assert rc == 1, err
    assert len(err) == 1, err
    assert str(first.state_dir) in err[0] and "in use" in err[0], err
    assert f"pid {first.proc.pid}" in err[0], err
    assert first.running
    assert stored_states() == want
    assert expect(admin.get(running["href"]), 200)["job"]["state"] == "running"

    # the worker (a child) has no descriptor of the lock file
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:  # (one the worker closes meanwhile, as a starting interpreter does, is gone)
            fds.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    assert str(lock) not in fds, fds

    assert first.stop()[0] == 0
    second = spawn(*bench, state_dir=first.state_dir)
    assert second.admin().get(queued["href"]).status_code == 200


def test_fifos_where_proc_files_should_be_hold_nothing(spawn, tmp_path):
    """Every file the collector reads under --proc-root (and the capacity reader's
    mounts) a FIFO that nobody writes: opening one without O_NONBLOCK held the loop for
    good; now each reads as empty, the sample is skipped, and the daemon answers."""
    root = tmp_path / "root"
    for rel in ("proc/stat", "proc/diskstats", "proc/net/dev", "proc/meminfo",
                "proc/pressure/cpu", "proc/pressure/io", "proc/pressure/memory",
                "proc/self/mountinfo", "proc/mounts", "proc/spl/kstat/zfs/arcstats"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(root / rel)
    srv = spawn("--proc-root", root, "--sys-root", root)
    admin = srv.admin()
    time.sleep(2.5)  # two collector ticks, and the capacity reader's first pass
    for _ in range(3):
        expect(admin.get("/api/status/v1/dashboard"), 200)
        expect(srv.client().get("/api/system/v1/health"), 200)


# ---- slow work below the loop's priority ------------------------------------------------

NICE_ZPOOL = """#!/bin/sh
# A zpool that notes its own nice value once the daemon has lowered it (or after 5 s),
# then answers as a box without pools does.
for i in $(seq 50); do
	nice=$(cut -d')' -f2 /proc/$$/stat | cut -d' ' -f18)
	[ "$nice" = 10 ] && break
	sleep 0.1
done
echo "$nice" >>"$NICE_LOG"
echo "no pools available" >&2
"""


def nice_of(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_slow_work_runs_below_the_loop(spawn, tmp_path):
    """Helper threads (password checks, parsing, queries) and children (commands,
    benchmark workers) run at nice 10, the loop and the database writer at the daemon's
    own: on a busy box the loop wins the CPU whenever it has work (a flood of password
    guesses made the phone's polls thirty times slower while the KDFs competed with it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "zpool").write_text(NICE_ZPOOL)
    (bin_dir / "zpool").chmod(0o755)
    log = tmp_path / "nice.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NICE_LOG": str(log)}
    srv = spawn("--helper-threads", 3, env=env)
    srv.admin()
    pid = srv.proc.pid
    nices = {int(t): nice_of(pid, t) for t in os.listdir(f"/proc/{pid}/task")}
    assert nices.pop(pid) == 0, "the loop thread"
    # the 3 asked for, and the store's, the storage's, the LEDs', ... helper threads
    assert sum(n == 10 for n in nices.values()) >= 3 + 3, nices
    # the database writer and the series writer keep the loop's priority
    assert sum(n == 0 for n in nices.values()) >= 1, nices
    assert set(nices.values()) <= {0, 10}, nices
    deadline = time.monotonic() + 30
    while not (log.exists() and log.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert log.read_text().split()[0] == "10", "the zpool child's nice value"
