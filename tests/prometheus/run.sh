#!/usr/bin/env bash
# SPDX-License-Identifier: ISC
# The fleet's Prometheus files (packaging/prometheus): promtool checks the scrape config
# and the rules and runs the rules' unit tests; then Debian's prometheus scrapes two
# spindled on loopback with them (pytest). Exits non-zero on the first failure.
#   tests/prometheus/run.sh        (from anywhere; SPINDLED=... as for tests/api)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ship=$repo/packaging/prometheus
cd "$repo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step() { printf '\n-- %s\n' "$*"; }

# The config as installed (/etc/prometheus/...), under a temporary directory, with
# stand-ins for the boxes' token and certificate files it names.
step "promtool check config packaging/prometheus/prometheus.yml"
sed "s#/etc/prometheus#$tmp#g" "$ship/prometheus.yml" >"$tmp/prometheus.yml"
mkdir -p "$tmp/spindle" "$tmp/targets"
cp "$ship"/targets/*.yml "$tmp/targets/"
cp "$ship"/*.rules.yml "$tmp/"
grep -oE "$tmp/spindle/[^ ]+\.(token|crt)" "$tmp/prometheus.yml" | xargs touch
promtool check config "$tmp/prometheus.yml"

step "promtool check rules"
promtool check rules "$ship"/*.rules.yml

step "promtool test rules (every alert fires and stays quiet; the recorded figures)"
promtool test rules "$repo"/tests/prometheus/rules_test.yml "$repo"/tests/prometheus/rules_day_test.yml

step "a real prometheus scraping two spindled over HTTPS with tokens (pytest)"
/usr/bin/python3 -m pytest -q tests/prometheus

printf '\nprometheus: config, rules, rule tests and the live fleet test passed\n'
