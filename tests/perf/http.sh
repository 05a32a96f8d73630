#!/bin/bash
# SPDX-License-Identifier: ISC
# Benchmark, not a test: spindled's request path on both listeners, HTTPS (the default, the
# one users take) and plain HTTP, against two peers answering the same bytes in the same
# run: nginx (one worker; over HTTPS with spindled's own certificate and key), and a bare
# libevent evhttp server (tests/perf/bare_evhttp.c: the floor under spindled, with nothing
# on its request path). Cases, each on both listeners:
#   1. throughput, wrk -t1 -cCONNECTIONS: GET /api/system/v1/version, the phone's
#      /api/status/v1/dashboard, and the dashboard polled with If-None-Match (304s);
#   2. one keep-alive connection, wrk -t1 -c1 --latency: p50 and p99 of the dashboard;
#   3. TLS handshakes per second, new and resumed (openssl s_time -new / -reuse);
#   4. the TLS scan of each (tests/tls/scan.sh: testssl.sh, ffdhe groups), same key and
#      profile (nginx set as server/net/tls.c sets spindled).
# ROUNDS alternating rounds each; it prints every round, the medians, the ratios and the
# aims: HTTPS dashboard >= 0.5 x nginx and >= 0.9 x bare evhttp; plain >= 0.8 x nginx; one
# HTTPS connection p99 < 1 ms; resumed handshakes >= 0.8 x nginx.
# Usage, from the repo root after a build:  bash tests/perf/http.sh
# Environment: SPINDLED (default ./server/spindled), DURATION (seconds per run, default 5),
#              ROUNDS (default 3), CONNECTIONS (default 64), CC (default cc).
set -euo pipefail
# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

SPINDLED=${SPINDLED:-./server/spindled}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
CC=${CC:-cc}

for tool in wrk nginx curl openssl pkg-config "$CC"; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install wrk nginx curl openssl pkg-config gcc)"
done
[ -x "$SPINDLED" ] || die "no spindled at $SPINDLED: build first, or set SPINDLED"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/spindle-perf.XXXXXX")
bare_pids=()
cleanup() {
	local rc=$1 p
	for p in "${bare_pids[@]}"; do stop "$p"; done
	perf_cleanup "$rc"
}
trap 'cleanup $?' EXIT
trap 'exit 130' INT TERM

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

median() { # numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }'; }

# verdict VALUE AIM [le]: "meets" or "BELOW" (with le: VALUE must be at most AIM).
verdict() {
	awk -v v="$1" -v a="$2" -v le="${3:-}" 'BEGIN { ok = le ? (v <= a) : (v >= a); print ok ? "meets" : "BELOW" }'
}

# wrk_run NAME URL [wrk args...] -> prints req/s; dies on errors answered by a server.
wrk_run() {
	local name=$1 url=$2 out rps non2xx
	shift 2
	out="$TMP/wrk-$name.txt"
	timeout $((DURATION + 30)) wrk -t1 -d"${DURATION}s" "$@" "$url" >"$out" 2>&1 ||
		{ cat "$out" >&2; die "wrk against $name failed"; }
	non2xx=$(awk '/Non-2xx or 3xx responses:/ { print $NF }' "$out")
	if [ -n "$non2xx" ] && [ "$non2xx" -gt 0 ]; then
		cat "$out" >&2
		die "$name answered $non2xx non-2xx responses"
	fi
	grep -q 'Socket errors' "$out" && echo "  ($name: $(grep 'Socket errors' "$out" | sed 's/^ *//'))" >&2
	rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
	[ -n "$rps" ] || { cat "$out" >&2; die "no Requests/sec from wrk against $name"; }
	echo "$rps"
}

# latency_ms FILE PCT: a percentile of wrk's --latency table, in milliseconds.
latency_ms() {
	awk -v p="$2%" '$1 == p {
		v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		f = (u == "us") ? 0.001 : (u == "ms") ? 1 : (u == "s") ? 1000 : 0
		printf "%.3f", v * f }' "$1"
}

# --- spindled and the bytes it answers ---------------------------------------------------
mkdir -p "$TMP/www"
# Handshakes per second measure what a handshake costs: the bound per address (100 a second,
# --tls-handshake-rate) would measure the bound instead, and refuse s_time from loopback.
spindled_start --tls-handshake-rate 0
https_base="https://127.0.0.1:$https_port"
cert="$TMP/state/tls/cert.pem"
key="$TMP/state/tls/key.pem"

curl -fsS --max-time 5 -H "X-Auth-Session: $token" -o "$TMP/www/version.json" \
	"$base/api/system/v1/version" || die "authenticated GET /api/system/v1/version failed"
# The dashboard once the collector has a sample (its second tick).
for i in $(seq 50); do
	curl -fsS --max-time 5 -H "X-Auth-Session: $token" -o "$TMP/www/dashboard.json" \
		"$base/api/status/v1/dashboard" || die "authenticated GET /api/status/v1/dashboard failed"
	grep -q '"time":"' "$TMP/www/dashboard.json" && break
	[ "$i" -eq 50 ] && die "the dashboard has no sample after 5 s"
	sleep 0.1
done
version_bytes=$(wc -c <"$TMP/www/version.json")
dash_bytes=$(wc -c <"$TMP/www/dashboard.json")
cat >"$TMP/etag.lua" <<'LUA'
-- Each request carries the newest ETag any response brought, as polling phones do.
local etag
counts = {} -- a global: done() reads it with thread:get
function request()
	if etag then
		wrk.headers["If-None-Match"] = etag
	end
	return wrk.format()
end
function response(status, headers, body)
	etag = headers["ETag"] or headers["Etag"] or etag
	counts[status] = (counts[status] or 0) + 1
end
function setup(thread)
	threads = threads or {}
	table.insert(threads, thread)
end
function done(summary, latency, requests)
	local c = threads[1]:get("counts")
	io.write(string.format("status 200: %d, 304: %d\n", c[200] or 0, c[304] or 0))
end
LUA

# --- the peers ---------------------------------------------------------------------------
nginx_start version.json "$cert" "$key"

# bare_start VAR FILE [CERT KEY]: the bare evhttp server on a free port, once it answers.
"$CC" -O2 -o "$TMP/bare_evhttp" "$(dirname "$0")/bare_evhttp.c" \
	$(pkg-config --cflags --libs libevent libevent_openssl libssl libcrypto) ||
	die "cannot build bare_evhttp (apt-get install libevent-dev libssl-dev)"
bare_start() {
	local var=$1 file=$2 port scheme=http i
	shift 2
	free_port port
	[ $# -eq 2 ] && scheme=https
	"$TMP/bare_evhttp" "$port" "$TMP/www/$file" "$@" 2>"$TMP/bare-$port.log" &
	bare_pids+=($!)
	for i in $(seq 50); do
		curl -kfsS -o /dev/null --max-time 2 "$scheme://127.0.0.1:$port/" 2>/dev/null &&
			{ printf -v "$var" '%s' "$port"; return 0; }
		sleep 0.1
	done
	die "bare_evhttp did not answer on $port"
}
bare_start bare_port dashboard.json
bare_start bare_tls_port dashboard.json "$cert" "$key"

# --- throughput --------------------------------------------------------------------------
# compare TITLE SPINDLED_URL NGINX_URL BARE_URL|"" NGINX_AIM BARE_AIM [wrk args...]:
# ROUNDS alternating rounds, req/s of each server, the medians and the ratios.
compare() {
	local title=$1 s_url=$2 n_url=$3 b_url=$4 n_aim=$5 b_aim=$6 r s n b s_med n_med b_med rn rb
	shift 6
	echo "$title"
	printf '%-7s %13s %13s %13s %9s %9s\n' round "spindled r/s" "nginx r/s" "bare r/s" "s/nginx" "s/bare"
	: >"$TMP/s.txt"
	: >"$TMP/n.txt"
	: >"$TMP/b.txt"
	for r in $(seq "$ROUNDS"); do
		s=$(wrk_run spindled "$s_url" -c"$CONNECTIONS" -H "X-Auth-Session: $token" "$@")
		n=$(wrk_run nginx "$n_url" -c"$CONNECTIONS" "$@")
		b=0
		[ -n "$b_url" ] && b=$(wrk_run bare "$b_url" -c"$CONNECTIONS" "$@")
		echo "$s" >>"$TMP/s.txt"
		echo "$n" >>"$TMP/n.txt"
		echo "$b" >>"$TMP/b.txt"
		printf '%-7s %13.0f %13.0f %13.0f %9s %9s\n' "$r" "$s" "$n" "$b" "$(ratio "$s" "$n")" \
			"$(ratio "$s" "$b")"
	done
	kill -0 "$spindled_pid" 2>/dev/null || die "spindled died during the runs"
	s_med=$(median <"$TMP/s.txt")
	n_med=$(median <"$TMP/n.txt")
	b_med=$(median <"$TMP/b.txt")
	rn=$(ratio "$s_med" "$n_med")
	rb=$(ratio "$s_med" "$b_med")
	printf '%-7s %13.0f %13.0f %13.0f %9s %9s\n' median "$s_med" "$n_med" "$b_med" "$rn" "$rb"
	[ -n "$n_aim" ] && echo "spindled/nginx: $rn ($(verdict "$rn" "$n_aim") the aim of $n_aim)"
	[ -n "$b_aim" ] && echo "spindled/bare evhttp: $rb ($(verdict "$rb" "$b_aim") the aim of $b_aim)"
	[ -n "$b_url" ] && echo "bare evhttp/nginx: $(ratio "$b_med" "$n_med") (what evhttp itself costs)"
	echo
}

rss_idle=$(rss_kb "$spindled_pid")
echo "spindled against nginx (1 worker) and bare evhttp answering the same bytes, loopback;"
echo "wrk -t1 -c$CONNECTIONS -d${DURATION}s, $ROUNDS alternating rounds each"
echo

for listener in https http; do
	if [ "$listener" = https ]; then
		s_base=$https_base n_base="https://127.0.0.1:$nginx_tls_port"
		b_base="https://127.0.0.1:$bare_tls_port" n_aim=0.5 b_aim=0.9
	else
		s_base=$base n_base="http://127.0.0.1:$nginx_port"
		b_base="http://127.0.0.1:$bare_port" n_aim=0.8 b_aim=""
	fi
	echo "=== $listener listener ==="
	echo
	compare "GET /api/system/v1/version ($version_bytes bytes), $listener" \
		"$s_base/api/system/v1/version" "$n_base/version.json" "" "$n_aim" ""
	compare "GET /api/status/v1/dashboard ($dash_bytes bytes), $listener" \
		"$s_base/api/status/v1/dashboard" "$n_base/dashboard.json" "$b_base/" "$n_aim" "$b_aim"
	# As a phone polls: the newest ETag in If-None-Match, so mostly 304s. No aim: nginx
	# answers a 304 without touching its file, spindled checks the token either way.
	compare "GET /api/status/v1/dashboard with If-None-Match (mostly 304), $listener" \
		"$s_base/api/status/v1/dashboard" "$n_base/dashboard.json" "" "" "" -s "$TMP/etag.lua"
	for who in spindled nginx; do
		awk -v who="$who" '/^status / { printf "  %s, last round: %s\n", who, $0 }' "$TMP/wrk-$who.txt"
	done
	echo
done

# --- one keep-alive connection -----------------------------------------------------------
echo "=== one keep-alive connection: GET the dashboard, wrk -t1 -c1 --latency, ms ==="
for listener in https http; do
	if [ "$listener" = https ]; then
		urls=("$https_base/api/status/v1/dashboard" "https://127.0.0.1:$nginx_tls_port/dashboard.json" "https://127.0.0.1:$bare_tls_port/")
	else
		urls=("$base/api/status/v1/dashboard" "http://127.0.0.1:$nginx_port/dashboard.json" "http://127.0.0.1:$bare_port/")
	fi
	printf '%-7s %-6s %10s %10s %10s %10s %10s %10s\n' "$listener" round "s p50" "s p99" "nginx p50" "nginx p99" "bare p50" "bare p99"
	for who in s n b; do : >"$TMP/$who.p50"; : >"$TMP/$who.p99"; done
	for r in $(seq "$ROUNDS"); do
		row=()
		for i in 0 1 2; do
			who=$(echo s n b | cut -d' ' -f$((i + 1)))
			wrk_run "lat-$who" "${urls[$i]}" -c1 --latency -H "X-Auth-Session: $token" >/dev/null
			p50=$(latency_ms "$TMP/wrk-lat-$who.txt" 50)
			p99=$(latency_ms "$TMP/wrk-lat-$who.txt" 99)
			echo "$p50" >>"$TMP/$who.p50"
			echo "$p99" >>"$TMP/$who.p99"
			row+=("$p50" "$p99")
		done
		printf '%-7s %-6s %10s %10s %10s %10s %10s %10s\n' "" "$r" "${row[@]}"
	done
	meds=()
	for who in s n b; do meds+=("$(median <"$TMP/$who.p50")" "$(median <"$TMP/$who.p99")"); done
	printf '%-7s %-6s %10s %10s %10s %10s %10s %10s\n' "" median "${meds[@]}"
	if [ "$listener" = https ]; then
		echo "spindled p99 over HTTPS: ${meds[1]} ms ($(verdict "${meds[1]}" 1 le) the aim of < 1 ms)"
	fi
	echo
done

# --- TLS handshakes ----------------------------------------------------------------------
# s_time connects, sends one GET (-www) and reads the answer to the end, as fast as it can
# for DURATION s; -reuse resumes the first connection's session each time. Reading an
# answer matters: a TLS 1.3 session ticket comes after the handshake, so a client that
# reads nothing has nothing to resume.
handshakes() { # PORT MODE PATH -> connections per real second
	local out
	out=$(timeout $((DURATION + 30)) openssl s_time -connect "127.0.0.1:$1" "-$2" \
		-www "$3" -time "$DURATION" 2>&1) || true
	echo "$out" | awk '/connections in [0-9.]+ real seconds/ { printf "%.0f", $1 / $4; found = 1 }
		END { if (!found) print 0 }'
}
echo "=== TLS 1.3 connections per second (handshake, one GET, close), openssl s_time, ${DURATION}s each ==="
printf '%-8s %-6s %12s %12s %8s\n' mode round spindled nginx ratio
for mode in new reuse; do
	: >"$TMP/s.hs"
	: >"$TMP/n.hs"
	for r in $(seq "$ROUNDS"); do
		s=$(handshakes "$https_port" "$mode" /api/system/v1/health)
		n=$(handshakes "$nginx_tls_port" "$mode" /version.json)
		echo "$s" >>"$TMP/s.hs"
		echo "$n" >>"$TMP/n.hs"
		printf '%-8s %-6s %12s %12s %8s\n' "$mode" "$r" "$s" "$n" "$(ratio "$s" "$n")"
	done
	s=$(median <"$TMP/s.hs")
	n=$(median <"$TMP/n.hs")
	rr=$(ratio "$s" "$n")
	printf '%-8s %-6s %12.0f %12.0f %8s\n' "$mode" median "$s" "$n" "$rr"
	[ "$mode" = reuse ] && echo "resumed handshakes spindled/nginx: $rr ($(verdict "$rr" 0.8) the aim of 0.8)"
done
echo

# --- the TLS scan: what testssl.sh says of each, with the same key -------------------------
if command -v testssl >/dev/null; then
	echo "=== TLS scan (tests/tls/scan.sh: testssl.sh, ffdhe groups): spindled, then nginx, same key ==="
	"$(dirname "$0")/../tls/scan.sh" --host "127.0.0.1:$https_port" || true
	"$(dirname "$0")/../tls/scan.sh" --host "127.0.0.1:$nginx_tls_port" || true
	echo
fi

kill -0 "$spindled_pid" 2>/dev/null || die "spindled died during the runs"
rss_after=$(rss_kb "$spindled_pid")
echo "spindled VmRSS: ${rss_idle} kB idle, ${rss_after} kB after the runs"
