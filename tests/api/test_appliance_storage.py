# SPDX-License-Identifier: ISC
"""The storage service as scripts written for real appliances read it: a pools-mode
monitoring plugin, a PRTG-style health check, an inventory exporter walking pools, projects,
filesystems and LUNs, an OpenStack driver checking a pool is its node's. Each sends Basic
credentials on every request, as they do, and parses the answer as they do.

ZFS is faked by `zpool` and `zfs` on the daemon's PATH (tests/api/fixtures/zfsbin), which
print what OpenZFS 2.1 prints for the pools and datasets of a FAKE_STORAGE file."""
import json
import os
import re
import time

import pytest

from conftest import PASSWORD, expect, expect_fault, make_user
from fixtures import zfs
from test_appliance_hardware import wait_for

FAKE_BIN = os.path.join(os.path.dirname(__file__), "fixtures", "zfsbin")
ST = "/api/storage/v1"
GB = 10 ** 9

MIRROR = """  pool: tank
 state: ONLINE
  scan: scrub repaired 0B in 00:01:02 with 0 errors on Sun Nov 29 00:25:03 2026
config:

\tNAME        STATE     READ WRITE CKSUM
\ttank        ONLINE       0     0     0
\t  mirror-0  ONLINE       0     0     0
\t    sda     ONLINE       0     0     0
\t    sdb     ONLINE       0     0     0
\tcache
\t  nvme0n1   ONLINE       0     0     0

errors: No known data errors
"""


def raidz(state="DEGRADED", sdd="UNAVAIL      0     0     0  cannot open"):
    return f"""  pool: backup
 state: {state}
status: One or more devices could not be opened.  Sufficient replicas exist for
\tthe pool to continue functioning in a degraded state.
action: Attach the missing device and online it using 'zpool online'.
config:

\tNAME        STATE     READ WRITE CKSUM
\tbackup      {state}     0     0     0
\t  raidz1-0  {state}     0     0     0
\t    sdc     ONLINE       0     0     0
\t    sdd     {sdd}
\t    sde     ONLINE       0     0     0

errors: No known data errors
"""


def props(kind, **kw):
    """A dataset's properties as zfs get -Hp prints them: [value, source]."""
    base = {"type": kind, "creation": "1542323439", "guid": "1234567890", "used": "0",
            "available": str(550 * GB), "referenced": "0", "usedbydataset": "0",
            "usedbysnapshots": "0", "usedbyrefreservation": "0", "quota": "0",
            "refquota": "0", "reservation": "0", "refreservation": "0",
            "compression": "off", "compressratio": "1.00", "checksum": "on",
            "readonly": "off", "dedup": "off", "logbias": "latency", "copies": "1",
            "secondarycache": "all", "sync": "standard", "encryption": "off",
            "keystatus": "-"}
    if kind == "filesystem":
        base.update({"mountpoint": "/", "recordsize": "131072", "atime": "on",
                     "sharenfs": "off", "sharesmb": "off", "snapdir": "hidden",
                     "aclinherit": "restricted", "casesensitivity": "sensitive",
                     "normalization": "none", "utf8only": "off", "nbmand": "off",
                     "vscan": "off"})
    else:
        base.update({"volsize": "0", "volblocksize": "16384"})
    out = {k: [v, "default"] for k, v in base.items()}
    for k, v in kw.items():
        out[k] = list(v) if isinstance(v, tuple) else [v, "-"]
    return out


def storage(backup_state="DEGRADED"):
    sdd = "UNAVAIL      0     0     0  cannot open" if backup_state != "ONLINE" else \
        "ONLINE       0     0     0"
    return {
        "pools": [
            {"name": "tank", "size": 1000 * GB, "allocated": 400 * GB, "free": 600 * GB,
             "health": "ONLINE", "dedupratio": "1.00", "guid": "11", "status": MIRROR},
            {"name": "backup", "size": 4000 * GB, "allocated": 1000 * GB, "free": 3000 * GB,
             "health": backup_state, "dedupratio": "1.25x", "guid": "22",
             "status": raidz(backup_state, sdd)},
        ],
        "datasets": [
            {"name": "tank", "props": props("filesystem", used=str(400 * GB),
                                            usedbydataset="100000", usedbysnapshots=str(GB),
                                            compressratio="1.52", mountpoint="/tank")},
            {"name": "tank/proj1", "props": props(
                "filesystem", used=str(300 * GB), usedbydataset=str(GB),
                usedbysnapshots=str(2 * GB), compression=("lz4", "local"),
                mountpoint="/tank/proj1")},
            {"name": "tank/proj1/home", "props": props(
                "filesystem", used=str(6 * GB), usedbydataset=str(5 * GB),
                refquota=(str(10 * GB), "local"), recordsize=("8192", "local"),
                sharenfs=("on", "local"), compression=("lz4", "inherited from tank/proj1"),
                mountpoint="/tank/proj1/home", available=str(4 * GB))},
            {"name": "tank/proj1/home/alice", "props": props(
                "filesystem", used=str(GB), usedbydataset=str(GB),
                mountpoint="/tank/proj1/home/alice")},
            {"name": "tank/proj1/vol1", "props": props(
                "volume", used=str(11 * GB), volsize=str(10 << 30),
                refreservation=(str(11 * GB), "local"), usedbyrefreservation=str(10 * GB),
                usedbydataset=str(GB))},
            {"name": "tank/vol0", "props": props("volume", used=str(GB), volsize=str(1 << 30),
                                                 usedbydataset=str(GB))},
            {"name": "backup", "props": props("filesystem", used=str(1000 * GB),
                                              available=str(2900 * GB),
                                              mountpoint="/backup")},
        ],
    }


@pytest.fixture
def box(spawn, tmp_path):
    """A server on a box of two pools: tank (a mirror, online) and backup (a raidz1 with
    one disk gone, degraded)."""
    state = tmp_path / "storage.json"
    state.write_text(json.dumps(storage()))
    env = dict(os.environ, PATH=FAKE_BIN + os.pathsep + os.environ["PATH"],
               FAKE_STORAGE=str(state))
    srv = spawn("--system-led-backend", "virtual", "--disk-led-backend", "virtual", env=env)
    srv.state_file = state
    return srv


def basic(srv):
    """A client sending Basic credentials on every request, as the appliance's scripts do."""
    c = srv.client()
    c.http.auth = ("admin", srv.admin_password)
    return c


def test_the_pools_mode_of_a_monitoring_plugin(box):
    """check_zfssa-style pools mode: {"pools": [...]} alone; each pool's status (alarm on
    anything but online or exported) and usage in bytes."""
    c = basic(box)
    j = expect(c.get(ST + "/pools"), 200)
    assert list(j) == ["pools"]
    report = {}
    for pool in j["pools"]:
        u = pool["usage"]
        for k in ("total", "used", "free", "available", "usage_total"):
            assert isinstance(u[k], int) and not isinstance(u[k], bool), (k, u)
        pct = 100.0 * u["used"] / u["total"]
        report[pool["name"]] = ("OK" if pool["status"] in ("online", "exported")
                                else "CRITICAL", round(pct))
    assert report == {"tank": ("OK", 40), "backup": ("CRITICAL", 25)}


def test_a_pool_as_the_guide_and_real_answers_have_it(box):
    c = basic(box)
    j = expect(c.get(ST + "/pools/tank"), 200)
    assert list(j) == ["pool"]
    p = j["pool"]
    assert (p["name"], p["profile"], p["state"], p["status"]) == \
        ("tank", "mirror", "online", "online")
    assert p["peer"] == "00000000-0000-0000-0000-000000000000"
    assert p["href"] == ST + "/pools/tank"
    u = p["usage"]
    assert (u["total"], u["used"], u["free"], u["available"], u["usage_total"]) == \
        (1000 * GB, 400 * GB, 600 * GB, 550 * GB, 400 * GB)
    assert u["usage_snapshots"] == 3 * GB and u["dedupratio"] == 100
    assert u["usage_data"] == 400 * GB - 3 * GB - 10 * GB and u["compression"] == 1.52
    b = expect(c.get(ST + "/pools/backup"), 200)["pool"]
    assert (b["profile"], b["status"], b["usage"]["dedupratio"]) == ("raidz1", "degraded", 125)
    # an OpenStack driver uses a pool only when it is its node's: owner and asn as the
    # version answer has them
    v = expect(c.get("/api/system/v1/version"), 200)["version"]
    assert (p["owner"], p["asn"]) == (v["nodename"], v["asn"])


def get_href(c, href, key):
    doc = expect(c.get(href), 200)
    assert list(doc) == [key], (href, list(doc))
    return doc[key]


def test_an_inventory_walks_projects_filesystems_and_luns_by_their_hrefs(box):
    c = basic(box)
    seen = {"projects": {}, "filesystems": {}, "luns": {}}
    for pool in get_href(c, ST + "/pools", "pools"):
        projects = get_href(c, pool["href"] + "/projects", "projects")
        for pr in projects:
            assert get_href(c, pr["href"], "project") == pr
            seen["projects"][pr["canonical_name"]] = pr
            for kind, one in (("filesystems", "filesystem"), ("luns", "lun")):
                for o in get_href(c, pr["href"] + "/" + kind, kind):
                    assert get_href(c, o["href"], one) == o
                    assert (o["pool"], o["project"]) == (pool["name"], pr["name"])
                    seen[kind][o["canonical_name"]] = o
    assert set(seen["projects"]) == {"tank/proj1", "tank"}
    assert set(seen["filesystems"]) == {"tank/proj1/home", "tank/proj1/home/alice"}
    assert set(seen["luns"]) == {"tank/proj1/vol1", "tank/vol0"}
    # the pool's root dataset stands for the project "default" of a volume directly under it
    assert seen["projects"]["tank"]["name"] == "default"
    assert seen["luns"]["tank/vol0"]["project"] == "default"

    home = seen["filesystems"]["tank/proj1/home"]
    assert (home["name"], home["mountpoint"], home["recordsize"], home["quota"]) == \
        ("home", "/tank/proj1/home", 8192, 10 * GB)
    assert home["quota_snap"] is False and home["space_data"] == 5 * GB
    assert home["space_available"] == 4 * GB and home["space_total"] == 6 * GB
    assert home["source"]["recordsize"] == "local"
    assert home["source"]["compression"] == "inherited" and home["compression"] == "lz4"
    assert home["sharenfs"] == "on" and home["creation"] == "20181115T23:10:39"
    alice = seen["filesystems"]["tank/proj1/home/alice"]
    assert alice["name"] == "home/alice"   # its href writes the '/' as '|'
    assert alice["href"] == ST + "/pools/tank/projects/proj1/filesystems/home%7Calice"
    vol1, vol0 = seen["luns"]["tank/proj1/vol1"], seen["luns"]["tank/vol0"]
    assert (vol1["volsize"], vol1["volblocksize"], vol1["sparse"]) == (10 << 30, 16384, False)
    assert vol0["sparse"] is True and vol1["status"] == "online"
    assert seen["projects"]["tank/proj1"]["compressratio"] == 100
    # the all-pools lists hold the same
    for kind in ("projects", "filesystems", "luns"):
        listed = get_href(c, f"{ST}/{kind}", kind)
        assert {o["canonical_name"]: o for o in listed} == seen[kind], kind


def test_what_is_not_there_is_a_404_naming_it(box):
    c = basic(box)
    expect_fault(c.get(ST + "/pools/nope"), 404, "ERR_NOT_FOUND", "pool")
    expect_fault(c.get(ST + "/pools/nope/projects"), 404, "ERR_NOT_FOUND", "pool")
    expect_fault(c.get(ST + "/pools/tank/projects/nope"), 404, "ERR_NOT_FOUND", "project")
    expect_fault(c.get(ST + "/pools/tank/projects/nope/filesystems"), 404, "ERR_NOT_FOUND",
                 "project")
    expect_fault(c.get(ST + "/pools/tank/projects/proj1/filesystems/nope"), 404,
                 "ERR_NOT_FOUND", "filesystem")
    expect_fault(c.get(ST + "/pools/tank/projects/proj1/luns/nope"), 404, "ERR_NOT_FOUND",
                 "lun")
    expect_fault(c.get(ST + "/pools?depth=2"), 400, "ERR_UNKNOWN_ARG", "depth")


def test_the_service_is_read_only(box):
    """Any write is a 405 in the appliance's fault, and nothing changes."""
    c = basic(box)
    before = {p: expect(c.get(p), 200) for p in (ST + "/pools", ST + "/filesystems")}
    for method, path in [("POST", ST + "/pools"), ("PUT", ST + "/pools/tank"),
                         ("DELETE", ST + "/pools/tank"),
                         ("POST", ST + "/pools/tank/projects"),
                         ("PUT", ST + "/pools/tank/projects/proj1/filesystems/home"),
                         ("DELETE", ST + "/pools/tank/projects/proj1/luns/vol1")]:
        resp = c.request(method, path, json={"quota": 1})
        fault = expect_fault(resp, 405, "ERR_METHOD")
        assert fault["code"] == 405 and "GET" in resp.headers["Allow"], (method, path)
    assert {p: expect(c.get(p), 200) for p in before} == before


def pool_problems(c):
    got = expect(c.get("/api/problem/v1/problems"), 200)["problems"]
    return [p for p in got if p["code"].startswith("SP-POOL-")]


def test_a_degraded_pool_is_a_problem_naming_its_vdev_until_it_is_not(box):
    c = basic(box)
    got = wait_for(lambda: pool_problems(c), "pool problem", timeout=30)
    assert len(got) == 1
    p = got[0]
    assert (p["code"], p["severity"], p["type"]) == ("SP-POOL-DEGRADED", "Major", "Fault")
    assert "backup" in p["description"] and "sdd UNAVAIL: cannot open" in p["description"]
    assert p["components"][0]["href"] == ST + "/pools/backup"
    assert "sdd" in p["components"][0]["label"] and "sdc" not in p["components"][0]["label"]
    # the dashboard's capacity tile and /metrics show the pools (the dashboard is built at
    # the second's tick, which may come just after the problem was raised)
    def dash_with_pools():
        d = expect(c.get("/api/status/v1/dashboard"), 200)["dashboard"]
        return d if "pools" in d else None
    dash = wait_for(dash_with_pools, "the dashboard's pools", timeout=5)
    pools = {x["n"]: x for x in dash["pools"]}
    assert pools["tank"] == {"n": "tank", "state": "ONLINE", "size": 1000 * GB,
                             "used": 400 * GB, "avail": 550 * GB}
    assert pools["backup"]["state"] == "DEGRADED"
    metrics = c.get("/metrics").text
    assert 'spindle_pool_state{pool="backup",state="degraded"} 1' in metrics
    assert 'spindle_pool_state{pool="backup",state="online"} 0' in metrics
    assert f'spindle_pool_size_bytes{{pool="tank"}} {1000 * GB}' in metrics
    # the cluster's resources: each pool with its size, as the appliance writes it
    res = expect(c.get("/api/hardware/v1/cluster"), 200)["cluster"]["resources"]
    zfs = {r["href"].rsplit("/", 1)[1]: r["details"] for r in res if "/zfs/" in r["href"]}
    assert zfs == {"tank": ["931G"], "backup": ["3.64T"]}

    # the disk is back: the problem goes at the next refresh
    box.state_file.write_text(json.dumps(storage("ONLINE")))
    wait_for(lambda: not pool_problems(c), "end of the pool problem", timeout=30)
    assert expect(c.get(ST + "/pools/backup"), 200)["pool"]["status"] == "online"


def test_a_box_without_zfs_has_no_pool(server, admin):
    """No zpool on PATH (the shared server's box): empty lists, and a 404 for a pool."""
    for kind in ("pools", "projects", "filesystems", "luns"):
        assert expect(admin.get(f"{ST}/{kind}"), 200) == {kind: []}
    expect_fault(admin.get(ST + "/pools/tank"), 404, "ERR_NOT_FOUND", "pool")
    svc = expect(admin.get(ST), 200)["service"]
    assert {m["uri"] for m in svc["methods"]} >= {ST + "/pools", ST + "/pools/{pool}"}
    assert all(re.match(r"^GET$", m["request"]) for m in svc["methods"])


# ---- names ZFS allows and names it does not, as hostile `zfs`/`zpool` output may print them

LONG = "l" * 200  # a legal ZFS name longer than one path segment the router takes


def hostile_storage():
    """Names an href must carry back to their own object ('/' inside a filesystem's name,
    '%', ':', spaces, a dataset printed twice), and names real ZFS forbids ('|', '~', '.',
    '..', reserved pool names, datasets of no listed pool), which the service refuses."""
    tank = storage()["pools"][0]
    pools = [tank, zfs.pool("my pool", guid="33")] + [
        zfs.pool(n, guid=str(40 + i)) for i, n in enumerate(
            ["p|q", "p%q", "mirror", "raidz", "draid", "spare1", "log", "1st", "p~q"])]
    vol = props("volume", volsize=str(1 << 30))
    names = ["tank", "tank/proj", "tank/proj/home", "tank/proj/home/alice", "tank/proj/a%2Fb",
             "tank/proj/100%", "tank/proj/x:y z", "tank/proj/" + LONG, "tank/a", "tank/a/b",
             "tank/a|b", "tank/a|b/c", "tank/..", "tank/.", "tank/proj/..", "tank/proj/home/.",
             "tank/proj/x|y", "tank/proj/t~1", "tank/proj/caf\u00e9", "tank/proj/q?",
             "tank/proj/s@snap", "tank/proj/h#b", "tank/proj//d", "tank/proj/e/", "p|q",
             "p|q/fs", "p%q", "p%q/fs", "mirror", "mirror/fs", "ghost/x", "my pool",
             "my pool/pr 1", "my pool/pr 1/f 1"]
    datasets = [{"name": n, "props": props("filesystem", guid=str(100 + i))}
                for i, n in enumerate(names)]
    datasets += [{"name": n, "props": vol} for n in
                 ("tank/proj/vol", "tank/proj/v|1", "tank/vol0", "tank/../v")]
    # printed again later with other figures: one object, not two under one href
    datasets.append({"name": "tank/proj/home", "props": props("filesystem", guid="999")})
    return {"pools": pools, "datasets": datasets}


def test_every_href_leads_back_to_its_own_object(spawn, tmp_path):
    """An attacker who can name datasets (zfs allow create) or a box whose zfs prints
    strange names: every link of every listing answers 200 with the object that carried it,
    and a name ZFS itself forbids is in no listing."""
    srv = spawn("--system-led-backend", "virtual", "--disk-led-backend", "virtual",
                env=zfs.zfs_env(tmp_path, hostile_storage()))
    c = basic(srv)
    listings = [ST + "/pools", ST + "/projects", ST + "/filesystems", ST + "/luns"]
    for p in get_href(c, ST + "/pools", "pools"):
        listings.append(p["href"] + "/projects")
        for pr in get_href(c, p["href"] + "/projects", "projects"):
            listings += [pr["href"] + "/filesystems", pr["href"] + "/luns"]
    seen, walked = {}, 0
    for listing in listings:
        kind = listing.rsplit("/", 1)[1]
        one = {"pools": "pool", "projects": "project", "filesystems": "filesystem",
               "luns": "lun"}[kind]
        objects = get_href(c, listing, kind)
        hrefs = [o["href"] for o in objects]
        assert len(set(hrefs)) == len(hrefs), (listing, hrefs)
        for o in objects:
            resp = c.get(o["href"])
            assert resp.status_code == 200, (o.get("canonical_name", o["name"]), o["href"],
                                             resp.text[:200])
            assert resp.json() == {one: o}, o["href"]
            seen.setdefault(kind, set()).add(o.get("canonical_name", o["name"]))
            walked += 1
    assert walked > 20
    long_fs = {"tank/proj/" + LONG}  # legal, but no path segment holds it: left out
    assert seen["pools"] == {"tank", "my pool"}
    assert seen["projects"] == {"tank", "tank/proj", "tank/a", "my pool/pr 1"}
    assert seen["filesystems"] - long_fs == {
        "tank/proj/home", "tank/proj/home/alice", "tank/proj/a%2Fb", "tank/proj/100%",
        "tank/proj/x:y z", "tank/a/b", "my pool/pr 1/f 1"}
    assert seen["luns"] == {"tank/proj/vol", "tank/vol0"}
    home = get_href(c, ST + "/pools/tank/projects/proj/filesystems/home", "filesystem")
    assert home["id"] == "102"  # the first of the two printed
    # what refers to a refused name is not there either; the log names the refusal
    expect_fault(c.get(ST + "/pools/p%7Cq"), 404, "ERR_NOT_FOUND", "pool")
    expect_fault(c.get(ST + "/pools/tank/projects/a%7Cb"), 404, "ERR_NOT_FOUND", "project")
    expect_fault(c.get(ST + "/pools/tank/projects/a/filesystems/b%7Cc"), 404,
                 "ERR_NOT_FOUND", "filesystem")
    told = [line for line in srv.log_text().splitlines() if "storage: leaving out" in line]
    assert len(told) == 1 and "'p|q' (not a pool name ZFS allows" in told[0], told


# ---- a big box: its listings are bytes made once per snapshot, off the loop

def loop_work_cpu(c):
    """The longest the loop was held in the last minute, in its thread's CPU seconds."""
    text = expect_text(c.get("/metrics"))
    return float(re.search(r'^spindle_loop_work_max_seconds\{clock="cpu"\} (\S+)$', text,
                           re.M).group(1))


def expect_text(resp):
    assert resp.status_code == 200, resp.text[:200]
    return resp.text


def test_a_monitor_listing_2000_filesystems_does_not_hold_the_loop(spawn, tmp_path):
    """A read-only account lists a box's 2,000 filesystems again and again, and asks again
    with the ETag it has: each answer costs the loop a lookup and a send, not the building
    of a 3 MB document and its gzip, so the longest stretch the loop is held stays what it
    was before (the collector's second), not a multiple of it (it was 130 times that)."""
    srv = spawn("--system-led-backend", "virtual", "--disk-led-backend", "virtual",
                env=zfs.zfs_env(tmp_path, zfs.big_storage(2000)))
    admin = basic(srv)
    make_user(admin, roles=("monitor",), name="phone")
    c = srv.client()
    c.http.auth = ("phone", PASSWORD)
    expect(c.get(ST + "/pools"), 200)  # the first snapshot is in
    time.sleep(1.5)  # a few of the collector's seconds: the idle figure
    idle = loop_work_cpu(admin)
    resp = c.get(ST + "/filesystems")
    doc = expect(resp, 200)
    assert resp.headers["Content-Encoding"] == "gzip"
    assert list(doc) == ["filesystems"] and len(doc["filesystems"]) == 2000
    assert {f["project"] for f in doc["filesystems"]} == {"p0", "p1", "p2", "p3"}
    assert doc["filesystems"][0]["href"].startswith(ST + "/pools/big/projects/p")
    etag = resp.headers["ETag"]
    again = c.get(ST + "/filesystems", headers={"If-None-Match": etag})
    assert again.status_code == 304 and not again.content
    for _ in range(4):
        assert c.get(ST + "/filesystems").status_code == 200
        assert c.get(ST + "/filesystems", headers={"If-None-Match": etag}).status_code == 304
        assert c.get(ST + "/pools/big/projects/p1/filesystems").status_code == 200
    busy = loop_work_cpu(admin)
    assert busy <= 3 * idle, (idle, busy)
    # a client that takes no gzip: the 3 MB are copied to its connection, nothing more
    plain = c.get(ST + "/filesystems", headers={"Accept-Encoding": "identity"})
    assert plain.json() == doc and plain.headers["ETag"] != etag
    assert "Content-Encoding" not in plain.headers
    assert c.get(ST + "/filesystems", headers={"If-None-Match": plain.headers["ETag"],
                                               "Accept-Encoding": "identity"}).status_code == 304
    busy = loop_work_cpu(admin)
    # (a sanitizer checks each byte of that copy: under one it cost 13 times the idle turn)
    if "ASAN_OPTIONS" not in os.environ:
        assert busy <= 10 * idle, (idle, busy)
