/* SPDX-License-Identifier: ISC */
/* Sweeps: one job spec run over a matrix of values ("axes": any spec fields, each a list of
 * values), every combination checked as a job is before any is queued, then queued as
 * ordinary jobs (jobs.h) carrying the sweep's id, first axis outermost, that run one at a
 * time. A sweep reads as a
 * table of its runs' figures and the knee of its threads axis; it is cancelled, and
 * deleted once ended, as a whole. Loop thread only; the rows are db/store_sweeps.c's. */
#ifndef SPINDLE_SWEEPS_H
#define SPINDLE_SWEEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "access/auth.h"
#include "base/fault.h"

struct db;

#define SWEEP_MAX_AXES         4
#define SWEEP_MAX_VALUES       64   /* values of one axis */
#define SWEEP_MAX_COMBINATIONS 256  /* runs of one sweep: the queue's size */
#define SWEEP_KNEE_GAIN        0.05 /* IOPS growing less than this share is no more gain */

void sweeps_init(struct db *db);

/* The answer of a submit or a delete, on the loop: sweep (a new reference for the callee)
 * is the sweep as it now reads, or NULL: then f says why, or (a delete) it is gone. */
typedef void (*sweeps_done_fn)(void *arg, json_t *sweep, const struct fault *f);

/* POST: {"name", "label", "spec", "axes"}; done gets the new sweep. Nothing is stored or
 * queued unless every combination passes the checks of a job; then the sweep and its runs
 * are stored in one transaction, on the writer thread (dbw.h). done may run before this
 * returns (a refusal). */
void sweeps_submit(const json_t *body, const struct identity *who, const char *peer,
                   sweeps_done_fn done, void *arg);
/* Newest first, ids below before (0: any), at most limit; without table and knee. */
int sweeps_list(int64_t before, int limit, json_t **out, struct fault *f);
/* With its table and knee. ERR_NOT_FOUND. */
int sweeps_get(int64_t id, json_t **out, struct fault *f);
/* DELETE: cancels the queued and running jobs of a sweep that has not ended (done gets
 * the sweep), or deletes one that has, with its runs (needs settings:modify; done gets
 * NULL and no fault). The writes go through the writer thread. */
void sweeps_delete(int64_t id, const struct identity *who, const char *peer, sweeps_done_fn done,
                   void *arg);

/* ---- the knee (pure: no state, no I/O) */

/* One finished run of a group: its thread count and figures. */
struct sweep_point {
	double threads, iops, p99_ns;
};

struct sweep_knee {
	bool found;
	double threads, iops, p99_ns; /* the knee's run, when found */
	char why[200];                /* how it was found, or why there is none */
};

/* The smallest thread count past which IOPS grow less than SWEEP_KNEE_GAIN while p99
 * grows: over the points by threads ascending (pts is sorted in place), the first step
 * from one count to the next that gains less than 5 % IOPS for a higher p99. */
void sweep_knee_find(struct sweep_point *pts, size_t n, struct sweep_knee *out);

/* The knee of a sweep's table (rows {"values", "state", "iops", "p99_ns"}), one entry per
 * group of the other axes' values: [{"group", "axis", "threads", "iops", "p99_ns", "why"}].
 * Only rows done count. The threads axis is the first of threads, readers, writers and
 * sessions the axes have; without one, one entry says so. New reference. */
json_t *sweep_knee_json(const json_t *axes, const json_t *table);

#endif
