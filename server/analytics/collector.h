/* SPDX-License-Identifier: ISC */
/* The collector: a 1 s timer aligned to second boundaries reads /proc (under --proc-root)
 * and turns counters into per-second values. It owns the samples; the series store
 * (series.h) keeps them, the dashboard, events and /metrics read the newest one here. */
#ifndef SPINDLE_COLLECTOR_H
#define SPINDLE_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "sample.h"

struct event_base;

/* Start-up, shutdown and a tick on demand. */
struct collector_config {
	const char *proc_root; /* --proc-root: "/" on a live box, a synthetic tree in tests */
	const char *sys_root;  /* --sys-root: where /sys/class/block tells partitions apart */
	bool partitions;       /* keep partitions in the per-disk series */
	bool loop_devices;     /* keep loop, ram and zram devices */
};
/* Reads the counters once and arms the timer; the first sample comes a second later. */
int collector_init(struct event_base *base, const struct collector_config *cfg);
void collector_shutdown(void);
/* One tick for the second t, as the timer does at each boundary (benchmarks, tests). */
void collector_tick_at(int64_t t);

/* The newest complete sample, or NULL before the second tick. Valid until the next tick. */
const struct box_sample *collector_latest(void);

/* Adds to each new sample, before any subscriber sees it, the figures the collector does not
 * read itself: the running benchmark jobs' (bench_ops_per_s, bench_latency_ms, 0 until
 * then). One function at a time; NULL removes it. The job supervisor sets it, so the
 * collector depends on no module above it. */
typedef void (*collector_fill_fn)(void *arg, struct box_sample *s);
void collector_set_fill(collector_fill_fn fn, void *arg);

/* Whether the ticks read the ZFS pools' objset kstats (a file per dataset of each pool), for
 * the pools' logical I/O: the datasets ask for them while one of theirs needs them. */
void collector_want_pools(bool want);
/* Whether they read LIO's ports and initiators (iSCSI, Fibre Channel), likewise. */
void collector_want_lio(bool want);

/* Called on the loop after every tick with the new sample. */
typedef void (*collector_tick_fn)(void *arg, const struct box_sample *s);
int collector_subscribe(collector_tick_fn fn, void *arg);
void collector_unsubscribe(collector_tick_fn fn, void *arg);

#endif
