"""Fixtures for the spindle-worker tests (helpers are in workerlib.py)."""
import os
import shutil
import tempfile

import pytest


@pytest.fixture
def bench_dir():
    """A scratch directory on the local disk (not a tmpfs), removed afterwards."""
    base = os.environ.get("SPINDLE_TEST_TMP", "/var/tmp")
    d = tempfile.mkdtemp(prefix="spindle-worker-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)
