/* The collector: a one-shot timer re-armed each second from CLOCK_REALTIME, so every
 * tick lands just after a second boundary however long the last one took. Each tick
 * reads the counters (procfs.c), turns the last two readings into a box_sample and hands
 * it to the subscribers (the analytics datasets, the dashboard, events, /metrics), with
 * the running benchmark jobs' newest second (jobs_live()) for the live bench datasets. */
#define _GNU_SOURCE
#include "collector.h"
#include "jobs.h"
#include "log.h"
#include "problems.h"
#include "procfs.h"
#include "util.h"

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
	struct procfs *procfs;
	struct procfs_snapshot snap[2];
	int cur;        /* snap[cur] is the newest reading */
	bool have_prev; /* snap[cur] holds a reading taken at prev_t */
	int64_t prev_t;
	struct box_sample sample;
	bool have_sample;
	int disks_cap, nics_cap;
	uint64_t seq;
	struct collector_sub *subs;
	size_t nsubs, subs_cap;
	bool notifying;
} C;

static void collector_notify(void)
{
	C.notifying = true;
	for (size_t i = 0; i < C.nsubs; i++)
		if (C.subs[i].fn)
			C.subs[i].fn(C.subs[i].arg, &C.sample);
	C.notifying = false;
	/* Unsubscribed during the walk: only marked then, removed now. */
	size_t n = 0;
	for (size_t i = 0; i < C.nsubs; i++)
		if (C.subs[i].fn)
			C.subs[n++] = C.subs[i];
	C.nsubs = n;
}

void collector_tick_at(int64_t t)
{
	struct procfs_snapshot *prev = &C.snap[C.cur], *cur = &C.snap[C.cur ^ 1];

	procfs_read(C.procfs, cur);
	problems_collector(cur->unread);
	if (C.have_prev && t <= C.prev_t)
		log_warn("collector: the clock went back from %lld to %lld; starting afresh",
		         (long long)C.prev_t, (long long)t);
	if (C.have_prev && t > C.prev_t) {
		if (cur->ndisks > C.disks_cap) {
			C.disks_cap = cur->ndisks;
			C.sample.disks =
			    xrealloc(C.sample.disks, (size_t)C.disks_cap * sizeof(*C.sample.disks));
		}
		if (cur->nnics > C.nics_cap) {
			C.nics_cap = cur->nnics;
			C.sample.nics =
			    xrealloc(C.sample.nics, (size_t)C.nics_cap * sizeof(*C.sample.nics));
		}
		int64_t gap = t - C.prev_t;
		procfs_rates(prev, cur, gap > INT_MAX ? INT_MAX : (int)gap, &C.sample);
		double latency_us[2];
		jobs_live(C.sample.bench_ops_per_s, latency_us);
		for (int d = 0; d < 2; d++)
			C.sample.bench_latency_ms[d] = latency_us[d] / 1000;
		C.sample.time = t;
		C.sample.seq = ++C.seq;
		C.have_sample = true;
		collector_notify();
	}
	C.cur ^= 1;
	C.have_prev = true;
	C.prev_t = t;
}

/* Fires once, just after the next second boundary of the wall clock. */
static void collector_arm(int64_t now_ns)
{
	int64_t next = (now_ns / 1000000000 + 1) * 1000000000;
	int64_t delay = next - now_ns;
	struct timeval tv = {(time_t)(delay / 1000000000),
	                     (suseconds_t)(delay % 1000000000 / 1000)};
	evtimer_add(C.timer, &tv);
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void collector_fire(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = realtime_ns();
	/* The boundary this tick belongs to: libevent may wake a little early or late. */
	int64_t t = (now + 500000000) / 1000000000;
	bool first = !C.have_prev;
	if (first || t != C.prev_t)
		collector_tick_at(t);
	if (first) {
		const struct procfs_snapshot *s = &C.snap[C.cur];
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
	};
	C.base = base;
	C.procfs = procfs_new(&po);
	C.timer = evtimer_new(base, collector_fire, NULL);
	if (!C.timer)
		return -1;
	/* The first reading comes at the next boundary, the first sample a second later. */
	log_info("collector: reading counters under %s every second", po.proc_root);
	collector_arm(realtime_ns());
	return 0;
}

void collector_shutdown(void)
{
	if (C.timer)
		event_free(C.timer);
	procfs_free(C.procfs);
	procfs_snapshot_free(&C.snap[0]);
	procfs_snapshot_free(&C.snap[1]);
	free(C.sample.disks);
	free(C.sample.nics);
	free(C.subs);
	memset(&C, 0, sizeof(C));
}

const struct box_sample *collector_latest(void)
{
	return C.have_sample ? &C.sample : NULL;
}

int collector_subscribe(collector_tick_fn fn, void *arg)
{
	if (C.nsubs == C.subs_cap) {
		C.subs_cap = C.subs_cap ? 2 * C.subs_cap : 8;
		C.subs = xrealloc(C.subs, C.subs_cap * sizeof(*C.subs));
	}
	C.subs[C.nsubs++] = (struct collector_sub){fn, arg};
	return 0;
}

void collector_unsubscribe(collector_tick_fn fn, void *arg)
{
	for (size_t i = 0; i < C.nsubs; i++) {
		if (C.subs[i].fn != fn || C.subs[i].arg != arg)
			continue;
		if (C.notifying) {
			C.subs[i].fn = NULL;
		} else {
			memmove(&C.subs[i], &C.subs[i + 1], (C.nsubs - i - 1) * sizeof(*C.subs));
			C.nsubs--;
		}
		return;
	}
}
