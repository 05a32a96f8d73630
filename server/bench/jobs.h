/* SPDX-License-Identifier: ISC */
/* The benchmark job supervisor: a queue run with a configured concurrency, each job a child
 * spindle-worker whose NDJSON lines are validated one by one (job_proto.h), runs kept in
 * the store (db/store_runs.c) with the collector's figures for the target's disk and the
 * box's CPU recorded while they ran. Targets only inside the bench dirs, or raw devices
 * where the settings allow, with confirm (job_target.h). Results for the API in other
 * shapes: job_report.h. Loop thread only. It owns the runs. */
#ifndef SPINDLE_JOBS_H
#define SPINDLE_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "access/auth.h"
#include "base/fault.h"

struct event_base;
struct db;
struct db_run;
struct buf;
struct stream;

struct jobs_config {
	const char *worker;     /* spindle-worker: a path, or a name looked up in PATH */
	const char *state_dir;  /* default bench dir: STATE/bench */
	const char *bench_dirs; /* ':'-separated directories; NULL: STATE/bench */
	int concurrency;        /* jobs running at once */
	bool allow_devices;     /* raw block devices as targets (with "confirm": true) */
	int max_runtime_s;      /* longest ramp + runtime; the limit of amount-only jobs */
	int limit_slack_s;      /* a worker past its time by this much is stopped */
	const char *sys_root;   /* <sys_root>/sys/dev/block resolves a target's disk */
	const char *proc_root;  /* <proc_root>/proc: a job's environment (job_env.h) */
	/* free space a layout must leave on a target's filesystem: a share of its size
	 * (reserve_pct, when not 0) or bytes; reserve_text as configured, for messages */
	uint64_t reserve_bytes;
	int reserve_pct;
	const char *reserve_text;
};

/* A job's life: queued, running, then one of the ends. */
enum job_state {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_DONE,
	JOB_FAILED,
	JOB_CANCELLED,
	JOB_INTERRUPTED, /* the daemon stopped while it ran */
	JOB_NSTATES
};
/* "queued", ...: the state's name in the JSON and in the store. */
const char *jobs_state_name(enum job_state st);
/* 0 with *out the state so named, or -1. */
int jobs_state_parse(const char *name, enum job_state *out);

/* Creates the bench dirs, marks runs the daemon left running as interrupted and queues the
 * queued ones again, and gives the collector the running jobs' figures for each sample
 * (collector_set_fill). -1 with the reason logged. */
int jobs_init(struct event_base *base, struct db *db, const struct jobs_config *cfg);
/* Before child_shutdown(): no new starts, progress streams end, running workers get
 * SIGTERM and are recorded as interrupted when they exit; queued jobs wait for the next
 * start. */
void jobs_shutdown(void);

/* POST: checks the spec and the target; *out is the new job (new reference). */
int jobs_submit(const json_t *spec, const struct identity *who, const char *peer, json_t **out,
                struct fault *f);

/* How many more jobs the queue takes now. */
unsigned jobs_queue_room(void);
struct db_sweep;
struct jobs_batch;
/* For sweeps (sweeps.h): a sweep's runs, each checked as jobs_submit checks a job when it
 * is added, then stored with the sweep in one transaction and queued, or none of them is
 * stored. The runs of one sweep start one at a time. */
struct jobs_batch *jobs_batch_new(const struct identity *who);
/* -1 with the fault of the spec (or its target); nothing is stored. */
int jobs_batch_add(struct jobs_batch *b, const json_t *spec, struct fault *f);
/* Stores s (setting its id) and the runs in one transaction on the writer thread (dbw.h),
 * then queues them, audits each and calls done on the loop: f NULL when stored, else why
 * nothing was. Takes b; s must live until done. */
typedef void (*jobs_batch_done_fn)(void *arg, const struct fault *f);
void jobs_batch_submit(struct jobs_batch *b, struct db_sweep *s, const char *peer,
                       jobs_batch_done_fn done, void *arg);
void jobs_batch_free(struct jobs_batch *b);
/* Cancels every queued and running job of the sweep, as jobs_delete does one; how many. */
unsigned jobs_cancel_sweep(int64_t sweep, const struct identity *who, const char *peer);

struct jobs_filter {
	bool by_state; /* false: any */
	enum job_state state;
	const char *label; /* exact; NULL: any */
	int64_t start;     /* created at or after */
	int64_t sweep;     /* of this sweep; 0: any */
	int64_t before;    /* ids below it (the page after one whose last id it is); 0: any */
	int limit;
};
int jobs_list(const struct jobs_filter *flt, json_t **out, struct fault *f);
/* Jobs running and waiting now, for the dashboard and /metrics. */
void jobs_counts(unsigned *running, unsigned *queued);
/* Jobs that ended in state st (done, failed, cancelled, interrupted) since spindled
 * started: a counter for /metrics, so a scraper sees every failure between two scrapes. */
uint64_t jobs_ended_count(enum job_state st);
/* Jobs are named by their id (ERR_NOT_FOUND when none has it). */
int jobs_get(int64_t id, json_t **out, struct fault *f);
/* DELETE: cancels a queued or running job (*cancelled true, *out the job), or deletes a
 * finished one, which needs settings:modify (*out NULL). */
int jobs_delete(int64_t id, const struct identity *who, const char *peer, bool *cancelled,
                json_t **out, struct fault *f);
/* The row of a job as it reads now (a live job's own, which the store may not hold yet);
 * db_run_clear() it. */
int jobs_run_get(int64_t id, struct db_run *run, struct fault *f);
/* A row as a listing shows it: the summary of its result, not all of it. New reference. */
json_t *jobs_run_json(const struct db_run *run);
/* Stores a finished run made elsewhere (job_fio_import filled it) as who's; *out is the
 * job as GET /jobs/{id} shows it. */
int jobs_import(struct db_run *run, const struct identity *who, const char *peer, json_t **out,
                struct fault *f);

/* A job's progress is its interval lines and then an end line, as NDJSON (sse false) or as
 * Server-Sent Events named "interval" and "end".
 * Has the job not ended yet (queued or running)? Then its progress is watched as it goes
 * (jobs_watch_admit, jobs_watch); else it is given whole (jobs_replay). */
bool jobs_watchable(int64_t id);
/* The whole progress of a job that has ended, appended to out. */
int jobs_replay(int64_t id, bool sse, struct buf *out, struct fault *f);
/* Room for one more progress stream? ERR_BUSY past the most served. */
int jobs_watch_admit(struct fault *f);
/* Feeds an opened stream with the progress of a job jobs_watchable() said has not ended,
 * in the same turn of the loop: the lines recorded first, then each as it comes, then the
 * end line (or one saying the server is stopping), and ends the stream. */
void jobs_watch(int64_t id, struct stream *s, bool sse);

#endif
