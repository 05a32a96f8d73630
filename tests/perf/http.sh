#!/bin/bash
# Benchmark, not a test: authenticated GETs on spindled's plain HTTP listener against
# nginx (one worker) serving the same bytes as a static file: /api/system/v1/version, the
# phone's /api/status/v1/dashboard, and the dashboard polled with If-None-Match (304s).
# Three alternating wrk rounds each; prints req/s per round, the medians and their ratio
# (target: spindled >= 0.8 x nginx), and spindled's RSS idle and after the runs.
# Usage, from the repo root after a build:  bash tests/perf/http.sh
# Environment: SPINDLED (default ./server/spindled), DURATION (seconds per run, default 5),
#              ROUNDS (default 3), CONNECTIONS (default 64).
set -euo pipefail
# shellcheck source=tests/perf/lib.sh
. "$(dirname "$0")/lib.sh"

SPINDLED=${SPINDLED:-./server/spindled}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
TARGET=0.8

for tool in wrk nginx curl; do
	command -v "$tool" >/dev/null || die "$tool not found (apt-get install wrk nginx curl)"
done
[ -x "$SPINDLED" ] || die "no spindled at $SPINDLED: build first, or set SPINDLED"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/spindle-perf.XXXXXX")
trap 'perf_cleanup $?' EXIT
trap 'exit 130' INT TERM

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# wrk_run NAME URL [wrk args...] -> prints req/s; dies on errors answered by the server.
wrk_run() {
	local name=$1 url=$2 out rps non2xx
	shift 2
	out="$TMP/wrk-$name.txt"
	timeout $((DURATION + 30)) wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$@" "$url" >"$out" 2>&1 ||
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

median() { # numbers on stdin
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# --- spindled ----------------------------------------------------------------------------
mkdir -p "$TMP/www"
spindled_start

# The exact bytes spindled answers become nginx's static file.
curl -fsS --max-time 5 -H "X-Auth-Session: $token" -o "$TMP/www/version.json" \
	"$base/api/system/v1/version" || die "authenticated GET /api/system/v1/version failed"
body_bytes=$(wc -c <"$TMP/www/version.json")

# The dashboard once the collector has a sample (its second tick), as nginx's second file.
for i in $(seq 50); do
	curl -fsS --max-time 5 -H "X-Auth-Session: $token" -o "$TMP/www/dashboard.json" \
		"$base/api/status/v1/dashboard" || die "authenticated GET /api/status/v1/dashboard failed"
	grep -q '"time":"' "$TMP/www/dashboard.json" && break
	[ "$i" -eq 50 ] && die "the dashboard has no sample after 5 s"
	sleep 0.1
done
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

# --- nginx -------------------------------------------------------------------------------
nginx_start version.json
nginx_url="http://127.0.0.1:$nginx_port/version.json"

# --- runs --------------------------------------------------------------------------------
# compare NAME TARGET SPINDLED_URL NGINX_URL [wrk args for both...]: ROUNDS alternating
# rounds, a table of req/s, and the medians' ratio against TARGET ("": none).
compare() {
	local name=$1 target=$2 s_url=$3 n_url=$4 r s n s_med n_med ratio verdict
	shift 4
	echo "$name"
	printf '%-8s %14s %14s %8s\n' round "spindled r/s" "nginx r/s" ratio
	: >"$TMP/s.txt"
	: >"$TMP/n.txt"
	for r in $(seq "$ROUNDS"); do
		s=$(wrk_run spindled "$s_url" -H "X-Auth-Session: $token" "$@")
		n=$(wrk_run nginx "$n_url" "$@")
		echo "$s" >>"$TMP/s.txt"
		echo "$n" >>"$TMP/n.txt"
		printf '%-8s %14.0f %14.0f %8.2f\n' "$r" "$s" "$n" "$(awk -v a="$s" -v b="$n" 'BEGIN { print a / b }')"
	done
	kill -0 "$spindled_pid" 2>/dev/null || die "spindled died during the runs"
	s_med=$(median <"$TMP/s.txt")
	n_med=$(median <"$TMP/n.txt")
	ratio=$(awk -v a="$s_med" -v b="$n_med" 'BEGIN { printf "%.2f", a / b }')
	printf '%-8s %14.0f %14.0f %8s\n' median "$s_med" "$n_med" "$ratio"
	if [ -n "$target" ]; then
		verdict=$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r >= t) ? "meets" : "BELOW" }')
		echo "ratio spindled/nginx: $ratio ($verdict the target of $target)"
	else
		echo "ratio spindled/nginx: $ratio (no target)"
	fi
	echo
}

rss_idle=$(rss_kb "$spindled_pid")
echo "spindled vs nginx (1 worker), wrk -t1 -c$CONNECTIONS -d${DURATION}s, $ROUNDS alternating"
echo "rounds each, loopback; nginx serves the bytes spindled answered, as a static file"
echo
compare "GET /api/system/v1/version ($body_bytes bytes)" "$TARGET" \
	"$base/api/system/v1/version" "$nginx_url"

# The dashboard, as a phone polls it: plain, then with the newest ETag in If-None-Match
# (the Lua script sends the last ETag any answer brought: 304s, and a 200 per sample).
# No target for the 304s: nginx answers them without touching its file, while spindled's
# cost is the token check either way, so the figures are printed for what they are.
compare "GET /api/status/v1/dashboard ($dash_bytes bytes)" "$TARGET" \
	"$base/api/status/v1/dashboard" "http://127.0.0.1:$nginx_port/dashboard.json"
compare "GET /api/status/v1/dashboard with If-None-Match (mostly 304)" "" \
	"$base/api/status/v1/dashboard" "http://127.0.0.1:$nginx_port/dashboard.json" \
	-s "$TMP/etag.lua"
for who in spindled nginx; do
	awk -v who="$who" '/^status / { printf "  %s, last round: %s\n", who, $0 }' "$TMP/wrk-$who.txt"
done
echo

rss_after=$(rss_kb "$spindled_pid")
echo "spindled VmRSS: ${rss_idle} kB idle, ${rss_after} kB after the runs"
