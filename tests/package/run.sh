#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# The Debian package, end to end (issue 15), on a throwaway machine as root with no systemd
# running:
#   1. build the .deb (dpkg-buildpackage -us -uc -b, make check included unless
#      PACKAGE_CHECK=0) in a copy of the tree in a scratch dir, and run lintian on it: no
#      error, no warning;
#   2. `make install DESTDIR=...` in that same configured tree installs the package's file
#      set: the two lists are compared;
#   3. install it (apt-get install ./spindle_*.deb), check the user, state dir, conffile
#      and unit, start spindled from the installed paths as the spindle user with the
#      installed config, log in over HTTPS as the initial admin, read the dashboard, run a
#      1 s benchmark in the packaged bench dir, light a virtual LED, stop it;
#   4. dpkg --purge, and check nothing of it is left.
# Idempotent: a package left installed by an earlier run is purged first. Each step is
# bounded in time and says how long it took. Needs webroot/node_modules (`npm ci` in
# webroot/, which ./quickstart's build runs). Exit status 0 when every check passed.
#   tests/package/run.sh   SCRATCH=dir to build there, KEEP=1 to keep it, and REUSE=1 (with
#                          SCRATCH) to test the package an earlier KEEP=1 run built there
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
PIDFILE=/run/spindle-package-test.pid

[ "$(id -u)" -eq 0 ] || { echo "package test: needs root (it installs and purges the package)"; exit 1; }
[ -f webroot/node_modules/uplot/package.json ] ||
	{ echo "package test: no webroot/node_modules: run 'npm ci' in webroot/ (./quickstart does)"; exit 1; }

SCRATCH=${SCRATCH:-$(mktemp -d "${TMPDIR:-/tmp}/spindle-package.XXXXXX")}
mkdir -p "$SCRATCH"
# ok, fail, check, die, step, summary, dpkg_wait
TEST_NAME="package test"
. tests/package/lib.sh

stop_leftover() { # a spindled an earlier run of this test left running
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 0
	# (its exe reads "/usr/sbin/spindled (deleted)" once the package is gone)
	case "$(readlink "/proc/$pid/exe" 2>/dev/null)" in /usr/sbin/spindled*) ;; *) pid="" ;; esac
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$PIDFILE"
}
cleanup() {
	stop_leftover
	if [ "${KEEP:-0}" = 1 ]; then echo "package test: scratch dir kept: $SCRATCH"; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT

step "purge what an earlier run left"
stop_leftover
if dpkg-query -W -f='${Status}' spindle 2>/dev/null | grep -qv "not-installed"; then
	dpkg_wait dpkg --purge spindle >/dev/null || die "cannot purge the spindle package already installed"
	ok "an earlier spindle package purged first"
fi

# 1. Build. dpkg-buildpackage writes ../*.deb: the copy sits in SCRATCH/src. The tree's
# files as git knows them (tracked, and new ones not ignored), and uPlot's node_modules.
# PACKAGE_CHECK=0 leaves make check out of the build (./quickstart check ran it on the same
# tree, and again in distcheck's copy of the tarball).
nocheck=""
[ "${PACKAGE_CHECK:-1}" = 0 ] && nocheck=" nocheck"
step "copy the tree and build the package (dpkg-buildpackage -b${nocheck:+, without make check}${nocheck:-, make check})"
if [ "${REUSE:-0}" = 1 ] && [ -f "$SCRATCH/build.log" ] && ls "$SCRATCH"/spindle_*_*.deb >/dev/null 2>&1; then
	echo "  REUSE=1: the package built earlier in $SCRATCH"
else
	rm -rf "$SCRATCH/src" "$SCRATCH"/spindle_* "$SCRATCH"/*.deb
	mkdir -p "$SCRATCH/src"
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$SCRATCH/src"
	cp -a webroot/node_modules "$SCRATCH/src/webroot/"
	# The dbgsym package is not tested: not building it saves time.
	if ! (cd "$SCRATCH/src" && DEB_BUILD_OPTIONS="parallel=$(nproc) noautodbgsym$nocheck" \
		timeout 900 dpkg-buildpackage -us -uc -b >"$SCRATCH/build.log" 2>&1); then
		tail -60 "$SCRATCH/build.log"
		die "dpkg-buildpackage failed (log above)"
	fi
fi
DEB=$(ls "$SCRATCH"/spindle_*_*.deb)
ok "built $(basename "$DEB") ($(du -k "$DEB" | cut -f1) KiB)"
tests=$(sed -n 's/^# PASS: *//p' "$SCRATCH/build.log" | tail -1)
if [ -n "$nocheck" ]; then
	[ -z "$tests" ] && ok "the package build left make check out (PACKAGE_CHECK=0)" ||
		fail "PACKAGE_CHECK=0, yet the package build ran make check"
elif [ -n "$tests" ] && ! grep -q '^# FAIL: *[1-9]' "$SCRATCH/build.log"; then
	ok "the package build ran the unit tests: $tests passed"
else
	fail "the package build did not run the unit tests (make check)"
fi

step "lintian"
if lintian --fail-on error,warning "$DEB" >"$SCRATCH/lintian.log" 2>&1; then
	ok "lintian: no error, no warning ($(grep -c '^[EW]:' "$SCRATCH/lintian.log" || true) tags)"
else
	cat "$SCRATCH/lintian.log"
	fail "lintian reports errors or warnings (above)"
fi

# 2. make install in the tree the package was built in (so configured as the package is:
# --prefix=/usr --sysconfdir=/etc ..., debian/rules' unit and udev dirs) installs the
# same files as the package. The package has more, by nature, and they are left out:
#  - /usr/share/doc/spindle/changelog.gz and copyright: dh_installchangelogs and
#    dh_installdocs add them from debian/;
#  - dh_compress gzips the man pages and docs: names under /usr/share/man and
#    /usr/share/doc are compared without .gz;
#  - the maintainer scripts are not files of the list (dpkg-deb -c lists none).
step "make install DESTDIR=... against the package's list"
DESTDIR=$SCRATCH/destdir
rm -rf "$DESTDIR"
make -C "$SCRATCH/src" install DESTDIR="$DESTDIR" >"$SCRATCH/install.log" 2>&1 ||
	{ tail -30 "$SCRATCH/install.log"; die "make install failed"; }
normalize() {
	sed -e 's|^\./|/|' -e 's|/$||' -e '/^$/d' -e '/^\/$/d' \
		-e 's#^\(/usr/share/\(man\|doc\)/.*\)\.gz$#\1#' |
		grep -v -x -e /usr/share/doc/spindle/changelog -e /usr/share/doc/spindle/copyright | sort
}
dpkg-deb -c "$DEB" | awk '{print $6}' | normalize >"$SCRATCH/package.list"
(cd "$DESTDIR" && find . -mindepth 1) | normalize >"$SCRATCH/install.list"
if diff -u "$SCRATCH/package.list" "$SCRATCH/install.list" >"$SCRATCH/lists.diff"; then
	ok "make install and the package install the same $(wc -l <"$SCRATCH/package.list") paths"
else
	cat "$SCRATCH/lists.diff"
	fail "make install and the package differ (- package only, + make install only)"
fi
for f in /usr/sbin/spindled /usr/bin/spindle-worker /etc/spindle/spindled.conf \
	/lib/systemd/system/spindled.service /usr/share/man/man8/spindled.8 \
	/usr/share/man/man1/spindle-worker.1 /usr/share/spindle/webroot/index.html; do
	check "the package holds $f" grep -qx "$f" "$SCRATCH/package.list"
done
check "the package holds uPlot (webroot/vendor/)" grep -q '^/usr/share/spindle/webroot/vendor/uplot-.*\.esm\.js$' "$SCRATCH/package.list"
# What "unit" ships beside the main unit, whatever it is when this runs.
for f in packaging/systemd/*.service packaging/systemd/*.socket packaging/systemd/*.timer \
	packaging/udev/*.rules; do
	[ -f "$f" ] || continue
	case "$f" in
	*.rules) dest=/lib/udev/rules.d/$(basename "$f") ;;
	*) dest=/lib/systemd/system/$(basename "$f") ;;
	esac
	check "the package holds $f as $dest" grep -qx "$dest" "$SCRATCH/package.list"
done
# The man pages say what --help says: every option of each program is in its page.
mkdir -p "$SCRATCH/x" && dpkg-deb -x "$DEB" "$SCRATCH/x"
for prog in usr/sbin/spindled:man8/spindled.8.gz usr/bin/spindle-worker:man1/spindle-worker.1.gz; do
	bin=$SCRATCH/x/${prog%%:*} page=$SCRATCH/x/usr/share/man/${prog#*:}
	missing=$(for o in $("$bin" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		MANWIDTH=250 man -l "$page" 2>/dev/null | grep -q -- "$o" || echo "$o"
	done)
	check "$(basename "$page") has every option of $(basename "$bin") --help${missing:+ (missing: $missing)}" \
		test -z "$missing"
done

# 3. Install and run.
step "apt-get install ./$(basename "$DEB")"
dpkg_wait env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	-o DPkg::Lock::Timeout=180 "$DEB" >"$SCRATCH/apt.log" || { cat "$SCRATCH/apt.log"; die "apt-get install failed"; }
check "dpkg says spindle is installed" sh -c "dpkg-query -W -f='\${Status}' spindle | grep -qx 'install ok installed'"
user_ok() {
	local entry uid home
	entry=$(getent passwd spindle) || return 1
	IFS=: read -r _ _ uid _ _ home _ <<<"$entry"
	[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/spindle ]
}
check "user spindle is a system user with home /var/lib/spindle" user_ok
check "group spindle exists and is spindle's group" sh -c '[ "$(id -gn spindle)" = spindle ]'
check "/var/lib/spindle is 0700 spindle:spindle" sh -c '[ "$(stat -c %a:%U:%G /var/lib/spindle)" = 700:spindle:spindle ]'
check "/var/lib/spindle/bench (the config's bench dir) is 0700 spindle:spindle" \
	sh -c '[ "$(stat -c %a:%U:%G /var/lib/spindle/bench)" = 700:spindle:spindle ]'
check "/etc/spindle/spindled.conf is a conffile" sh -c \
	"dpkg-query -W -f='\${Conffiles}' spindle | grep -q '^ /etc/spindle/spindled.conf '"
check "spindled.service is enabled (deb-systemd-helper; no systemd runs here to start it)" \
	test -L /etc/systemd/system/multi-user.target.wants/spindled.service

step "start the installed spindled as spindle with the installed config"
read -r PORT <<<"$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
URL=https://127.0.0.1:$PORT
# The config listens on 0.0.0.0:8215: a free loopback port instead. No LED hardware here:
# the system LED is the virtual backend.
# setpriv (util-linux, like runuser) execs spindled itself: $! is spindled's pid.
setpriv --reuid=spindle --regid=spindle --init-groups /usr/sbin/spindled --config /etc/spindle/spindled.conf --foreground \
	--listen "127.0.0.1:$PORT" --system-led-backend virtual >"$SCRATCH/spindled.log" 2>&1 &
SPID=$!
echo "$SPID" >"$PIDFILE"
up=0
for _ in $(seq 1 100); do
	grep -q "listening on $URL" "$SCRATCH/spindled.log" && { up=1; break; }
	kill -0 "$SPID" 2>/dev/null || break
	sleep 0.1
done
[ "$up" = 1 ] || { cat "$SCRATCH/spindled.log"; die "spindled did not start (log above)"; }
ok "spindled listens on $URL"
runs_as=$(stat -c %U "/proc/$SPID")
check "it runs as $runs_as" test "$runs_as" = spindle
worker=$(sed -n 's/.*jobs: worker \([^,]*\),.*/\1/p' "$SCRATCH/spindled.log")
check "it found the installed worker ($worker)" test "$(realpath -e "$worker")" = /usr/bin/spindle-worker
check "its state is /var/lib/spindle (database, TLS key, JWT key, initial admin password)" \
	test -s /var/lib/spindle/initial-admin-password

step "log in, dashboard, a 1 s benchmark, a virtual LED"
C=(curl -ks --max-time 10)
PW=$(cat /var/lib/spindle/initial-admin-password)
TOKEN=$("${C[@]}" -X POST -H "X-Auth-User: admin" -H "X-Auth-Key: $PW" -o /dev/null -D - \
	"$URL/api/access/v1" | tr -d '\r' | sed -n 's/^X-Auth-Session: //p')
[ -n "$TOKEN" ] || die "no login as admin with the initial password"
ok "logged in over HTTPS as admin with /var/lib/spindle/initial-admin-password"
A=(-H "X-Auth-Session: $TOKEN")
json() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
dash=$("${C[@]}" "${A[@]}" "$URL/api/status/v1/dashboard")
dash_ok() { json '"leds_lit" in d["dashboard"]' <<<"$dash" | grep -qx True; }
check "the dashboard answers (version $(json 'd["dashboard"]["version"]' <<<"$dash" 2>/dev/null))" dash_ok
console=$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/")
check "the console is served from the installed webroot ($console)" test "$console" = 200
loc=$("${C[@]}" "${A[@]}" -X POST -H 'Content-Type: application/json' -o /dev/null -D - \
	-d '{"name":"package-test","pattern":"randread","size":"4M","block_size":"8k","readers":1,"runtime_s":1}' \
	"$URL/api/bench/v1/jobs" | tr -d '\r' | sed -n 's/^Location: //p')
[ -n "$loc" ] || die "the benchmark job was not created"
state=""
for _ in $(seq 1 150); do
	job=$("${C[@]}" "${A[@]}" "$URL$loc")
	state=$(json 'd["job"]["state"]' <<<"$job")
	case "$state" in queued | running) sleep 0.2 ;; *) break ;; esac
done
iops=$(json 'round(d["job"]["result"]["read"]["iops"])' <<<"$job" 2>/dev/null || echo "?")
check "a 1 s randread job over 4 MiB ran to the end ($loc: $state, $iops IOPS)" test "$state" = "done"
target=$(json 'd["job"]["target"]' <<<"$job" 2>/dev/null || echo "?")
check "its target is in the packaged bench dir ($target)" test "${target#/var/lib/spindle/bench/}" != "$target"
code=$("${C[@]}" "${A[@]}" -X PUT -H 'Content-Type: application/json' -d '{"locate":true}' \
	-o /dev/null -w '%{http_code}' "$URL/api/hardware/v1/chassis/system")
led=$("${C[@]}" "${A[@]}" "$URL/api/hardware/v1/chassis/system")
led=$(json '"%s %s" % (d["chassis"]["locate"], d["chassis"]["led_backend"])' <<<"$led" 2>/dev/null || echo "?")
check "the system locator LED lit (PUT $code; locate and backend now: $led)" \
	test "$code $led" = "202 True virtual"
# The dashboard is made once per collector second.
for _ in $(seq 1 30); do
	lit=$("${C[@]}" "${A[@]}" "$URL/api/status/v1/dashboard" | json 'd["dashboard"]["leds_lit"]' 2>/dev/null || echo "?")
	[ "$lit" = 1 ] && break
	sleep 0.1
done
check "the dashboard counts it (leds_lit $lit)" test "$lit" = 1

step "stop spindled"
kill -TERM "$SPID"
rc=0
timeout 20 tail --pid="$SPID" -f /dev/null || true
wait "$SPID" || rc=$?
rm -f "$PIDFILE"
check "spindled stopped on SIGTERM with status 0" test "$rc" = 0

# 4. Purge: the state goes, after purge says so; so do the user, the config, the unit's
# enablement and every file of the package.
step "dpkg --purge spindle"
dpkg -L spindle | sort >"$SCRATCH/installed.list"
dpkg_wait dpkg --purge spindle >"$SCRATCH/purge.log" || { cat "$SCRATCH/purge.log"; die "dpkg --purge failed"; }
sed 's/^/  | /' "$SCRATCH/purge.log"
check "purge said it removes /var/lib/spindle and what is in it" grep -q "removes /var/lib/spindle.*database.*TLS.*JWT" "$SCRATCH/purge.log"
check "no /var/lib/spindle" test ! -e /var/lib/spindle
check "no /etc/spindle" test ! -e /etc/spindle
check "no user spindle" sh -c '! getent passwd spindle >/dev/null'
check "no group spindle" sh -c '! getent group spindle >/dev/null'
check "dpkg knows no spindle (not even its config files)" sh -c '! dpkg-query -W spindle >/dev/null 2>&1'
check "the unit is no longer enabled" sh -c '! ls /etc/systemd/system/*/spindled.service /var/lib/systemd/deb-systemd-helper-enabled/*spindled* >/dev/null 2>&1'
left=$(while read -r f; do
	[ -d "$f" ] && continue # shared directories (/usr/bin ...) stay
	if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi
done <"$SCRATCH/installed.list")
check "none of the package's $(wc -l <"$SCRATCH/installed.list") paths is left${left:+ (left: $left)}" test -z "$left"
check "no /usr/share/spindle, no /usr/share/doc/spindle" sh -c '[ ! -e /usr/share/spindle ] && [ ! -e /usr/share/doc/spindle ]'

summary
[ "$FAILED" = 0 ] || { echo "package test: FAILED"; exit 1; }
echo "package test: passed"
