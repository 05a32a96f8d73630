#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: what the analytics cost, against the targets in parentheses.
#  1. collector CPU per tick on the loop thread, 64 synthetic disks and 8 NICs (< 0.3 ms)
#  2. bytes on disk per stored per-second value after a simulated day (<= 2 bytes)
#  3. query time for a day of one dataset at minute granularity and for the last hour at
#     second granularity (< 20 ms each): in process, then over HTTP from a spindled started
#     on the simulated day (memory empty then: everything comes from disk)
# Usage, from the repo root after a build:  bash tests/perf/collector.sh
# Environment: SPINDLED (./server/spindled), BENCH (./tests/perf/bench_analytics, built if
#              missing), TICKS (3000), RUNS (HTTP runs per query, 5).
set -euo pipefail

SPINDLED=${SPINDLED:-./server/spindled}
BENCH=${BENCH:-./tests/perf/bench_analytics}
TICKS=${TICKS:-3000}
RUNS=${RUNS:-5}

# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || die "curl not found (apt-get install curl)"
[ -x "$SPINDLED" ] || die "no spindled at $SPINDLED: build first, or set SPINDLED"
if [ ! -x "$BENCH" ]; then
	make -s tests/perf/bench_analytics >/dev/null || die "cannot build $BENCH"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/spindle-perf.XXXXXX")
trap 'perf_cleanup $?' EXIT
trap 'exit 130' INT TERM

# The synthetic /proc is rewritten every simulated second: keep it in memory when we can.
proc_tmp=$TMP
[ -w /dev/shm ] && proc_tmp=/dev/shm

echo "== collector cost per tick"
TMPDIR=$proc_tmp "$BENCH" tick "$TICKS" 2>/dev/null

echo "== a simulated day"
TMPDIR=$proc_tmp "$BENCH" day "$TMP/state" 2>/dev/null | tee "$TMP/day.txt"
read -r t0 t1 < <(sed -n 's/^day: data from \([0-9]*\) to \([0-9]*\).*/\1 \2/p' "$TMP/day.txt")
[ -n "$t0" ] || die "the day benchmark gave no time range"

echo "== over HTTP, from a spindled started on that day's database"
mkdir -p "$TMP/proc"
spindled_start --proc-root "$TMP/proc"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

query() { # label dataset(url-encoded) params
	local label=$1 path="$base/api/analytics/v1/datasets/$2/data?$3" times size
	times=$(for _ in $(seq "$RUNS"); do
		curl -fs -o "$TMP/out.json" -w '%{time_total}\n' -H "X-Auth-Session: $token" "$path"
	done | median)
	size=$(wc -c <"$TMP/out.json")
	printf 'http: %s: %.1f ms (median of %d, %d bytes of JSON; target < 20 ms)\n' "$label" \
		"$(echo "$times * 1000" | bc -l)" "$RUNS" "$size"
}

query "io.ops[disk] (64 disks), a day at minute granularity" "io.ops%5Bdisk%5D" \
	"start=$t0&seconds=86400&granularity=minute"
query "cpu.utilization[mode], a day at minute granularity" "cpu.utilization%5Bmode%5D" \
	"start=$t0&seconds=86400&granularity=minute"
query "io.ops[disk] (64 disks), the day's last hour at second granularity" "io.ops%5Bdisk%5D" \
	"start=$((t1 - 3600))&seconds=3600&granularity=second"
query "cpu.utilization[mode], the day's last hour at second granularity" \
	"cpu.utilization%5Bmode%5D" "start=$((t1 - 3600))&seconds=3600&granularity=second"
