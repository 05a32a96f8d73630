#!/bin/sh
# SPDX-License-Identifier: ISC
# spindle-ledctl-helper (server/hardware/ledhelper.c), the root helper behind spindle-ledctl.socket:
# a good request runs ledctl with exactly its argument; every other request is refused
# before anything runs. ledctl is a fake on PATH, the devices a fake sys tree.
# Usage: tests/package/test_ledhelper.sh [HELPER] (default: the build tree's). TAP output.
set -u
helper=${1:-server/spindle-ledctl-helper}
[ -x "$helper" ] || { echo "Bail out! no $helper (make it first)"; exit 1; }
helper=$(cd "$(dirname "$helper")" && pwd)/$(basename "$helper")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CALLS_LOG=$tmp/calls
. "$(dirname "$0")/helper_tap.sh"
fake_sys
mkdir -p "$tmp/bin"
cat > "$tmp/bin/ledctl" <<'FAKE'
#!/bin/sh
printf '%s\n' "$*" >> "$LEDCTL_LOG"
case "$1" in *=/dev/nvme0n1) echo "ledctl: controller not supported" >&2; exit 3 ;; esac
exit 0
FAKE
chmod +x "$tmp/bin/ledctl"
export LEDCTL_LOG="$CALLS_LOG" PATH="$tmp/bin:$PATH"

good() { # request expected-ledctl-args
	run "$1"
	if [ "$status" = 0 ] && [ "$answer" = ok ] && [ "$calls" = "$2" ]; then
		ok "'$1' runs ledctl $2"
	else
		not_ok "'$1': status $status, answer '$answer', ledctl called with '$calls'"
	fi
}

good 'locate /dev/sdb\n' 'locate=/dev/sdb'
good 'locate_off /dev/sdb\n' 'locate_off=/dev/sdb'
good 'locate /dev/sdb' 'locate=/dev/sdb'
good 'locate /dev/sdb\r\n' 'locate=/dev/sdb'

# ledctl's own failure comes back with its exit status and first line.
run 'locate /dev/nvme0n1\n'
case "$status:$answer" in
"1:error ledctl locate=/dev/nvme0n1 failed with exit status 3: ledctl: controller not supported")
	ok "ledctl's failure is answered: $answer" ;;
*) not_ok "ledctl's failure: status $status, answer '$answer'" ;;
esac

refused_everywhere locate
refused_everywhere locate_off
refused 'blink /dev/sdb\n'
refused 'locate=/dev/sdb\n'
refused 'LOCATE /dev/sdb\n'
refused_over_socket locate
finish
