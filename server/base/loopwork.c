/* SPDX-License-Identifier: ISC */
/* The loop's periodic work, timed: see loopwork.h. */
#define _GNU_SOURCE
#include "loopwork.h"

#include <time.h>

#define SLOTS 60 /* one a second: the last minute */

static struct {
	int64_t sec, wall_ns, cpu_ns; /* the longest stretch of second sec */
} slots[SLOTS];

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void loopwork_begin(struct loopwork *w)
{
	w->wall_ns = clock_ns(CLOCK_MONOTONIC);
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void loopwork_end(const struct loopwork *w)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	int64_t wall = now - w->wall_ns, cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - w->cpu_ns;
	int64_t sec = now / 1000000000;
	int k = (int)(sec % SLOTS);
	if (slots[k].sec != sec) {
		slots[k].sec = sec;
		slots[k].wall_ns = slots[k].cpu_ns = 0;
	}
	if (wall > slots[k].wall_ns)
		slots[k].wall_ns = wall;
	if (cpu > slots[k].cpu_ns)
		slots[k].cpu_ns = cpu;
}

void loopwork_max(int64_t *wall_ns, int64_t *cpu_ns)
{
	int64_t sec = clock_ns(CLOCK_MONOTONIC) / 1000000000;
	*wall_ns = *cpu_ns = 0;
	for (int k = 0; k < SLOTS; k++) {
		if (sec - slots[k].sec >= SLOTS)
			continue;
		if (slots[k].wall_ns > *wall_ns)
			*wall_ns = slots[k].wall_ns;
		if (slots[k].cpu_ns > *cpu_ns)
			*cpu_ns = slots[k].cpu_ns;
	}
}
