/* SPDX-License-Identifier: ISC */
/* Small helpers that must never fail. */
#define _GNU_SOURCE
#include "util.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

static void oom(size_t n)
{
	log_err("out of memory (%zu bytes)", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

void *util_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return arr;
	/* Doubling cannot overflow: the n items already fit in the address space. */
	*cap = *cap ? *cap * 2 : 16;
	return xrealloc(arr, *cap * elem);
}

char *buf_room(struct buf *b, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	return b->p + b->len;
}

void buf_add(struct buf *b, const void *data, size_t n)
{
	memcpy(buf_room(b, n), data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = b->cap > b->len ? b->cap - b->len : 0;
		va_start(ap, fmt);
		int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) { /* it fitted, with its NUL */
			b->len += (size_t)n;
			return;
		}
		buf_room(b, (size_t)n); /* then once more */
	}
}

void buf_free(struct buf *b)
{
	free(b->p);
	*b = (struct buf){0};
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		oom(strlen(s));
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		oom(n);
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		oom(strlen(fmt));
	va_end(ap);
	return s;
}

void fatal(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_err("fatal: %s", buf);
	exit(1);
}

int64_t util_now(void)
{
	return (int64_t)time(NULL);
}

int64_t util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t util_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *util_iso8601(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		if (len)
			buf[0] = '\0';
	}
	return buf;
}

int util_parse_iso8601(const char *s, int64_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *p = strptime(s, "%Y-%m-%dT%H:%M", &tm);
	if (!p)
		return -1;
	if (*p == ':') {
		p = strptime(p, ":%S", &tm);
		if (!p)
			return -1;
		if (*p == '.') {
			p++;
			if (*p < '0' || *p > '9')
				return -1;
			while (*p >= '0' && *p <= '9')
				p++;
		}
	}
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0 && strcmp(p, "") != 0)
		return -1;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = (int64_t)t;
	return 0;
}

char *util_read_file(const char *path, size_t *len)
{
	/* O_NONBLOCK: a FIFO where a file should be reads as empty (or fails), never hangs */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	const char *p = data;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto fail;
	return 0;
fail : {
	int e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = e;
	return -1;
}
}

int util_mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int util_random(void *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

void util_hex(const void *buf, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = buf;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * len] = '\0';
}

size_t util_b64url(const void *buf, size_t len, char *out)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const unsigned char *b = buf;
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)b[i] << 16;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
	}
	out[o] = '\0';
	return o;
}

ssize_t util_b64url_decode(const char *s, size_t slen, unsigned char *out, size_t cap)
{
	if (slen % 4 == 1) /* no number of bytes encodes to this length */
		return -1;
	size_t n = slen / 4 * 3 + (slen % 4 ? slen % 4 - 1 : 0);
	if (n > cap)
		return -1;
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < slen; i++) {
		unsigned char c = (unsigned char)s[i];
		uint32_t v;
		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '-')
			v = 62;
		else if (c == '_')
			v = 63;
		else
			return -1;
		acc = (acc << 6) | v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return acc == 0 ? (ssize_t)o : -1; /* unused trailing bits zero: one spelling each */
}

int util_parse_ll(const char *s, long long min, long long max, long long *out)
{
	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int util_split_addr(const char *s, char *host, size_t hostlen, unsigned *port)
{
	const char *colon;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -1;
		if ((size_t)(close - s - 1) >= hostlen)
			return -1;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= hostlen || memchr(s, ':', (size_t)(colon - s)))
			return -1;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	long long p;
	if (util_parse_ll(colon + 1, 0, 65535, &p) < 0)
		return -1;
	unsigned char buf[16];
	if (inet_pton(AF_INET, host, buf) != 1 && inet_pton(AF_INET6, host, buf) != 1)
		return -1;
	*port = (unsigned)p;
	return 0;
}

void waitlist_add(struct waitlist *w, void (*cb)(void *arg), void *arg)
{
	w->e = util_grow(w->e, &w->cap, w->n, sizeof(*w->e));
	w->e[w->n++] = (struct waitlist_entry){cb, arg};
}

void waitlist_run(struct waitlist *w)
{
	struct waitlist now = *w;
	*w = (struct waitlist){0};
	for (size_t i = 0; i < now.n; i++)
		now.e[i].cb(now.e[i].arg);
	free(now.e);
}
