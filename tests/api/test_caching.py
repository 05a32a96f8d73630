# SPDX-License-Identifier: ISC
"""What a client may keep and how it knows it is stale: every GET answered in JSON has an
ETag over its bytes and a 304 for a client that has them, large ones go gzipped to a
client that takes it (another representation, another tag), and PUT and DELETE of a user
or a worksheet honour If-Match, so that two admins editing one object do not overwrite
each other unseen (412, nothing changed)."""
import gzip

from conftest import USERS, expect, expect_fault, make_user, unique

WS = "/api/analytics/v1/worksheets"
DATASETS = "/api/analytics/v1/datasets"


def test_a_get_has_an_etag_and_a_304(admin):
    first = admin.get(USERS, headers={"Accept-Encoding": "identity"})
    expect(first, 200)
    tag = first.headers["ETag"]
    assert tag.startswith('"') and tag.endswith('"') and "-gz" not in tag, tag
    assert first.headers["Cache-Control"] == "private, no-cache"
    again = admin.get(USERS, headers={"Accept-Encoding": "identity", "If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == tag and "Content-Type" not in again.headers
    # a list of tags, one of them current; a weak form of it; and one that is not
    for inm, status in ((f'"nope", {tag}', 304), (f"W/{tag}", 304), ('"nope"', 200)):
        got = admin.get(USERS, headers={"Accept-Encoding": "identity", "If-None-Match": inm})
        assert got.status_code == status, (inm, got.status_code)
    # HEAD: the GET's headers, its tag among them
    head = admin.request("HEAD", USERS, headers={"Accept-Encoding": "identity"})
    assert head.status_code == 200 and head.headers["ETag"] == tag and head.content == b""


def test_a_change_changes_the_tag(admin):
    name = make_user(admin)
    url = f"{USERS}/{name}"
    before = expect_tag(admin, url)
    expect(admin.put(url, json={"fullname": "Someone Else"}), 200)
    after = expect_tag(admin, url)
    assert before != after
    assert admin.get(url, headers={"If-None-Match": before}).status_code == 200


def expect_tag(client, url):
    resp = client.get(url, headers={"Accept-Encoding": "identity"})
    expect(resp, 200)
    return resp.headers["ETag"]


def test_large_answers_go_gzipped_to_who_takes_it(admin):
    plain = admin.get(DATASETS, headers={"Accept-Encoding": "identity"})
    expect(plain, 200)
    assert len(plain.content) > 1024 and "Content-Encoding" not in plain.headers
    assert plain.headers["Vary"] == "Accept-Encoding"
    gz = admin.get(DATASETS, headers={"Accept-Encoding": "gzip"}, stream=True)
    raw = gz.raw.read(decode_content=False)
    assert gz.headers["Content-Encoding"] == "gzip" and gz.headers["Vary"] == "Accept-Encoding"
    assert gzip.decompress(raw) == plain.content
    assert len(raw) * 3 < len(plain.content), (len(raw), len(plain.content))
    assert gz.headers["ETag"] == plain.headers["ETag"][:-1] + '-gz"'
    again = admin.get(DATASETS, headers={"Accept-Encoding": "gzip",
                                         "If-None-Match": gz.headers["ETag"]})
    assert again.status_code == 304
    # q=0 refuses it; a small answer is never gzipped
    refused = admin.get(DATASETS, headers={"Accept-Encoding": "gzip;q=0"}, stream=True)
    assert "Content-Encoding" not in refused.headers
    small = admin.get("/api/system/v1/health", headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers and small.headers.get("ETag")


def test_what_is_not_a_get_200_is_not_kept(admin):
    made = admin.post(USERS, json={"name": unique("c"), "password": "Spindle-test-pw-1",
                                   "roles": ["monitor"]})
    expect(made, 201)
    assert "ETag" not in made.headers and made.headers["Cache-Control"] == "no-store"
    missing = admin.get(f"{USERS}/nobody-here")
    assert missing.status_code == 404 and "ETag" not in missing.headers
    assert missing.headers["Cache-Control"] == "no-store"


def test_two_admins_editing_a_user(server, admin):
    name = make_user(admin)
    url = f"{USERS}/{name}"
    other = server.admin()
    seen = expect_tag(admin, url)
    gz_seen = admin.get(url, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    # the other admin changes it first
    expect(other.put(url, json={"fullname": "Changed by the other"}), 200)
    f = expect_fault(admin.put(url, json={"fullname": "Mine"}, headers={"If-Match": seen}),
                     412, "ERR_PRECONDITION_FAILED", details="If-Match")
    assert "GET it again" in f["details"], f
    expect_fault(admin.put(url, json={"fullname": "Mine"}, headers={"If-Match": gz_seen}),
                 412)
    expect_fault(admin.delete(url, headers={"If-Match": seen}), 412)
    user = expect(admin.get(url), 200)["user"]
    assert user["fullname"] == "Changed by the other"      # nothing was changed or lost
    # with the current tag (plain or gzipped), or "*", the change goes through
    current = expect_tag(admin, url)
    expect(admin.put(url, json={"fullname": "Mine"}, headers={"If-Match": current}), 200)
    current_gz = admin.get(url, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    expect(admin.put(url, json={"fullname": "Mine again"},
                     headers={"If-Match": f'"old", {current_gz}'}), 200)
    expect(admin.put(url, json={"fullname": "Any"}, headers={"If-Match": "*"}), 200)
    assert admin.delete(url, headers={"If-Match": expect_tag(admin, url)}).status_code == 204
    expect_fault(admin.put(url, json={"fullname": "x"}, headers={"If-Match": "*"}), 404)


def test_two_admins_editing_a_worksheet(server, admin):
    sheet = expect(admin.post(WS, json={"name": unique("cache-ws")}), 201)["worksheet"]
    url = sheet["href"]
    other = server.admin()
    seen = expect_tag(admin, url)
    expect(other.put(url, json={"datasets": [{"name": "cpu.utilization", "seconds": 60}]}),
           200)
    expect_fault(admin.put(url, json={"name": "mine"}, headers={"If-Match": seen}), 412,
                 "ERR_PRECONDITION_FAILED")
    expect_fault(admin.delete(url, headers={"If-Match": seen}), 412)
    assert len(expect(admin.get(url), 200)["worksheet"]["datasets"]) == 1
    current = expect_tag(admin, url)
    renamed = expect(admin.put(url, json={"name": unique("mine")},
                               headers={"If-Match": current}), 200)["worksheet"]
    assert len(renamed["datasets"]) == 1
    assert admin.delete(url, headers={"If-Match": expect_tag(admin, url)}).status_code == 204
