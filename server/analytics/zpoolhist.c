/* SPDX-License-Identifier: ISC */
/* The reader of `zpool iostat -w` and `-r` (zpoolhist.h). */
#define _GNU_SOURCE
#include "zpoolhist.h"
#include "base/child.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUND_TIMEOUT_MS 10000 /* a zpool that hangs (a pool suspended) is killed */
#define WHY_LEN          256

static struct {
	bool want, running, stopping;
	struct zpoolhist_counts *reading; /* the round under way: latency, then sizes */
	struct zpoolhist_counts *last;    /* the last whole round, cumulative */
	int64_t last_ms, reading_ms;      /* when their zpool iostat -w ended (monotonic) */
	struct zpoolhist_counts *pending; /* the newest rates, not taken yet */
	struct zpoolhist_counts *taken;   /* what zpoolhist_get gives */
	bool have_pending, have_taken;
	char why[WHY_LEN];
} zh;

/* --- parsing */

/* j for a label of 2^j (size) or 2^(j+1) - 1 (latency); -1 when it is neither. */
static int label_bucket(uint64_t label, bool latency)
{
	uint64_t v = latency ? label + 1 : label;
	if (v == 0 || (v & (v - 1)))
		return -1;
	int j = __builtin_ctzll(v) - (latency ? 1 : 0);
	int n = latency ? ZPOOLHIST_LAT_BUCKETS : ZPOOLHIST_SIZE_BUCKETS;
	return j >= 0 && j < n ? j : -1;
}

int zpoolhist_parse(const char *text, bool latency, struct zpoolhist_counts *out, char *why,
                    size_t len)
{
	for (const char *l = text; *l;) {
		const char *eol = strchr(l, '\n');
		size_t n = eol ? (size_t)(eol - l) : strlen(l);
		const char *tab = memchr(l, '\t', n);
		if (n && tab) {
			char *end;
			errno = 0;
			uint64_t label = strtoull(l, &end, 10);
			int j = end == tab && !errno ? label_bucket(label, latency) : -1;
			uint64_t v[8];
			const char *p = tab;
			int got = 0;
			while (j >= 0 && got < 8 && p < l + n && *p == '\t') {
				errno = 0;
				v[got] = strtoull(p + 1, &end, 10);
				if (end == p + 1 || errno || (end < l + n && *end != '\t'))
					break;
				got++;
				p = end;
			}
			if (j < 0 || got < 8) {
				snprintf(why, len, "zpool iostat %s: not a histogram line: '%.*s'",
				         latency ? "-w" : "-r", (int)(n > 80 ? 80 : n), l);
				return -1;
			}
			if (latency)
				for (int w = 0; w < ZH_WAITS; w++)
					for (int d = 0; d < 2; d++)
						out->lat[w][d][j] += (double)v[w * 2 + d];
			else /* sync_ind_r sync_agg_r sync_ind_w sync_agg_w, then async's alike */
				for (int d = 0; d < 2; d++)
					out->size[d][j] +=
					    (double)(v[d * 2] + v[d * 2 + 1] + v[4 + d * 2] +
					             v[4 + d * 2 + 1]);
		} /* else a pool's name (or an empty line) */
		l = eol ? eol + 1 : l + n;
	}
	return 0;
}

void zpoolhist_key(bool latency, unsigned idx, char *buf, size_t len)
{
	unsigned last = latency ? ZPOOLHIST_LAT_BUCKETS - 1 : ZPOOLHIST_SIZE_BUCKETS - 1;
	unsigned long long low = idx == 0 ? 0 : 1ull << idx;
	if (idx >= last)
		snprintf(buf, len, "%llu+", 1ull << last);
	else
		snprintf(buf, len, "%llu-%llu", low, 1ull << (idx + 1));
}

/* --- rounds */

/* The round is whole: its rates against the last round's, over the time between them. */
static void round_done(void)
{
	zh.running = false;
	if (zh.last) {
		double secs = (double)(zh.reading_ms - zh.last_ms) / 1000;
		if (secs > 0) {
			const double *a = (const double *)zh.last, *b = (const double *)zh.reading;
			double *r = (double *)zh.pending;
			size_t n = sizeof(*zh.pending) / sizeof(double);
			/* a pool exported meanwhile takes its counts along: none goes below 0 */
			for (size_t i = 0; i < n; i++)
				r[i] = b[i] >= a[i] ? (b[i] - a[i]) / secs : 0;
			zh.have_pending = true;
		}
	} else {
		zh.last = xcalloc(1, sizeof(*zh.last));
	}
	memcpy(zh.last, zh.reading, sizeof(*zh.last));
	zh.last_ms = zh.reading_ms;
	zh.why[0] = '\0';
}

static void round_failed(const char *what, const struct child_result *res)
{
	zh.running = false;
	child_result_why(res, what, ROUND_TIMEOUT_MS, zh.why, sizeof(zh.why));
	log_debug("zpoolhist: %s", zh.why);
}

static bool spawn(const char *flag, void (*on_exit)(void *, const struct child_result *))
{
	char *argv[] = {"zpool", "iostat", (char *)flag, "-H", "-p", NULL};
	struct child_opts o = {
	    .argv = argv,
	    .timeout_ms = ROUND_TIMEOUT_MS,
	    .kill_grace_ms = 1000,
	    .max_output = 1 << 20,
	    .on_exit = on_exit,
	};
	char err[256];
	if (child_spawn(&o, err, sizeof(err)))
		return true;
	snprintf(zh.why, sizeof(zh.why), "zpool: %.200s", err);
	zh.running = false;
	return false;
}

static bool ended_well(const char *what, const struct child_result *res, bool latency)
{
	if (!res->exited || res->exit_code != 0) {
		round_failed(what, res);
		return false;
	}
	if (zpoolhist_parse(res->out ? res->out : "", latency, zh.reading, zh.why, sizeof(zh.why)) <
	    0) {
		zh.running = false;
		log_warn("zpoolhist: %s", zh.why);
		return false;
	}
	return true;
}

static void sizes_exit(void *arg, const struct child_result *res)
{
	if (zh.stopping)
		return;
	if (ended_well("zpool iostat -r", res, false))
		round_done();
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void latency_exit(void *arg, const struct child_result *res)
{
	if (zh.stopping)
		return;
	/* the counts were read just before zpool printed them and ended: a round that starts
	 * late or runs long (a busy box) is divided by the time that really passed */
	zh.reading_ms = now_ms();
	if (ended_well("zpool iostat -w", res, true))
		spawn("-r", sizes_exit);
}

static void round_start(void)
{
	if (!zh.reading)
		zh.reading = xcalloc(1, sizeof(*zh.reading));
	memset(zh.reading, 0, sizeof(*zh.reading));
	zh.running = true;
	spawn("-w", latency_exit);
}

/* --- the face */

void zpoolhist_init(struct event_base *base)
{
	(void)base;
	zh.pending = xcalloc(1, sizeof(*zh.pending));
	zh.taken = xcalloc(1, sizeof(*zh.taken));
	snprintf(zh.why, sizeof(zh.why), "not read yet");
}

void zpoolhist_shutdown(void)
{
	/* children still running are ended by child_shutdown(); their on_exit does nothing */
	zh.stopping = true;
	free(zh.reading);
	free(zh.last);
	free(zh.pending);
	free(zh.taken);
	zh.reading = zh.last = zh.pending = zh.taken = NULL;
	zh.have_pending = zh.have_taken = false;
}

void zpoolhist_want(bool on)
{
	if (on == zh.want)
		return;
	zh.want = on;
	if (!on) { /* a later start compares with nothing older than itself */
		free(zh.last);
		zh.last = NULL;
		zh.have_pending = false;
	}
}

bool zpoolhist_take(void)
{
	zh.have_taken = false;
	if (!zh.want || zh.stopping || !zh.pending)
		return false;
	if (zh.have_pending) {
		struct zpoolhist_counts *old = zh.taken;
		zh.taken = zh.pending;
		zh.pending = old;
		zh.have_pending = false;
		zh.have_taken = true;
	}
	if (!zh.running)
		round_start();
	return zh.have_taken;
}

const struct zpoolhist_counts *zpoolhist_get(void)
{
	return zh.have_taken ? zh.taken : NULL;
}

const char *zpoolhist_why(void)
{
	return zh.why;
}
