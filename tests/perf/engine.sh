#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: the same jobs through spindle-worker and through fio, alternating,
# ROUNDS rounds, on one file on the local disk:
#   8 KiB randread O_DIRECT psync with 1 and with 32 readers, io_uring at iodepth 32,
#   1 MiB sequential read and write (O_DIRECT, psync).
# fio runs twice each round: with its default buffers (malloc'd) and with buffers of
# reserved 2 MiB huge pages (--iomem=shmhuge: hugetlbfs pages, pinned and physically
# contiguous; the script reserves HUGEPAGES of them in /proc/sys/vm/nr_hugepages for the
# run and puts the setting back after, and skips that variant when it cannot). The worker
# is held to the better of the two, case by case.
# Prints each run's IOPS, the ratio worker/best fio and CPU seconds (user + system of the
# whole process tree, from getrusage) per 100k I/Os; then the medians against the aims:
# IOPS at least 0.95 x fio's best (the median of the rounds' ratios, each the worker against
# the better fio of its own round), and no more CPU per I/O than that fio.
# Then, when spindled, wrk and nginx are there: GET /api/status/v1/dashboard with wrk
# --latency against nginx serving the same bytes, alternating, idle and while a 32-reader
# job runs through the bench API (saturating, then polling at ~400 req/s); the aim is
# p99 < 5 ms, and nginx in the same conditions shows what the box allows.
# Usage, from the repo root after a build:  bash tests/perf/engine.sh
# Environment: WORKER (./server/worker/spindle-worker), SPINDLED (./server/spindled),
#   FIO (fio), DURATION (seconds per run, 5), ROUNDS (3), FILE_SIZE (1G),
#   BENCH_DIR (parent of the scratch dir, /var/tmp), ENGINE and DASHBOARD (1: run the
#   first, the second part), CASES (only the cases whose name contains it, e.g. "1M"),
#   HUGEPAGES (2 MiB pages reserved for fio's shmhuge runs, 512; 0: no such runs).
set -euo pipefail

WORKER=${WORKER:-./server/worker/spindle-worker}
SPINDLED=${SPINDLED:-./server/spindled}
FIO=${FIO:-fio}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
FILE_SIZE=${FILE_SIZE:-1G}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
DASHBOARD=${DASHBOARD:-1}
PYTHON=/usr/bin/python3

# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

command -v "$FIO" >/dev/null || die "fio not found (apt-get install fio)"
[ -x "$WORKER" ] || die "no spindle-worker at $WORKER: build first, or set WORKER"
[ -x "$PYTHON" ] || die "no $PYTHON"

TMP=$(mktemp -d "$BENCH_DIR/spindle-perf-engine.XXXXXX")
# fio's huge-page buffers come from the kernel's reserved pool: reserve some for the run,
# and give the pool back its size on the way out, however the run ends.
HUGEPAGES=${HUGEPAGES:-512}
NR_HUGE=/proc/sys/vm/nr_hugepages
huge_before=$(cat "$NR_HUGE" 2>/dev/null || echo "")
huge_restore() {
	[ -n "$huge_before" ] && [ "$(cat "$NR_HUGE")" != "$huge_before" ] &&
		echo "$huge_before" >"$NR_HUGE" 2>/dev/null || true
}
trap 'rc=$?; huge_restore; perf_cleanup $rc' EXIT
trap 'exit 130' INT TERM
FIO_HUGE=0
if [ "${ENGINE:-1}" = 1 ] && [ "$HUGEPAGES" -gt 0 ] && [ -n "$huge_before" ]; then
	if [ "$huge_before" -ge "$HUGEPAGES" ] ||
		{ echo "$HUGEPAGES" >"$NR_HUGE" 2>/dev/null &&
			[ "$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)" -ge "$HUGEPAGES" ]; }; then
		FIO_HUGE=1
	else
		echo "fio with huge pages: skipped (could not reserve $HUGEPAGES 2 MiB pages in $NR_HUGE: root, and that much free memory, are needed)"
	fi
fi

FILE="$TMP/bench.dat"
echo "laying out $FILE_SIZE at $FILE (incompressible data, once for both tools)"
echo "{\"pattern\":\"randread\",\"target\":\"$FILE\",\"size\":\"$FILE_SIZE\",\"io_size\":\"8k\"}" |
	timeout 600 "$WORKER" --spec - >/dev/null || die "the worker could not lay out $FILE"

# --- part 1: spindle-worker against fio ------------------------------------------------------
[ "${ENGINE:-1}" = 1 ] && WORKER=$WORKER FIO=$FIO FILE=$FILE DURATION=$DURATION ROUNDS=$ROUNDS FILE_SIZE=$FILE_SIZE \
	FIO_HUGE=$FIO_HUGE timeout $((ROUNDS * 15 * (DURATION + 30) + 60)) "$PYTHON" - <<'PY'
import json, os, resource, statistics, subprocess, sys

W, FIO, FILE = os.environ["WORKER"], os.environ["FIO"], os.environ["FILE"]
DUR, ROUNDS, SIZE = int(os.environ["DURATION"]), int(os.environ["ROUNDS"]), os.environ["FILE_SIZE"]
HUGE = os.environ["FIO_HUGE"] == "1"

# name, worker spec, fio options: the same job twice
ONLY = os.environ.get("CASES", "")  # a word the case names must contain, e.g. "1M"

CASES = [
    ("8k randread psync, 1 reader",
     {"pattern": "randread", "block_size": "8k", "readers": 1},
     ["--rw=randread", "--bs=8k", "--ioengine=psync", "--numjobs=1"]),
    ("8k randread psync, 32 readers",
     {"pattern": "randread", "block_size": "8k", "readers": 32},
     ["--rw=randread", "--bs=8k", "--ioengine=psync", "--numjobs=32"]),
    ("8k randread io_uring, iodepth 32",
     {"pattern": "randread", "block_size": "8k", "readers": 1, "engine": "io_uring",
      "iodepth": 32},
     ["--rw=randread", "--bs=8k", "--ioengine=io_uring", "--iodepth=32", "--numjobs=1"]),
    ("1M sequential read psync",
     {"pattern": "read", "block_size": "1M", "readers": 1},
     ["--rw=read", "--bs=1m", "--ioengine=psync", "--numjobs=1"]),
    ("1M sequential write psync",
     {"pattern": "write", "block_size": "1M", "writers": 1},
     ["--rw=write", "--bs=1m", "--ioengine=psync", "--numjobs=1"]),
]

def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run_worker(spec):
    spec = dict(spec, target=FILE, size=SIZE, direct=True, runtime_s=DUR)
    c0 = cpu_children()
    p = subprocess.run([W, "--spec", "-"], input=json.dumps(spec), capture_output=True,
                       text=True, timeout=DUR + 120)
    cpu = cpu_children() - c0
    if p.returncode != 0:
        sys.exit("worker failed: " + p.stdout[-500:] + p.stderr[-500:])
    res = [json.loads(l) for l in p.stdout.splitlines()][-1]
    ios = res["read"]["ops"] + res["write"]["ops"]
    return ios / res["elapsed_s"], cpu, ios

def run_fio(opts, huge=False):
    if huge:
        opts = opts + ["--iomem=shmhuge"]
    cmd = [FIO, "--name=perf", "--filename=" + FILE, "--size=" + SIZE, "--direct=1",
           "--thread", "--group_reporting", "--time_based", "--runtime=%d" % DUR,
           "--norandommap", "--randrepeat=0", "--invalidate=1", "--output-format=json"] + opts
    c0 = cpu_children()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=DUR + 120)
    cpu = cpu_children() - c0
    if p.returncode != 0:
        sys.exit("fio failed: " + p.stderr[-500:])
    j = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    ios = j["read"]["total_ios"] + j["write"]["total_ios"]
    iops = j["read"]["iops"] + j["write"]["iops"]
    return iops, cpu, ios

print(f"\nspindle-worker vs fio ({subprocess.run([FIO, '--version'], capture_output=True, text=True).stdout.strip()}), "
      f"{DUR} s runs, {ROUNDS} alternating rounds, O_DIRECT, file {SIZE}")
print("fio: its default buffers" + (", and buffers of reserved 2 MiB huge pages (--iomem=shmhuge)"
      if HUGE else " only (no huge pages reserved)") + "; the worker against the better")
print("CPU: user + system seconds of the process and its threads per 100k I/Os\n")
summary = []
for name, spec, opts in CASES:
    if ONLY and ONLY not in name:
        continue
    tools = ["w", "f", "h"] if HUGE else ["w", "f"]
    print(name)
    print(f"{'round':<7}{'worker IOPS':>13}{'fio IOPS':>13}" + (f"{'fio huge':>13}" if HUGE else "")
          + f"{'ratio':>8}{'worker CPU':>12}{'fio CPU':>10}" + (f"{'huge CPU':>10}" if HUGE else ""))
    iops = {k: [] for k in tools}
    cpu = {k: [] for k in tools}
    for r in range(ROUNDS):
        order = tools[r % len(tools):] + tools[:r % len(tools)]  # each first in turn
        for who in order:
            i, c, n = run_worker(spec) if who == "w" else run_fio(opts, who == "h")
            iops[who].append(i)
            cpu[who].append(c / n * 1e5)
        best = max(iops[k][-1] for k in tools if k != "w")
        print(f"{r + 1:<7}{iops['w'][-1]:>13.0f}{iops['f'][-1]:>13.0f}"
              + (f"{iops['h'][-1]:>13.0f}" if HUGE else "")
              + f"{iops['w'][-1] / best:>8.2f}{cpu['w'][-1]:>12.2f}{cpu['f'][-1]:>10.2f}"
              + (f"{cpu['h'][-1]:>10.2f}" if HUGE else ""))
    med = {k: statistics.median(iops[k]) for k in tools}
    cmed = {k: statistics.median(cpu[k]) for k in tools}
    peer = max((k for k in tools if k != "w"), key=lambda k: med[k])  # fio at its best
    # The ratio is the median of the rounds' (each the worker against that round's better
    # fio, in the same round on the disk as it was then: the column above), not the ratio
    # of the medians: a disk that changes speed between rounds would otherwise set one
    # tool's slow round against the other's fast one.
    rounds = [max(iops[k][r] for k in tools if k != "w") for r in range(ROUNDS)]
    ratio = statistics.median(w / b if b > 0 else 0 for w, b in zip(iops["w"], rounds))
    print(f"{'median':<7}{med['w']:>13.0f}{med['f']:>13.0f}" + (f"{med['h']:>13.0f}" if HUGE else "")
          + f"{ratio:>8.2f}{cmed['w']:>12.2f}{cmed['f']:>10.2f}"
          + (f"{cmed['h']:>10.2f}" if HUGE else ""))
    print(f"        the better fio by its median: {'huge pages' if peer == 'h' else 'default buffers'}; "
          f"ratio: the median of the rounds' ratios\n")
    summary.append((name, ratio, cmed["w"], cmed[peer], peer))

print("summary (medians, against the better fio)  IOPS ratio  CPU/100k worker  fio   fio's buffers  verdict")
print("  (IOPS ratio: the median of the rounds' ratios)")
for name, ratio, wc, fc, peer in summary:
    verdict = []
    verdict.append("IOPS ok" if ratio >= 0.95 else "IOPS BELOW 0.95")
    verdict.append("CPU ok" if wc <= fc * 1.0 else "CPU ABOVE fio")
    print(f"  {name:<41}{ratio:>6.2f}{wc:>14.2f}{fc:>8.2f}   {'huge pages' if peer == 'h' else 'default':<14}{', '.join(verdict)}")
PY

[ "$DASHBOARD" = 1 ] || exit 0

# --- part 2: the dashboard's latency while a 32-reader job runs ------------------------------
# Against a peer in the same run: nginx serving the dashboard's bytes as a static file, so
# what the job does to the box (interrupts, the I/O path, CPU) weighs on both alike.
if [ ! -x "$SPINDLED" ] || ! command -v wrk >/dev/null || ! command -v curl >/dev/null ||
	! command -v nginx >/dev/null; then
	echo
	echo "dashboard latency: skipped (needs $SPINDLED, wrk, curl and nginx)"
	exit 0
fi
mkdir -p "$TMP/state/bench" "$TMP/www"
spindled_start --bench-worker "$(readlink -f "$WORKER")"
dash_url="$base/api/status/v1/dashboard"
sleep 2 # the collector's first samples
curl -fsS --max-time 5 -H "X-Auth-Session: $token" -o "$TMP/www/dashboard.json" "$dash_url" ||
	die "no dashboard"
nginx_start dashboard.json
nginx_url="http://127.0.0.1:$nginx_port/dashboard.json"

# wrk's Lua: p50/p90/p99/p99.9/max in microseconds, requests and non-2xx on one line;
# PACE_MS > 0 makes each connection wait that long between requests (a polling client).
cat >"$TMP/lat.lua" <<'LUA'
local pace = tonumber(os.getenv("PACE_MS") or "0")
if pace > 0 then delay = function() return pace end end
done = function(summary, latency, requests)
	io.write(string.format("LAT %d %d %d %d %d %d %d\n", latency:percentile(50),
		latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max,
		summary.requests, summary.errors.status))
end
LUA
ms() { awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# lat WHO PACE_MS: one wrk run (--latency); prints a row, sets p99_us
lat() {
	local url=$nginx_url hdr=() p50 p90 p99 p999 max n bad
	if [ "$1" = spindled ]; then
		url=$dash_url
		hdr=(-H "X-Auth-Session: $token")
	fi
	PACE_MS=$2 wrk -t1 -c4 -d"${DURATION}s" --latency -s "$TMP/lat.lua" "${hdr[@]}" "$url" \
		>"$TMP/wrk.txt" 2>&1 || { cat "$TMP/wrk.txt"; die "wrk failed"; }
	read -r _ p50 p90 p99 p999 max n bad < <(grep '^LAT ' "$TMP/wrk.txt")
	[ "$bad" = 0 ] || die "$1 answered $bad non-2xx responses"
	printf '  %-9s %9d %8s %8s %8s %9s %8s\n' "$1" "$n" "$(ms "$p50")" "$(ms "$p90")" \
		"$(ms "$p99")" "$(ms "$p999")" "$(ms "$max")"
	p99_us=$p99
}
# table TITLE PACE_MS: ROUNDS alternating rounds; sets S99 and N99, the median p99s (us)
table() {
	local r s=() n=()
	echo "$1"
	printf '  %-9s %9s %8s %8s %8s %9s %8s\n' server requests "p50 ms" "p90 ms" "p99 ms" \
		"p99.9 ms" "max ms"
	for r in $(seq "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then
			lat spindled "$2"
			s+=("$p99_us")
			lat nginx "$2"
			n+=("$p99_us")
		else
			lat nginx "$2"
			n+=("$p99_us")
			lat spindled "$2"
			s+=("$p99_us")
		fi
	done
	S99=$(median "${s[@]}")
	N99=$(median "${n[@]}")
	echo "  median p99: spindled $(ms "$S99") ms, nginx $(ms "$N99") ms, ratio $(ratio "$S99" "$N99")"
}

echo
echo "GET /api/status/v1/dashboard and nginx serving its bytes, wrk -t1 -c4 -d${DURATION}s"
echo "--latency, $ROUNDS alternating rounds. wrk corrects for coordinated omission: a stall of"
echo "25 ms at 9,000 req/s counts as some 225 late requests, not one."
table "no job running, saturating (4 connections, back to back):" 0
idle_s=$S99 idle_n=$N99

run_s=$((ROUNDS * 4 * (DURATION + 1) + 15))
job_file="$TMP/state/bench/dash.dat"
# Moved, not linked: a bench file must have one name (job_target.c refuses a second one,
# which could sit outside the bench dirs). The engine runs above are done with it.
mv "$FILE" "$job_file"
spec="{\"name\":\"dash\",\"pattern\":\"randread\",\"target\":\"$job_file\",\"size\":\"$FILE_SIZE\",\"block_size\":\"8k\",\"readers\":32,\"direct\":true,\"runtime_s\":$run_s}"
code=$(curl -sS -o "$TMP/job.json" -w '%{http_code}' --max-time 10 -X POST \
	-H "X-Auth-Session: $token" -H 'Content-Type: application/json' --data "$spec" \
	"$base/api/bench/v1/jobs" || true)
[ "$code" = 201 ] || die "the bench API answered $code: $(cat "$TMP/job.json")"
id=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["job"]["id"])' "$TMP/job.json")
sleep 3
table "while a 32-reader 8 KiB randread O_DIRECT job runs (bench API), saturating:" 0
job_s=$S99 job_n=$N99
table "while it runs, polling (each connection every 10 ms, ~400 req/s: a fleet of phones):" 10
poll_s=$S99 poll_n=$N99
state=$(curl -sS --max-time 10 -H "X-Auth-Session: $token" "$base/api/bench/v1/jobs/$id" |
	"$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["job"]["state"])')
[ "$state" = running ] || echo "  (the job was $state at the end: part of the above ran without it)"
curl -sS -o /dev/null --max-time 10 -X DELETE -H "X-Auth-Session: $token" \
	"$base/api/bench/v1/jobs/$id" || true

echo
echo "summary (median p99, ms)             spindled    nginx   ratio   aim < 5 ms"
row() {
	printf '  %-34s %8s %8s %7s   %s\n' "$1" "$(ms "$2")" "$(ms "$3")" "$(ratio "$2" "$3")" \
		"$(awk -v a="$2" 'BEGIN { print (a < 5000) ? "meets" : "MISSES" }')"
}
row "idle, saturating" "$idle_s" "$idle_n"
row "32-reader job, saturating" "$job_s" "$job_n"
row "32-reader job, polling" "$poll_s" "$poll_n"
