#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# Runs the libFuzzer harnesses of a `make fuzz` build, each for a bounded time, from its
# seed corpus, under ASan and UBSan; fails on the first crash, leak, hang, memory blow-up
# or broken promise, and names the input that did it.
#   tests/fuzz/run.sh BUILDDIR [NAME...]     NAME: body router token jobline procfs sysfs spec
#                                            env fioimport storage iohist
# FUZZ_SECONDS (default 20) bounds each harness. The seeds in tests/fuzz/corpus/NAME are
# only read: what a run learns goes to BUILDDIR/fuzz-work/NAME, and is read again by the
# next run; a crashing input is saved as BUILDDIR/fuzz-work/crash-NAME-*.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: tests/fuzz/run.sh BUILDDIR [NAME...]}" && pwd)
shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(body router token jobline procfs sysfs spec env fioimport storage iohist)
seconds=${FUZZ_SECONDS:-20}
work=$build/fuzz-work
mkdir -p "$work"
# fuzz_sysfs rewrites a fake sysfs tree for every input: on tmpfs when there is one
tmp=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo "$work")/spindle-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for name in "${names[@]}"; do
	bin=$build/tests/fuzz/fuzz_$name
	[ -x "$bin" ] || { echo "fuzz: $bin is missing: run make fuzz in $build" >&2; exit 1; }
	mkdir -p "$work/$name"
	log=$work/$name.log
	# -timeout: one input taking this long is a hang; -rss_limit_mb: a parser that blows
	# up its memory is a bug as much as a crash is.
	if ! TMPDIR="$tmp" UBSAN_OPTIONS=print_stacktrace=1 \
		ASAN_OPTIONS="quarantine_size_mb=64${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
		"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix="$work/crash-$name-" -print_final_stats=1 \
		"$work/$name" "$src/corpus/$name" >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		echo "fuzz: $name failed; the whole log is $log" >&2
		grep -h "Test unit written to" "$log" >&2 || true
		exit 1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	echo "fuzz: $name: ${runs:-?} inputs in ${seconds} s, $cov, no crash"
done
