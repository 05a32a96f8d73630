#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# The installed package under a real systemd (issue 21): a Debian 12 root made with
# debootstrap from the machine's own Debian sources, booted with `systemd-nspawn -b` (PID 1
# systemd 252, --private-network: loopback only), driven from outside with nsenter. Inside,
# as a user would:
#   1. install the previous release's package (built here from its git commit), make users,
#      a worksheet, an imported fio run, a job and a lit LED;
#   2. install this package over it: the service restarts on its own and all of it is there;
#   3. the service runs as spindle with the sandbox in force (CapEff 0, NoNewPrivs, seccomp);
#      psync, io_uring and O_DIRECT jobs end done with IOPS; the dashboard, an analytics
#      dataset and /metrics have values; a virtual LED toggles; the storage and network
#      services answer (their commands and netlink allowed by the unit); the ledctl helper
#      answers through its socket, and so does the smartctl one; the eBPF helper loads its program under its unit (a user
#      of its own, CAP_BPF and CAP_PERFMON given to the container), gives them up, streams
#      io.ops[latency] while the dataset exists and is gone when it does not; Samba's
#      counters come through the smbstatus helper's socket (smb2.ops counts smbclient);
#   4. `systemctl restart` ends a held TLS connection with close_notify; `systemctl stop`
#      during a job leaves it interrupted;
#   5. the raw-device drop-in: a job on a loop device bound into the container;
#   6. the container reboots and the service comes back;
#   7. `apt-get purge` leaves nothing: no socket, user, group, state, config or unit.
# The root is cached in $CACHE (SPINDLE_BOOT_CACHE, /var/cache/spindle-test) and made anew
# when its recipe or the packages' dependencies change; each run boots a throwaway overlay
# of it. The previous release's package is cached by commit. As root.
#   tests/package/boot.sh NEW.deb
set -euo pipefail
cd "$(dirname "$0")/../.."
TEST_NAME="boot test"
. tests/package/lib.sh

NEW_DEB=$(realpath -e "${1:?usage: tests/package/boot.sh NEW.deb}")
CACHE=${SPINDLE_BOOT_CACHE:-/var/cache/spindle-test}
# What the root is made of: systemd as PID 1, and what the client side needs (python3 for
# boot_client.py, curl and openssl for an administrator's own checks).
# Samba and smbclient: SMB's counters through spindle-smbstatus.socket; smartmontools: disk
# health through spindle-smart.socket.
INCLUDE=systemd,systemd-sysv,dbus,python3,curl,openssl,procps,ca-certificates,samba,smbclient,smartmontools
RECIPE=4 # bump when the root's recipe below changes

[ "$(id -u)" -eq 0 ] || { echo "$TEST_NAME: needs root (debootstrap, nspawn, losetup)"; exit 1; }
for tool in systemd-nspawn debootstrap nsenter losetup dpkg-buildpackage fio; do
	command -v "$tool" >/dev/null || { echo "$TEST_NAME: no $tool (./quickstart deps)"; exit 1; }
done
mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/run.XXXXXX")
ROOT=$WORK/root
MACHINE=spindle-boot-$$
NSPAWN="" LEADER="" LOOP="" LOOP_MODE=""

# The container's cgroup: nspawn needs one it may delegate, here where PID 1 is not systemd
# (hybrid hierarchy: cgroup2 at /sys/fs/cgroup/unified; or a pure cgroup2 host).
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then CG=/sys/fs/cgroup/$MACHINE; else CG=/sys/fs/cgroup/unified/$MACHINE; fi

cleanup() {
	set +e
	if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
		kill -TERM "$NSPAWN"
		timeout 20 tail --pid="$NSPAWN" -f /dev/null || kill -KILL "$NSPAWN"
	fi
	[ -d "$CG" ] && find "$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	mountpoint -q "$ROOT" && umount -l "$ROOT"
	if [ -n "$LOOP" ]; then
		losetup -d "$LOOP"
		[ -z "$LOOP_MODE" ] || { chown "${LOOP_MODE#*:}" "$LOOP"; chmod "${LOOP_MODE%%:*}" "$LOOP"; }
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "$TEST_NAME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The machine's Debian sources (deb822 or one-line), without third-party repositories:
# the root's /etc/apt/sources.list.d/debian.sources; the first main suite's URI on fd 3.
debian_sources() {
	/usr/bin/python3 - <<'PY'
import glob, re, sys
stanzas, out = [], []
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for block in re.split(r"\n\s*\n", open(path).read()):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", block, re.M))
        if "debian-archive-keyring" in fields.get("Signed-By", "") and "deb" in fields.get("Types", "").split():
            stanzas.append((fields["URIs"].split(), fields["Suites"].split(), fields.get("Components", "main")))
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        m = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(bookworm\S*)\s+(.*)$", line.strip())
        if m:
            stanzas.append(([m[1]], [m[2]], m[3]))
if not stanzas:
    sys.exit("no Debian bookworm source in /etc/apt")
mirror = next((u[0] for u, s, _ in stanzas if "bookworm" in s), None)
for uris, suites, comps in stanzas:
    out.append(f"Types: deb\nURIs: {' '.join(uris)}\nSuites: {' '.join(suites)}\n"
               f"Components: {comps}\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
print("\n".join(out), end="")
print(mirror, file=open("/dev/fd/3", "w"))
PY
}

# The names a package depends on (first of each alternative, without versions).
depends_of() {
	dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | sed '/^$/d'
}

# The previous release: the version below the newest in the changelog, and its commit: the
# tag v<version>, or else the parent of the commit that opened the newest version.
previous_release() {
	PREV_VERSION=$(dpkg-parsechangelog -l packaging/debian/changelog --offset 1 --count 1 -S Version)
	local cur intro c
	cur=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
	if PREV_COMMIT=$(git rev-parse -q --verify "v$PREV_VERSION^{commit}"); then return 0; fi
	intro=""
	for c in $(git log --format=%H -- packaging/debian/changelog); do
		git show "$c:packaging/debian/changelog" | head -1 | grep -q "($cur)" || break
		intro=$c
	done
	[ -n "$intro" ] || die "cannot find the commit that opened version $cur"
	PREV_COMMIT=$(git rev-parse "$intro^")
}

# The previous release's package, built once per commit (no tests: it was tested when it
# was made) with this tree's pinned uPlot when its lockfile is the same, else npm ci.
old_package() {
	previous_release
	OLD_DEB=$CACHE/debs/spindle_${PREV_VERSION}_${PREV_COMMIT:0:12}.deb
	[ -f "$OLD_DEB" ] && return 0
	local src=$WORK/old/src
	mkdir -p "$src" "$CACHE/debs"
	git archive "$PREV_COMMIT" | tar -x -C "$src"
	if git diff --quiet "$PREV_COMMIT" HEAD -- webroot/package-lock.json && [ -d webroot/node_modules ]; then
		cp -a webroot/node_modules "$src/webroot/"
	else
		(cd "$src/webroot" && npm ci --no-audit --no-fund >/dev/null)
	fi
	(cd "$src" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" \
		timeout 900 dpkg-buildpackage -us -uc -b >"$WORK/old/build.log" 2>&1) ||
		{ tail -40 "$WORK/old/build.log"; die "building the $PREV_VERSION package failed"; }
	mv "$WORK"/old/spindle_"${PREV_VERSION}"_*.deb "$OLD_DEB"
}

# The root: debootstrap --variant=minbase with $INCLUDE, the machine's Debian sources, and
# the packages' dependencies in apt's cache (the container has no network).
base_root() {
	local sources mirror key deps
	sources=$(debian_sources 3>"$WORK/mirror")
	mirror=$(cat "$WORK/mirror")
	deps=$( (depends_of "$NEW_DEB"; depends_of "$OLD_DEB") | sort -u | tr '\n' ' ')
	key=$(printf '%s\n' "$RECIPE" "$INCLUDE" "$sources" "$deps" | sha256sum | cut -c1-16)
	BASE=$CACHE/root-$key
	[ -f "$BASE/.spindle-boot-root" ] && return 0
	echo "  making the root (debootstrap bookworm from $mirror; dependencies: $deps)"
	rm -rf "$CACHE"/root-* "$CACHE/root.new"
	timeout 900 debootstrap --variant=minbase --include="$INCLUDE" bookworm "$CACHE/root.new" "$mirror" \
		>"$WORK/debootstrap.log" 2>&1 || { tail -30 "$WORK/debootstrap.log"; die "debootstrap failed"; }
	rm -f "$CACHE/root.new/etc/apt/sources.list"
	printf '%s' "$sources" >"$CACHE/root.new/etc/apt/sources.list.d/debian.sources"
	cp /etc/resolv.conf "$CACHE/root.new/etc/resolv.conf"
	# shellcheck disable=SC2086 # the names, one word each
	{ chroot "$CACHE/root.new" apt-get update -qq &&
		chroot "$CACHE/root.new" apt-get install -y -qq --download-only $deps; } \
		>"$WORK/apt-root.log" 2>&1 || { tail -30 "$WORK/apt-root.log"; die "filling the root's apt cache failed"; }
	rm -f "$CACHE/root.new/etc/resolv.conf"
	# Samba's NetBIOS and AD DC daemons are of no use here, and nmbd waits for a broadcast
	# interface the container (loopback only) never has: boots and halts took 90 s more.
	ln -sf /dev/null "$CACHE/root.new/etc/systemd/system/nmbd.service"
	ln -sf /dev/null "$CACHE/root.new/etc/systemd/system/samba-ad-dc.service"
	echo spindle-boot >"$CACHE/root.new/etc/hostname"
	: >"$CACHE/root.new/etc/machine-id"
	touch "$CACHE/root.new/.spindle-boot-root"
	mv "$CACHE/root.new" "$BASE"
}

inside() { # COMMAND...: run in the container (all its namespaces), as root
	nsenter -t "$LEADER" -a -r -w env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"
}
# boot_client.py COMMAND...: its "ok:" and "FAILED:" lines become this test's checks; its
# status is returned (a crash without a FAILED line is a failed check too).
client() {
	local out rc=0 line failed=0
	out=$(inside /usr/bin/python3 /root/boot_client.py "$@" 2>&1) || rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok: "*) ok "${line#ok: }" ;;
		"FAILED: "*) fail "${line#FAILED: }"; failed=1 ;;
		*) echo "  | $line" ;;
		esac
	done <<<"$out"
	[ "$rc" = 0 ] || [ "$failed" = 1 ] || fail "boot_client.py $1 exited with status $rc"
	return "$rc"
}

boot() { # starts the container, waits until systemd says the boot is over
	mkdir -p "$CG"
	(
		echo "$BASHPID" >"$CG/cgroup.procs"
		exec env SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn -q -b -D "$ROOT" \
			--machine="$MACHINE" --register=no --keep-unit --private-network \
			--system-call-filter=bpf --capability=CAP_BPF,CAP_PERFMON ${LOOP:+--bind="$LOOP"}
	) >>"$WORK/console.log" 2>&1 </dev/null &
	NSPAWN=$!
	# The container's PID 1: the descendant of nspawn in a PID namespace of its own (nspawn
	# may fork a helper first, as it does inside a chroot).
	LEADER=""
	local ours p
	ours=$(readlink /proc/self/ns/pid)
	for _ in $(seq 1 100); do
		for p in $(pgrep -P "$NSPAWN") $(for c in $(pgrep -P "$NSPAWN"); do pgrep -P "$c"; done); do
			if [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" != "$ours" ] &&
				[ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ]; then
				LEADER=$p
				break 2
			fi
		done
		sleep 0.1
	done
	[ -n "$LEADER" ] || { cat "$WORK/console.log"; die "the container did not start"; }
	# (until PID 1 has made /run/systemd/system, systemctl says "offline"; until it has made
	# its bus, it cannot ask it)
	local state="" deadline=$((SECONDS + 120))
	while [ "$SECONDS" -lt "$deadline" ]; do
		state=$(timeout 120 nsenter -t "$LEADER" -a -r -w systemctl is-system-running --wait 2>&1) || true
		case "$state" in *"Failed to connect"* | offline) sleep 0.2 ;; *) break ;; esac
	done
	case "$state" in
	running | degraded) ;;
	*) tail -30 "$WORK/console.log"; die "the boot did not finish: $state" ;;
	esac
	FAILED_UNITS=$(inside systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
}

# ends the container with COMMAND (poweroff or reboot); the status nspawn exits with
halt_with() {
	inside systemctl "$1" || true
	local rc=0
	wait "$NSPAWN" || rc=$?
	NSPAWN=""
	return "$rc"
}

svc_pid() { inside systemctl show -P MainPID spindled; }
status_field() { inside awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

step "the previous release's package (v$(dpkg-parsechangelog -l packaging/debian/changelog --offset 1 --count 1 -S Version))"
old_package
ok "spindle $PREV_VERSION from ${PREV_COMMIT:0:12}: $(basename "$OLD_DEB")"

step "the root (debootstrap, cached in $CACHE)"
base_root
ok "root $(basename "$BASE") ($(du -sh "$BASE" | cut -f1))"
mkdir -p "$WORK/upper" "$WORK/ovl" "$ROOT"
mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$WORK/upper,workdir=$WORK/ovl" "$ROOT"
cp "$OLD_DEB" "$NEW_DEB" tests/package/boot_client.py "$ROOT/root/"
OLD=/root/$(basename "$OLD_DEB") NEW=/root/$(basename "$NEW_DEB")
# A fio run to import (the appliance user's fio results beside Spindle's).
fio --name=boot --filename="$WORK/fio.dat" --size=4M --rw=randread --bs=8k --ioengine=psync \
	--runtime=1 --time_based --output-format=json+ --output="$ROOT/root/fio.json" >/dev/null
# A disk for the raw-device drop-in: a loop device on a file, bound into the container.
# udev, which gives block devices to group disk 0660 on a real box, runs on neither side:
# that is done by hand here (and undone at the end).
truncate -s 256M "$WORK/disk.img"
LOOP=$(losetup -f --show "$WORK/disk.img")
LOOP_MODE=$(stat -c '%a:%u:%g' "$LOOP")
chgrp disk "$LOOP" && chmod 0660 "$LOOP"

step "boot (systemd-nspawn -b)"
boot
ok "systemd $(inside systemctl --version | head -1 | cut -d' ' -f2) booted as PID 1 (failed units: ${FAILED_UNITS:-none})"

step "install spindle $PREV_VERSION and use it"
dpkg_wait inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$OLD" \
	>"$WORK/apt-old.log" || { cat "$WORK/apt-old.log"; die "installing $PREV_VERSION failed"; }
check "spindled.service is active after the install" inside systemctl is-active -q spindled
client wait || die "spindle $PREV_VERSION does not answer"
client seed /root/fio.json /root/seed.json || true
OLD_PID=$(svc_pid)

step "install this package over it"
dpkg_wait inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$NEW" \
	>"$WORK/apt-new.log" || { cat "$WORK/apt-new.log"; die "the upgrade failed"; }
NEW_VERSION=$(inside dpkg-query -W -f='${Version}' spindle)
check "dpkg says spindle $NEW_VERSION is installed (was $PREV_VERSION)" test "$NEW_VERSION" != "$PREV_VERSION"
client wait || die "the upgraded spindled does not answer"
PID=$(svc_pid)
check "the service restarted on its own (pid $OLD_PID, now $PID) and is active" \
	sh -c "[ '$PID' != '$OLD_PID' ] && [ '$PID' != 0 ]"
client verify /root/seed.json || true
schema_of() {
	inside /usr/bin/python3 -c 'import sqlite3; print(sqlite3.connect("file:/var/lib/spindle/spindle.db?mode=ro", uri=True).execute("pragma user_version").fetchone()[0])'
}
schema=$(schema_of)
ok "the database is at schema version $schema"

# A downgrade (README, "Upgrades"): the older spindled opens a database of the schema it
# knows, and refuses, saying so, one a newer release migrated further.
step "downgrade to $PREV_VERSION and back"
dpkg_wait inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --allow-downgrades \
	--no-install-recommends "$OLD" >"$WORK/apt-down.log" || { cat "$WORK/apt-down.log"; die "the downgrade failed"; }
mode="" refusal=""
for _ in $(seq 1 150); do
	if [ "$(inside curl -ks -o /dev/null -w '%{http_code}' https://127.0.0.1:8215/api/system/v1/health)" = 200 ]; then
		mode=opens; break
	fi
	refusal=$(inside journalctl -u spindled -b --no-pager -o cat | grep -m1 'newer than this spindled knows' || true)
	[ -n "$refusal" ] && { mode=refuses; break; }
	sleep 0.2
done
case "$mode" in
opens) ok "spindle $PREV_VERSION opens this release's database (schema $schema, the one it knows)"
	client verify /root/seed.json || true ;;
refuses) ok "spindle $PREV_VERSION refuses the database this release migrated: $refusal" ;;
*) fail "spindle $PREV_VERSION neither answers nor refuses the database within 30 s" ;;
esac
dpkg_wait inside env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$NEW" \
	>"$WORK/apt-new2.log" || { cat "$WORK/apt-new2.log"; die "the upgrade after the downgrade failed"; }
client wait || die "spindled does not answer after the second upgrade"
PID=$(svc_pid)

step "the service and its sandbox"
check "it runs as spindle ($(inside stat -c %U "/proc/$PID"))" test "$(inside stat -c %U "/proc/$PID")" = spindle
check "CapEff is 0 ($(status_field "$PID" CapEff))" test "$(status_field "$PID" CapEff)" = 0000000000000000
check "NoNewPrivs is on" test "$(status_field "$PID" NoNewPrivs)" = 1
check "a seccomp filter is in force (Seccomp $(status_field "$PID" Seccomp))" test "$(status_field "$PID" Seccomp)" = 2
exposure=$(inside systemd-analyze security spindled.service 2>/dev/null | sed -n 's/.*Overall exposure level for spindled.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security, live: exposure $exposure (2.0 or lower)" \
	awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'

step "benchmarks, values, an LED, the storage and network services, the ledctl helper"
client jobs || true
client values || true
client led || true
# The storage and network services under the unit's sandbox: zpool and zfs as its
# children, the addresses by netlink (AF_NETLINK among its address families); a reading
# the sandbox refused would be in the journal.
client services || true
refused=$(inside journalctl -u spindled --no-pager -o cat | grep -c "cannot be read\|storage: " || true)
check "the unit lets the network service read the kernel's addresses (journal: $refused refusals)" \
	[ "$refused" = 0 ]
# The hardware inventory follows the kernel's uevents (a netlink socket the unit allows),
# so reads of the hardware never rescan it.
uevents=$(inside journalctl -u spindled -b --no-pager -o cat | grep -c "the kernel's uevents say" || true)
check "the unit lets spindled hear the kernel's uevents" [ "$uevents" -ge 1 ]
# The helper, through its socket, as spindled reaches it (user spindle): it refuses a loop
# device (no slot), so nothing runs, and says why.
answer=$(inside setpriv --reuid=spindle --regid=spindle --init-groups /usr/bin/python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
s.connect("/run/spindle/ledctl.sock")
s.sendall(b"locate /dev/loop0\n")
s.shutdown(socket.SHUT_WR)
print(s.recv(512).decode().strip())' 2>&1) || true
check "the ledctl helper answers through /run/spindle/ledctl.sock: $answer" sh -c "case '$answer' in 'error '*'slot LED'*) ;; *) exit 1 ;; esac"
# smartctl's helper likewise (smartmontools is installed: its socket's condition holds).
check "spindle-smart.socket listens" inside systemctl is-active -q spindle-smart.socket
answer=$(inside setpriv --reuid=spindle --regid=spindle --init-groups /usr/bin/python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
s.connect("/run/spindle/smart.sock")
s.sendall(b"smart /dev/loop0\n")
s.shutdown(socket.SHUT_WR)
print(s.recv(512).decode().strip())' 2>&1) || true
check "the smartctl helper answers through /run/spindle/smart.sock: $answer" sh -c "case '$answer' in 'error '*'sit in a slot'*) ;; *) exit 1 ;; esac"
refused=$(inside journalctl -u 'spindle-smart@*' --no-pager -o cat | grep -ci "denied\|status=31" || true)
check "the unit lets the smartctl helper run (journal: $refused refusals)" [ "$refused" = 0 ]

# The eBPF helper under its unit: spindled asked it at start (so io.ops offers latency),
# connects while io.ops[latency] exists, and leaves it when the dataset goes.
if client iolat-on; then
	pid=$(inside pgrep -x spindle-iolat | head -1) || true
	status=$(inside cat "/proc/${pid:-0}/status" 2>/dev/null) || true
	uid=$(printf '%s\n' "$status" | awk '/^Uid:/ { print $2 }')
	capeff=$(printf '%s\n' "$status" | awk '/^CapEff:/ { print $2 }')
	check "spindle-iolat runs as a user of its own (uid ${uid:-none}), its capabilities given up once attached (CapEff ${capeff:-none})" \
		sh -c "[ -n '$uid' ] && [ '$uid' != 0 ] && [ '$capeff' = 0000000000000000 ]"
	client iolat-off || true
	gone=no
	for _ in $(seq 1 50); do
		inside pgrep -x spindle-iolat >/dev/null || { gone=yes; break; }
		sleep 0.1
	done
	check "spindle-iolat exits when no dataset needs it" [ "$gone" = yes ]
fi
killed=$(inside journalctl -u 'spindle-iolat@*' --no-pager -o cat | grep -ci "refused\|denied\|status=31" || true)
check "the unit lets spindle-iolat do its work (journal: $killed refusals)" [ "$killed" = 0 ]

# Samba's counters: smbstatus refuses spindled's user, so spindled asks the root helper
# behind spindle-smbstatus.socket. Profiling on in smb.conf, smbd and spindled restarted
# (spindled probes at its first second, then once a minute).
inside sed -i 's/^\[global\]$/[global]\n   smbd profiling level = count/' /etc/samba/smb.conf
inside systemctl restart smbd
inside systemctl restart spindled
client wait || die "spindled did not come back after the restart for Samba"
check "spindle-smbstatus.socket listens" inside systemctl is-active -q spindle-smbstatus.socket
client smb || true
refused=$(inside journalctl -u 'spindle-smbstatus@*' --no-pager -o cat | grep -ci "denied\|status=31\|only works as root\|Failed" || true)
check "the unit lets smbstatus do its work (journal: $refused refusals)" [ "$refused" = 0 ]
[ "$refused" = 0 ] || inside journalctl -u 'spindle-smbstatus@*' --no-pager -o cat | tail -20 | sed 's/^/  | /'

step "restart and stop"
inside /usr/bin/python3 /root/boot_client.py hold >"$WORK/hold.log" 2>&1 &
HOLD=$!
for _ in $(seq 1 50); do grep -q connected "$WORK/hold.log" && break; sleep 0.1; done
inside systemctl restart spindled
if wait "$HOLD"; then ok "systemctl restart: $(tail -1 "$WORK/hold.log" | sed 's/^ok: //')"; else fail "systemctl restart: $(tail -1 "$WORK/hold.log")"; fi
client wait || die "spindled did not come back after restart"
check "active after restart" inside systemctl is-active -q spindled
client start-job /root/long.id || true
inside systemctl stop spindled
check "systemctl stop: inactive, not failed (result: $(inside systemctl show -P Result spindled))" \
	test "$(inside systemctl show -P ActiveState spindled)" = inactive
inside systemctl start spindled
client wait || die "spindled did not start again"
client job-state "$(inside cat /root/long.id 2>/dev/null)" interrupted || true

step "the raw-device drop-in: a job on $LOOP"
inside install -D -m 0644 /usr/share/doc/spindle/examples/spindled.service.d-bench-devices.conf \
	/etc/systemd/system/spindled.service.d/bench-devices.conf
inside sh -c 'printf "bench_allow_devices = yes\n" >>/etc/spindle/spindled.conf'
inside systemctl daemon-reload
inside systemctl restart spindled
client wait || die "spindled did not come back with the drop-in"
client jobs "$LOOP" || true
inside rm /etc/systemd/system/spindled.service.d/bench-devices.conf

step "reboot the container"
rc=0
halt_with reboot || rc=$?
check "systemctl reboot ends the container with status 133 (a reboot)" test "$rc" = 133
boot
check "after the reboot, spindled.service is active" inside systemctl is-active -q spindled
client wait || die "spindled did not answer after the reboot"
client led || true
# The storage and network services under the unit's sandbox: zpool and zfs as its
# children, the addresses by netlink (AF_NETLINK among its address families); a reading
# the sandbox refused would be in the journal.
client services || true
refused=$(inside journalctl -u spindled --no-pager -o cat | grep -c "cannot be read\|storage: " || true)
check "the unit lets the network service read the kernel's addresses (journal: $refused refusals)" \
	[ "$refused" = 0 ]

step "apt-get purge spindle"
dpkg_wait inside env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q spindle >"$WORK/purge.log" ||
	{ cat "$WORK/purge.log"; die "purge failed"; }
sed -n 's/^spindle: /  | spindle: /p' "$WORK/purge.log"
warn=$(grep -i -E "^[WE]:|warning|not executed" "$WORK/purge.log" || true)
check "purge printed no warning${warn:+ ($warn)}" test -z "$warn"
for path in /run/spindle/ledctl.sock /run/spindle/smbstatus.sock /run/spindle/smart.sock /var/lib/spindle /etc/spindle /usr/sbin/spindled \
	/lib/systemd/system/spindled.service /etc/systemd/system/multi-user.target.wants/spindled.service; do
	check "no $path" inside sh -c "[ ! -e '$path' ] && [ ! -L '$path' ]"
done
check "no user spindle" inside sh -c '! getent passwd spindle'
check "no group spindle" inside sh -c '! getent group spindle'
check "systemd knows no spindled.service" inside sh -c '[ "$(systemctl show -P LoadState spindled)" = not-found ]'
check "no spindle process" inside sh -c '! pgrep -x spindled && ! pgrep -x spindle-worker'

step "power off"
rc=0
halt_with poweroff || rc=$?
check "systemctl poweroff ends the container with status 0" test "$rc" = 0

summary
[ "$FAILED" = 0 ] || { echo "$TEST_NAME: FAILED"; exit 1; }
echo "$TEST_NAME: passed"
