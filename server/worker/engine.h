/* SPDX-License-Identifier: ISC */
/* The benchmark engine: reader, writer and mixed thread groups doing psync (pread/pwrite)
 * or io_uring I/O against one file descriptor, each thread recording latencies into its
 * own histograms; the calling thread ticks once a second with per-interval deltas and
 * stops the run at its time or amount. Used by spindle-worker only. */
#ifndef SPINDLE_ENGINE_H
#define SPINDLE_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "hist.h"
#include "spec.h"

enum { ENGINE_READ, ENGINE_WRITE, ENGINE_DIRS };

struct engine_job {
	int fd;
	enum spec_engine engine;
	unsigned iodepth;
	unsigned iodepth_batch; /* io_uring: SQEs per submit, 1..iodepth */
	uint32_t block_size;
	uint64_t nblocks; /* blocks of block_size in use, from offset 0 */
	bool random;      /* random offsets over all blocks; else each thread walks its slice */
	unsigned readers, writers, mixed;
	unsigned rwmix_read; /* percent of a mixed thread's I/Os that are reads */
	uint64_t runtime_ms; /* measured time; 0: none */
	uint64_t ramp_ms;
	uint64_t io_ops; /* measured I/Os over all threads; 0: none (one of the two is set) */
	bool direct;     /* the fd is O_DIRECT: EINVAL means misalignment */
	unsigned fsync_every;
	bool fsync_at_end; /* a writing thread fsyncs after its last write, inside the timing */
	uint64_t seed;
};

struct engine_dir_interval {
	uint64_t ops, bytes;
	double lat_mean_ns;
	uint64_t lat_max_ns, lat_p99_ns;
	const uint64_t *hist; /* the interval's latency counts (HIST_BUCKETS), valid in the call */
};

struct engine_interval {
	double t_s;       /* end of the interval, seconds since I/O started */
	double elapsed_s; /* length of the interval */
	bool ramp;
	double progress; /* 0..1 of the run, by time or amount */
	double eta_s;    /* seconds left, -1 when unknown */
	struct engine_dir_interval dir[ENGINE_DIRS];
};

struct engine_result {
	double elapsed_s; /* the measured phase */
	struct hist lat[ENGINE_DIRS];
	struct hist sync;             /* fsync latencies */
	double cpu_user_s, cpu_sys_s; /* the whole process over the measured phase */
	int signal;                   /* SIGINT/SIGTERM stopped the run early */
};

/* Called on the calling thread after every interval; non-zero stops the run (output gone). */
typedef int (*engine_interval_fn)(void *arg, const struct engine_interval *iv);

/* The signals engine_run waits for: block them in every thread before starting any. */
void engine_signals(sigset_t *set);
/* Runs one job. 0: done (res filled); 1: stopped by a signal (res holds the part done);
 * -1: failed, with the reason in err (starting with the field at fault where one is). */
int engine_run(const struct engine_job *job, engine_interval_fn fn, void *arg,
               struct engine_result *res, char *err, size_t errlen);

/* Writes [from, to) of fd with data that neither compresses nor deduplicates. 0; 1 when
 * SIGINT/SIGTERM arrived meanwhile; -1 with the reason in err. */
int engine_layout(int fd, uint64_t from, uint64_t to, uint64_t seed, char *err, size_t errlen);
/* One direct read of block_size at offset 0: tells an O_DIRECT alignment refusal early. */
int engine_probe(int fd, uint32_t block_size, char *err, size_t errlen);

#endif
