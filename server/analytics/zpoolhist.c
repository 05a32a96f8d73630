/* SPDX-License-Identifier: ISC */
/* The reader of `zpool iostat -w` and `-r` (zpoolhist.h). */
#define _GNU_SOURCE
#include "zpoolhist.h"
#include "cmdpoll.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_TIMEOUT_MS 10000 /* a zpool that hangs (a pool suspended) is killed */

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

static char *const latency_argv[] = {"zpool", "iostat", "-w", "-H", "-p", NULL};
static char *const size_argv[] = {"zpool", "iostat", "-r", "-H", "-p", NULL};

static int parse_step(int step, const char *out, double *reading, char *why, size_t len)
{
	return zpoolhist_parse(out, step == 0, (struct zpoolhist_counts *)reading, why, len);
}

static const struct cmdpoll_spec spec = {
    .what = "zpoolhist",
    .argv = {latency_argv, size_argv},
    .step_name = {"zpool iostat -w", "zpool iostat -r"},
    .n = sizeof(struct zpoolhist_counts) / sizeof(double),
    .timeout_ms = ROUND_TIMEOUT_MS,
    .parse = parse_step,
};

static struct cmdpoll *rounds;

/* --- the face */

void zpoolhist_init(struct event_base *base)
{
	rounds = cmdpoll_new(base, &spec);
}

void zpoolhist_shutdown(void)
{
	cmdpoll_free(rounds);
	rounds = NULL;
}

void zpoolhist_want(bool on)
{
	if (rounds)
		cmdpoll_want(rounds, on);
}

bool zpoolhist_take(void)
{
	return rounds && cmdpoll_take(rounds);
}

const struct zpoolhist_counts *zpoolhist_get(void)
{
	return rounds ? (const struct zpoolhist_counts *)cmdpoll_get(rounds) : NULL;
}

const char *zpoolhist_why(void)
{
	return rounds ? cmdpoll_why(rounds) : "not read yet";
}
