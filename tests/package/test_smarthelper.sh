#!/bin/sh
# SPDX-License-Identifier: ISC
# spindle-smart-helper (server/hardware/smarthelper.c), the root helper behind
# spindle-smart.socket: a good request runs smartctl --json -a -n standby on exactly that
# disk and answers its JSON; a smartctl that hangs is killed, one that says no JSON or
# cannot run is answered with an error line; every other request is refused before
# anything runs. smartctl is a fake on PATH, the devices a fake sys tree.
# Usage: tests/package/test_smarthelper.sh [HELPER] (default: the build tree's). TAP output.
set -u
helper=${1:-server/spindle-smart-helper}
[ -x "$helper" ] || { echo "Bail out! no $helper (make it first)"; exit 1; }
helper=$(cd "$(dirname "$helper")" && pwd)/$(basename "$helper")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CALLS_LOG=$tmp/calls
. "$(dirname "$0")/helper_tap.sh"
fake_sys sdg sdh
mkdir -p "$tmp/bin"
cat > "$tmp/bin/smartctl" <<'FAKE'
#!/bin/sh
printf '%s\n' "$*" >> "$SMARTCTL_LOG"
case "$5" in
/dev/sdh) trap '' TERM; while :; do sleep 1; done ;;
/dev/sdg) echo "smartctl: not a json line"; exit 4 ;;
esac
printf '{\n  "smartctl": {"exit_status": 0},\n  "device": {"name": "%s", "protocol": "ATA"}\n}\n' "$5"
FAKE
chmod +x "$tmp/bin/smartctl"
export SMARTCTL_LOG="$CALLS_LOG" PATH="$tmp/bin:$PATH"

good() { # request device
	run "$1"
	want=$(printf '{\n  "smartctl": {"exit_status": 0},\n  "device": {"name": "%s", "protocol": "ATA"}\n}' "$2")
	if [ "$status" = 0 ] && [ "$answer" = "$want" ] && [ "$calls" = "--json -a -n standby $2" ]; then
		ok "'$1' runs smartctl --json -a -n standby $2 and answers its JSON"
	else
		not_ok "'$1': status $status, smartctl called with '$calls', answer '$answer'"
	fi
}

good 'smart /dev/sdb\n' /dev/sdb
good 'smart /dev/sdb' /dev/sdb
good 'smart /dev/sdb\r\n' /dev/sdb
good 'smart /dev/nvme0n1\n' /dev/nvme0n1

start=$(date +%s)
run 'smart /dev/sdh\n' --timeout 1
took=$(($(date +%s) - start))
case "$status:$answer" in
"1:error smartctl /dev/sdh gave no answer within 1 s and was killed")
	ok "a smartctl that hangs is killed at the timeout (${took} s): $answer" ;;
*) not_ok "a smartctl that hangs: status $status, answer '$answer' after ${took} s" ;;
esac
run 'smart /dev/sdg\n'
case "$status:$answer" in
"1:error smartctl /dev/sdg gave no JSON (exit status 4)") ok "no JSON: $answer" ;;
*) not_ok "no JSON: status $status, answer '$answer'" ;;
esac
run 'smart /dev/sdb\n' --smartctl "$tmp/no-such-smartctl"
case "$status:$answer" in
"1:error cannot run $tmp/no-such-smartctl") ok "smartctl missing: $answer" ;;
*) not_ok "smartctl missing: status $status, answer '$answer'" ;;
esac

refused_everywhere smart
refused 'SMART /dev/sdb\n'
refused 'locate /dev/sdb\n'
refused 'smart /dev/sdb -d sat\n'
refused_over_socket smart
answer=$(over_socket "b'smart /dev/sdb\\n'")
case "$answer" in
"{") ok "over a socket, a good request reads smartctl's JSON" ;;
*) not_ok "over a socket, a good request: $answer" ;;
esac
finish
