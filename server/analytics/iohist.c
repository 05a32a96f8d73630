/* SPDX-License-Identifier: ISC */
/* The reader of spindle-iolat's stream (server/iolat/helper.c says the protocol). */
#define _GNU_SOURCE
#include "iohist.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LINE_MAX_LEN   8192 /* a D line with every bucket set is about 2.7 KB */
#define STREAM_TIMEOUT 5    /* seconds without a line: the helper is stuck */
#define BACKOFF_MAX    30   /* seconds between tries to reconnect, at most */
#define PROBE_ABSENT   60   /* seconds before asking again when nothing listened */
#define PROBE_REFUSED  600  /* ... when the helper could not load its program */
#define WHY_LEN        256

enum phase { P_HELLO, P_STATUS, P_IDLE, P_SECOND };

/* A disk the collector counts: only those are kept, whatever names the helper sends. */
struct disk {
	char name[32];
	unsigned seen;           /* the last take that found it among the collector's disks */
	struct iohist_disk *buf; /* [2] once it had a line: [cur] filling, [cur ^ 1] taken */
	int cur;
	bool pending, taken; /* buf[cur] holds counts; buf[cur ^ 1] is what iohist_get gives */
};

static struct {
	struct event_base *base;
	char *path;
	struct bufferevent *bev;
	struct event *retry;
	enum phase phase;
	unsigned want; /* enum iohist_client bits */
	bool available, streaming, asked;
	char why[WHY_LEN];
	int backoff;
	struct hmap disks; /* the collector's disks, by name */
	unsigned takes;
	struct disk **pend, **took; /* the disks with pending counts, those taken last */
	size_t npend, pend_cap, ntook, took_cap;
	char keys[IOHIST_KINDS][IOHIST_MAX_BUCKETS][32];
} io;

_Static_assert(IOLAT_SIZE_BUCKETS <= IOHIST_MAX_BUCKETS && IOLAT_OFF_BUCKETS <= IOHIST_MAX_BUCKETS,
               "IOHIST_MAX_BUCKETS holds every kind's buckets");

static const unsigned nbuckets[IOHIST_KINDS] = {
    [IOHIST_LATENCY] = IOLAT_LAT_BUCKETS,
    [IOHIST_SIZE] = IOLAT_SIZE_BUCKETS,
    [IOHIST_OFFSET] = IOLAT_OFF_BUCKETS,
};

/* --- bucket keys */

/* "low-high", or "low+" for the last bucket, which is open above. */
static void range_key(char *buf, size_t len, uint64_t low, uint64_t high, bool last)
{
	if (last)
		snprintf(buf, len, "%llu+", (unsigned long long)low);
	else
		snprintf(buf, len, "%llu-%llu", (unsigned long long)low, (unsigned long long)high);
}

static void make_keys(void)
{
	for (unsigned i = 0; i < IOLAT_LAT_BUCKETS; i++)
		range_key(io.keys[IOHIST_LATENCY][i], sizeof(io.keys[0][0]), iolat_lat_low(i),
		          iolat_lat_low(i + 1), i == IOLAT_LAT_BUCKETS - 1);
	for (unsigned i = 0; i < IOLAT_SIZE_BUCKETS; i++)
		range_key(io.keys[IOHIST_SIZE][i], sizeof(io.keys[0][0]), iolat_size_low(i),
		          iolat_size_low(i + 1), i == IOLAT_SIZE_BUCKETS - 1);
	for (unsigned i = 0; i < IOLAT_OFF_BUCKETS; i++)
		range_key(io.keys[IOHIST_OFFSET][i], sizeof(io.keys[0][0]), i, i + 1, false);
}

unsigned iohist_buckets(enum iohist_kind k)
{
	return nbuckets[k];
}

static uint64_t *counts(struct iohist_disk *d, enum iohist_kind k, int dir)
{
	return k == IOHIST_LATENCY ? d->lat[dir] : k == IOHIST_SIZE ? d->size[dir] : d->off[dir];
}

const uint64_t *iohist_counts(const struct iohist_disk *d, enum iohist_kind k, int dir)
{
	return counts((struct iohist_disk *)d, k, dir);
}

const char *iohist_key(enum iohist_kind k, unsigned idx)
{
	return idx < nbuckets[k] ? io.keys[k][idx] : NULL;
}

/* --- the stream */

/* The disk's counts, or NULL when the collector does not count it: a device the helper
 * names and diskstats does not (or is filtered out) would cost memory and show nowhere. */
static struct disk *disk_get(const char *name)
{
	struct disk *d = hmap_get(&io.disks, name, strlen(name));
	if (d && !d->buf) {
		d->buf = xcalloc(2, sizeof(*d->buf));
		snprintf(d->buf[0].name, sizeof(d->buf[0].name), "%s", d->name);
		snprintf(d->buf[1].name, sizeof(d->buf[1].name), "%s", d->name);
	}
	return d;
}

static int bad(char *why, size_t len, const char *what, const char *line)
{
	snprintf(why, len, "the helper sent %s: '%.80s'", what, line);
	return -1;
}

/* "i:n i:n ..." up to the next section letter, into counts[n]. */
static int buckets(char **p, uint64_t *counts, unsigned n)
{
	int got = 0;
	while (**p == ' ' && (*p)[1] >= '0' && (*p)[1] <= '9') {
		char *end;
		errno = 0;
		unsigned long i = strtoul(*p + 1, &end, 10);
		if (*end != ':' || i >= n || errno)
			return -1;
		char *q = end + 1;
		if (*q < '0' || *q > '9')
			return -1;
		unsigned long long c = strtoull(q, &end, 10);
		if (errno || c > UINT32_MAX || (*end != ' ' && *end != '\0'))
			return -1;
		counts[i] += c;
		*p = end;
		got++;
	}
	return got ? 0 : -1;
}

static int disk_line(const char *line, char *why, size_t len)
{
	char name[32];
	const char *p = line + 2, *sp = strchr(p, ' ');
	if (!sp || sp == p || (size_t)(sp - p) >= sizeof(name))
		return bad(why, len, "a device line without a device name", line);
	memcpy(name, p, (size_t)(sp - p));
	name[sp - p] = '\0';
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("-_.:", *c)))
			return bad(why, len, "a device name of other characters", line);
	int dir = sp[1] == 'r' ? 0 : sp[1] == 'w' ? 1 : -1;
	if (dir < 0 || (sp[2] != ' ' && sp[2] != '\0'))
		return bad(why, len, "a direction other than r or w", line);
	/* Checked whole before any of it counts. */
	struct iohist_disk one;
	memset(&one, 0, sizeof(one));
	char *q = (char *)sp + 2;
	while (*q) {
		if (*q != ' ' || !q[1] || (q[2] != ' ' && q[2] != '\0'))
			return bad(why, len, "a malformed device line", line);
		static const char tags[] = "LSO"; /* the kinds', in enum iohist_kind's order */
		const char *kind = strchr(tags, q[1]);
		char tag = q[1];
		q += 2;
		int rc;
		if (kind) {
			enum iohist_kind k = (enum iohist_kind)(kind - tags);
			rc = buckets(&q, counts(&one, k, dir), nbuckets[k]);
		} else if (tag == 'U') {
			char *end;
			errno = 0;
			unsigned long long c = q[0] == ' ' && q[1] >= '0' && q[1] <= '9'
			                           ? strtoull(q + 1, &end, 10)
			                           : (end = q, 0);
			rc = end == q || errno || c > UINT32_MAX || (*end && *end != ' ') ? -1 : 0;
			one.untimed[dir] = c;
			q = end;
		} else
			rc = -1;
		if (rc < 0)
			return bad(why, len, "a malformed device line", line);
	}
	struct disk *d = disk_get(name);
	if (!d)
		return 0; /* not a disk the collector counts: nothing to keep */
	struct iohist_disk *to = &d->buf[d->cur];
	for (int k = 0; k < IOHIST_KINDS; k++) {
		uint64_t *dst = counts(to, (enum iohist_kind)k, dir);
		const uint64_t *src = counts(&one, (enum iohist_kind)k, dir);
		for (unsigned i = 0; i < nbuckets[k]; i++)
			dst[i] += src[i];
	}
	to->untimed[dir] += one.untimed[dir];
	if (!d->pending) {
		d->pending = true;
		io.pend = util_grow(io.pend, &io.pend_cap, io.npend, sizeof(*io.pend));
		io.pend[io.npend++] = d;
	}
	return 0;
}

static int helper_error(const char *reason, char *why, size_t len)
{
	snprintf(why, len, "%.200s", *reason ? reason : "it gave up and said no more");
	return 1;
}

/* 0; 1 when the helper said it cannot serve (why holds its reason); -1 on a broken
 * protocol. */
static int feed(const char *line, char *why, size_t len)
{
	char hello[96];
	switch (io.phase) {
	case P_HELLO:
		snprintf(hello, sizeof(hello), "spindle-iolat %d latency=%d size=%d offset=%d",
		         IOLAT_PROTO_VERSION, IOLAT_LAT_BUCKETS, IOLAT_SIZE_BUCKETS,
		         IOLAT_OFF_BUCKETS);
		if (strcmp(line, hello) != 0)
			return bad(why, len, "another protocol than this spindled's", line);
		io.phase = P_STATUS;
		return 0;
	case P_STATUS:
		if (strncmp(line, "ok ", 3) == 0 || strcmp(line, "ok") == 0) {
			io.phase = P_IDLE;
			io.available = true;
			io.why[0] = '\0';
			return 0;
		}
		if (strncmp(line, "error ", 6) == 0)
			return helper_error(line + 6, why, len);
		return bad(why, len, "neither ok nor error", line);
	case P_IDLE:
		if (line[0] == 'T' && line[1] == ' ') {
			io.phase = P_SECOND;
			return 0;
		}
		if (strncmp(line, "error ", 6) == 0)
			return helper_error(line + 6, why, len);
		return bad(why, len, "something else than a second's start", line);
	case P_SECOND:
		if (strcmp(line, "E") == 0) {
			io.phase = P_IDLE;
			return 0;
		}
		if (line[0] == 'D' && line[1] == ' ')
			return disk_line(line, why, len);
		return bad(why, len, "something else than a device line in a second", line);
	}
	return -1;
}

int iohist_feed_line(const char *line, char *why, size_t len)
{
	return feed(line, why, len);
}

/* --- the connection */

static void schedule(int seconds)
{
	struct timeval tv = {seconds, 0};
	evtimer_add(io.retry, &tv);
}

static void conn_close(const char *why, bool refused)
{
	if (io.bev)
		bufferevent_free(io.bev);
	io.bev = NULL;
	bool was = io.streaming;
	io.streaming = false;
	if (why) {
		if (io.available || !io.asked || strcmp(io.why, why) != 0)
			log_warn("iohist: %s", why);
		io.available = false;
		snprintf(io.why, sizeof(io.why), "%s", why);
	} else if (was) {
		log_info("iohist: the disks' I/O histograms stopped (no dataset needs them)");
	}
	io.asked = true;
	if (io.want) {
		schedule(io.backoff);
		io.backoff = io.backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : io.backoff * 2;
	} else if (!io.available) {
		schedule(refused ? PROBE_REFUSED : PROBE_ABSENT);
	}
}

static void on_read(struct bufferevent *bev, void *arg)
{
	(void)arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;
	size_t n;
	while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
		char why[WHY_LEN];
		enum phase before = io.phase;
		int rc;
		if (strlen(line) != n)
			rc = -1, snprintf(why, sizeof(why), "the helper sent a NUL byte");
		else
			rc = feed(line, why, sizeof(why));
		free(line);
		if (rc != 0) {
			char msg[WHY_LEN + 64];
			snprintf(msg, sizeof(msg), "%s%s", rc > 0 ? "spindle-iolat: " : "", why);
			conn_close(msg, rc > 0);
			return;
		}
		if (before == P_STATUS && io.phase == P_IDLE) {
			io.backoff = 1;
			if (!io.want) {
				conn_close(NULL, false); /* asked only whether it is there */
				return;
			}
			io.streaming = true;
			log_info("iohist: the disks' I/O histograms are streaming from %s",
			         io.path);
		}
	}
	if (evbuffer_get_length(in) > LINE_MAX_LEN)
		conn_close("the helper sent a line longer than 8 KB", false);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & BEV_EVENT_CONNECTED)
		return;
	char why[WHY_LEN];
	if (what & BEV_EVENT_TIMEOUT)
		snprintf(why, sizeof(why), "spindle-iolat at %s sent nothing for %d s", io.path,
		         STREAM_TIMEOUT);
	else if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "spindle-iolat at %s closed the connection", io.path);
	else
		snprintf(why, sizeof(why), "no spindle-iolat at %s (spindle-iolat.socket): %s",
		         io.path, strerror(EVUTIL_SOCKET_ERROR()));
	conn_close(why, false);
}

/* Non-blocking from the start: a local socket connects at once or not at all (a full
 * backlog is a failure to try again later, never a wait on the loop). */
static void conn_open(void)
{
	if (io.bev || !io.path)
		return;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", io.path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		char why[WHY_LEN];
		snprintf(why, sizeof(why), "no spindle-iolat at %s (spindle-iolat.socket): %s",
		         io.path, strerror(errno));
		if (fd >= 0)
			close(fd);
		conn_close(why, false);
		return;
	}
	io.bev = bufferevent_socket_new(io.base, fd, BEV_OPT_CLOSE_ON_FREE);
	io.phase = P_HELLO;
	bufferevent_setcb(io.bev, on_read, NULL, on_event, NULL);
	struct timeval tv = {STREAM_TIMEOUT, 0};
	bufferevent_set_timeouts(io.bev, &tv, NULL);
	bufferevent_enable(io.bev, EV_READ);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	conn_open();
}

/* --- the face */

int iohist_init(struct event_base *base, const char *path)
{
	make_keys();
	io.base = base;
	io.backoff = 1;
	if (!path || !*path) {
		snprintf(io.why, sizeof(io.why), "no eBPF helper is configured (--iolat-socket)");
		return 0;
	}
	struct sockaddr_un sa;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_err("iohist: --iolat-socket: %s is longer than a socket path may be", path);
		return -1;
	}
	io.path = xstrdup(path);
	snprintf(io.why, sizeof(io.why), "spindle-iolat at %s has not answered yet", path);
	io.retry = evtimer_new(base, on_retry, NULL);
	conn_open(); /* ask whether it is there */
	return 0;
}

static void disk_free(void *v)
{
	struct disk *d = v;
	free(d->buf);
	free(d);
}

void iohist_shutdown(void)
{
	if (io.bev)
		bufferevent_free(io.bev);
	if (io.retry)
		event_free(io.retry);
	hmap_clear(&io.disks, disk_free);
	free(io.pend);
	free(io.took);
	free(io.path);
	memset(&io, 0, sizeof(io));
}

bool iohist_available(char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "%s", io.available ? "" : io.why);
	return io.available;
}

void iohist_want(enum iohist_client who, bool on)
{
	unsigned was = io.want;
	io.want = on ? was | who : was & ~(unsigned)who;
	if (!was == !io.want)
		return;
	if (on) {
		io.backoff = 1;
		if (io.retry)
			evtimer_del(io.retry);
		conn_open();
	} else if (io.bev && io.phase != P_HELLO && io.phase != P_STATUS) {
		conn_close(NULL, false);
	}
}

static bool disk_gone(void *v, void *ctx)
{
	(void)ctx;
	struct disk *d = v;
	if (d->seen == io.takes)
		return false;
	disk_free(d);
	return true;
}

/* The disks kept become the collector's: those new are added, those gone freed. Called
 * with nothing pending (a disk gone may still be among those taken). */
static void disks_known(const struct disk_sample *disks, int ndisks)
{
	io.takes++;
	size_t found = 0;
	for (int i = 0; i < ndisks; i++) {
		const char *name = disks[i].name;
		size_t len = strnlen(name, sizeof(disks[i].name));
		if (len == sizeof(disks[i].name))
			continue; /* (never: the collector's names are terminated) */
		struct disk *d = hmap_get(&io.disks, name, len);
		if (!d) {
			d = xcalloc(1, sizeof(*d));
			memcpy(d->name, name, len);
			hmap_put(&io.disks, d->name, len, d);
		}
		if (d->seen != io.takes)
			found++;
		d->seen = io.takes;
	}
	if (found == io.disks.n)
		return;
	size_t n = 0;
	for (size_t i = 0; i < io.ntook; i++)
		if (io.took[i]->seen == io.takes)
			io.took[n++] = io.took[i];
	io.ntook = n;
	hmap_filter(&io.disks, disk_gone, NULL);
}

bool iohist_take(const struct disk_sample *disks, int ndisks)
{
	for (size_t i = 0; i < io.ntook; i++)
		io.took[i]->taken = false;
	io.ntook = 0;
	for (size_t i = 0; i < io.npend; i++) {
		struct disk *d = io.pend[i];
		d->cur ^= 1;
		struct iohist_disk *fresh = &d->buf[d->cur];
		char name[sizeof(fresh->name)];
		memcpy(name, fresh->name, sizeof(name));
		memset(fresh, 0, sizeof(*fresh));
		memcpy(fresh->name, name, sizeof(name));
		d->pending = false;
		d->taken = true;
		io.took = util_grow(io.took, &io.took_cap, io.ntook, sizeof(*io.took));
		io.took[io.ntook++] = d;
	}
	io.npend = 0;
	disks_known(disks, ndisks);
	return io.streaming;
}

const struct iohist_disk *iohist_get(const char *name)
{
	struct disk *d = hmap_get(&io.disks, name, strlen(name));
	return d && d->taken ? &d->buf[d->cur ^ 1] : NULL;
}
