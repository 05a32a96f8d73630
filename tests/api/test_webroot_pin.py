# SPDX-License-Identifier: ISC
"""uPlot's version is written in three places that must agree: webroot/package.json pins it
(exactly), the lockfile resolves it, and the pages import the file the build names after it
(/vendor/uplot-X.Y.Z.esm.js, Makefile.am's webroot-vendor). A bump that misses one would
serve pages asking for a file that is not there."""
import json
import re

from conftest import REPO

WEBROOT = REPO / "webroot"
SKIP_DIRS = {"node_modules", "vendor"}  # npm's and the build's, not ours


def pinned():
    deps = json.loads((WEBROOT / "package.json").read_text())["dependencies"]
    return deps["uplot"]


def page_files():
    for path in sorted(WEBROOT.rglob("*")):
        rel = path.relative_to(WEBROOT)
        if rel.parts and rel.parts[0] in SKIP_DIRS:
            continue
        if path.is_file() and path.suffix in (".js", ".mjs", ".html", ".css"):
            yield path


def test_uplot_is_pinned_exactly():
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned()), f"pin an exact version: {pinned()!r}"
    package = json.loads((WEBROOT / "package.json").read_text())
    assert package.get("private") is True


def test_lockfile_resolves_the_pin():
    lock = json.loads((WEBROOT / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"]["uplot"] == pinned()
    assert lock["packages"]["node_modules/uplot"]["version"] == pinned()
    assert lock["packages"]["node_modules/uplot"]["integrity"].startswith("sha512-")


def test_pages_name_the_pinned_version():
    refs = {}
    for path in page_files():
        for version in re.findall(r"uplot-(\d+\.\d+\.\d+)", path.read_text(errors="replace")):
            refs.setdefault(version, []).append(str(path.relative_to(REPO)))
    stale = {v: files for v, files in refs.items() if v != pinned()}
    assert not stale, f"webroot/package.json pins uplot {pinned()}; these name another: {stale}"
