#!/bin/sh
# SPDX-License-Identifier: ISC
# The hardened unit (packaging/spindled.service), its ledctl helper units
# (packaging/systemd/) and the bench-devices drop-in:
#   - systemd-analyze verify passes on each, with nothing said (an unknown key or a bad
#     value is only a warning to verify: here it fails);
#   - systemd-analyze security --offline=true rates spindled.service at 2.0 or lower; the
#     figures are printed;
#   - the directives issue 15 names are there, with the values README.md documents;
#   - the udev rule hands the spindle group the SES locate files and /dev/ipmi*.
# No systemd needs to run: verify works on a scratch root holding the system's units and
# stand-ins for the programs ExecStart= names (verify checks they are executable).
# Usage: tests/package/test_unit.sh  (from anywhere; exits non-zero on a failure)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
unit=$src/packaging/spindled.service
failed=0 checks=0
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
pass() { checks=$((checks + 1)); }

command -v systemd-analyze >/dev/null || { echo "FAIL: no systemd-analyze (apt install systemd)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- verify, on a scratch root
root=$tmp/root
units=$root/usr/lib/systemd/system
mkdir -p "$units" "$root/usr/sbin" "$root/usr/libexec/spindle" "$root/etc/systemd/system"
for d in /usr/lib/systemd/system /lib/systemd/system; do
	[ -d "$d" ] && cp -r "$d/." "$units/" && break
done
[ -f "$units/sysinit.target" ] || { echo "FAIL: no systemd units to verify against"; exit 1; }
# Stand-ins: verify only checks that ExecStart='s program is there and executable.
cp /bin/true "$root/usr/sbin/spindled"
cp /bin/true "$root/usr/libexec/spindle/spindle-ledctl-helper"
cp /bin/true "$root/usr/libexec/spindle/spindle-iolat"
cp /bin/true "$root/usr/libexec/spindle/spindle-smart-helper"
mkdir -p "$root/usr/bin"
cp /bin/true "$root/usr/bin/smbstatus"
cp "$unit" "$src/packaging/systemd/spindle-ledctl.socket" \
	"$src/packaging/systemd/spindle-ledctl@.service" \
	"$src/packaging/systemd/spindle-iolat.socket" \
	"$src/packaging/systemd/spindle-iolat@.service" \
	"$src/packaging/systemd/spindle-smbstatus.socket" \
	"$src/packaging/systemd/spindle-smbstatus@.service" \
	"$src/packaging/systemd/spindle-smart.socket" \
	"$src/packaging/systemd/spindle-smart@.service" "$units/"

verify() { # what, then units
	what=$1
	shift
	if out=$(systemd-analyze verify --man=no --root="$root" "$@" 2>&1) && [ -z "$out" ]; then
		pass
		echo "verify $what: ok"
	else
		fail "systemd-analyze verify $what:"
		printf '%s\n' "$out" | sed 's/^/    /'
	fi
}
verify spindled.service spindled.service
verify spindle-ledctl.socket spindle-ledctl.socket
verify spindle-ledctl@.service spindle-ledctl@0.service
verify spindle-iolat.socket spindle-iolat.socket
verify spindle-iolat@.service spindle-iolat@0.service
verify spindle-smbstatus.socket spindle-smbstatus.socket
verify spindle-smbstatus@.service spindle-smbstatus@0.service
verify spindle-smart.socket spindle-smart.socket
verify spindle-smart@.service spindle-smart@0.service
mkdir -p "$root/etc/systemd/system/spindled.service.d"
cp "$src/packaging/systemd/spindled.service.d-bench-devices.conf" \
	"$root/etc/systemd/system/spindled.service.d/bench-devices.conf"
verify "spindled.service with the bench-devices drop-in" spindled.service

# --- the exposure figures
exposure() { # unit file
	systemd-analyze security --offline=true --no-pager "$1" 2>&1 |
		sed -n 's/.*Overall exposure level for .*: \([0-9][0-9.]*\) .*/\1/p'
}
# exposure_at_most UNIT_FILE BOUND: prints its figure, and fails above the bound with the
# directives systemd-analyze marks.
exposure_at_most() {
	local f name
	f=$(exposure "$1")
	name=$(basename "$1")
	echo "exposure $name: ${f:-none} (systemd-analyze security --offline=true)"
	if [ -n "$f" ] && awk -v f="$f" -v b="$2" 'BEGIN { exit !(f <= b) }'; then
		pass
	else
		fail "$name's exposure is ${f:-not rated}, above $2:"
		systemd-analyze security --offline=true --no-pager "$1" 2>&1 | grep '✗' | sed 's/^/    /'
	fi
}
exposure_at_most "$unit" 2.0
# The helper runs ledctl as root with the capabilities ledctl needs: its figure is
# printed, and kept from growing past where it is (2.6).
exposure_at_most "$src/packaging/systemd/spindle-ledctl@.service" 3.0
# The eBPF helper holds CAP_BPF and CAP_PERFMON (a tracing program can read any kernel
# memory), as a user of its own: printed, and held where it is (0.8).
exposure_at_most "$src/packaging/systemd/spindle-iolat@.service" 1.0
# smbstatus runs only as root: root, with no capability, writing only Samba's own state.
exposure_at_most "$src/packaging/systemd/spindle-smbstatus@.service" 2.0
# smartctl's helper: root with the two capabilities of raw disk commands, writing nothing:
# printed, and held where it is (2.0).
exposure_at_most "$src/packaging/systemd/spindle-smart@.service" 2.2
# With the bench-devices drop-in (the block devices, the disk group): printed only.
cat "$unit" "$src/packaging/systemd/spindled.service.d-bench-devices.conf" > "$tmp/spindled.service"
echo "exposure spindled.service with the bench-devices drop-in: $(exposure "$tmp/spindled.service")"

# --- the directives, as the issue names them and README.md documents them
has() { # file, then the line as it must be there
	if grep -qxF -- "$2" "$1"; then
		pass
	else
		fail "$(basename "$1") has no '$2' line"
	fi
}
hasnt() {
	if grep -q -- "$2" "$1"; then
		fail "$(basename "$1") has '$2'"
	else
		pass
	fi
}
for line in "User=spindle" "Group=spindle" "StateDirectory=spindle" "StateDirectoryMode=0700" \
	"NoNewPrivileges=yes" "ProtectSystem=strict" "ProtectHome=yes" "PrivateTmp=yes" \
	"PrivateDevices=yes" "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK" \
	"SystemCallFilter=@system-service io_uring_setup io_uring_enter io_uring_register" \
	"CapabilityBoundingSet=" "MemoryDenyWriteExecute=yes" "LockPersonality=yes" \
	"RestrictRealtime=yes" "ProtectKernelTunables=yes" "ProtectControlGroups=yes" \
	"ExecStart=/usr/sbin/spindled --config /etc/spindle/spindled.conf"; do
	has "$unit" "$line"
done
# Root's powers and the disk group are nowhere in the default unit.
hasnt "$unit" "^SupplementaryGroups="
hasnt "$unit" "^AmbientCapabilities=."
# The eBPF helper: the two capabilities of a tracing program, and nothing else of root's.
f=$src/packaging/systemd/spindle-iolat@.service
for line in "CapabilityBoundingSet=CAP_BPF CAP_PERFMON" "AmbientCapabilities=CAP_BPF CAP_PERFMON" \
	"DynamicUser=yes" "SystemCallFilter=@system-service bpf" "RestrictAddressFamilies=AF_UNIX" \
	"ProtectSystem=strict" "PrivateNetwork=yes" "NoNewPrivileges=yes"; do
	has "$f" "$line"
done
# smbstatus's helper: root, every capability gone, a network of its own with no address.
f=$src/packaging/systemd/spindle-smbstatus@.service
for line in "CapabilityBoundingSet=" "ExecStart=/usr/bin/smbstatus --profile" \
	"SystemCallFilter=@system-service" "IPAddressDeny=any" \
	"ProtectSystem=strict" "PrivateNetwork=yes" "NoNewPrivileges=yes"; do
	has "$f" "$line"
done
# smartctl's helper: raw disk commands' two capabilities, no network, nothing written.
f=$src/packaging/systemd/spindle-smart@.service
for line in "CapabilityBoundingSet=CAP_SYS_ADMIN CAP_SYS_RAWIO" \
	"ExecStart=/usr/libexec/spindle/spindle-smart-helper" "SystemCallFilter=@system-service @raw-io" \
	"IPAddressDeny=any" "ProtectSystem=strict" "PrivateNetwork=yes" "NoNewPrivileges=yes"; do
	has "$f" "$line"
done
hasnt "$unit" "^CapabilityBoundingSet=."
hasnt "$unit" "^User=root"
dropin=$src/packaging/systemd/spindled.service.d-bench-devices.conf
has "$dropin" "SupplementaryGroups=disk"
has "$dropin" "PrivateDevices=no"
sock=$src/packaging/systemd/spindle-ledctl.socket
for line in "ListenStream=/run/spindle/ledctl.sock" "Accept=yes" "SocketGroup=spindle" \
	"SocketMode=0660"; do
	has "$sock" "$line"
done
# The helper's socket path is the daemon's default.
if "$src/server/spindled" --help 2>/dev/null | grep -q "(/run/spindle/ledctl.sock)"; then
	pass
elif [ -x "$src/server/spindled" ]; then
	fail "spindled --help does not give /run/spindle/ledctl.sock as --ledctl-socket's default"
fi

# --- the udev rule
rules=$src/packaging/udev/60-spindle.rules
rule() { # what, then strings that must all be on one rule (its continued lines joined)
	what=$1
	shift
	if grep -v '^#' "$rules" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
		awk -v want="$(printf '%s\t' "$@")" 'BEGIN { n = split(want, w, "\t") - 1 }
			{ ok = 1; for (i = 1; i <= n; i++) if (index($0, w[i]) == 0) ok = 0; if (ok) found = 1 }
			END { exit !found }'; then
		pass
	else
		fail "60-spindle.rules: no rule for $what"
	fi
}
rule "the SES locate files" 'ACTION=="add"' 'SUBSYSTEM=="enclosure_component"' \
	"/bin/chgrp spindle '/sys%p/locate'" "/bin/chmod 0664 '/sys%p/locate'"
rule "the DMI serials" 'SUBSYSTEM=="dmi"' '/bin/chgrp -f spindle /sys%p/product_serial' \
	'/bin/chmod -f g+r /sys%p/product_serial'
rule "/dev/ipmi*" 'SUBSYSTEM=="ipmi"' 'GROUP="spindle"' 'MODE="0660"'
if command -v udevadm >/dev/null && udevadm --help 2>&1 | grep -q '^  verify'; then
	if udevadm verify "$rules"; then pass; else fail "udevadm verify $rules"; fi
fi

echo "unit tests: $checks passed, $failed failed"
[ "$failed" = 0 ]
