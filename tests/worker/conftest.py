# SPDX-License-Identifier: ISC
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


@pytest.fixture(params=["openat2", "openat-walk"])
def opener(request):
    """Both ways the worker confines a target: openat2(RESOLVE_BENEATH), and the walk of
    one openat(O_NOFOLLOW) per component where a seccomp filter answers openat2 with
    ENOSYS (systemd's RestrictSUIDSGID=, which spindled.service sets). The command prefix
    for run_worker's wrapper."""
    if request.param == "openat2":
        return ()
    from workerlib import NO_OPENAT2
    assert os.access(NO_OPENAT2, os.X_OK), f"{NO_OPENAT2} is missing: run make check"
    return (NO_OPENAT2,)
