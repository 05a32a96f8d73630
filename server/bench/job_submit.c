/* SPDX-License-Identifier: ISC */
/* The API's calls of the job supervisor (jobs.h): the spec and submit checks, a job and a
 * batch of them stored and queued, listing, reading, cancelling and deleting them, and a
 * job's JSON. */
#include "jobs_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "access/audit.h"
#include "base/child.h"
#include "job_findings.h"
#include "base/util.h"
#include "db/dbw.h"
#include "db/db.h"
#include "job_env.h"
#include "job_target.h"
#include "worker/spec.h"

/* ---- JSON of a job */

static json_t *run_json(const struct db_run *run, const struct job *live, bool full)
{
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
	json_t *o = json_pack(
	    "{s:I, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", (json_int_t)run->id, "name",
	    run->name, "label", run->label, "owner", run->owner, "state", run->state, "target",
	    run->target, "spec", spec ? spec : json_object(), "ctime", job_iso_or_null(run->ctime),
	    "started", job_iso_or_null(run->start_time), "ended", job_iso_or_null(run->end_time));
	if (run->reason[0])
		json_object_set_new(o, "reason", json_string(run->reason));
	if (run->imported)
		json_object_set_new(o, "imported", json_true());
	if (run->sweep)
		json_object_set_new(o, "sweep", json_integer((json_int_t)run->sweep));
	if (live && live->child)
		json_object_set_new(o, "worker_pid", json_integer(child_pid(live->child)));
	if (live) {
		json_object_set_new(o, "progress_pct", job_real1(live->progress_pct));
		json_object_set_new(o, "eta_s",
		                    live->eta_s >= 0 ? job_real1(live->eta_s) : json_null());
	} else if (run_is(run, JOB_DONE)) {
		json_object_set_new(o, "progress_pct", json_real(100));
	}
	if (full) { /* null while it is being resolved; the listing stays small */
		json_t *e = run->environment ? json_loads(run->environment, 0, NULL) : NULL;
		json_object_set_new(o, "environment", e ? e : json_null());
	}
	if (run->result) {
		json_t *res = json_loads(run->result, 0, NULL);
		if (res && full) {
			json_object_set_new(o, "result", res);
		} else if (res) {
			json_object_set(o, "summary", json_object_get(res, "summary"));
			json_decref(res);
		}
	}
	return o;
}

json_t *jobs_run_json(const struct db_run *run)
{
	return run_json(run, NULL, false);
}

int jobs_import(struct db_run *run, const struct identity *who, const char *peer, json_t **out,
                struct fault *f)
{
	snprintf(run->owner, sizeof(run->owner), "%s", who->user);
	/* what can be found from fio's own figures (no disk, CPU or environment of ours) */
	json_t *res = run->result ? json_loads(run->result, 0, NULL) : NULL;
	if (json_is_object(res)) {
		json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
		json_object_set_new(res, "findings", findings_compute(spec, NULL, res, NULL));
		json_decref(spec);
		free(run->result);
		run->result = json_dumps(res, JSON_COMPACT);
	}
	json_decref(res);
	/* the insert writes the row's identity, the update its times and result */
	if (db_run_insert(jobs.db, run) < 0 || db_run_update(jobs.db, run) < 0) {
		audit_log(who->user, peer, "bench.import", run->target, false, "%s", run->name);
		return fault_store(f, db_full(jobs.db), "job");
	}
	audit_log(who->user, peer, "bench.import", run->target, true, "job %lld (%s)",
	          (long long)run->id, run->name);
	*out = run_json(run, NULL, true);
	return 0;
}

/* A job whose end could not be stored reads as it ended. */
static json_t *job_json(const struct job *j, bool full)
{
	return j->unstored ? run_json(j->final, NULL, full) : run_json(&j->run, j, full);
}

/* ---- the API's calls */

static int jobs_spec_fault(const struct spec_errors *errs, struct fault *f)
{
	static const enum fault_kind kinds[] = {
	    [SPEC_ERR_INVALID] = ERR_INVALID_ARG,
	    [SPEC_ERR_UNKNOWN] = ERR_UNKNOWN_ARG,
	    [SPEC_ERR_MISSING] = ERR_MISSING_ARG,
	};
	const struct spec_error *e = &errs->e[0];
	return fault_set(f, kinds[e->kind], "%s", e->message);
}

/* What a submit checks before it stores anything: the spec, its run limit, room in the
 * queue (with queue), the target and its space. *target_refused when the target was. */
static int job_check(struct job *j, const json_t *body, bool queue, bool *target_refused,
                     struct fault *f)
{
	struct spec_errors errs;
	*target_refused = false;
	if (spec_parse_limited(body, jobs_limits(), &j->spec, &errs) < 0)
		return jobs_spec_fault(&errs, f);
	uint64_t total = j->spec.ramp_ms + j->spec.runtime_ms;
	if (total > (uint64_t)jobs.cfg.max_runtime_s * 1000)
		return fault_set(f, ERR_INVALID_ARG,
		                 "runtime_s: ramp and runtime of %.1f s exceed the limit of %d s "
		                 "(bench_max_runtime)",
		                 (double)total / 1000, jobs.cfg.max_runtime_s);
	if (queue && jobs.queued + jobs.reserved >= JOBS_MAX_QUEUED) {
		fault_set(f, ERR_BUSY, "jobs: %d jobs are queued already", JOBS_MAX_QUEUED);
		f->retry_after = 60; /* (after fault_set, which clears it) */
		return -1;
	}
	if (job_target(j, f) < 0 ||
	    job_target_check_space(&jobs.rules, &j->spec, &j->where, f) < 0) {
		*target_refused = true;
		return -1;
	}
	return 0;
}

struct jobs_batch {
	struct identity who;
	struct job **jobs;
	size_t n, cap;
};

struct jobs_batch *jobs_batch_new(const struct identity *who)
{
	struct jobs_batch *b = xcalloc(1, sizeof(*b));
	b->who = *who;
	return b;
}

void jobs_batch_free(struct jobs_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		job_free(b->jobs[i]);
	free(b->jobs);
	free(b);
}

/* The row of a checked job, queued. */
static void job_row(struct job *j, const struct identity *who)
{
	struct db_run *run = &j->run;
	snprintf(run->name, sizeof(run->name), "%s",
	         j->spec.name[0] ? j->spec.name : spec_pattern_name(j->spec.pattern));
	snprintf(run->label, sizeof(run->label), "%s", j->spec.label);
	snprintf(run->owner, sizeof(run->owner), "%s", who->user);
	job_set_state(j, JOB_QUEUED);
	run->ctime = util_now();
}

static void job_audit_submit(const struct job *j, const char *user, const char *peer)
{
	audit_log(user, peer, "bench.submit", j->run.target, true, "job %lld (%s), %s",
	          (long long)j->run.id, j->run.name, spec_pattern_name(j->spec.pattern));
}

/* A job stored as queued joins the queue, audited as submitted; its environment is
 * resolved before it may start. */
static void job_enqueue(struct job *j, const char *user, const char *peer)
{
	job_audit_submit(j, user, peer);
	job_link(j);
	jobs.queued++;
	job_env_begin(j);
}

/* Its spec as stored, which is what the worker gets: with the resolved target. */
static void job_row_spec(struct job *j)
{
	snprintf(j->spec.target, sizeof(j->spec.target), "%s", j->run.target);
	json_t *canon = spec_to_json(&j->spec);
	free(j->run.spec);
	j->run.spec = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(canon);
}

int jobs_batch_add(struct jobs_batch *b, const json_t *body, struct fault *f)
{
	struct job *j = job_new();
	bool target_refused;
	if (job_check(j, body, false, &target_refused, f) < 0) {
		job_free(j);
		return -1;
	}
	if (!j->spec.target[0] && !j->spec.name[0]) {
		/* an unnamed job's file is named after its id, which no run has before storing */
		job_free(j);
		return fault_set(f, ERR_MISSING_ARG, "name: required for a run of a sweep");
	}
	job_row(j, &b->who);
	job_row_spec(j);
	b->jobs = util_grow(b->jobs, &b->cap, b->n, sizeof(*b->jobs));
	b->jobs[b->n++] = j;
	return 0;
}

struct batch_store {
	struct jobs_batch *b;
	struct db_sweep *s;
	char peer[64];
	jobs_batch_done_fn done;
	void *arg;
	int rc;
	bool full;
};

/* On the writer thread: the sweep and its runs, one transaction. */
static void batch_store_work(struct db *db, void *arg)
{
	struct batch_store *w = arg;
	struct jobs_batch *b = w->b;
	struct db_run **rows = xcalloc(b->n ? b->n : 1, sizeof(*rows));
	for (size_t i = 0; i < b->n; i++)
		rows[i] = &b->jobs[i]->run;
	w->rc = db_sweep_insert_runs(db, w->s, rows, b->n);
	w->full = w->rc != 0 && db_full(db);
	free(rows);
}

/* On the loop: stored, the runs join the queue (at the next start when stopping). */
static void batch_store_done(void *arg)
{
	struct batch_store *w = arg;
	struct jobs_batch *b = w->b;
	struct fault f = {0};
	jobs.reserved -= (unsigned)b->n;
	if (w->rc != 0) {
		fault_store(&f, w->full, "sweep");
	} else {
		for (size_t i = 0; i < b->n; i++) {
			struct job *j = b->jobs[i];
			if (jobs.stopping) { /* stored as queued: the next start takes it */
				job_audit_submit(j, b->who.user, w->peer);
				job_free(j);
				continue;
			}
			job_enqueue(j, b->who.user, w->peer);
		}
		b->n = 0; /* the queue has them now */
	}
	w->done(w->arg, w->rc != 0 ? &f : NULL);
	jobs_batch_free(b);
	free(w);
}

void jobs_batch_submit(struct jobs_batch *b, struct db_sweep *s, const char *peer,
                       jobs_batch_done_fn done, void *arg)
{
	struct fault f = {0};
	if (jobs_queue_room() < b->n) {
		fault_set(&f, ERR_BUSY, "jobs: %zu runs, but the queue takes %u more jobs now",
		          b->n, jobs_queue_room());
		f.retry_after = 60; /* (after fault_set, which clears it) */
		done(arg, &f);
		jobs_batch_free(b);
		return;
	}
	struct batch_store *w = xcalloc(1, sizeof(*w));
	*w = (struct batch_store){.b = b, .s = s, .done = done, .arg = arg};
	snprintf(w->peer, sizeof(w->peer), "%s", peer);
	jobs.reserved += (unsigned)b->n;
	/* the writer's commit waits for the disk, which a benchmark may be saturating */
	dbw_submit(jobs.db, batch_store_work, batch_store_done, w);
}

unsigned jobs_queue_room(void)
{
	unsigned taken = jobs.queued + jobs.reserved;
	return taken < JOBS_MAX_QUEUED ? JOBS_MAX_QUEUED - taken : 0;
}

int jobs_submit(const json_t *body, const struct identity *who, const char *peer, json_t **out,
                struct fault *f)
{
	struct job *j = job_new();
	bool target_refused;
	if (job_check(j, body, true, &target_refused, f) < 0) {
		if (target_refused)
			audit_log(who->user, peer, "bench.submit", j->spec.target, false, "%s",
			          f->details);
		job_free(j);
		return -1;
	}
	struct db_run *run = &j->run;
	job_row(j, who);
	run->spec = xstrdup("{}");
	if (db_run_insert(jobs.db, run) < 0) {
		bool full = db_full(jobs.db);
		job_free(j);
		return fault_store(f, full, "job");
	}
	if (!j->spec.target[0] && job_target(j, f) < 0) {
		/* its own file, named after the id when it has no name */
		audit_log(who->user, peer, "bench.submit", run->target, false, "%s", f->details);
		db_run_delete(jobs.db, run->id);
		job_free(j);
		return -1;
	}
	job_row_spec(j);
	if (job_store(j) < 0) {
		bool full = db_full(jobs.db);
		db_run_delete(jobs.db, run->id);
		job_free(j);
		return fault_store(f, full, "job");
	}
	job_enqueue(j, who->user, peer);
	*out = job_json(j, true);
	return 0;
}

struct list_ctx {
	json_t *arr;
};

static int list_one(void *arg, const struct db_run *run)
{
	struct list_ctx *c = arg;
	const struct job *live = job_live(run->id);
	json_array_append_new(c->arr, live ? job_json(live, false) : run_json(run, NULL, false));
	return 0;
}

int jobs_list(const struct jobs_filter *flt, json_t **out, struct fault *f)
{
	struct list_ctx c = {json_array()};
	const char *state = flt->by_state ? jobs_state_name(flt->state) : NULL;
	if (db_run_list(jobs.db, state, flt->label, flt->start, flt->sweep, flt->before, flt->limit,
	                list_one, &c) < 0) {
		json_decref(c.arr);
		return fault_set(f, ERR_INTERNAL, "jobs: cannot read the runs");
	}
	*out = c.arr;
	return 0;
}

int jobs_run_get(int64_t id, struct db_run *run, struct fault *f)
{
	struct job *live = job_live(id);
	if (live) {
		run_copy(run, live->unstored ? live->final : &live->run);
		return 0;
	}
	int rc = db_run_get(jobs.db, id, run);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "job: no job %lld", (long long)id);
	if (rc)
		return fault_set(f, ERR_INTERNAL, "jobs: cannot read job %lld", (long long)id);
	return 0;
}

int jobs_get(int64_t id, json_t **out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	if (jobs_run_get(id, run, f) < 0) {
		free(run);
		return -1;
	}
	const struct job *live = job_live(run->id);
	*out = live ? job_json(live, true) : run_json(run, NULL, true);
	db_run_clear(run);
	free(run);
	return 0;
}

/* Cancels the live job j; *out (when out is not NULL) is what it reads as now. */
static int job_cancel(struct job *j, const struct identity *who, const char *peer, json_t **out,
                      struct fault *f)
{
	int64_t id = j->run.id;
	audit_log(who->user, peer, "bench.cancel", j->run.target, true, "job %lld (%s), %s",
	          (long long)id, j->run.name, j->run.state);
	if (j->child) {
		if (!j->cancel) {
			j->cancel = true;
			snprintf(j->cancel_by, sizeof(j->cancel_by), "%s", who->user);
			/* SIGTERM: the worker stops and reports what it did; child.c sends
			 * SIGKILL if it has not gone after the grace period */
			child_kill(j->child, SIGTERM);
		}
		if (out)
			*out = job_json(j, true);
		return 0;
	}
	if (j->unstored) { /* nothing to delete yet: the row reads as it did */
		fault_set(f, j->unstored_full ? ERR_NO_SPACE : ERR_BUSY,
		          "job: job %lld has ended, but its end is not stored yet (%s); "
		          "it is tried again every %d s",
		          (long long)id,
		          j->unstored_full ? "the state filesystem is full"
		                           : "the database refused it",
		          JOBS_FLUSH_S);
		f->retry_after = JOBS_FLUSH_S; /* (after fault_set, which clears it) */
		return -1;
	}
	if (j->finishing) { /* it has stopped already: its end, as it is being stored */
		if (out)
			*out = run_json(j->final, NULL, true);
		return 0;
	}
	jobs.queued--;
	snprintf(j->run.reason, sizeof(j->run.reason), "cancelled by %s before it started",
	         who->user);
	/* the answer is the row as it will be stored (the store may take a moment) */
	if (out) {
		struct db_run ended = j->run;
		run_set_state(&ended, JOB_CANCELLED);
		ended.end_time = util_now();
		*out = run_json(&ended, NULL, true);
	}
	job_finish(j, JOB_CANCELLED);
	return 0;
}

int jobs_delete(int64_t id, const struct identity *who, const char *peer, bool *cancelled,
                json_t **out, struct fault *f)
{
	*out = NULL;
	*cancelled = false;
	struct job *j = job_live(id);
	if (j) {
		*cancelled = true;
		return job_cancel(j, who, peer, out, f);
	}
	/* finished: deleting its record is an administrator's call */
	struct db_run *run = xmalloc(sizeof(*run));
	int rc = db_run_get(jobs.db, id, run);
	int64_t sweep = rc == 0 ? run->sweep : 0;
	if (rc == 0)
		db_run_clear(run);
	free(run);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "job: no job %lld", (long long)id);
	if (!(who->perms & PERM_SETTINGS_MODIFY))
		return fault_set(f, ERR_DENIED,
		                 "authorization: deleting a finished run needs settings:modify");
	/* a sweep's table is its runs in order: they go with the sweep, not one by one */
	if (sweep)
		return fault_set(f, ERR_STATE_CHANGED,
		                 "job: job %lld is a run of sweep %lld; delete the sweep "
		                 "(/api/bench/v1/sweeps/%lld) to delete its runs",
		                 (long long)id, (long long)sweep, (long long)sweep);
	rc = db_run_delete(jobs.db, id);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "job: no job %lld", (long long)id);
	if (rc)
		return fault_store(f, db_full(jobs.db), "job");
	audit_log(who->user, peer, "bench.delete", "", true, "job %lld", (long long)id);
	return 0;
}

unsigned jobs_cancel_sweep(int64_t sweep, const struct identity *who, const char *peer)
{
	/* the ids first: cancelling a queued job may end it (and unlink it) at once */
	int64_t *ids = NULL;
	size_t n = 0, cap = 0;
	for (const struct job *j = TAILQ_FIRST(&jobs.live); j; j = TAILQ_NEXT(j, link))
		if (j->run.sweep == sweep && !j->finishing) {
			ids = util_grow(ids, &cap, n, sizeof(*ids));
			ids[n++] = j->run.id;
		}
	unsigned done = 0;
	for (size_t i = 0; i < n; i++) {
		struct fault f = {0};
		struct job *j = job_live(ids[i]);
		if (j && job_cancel(j, who, peer, NULL, &f) == 0) /* no answer of each to make */
			done++;
	}
	free(ids);
	return done;
}
