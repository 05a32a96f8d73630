# SPDX-License-Identifier: ISC
"""The faults suite: a real spindled killed mid-write, on a full disk, with broken workers
and hung LED commands. The API suite's helpers are the ones used here (Server, spawn,
FakeProc, expect...): imported from tests/api/conftest.py, not copied. What only faults
need (a small filesystem, filling it, waiting for a log line) is below."""
import errno
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.api.conftest import *  # noqa: E402,F401,F403  (helpers and fixtures)
from tests.api.conftest import SLOW  # noqa: E402


@pytest.fixture
def small_fs(tmp_path):
    """A 16 MiB tmpfs of the test's own, for a state dir to fill. Mounting needs root (CI
    runs as root); elsewhere the tests that need it are skipped, saying why."""
    mnt = tmp_path / "small-fs"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("a full state filesystem needs a tmpfs of its own, and mounting one is "
                    f"not permitted here (run as root): {p.stderr.strip() or p.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(directory):
    """Fills the filesystem of directory with one file, to the last byte; its path."""
    path = Path(directory) / "filler"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
    finally:
        os.close(fd)
    return path


def wait_log(srv, text, after=0, timeout=20):
    """Waits until the daemon's log holds text past offset after; the offset past it."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        log = srv.log_text()
        at = log.find(text, after)
        if at >= 0:
            return at + len(text)
        assert time.monotonic() < deadline, f"no '{text}' in the log:\n{srv.log_tail()}"
        time.sleep(0.1)


def integrity(state_dir):
    """PRAGMA integrity_check of a stopped daemon's database."""
    with sqlite3.connect(Path(state_dir) / "spindle.db") as c:
        return c.execute("PRAGMA integrity_check").fetchone()[0]
