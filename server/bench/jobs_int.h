/* SPDX-License-Identifier: ISC */
/* What the parts of the job supervisor share (jobs.h is their face): jobs.c (the queue
 * and each job's life: the worker, its lines, its figures, its writes), job_submit.c (the
 * spec and submit checks, the API's calls and a job's JSON) and job_watch.c (progress
 * streams and their replay). Everything here runs on the loop thread. */
#ifndef SPINDLE_JOBS_INT_H
#define SPINDLE_JOBS_INT_H

#include "jobs.h"
#include "job_target.h"
#include "analytics/collector.h"
#include "analytics/iohist.h"
#include "db/db.h"
#include "net/stream.h"
#include "worker/spec.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <jansson.h>

#define JOBS_MAX_QUEUED    256
#define JOBS_MAX_WATCHERS  64
#define JOBS_FLUSH_S       2 /* seconds of lines a crash may cost; written off the loop */
#define JOBS_KILL_GRACE_MS 5000
#define JOBS_MAX_LINE      (16u << 20) /* a result line with its histogram bins */
#define JOBS_POOL_DISKS    64          /* disks of a ZFS pool whose figures a job sums */

struct watcher {
	LIST_ENTRY(watcher) link;
	struct job *job;
	struct stream *s;
	bool sse;
};

/* What the findings read of an interval line. */
struct kept_interval {
	double elapsed_s, iops;
	bool measure, pass;
};
#define JOBS_MAX_KEPT_INTERVALS (7u * 86400) /* a week of seconds */

struct job {
	TAILQ_ENTRY(job) link; /* jobs.live */
	struct db_run run;     /* the row as stored; spec is its JSON text */
	enum job_state state;  /* run.state's */
	struct spec spec;
	struct job_target where; /* its path is run.target's */
	struct child *child;
	bool cancel, protocol_error;
	bool env_pending; /* its environment is being resolved (job_env.h): it waits */
	char cancel_by[DB_NAME_MAX + 1];
	bool have_start, have_result, have_error;
	json_t *result; /* the worker's result line (or the partial one) */
	char error_msg[400];
	int64_t seq; /* last interval's */
	double progress_pct, eta_s;
	double live_iops[2], live_lat_ns[2]; /* its newest interval */
	bool measuring;
	int64_t measure_ms; /* wall clock when the measured phase began */
	/* interval lines not yet in the store (lines[0] is seq flushed + 1); while writing,
	 * the first of them are with the writer */
	char **lines;
	size_t nlines, cap;
	int64_t flushed;
	bool writing;       /* lines are with the writer */
	unsigned pending;   /* writes handed to the writer and not done: each refers to the job */
	bool finishing;     /* stopped: its final row is written or waits for the lines to be;
	                     * it never starts (again), whatever its row still reads */
	bool unstored;      /* the writer failed to store the final row: it reads as ended and
	                     * the row is handed over again on each flush until stored */
	bool unstored_full; /* the last try failed for want of space */
	bool dropped;       /* left at shutdown with writes pending: the last one frees it */
	struct db_run *final;
	/* the collector's figures over the measured seconds */
	unsigned dev_seconds, cpu_seconds;
	/* the job's disks' completions by latency (the eBPF helper's) over its measured
	 * seconds, in the helper's buckets (iolat.h) */
	unsigned lat_seconds;
	uint64_t dev_lat[IOLAT_DIRS][IOLAT_LAT_BUCKETS];
	double reads, writes, rbytes, wbytes, busy, queue, rlat_ops, wlat_ops;
	double cpu[CPU_MODES];
	/* the target disk's raw counters at the first and the last measured sample: the
	 * run's totals are their differences (fio's disk_util) */
	struct disk_sample raw_first, raw_last;
	int64_t raw_first_time, raw_last_time;
	/* A target on a ZFS dataset has no disk of its own (where.disk ""): its figures are
	 * the pool's disks', from its environment (zfs.disks) */
	char pool[DB_NAME_MAX + 1];
	char pool_disks[JOBS_POOL_DISKS][32];
	unsigned npool;
	int ncpus;
	unsigned arc_seconds;
	double arc_hits, arc_misses, arc_iohits;
	struct kept_interval *ivs; /* each interval's phase, length and IOPS, for the findings */
	size_t nivs, ivs_cap;
	LIST_HEAD(watcher_list, watcher) watchers;
};

struct jobs_state {
	struct event_base *base;
	struct db *db;
	struct jobs_config cfg;
	struct job_target_rules rules;  /* the bench dirs and the settings for targets */
	TAILQ_HEAD(job_list, job) live; /* queued and running, oldest first */
	unsigned running, queued, watchers;
	unsigned reserved;           /* places in the queue of batches being stored */
	uint64_t ended[JOB_NSTATES]; /* jobs ended by this process, by end state (/metrics) */
	struct event *kick, *flush;
	bool subscribed, stopping, ready;
};

extern struct jobs_state jobs;

/* --- jobs.c */
/* A progress stream's hook (stream_set_hook): its end when the server stops or its
 * access ends, its watcher gone when the client is. */
void watcher_hook(struct stream *s, enum stream_event ev, void *arg);
/* A line as an NDJSON line, or as the data of an SSE event named for its type. */
void watcher_send(struct watcher *w, const char *event, const char *line, size_t len);
/* A job's end line: its state and why. */
json_t *job_end_line(const struct db_run *run);
/* The spec's limits that the configuration tightens, for spec_parse_limited. */
const struct spec_limits *jobs_limits(void);
/* v to one decimal, as JSON. */
json_t *job_real1(double v);
/* t as ISO 8601, or null when 0. */
json_t *job_iso_or_null(int64_t t);
/* The job has stopped (or never ran): its last row goes to the writer after any lines; it
 * ends when that is stored (job_ended). Until then it reads as it did. */
void job_finish(struct job *j, enum job_state state);
struct job *job_live(int64_t id);
void run_set_state(struct db_run *run, enum job_state st);
/* Resolves the job's environment; it starts once that is stored in its row. */
void job_env_begin(struct job *j);
void job_free(struct job *j);
void job_link(struct job *j);
struct job *job_new(void);
void job_set_state(struct job *j, enum job_state st);
/* The row now, on the loop's own connection: for what the caller must know is stored. */
int job_store(struct job *j);
/* Where it reads and writes (job_target.h), into run.target as well. What the row read
 * before stays when the target is refused before a path is resolved. */
int job_target(struct job *j, struct fault *f);
/* *dst becomes a copy of *src with texts of its own (db_run_clear() it). */
void run_copy(struct db_run *dst, const struct db_run *src);
bool run_is(const struct db_run *run, enum job_state st);

#endif
