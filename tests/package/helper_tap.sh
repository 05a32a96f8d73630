# SPDX-License-Identifier: ISC
# What the root helpers' request tests share (test_ledhelper.sh, test_smarthelper.sh),
# sourced: TAP lines, the fake /sys of disks a request may or may not name, running the
# helper on one request, the requests every helper refuses, and a request over a socket as
# systemd connects one. Set helper (the program), tmp (a scratch dir) and CALLS_LOG (where
# the fake command logs its arguments) first.
# shellcheck shell=sh

n=0 failed=0
ok() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); printf 'not ok %d - %s\n' "$n" "$1"; }
finish() { echo "1..$n"; [ "$failed" = 0 ]; }

# sys/block holds whole devices only; sdb1 is a partition, under sdb as the kernel has it.
# A disk in a slot has a device (and is not removable); loop, md and dm devices have none,
# an optical drive is removable. fake_sys MORE-DISKS...
fake_sys() {
	mkdir -p "$tmp/devices/sdb/sdb1" "$tmp/sys/block"
	for d in sdb nvme0n1 sr0 loop0 md0 dm0 nodev "$@"; do
		mkdir -p "$tmp/devices/$d"
		ln -s "../../devices/$d" "$tmp/sys/block/$d"
		echo 0 >"$tmp/devices/$d/removable"
	done
	for d in sdb nvme0n1 sr0 nodev "$@"; do mkdir -p "$tmp/devices/$d/device"; done
	echo 1 >"$tmp/devices/sr0/removable"
	rm "$tmp/devices/nodev/removable"
}

# run REQUEST [HELPER-OPTIONS...] (printf format, so \n and the like are literal in the
# tables): sets answer, status and calls.
run() {
	req=$1
	shift
	: > "$CALLS_LOG"
	answer=$(printf "$req" | "$helper" --sys-root "$tmp" "$@" 2>/dev/null)
	status=$?
	calls=$(cat "$CALLS_LOG")
}

# refused REQUEST: an error line, exit status 2, and nothing run.
refused() {
	run "$1"
	case "$status:$answer" in
	2:error*)
		if [ -z "$calls" ]; then
			ok "refused: '$1' ($answer)"
			return
		fi ;;
	esac
	not_ok "'$1' not refused: status $status, answer '$answer', the command called with '$calls'"
}

# refused_everywhere VERB: what no helper takes, in VERB's request: no line, a name that
# is not /dev/ and a whole disk in a slot, a path or an option smuggled in, two lines.
refused_everywhere() {
	v=$1
	refused ''
	refused '\n'
	refused "$v\n"
	refused "$v \n"
	refused "$v sdb\n"
	refused "$v /dev/sdb1\n"
	refused "$v /dev/sdc\n"
	refused "$v /dev/../dev/sdb\n"
	refused "$v /dev/sdb/\n"
	refused "$v /dev//sdb\n"
	refused "$v /dev/sdb extra\n"
	refused "$v  /dev/sdb\n"
	refused "$v /dev/sdb;reboot\n"
	refused "$v /dev/sdb --all\n"
	refused "$v /dev/disk/by-id/x\n"
	refused "$v /sys/class/block/sdb\n"
	refused "$v /dev/sdb\\0x\n"
	refused "$v /dev/$(printf 'a%.0s' $(seq 1 40))\n"
	refused "$v /dev/$(printf 'a%.0s' $(seq 1 200))\n"
	refused "$v /dev/sdb\n$v /dev/sdb\n"
	for d in loop0 md0 dm0 sr0 nodev; do refused "$v /dev/$d\\n"; done
}

# over_socket REQUEST-BYTES (a python literal): the helper on one end of a socket pair, as
# systemd's Accept=yes hands it a connection; prints the answer's first line.
over_socket() {
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

# A refused request of two lines, or of more than a line's worth, is read whole before
# the answer, so the client reads the error line, not a reset connection.
refused_over_socket() { # VERB
	for req in "b'$1 /dev/sdb\\n$1 /dev/sdb\\n'" "b'$1 /dev/loop0\\n' + b'x' * 3000" \
		"b'$1 /dev/sdb\\n\\n'"; do
		answer=$(over_socket "$req")
		case "$answer" in
		error*) ok "over a socket, $req is answered: $answer" ;;
		*) not_ok "over a socket, $req: $answer" ;;
		esac
	done
}
