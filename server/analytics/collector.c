/* SPDX-License-Identifier: ISC */
/* The collector: a one-shot timer re-armed each second from CLOCK_REALTIME, so every
 * tick lands just after a second boundary however long the last one took. Each tick
 * reads the counters (procfs.c), turns the last two readings into a box_sample, has the
 * registered fill function add the running benchmark jobs' newest second (for the live
 * bench datasets) and, on a turn of the loop of its own, hands it to the subscribers (the
 * analytics datasets, the dashboard, events, /metrics). */
#define _GNU_SOURCE
#include "collector.h"
#include "base/log.h"
#include "base/loopwork.h"
#include "hardware/problems.h"
#include "iohist.h"
#include "zpoolhist.h"
#include "smbstat.h"
#include "procfs.h"
#include "base/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

struct collector_sub {
	collector_tick_fn fn;
	void *arg;
};

static struct {
	struct event_base *base;
	struct event *timer;
	struct event *hand_over; /* a turn of the loop after a reading: collector_hand_over */
	bool due;                /* the newest sample is still to be handed over */
	struct procfs *procfs;
	struct procfs_snapshot snap[2];
	int cur;        /* snap[cur] is the newest reading */
	bool have_prev; /* snap[cur] holds a reading taken at prev_t */
	int64_t prev_t;
	struct box_sample sample;
	bool have_sample;
	int disks_cap, nics_cap, cpus_cap, lio_cap;
	uint64_t seq;
	struct collector_sub *subs;
	size_t nsubs, subs_cap;
	bool notifying;
	collector_fill_fn fill;
	void *fill_arg;
	bool want_pools, want_lio; /* (the datasets start first: kept until procfs is made) */
} collector;

static void collector_notify(void)
{
	collector.notifying = true;
	for (size_t i = 0; i < collector.nsubs; i++)
		if (collector.subs[i].fn)
			collector.subs[i].fn(collector.subs[i].arg, &collector.sample);
	collector.notifying = false;
	/* Unsubscribed during the walk: only marked then, removed now. */
	size_t n = 0;
	for (size_t i = 0; i < collector.nsubs; i++)
		if (collector.subs[i].fn)
			collector.subs[n++] = collector.subs[i];
	collector.nsubs = n;
}

/* Reads the counters and makes the second t's sample: true if there is one to hand to the
 * subscribers (collector_hand_over). */
static bool collector_read_at(int64_t t)
{
	struct procfs_snapshot *prev = &collector.snap[collector.cur],
	                       *cur = &collector.snap[collector.cur ^ 1];

	procfs_read(collector.procfs, cur);
	problems_collector(cur->unread);
	if (collector.have_prev && t <= collector.prev_t)
		log_warn("collector: the clock went back from %lld to %lld; starting afresh",
		         (long long)collector.prev_t, (long long)t);
	if (collector.have_prev && t > collector.prev_t) {
		if (cur->ndisks > collector.disks_cap) {
			collector.disks_cap = cur->ndisks;
			collector.sample.disks =
			    xrealloc(collector.sample.disks,
			             (size_t)collector.disks_cap * sizeof(*collector.sample.disks));
		}
		if (cur->ncpus > collector.cpus_cap) {
			collector.cpus_cap = cur->ncpus;
			collector.sample.cpus =
			    xrealloc(collector.sample.cpus,
			             (size_t)collector.cpus_cap * sizeof(*collector.sample.cpus));
		}
		if (cur->nnics > collector.nics_cap) {
			collector.nics_cap = cur->nnics;
			collector.sample.nics =
			    xrealloc(collector.sample.nics,
			             (size_t)collector.nics_cap * sizeof(*collector.sample.nics));
		}
		if (cur->nlio > collector.lio_cap) {
			collector.lio_cap = cur->nlio;
			collector.sample.lio =
			    xrealloc(collector.sample.lio,
			             (size_t)collector.lio_cap * sizeof(*collector.sample.lio));
		}
		int64_t gap = t - collector.prev_t;
		procfs_rates(prev, cur, gap > INT_MAX ? INT_MAX : (int)gap, &collector.sample);
		for (int d = 0; d < 2; d++)
			collector.sample.bench_ops_per_s[d] = collector.sample.bench_latency_ms[d] =
			    0;
		/* the eBPF helper's second, the same for every subscriber */
		collector.sample.have_iohist =
		    iohist_take(collector.sample.disks, collector.sample.ndisks);
		collector.sample.have_zpoolhist = zpoolhist_take();
		collector.sample.have_smb = smbstat_take();
		collector.sample.smb_served = smbstat_served();
		if (collector.fill)
			collector.fill(collector.fill_arg, &collector.sample);
		collector.sample.time = t;
		collector.sample.seq = ++collector.seq;
		collector.have_sample = true;
		collector.due = true;
	}
	collector.cur ^= 1;
	collector.have_prev = true;
	collector.prev_t = t;
	return collector.due;
}

/* The sample read and not handed to the subscribers yet, if any, is now. */
static void collector_hand_over(void)
{
	if (!collector.due)
		return;
	collector.due = false;
	collector_notify();
}

void collector_tick_at(int64_t t)
{
	collector_hand_over();
	if (collector_read_at(t))
		collector_hand_over();
}

/* Fires once, just after the next second boundary of the wall clock. */
static void collector_arm(int64_t now_ns)
{
	int64_t next = (now_ns / 1000000000 + 1) * 1000000000;
	int64_t delay = next - now_ns;
	struct timeval tv = {(time_t)(delay / 1000000000),
	                     (suseconds_t)(delay % 1000000000 / 1000)};
	evtimer_add(collector.timer, &tv);
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void collector_hand_over_fire(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	struct loopwork w;
	loopwork_begin(&w);
	collector_hand_over();
	loopwork_end(&w);
}

static void collector_fire(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = realtime_ns();
	/* The boundary this tick belongs to: libevent may wake a little early or late. */
	int64_t t = (now + 500000000) / 1000000000;
	bool first = !collector.have_prev;
	if (first || t != collector.prev_t) {
		struct loopwork w;
		loopwork_begin(&w);
		collector_hand_over(); /* (the loop never got to it: a second's tick overran) */
		/* Reading and handing over, each a turn of the loop of its own, with what
		 * came in between them served: neither holds it long on a big box. */
		static const struct timeval now_tv = {0, 0};
		if (collector_read_at(t))
			evtimer_add(collector.hand_over, &now_tv);
		loopwork_end(&w);
	}
	if (first) {
		const struct procfs_snapshot *s = &collector.snap[collector.cur];
		log_info("collector: %d CPUs, %d disks, %d NICs%s%s", s->ncpus, s->ndisks, s->nnics,
		         s->have_psi[0] ? ", pressure stall information" : "",
		         s->have_arc ? ", ZFS ARC" : "");
	}
	/* Woken early, the clock may still be short of t: aim past t, not at it again. */
	now = realtime_ns();
	collector_arm(now > t * 1000000000 ? now : t * 1000000000);
}

int collector_init(struct event_base *base, const struct collector_config *cfg)
{
	struct procfs_options po = {
	    .proc_root = cfg->proc_root ? cfg->proc_root : "/",
	    .sys_root = cfg->sys_root ? cfg->sys_root : "/",
	    .partitions = cfg->partitions,
	    .loop_devices = cfg->loop_devices,
	    .pools = collector.want_pools,
	    .lio = collector.want_lio,
	};
	collector.base = base;
	collector.procfs = procfs_new(&po);
	collector.timer = evtimer_new(base, collector_fire, NULL);
	collector.hand_over = evtimer_new(base, collector_hand_over_fire, NULL);
	if (!collector.timer || !collector.hand_over)
		return -1;
	/* The first reading comes at the next boundary, the first sample a second later. */
	log_info("collector: reading counters under %s every second", po.proc_root);
	collector_arm(realtime_ns());
	return 0;
}

void collector_want_pools(bool want)
{
	collector.want_pools = want;
	if (collector.procfs)
		procfs_want_pools(collector.procfs, want);
}

void collector_want_lio(bool want)
{
	collector.want_lio = want;
	if (collector.procfs)
		procfs_want_lio(collector.procfs, want);
}

void collector_shutdown(void)
{
	if (collector.timer)
		event_free(collector.timer);
	if (collector.hand_over)
		event_free(collector.hand_over);
	procfs_free(collector.procfs);
	procfs_snapshot_free(&collector.snap[0]);
	procfs_snapshot_free(&collector.snap[1]);
	free(collector.sample.disks);
	free(collector.sample.nics);
	free(collector.sample.cpus);
	free(collector.sample.lio);
	free(collector.subs);
	memset(&collector, 0, sizeof(collector));
}

const struct box_sample *collector_latest(void)
{
	return collector.have_sample ? &collector.sample : NULL;
}

void collector_set_fill(collector_fill_fn fn, void *arg)
{
	collector.fill = fn;
	collector.fill_arg = arg;
}

int collector_subscribe(collector_tick_fn fn, void *arg)
{
	collector.subs = util_grow(collector.subs, &collector.subs_cap, collector.nsubs,
	                           sizeof(*collector.subs));
	collector.subs[collector.nsubs++] = (struct collector_sub){fn, arg};
	return 0;
}

void collector_unsubscribe(collector_tick_fn fn, void *arg)
{
	for (size_t i = 0; i < collector.nsubs; i++) {
		if (collector.subs[i].fn != fn || collector.subs[i].arg != arg)
			continue;
		if (collector.notifying) {
			collector.subs[i].fn = NULL;
		} else {
			memmove(&collector.subs[i], &collector.subs[i + 1],
			        (collector.nsubs - i - 1) * sizeof(*collector.subs));
			collector.nsubs--;
		}
		return;
	}
}
