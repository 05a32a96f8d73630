#!/bin/sh
# spindle-ledctl-helper (server/ledhelper.c), the root helper behind spindle-ledctl.socket:
# a good request runs ledctl with exactly its argument; every other request is refused
# before anything runs. ledctl is a fake on PATH, the devices a fake sys tree.
# Usage: tests/package/test_ledhelper.sh [HELPER] (default: the build tree's). TAP output.
set -u
helper=${1:-server/spindle-ledctl-helper}
[ -x "$helper" ] || { echo "Bail out! no $helper (make it first)"; exit 1; }
helper=$(cd "$(dirname "$helper")" && pwd)/$(basename "$helper")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# sys/block holds whole devices only; sdb1 is a partition, under sdb as the kernel has it.
mkdir -p "$tmp/bin" "$tmp/devices/sdb/sdb1" "$tmp/devices/nvme0n1" "$tmp/sys/block"
ln -s ../../devices/sdb "$tmp/sys/block/sdb"
ln -s ../../devices/nvme0n1 "$tmp/sys/block/nvme0n1"
cat > "$tmp/bin/ledctl" <<'FAKE'
#!/bin/sh
printf '%s\n' "$*" >> "$LEDCTL_LOG"
case "$1" in *=/dev/nvme0n1) echo "ledctl: controller not supported" >&2; exit 3 ;; esac
exit 0
FAKE
chmod +x "$tmp/bin/ledctl"
export LEDCTL_LOG="$tmp/calls" PATH="$tmp/bin:$PATH"

n=0 failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$1"; }

# run REQUEST (printf format, so \n and the like are literal in the table)
run() {
	: > "$LEDCTL_LOG"
	answer=$(printf "$1" | "$helper" --sys-root "$tmp" 2>/dev/null)
	status=$?
	calls=$(cat "$LEDCTL_LOG")
}

good() { # request expected-ledctl-args
	run "$1"
	if [ "$status" = 0 ] && [ "$answer" = ok ] && [ "$calls" = "$2" ]; then
		ok "'$1' runs ledctl $2"
	else
		not_ok "'$1': status $status, answer '$answer', ledctl called with '$calls'"
	fi
}

refused() { # request
	run "$1"
	case "$answer" in
	error*)
		if [ "$status" = 2 ] && [ -z "$calls" ]; then
			ok "refused: '$1' ($answer)"
			return
		fi ;;
	esac
	not_ok "'$1' not refused: status $status, answer '$answer', ledctl called with '$calls'"
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

refused ''
refused '\n'
refused 'locate\n'
refused 'locate \n'
refused 'blink /dev/sdb\n'
refused 'locate=/dev/sdb\n'
refused 'LOCATE /dev/sdb\n'
refused 'locate /dev/sdb1\n'
refused 'locate /dev/sdc\n'
refused 'locate sdb\n'
refused 'locate /dev/../dev/sdb\n'
refused 'locate /dev/sdb/\n'
refused 'locate /dev//sdb\n'
refused 'locate /dev/sdb extra\n'
refused 'locate  /dev/sdb\n'
refused 'locate /dev/sdb;reboot\n'
refused 'locate /dev/sdb --all\n'
refused 'locate /dev/disk/by-id/x\n'
refused 'locate /sys/class/block/sdb\n'
refused 'locate /dev/sdb\0x\n'
refused "locate /dev/$(printf 'a%.0s' $(seq 1 40))\n"
refused "locate /dev/$(printf 'a%.0s' $(seq 1 200))\n"
refused 'locate /dev/sdb\nlocate /dev/sdb\n'

echo "1..$n"
[ "$failed" = 0 ]
