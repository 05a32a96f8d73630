# SPDX-License-Identifier: ISC
# Shared by the benchmark scripts (source it after setting TMP, a scratch dir of the run's):
# stopping processes, free loopback ports, a spindled on them with an admin token, and
# nginx (one worker) serving a directory. The caller's EXIT trap calls perf_cleanup.
# shellcheck shell=bash

spindled_pid=
nginx_pid=

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

stop() { # pid: TERM, up to 5 s of grace, then KILL
	local pid=$1 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# perf_cleanup RC: stops what lib.sh started, shows spindled's log on failure, removes TMP.
perf_cleanup() {
	local rc=$1
	stop "$nginx_pid"
	stop "$spindled_pid"
	if [ "$rc" -ne 0 ] && [ -s "$TMP/spindled.log" ]; then
		echo "--- spindled log (last 20 lines) ---" >&2
		tail -n 20 "$TMP/spindled.log" >&2
	fi
	rm -rf "$TMP"
}

# free_port VAR: a loopback port nothing listens on and not handed out before in this run.
used_ports=" "
free_port() {
	local p i
	for i in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		case "$used_ports" in *" $p "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			used_ports="$used_ports$p "
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	die "no free port"
}

# spindled_start [FLAG...]: $SPINDLED on two free loopback ports with the state in
# $TMP/state and its log in $TMP/spindled.log; waits for /health, then logs in as admin.
# Sets spindled_pid, https_port, http_port, base (plain HTTP) and token.
spindled_start() {
	local i pw
	free_port https_port
	free_port http_port
	mkdir -p "$TMP/state"
	"$SPINDLED" --foreground --state-dir "$TMP/state" \
		--listen "127.0.0.1:$https_port" --http-listen "127.0.0.1:$http_port" \
		--kdf-iterations 1000 --log-level warn "$@" >"$TMP/spindled.log" 2>&1 &
	spindled_pid=$!
	base="http://127.0.0.1:$http_port"
	for i in $(seq 100); do
		kill -0 "$spindled_pid" 2>/dev/null || die "spindled exited at start"
		curl -fsS -o /dev/null --max-time 2 "$base/api/system/v1/health" 2>/dev/null && break
		[ "$i" -eq 100 ] && die "spindled did not answer /api/system/v1/health within 10 s"
		sleep 0.1
	done
	[ -s "$TMP/state/initial-admin-password" ] || die "no $TMP/state/initial-admin-password"
	pw=$(cat "$TMP/state/initial-admin-password")
	curl -ksS --max-time 10 -o "$TMP/login.json" -D "$TMP/login.headers" -X POST \
		-H "X-Auth-User: admin" -H "X-Auth-Key: $pw" \
		"https://127.0.0.1:$https_port/api/access/v1" || die "login request failed"
	token=$(awk 'tolower($1) == "x-auth-session:" { print $2 }' "$TMP/login.headers" | tr -d '\r')
	[ -n "$token" ] || {
		cat "$TMP/login.headers" "$TMP/login.json" >&2
		die "login gave no X-Auth-Session"
	}
}

# nginx_start FILE [CERT KEY]: nginx (one worker, keep-alive, no access log) serving
# $TMP/www on a free loopback port, once it serves FILE from there; with CERT and KEY
# also over HTTPS on a second port: TLS 1.2 and 1.3 (spindled's), nginx's other TLS
# defaults (session tickets on).
# Sets nginx_pid, nginx_port and nginx_tls_port (empty without a certificate).
nginx_start() {
	local i url tls=""
	free_port nginx_port
	nginx_tls_port=
	if [ $# -ge 3 ]; then
		free_port nginx_tls_port
		# the same TLS profile as spindled's (server/net/tls.c), Mozilla's "intermediate" for
		# nginx: TLS 1.2 and 1.3, X25519/P-256/P-384, ECDHE with AEAD suites only
		tls="listen 127.0.0.1:$nginx_tls_port ssl; ssl_protocols TLSv1.2 TLSv1.3;
		ssl_ecdh_curve X25519:prime256v1:secp384r1;
		ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305;
		ssl_certificate $2; ssl_certificate_key $3;"
	fi
	mkdir -p "$TMP/nginx"
	# Running as root, nginx's worker is "nobody": let it reach the files, and nothing else.
	chmod 711 "$TMP"
	chmod 755 "$TMP/www"
	chmod 644 "$TMP"/www/*
	cat >"$TMP/nginx.conf" <<NGINX
worker_processes 1;
master_process on;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	default_type application/json;
	keepalive_requests 1000000;
	client_body_temp_path $TMP/nginx/client_body;
	proxy_temp_path $TMP/nginx/proxy;
	fastcgi_temp_path $TMP/nginx/fastcgi;
	uwsgi_temp_path $TMP/nginx/uwsgi;
	scgi_temp_path $TMP/nginx/scgi;
	server {
		listen 127.0.0.1:$nginx_port;
		$tls
		root $TMP/www;
	}
}
NGINX
	nginx -e "$TMP/nginx/error.log" -p "$TMP/nginx" -c "$TMP/nginx.conf" \
		2>"$TMP/nginx/stderr.log" &
	nginx_pid=$!
	url="http://127.0.0.1:$nginx_port/$1"
	for i in $(seq 50); do
		kill -0 "$nginx_pid" 2>/dev/null || { cat "$TMP"/nginx/*.log >&2; die "nginx exited"; }
		curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$TMP"/nginx/*.log >&2
	die "nginx did not serve $url"
}
