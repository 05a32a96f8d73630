# SPDX-License-Identifier: ISC
# The package tests' shared helpers (tests/package/run.sh, boot.sh), sourced: checks that
# do not stop the test, steps that say how long they took, and a summary of both. Set
# TEST_NAME first.
# shellcheck shell=bash
CHECKED=()
FAILED=0
step_start=$SECONDS
TIMES=()

ok() { CHECKED+=("ok: $*"); echo "  ok: $*"; }
fail() { CHECKED+=("FAILED: $*"); echo "  FAILED: $*"; FAILED=1; }
check() { # check DESCRIPTION COMMAND...: a check that does not stop the test
	local what=$1; shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
die() { echo "$TEST_NAME: $*"; summary; exit 1; }
step() {
	[ ${#TIMES[@]} -eq 0 ] && [ -z "${STEP:-}" ] || TIMES+=("$(printf '%4s s  %s' $((SECONDS - step_start)) "$STEP")")
	STEP=$1; step_start=$SECONDS
	printf '\033[1m--> %s\033[0m\n' "$STEP"
}
summary() {
	[ -z "${STEP:-}" ] || TIMES+=("$(printf '%4s s  %s' $((SECONDS - step_start)) "$STEP")")
	STEP=""
	echo "$TEST_NAME: what was checked"
	printf '  %s\n' "${CHECKED[@]}"
	echo "$TEST_NAME: time per step"
	printf '  %s\n' "${TIMES[@]}"
	echo "$TEST_NAME: $SECONDS s in all"
}

# dpkg takes its lock for a while when another apt or dpkg runs: wait for it (bounded).
dpkg_wait() {
	local out
	for _ in $(seq 1 90); do
		if out=$("$@" 2>&1); then printf '%s\n' "$out"; return 0; fi
		case "$out" in *"lock"*) sleep 2 ;; *) printf '%s\n' "$out"; return 1 ;; esac
	done
	printf '%s\n' "$out"
	return 1
}

