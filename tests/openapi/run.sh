#!/bin/bash
# SPDX-License-Identifier: ISC
# api/openapi.json through the tools script writers reach for, pinned in package.json:
#   - Spectral (spectral:oas) and Redocly (recommended): no error and no warning;
#   - openapi-typescript generates the types of a client, and tsc type-checks client.ts
#     (log in, dashboard, a job, its result and fio log) against them with openapi-fetch.
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

tool openapi-typescript "$doc" --output schema.d.ts >/dev/null 2>&1 ||
	{ echo "openapi-typescript: failed"; tool openapi-typescript "$doc" --output schema.d.ts; rc=1; }
if tool tsc -p tsconfig.json; then
	echo "TypeScript client (openapi-typescript + openapi-fetch): client.ts type-checks"
else
	echo "TypeScript client: client.ts does not type-check against the generated types"
	rc=1
fi
exit $rc
