/* SPDX-License-Identifier: ISC */
/* Sweeps. A sweep is a row in bench_sweeps (its base spec and axes as given) and its runs
 * are ordinary jobs whose bench_runs.sweep names it: the queue, its concurrency and
 * limits, the audit log and cancel are jobs.c's. They are queued in the order of the
 * combinations, first axis outermost, in one turn of the loop, so the k-th run by id is
 * the k-th combination: that is how a run's values are known again (jobs.c keeps a
 * sweep's runs from being deleted one by one, which would shift them). */
#include "sweeps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access/audit.h"
#include "db/db.h"
#include "db/dbw.h"
#include "jobs.h"
#include "base/log.h"
#include "base/util.h"

static struct {
	struct db *db;
} sweeps;

void sweeps_init(struct db *db)
{
	sweeps.db = db;
}

/* ---- the axes */

struct axes {
	size_t n;
	const char *name[SWEEP_MAX_AXES];
	const json_t *values[SWEEP_MAX_AXES]; /* arrays (borrowed) */
	size_t count[SWEEP_MAX_AXES];
	size_t combinations;
};

static bool axis_value_ok(const json_t *v)
{
	return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

/* The axes object as given, checked: its order is the order of the combinations. */
static int axes_read(const json_t *o, struct axes *a, struct fault *f)
{
	memset(a, 0, sizeof(*a));
	if (!json_is_object(o))
		return fault_set(f, ERR_INVALID_ARG,
		                 "axes: must be an object of spec fields, each a list of values");
	if (json_object_size(o) == 0)
		return fault_set(f, ERR_INVALID_ARG, "axes: at least one axis");
	if (json_object_size(o) > SWEEP_MAX_AXES)
		return fault_set(f, ERR_INVALID_ARG, "axes: at most %d axes", SWEEP_MAX_AXES);
	a->combinations = 1;
	const char *key;
	const json_t *vals;
	json_object_foreach((json_t *)o, key, vals)
	{
		if (!json_is_array(vals) || json_array_size(vals) == 0)
			return fault_set(f, ERR_INVALID_ARG,
			                 "axes.%.40s: must be a non-empty array", key);
		if (json_array_size(vals) > SWEEP_MAX_VALUES)
			return fault_set(f, ERR_INVALID_ARG, "axes.%.40s: at most %d values", key,
			                 SWEEP_MAX_VALUES);
		for (size_t i = 0; i < json_array_size(vals); i++) {
			const json_t *v = json_array_get(vals, i);
			if (!axis_value_ok(v))
				return fault_set(
				    f, ERR_INVALID_ARG,
				    "axes.%.40s: value %zu must be a string, a number or "
				    "a boolean",
				    key, i);
			for (size_t k = 0; k < i; k++)
				if (json_equal(v, json_array_get(vals, k)))
					return fault_set(f, ERR_INVALID_ARG,
					                 "axes.%.40s: value %zu is value %zu again",
					                 key, i, k);
		}
		a->name[a->n] = key;
		a->values[a->n] = vals;
		a->count[a->n] = json_array_size(vals);
		a->combinations *= a->count[a->n];
		a->n++;
		if (a->combinations > SWEEP_MAX_COMBINATIONS)
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "axes: more than %d combinations; a sweep runs at most %d jobs",
			    SWEEP_MAX_COMBINATIONS, SWEEP_MAX_COMBINATIONS);
	}
	return 0;
}

/* The value of axis i in combination c (the last axis changes fastest). */
static const json_t *axes_value(const struct axes *a, size_t c, size_t i)
{
	size_t stride = 1;
	for (size_t k = i + 1; k < a->n; k++)
		stride *= a->count[k];
	return json_array_get(a->values[i], (c / stride) % a->count[i]);
}

/* {"threads": 4, "block_size": "8k"}: combination c's values. New reference. */
static json_t *axes_values_json(const struct axes *a, size_t c)
{
	json_t *o = json_object();
	for (size_t i = 0; i < a->n; i++)
		json_object_set(o, a->name[i], (json_t *)axes_value(a, c, i));
	return o;
}

/* The spec of combination c: the base with the sweep's name and label where it has none,
 * and the combination's values. New reference. */
static json_t *axes_spec(const struct axes *a, size_t c, const json_t *base, const char *name,
                         const char *label)
{
	json_t *spec = json_deep_copy(base);
	if (!json_object_get(spec, "name") && name[0])
		json_object_set_new(spec, "name", json_string(name));
	if (!json_object_get(spec, "label") && label[0])
		json_object_set_new(spec, "label", json_string(label));
	for (size_t i = 0; i < a->n; i++)
		json_object_set(spec, a->name[i], (json_t *)axes_value(a, c, i));
	return spec;
}

static void value_text(const json_t *v, char *buf, size_t len)
{
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(buf, len, "%.60s", t ? t : "?");
	free(t);
}

/* A combination refused: the axis the check names first (when the fault names one), with
 * its value, then the others, then what was wrong. The sweep's own name or label, given
 * to runs whose spec has none, is refused as itself. */
static int axes_fault(const struct axes *a, size_t c, const json_t *base, const struct fault *why,
                      struct fault *f)
{
	size_t flen = strcspn(why->details, ":.");
	size_t blame = a->n;
	for (size_t i = 0; i < a->n; i++)
		if (strlen(a->name[i]) == flen && strncmp(a->name[i], why->details, flen) == 0)
			blame = i;
	static const char *const own[] = {"name", "label"};
	for (size_t i = 0; i < nitems(own) && blame == a->n; i++)
		if (strlen(own[i]) == flen && strncmp(own[i], why->details, flen) == 0 &&
		    !json_object_get(base, own[i])) {
			*f = *why;
			return -1;
		}
	char combo[160] = "", v[64];
	size_t n = 0;
	if (blame < a->n) {
		value_text(axes_value(a, c, blame), v, sizeof(v));
		n += (size_t)snprintf(combo, sizeof(combo), "%s %s", a->name[blame], v);
	}
	bool first = true;
	for (size_t i = 0; i < a->n && n < sizeof(combo); i++) {
		if (i == blame)
			continue;
		value_text(axes_value(a, c, i), v, sizeof(v));
		const char *sep = blame < a->n ? (first ? " (with " : ", ") : (first ? "" : ", ");
		n += (size_t)snprintf(combo + n, sizeof(combo) - n, "%s%s %s", sep, a->name[i], v);
		first = false;
	}
	if (blame < a->n && a->n > 1 && n < sizeof(combo))
		snprintf(combo + n, sizeof(combo) - n, ")");
	struct fault out = {0};
	fault_set(&out, why->kind, "axes: %s: %s", combo, why->details);
	out.retry_after = why->retry_after; /* (after fault_set, which clears it) */
	*f = out;
	return -1;
}

/* ---- the sweep as JSON */

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 10) / 10);
}

static json_t *int_or_null(double v)
{
	return isnan(v) ? json_null() : json_integer((json_int_t)llround(v));
}

struct runs_ctx {
	const struct axes *axes;
	bool full;
	size_t k; /* runs so far: the next is combination k */
	unsigned counts[JOB_NSTATES];
	unsigned started; /* runs that are not queued */
	json_t *table;
};

/* A table row: the figures a sweep is read by, null where the run has none. */
static void run_figures(json_t *row, const struct db_sweep_run *r)
{
	const double *x = r->fig;
	double rp99 = x[DB_SWEEP_READ_OPS] > 0 ? x[DB_SWEEP_READ_P99] : NAN;
	double wp99 = x[DB_SWEEP_WRITE_OPS] > 0 ? x[DB_SWEEP_WRITE_P99] : NAN;
	double p99 = isnan(rp99) ? wp99 : isnan(wp99) ? rp99 : fmax(rp99, wp99);
	double iops = x[DB_SWEEP_IOPS];
	if (isnan(iops) && !isnan(x[DB_SWEEP_READ_IOPS]))
		iops = x[DB_SWEEP_READ_IOPS] +
		       (isnan(x[DB_SWEEP_WRITE_IOPS]) ? 0 : x[DB_SWEEP_WRITE_IOPS]);
	double bps = NAN;
	if (!isnan(x[DB_SWEEP_READ_BPS]) || !isnan(x[DB_SWEEP_WRITE_BPS]))
		bps = (isnan(x[DB_SWEEP_READ_BPS]) ? 0 : x[DB_SWEEP_READ_BPS]) +
		      (isnan(x[DB_SWEEP_WRITE_BPS]) ? 0 : x[DB_SWEEP_WRITE_BPS]);
	json_object_set_new(row, "iops", num_or_null(iops));
	json_object_set_new(row, "read_iops", num_or_null(x[DB_SWEEP_READ_IOPS]));
	json_object_set_new(row, "write_iops", num_or_null(x[DB_SWEEP_WRITE_IOPS]));
	json_object_set_new(row, "p99_ns", int_or_null(p99));
	json_object_set_new(row, "read_p99_ns", int_or_null(rp99));
	json_object_set_new(row, "write_p99_ns", int_or_null(wp99));
	json_object_set_new(row, "bytes_per_s", int_or_null(bps));
}

static int runs_one(void *arg, const struct db_sweep_run *r)
{
	struct runs_ctx *c = arg;
	size_t k = c->k++;
	char state[16];
	snprintf(state, sizeof(state), "%s", r->state);
	/* a live job's row may be ahead of the store's */
	if (jobs_watchable(r->id)) {
		struct db_run *live = xcalloc(1, sizeof(*live));
		struct fault f = {0};
		if (jobs_run_get(r->id, live, &f) == 0) {
			snprintf(state, sizeof(state), "%s", live->state);
			db_run_clear(live);
		}
		free(live);
	}
	enum job_state st;
	if (jobs_state_parse(state, &st) == 0) {
		c->counts[st]++;
		if (st != JOB_QUEUED)
			c->started++;
	}
	if (!c->full)
		return 0;
	json_t *row = json_pack(
	    "{s:I, s:o, s:s}", "job", (json_int_t)r->id, "values",
	    k < c->axes->combinations ? axes_values_json(c->axes, k) : json_null(), "state", state);
	if (r->reason[0] && strcmp(state, "done") != 0)
		json_object_set_new(row, "reason", json_string(r->reason));
	run_figures(row, r);
	json_array_append_new(c->table, row);
	return 0;
}

/* queued: no run has started; running: some are queued or running and some have started;
 * then cancelled (the sweep was), failed (a run ended otherwise than done) or done. */
static const char *sweep_state(const struct db_sweep *s, const struct runs_ctx *c)
{
	unsigned live = c->counts[JOB_QUEUED] + c->counts[JOB_RUNNING];
	if (s->cancelled)
		return "cancelled";
	if (live && !c->started)
		return "queued";
	if (live)
		return "running";
	for (int i = 0; i < JOB_NSTATES; i++)
		if (i != JOB_DONE && c->counts[i])
			return "failed";
	return "done";
}

static bool sweep_live(const struct runs_ctx *c)
{
	return c->counts[JOB_QUEUED] + c->counts[JOB_RUNNING] > 0;
}

static int sweep_read_runs(const struct db_sweep *s, const struct axes *a, bool full,
                           struct runs_ctx *c, struct fault *f)
{
	memset(c, 0, sizeof(*c));
	c->axes = a;
	c->full = full;
	c->table = full ? json_array() : NULL;
	if (db_sweep_runs(sweeps.db, s->id, full, runs_one, c) < 0) {
		json_decref(c->table);
		c->table = NULL;
		return fault_set(f, ERR_INTERNAL, "sweeps: cannot read the runs of sweep %lld",
		                 (long long)s->id);
	}
	return 0;
}

static json_t *sweep_json(const struct db_sweep *s, bool full, struct fault *f)
{
	json_t *axes_o = json_loads(s->axes, 0, NULL);
	json_t *spec = json_loads(s->spec, 0, NULL);
	struct axes a;
	struct fault ignore = {0};
	if (!axes_o || axes_read(axes_o, &a, &ignore) < 0)
		memset(&a, 0, sizeof(a)); /* (stored as checked; no values if it were not) */
	struct runs_ctx c;
	if (sweep_read_runs(s, &a, full, &c, f) < 0) {
		json_decref(axes_o);
		json_decref(spec);
		return NULL;
	}
	char when[32];
	json_t *counts = json_object();
	for (int i = 0; i < JOB_NSTATES; i++)
		json_object_set_new(counts, jobs_state_name((enum job_state)i),
		                    json_integer(c.counts[i]));
	json_t *o =
	    json_pack("{s:I, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:I, s:o}", "id", (json_int_t)s->id,
	              "name", s->name, "label", s->label, "owner", s->owner, "ctime",
	              util_iso8601(s->ctime, when, sizeof(when)), "axes",
	              axes_o ? axes_o : json_object(), "spec", spec ? spec : json_object(), "state",
	              sweep_state(s, &c), "runs", (json_int_t)a.combinations, "counts", counts);
	if (full) {
		json_object_set_new(o, "table", c.table);
		json_object_set_new(o, "knee",
		                    sweep_knee_json(json_object_get(o, "axes"), c.table));
	}
	return o;
}

static int sweep_load(int64_t id, struct db_sweep *s, struct fault *f)
{
	int rc = db_sweep_get(sweeps.db, id, s);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "sweep: no sweep %lld", (long long)id);
	if (rc)
		return fault_set(f, ERR_INTERNAL, "sweeps: cannot read sweep %lld", (long long)id);
	return 0;
}

/* ---- the API's calls */

static int sweep_text(const json_t *body, const char *key, size_t max, const char *dflt, char *out,
                      size_t len, struct fault *f)
{
	const json_t *v = json_object_get(body, key);
	if (!v) {
		snprintf(out, len, "%s", dflt);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) > max)
		return fault_set(f, ERR_INVALID_ARG, "%s: must be a string of at most %zu bytes",
		                 key, max);
	snprintf(out, len, "%s", json_string_value(v));
	return 0;
}

static int sweep_body(const json_t *body, struct db_sweep *s, const json_t **spec, struct axes *a,
                      struct fault *f)
{
	static const char *const members[] = {"name", "label", "spec", "axes"};
	if (!json_is_object(body))
		return fault_set(f, ERR_INVALID_ARG, "body: must be a JSON object");
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)body, key, v)
	{
		size_t i = 0;
		while (i < nitems(members) && strcmp(key, members[i]) != 0)
			i++;
		if (i == nitems(members))
			return fault_set(f, ERR_UNKNOWN_ARG,
			                 "%.40s: unknown; a sweep has name, label, spec and axes",
			                 key);
	}
	*spec = json_object_get(body, "spec");
	if (!*spec)
		return fault_set(f, ERR_MISSING_ARG, "spec: required: the job spec the axes vary");
	if (!json_is_object(*spec))
		return fault_set(f, ERR_INVALID_ARG, "spec: must be a job spec (an object)");
	if (!json_object_get(body, "axes"))
		return fault_set(f, ERR_MISSING_ARG,
		                 "axes: required: spec fields, each a list of values");
	const char *dflt = json_string_value(json_object_get(*spec, "name"));
	if (sweep_text(body, "name", DB_RUN_NAME_MAX, dflt ? dflt : "sweep", s->name,
	               sizeof(s->name), f) < 0 ||
	    sweep_text(body, "label", DB_RUN_LABEL_MAX, "", s->label, sizeof(s->label), f) < 0)
		return -1;
	if (!s->name[0])
		return fault_set(f, ERR_INVALID_ARG, "name: must not be empty");
	return axes_read(json_object_get(body, "axes"), a, f);
}

/* A sweep on its way through the writer thread (dbw.h), and whom to answer. */
struct sweep_op {
	struct db_sweep s;
	size_t runs;
	char user[DB_NAME_MAX + 1], peer[64];
	sweeps_done_fn done;
	void *arg;
	int rc;
	bool full;
};

static struct sweep_op *sweep_op_new(const struct identity *who, const char *peer,
                                     sweeps_done_fn done, void *arg)
{
	struct sweep_op *op = xcalloc(1, sizeof(*op));
	snprintf(op->user, sizeof(op->user), "%s", who->user);
	snprintf(op->peer, sizeof(op->peer), "%s", peer);
	op->done = done;
	op->arg = arg;
	return op;
}

static void sweep_op_free(struct sweep_op *op)
{
	db_sweep_clear(&op->s);
	free(op);
}

/* Answers with the sweep as it reads now. */
static void sweep_op_answer(struct sweep_op *op)
{
	struct fault f = {0};
	json_t *out = sweep_json(&op->s, true, &f);
	op->done(op->arg, out, out ? NULL : &f);
	sweep_op_free(op);
}

static void submit_stored(void *arg, const struct fault *f)
{
	struct sweep_op *op = arg;
	if (f) {
		log_warn("sweeps: sweep %s of %zu runs not stored: %s", op->s.name, op->runs,
		         f->details);
		op->done(op->arg, NULL, f);
		sweep_op_free(op);
		return;
	}
	audit_log(op->user, op->peer, "bench.sweep", op->s.name, true, "sweep %lld (%s), %zu runs",
	          (long long)op->s.id, op->s.name, op->runs);
	log_info("sweeps: sweep %lld (%s): %zu runs queued", (long long)op->s.id, op->s.name,
	         op->runs);
	sweep_op_answer(op);
}

void sweeps_submit(const json_t *body, const struct identity *who, const char *peer,
                   sweeps_done_fn done, void *arg)
{
	struct sweep_op *op = sweep_op_new(who, peer, done, arg);
	const json_t *base = NULL;
	struct axes a;
	struct fault f = {0};
	if (sweep_body(body, &op->s, &base, &a, &f) < 0)
		goto refused;
	if (jobs_queue_room() < a.combinations) {
		fault_set(&f, ERR_BUSY,
		          "axes: %zu combinations, but the queue takes %u more jobs now",
		          a.combinations, jobs_queue_room());
		f.retry_after = 60; /* (after fault_set, which clears it) */
		goto refused;
	}
	/* every combination checked as a job, then the sweep and all its runs stored in one
	 * transaction: a bad combination, a full disk or a crash leaves no part of it */
	struct jobs_batch *b = jobs_batch_new(who);
	for (size_t c = 0; c < a.combinations; c++) {
		json_t *spec = axes_spec(&a, c, base, op->s.name, op->s.label);
		struct fault why = {0};
		int rc = jobs_batch_add(b, spec, &why);
		json_decref(spec);
		if (rc < 0) {
			jobs_batch_free(b);
			axes_fault(&a, c, base, &why, &f);
			goto refused;
		}
	}
	snprintf(op->s.owner, sizeof(op->s.owner), "%s", who->user);
	op->s.ctime = util_now();
	op->s.spec = json_dumps(base, JSON_COMPACT);
	op->s.axes = json_dumps(json_object_get(body, "axes"), JSON_COMPACT);
	op->runs = a.combinations;
	jobs_batch_submit(b, &op->s, peer, submit_stored, op);
	return;
refused:
	done(arg, NULL, &f);
	sweep_op_free(op);
}

struct list_ctx {
	json_t *arr;
	struct fault *f;
};

static int list_one(void *arg, const struct db_sweep *s)
{
	struct list_ctx *c = arg;
	json_t *o = sweep_json(s, false, c->f);
	if (!o)
		return -1;
	json_array_append_new(c->arr, o);
	return 0;
}

int sweeps_list(int64_t before, int limit, json_t **out, struct fault *f)
{
	struct list_ctx c = {json_array(), f};
	if (db_sweep_list(sweeps.db, before, limit, list_one, &c) < 0) {
		json_decref(c.arr);
		if (!f->details[0])
			fault_set(f, ERR_INTERNAL, "sweeps: cannot read the sweeps");
		return -1;
	}
	*out = c.arr;
	return 0;
}

int sweeps_get(int64_t id, json_t **out, struct fault *f)
{
	struct db_sweep s;
	if (sweep_load(id, &s, f) < 0)
		return -1;
	*out = sweep_json(&s, true, f);
	db_sweep_clear(&s);
	return *out ? 0 : -1;
}

static void mark_work(struct db *db, void *arg)
{
	struct sweep_op *op = arg;
	op->rc = db_sweep_set_cancelled(db, op->s.id);
	op->full = op->rc != 0 && db_full(db);
}

/* Marked cancelled (or already so): its jobs are cancelled, whose final rows the writer
 * stores after the mark. */
static void mark_done(void *arg)
{
	struct sweep_op *op = arg;
	struct fault f = {0};
	if (op->rc != 0) {
		fault_store(&f, op->full, "sweep");
		op->done(op->arg, NULL, &f);
		sweep_op_free(op);
		return;
	}
	struct identity who = {0};
	snprintf(who.user, sizeof(who.user), "%s", op->user);
	unsigned n = jobs_cancel_sweep(op->s.id, &who, op->peer);
	op->s.cancelled = true;
	audit_log(op->user, op->peer, "bench.sweep.cancel", op->s.name, true,
	          "sweep %lld (%s), %u jobs cancelled", (long long)op->s.id, op->s.name, n);
	sweep_op_answer(op);
}

static void delete_work(struct db *db, void *arg)
{
	struct sweep_op *op = arg;
	op->rc = db_sweep_delete(db, op->s.id);
	op->full = op->rc != 0 && op->rc != DB_NOTFOUND && db_full(db);
}

static void delete_done(void *arg)
{
	struct sweep_op *op = arg;
	struct fault f = {0};
	if (op->rc == DB_NOTFOUND)
		fault_set(&f, ERR_NOT_FOUND, "sweep: no sweep %lld", (long long)op->s.id);
	else if (op->rc)
		fault_store(&f, op->full, "sweep");
	else
		audit_log(op->user, op->peer, "bench.sweep.delete", op->s.name, true,
		          "sweep %lld (%s) and its runs", (long long)op->s.id, op->s.name);
	op->done(op->arg, NULL, op->rc ? &f : NULL);
	sweep_op_free(op);
}

void sweeps_delete(int64_t id, const struct identity *who, const char *peer, sweeps_done_fn done,
                   void *arg)
{
	struct sweep_op *op = sweep_op_new(who, peer, done, arg);
	struct runs_ctx c;
	struct fault f = {0};
	struct axes none = {0};
	if (sweep_load(id, &op->s, &f) < 0 || sweep_read_runs(&op->s, &none, false, &c, &f) < 0)
		goto refused;
	/* the writes go through the writer thread: a mark or a delete waiting there for the
	 * write lock (while a benchmark's rows are being stored) holds no one else up */
	if (sweep_live(&c)) {
		if (op->s.cancelled)
			mark_done(op);
		else
			dbw_submit(sweeps.db, mark_work, mark_done, op);
		return;
	}
	/* ended: deleting its record is an administrator's call, as for a job */
	if (!(who->perms & PERM_SETTINGS_MODIFY)) {
		fault_set(&f, ERR_DENIED,
		          "authorization: deleting an ended sweep needs settings:modify");
		goto refused;
	}
	dbw_submit(sweeps.db, delete_work, delete_done, op);
	return;
refused:
	done(arg, NULL, &f);
	sweep_op_free(op);
}

/* ---- the knee */

static int point_cmp(const void *x, const void *y)
{
	const struct sweep_point *a = x, *b = y;
	return (a->threads > b->threads) - (a->threads < b->threads);
}

void sweep_knee_find(struct sweep_point *pts, size_t n, struct sweep_knee *out)
{
	memset(out, 0, sizeof(*out));
	if (n < 2) {
		snprintf(out->why, sizeof(out->why),
		         "%zu finished run%s in this group; the knee needs two thread counts or "
		         "more",
		         n, n == 1 ? "" : "s");
		return;
	}
	qsort(pts, n, sizeof(*pts), point_cmp);
	for (size_t i = 0; i + 1 < n; i++) {
		const struct sweep_point *p = &pts[i], *q = &pts[i + 1];
		double gain = p->iops > 0   ? (q->iops - p->iops) / p->iops
		              : q->iops > 0 ? INFINITY
		                            : 0;
		if (gain < SWEEP_KNEE_GAIN && q->p99_ns > p->p99_ns) {
			out->found = true;
			out->threads = p->threads;
			out->iops = p->iops;
			out->p99_ns = p->p99_ns;
			if (p->p99_ns > 0)
				snprintf(out->why, sizeof(out->why),
				         "%g threads gave %+.1f %% IOPS for %+.1f %% p99",
				         q->threads, gain * 100,
				         (q->p99_ns - p->p99_ns) / p->p99_ns * 100);
			else
				snprintf(out->why, sizeof(out->why),
				         "%g threads gave %+.1f %% IOPS for a higher p99",
				         q->threads, gain * 100);
			return;
		}
	}
	snprintf(out->why, sizeof(out->why),
	         "IOPS grew by %g %% or more, or p99 did not grow, at every step up to %g "
	         "threads",
	         SWEEP_KNEE_GAIN * 100, pts[n - 1].threads);
}

static const char *knee_axis(const json_t *axes)
{
	static const char *const names[] = {"threads", "readers", "writers", "sessions"};
	for (size_t i = 0; i < nitems(names); i++)
		if (json_object_get(axes, names[i]))
			return names[i];
	return NULL;
}

/* Does the row's values agree with the group on every axis of the group? */
static bool in_group(const json_t *values, const json_t *group)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)group, key,
	                    v) if (!json_equal(v, json_object_get(values, key))) return false;
	return true;
}

static json_t *knee_entry(const json_t *group, const char *axis, const struct sweep_knee *k)
{
	return json_pack(
	    "{s:O, s:o, s:o, s:o, s:o, s:s}", "group", group, "axis",
	    axis ? json_string(axis) : json_null(), "threads",
	    k->found ? json_integer((json_int_t)llround(k->threads)) : json_null(), "iops",
	    k->found ? json_real(round(k->iops * 10) / 10) : json_null(), "p99_ns",
	    k->found ? json_integer((json_int_t)llround(k->p99_ns)) : json_null(), "why", k->why);
}

json_t *sweep_knee_json(const json_t *axes, const json_t *table)
{
	json_t *out = json_array();
	const char *axis = knee_axis(axes);
	struct sweep_knee k = {0};
	if (!axis) {
		json_t *group = json_object();
		snprintf(k.why, sizeof(k.why),
		         "no threads axis: the knee is over threads (or readers, writers, "
		         "sessions)");
		json_array_append_new(out, knee_entry(group, NULL, &k));
		json_decref(group);
		return out;
	}
	/* the groups: every combination of the other axes' values, in the axes' order */
	const char *names[SWEEP_MAX_AXES];
	const json_t *vals[SWEEP_MAX_AXES];
	size_t m = 0, groups = 1;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)axes, key, v)
	{
		if (strcmp(key, axis) == 0 || m == SWEEP_MAX_AXES || !json_array_size(v))
			continue;
		names[m] = key;
		vals[m] = v;
		groups *= json_array_size(v);
		m++;
	}
	size_t nrows = json_array_size(table);
	struct sweep_point *pts = xcalloc(nrows ? nrows : 1, sizeof(*pts));
	for (size_t g = 0; g < groups; g++) {
		size_t idx[SWEEP_MAX_AXES], rest = g;
		for (size_t i = m; i-- > 0;) { /* the last axis changes fastest */
			idx[i] = rest % json_array_size(vals[i]);
			rest /= json_array_size(vals[i]);
		}
		json_t *group = json_object();
		for (size_t i = 0; i < m; i++)
			json_object_set(group, names[i], json_array_get(vals[i], idx[i]));
		size_t n = 0;
		for (size_t r = 0; r < nrows; r++) {
			const json_t *row = json_array_get(table, r);
			const json_t *values = json_object_get(row, "values");
			const json_t *t = json_object_get(values, axis);
			const json_t *iops = json_object_get(row, "iops");
			const json_t *p99 = json_object_get(row, "p99_ns");
			const char *st = json_string_value(json_object_get(row, "state"));
			if (!st || strcmp(st, "done") != 0 || !json_is_number(t) ||
			    !json_is_number(iops) || !json_is_number(p99) ||
			    !in_group(values, group))
				continue;
			pts[n].threads = json_number_value(t);
			pts[n].iops = json_number_value(iops);
			pts[n].p99_ns = json_number_value(p99);
			n++;
		}
		sweep_knee_find(pts, n, &k);
		json_array_append_new(out, knee_entry(group, axis, &k));
		json_decref(group);
	}
	free(pts);
	return out;
}
