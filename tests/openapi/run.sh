#!/bin/bash
# SPDX-License-Identifier: ISC
# api/openapi.json through the tools script writers reach for, pinned in package.json (the
# newest that run on Debian 12's node 18):
#   - Spectral (spectral:oas) and Redocly (recommended): no error and no warning;
#   - three generators make a client of it: openapi-typescript (types for openapi-fetch),
#     orval (its fetch client) and @hey-api/openapi-ts (its SDK); tsc compiles a script on
#     each (clients/*.ts) with no error;
#   - then each script runs against a real spindled (SPINDLED, else the build's) through
#     Prism's validating proxy (--errors): every request and answer is held to the
#     document, and a violation fails the run.
# Prints each tool's count. Usage: tests/openapi/run.sh   (NODE: the node to run them on)
set -euo pipefail
cd "$(dirname "$0")"
NODE=${NODE:-node}
# no telemetry, no update checks, no install scripts (the tools need none)
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false
export DO_NOT_TRACK=1 NO_UPDATE_NOTIFIER=1
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	npm ci --no-audit --no-fund --ignore-scripts >/dev/null
fi
tool() { # NAME ARGS...: the package's bin, on $NODE
	local bin
	bin=$(readlink -f "node_modules/.bin/$1")
	shift
	$NODE "$bin" "$@"
}
doc=${DOC:-../../api/openapi.json}
rc=0

out=$(tool spectral lint "$doc" --ruleset .spectral.yaml --format json --quiet 2>&1) || true
counts=$(python3 -c '
import json, sys
text = sys.stdin.read()
try:
    found = json.loads(text[text.index("["):])
except ValueError:
    print("unreadable: " + text[:300]); sys.exit(0)
names = ["error", "warning", "info", "hint"]
n = [sum(1 for r in found if r["severity"] == i) for i in range(4)]
print(" ".join(f"{c} {w}s" for c, w in zip(n, names)))
for r in found:
    print("  " + names[r["severity"]] + " " + r["code"] + " " + ".".join(map(str, r["path"])) + ": " + r["message"])
' <<<"$out")
echo "Spectral (spectral:oas): ${counts%%$'\n'*}"
[[ $counts == "0 errors 0 warnings"* ]] || { echo "$counts"; rc=1; }

out=$(tool redocly lint "$doc" --format stylish 2>&1) && red=0 || red=$?
errors=$(grep -Eo '[0-9]+ errors?' <<<"$out" | head -1 || true)
warnings=$(grep -Eo '[0-9]+ warnings?' <<<"$out" | head -1 || true)
echo "Redocly (recommended): ${errors:-0 errors}, ${warnings:-0 warnings}"
if [ "$red" -ne 0 ] || [ -n "$errors$warnings" ]; then
	echo "$out"
	rc=1
fi

rm -rf gen build
mkdir -p gen
generated=1
tool openapi-typescript "$doc" --output gen/schema.d.ts >gen/openapi-typescript.log 2>&1 ||
	{ echo "openapi-typescript: failed"; cat gen/openapi-typescript.log; generated=0; }
DOC=$doc tool orval --config orval.config.cjs >gen/orval.log 2>&1 ||
	{ echo "orval: failed"; cat gen/orval.log; generated=0; }
tool openapi-ts -i "$doc" -o gen/hey -c @hey-api/client-fetch >gen/hey.log 2>&1 ||
	{ echo "@hey-api/openapi-ts: failed"; cat gen/hey.log; generated=0; }
if [ "$generated" -eq 1 ] && tool tsc -p tsconfig.json; then
	echo "generated clients: openapi-typescript + openapi-fetch, orval, @hey-api/openapi-ts: each script compiles"
else
	echo "generated clients: a generator failed or a script does not compile against its client"
	exit 1
fi

# --- live: the scripts against spindled, through Prism's validating proxy
spindled=${SPINDLED:-../../server/spindled}
[ -x "$spindled" ] || { echo "no spindled at $spindled (make first)"; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spindle-openapi.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$scratch"
}
trap cleanup EXIT
read -r https http proxy < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
"$spindled" --foreground --state-dir "$scratch/state" --listen "127.0.0.1:$https" \
	--http-listen "127.0.0.1:$http" --kdf-iterations 1000 >"$scratch/spindled.log" 2>&1 &
pids+=($!)
# Prism forwards to the plain loopback listener (it would refuse the self-signed certificate)
# (not through tool(): $! must be node's own pid, for the cleanup to stop it)
$NODE "$(readlink -f node_modules/.bin/prism)" proxy --errors -h 127.0.0.1 -p "$proxy" "$doc" \
	"http://127.0.0.1:$http" >"$scratch/prism.log" 2>&1 &
pids+=($!)
up() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null; }
for _ in $(seq 1 120); do
	up "http://127.0.0.1:$http/api/system/v1/health" && up "http://127.0.0.1:$proxy/api/system/v1/health" && break
	sleep 0.5
done
up "http://127.0.0.1:$proxy/api/system/v1/health" ||
	{ echo "spindled or Prism did not come up"; tail -20 "$scratch/spindled.log" "$scratch/prism.log"; exit 1; }
if SPINDLE_URL="http://127.0.0.1:$proxy" SPINDLE_USER=admin \
	SPINDLE_PASSWORD=$(cat "$scratch/state/initial-admin-password") \
	$NODE run-clients.cjs >"$scratch/clients.log" 2>&1; then
	ran=1
else
	ran=0
fi
calls=$(grep -c "Request received" "$scratch/prism.log" || true)
violations=$(grep -ci "violation" "$scratch/prism.log" || true)
echo "live through Prism's proxy: $calls calls, $violations violations; $(grep -c ': ok$' "$scratch/clients.log" || true) of 3 scripts ran to the end"
if [ "$ran" -ne 1 ] || [ "$violations" -ne 0 ]; then
	cat "$scratch/clients.log"
	grep -i -B2 -A8 "violation" "$scratch/prism.log" | head -80
	rc=1
fi
exit $rc
