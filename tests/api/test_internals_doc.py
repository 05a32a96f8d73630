# SPDX-License-Identifier: ISC
"""docs/internals.md stays true: every file it names exists, and it names every .c file of
the daemon's core."""
import re

from conftest import REPO

DOC = REPO / "docs" / "internals.md"


def named_paths():
    return set(re.findall(r"`((?:server|api|db|tests|docs)/[\w./-]+\.(?:c|h|py|md))`",
                          DOC.read_text()))


def test_every_file_named_exists():
    missing = sorted(p for p in named_paths() if not (REPO / p).is_file())
    assert not missing, f"docs/internals.md names files that do not exist: {missing}"


def test_every_core_file_is_named():
    named = named_paths()
    core = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "server").rglob("*.c")
                  if "worker" not in p.parts)
    unnamed = [p for p in core if p not in named]
    assert not unnamed, f"docs/internals.md does not name: {unnamed}"


def includes(path):
    return re.findall(r'^#include\s+"([^"]+)"', path.read_text(), re.M)


def test_the_arrows_point_one_way():
    """db/ includes nothing of the core or api/; the core nothing of api/ (main.c, above
    them all, excepted); and only http.c and main.c of the core speak HTTP (the others
    see stream.h)."""
    wrong = []
    for f in sorted((REPO / "db").glob("*.[ch]")):
        wrong += [f"{f.name} -> {h}" for h in includes(f)
                  if not h.startswith("db") and h not in ("util.h", "log.h", "fault.h", "workq.h")]
    api_headers = {p.name for p in (REPO / "api").glob("*.h")}
    for f in sorted((REPO / "server").rglob("*.[ch]")):
        wrong += [f"{f.name} -> {h}" for h in includes(f)
                  if f.name != "main.c" and (h in api_headers or h.startswith("api/"))]
        if f.name not in ("http.c", "http.h", "main.c") and "http.h" in includes(f):
            wrong.append(f"{f.name} -> http.h")
    assert not wrong, wrong
