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


# The wings from the top down: each may include its own headers and those of the wings
# below it, never one above (docs/internals.md says what each owns). main.c and config.c,
# the composition root, sit above them all; the worker is a program of its own whose spec
# and histograms bench/ shares, so it sits just above base/.
WINGS = ["root", "api", "status", "bench", "analytics", "inventory", "net", "hardware", "access",
         "db", "worker", "iolat", "base"]


def wing_of(rel):
    """The wing of a file by its path from the repository's root."""
    parts = rel.split("/")
    if parts[0] in ("api", "db"):
        return parts[0]
    if parts[0] == "server":
        return "root" if len(parts) == 2 else parts[1]
    return None


def daemon_files():
    for top in ("server", "api", "db"):
        yield from sorted((REPO / top).rglob("*.[ch]"))


def resolve(f, h):
    """The file an include names: a sibling when bare, else a path from server/ or from the
    repository's root (the -I of Makefile.am); None for one not of the daemon."""
    if "/" not in h:
        return f.parent / h if (f.parent / h).is_file() else None
    for base in (REPO / "server", REPO):
        if (base / h).is_file():
            return base / h
    return None


def test_every_include_points_down_the_wings():
    """An include of a header in a wing above the includer's fails, as does one spelled so
    that it does not say its folder (a bare name that is no sibling)."""
    wrong = []
    for f in daemon_files():
        rel = f.relative_to(REPO).as_posix()
        w = wing_of(rel)
        assert w in WINGS, f"{rel}: in no wing of {WINGS}"
        for h in includes(f):
            t = resolve(f, h)
            if t is None:
                wrong.append(f"{rel} -> {h}: no such header (a bare name is a sibling)")
                continue
            tw = wing_of(t.relative_to(REPO).as_posix())
            if WINGS.index(tw) < WINGS.index(w):
                wrong.append(f"{rel} ({w}) -> {h} ({tw}): points up")
    assert not wrong, "\n".join(wrong)


def test_the_wing_order_is_not_vacuous():
    """The check above sees every wing and every arrow: it finds the includes it should."""
    seen = {wing_of(f.relative_to(REPO).as_posix()) for f in daemon_files()}
    assert seen == set(WINGS), seen
    arrows = sum(1 for f in daemon_files() for h in includes(f) if resolve(f, h))
    assert arrows > 300, arrows


def test_only_http_speaks_http():
    """Only the HTTP front (net/http*.c) and main.c speak HTTP; the other wings see
    net/stream.h."""
    wrong = []
    for f in daemon_files():
        rel = f.relative_to(REPO).as_posix()
        if rel.startswith(("api/", "server/net/http")) or rel == "server/main.c":
            continue
        if any(h in ("net/http.h", "http.h") for h in includes(f)):
            wrong.append(f"{rel} -> http.h")
    assert not wrong, wrong
