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
	int64_t time;  /* the second this sample ends at (epoch seconds) */
	uint64_t seq;  /* increments every tick: an ETag changes with it */
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
	double arc_hit_pct;     /* hits / (hits + misses) over the interval, as arcstat */
	uint64_t arc_hits, arc_misses, arc_iohits; /* raw cumulative */
	uint64_t arc_size, arc_target, arc_mfu, arc_mru, arc_meta; /* bytes */
};

/* The newest complete sample, or NULL before the second tick. Valid until the next tick. */
const struct box_sample *collector_latest(void);

/* Called on the loop after every tick with the new sample. */
typedef void (*collector_tick_fn)(void *arg, const struct box_sample *s);
int collector_subscribe(collector_tick_fn fn, void *arg);
void collector_unsubscribe(collector_tick_fn fn, void *arg);

#endif
