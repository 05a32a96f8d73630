# SPDX-License-Identifier: ISC
"""An open stream lasts no longer than its credentials: deleting the user, changing its
password or roles, or revoking its session ends every stream it has open (an analytics
window running past now, the live events, a job's progress), by session token and by
Basic alike, within a second or two, as a new request with the same credentials would
be refused. (A user deleted 4 s into a 40 s analytics stream went on getting its 36 more
chunks.)"""
import threading
import time

import pytest

from conftest import PASSWORD, SLOW, USERS, expect, make_user

STREAMS = {
    "analytics": "/api/analytics/v1/datasets/cpu.utilization/data?start=-1&seconds=40",
    "events": "/api/status/v1/events",
}


def change(admin, server, name, token, what):
    if what == "delete":
        expect(admin.delete(f"{USERS}/{name}"), 204)
    elif what == "password":
        expect(admin.put(f"{USERS}/{name}", json={"password": "Another-pw-22"}), 200)
    elif what == "roles":
        expect(admin.put(f"{USERS}/{name}", json={"roles": ["operator"]}), 200)
    elif what == "revoke":
        expect(server.client(token).delete("/api/access/v1"), 204)


CASES = [(stream, what, form)
         for stream in STREAMS
         for what in ("delete", "password", "roles", "revoke")
         for form in ("token", "basic")
         # (the live events take a session token only)
         if not (form == "basic" and (what == "revoke" or stream == "events"))]


@pytest.mark.parametrize("stream, what, form", CASES,
                         ids=[f"{s}-{w}-{f}" for s, w, f in CASES])
def test_a_stream_ends_with_its_access(server, admin, stream, what, form):
    name = make_user(admin, ["monitor"])
    token = server.login_client(name, PASSWORD).token
    c = server.client(token if form == "token" else None)
    kw = {} if form == "token" else {"auth": (name, PASSWORD)}
    resp = c.get(STREAMS[stream], stream=True, timeout=60, **kw)
    assert resp.status_code == 200, resp.text[:200]
    chunks, ended = [], []

    def read():
        try:
            for chunk in resp.iter_content(chunk_size=None):
                chunks.append((time.monotonic(), chunk))
        except Exception as e:  # a cut connection ends it too
            chunks.append((time.monotonic(), repr(e).encode()))
        ended.append(time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10 * SLOW
    while not chunks and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chunks, "the stream sent nothing"
    time.sleep(1.5)
    at = time.monotonic()
    change(admin, server, name, token, what)
    reader.join(5 * SLOW)
    resp.close()
    assert ended, f"the stream went on after the {what} ({len(chunks)} chunks)"
    assert ended[0] - at < 3 * SLOW, ended[0] - at
    # what came after the change: the access check runs each second and may end the
    # stream a few ms after the DELETE's answer (a 50 ms margin here once left out the end
    # event itself, and with it the ERR_UNAUTHORIZED it carries)
    after = [c for t, c in chunks if t > at]
    if stream == "events" and form == "token":
        assert any(b"ERR_UNAUTHORIZED" in c for c in after), after
    # the same credentials are refused now
    refused = server.client(token if form == "token" else None).get(
        "/api/status/v1/dashboard", **kw)
    assert refused.status_code in (401, 403) or what in ("roles",), refused.status_code


def test_a_job_progress_stream_ends_with_its_access(spawn, tmp_path):
    """The progress of a running job, streamed to its owner: deleted, the owner's stream
    ends with an end line saying why, while the job runs on."""
    from test_bench import WORKER
    bench = tmp_path / "bench"
    bench.mkdir()
    srv = spawn("--bench-dirs", bench, "--bench-worker", WORKER)
    admin = srv.admin()
    name = make_user(admin, ["operator"])
    op = srv.login_client(name, PASSWORD)
    job = expect(op.post("/api/bench/v1/jobs", json={
        "name": "long", "pattern": "randread", "size": "1M", "block_size": "4k",
        "runtime_s": 30}), 201)["job"]
    resp = op.get(f"/api/bench/v1/jobs/{job['id']}/progress", stream=True, timeout=60)
    assert resp.status_code == 200
    lines = resp.iter_lines()
    assert next(lines)
    at = time.monotonic()
    expect(admin.delete(f"{USERS}/{name}"), 204)
    rest = list(lines)
    assert time.monotonic() - at < 3 * SLOW
    assert rest and (b"changed" in rest[-1] or b"session ended" in rest[-1]), rest[-3:]
    assert expect(admin.get(f"/api/bench/v1/jobs/{job['id']}"), 200)["job"]["state"] in (
        "queued", "running")
    expect(admin.delete(f"/api/bench/v1/jobs/{job['id']}"), 202)
