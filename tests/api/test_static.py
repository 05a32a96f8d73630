# SPDX-License-Identifier: ISC
"""The browser console's files as spindled serves them from --webroot, on both listeners:
MIME types, ETag and 304, caching by name (versioned or not), precompressed .gz siblings,
the security headers on every answer, and 404 for anything outside the tree, hidden, or
left there by the build (npm's files)."""
import concurrent.futures
import gzip
import http.client
import os
import ssl

import pytest
import requests

from conftest import REQUEST_TIMEOUT, Server, assert_stopped_cleanly, expect_fault

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
       "form-action 'self'")
IMMUTABLE = "public, max-age=31536000, immutable"
UPLOT = "/vendor/uplot-1.6.32.esm.js"
UPLOT_JS = b"export default function uPlot() {}\n" * 40

FILES = {
    "index.html": ("<!doctype html><title>t</title>\n", "text/html; charset=utf-8"),
    "js/app.js": ("export const x = 1;\n", "text/javascript; charset=utf-8"),
    "js/mod.mjs": ("export const y = 2;\n", "text/javascript; charset=utf-8"),
    "css/app.css": ("body { margin: 0 }\n", "text/css; charset=utf-8"),
    "data.json": ('{"a":1}\n', "application/json"),
    "manifest.webmanifest": ('{"name":"Spindle"}\n', "application/manifest+json"),
    "icons/icon.svg": ("<svg xmlns='http://www.w3.org/2000/svg'/>\n", "image/svg+xml"),
    "icons/icon.png": ("\x89PNG\r\n", "image/png"),
    "favicon.ico": ("ico", "image/x-icon"),
    "fonts/f.woff2": ("wOF2", "font/woff2"),
    "vendor/uplot-LICENSE.txt": ("MIT\n", "text/plain; charset=utf-8"),
    "js/app.js.map": ('{"version":3}\n', "application/json"),
    "blob.bin": ("?", "application/octet-stream"),
    "js/app.0123abcd.js": ("export const z = 3;\n", "text/javascript; charset=utf-8"),
    "js/0123abcd.js": ("export const w = 4;\n", "text/javascript; charset=utf-8"),
    "icons/icon-2.png": ("\x89PNG\r\n", "image/png"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A webroot as a development checkout holds it: pages, a vendor file with its .gz,
    npm's files and node_modules, hidden files, and a symlink that leads out."""
    tmp = tmp_path_factory.mktemp("static")
    root = tmp / "webroot"
    for rel, (text, _) in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="latin-1")
    (root / "vendor" / "uplot-1.6.32.esm.js").write_bytes(UPLOT_JS)
    (root / "vendor" / "uplot-1.6.32.esm.js.gz").write_bytes(gzip.compress(UPLOT_JS))
    # a sibling older than its file is stale: never sent
    (root / "js" / "old.js").write_text("export const fresh = true;\n")
    (root / "js" / "old.js.gz").write_bytes(gzip.compress(b"export const fresh = false;\n"))
    st = os.stat(root / "js" / "old.js")
    os.utime(root / "js" / "old.js.gz", ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    (root / "package.json").write_text('{"private":true}\n')
    (root / "package-lock.json").write_text("{}\n")
    (root / "node_modules" / "uplot").mkdir(parents=True)
    (root / "node_modules" / "uplot" / "package.json").write_text("{}\n")
    (root / ".env").write_text("SECRET=1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / "js" / ".hidden.js").write_text("hidden\n")
    (tmp / "secret.txt").write_text("do not serve")
    (root / "leak.txt").symlink_to(tmp / "secret.txt")
    (root / "alias.js").symlink_to(root / "js" / "app.js")  # inside the tree: fine
    # a FIFO where a file would be (and as the .gz sibling of a real one): opening it must
    # not wait for a writer
    os.mkfifo(root / "fifo.html")
    os.mkfifo(root / "js" / "app.js.gz")
    return root


@pytest.fixture(scope="module")
def srv(site, tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("static-state") / "state", "--webroot", site).start()
    yield s
    assert_stopped_cleanly(s)


@pytest.fixture(params=["https", "http"])
def web(request, srv):
    """(base URL, a requests session) on one listener."""
    session = requests.Session()
    session.verify = False
    session.trust_env = False
    return (srv.https if request.param == "https" else srv.http), session


def raw_get(srv, scheme, path, method="GET"):
    """The exact request target, as written (requests and urllib3 would normalize dot
    segments): (status, headers, body)."""
    if scheme == "https":
        conn = http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=REQUEST_TIMEOUT,
                                           context=ssl._create_unverified_context())
    else:
        conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=REQUEST_TIMEOUT)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def security_headers_ok(headers):
    return (headers.get("Content-Security-Policy") == CSP
            and headers.get("X-Content-Type-Options") == "nosniff"
            and headers.get("Referrer-Policy") == "no-referrer")


def test_mime_types_and_bodies(web):
    base, s = web
    for rel, (text, ctype) in FILES.items():
        r = s.get(f"{base}/{rel}", timeout=REQUEST_TIMEOUT)
        assert r.status_code == 200, (rel, r.status_code)
        assert r.headers["Content-Type"] == ctype, rel
        assert r.content == text.encode("latin-1"), rel
        assert security_headers_ok(r.headers), (rel, r.headers)
    r = s.get(f"{base}/", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert r.text == FILES["index.html"][0]
    r = s.get(f"{base}/alias.js", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.text == FILES["js/app.js"][0]


def test_etag_and_304(web, site):
    base, s = web
    r = s.get(f"{base}/js/app.js", timeout=REQUEST_TIMEOUT)
    etag = r.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith('W/'), etag
    for inm in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        again = s.get(f"{base}/js/app.js", headers={"If-None-Match": inm},
                      timeout=REQUEST_TIMEOUT)
        assert again.status_code == 304, inm
        assert again.content == b"" and again.headers["ETag"] == etag
        assert again.headers["Cache-Control"] == "no-cache"
        assert security_headers_ok(again.headers)
    r = s.get(f"{base}/js/app.js", headers={"If-None-Match": '"other"'},
              timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.headers["ETag"] == etag
    # a file that changes (here only its mtime, by a nanosecond) gets a new ETag
    css = site / "css" / "app.css"
    first = s.get(f"{base}/css/app.css", timeout=REQUEST_TIMEOUT).headers["ETag"]
    st = os.stat(css)
    os.utime(css, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    r = s.get(f"{base}/css/app.css", headers={"If-None-Match": first}, timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.headers["ETag"] != first


@pytest.mark.parametrize("rel, cache", [
    (UPLOT, IMMUTABLE),
    ("/js/app.0123abcd.js", IMMUTABLE),
    ("/index.html", "no-cache"),
    ("/", "no-cache"),
    ("/js/app.js", "no-cache"),
    ("/js/0123abcd.js", "no-cache"),            # a hex name alone is no version
    ("/icons/icon-2.png", "no-cache"),          # -2. then no digit: no version
    ("/vendor/uplot-LICENSE.txt", "no-cache"),
    ("/manifest.webmanifest", "no-cache"),
])
def test_cache_control_by_name(web, rel, cache):
    base, s = web
    r = s.get(base + rel, timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.headers["Cache-Control"] == cache, rel


def get_raw(s, url, accept):
    """A GET whose body is returned as sent (not decoded)."""
    headers = {"Accept-Encoding": accept} if accept is not None else {}
    r = s.get(url, headers=headers, stream=True, timeout=REQUEST_TIMEOUT)
    return r, r.raw.read(decode_content=False)


@pytest.mark.parametrize("accept, gz", [
    ("gzip", True), ("gzip, deflate, br", True), ("br;q=1.0, gzip;q=0.5", True),
    ("*", True), ("x-gzip", True), ("GZIP", True),
    ("identity", False), ("", False), ("gzip;q=0", False), ("gzip; q=0.000", False),
    ("br, *;q=0", False), ("gzip;q=0, *", False), ("deflate", False),
])
def test_precompressed_sibling(web, accept, gz):
    base, s = web
    r, body = get_raw(s, base + UPLOT, accept)
    assert r.status_code == 200
    assert r.headers["Vary"] == "Accept-Encoding"
    assert r.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert r.headers["Cache-Control"] == IMMUTABLE
    assert security_headers_ok(r.headers)
    if gz:
        assert r.headers["Content-Encoding"] == "gzip", accept
        assert r.headers["ETag"].endswith('-gz"')
        assert gzip.decompress(body) == UPLOT_JS and len(body) < len(UPLOT_JS)
    else:
        assert "Content-Encoding" not in r.headers, accept
        assert not r.headers["ETag"].endswith('-gz"')
        assert body == UPLOT_JS


def test_gzip_variant_has_its_own_etag(web):
    base, s = web
    plain, _ = get_raw(s, base + UPLOT, "identity")
    packed, _ = get_raw(s, base + UPLOT, "gzip")
    assert plain.headers["ETag"] != packed.headers["ETag"]
    # each revalidates itself; the other's tag is no match
    r, _ = get_raw(s, base + UPLOT, "gzip")
    again = s.get(base + UPLOT, headers={"Accept-Encoding": "gzip",
                                         "If-None-Match": packed.headers["ETag"]},
                  timeout=REQUEST_TIMEOUT)
    assert again.status_code == 304 and again.headers["ETag"] == packed.headers["ETag"]
    assert again.headers["Vary"] == "Accept-Encoding"
    again = s.get(base + UPLOT, headers={"Accept-Encoding": "identity",
                                         "If-None-Match": packed.headers["ETag"]},
                  timeout=REQUEST_TIMEOUT)
    assert again.status_code == 200


def test_stale_or_missing_sibling_is_not_sent(web):
    base, s = web
    r, body = get_raw(s, f"{base}/js/old.js", "gzip")
    assert r.status_code == 200 and "Content-Encoding" not in r.headers
    assert body == b"export const fresh = true;\n"
    assert "Vary" not in r.headers
    r, body = get_raw(s, f"{base}/js/app.js", "gzip")
    assert "Content-Encoding" not in r.headers and "Vary" not in r.headers


def test_head(web):
    base, s = web
    r = s.head(base + UPLOT, headers={"Accept-Encoding": "identity"}, timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.content == b""
    assert int(r.headers["Content-Length"]) == len(UPLOT_JS)
    assert r.headers["Cache-Control"] == IMMUTABLE and security_headers_ok(r.headers)
    r = s.head(base + UPLOT, headers={"Accept-Encoding": "gzip"}, timeout=REQUEST_TIMEOUT)
    assert r.headers["Content-Encoding"] == "gzip"
    assert int(r.headers["Content-Length"]) == len(gzip.compress(UPLOT_JS))
    r = s.head(f"{base}/nope.js", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 404 and security_headers_ok(r.headers)


@pytest.mark.parametrize("scheme", ["https", "http"])
@pytest.mark.parametrize("path", [
    "/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/js/../../secret.txt",
    "/js/%2e%2e/%2e%2e/secret.txt", "/leak.txt",
    "/js%2f..%2f..%2fsecret.txt", "/js%2Fapp.js", "/js%5capp.js", "/..%2fsecret.txt",
    "/index.html%00.txt", "/js/app.js%00",
    "/nope.html", "/js", "/js/", "/vendor",
    "/.env", "/.git/config", "/js/.hidden.js", "/%2eenv", "/./index.html", "/js/./app.js",
    "/package.json", "/package-lock.json", "/node_modules/uplot/package.json",
    "/node_modules/", "/vendor/../package.json", "/fifo.html",
])
def test_not_served(srv, scheme, path):
    status, headers, body = raw_get(srv, scheme, path)
    assert status == 404, (path, status, body[:80])
    assert b"do not serve" not in body and b"SECRET" not in body
    assert security_headers_ok(headers), (path, dict(headers))


def test_only_get_and_head(web):
    base, s = web
    r = s.post(f"{base}/index.html", timeout=REQUEST_TIMEOUT)
    expect_fault(r, 405, "ERR_METHOD")
    assert r.headers["Allow"] == "GET, HEAD" and security_headers_ok(r.headers)


def test_api_answers_are_not_static(web):
    """The static headers belong to the files: the API keeps its own."""
    base, s = web
    r = s.get(f"{base}/api/system/v1/health", timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and "Content-Security-Policy" not in r.headers


def test_a_fifo_in_the_tree_holds_nothing(srv, web):
    """A FIFO in the webroot (a file name, or a file's .gz sibling) answers 404, or the file
    without its sibling, at once: opening one without O_NONBLOCK held the loop, every
    listener with it, until something wrote to it."""
    base, s = web
    r = s.get(f"{base}/js/app.js", headers={"Accept-Encoding": "gzip"}, timeout=REQUEST_TIMEOUT)
    assert r.status_code == 200 and r.headers.get("Content-Encoding") is None
    assert r.text == FILES["js/app.js"][0]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        fifo = pool.submit(s.get, f"{base}/fifo.html", timeout=REQUEST_TIMEOUT)
        health = pool.submit(s.get, f"{base}/api/system/v1/health", timeout=REQUEST_TIMEOUT)
        assert fifo.result().status_code == 404
        assert health.result().status_code == 200
