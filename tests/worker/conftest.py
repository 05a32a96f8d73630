"""Fixtures for the spindle-worker tests (helpers are in workerlib.py)."""
import os
import shutil
import subprocess
import tempfile

import pytest


@pytest.fixture
def bench_dir():
    """A scratch directory on the local disk (not a tmpfs), removed afterwards."""
    base = os.environ.get("SPINDLE_TEST_TMP", "/var/tmp")
    d = tempfile.mkdtemp(prefix="spindle-worker-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs mounted for the test (as root), for layouts that meet a full disk;
    skips the test, saying why, where mounting is not permitted."""
    path = tmp_path / "fs"
    path.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root and mount(8) are needed): "
                    f"{p.stderr.strip()}")
    yield str(path)
    subprocess.run(["umount", "-l", str(path)], capture_output=True)
