/* The collector: a 1 s timer aligned to second boundaries reads /proc (under --proc-root)
 * and turns counters into per-second values. It owns the samples; the series store
 * (series.h) keeps them, the dashboard, events and /metrics read the newest one here. */
#ifndef SPINDLE_COLLECTOR_H
#define SPINDLE_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

enum cpu_mode {
	CPU_USER,
	CPU_NICE,
	CPU_SYSTEM,
	CPU_IOWAIT,
	CPU_IRQ,
	CPU_SOFTIRQ,
	CPU_STEAL,
	CPU_IDLE,
	CPU_MODES
};

struct disk_sample {
	char name[32];
	/* per second over the last interval */
	double reads_per_s, writes_per_s;
	double read_bytes_per_s, write_bytes_per_s;
	double read_latency_ms, write_latency_ms; /* mean per op, 0 without ops */
	double busy_pct;                          /* io_ticks share of the interval */
	double queue;                             /* mean requests in flight (weighted ms / ms) */
	/* raw cumulative counters, for /metrics */
	uint64_t reads, writes, read_bytes, write_bytes, read_ms, write_ms, io_ms;
	uint64_t in_flight;
};

struct nic_sample {
	char name[32];
	double rx_kb_per_s, tx_kb_per_s;
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets, rx_errors, tx_errors;
};

struct box_sample {
	int64_t time; /* the second this sample ends at (epoch seconds) */
	uint64_t seq; /* increments every tick: an ETag changes with it */
	double cpu_pct[CPU_MODES];
	uint64_t cpu_ticks[CPU_MODES]; /* raw cumulative USER_HZ ticks over all CPUs */
	int ncpus;
	int ndisks;
	struct disk_sample *disks;
	int nnics;
	struct nic_sample *nics;
	uint64_t mem_total, mem_used, mem_cache, mem_buffers, mem_free; /* bytes */
	bool have_psi;
	double psi_some_pct[3]; /* cpu, io, memory: share of the last second some task stalled */
	bool have_arc;
	double arc_hit_pct; /* hits / (hits + misses) over the interval, as arcstat */
	uint64_t arc_hits, arc_misses, arc_iohits;                 /* raw cumulative */
	uint64_t arc_size, arc_target, arc_mfu, arc_mru, arc_meta; /* bytes */

	/* Added with the collector: what the analytics datasets need besides the above. */
	double arc_hits_per_s, arc_misses_per_s, arc_iohits_per_s;
	/* The kernel counts iohits (OpenZFS 2.2+): arc_hit_pct counts them among the accesses
	 * (hits / (hits + iohits + misses)), as arcstat does. */
	bool arc_have_iohits;
	/* Bytes of cached data (arc_meta: of metadata). */
	uint64_t arc_data;

	/* The running benchmark jobs' newest interval (jobs_live()), [0] read, [1] write:
	 * ops per second summed over the jobs, their mean latency weighted by ops; 0 when
	 * no job runs. */
	double bench_ops_per_s[2], bench_latency_ms[2];
};

struct event_base;

/* Added with the collector: start-up, shutdown and a tick on demand. */
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

/* Called on the loop after every tick with the new sample. */
typedef void (*collector_tick_fn)(void *arg, const struct box_sample *s);
int collector_subscribe(collector_tick_fn fn, void *arg);
void collector_unsubscribe(collector_tick_fn fn, void *arg);

#endif
