"""The load suite reuses the API suite's helpers (a real spindled on random loopback
ports, logins, fake /proc): tests/api/conftest.py, loaded under a name of its own so the
two suites' conftest modules never clash."""
import importlib.util
import sys
from pathlib import Path

_API = Path(__file__).resolve().parents[1] / "api"
_spec = importlib.util.spec_from_file_location("spindle_api_conftest", _API / "conftest.py")
api = importlib.util.module_from_spec(_spec)
sys.modules["spindle_api_conftest"] = api
_spec.loader.exec_module(api)

spawn = api.spawn  # the fixture: start extra servers, each stopped cleanly at the end
