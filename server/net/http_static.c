/* SPDX-License-Identifier: ISC */
/* The browser UI's static files: resolved under the webroot without leaving it, opened
 * without blocking, answered with their type, validators and a gzip copy when there is
 * one. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

/* --- static files of the browser UI
 *
 * The webroot is served as it lies on disk: no index of it is kept, every request looks at
 * the file (a stat or two and an open; the body goes out by sendfile). The ETag comes from
 * the file's identity (inode, size, mtime in ns), so nothing is hashed on the loop. A
 * FILE.gz beside FILE, no older than it, is sent to clients that take gzip. */

/* What every static answer carries, 404s included: the page may load only our own files,
 * run no inline script or style, and be framed by no one. */
static const char static_csp[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'";

static const char *mime_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".json", "application/json"},
	    {".webmanifest", "application/manifest+json"},
	    {".map", "application/json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	    {".woff2", "font/woff2"},
	    {".txt", "text/plain; charset=utf-8"},
	};
	const char *base = strrchr(path, '/');
	const char *dot = strrchr(base ? base : path, '.');
	for (size_t i = 0; dot && i < nitems(types); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

/* A name that carries its version or content hash never changes content, so a browser may
 * keep it for a year without asking: "uplot-1.6.32.min.js" (a -<digits>.<digits> after a
 * name part) or "app.0123abcd.js" (a dot-separated part of 8 or more hex digits, neither
 * the first nor the extension). Everything else is revalidated on every use (no-cache). */
static bool static_versioned(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *p = strchr(base, '-'); p; p = strchr(p + 1, '-')) {
		size_t major = strspn(p + 1, "0123456789");
		if (p > base && major && p[1 + major] == '.' &&
		    strspn(p + 2 + major, "0123456789") > 0)
			return true;
	}
	const char *first = strchr(base, '.'), *last = strrchr(base, '.');
	for (const char *p = first; p && p < last; p = strchr(p + 1, '.')) {
		size_t n = strcspn(p + 1, ".");
		if (n >= 8 && strspn(p + 1, "0123456789abcdefABCDEF") == n)
			return true;
	}
	return false;
}

/* Decoded path segments that are never served, wherever they are: hidden names (".git",
 * ".env", and "." and ".." with them), and what the build of the served tree keeps beside
 * it in a development checkout (npm's package files and its node_modules). */
static bool static_denied(const char *decoded)
{
	static const char *const names[] = {"node_modules", "package.json", "package-lock.json"};
	for (const char *p = decoded; *p;) {
		p += strspn(p, "/");
		size_t n = strcspn(p, "/");
		if (n && p[0] == '.')
			return true;
		for (size_t i = 0; i < nitems(names); i++)
			if (n == strlen(names[i]) && strncmp(p, names[i], n) == 0)
				return true;
		p += n;
	}
	return false;
}

static void static_headers(struct request *r)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "Content-Security-Policy", static_csp);
	evhttp_add_header(h, "Referrer-Policy", "no-referrer"); /* nosniff: every answer's */
}

static void static_not_found(struct request *r, const char *path)
{
	static_headers(r);
	reply_error(r, ERR_NOT_FOUND, "path: %.200s: no such resource", path);
}

/* realpath() of want when it is a regular file inside the webroot: the open fd, its stat
 * and real path; -1 otherwise. realpath keeps a symlink from leading out of the tree. */
static int static_open(const struct http_server *srv, const char *want, char real[PATH_MAX],
                       struct stat *st)
{
	size_t rootlen = strlen(srv->webroot_real);
	if (!realpath(want, real) || strncmp(real, srv->webroot_real, rootlen) != 0 ||
	    real[rootlen] != '/')
		return -1;
	/* O_NONBLOCK: a FIFO placed in the tree opens at once (and is then refused as no
	 * regular file) instead of holding the loop until someone writes it */
	int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool mtime_before(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec < b->st_mtim.tv_sec ||
	       (a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec < b->st_mtim.tv_nsec);
}

void serve_static(struct request *r, const char *path)
{
	struct http_server *srv = r->srv;
	if (r->method != METHOD_GET && r->method != METHOD_HEAD) {
		static_headers(r);
		reply_header(r, "Allow", "GET, HEAD");
		reply_error(r, ERR_METHOD, "method: %s serves GET and HEAD only", path);
		return;
	}
	/* An encoded slash or backslash names no file of ours: refused before decoding, so
	 * that a decoded path has exactly the segments the client wrote. */
	size_t dlen = 0;
	char *decoded = strcasestr(path, "%2f") || strcasestr(path, "%5c")
	                    ? NULL
	                    : evhttp_uridecode(path, 0, &dlen);
	char want[PATH_MAX], real[PATH_MAX], gzreal[PATH_MAX];
	bool ok = decoded && srv->webroot_real && strlen(decoded) == dlen && /* no NUL */
	          !static_denied(decoded);
	if (ok) {
		const char *rel = strcmp(decoded, "/") == 0 ? "/index.html" : decoded;
		ok = snprintf(want, sizeof(want), "%s%s", srv->webroot_real, rel) <
		     (int)sizeof(want) - 3;
	}
	free(decoded);
	struct stat st;
	int fd = ok ? static_open(srv, want, real, &st) : -1;
	if (fd < 0) {
		static_not_found(r, path);
		return;
	}
	/* The precompressed sibling: a regular file in the tree, not older than the file. */
	struct stat gst;
	strcat(want, ".gz");
	int gfd = static_open(srv, want, gzreal, &gst);
	if (gfd >= 0 && mtime_before(&gst, &st)) {
		close(gfd);
		gfd = -1;
	}
	bool sibling = gfd >= 0, gz = sibling && request_accepts_gzip(r);
	if (sibling && !gz) {
		close(gfd);
	} else if (gz) {
		close(fd);
		fd = gfd;
	}
	const struct stat *sent = gz ? &gst : &st;
	char etag[96];
	snprintf(etag, sizeof(etag), "\"%llx-%llx-%llx%s\"", (unsigned long long)sent->st_ino,
	         (unsigned long long)sent->st_size,
	         (unsigned long long)sent->st_mtim.tv_sec * 1000000000ULL +
	             (unsigned long long)sent->st_mtim.tv_nsec,
	         gz ? "-gz" : "");

	static_headers(r);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "ETag", etag);
	evhttp_add_header(h, "Cache-Control",
	                  static_versioned(real) ? "public, max-age=31536000, immutable"
	                                         : "no-cache");
	if (sibling)
		evhttp_add_header(h, "Vary", "Accept-Encoding");
	if (request_etag_matches(r, etag)) {
		close(fd);
		reply_finish(r, 304, NULL);
		return;
	}
	/* HEAD too: the file is only attached (sendfile), never read, and reply_finish() sends its
	 * length without the body. */
	struct evbuffer *buf = evbuffer_new();
	if (sent->st_size > 0) {
		if (evbuffer_add_file(buf, fd, 0, sent->st_size) < 0) {
			evbuffer_free(buf);
			reply_error(r, ERR_INTERNAL, "path: cannot read");
			return;
		}
	} else {
		close(fd);
	}
	evhttp_add_header(h, "Content-Type", mime_type(real));
	if (gz)
		evhttp_add_header(h, "Content-Encoding", "gzip");
	reply_finish(r, 200, buf);
	evbuffer_free(buf);
}
