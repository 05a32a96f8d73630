# SPDX-License-Identifier: ISC
"""The Prometheus suite: Debian's prometheus scraping real spindled instances with the
shipped scrape config and rules. The API suite's helpers (Server, FakeProc, make_user...)
are imported from tests/api/conftest.py, not copied."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.api.conftest import *  # noqa: E402,F401,F403  (helpers and fixtures)
