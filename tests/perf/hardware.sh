#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: what the hardware routes cost next to a peer in the same run.
# spindled runs on a fake box (tests/api/fixtures/hw.py: a 12-slot SES enclosure with four
# disks, three more disks, an identify LED). wrk (-t1 -c$CONNECTIONS) alternates, ROUNDS
# times: GET /api/system/v1/version (the peer: token check + JSON, all on the loop),
# GET .../chassis/<enc>/disk (12 slots, their locate and fault files read back on the
# helper thread for each request) and GET .../chassis/<enc>/disk/<one> (one slot read back).
# Prints req/s per round, the medians, and each hardware route's ratio to the peer.
# The fake sysfs is plain files: the figures are spindled's cost per request (thread hop,
# reads, JSON), not an enclosure's SCSI latency.
# Usage, from the repo root after a build:  bash tests/perf/hardware.sh
# Environment: SPINDLED (default ./server/spindled), DURATION (s per run, 3), ROUNDS (3),
#              CONNECTIONS (16).
set -euo pipefail

SPINDLED=${SPINDLED:-./server/spindled}
DURATION=${DURATION:-3}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-16}
PYTHON=/usr/bin/python3

# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

for tool in wrk curl "$PYTHON"; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install wrk curl python3)"
done
[ -x "$SPINDLED" ] || die "no spindled at $SPINDLED: build first, or set SPINDLED"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/spindle-perf-hw.XXXXXX")
trap 'perf_cleanup $?' EXIT
trap 'exit 130' INT TERM

# The fake box, built by the API tests' own builder.
"$PYTHON" - "$TMP/root" <<'PY'
import sys
sys.path.insert(0, "tests/api")
from test_hardware import build_box
build_box(sys.argv[1])
PY

spindled_start --sys-root "$TMP/root" --system-led chassis::identify

enc=0x500304801f0c7a3f
declare -A urls=(
	[version]="$base/api/system/v1/version"
	[disk_list]="$base/api/hardware/v1/chassis/$enc/disk"
	[one_disk]="$base/api/hardware/v1/chassis/$enc/disk/naa.5000c500a1b2c301"
)
names=(version disk_list one_disk)
for n in "${names[@]}"; do
	curl -fsS -o /dev/null -H "X-Auth-Session: $token" "${urls[$n]}" || die "GET ${urls[$n]} failed"
done

run() { # name -> req/s
	local out="$TMP/wrk-$1.txt" non2xx
	timeout $((DURATION + 30)) wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" \
		-H "X-Auth-Session: $token" "${urls[$1]}" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed"; }
	non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$out")
	[ -z "$non2xx" ] || { cat "$out" >&2; die "$1 answered $non2xx non-2xx responses"; }
	awk '/^Requests\/sec:/ { print $2 }' "$out"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A results
printf '%-7s %14s %14s %14s\n' round version disk_list one_disk
for r in $(seq "$ROUNDS"); do
	row=()
	for n in "${names[@]}"; do
		v=$(run "$n")
		results[$n]="${results[$n]:-} $v"
		row+=("$v")
	done
	printf '%-7s %14s %14s %14s\n' "$r" "${row[@]}"
done
declare -A med
for n in "${names[@]}"; do
	med[$n]=$(tr ' ' '\n' <<<"${results[$n]}" | grep . | median)
done
printf '%-7s %14s %14s %14s\n' median "${med[version]}" "${med[disk_list]}" "${med[one_disk]}"
awk -v v="${med[version]}" -v l="${med[disk_list]}" -v o="${med[one_disk]}" 'BEGIN {
	printf "ratio to version: disk_list %.2f, one_disk %.2f\n", l / v, o / v }'
echo "spindled RSS after the runs: $(awk '/^VmRSS:/ { print $2 " kB" }' "/proc/$spindled_pid/status")"
