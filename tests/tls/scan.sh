#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# The TLS listener as a scanner sees it: testssl.sh (Debian's) against a spindled on a
# random loopback port with a throwaway state dir (its self-signed EC key), and openssl
# s_client offering each finite-field group alone, which testssl 3.0 does not try in
# TLS 1.3. Fails on anything testssl calls vulnerable (or potentially so), on obsolete
# (CBC) or weaker cipher categories offered, and on any ffdhe group accepted. The
# certificate's findings (self-signed, no CRL/OCSP) and HSTS are the box's to set and
# only printed.
#   tests/tls/scan.sh [SPINDLED]   (default: the build tree's server/spindled)
#   tests/tls/scan.sh --host HOST:PORT   scan a server already running (e.g. nginx)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v testssl >/dev/null || { echo "tls scan: no testssl (apt install testssl.sh)"; exit 1; }
tmp=$(mktemp -d)
pid=""
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ "${1:-}" = --host ]; then
	target=$2
else
	spindled=${1:-server/spindled}
	port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$spindled" --foreground --state-dir "$tmp/state" --listen "127.0.0.1:$port" \
		--webroot webroot >"$tmp/spindled.log" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do
		grep -q "listening on https://127.0.0.1:$port" "$tmp/spindled.log" && break
		sleep 0.1
	done
	grep -q "listening on https://127.0.0.1:$port" "$tmp/spindled.log" || { cat "$tmp/spindled.log"; exit 1; }
	target=127.0.0.1:$port
fi

start=$SECONDS
testssl --quiet --color 0 --warnings off --ip one --fast --jsonfile "$tmp/scan.json" "$target" \
	>"$tmp/scan.txt" 2>&1 || true
[ -s "$tmp/scan.json" ] || { cat "$tmp/scan.txt"; echo "tls scan: testssl wrote no findings"; exit 1; }

ffdhe=""
for group in ffdhe2048 ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
	if openssl s_client -connect "$target" -tls1_3 -groups "$group" -brief </dev/null 2>&1 |
		grep -q "CONNECTION ESTABLISHED"; then
		ffdhe+=" $group"
	fi
done

/usr/bin/python3 - "$tmp/scan.json" "$ffdhe" "$((SECONDS - start))" "$target" <<'PY'
import json, re, sys
findings, ffdhe, took, target = json.load(open(sys.argv[1])), sys.argv[2].split(), sys.argv[3], sys.argv[4]
by_id = {f["id"]: f for f in findings}
def get(i):
    return by_id.get(i, {}).get("finding", "-")
bad = []
for f in findings:
    text = f["finding"]
    if re.search(r"\bVULNERABLE\b|potentially vulnerable", text, re.I) and not re.search(r"not vulnerable", text, re.I):
        bad.append(f"{f['id']}: {text}")
# cipher categories weaker than AEAD: NULL, aNULL, EXPORT, LOW, 3DES/IDEA, and testssl's
# "Obsolete CBC ciphers" (cipherlist_AVERAGE)
for i in ("cipherlist_NULL", "cipherlist_aNULL", "cipherlist_EXPORT", "cipherlist_LOW",
          "cipherlist_3DES_IDEA", "cipherlist_AVERAGE"):
    if i in by_id and not get(i).startswith("not offered"):
        bad.append(f"{i} (obsolete or weak ciphers): {get(i)}")
for i in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
    if i in by_id and not get(i).startswith("not offered"):
        bad.append(f"{i}: {get(i)}")
if any("ffdhe" in f["finding"].lower() for f in findings):
    bad.append("testssl reports an ffdhe group")
if ffdhe:
    bad.append("TLS 1.3 accepts finite-field groups: " + " ".join(ffdhe))
print(f"tls scan of {target} (testssl {by_id.get('scanTime', {}).get('finding', '')} s, {took} s in all):")
for label, i in [("protocols", None), ("ciphers (FS)", "PFS_ciphers"), ("curves", "PFS_ECDHE_curves"),
                 ("obsolete CBC", "cipherlist_AVERAGE"), ("HSTS", "HSTS"),
                 ("certificate", "cert_chain_of_trust")]:
    if i is None:
        value = ", ".join(p for p in ("SSLv2", "SSLv3", "TLS1", "TLS1_1", "TLS1_2", "TLS1_3")
                          if get(p).startswith("offered"))
    else:
        value = get(i)
    print(f"  {label:14} {value}")
print(f"  {'ffdhe groups':14} {'accepted: ' + ' '.join(ffdhe) if ffdhe else 'all five refused'}")
vulns = [f for f in findings if f.get("cve") or f["id"] in ("heartbleed", "CCS", "ticketbleed", "ROBOT",
         "secure_client_renego", "CRIME_TLS", "BREACH", "POODLE_SSL", "SWEET32", "FREAK", "DROWN",
         "LOGJAM", "BEAST", "LUCKY13", "RC4")]
print(f"  {'vulnerabilities':14} {len(vulns)} checks, {sum(1 for f in vulns if f['severity'] not in ('OK', 'INFO', 'WARN'))} flagged")
if bad:
    print("tls scan: FAILED")
    for b in bad:
        print(f"  {b}")
    sys.exit(1)
print("tls scan: passed")
PY
