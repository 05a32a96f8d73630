# SPDX-License-Identifier: ISC
"""A real Prometheus (Debian's) scrapes two spindled boxes on loopback with the shipped
scrape config (packaging/prometheus/prometheus.yml: one job per box, file_sd targets,
HTTPS checked against each box's own certificate, a token per box from a file) and rules,
every second; its HTTP API answers both boxes' series and the recorded ones, and a 1 s
scrape gives a steady irate because each sample carries the collector's second."""
import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests
import yaml

from tests.api.conftest import (SLOW, FakeProc, Server, assert_stopped_cleanly, free_port,
                                make_role, make_token, make_user)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "packaging" / "prometheus"
PROMETHEUS = os.environ.get("PROMETHEUS", shutil.which("prometheus") or "/usr/bin/prometheus")
BOXES = {"box1": 2, "box2": 3}          # the shipped config's boxes, and their disks
READS = FakeProc.RATES["reads"]         # reads per second of each fake disk


class SecondProc(FakeProc):
    """A FakeProc whose counters move once a second, on the half-second, by their exact
    rate: the collector (reading just after each whole second) sees the rate to the unit,
    so an irate that is not exact is the scraper's doing."""

    def _run(self):
        t0 = round(time.time())
        while not self.stopped.wait(0.05):
            self.write(round(time.time()) - t0)


def query(base, expr):
    resp = requests.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10)
    body = resp.json()
    assert resp.status_code == 200 and body["status"] == "success", body
    return body["data"]["result"]


def by_box(base, expr):
    """{box: value} of an instant query, or None until every box answers."""
    got = {r["metric"]["box"]: float(r["value"][1]) for r in query(base, expr)}
    return got if set(got) == set(BOXES) else None


def wait_for(what, fn, timeout):
    """fn() until it returns something true, else fail naming what and its last answer."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: {got!r}"
        time.sleep(0.25)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if not os.access(PROMETHEUS, os.X_OK):
        pytest.fail(f"no prometheus at {PROMETHEUS}: apt-get install prometheus "
                    "(./quickstart deps), or set PROMETHEUS")
    base = tmp_path_factory.mktemp("fleet")
    etc = base / "etc"
    (etc / "spindle").mkdir(parents=True)
    (etc / "targets").mkdir()
    procs, servers = [], {}
    prom = None
    try:
        for box, disks in BOXES.items():
            procs.append(SecondProc(base / box / "root", disks=disks, nics=1, cpus=2).start())
            srv = Server(base / box / "state", "--proc-root", base / box / "root",
                         "--metrics-allow", "none", "--system-led-backend", "virtual",
                         "--disk-led-backend", "virtual").start()
            servers[box] = srv
            # README.md, "Many boxes": a role that may only read statistics, its user,
            # that user's token; the box's own certificate.
            admin = srv.admin()
            make_role(admin, "metrics", ["stat:read"])
            make_user(admin, ["metrics"], name="prometheus")
            (etc / "spindle" / f"{box}.token").write_text(
                make_token(admin, "prometheus", name="prometheus")["secret"] + "\n")
            shutil.copy(srv.state_dir / "tls" / "cert.pem", etc / "spindle" / f"{box}.crt")
        # The shipped targets file, each box's address made its loopback port.
        shipped = yaml.safe_load((SHIPPED / "targets" / "spindle.yml").read_text())
        assert [g["labels"]["box"] for g in shipped] == list(BOXES)
        for group in shipped:
            group["targets"] = [f"127.0.0.1:{servers[group['labels']['box']].port}"]
        (etc / "targets" / "spindle.yml").write_text(yaml.safe_dump(shipped))
        # The shipped config, its paths under etc, scraped and evaluated every second. The
        # name each job checks in its box's certificate: the box's hostname (here the
        # machine's: the boxes run on it).
        text = (SHIPPED / "prometheus.yml").read_text().replace("/etc/prometheus", str(etc))
        config = yaml.safe_load(text)
        config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s",
                            "evaluation_interval": "1s"}
        config.pop("alerting")                  # no alertmanager here
        for job in config["scrape_configs"]:
            assert job["tls_config"]["server_name"] in BOXES, job
            job["tls_config"]["server_name"] = socket.gethostname()
        for rules in config["rule_files"]:
            shutil.copy(SHIPPED / os.path.basename(rules), rules)
        (etc / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        with open(base / "prometheus.log", "wb") as log:
            prom = subprocess.Popen(
                [PROMETHEUS, f"--config.file={etc / 'prometheus.yml'}",
                 f"--storage.tsdb.path={base / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"

        def ready():
            assert prom.poll() is None, (base / "prometheus.log").read_text()
            try:
                return requests.get(f"{url}/-/ready", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_for("prometheus ready", ready, 20)
        yield {"url": url, "servers": servers, "log": base / "prometheus.log"}
    finally:
        if prom:
            prom.terminate()
            try:
                prom.wait(10)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        for srv in servers.values():
            assert_stopped_cleanly(srv)
        for p in procs:
            p.stop()


def test_both_boxes_scraped_over_https_with_their_tokens(fleet):
    url = fleet["url"]
    up = wait_for("both boxes up", lambda: by_box(url, 'up{job="spindle"} == 1'), 15)
    assert up == {b: 1 for b in BOXES}
    sites = {r["metric"]["site"] for r in query(url, 'up{job="spindle"}')}
    assert sites == {"lab"}                             # the targets file's labels
    disks = wait_for("both boxes' disks", lambda: by_box(
        url, "count by (box) (spindle_disk_reads_completed_total)"), 10)
    assert disks == BOXES
    # The daemon's own series too, the failed-job counter from the start.
    assert by_box(url, 'spindle_jobs_ended_total{state="failed"}') == {b: 0 for b in BOXES}
    # ...and a lit LED's since-when, on box1 only (box2's family has no sample).
    resp = fleet["servers"]["box1"].admin().put("/api/hardware/v1/chassis/system",
                                                json={"locate": True})
    assert resp.status_code in (200, 202), resp.text
    lit = wait_for("box1's lit LED", lambda: query(
        url, "spindle_locator_led_lit_since_seconds"), 10)
    assert [(r["metric"]["box"], r["metric"]["led"]) for r in lit] == [("box1", "chassis/system")]
    assert time.time() - 60 < float(lit[0]["value"][1]) <= time.time()


def test_recorded_series_for_each_box(fleet):
    url = fleet["url"]
    got = wait_for("instance:spindle_disk_reads:rate1m of both boxes",
                   lambda: by_box(url, "instance:spindle_disk_reads:rate1m"), 15)
    # Summed over the box's disks. The 1m window is not yet full of samples, and rate()
    # extrapolates only half a scrape past the first: under the rate, never over it
    # (promtool's test checks the figures; here, that each box gets its own).
    for box, disks in BOXES.items():
        assert 0 < got[box] <= disks * READS * 1.01, got
    busiest = query(url, "instance:spindle_disk_busiest:ratio_rate1m")
    assert sorted(r["metric"]["box"] for r in busiest) == sorted(BOXES)   # one disk each
    assert all(r["metric"]["device"].startswith("nvme") for r in busiest), busiest
    assert by_box(url, "instance:spindle_cpu_busy:ratio_rate1m")


def test_a_one_second_scrape_gives_a_steady_irate(fleet):
    """Every 1 s point of irate is the fake disk's rate to the unit: each scrape's sample
    is stamped with the collector's second, whatever the scrape's own jitter. (Stamped
    with the scrape's time, each would be off by that jitter, and by a factor of 2 or 0
    where a scrape fell on the other side of a tick.)"""
    url = fleet["url"]
    expr = 'irate(spindle_disk_reads_completed_total{box="box1",device="nvme0n1"}[3s])'
    seen = []

    def steady():
        """8 s of irate, and the last 6 s of points, if every one is exact; else None. A
        busy machine can starve the fake's thread past its half second: its counters then
        move a second late (an irate of 0, then twice the rate), which is the fake's doing,
        so a later window is looked at. The points' stamps hold in every window."""
        end = time.time()
        resp = requests.get(f"{url}/api/v1/query_range", timeout=10, params={
            "query": expr, "start": end - 8, "end": end, "step": "1s"}).json()
        assert resp["status"] == "success", resp
        values = resp["data"]["result"][0]["values"] if resp["data"]["result"] else []
        if len(values) < 8:
            return None
        # The points Prometheus keeps are the collector's: on whole seconds (the scrapes'
        # own times would fall wherever the job's offset in the second puts them), READS
        # apart.
        raw = query(url, 'spindle_disk_reads_completed_total{box="box1",device="nvme0n1"}[6s]')
        points = raw[0]["values"] if raw else []
        assert all(float(t) == int(float(t)) for t, _ in points), points
        seen[:] = [values, points]
        if {float(v) for _, v in values} != {float(READS)} or len(points) < 5:
            return None
        if {int(float(b[1])) - int(float(a[1])) for a, b in zip(points, points[1:])} != {
                READS * (int(float(b[0])) - int(float(a[0]))) for a, b in zip(points, points[1:])}:
            return None
        return values

    try:
        wait_for("8 s of exact irate", steady, 40)
    except AssertionError:
        raise AssertionError(f"no window of exact irate; the last: {seen}") from None
    # Repeated samples (several scrapes within a collector second happen at 1 s) were
    # taken as the same point, not as errors.
    text = requests.get(f"{url}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(("prometheus_target_scrapes_sample_duplicate_timestamp_total",
                            "prometheus_target_scrapes_sample_out_of_order_total",
                            "prometheus_target_scrapes_sample_out_of_bounds_total")):
            assert line.split()[-1] == "0", line


def dashboard_exprs():
    dash = json.loads((SHIPPED / "grafana-spindle-fleet.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    box = next(v for v in dash["templating"]["list"] if v["name"] == "box")
    return exprs, box["query"]["query"]


def test_the_dashboard_reads_only_recorded_series():
    rules = yaml.safe_load((SHIPPED / "spindle-recording.rules.yml").read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"]}
    exprs, box_query = dashboard_exprs()
    assert len(exprs) >= 8
    for expr in exprs + [box_query]:
        names = set(re.findall(r"[a-z_]*:[a-z_:0-9]+", re.sub(r"\{[^}]*\}", "", expr)))
        bare = re.sub(r"[a-z_]*:[a-z_:0-9]+|\{[^}]*\}|label_values\(|, box\)|[\s+()]", "", expr)
        assert names and names <= recorded and not bare, expr


def test_every_dashboard_query_answers_for_both_boxes(fleet):
    url = fleet["url"]
    exprs, _ = dashboard_exprs()
    for expr in exprs:
        expr = expr.replace("$box", ".+")
        wait_for(expr, lambda: {r["metric"].get("box") for r in query(url, expr)} == set(BOXES),
                 10)
