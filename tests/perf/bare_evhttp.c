/* SPDX-License-Identifier: ISC */
/* The floor under spindled for tests/perf/http.sh: libevent's evhttp answering one file's
 * bytes to every request, with nothing else on the request path (no routing, no token, no
 * JSON). Over TLS it is set up as spindled is (bufferevent_openssl, TLS 1.2 or newer,
 * TCP_NODELAY on the listener, each answer joined into one TLS record), so the difference
 * between the two is spindled's own work.
 * Usage: bare_evhttp PORT FILE [CERT KEY]   (listens on 127.0.0.1; CERT KEY: HTTPS) */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>

static char *body;
static size_t body_len;

static void answer(struct evhttp_request *req, void *arg)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct evbuffer *buf = evbuffer_new();
	evbuffer_add_reference(buf, body, body_len, NULL, NULL);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "application/json");
	evhttp_send_reply(req, 200, "OK", buf);
	evbuffer_free(buf);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	if (bev && bufferevent_openssl_get_ssl(bev)) {
		struct evbuffer *out = bufferevent_get_output(bev);
		size_t len = evbuffer_get_length(out);
		evbuffer_pullup(out, (ev_ssize_t)(len < 16384 ? len : 16384));
	}
}

static struct bufferevent *tls_bev(struct event_base *base, void *arg)
{
	return bufferevent_openssl_socket_new(base, -1, SSL_new(arg), BUFFEREVENT_SSL_ACCEPTING,
	                                      BEV_OPT_CLOSE_ON_FREE);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: %s PORT FILE [CERT KEY]\n", argv[0]);
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0) {
		perror(argv[2]);
		return 1;
	}
	body_len = (size_t)ftell(f);
	rewind(f);
	body = malloc(body_len ? body_len : 1);
	if (!body || fread(body, 1, body_len, f) != body_len) {
		perror(argv[2]);
		return 1;
	}
	fclose(f);
	signal(SIGPIPE, SIG_IGN);

	struct event_base *base = event_base_new();
	struct evhttp *http = evhttp_new(base);
	evhttp_set_gencb(http, answer, NULL);
	if (argc == 5) {
		SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
		SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
		SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
		if (SSL_CTX_use_certificate_chain_file(ctx, argv[3]) != 1 ||
		    SSL_CTX_use_PrivateKey_file(ctx, argv[4], SSL_FILETYPE_PEM) != 1) {
			fprintf(stderr, "cannot load %s and %s\n", argv[3], argv[4]);
			return 1;
		}
		evhttp_set_bevcb(http, tls_bev, ctx);
	}
	struct evhttp_bound_socket *sock =
	    evhttp_bind_socket_with_handle(http, "127.0.0.1", (ev_uint16_t)atoi(argv[1]));
	if (!sock) {
		fprintf(stderr, "cannot listen on 127.0.0.1:%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int one = 1;
	setsockopt(evhttp_bound_socket_get_fd(sock), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	event_base_dispatch(base);
	return 0;
}
