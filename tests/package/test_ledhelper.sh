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
# sys/block holds whole devices only; sdb1 is a partition, under sdb as the kernel has it.
# A disk in a slot has a device (and is not removable); loop, md and dm devices have none,
# an optical drive is removable.
mkdir -p "$tmp/bin" "$tmp/devices/sdb/sdb1" "$tmp/sys/block"
for d in sdb nvme0n1 sr0 loop0 md0 dm0 nodev; do
	mkdir -p "$tmp/devices/$d"
	ln -s "../../devices/$d" "$tmp/sys/block/$d"
	echo 0 >"$tmp/devices/$d/removable"
done
for d in sdb nvme0n1 sr0 nodev; do mkdir -p "$tmp/devices/$d/device"; done
echo 1 >"$tmp/devices/sr0/removable"
rm "$tmp/devices/nodev/removable"
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
for d in loop0 md0 dm0 sr0 nodev; do refused "locate /dev/$d\\n"; done

# Over a socket, as spindle-ledctl.socket connects it: a refused request of two lines, or
# of more than a line's worth, is read whole before the answer, so the client reads the
# error line, not a reset connection.
over_socket() { # request-bytes (python literal)
	/usr/bin/python3 - "$helper" "$tmp" "$1" <<'PY'
import socket, subprocess, sys
helper, root, req = sys.argv[1], sys.argv[2], eval(sys.argv[3])
a, b = socket.socketpair()
p = subprocess.Popen([helper, "--sys-root", root], stdin=b, stdout=b, stderr=subprocess.DEVNULL)
b.close()
a.sendall(req)
a.shutdown(socket.SHUT_WR)
out = b""
try:
    while chunk := a.recv(4096):
        out += chunk
except OSError as e:
    print(f"read failed: {e}")
    sys.exit(1)
p.wait(timeout=10)
print(out.decode().strip())
PY
}
for req in "b'locate /dev/sdb\\nlocate /dev/sdb\\n'" "b'locate /dev/loop0\\n' + b'x' * 3000" \
	"b'locate /dev/sdb\\n\\n'"; do
	answer=$(over_socket "$req")
	case "$answer" in
	error*) ok "over a socket, $req is answered: $answer" ;;
	*) not_ok "over a socket, $req: $answer" ;;
	esac
done

echo "1..$n"
[ "$failed" = 0 ]
