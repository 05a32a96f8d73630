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
mkdir -p "$tmp/bin" "$tmp/devices/sdb/sdb1" "$tmp/sys/block"
for d in sdb sdg sdh nvme0n1 sr0 loop0 md0 dm0 nodev; do
	mkdir -p "$tmp/devices/$d"
	ln -s "../../devices/$d" "$tmp/sys/block/$d"
	echo 0 >"$tmp/devices/$d/removable"
done
for d in sdb sdg sdh nvme0n1 sr0 nodev; do mkdir -p "$tmp/devices/$d/device"; done
echo 1 >"$tmp/devices/sr0/removable"
rm "$tmp/devices/nodev/removable"
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
export SMARTCTL_LOG="$tmp/calls" PATH="$tmp/bin:$PATH"

n=0 failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$1"; }

# run REQUEST [helper options...] (printf format, so \n and the like are literal in the table)
run() {
	req=$1
	shift
	: > "$SMARTCTL_LOG"
	answer=$(printf "$req" | "$helper" --sys-root "$tmp" "$@" 2>/dev/null)
	status=$?
	calls=$(cat "$SMARTCTL_LOG")
}

good() { # request device
	run "$1"
	want=$(printf '{\n  "smartctl": {"exit_status": 0},\n  "device": {"name": "%s", "protocol": "ATA"}\n}' "$2")
	if [ "$status" = 0 ] && [ "$answer" = "$want" ] && [ "$calls" = "--json -a -n standby $2" ]; then
		ok "'$1' runs smartctl --json -a -n standby $2 and answers its JSON"
	else
		not_ok "'$1': status $status, smartctl called with '$calls', answer '$answer'"
	fi
}

refused() {
	run "$1"
	case "$status:$answer" in
	2:error*)
		if [ -z "$calls" ]; then
			ok "refused: '$1' ($answer)"
			return
		fi ;;
	esac
	not_ok "'$1' not refused: status $status, answer '$answer', smartctl called with '$calls'"
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

refused ''
refused '\n'
refused 'smart\n'
refused 'smart \n'
refused 'SMART /dev/sdb\n'
refused 'locate /dev/sdb\n'
refused 'smart sdb\n'
refused 'smart /dev/sdb1\n'
refused 'smart /dev/sdc\n'
refused 'smart /dev/../dev/sdb\n'
refused 'smart /dev/sdb/\n'
refused 'smart /dev//sdb\n'
refused 'smart /dev/sdb -d sat\n'
refused 'smart  /dev/sdb\n'
refused 'smart /dev/sdb;reboot\n'
refused 'smart /dev/sdb --all\n'
refused 'smart /dev/disk/by-id/x\n'
refused 'smart /dev/sdb\0x\n'
refused "smart /dev/$(printf 'a%.0s' $(seq 1 40))\n"
refused "smart /dev/$(printf 'a%.0s' $(seq 1 200))\n"
refused 'smart /dev/sdb\nsmart /dev/sdb\n'
for d in loop0 md0 dm0 sr0 nodev; do refused "smart /dev/$d\\n"; done

# Over a socket, as spindle-smart.socket connects it: a refused request of two lines, or of
# more than a line's worth, is read whole before the answer, so the client reads the error
# line, not a reset connection; a good one reads the JSON to the end.
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
print(out.decode().strip().split("\n")[0])
PY
}
for req in "b'smart /dev/sdb\\nsmart /dev/sdb\\n'" "b'smart /dev/loop0\\n' + b'x' * 3000" \
	"b'smart /dev/sdb\\n\\n'"; do
	answer=$(over_socket "$req")
	case "$answer" in
	error*) ok "over a socket, $req is answered: $answer" ;;
	*) not_ok "over a socket, $req: $answer" ;;
	esac
done
answer=$(over_socket "b'smart /dev/sdb\\n'")
case "$answer" in
"{") ok "over a socket, a good request reads smartctl's JSON" ;;
*) not_ok "over a socket, a good request: $answer" ;;
esac

echo "1..$n"
[ "$failed" = 0 ]
