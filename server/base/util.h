/* SPDX-License-Identifier: ISC */
/* Small helpers that must never fail: allocation aborts, files are written atomically. */
#ifndef SPINDLE_UTIL_H
#define SPINDLE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

#define nitems(a) (sizeof(a) / sizeof((a)[0]))

/* The nice value of slow background work, helper threads and children alike: what they do
 * may spin (a KDF, a big parse, a command, a benchmark), and the loop must win the CPU
 * whenever it has work. */
#define UTIL_NICE_BACKGROUND 10

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* arr (n items of elem bytes, room for *cap) with room for one more: *cap doubles (16 at
 * first) when full. */
void *util_grow(void *arr, size_t *cap, size_t n, size_t elem);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable byte string; zero-initialised is empty. buf_add and buf_printf keep it
 * NUL-terminated (text); bytes written through buf_room need not be. Growth aborts like
 * xmalloc. */
struct buf {
	char *p;
	size_t len, cap;
};
/* Room for n more bytes (and the NUL): where they go. The caller then adds to len. */
char *buf_room(struct buf *b, size_t n);
void buf_add(struct buf *b, const void *data, size_t n);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct buf *b);

/* Start-up only: log and exit(1). Never in request paths. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Wall clock in seconds / milliseconds, and a monotonic clock in ns. */
int64_t util_now(void);
int64_t util_now_ms(void);
uint64_t util_mono_ns(void);

/* ISO 8601 UTC "2026-11-30T01:02:03Z" into buf (>= 21 bytes). */
char *util_iso8601(int64_t t, char *buf, size_t len);
/* Parse ISO 8601 UTC (Z or +00:00, seconds optional fraction ignored); -1 on error. */
int util_parse_iso8601(const char *s, int64_t *out);

/* Read a whole file (NUL-terminated, *len without the NUL); NULL with errno set. */
char *util_read_file(const char *path, size_t *len);
/* Write via temp file + fsync + rename, with the given mode; -1 with errno set. */
int util_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* mkdir -p with mode for the last component; -1 with errno set. */
int util_mkdirs(const char *path, mode_t mode);

/* Cryptographically random bytes (OpenSSL); -1 on failure. */
int util_random(void *buf, size_t len);
/* Lower-case hex of len bytes into out (2*len+1). */
void util_hex(const void *buf, size_t len, char *out);
/* Base64url without padding; out needs 4*((len+2)/3)+1. Returns length. */
size_t util_b64url(const void *buf, size_t len, char *out);
/* Strict base64url without padding: the canonical spelling only (unused trailing bits
 * zero). The decoded length, or -1 when s is not that or holds more than cap bytes. */
ssize_t util_b64url_decode(const char *s, size_t slen, unsigned char *out, size_t cap);

/* Callbacks that wait for something to be ready (a first reading, a fresh one), each run
 * once when it is. Zero-initialised is empty. */
struct waitlist {
	struct waitlist_entry {
		void (*cb)(void *arg);
		void *arg;
	} * e;
	size_t n, cap;
};
void waitlist_add(struct waitlist *w, void (*cb)(void *arg), void *arg);
/* Runs those waiting and forgets them; one that adds another adds it for the next run. */
void waitlist_run(struct waitlist *w);

/* Strict integer parsing: whole string, base 10, within [min,max]; -1 otherwise. */
int util_parse_ll(const char *s, long long min, long long max, long long *out);
/* Splits "ADDR:PORT" / "[v6]:PORT" (a numeric address) into host and port; -1 if
 * malformed. */
int util_split_addr(const char *s, char *host, size_t hostlen, unsigned *port);

#endif
