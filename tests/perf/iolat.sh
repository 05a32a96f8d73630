#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: what spindle-iolat's BPF program costs the I/O it counts.
# fio reads 8 KiB at random, O_DIRECT, io_uring at iodepth 32 from 2 jobs, as fast as the
# device goes, ROUNDS rounds alternating without and with the helper attached. The device
# is a loop device over a file in memory (/dev/shm): the block layer's fastest path here,
# where each I/O is the shortest and the program's share of it the largest.
# Prints each run's IOPS, then the medians against the aims:
#   - the program's own time per completion from the kernel's bpf_stats (<= 0.5 us);
#   - IOPS with the helper over IOPS without (>= 0.97).
# The peer the issue names, netdata's eBPF disk plugin, is measured when Debian's netdata
# ships it; Debian 12's netdata 1.37 ships its configuration but no ebpf.plugin.
# Usage, from the repo root after a build, as root:  bash tests/perf/iolat.sh
# Environment: HELPER (./server/iolat/spindle-iolat), FIO (fio), DURATION (seconds per run,
#   5), ROUNDS (3), SIZE (MiB of the device, 512).
set -euo pipefail

HELPER=${HELPER:-./server/iolat/spindle-iolat}
FIO=${FIO:-fio}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-512}
PYTHON=/usr/bin/python3

TMP=$(mktemp -d "${TMPDIR:-/tmp}/spindle-perf.XXXXXX")
# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || die "needs root (losetup, BPF)"
[ -x "$HELPER" ] || die "no helper at $HELPER: build first (make), or set HELPER"
command -v "$FIO" >/dev/null || die "no fio (apt-get install fio)"
command -v bpftool >/dev/null || die "no bpftool (apt-get install bpftool)"

SHM=$(mktemp -d /dev/shm/spindle-iolat.XXXXXX)
LOOP=""
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
helper_pid=""
cleanup() {
	local rc=$?
	[ -n "$helper_pid" ] && stop "$helper_pid"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
	echo "$STATS_WAS" >/proc/sys/kernel/bpf_stats_enabled
	rm -rf "$SHM"
	perf_cleanup "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

head -c $((SIZE << 20)) /dev/urandom >"$SHM/disk.img"
LOOP=$(losetup --direct-io=on --find --show "$SHM/disk.img")
echo "device: $LOOP, $SIZE MiB over $SHM (direct I/O: $(cat "/sys/block/${LOOP#/dev/}/loop/dio"))"
echo 1 >/proc/sys/kernel/bpf_stats_enabled

fio_run() { # output file
	"$FIO" --name=iolat --filename="$LOOP" --rw=randread --bs=8k --direct=1 \
		--ioengine=io_uring --iodepth=32 --numjobs=2 --group_reporting --time_based \
		--runtime="$DURATION" --output-format=json >"$1"
}

iops() { "$PYTHON" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"]))' "$1"; }
ios() { "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["total_ios"])' "$1"; }

prog_stats() { # run_time_ns run_cnt of the helper's program, or "0 0"
	bpftool -j prog show name iolat_complete 2>/dev/null | "$PYTHON" -c '
import json, sys
try:
    p = json.load(sys.stdin)
    p = p[0] if isinstance(p, list) else p
    print(p.get("run_time_ns", 0), p.get("run_cnt", 0))
except Exception:
    print(0, 0)'
}

fio_run "$TMP/warm.json" # the file's pages and the device's queue settle

: >"$TMP/off.txt"
: >"$TMP/on.txt"
: >"$TMP/ns.txt"
for r in $(seq 1 "$ROUNDS"); do
	fio_run "$TMP/off.json"
	off=$(iops "$TMP/off.json")
	echo "$off" >>"$TMP/off.txt"

	# the helper for this run only: its stdin ends (and it exits) a little after fio
	(sleep $((DURATION + 3)) | exec "$HELPER" >"$TMP/helper.out" 2>"$TMP/helper.err") &
	helper_pid=$!
	for _ in $(seq 1 100); do grep -q '^ok' "$TMP/helper.out" 2>/dev/null && break; sleep 0.1; done
	grep -q '^ok' "$TMP/helper.out" || die "the helper did not attach: $(cat "$TMP/helper.out" "$TMP/helper.err")"
	read -r t0 c0 <<<"$(prog_stats)"
	fio_run "$TMP/on.json"
	read -r t1 c1 <<<"$(prog_stats)"
	on=$(iops "$TMP/on.json")
	echo "$on" >>"$TMP/on.txt"
	n=$((c1 - c0))
	[ "$n" -gt 0 ] || die "the program ran no time (bpf_stats: $t0 $c0 -> $t1 $c1)"
	ns=$("$PYTHON" -c "print(round(($t1 - $t0) / $n, 1))")
	echo "$ns" >>"$TMP/ns.txt"
	wait "$helper_pid" 2>/dev/null || true
	helper_pid=""
	echo "round $r: without $off IOPS, with $on IOPS ($(ios "$TMP/on.json") I/Os; the program ran $n times, $ns ns each)"
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
off=$(median "$TMP/off.txt")
on=$(median "$TMP/on.txt")
ns=$(median "$TMP/ns.txt")
ratio=$("$PYTHON" -c "print(f'{$on / $off:.3f}')")
echo "== medians of $ROUNDS rounds"
echo "BPF time per completion: $ns ns (aim <= 500 ns)"
echo "IOPS: with the helper $on, without $off: ratio $ratio (aim >= 0.97)"
if dpkg -L netdata-core 2>/dev/null | grep -q 'ebpf.plugin$'; then
	echo "netdata's ebpf.plugin is installed: not run by this script yet"
else
	echo "peer: Debian's netdata ships no ebpf.plugin (netdata-core 1.37 has only its configuration)"
fi
