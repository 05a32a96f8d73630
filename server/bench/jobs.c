/* SPDX-License-Identifier: ISC */
/* The benchmark job supervisor. A job is a row in bench_runs and, while queued or running,
 * a struct job here. Running, it is a child spindle-worker (child.h) fed its spec on stdin
 * and confined to the bench dir of its target (job_target.c); every stdout line is checked
 * against the worker's protocol (job_proto.c), anything else stops the worker.
 * While it runs the collector's second-by-second figures for the disk under the target
 * and the box's CPU modes are summed with it, so its result reads like an AWR report next
 * to iostat. Interval lines are kept in memory and written in batches.
 *
 * Writes of a running job (its interval lines every JOBS_FLUSH_S, its row as it starts and
 * as it ends) go to the database writer (dbw.h): the disk under the
 * database may be the one the job is saturating, and the loop must not wait on it. The
 * writer is one thread, so what a job writes lands in the order it was handed over; a job
 * ends (leaves the live list, its streams get their end) once its last write is stored,
 * so until then it reads as running everywhere. */
#define _GNU_SOURCE
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
#include "analytics/collector.h"
#include "db/db.h"
#include "job_env.h"
#include "job_findings.h"
#include "job_proto.h"
#include "job_target.h"
#include "base/log.h"
#include "hardware/problems.h"
#include "net/stream.h"
#include "base/util.h"
#include "worker/spec.h"
#include "db/dbw.h"

/* The one place the states have their names: the JSON and the store hold these. */
static const char *const job_state_names[JOB_NSTATES] = {
    [JOB_QUEUED] = "queued", [JOB_RUNNING] = "running",     [JOB_DONE] = "done",
    [JOB_FAILED] = "failed", [JOB_CANCELLED] = "cancelled", [JOB_INTERRUPTED] = "interrupted",
};

struct jobs_state jobs;

static void jobs_schedule(void);

/* ---- small helpers */

const char *jobs_state_name(enum job_state st)
{
	return (unsigned)st < JOB_NSTATES ? job_state_names[st] : "?";
}

int jobs_state_parse(const char *name, enum job_state *out)
{
	for (int i = 0; i < JOB_NSTATES; i++) {
		if (strcmp(name, job_state_names[i]) == 0) {
			*out = (enum job_state)i;
			return 0;
		}
	}
	return -1;
}

void run_set_state(struct db_run *run, enum job_state st)
{
	snprintf(run->state, sizeof(run->state), "%s", jobs_state_name(st));
}

bool run_is(const struct db_run *run, enum job_state st)
{
	enum job_state have;
	return jobs_state_parse(run->state, &have) == 0 && have == st;
}

void jobs_counts(unsigned *running, unsigned *queued)
{
	*running = jobs.running;
	*queued = jobs.queued;
}

uint64_t jobs_ended_count(enum job_state st)
{
	return (unsigned)st < JOB_NSTATES ? jobs.ended[st] : 0;
}

/* The collector's fill function (collector_set_fill): the running jobs' newest second, for
 * the live datasets bench.ops[direction] and bench.latency[direction]: operations per
 * second summed over the jobs, and their mean latency weighted by operations, [0] read,
 * [1] write; 0 when no job runs. */
static void jobs_fill_sample(void *arg, struct box_sample *s)
{
	double weighted[2] = {0, 0}; /* latency in microseconds x operations */
	for (const struct job *j = TAILQ_FIRST(&jobs.live); j; j = TAILQ_NEXT(j, link)) {
		if (!j->child || !j->seq)
			continue;
		for (int d = 0; d < 2; d++) {
			s->bench_ops_per_s[d] += j->live_iops[d];
			weighted[d] += j->live_iops[d] * j->live_lat_ns[d] / 1000;
		}
	}
	for (int d = 0; d < 2; d++)
		s->bench_latency_ms[d] =
		    (s->bench_ops_per_s[d] > 0 ? weighted[d] / s->bench_ops_per_s[d] : 0) / 1000;
}

json_t *job_iso_or_null(int64_t t)
{
	char buf[32];
	return t ? json_string(util_iso8601(t, buf, sizeof(buf))) : json_null();
}

json_t *job_real1(double v)
{
	return json_real(round(v * 10) / 10);
}

struct job *job_live(int64_t id)
{
	for (struct job *j = TAILQ_FIRST(&jobs.live); j; j = TAILQ_NEXT(j, link))
		if (j->run.id == id)
			return j;
	return NULL;
}

/* ---- the job object */

/* Where it reads and writes (job_target.h), into run.target as well. What the row read
 * before stays when the target is refused before a path is resolved. */
int job_target(struct job *j, struct fault *f)
{
	snprintf(j->where.path, sizeof(j->where.path), "%s", j->run.target);
	int rc = job_target_resolve(&jobs.rules, &j->spec, j->run.id, &j->where, f);
	snprintf(j->run.target, sizeof(j->run.target), "%s", j->where.path);
	return rc;
}

struct job *job_new(void)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->eta_s = -1;
	return j;
}

/* *dst becomes a copy of *src with texts of its own (db_run_clear() it). */
void run_copy(struct db_run *dst, const struct db_run *src)
{
	*dst = *src;
	dst->spec = src->spec ? xstrdup(src->spec) : NULL;
	dst->start = src->start ? xstrdup(src->start) : NULL;
	dst->result = src->result ? xstrdup(src->result) : NULL;
	dst->environment = src->environment ? xstrdup(src->environment) : NULL;
}

static struct db_run *run_dup(const struct db_run *r)
{
	struct db_run *c = xmalloc(sizeof(*c));
	run_copy(c, r);
	return c;
}

static void run_free(struct db_run *r)
{
	if (r) {
		db_run_clear(r);
		free(r);
	}
}

void job_free(struct job *j)
{
	for (size_t i = 0; i < j->nlines; i++)
		free(j->lines[i]);
	free(j->lines);
	free(j->ivs);
	json_decref(j->result);
	db_run_clear(&j->run);
	run_free(j->final);
	free(j);
}

void job_link(struct job *j)
{
	TAILQ_INSERT_TAIL(&jobs.live, j, link);
}

static void job_unlink(struct job *j)
{
	TAILQ_REMOVE(&jobs.live, j, link);
}

void job_set_state(struct job *j, enum job_state st)
{
	j->state = st;
	run_set_state(&j->run, st);
}

/* The row now, on the loop's own connection: for what the caller must know is stored. */
int job_store(struct job *j)
{
	int rc = db_run_update(jobs.db, &j->run);
	if (rc)
		log_err("jobs: job %lld: cannot record its state %s", (long long)j->run.id,
		        j->run.state);
	return rc;
}

/* ---- the writer (dbw.h) */

struct run_write {
	struct job *j; /* on the loop only: the writer's thread reads what is copied here */
	int64_t id;
	struct db_run *row; /* a copy of the row to store, or NULL */
	const char **lines; /* the job's first n lines (the job keeps them until stored) */
	size_t n;
	int64_t first; /* seq of lines[0] */
	bool final;    /* row is the job's last: once stored the job has ended */
	int rc;
	bool full; /* it failed for want of space */
};

static void run_write_work(struct db *db, void *arg)
{
	struct run_write *w = arg;
	w->rc = db_run_save(db, w->id, w->row, w->first, w->lines, w->n);
	w->full = w->rc != 0 && db_full(db);
}

static void job_ended(struct job *j);
static void job_write(struct job *j, struct db_run *row, bool final);

static void run_write_done(void *arg)
{
	struct run_write *w = arg;
	struct job *j = w->j;
	j->pending--;
	if (w->n) {
		j->writing = false;
		if (w->rc == 0) {
			for (size_t i = 0; i < w->n; i++)
				free(j->lines[i]);
			j->nlines -= w->n;
			memmove(j->lines, j->lines + w->n, j->nlines * sizeof(*j->lines));
			j->flushed += (int64_t)w->n;
		} /* else they stay, for the next flush */
	}
	if (w->rc != 0 && !(w->final && j->unstored))
		log_err("jobs: job %lld: cannot record %s", (long long)j->run.id,
		        !w->row ? "its interval lines"
		        : w->n  ? "its interval lines and its state"
		                : "its state");
	bool final = w->final, had_lines = w->n > 0, stored = w->rc == 0, full = w->full;
	if (!final)
		run_free(w->row);
	free(w->lines);
	free(w);
	if (j->dropped) {
		if (!j->pending)
			job_free(j);
		return;
	}
	if (final && !stored && !jobs.stopping) {
		/* the end of a run is not dropped for a failing writer (a full disk): the job
		 * stays, reading as it ended, and jobs_flush_tick hands the row over again */
		if (!j->unstored)
			log_warn("jobs: job %lld: its end (%s) is kept in memory and stored once "
			         "the database takes it",
			         (long long)j->run.id, j->final->state);
		j->unstored = true;
		j->unstored_full = full;
	} else if (final) {
		if (!stored) /* stopping: the next start marks it interrupted */
			log_err("jobs: job %lld: its end (%s) is lost", (long long)j->run.id,
			        j->final->state);
		job_ended(j);
	} else if (had_lines && j->finishing) {
		job_write(j, j->final, true); /* the end waited for these lines (job_finish) */
	}
}

/* Hands the writer (dbw.h) the row (ours to free; NULL: none) and the lines not yet with
 * it. One batch of lines at a time: the next waits for this one's answer. */
static void job_write(struct job *j, struct db_run *row, bool final)
{
	struct run_write *w = xcalloc(1, sizeof(*w));
	w->j = j;
	w->id = j->run.id;
	w->row = row;
	w->final = final;
	if (!j->writing && j->nlines) {
		w->n = j->nlines;
		w->first = j->flushed + 1;
		w->lines = xmalloc(w->n * sizeof(*w->lines));
		memcpy(w->lines, j->lines, w->n * sizeof(*w->lines));
		j->writing = true;
	}
	if (!w->n && !w->row) {
		free(w);
		return;
	}
	j->pending++; /* before: without a writer thread, done runs inside dbw_submit */
	dbw_submit(jobs.db, run_write_work, run_write_done, w);
}

static void jobs_flush_tick(evutil_socket_t fd, short what, void *arg)
{
	for (struct job *j = TAILQ_FIRST(&jobs.live), *next; j; j = next) {
		next = TAILQ_NEXT(j, link); /* (without a writer thread j may end in job_write) */
		if (j->child && !j->finishing)
			job_write(j, NULL, false);
		else if (j->unstored && !j->pending)
			job_write(j, j->final, true);
	}
}

/* ---- the environment (job_env.h) */

/* Resolves the job's environment; it starts once that is stored in its row. */
void job_env_begin(struct job *j)
{
	j->env_pending = true;
	job_env_resolve(j->run.id, j->where.path, j->where.device);
}

/* A target on ZFS: the pool's disks (the environment's zfs.disks) stand for its disk. */
static void job_pool_from_env(struct job *j, const char *text)
{
	json_t *e = text ? json_loads(text, 0, NULL) : NULL;
	const json_t *zfs = json_object_get(e, "zfs");
	const json_t *disks = json_object_get(zfs, "disks"), *d;
	size_t i;
	j->npool = 0;
	json_array_foreach(disks, i, d)
	{
		if (j->npool < JOBS_POOL_DISKS && json_is_string(d))
			snprintf(j->pool_disks[j->npool++], sizeof(j->pool_disks[0]), "%.31s",
			         json_string_value(d));
	}
	snprintf(j->pool, sizeof(j->pool), "%s",
	         json_is_string(json_object_get(zfs, "pool"))
	             ? json_string_value(json_object_get(zfs, "pool"))
	             : "");
	json_decref(e);
}

/* job_env's done: the environment joins the row, and the job may start. */
static void job_env_done(int64_t id, char *text)
{
	struct job *j = job_live(id);
	if (!j || j->finishing) { /* cancelled meanwhile: its end is written without */
		free(text);
		return;
	}
	j->env_pending = false;
	free(j->run.environment);
	j->run.environment = text;
	if (!j->where.disk[0])
		job_pool_from_env(j, text);
	job_write(j, run_dup(&j->run), false);
	event_active(jobs.kick, 0, 0);
}

/* ---- progress streams */

/* A line as an NDJSON line, or as the data of an SSE event named for its type. */
void watcher_send(struct watcher *w, const char *event, const char *line, size_t len)
{
	if (w->sse)
		stream_event(w->s, NULL, event, line, len);
	else
		stream_line(w->s, line, len);
}

static void watcher_detach(struct watcher *w)
{
	LIST_REMOVE(w, link);
	jobs.watchers--;
	free(w);
}

/* A job's end line: its state and why. */
json_t *job_end_line(const struct db_run *run)
{
	json_t *o = json_pack("{s:s, s:I, s:s}", "type", "end", "id", (json_int_t)run->id, "state",
	                      run->state);
	if (run->reason[0])
		json_object_set_new(o, "reason", json_string(run->reason));
	return o;
}

/* The end line, then the end of the body (http.c sends it once the line is out). */
static void watcher_end(struct watcher *w, const struct db_run *run)
{
	json_t *o = job_end_line(run);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	watcher_send(w, "end", text, strlen(text));
	free(text);
	stream_end(w->s);
	watcher_detach(w);
}

void watcher_hook(struct stream *s, enum stream_event ev, void *arg)
{
	struct watcher *w = arg;
	if (ev == STREAM_SERVER_STOPPING || ev == STREAM_ACCESS_ENDED) {
		struct db_run tmp = w->job->run;
		snprintf(tmp.reason, sizeof(tmp.reason), "%s",
		         ev == STREAM_SERVER_STOPPING
		             ? "the server is stopping"
		             : "the stream's user, its password or authorizations changed, or its "
		               "session ended");
		watcher_end(w, &tmp);
		return;
	}
	watcher_detach(w);
}

/* ---- the collector's figures */

/* Is the collector's disk one the job's figures come from: the target's disk, or on a ZFS
 * pool, one of the pool's? */
static bool job_disk(const struct job *j, const char *name)
{
	if (!j->npool)
		return j->where.disk[0] && strcmp(name, j->where.disk) == 0;
	for (unsigned i = 0; i < j->npool; i++)
		if (strcmp(name, j->pool_disks[i]) == 0)
			return true;
	return false;
}

/* The second's figures of the job's disks as one: rates, queues and counters summed; busy
 * is the busiest disk's (a pool is as busy as its busiest member); io_ms the disks' mean. */
static unsigned job_disks_sample(const struct job *j, const struct box_sample *s,
                                 struct disk_sample *sum)
{
	unsigned found = 0;
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		if (!job_disk(j, d->name))
			continue;
		found++;
		sum->reads_per_s += d->reads_per_s;
		sum->writes_per_s += d->writes_per_s;
		sum->read_bytes_per_s += d->read_bytes_per_s;
		sum->write_bytes_per_s += d->write_bytes_per_s;
		/* latencies weighted by operations, divided back below */
		sum->read_latency_ms += d->read_latency_ms * d->reads_per_s;
		sum->write_latency_ms += d->write_latency_ms * d->writes_per_s;
		if (d->busy_pct > sum->busy_pct)
			sum->busy_pct = d->busy_pct;
		sum->queue += d->queue;
		sum->reads += d->reads;
		sum->writes += d->writes;
		sum->read_bytes += d->read_bytes;
		sum->write_bytes += d->write_bytes;
		sum->read_ms += d->read_ms;
		sum->write_ms += d->write_ms;
		sum->io_ms += d->io_ms;
		sum->read_merges += d->read_merges;
		sum->write_merges += d->write_merges;
		sum->weighted_ms += d->weighted_ms;
		sum->in_flight += d->in_flight;
	}
	if (found) {
		sum->read_latency_ms =
		    sum->reads_per_s > 0 ? sum->read_latency_ms / sum->reads_per_s : 0;
		sum->write_latency_ms =
		    sum->writes_per_s > 0 ? sum->write_latency_ms / sum->writes_per_s : 0;
		sum->io_ms /= found;
	}
	return found;
}

/* The second's completions of the job's disks by latency, where the helper streams. */
static void job_add_latencies(struct job *j, const struct box_sample *s)
{
	j->lat_seconds++;
	for (int i = 0; i < s->ndisks; i++) {
		const struct iohist_disk *h;
		if (!job_disk(j, s->disks[i].name) || !(h = iohist_get(s->disks[i].name)))
			continue;
		for (int dir = 0; dir < IOLAT_DIRS; dir++)
			for (unsigned b = 0; b < IOLAT_LAT_BUCKETS; b++)
				j->dev_lat[dir][b] += h->lat[dir][b];
	}
}

static void jobs_tick(void *arg, const struct box_sample *s)
{
	for (struct job *j = TAILQ_FIRST(&jobs.live); j; j = TAILQ_NEXT(j, link)) {
		/* only seconds the measured phase covers whole: a partial one would mix in
		 * what the disk did before the job */
		if (!j->child || !j->measuring || (s->time - 1) * 1000 < j->measure_ms)
			continue;
		for (int m = 0; m < CPU_MODES; m++)
			j->cpu[m] += s->cpu_pct[m];
		j->cpu_seconds++;
		j->ncpus = s->ncpus;
		if (s->have_arc) {
			j->arc_seconds++;
			j->arc_hits += s->arc_hits_per_s;
			j->arc_misses += s->arc_misses_per_s;
			j->arc_iohits += s->arc_have_iohits ? s->arc_iohits_per_s : 0;
		}
		struct disk_sample d;
		if (!job_disks_sample(j, s, &d))
			continue;
		if (s->have_iohist)
			job_add_latencies(j, s);
		j->dev_seconds++;
		j->reads += d.reads_per_s;
		j->writes += d.writes_per_s;
		j->rbytes += d.read_bytes_per_s;
		j->wbytes += d.write_bytes_per_s;
		j->busy += d.busy_pct;
		j->queue += d.queue;
		j->rlat_ops += d.read_latency_ms * d.reads_per_s;
		j->wlat_ops += d.write_latency_ms * d.writes_per_s;
		if (j->dev_seconds == 1) {
			j->raw_first = d;
			j->raw_first_time = s->time;
		}
		j->raw_last = d;
		j->raw_last_time = s->time;
	}
}

static void jobs_subscription(void)
{
	bool want = jobs.running > 0 && !jobs.stopping;
	iohist_want(IOHIST_FOR_JOBS, want); /* a run keeps its disks' latencies */
	if (want && !jobs.subscribed)
		jobs.subscribed = collector_subscribe(jobs_tick, NULL) == 0;
	else if (!want && jobs.subscribed) {
		collector_unsubscribe(jobs_tick, NULL);
		jobs.subscribed = false;
	}
}

/* The bucket [low, high) holding the pct-th percentile (nearest rank) of n counts; high is
 * null for the last bucket, open above. */
static json_t *lat_percentile(const uint64_t *counts, uint64_t total, double pct)
{
	uint64_t rank = (uint64_t)ceil(pct / 100 * (double)total), seen = 0;
	unsigned b = 0;
	for (; b < IOLAT_LAT_BUCKETS - 1; b++)
		if ((seen += counts[b]) >= rank)
			break;
	return json_pack("{s:I, s:o}", "low", (json_int_t)iolat_lat_low(b), "high",
	                 b < IOLAT_LAT_BUCKETS - 1 ? json_integer((json_int_t)iolat_lat_low(b + 1))
	                                           : json_null());
}

/* The disks' latencies over the measured seconds, each direction with operations: how many,
 * the buckets of p50 .. p99.99 and every bucket with any. */
static json_t *job_latency_json(const struct job *j)
{
	static const char *const dirs[IOLAT_DIRS] = {"read", "write"};
	static const double pcts[] = {50, 90, 99, 99.9, 99.99};
	static const char *const names[] = {"p50_ns", "p90_ns", "p99_ns", "p99.9_ns", "p99.99_ns"};
	json_t *lat = json_pack("{s:s, s:i}", "source",
	                        "spindle-iolat: the block layer's completions, from the request's "
	                        "start to its end, in buckets of a quarter of a power of two",
	                        "seconds", (int)j->lat_seconds);
	for (int d = 0; d < IOLAT_DIRS; d++) {
		uint64_t total = 0;
		for (unsigned b = 0; b < IOLAT_LAT_BUCKETS; b++)
			total += j->dev_lat[d][b];
		if (!total)
			continue;
		json_t *o = json_pack("{s:I}", "ops", (json_int_t)total), *buckets = json_array();
		for (size_t p = 0; p < nitems(pcts); p++)
			json_object_set_new(o, names[p],
			                    lat_percentile(j->dev_lat[d], total, pcts[p]));
		for (unsigned b = 0; b < IOLAT_LAT_BUCKETS; b++)
			if (j->dev_lat[d][b])
				json_array_append_new(
				    buckets,
				    json_pack("{s:I, s:o, s:I}", "low_ns",
				              (json_int_t)iolat_lat_low(b), "high_ns",
				              b < IOLAT_LAT_BUCKETS - 1
				                  ? json_integer((json_int_t)iolat_lat_low(b + 1))
				                  : json_null(),
				              "ops", (json_int_t)j->dev_lat[d][b]));
		json_object_set_new(o, "buckets", buckets);
		json_object_set_new(lat, dirs[d], o);
	}
	return lat;
}

/* What the collector saw while the job was measured, next to the worker's own figures. */
static void job_add_figures(struct job *j, json_t *res)
{
	json_t *dev;
	const char *disk = j->npool ? j->pool : j->where.disk;
	if (disk[0] && j->dev_seconds) {
		double n = j->dev_seconds;
		dev = json_pack(
		    "{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "disk", disk,
		    "seconds", (int)j->dev_seconds, "reads_per_s", job_real1(j->reads / n),
		    "writes_per_s", job_real1(j->writes / n), "ops_per_s",
		    job_real1((j->reads + j->writes) / n), "read_bytes_per_s",
		    json_integer((json_int_t)llround(j->rbytes / n)), "write_bytes_per_s",
		    json_integer((json_int_t)llround(j->wbytes / n)), "busy_pct",
		    job_real1(j->busy / n), "queue", job_real1(j->queue / n), "read_latency_ms",
		    json_real(j->reads > 0 ? round(j->rlat_ops / j->reads * 1000) / 1000 : 0),
		    "write_latency_ms",
		    json_real(j->writes > 0 ? round(j->wlat_ops / j->writes * 1000) / 1000 : 0));
		if (j->raw_last_time > j->raw_first_time) {
			/* from the end of the first measured second to the end of the last */
			const struct disk_sample *a = &j->raw_first, *b = &j->raw_last;
			json_object_set_new(
			    dev, "counters",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "ms",
			              (json_int_t)(j->raw_last_time - j->raw_first_time) * 1000,
			              "read_ios", (json_int_t)(b->reads - a->reads), "write_ios",
			              (json_int_t)(b->writes - a->writes), "read_merges",
			              (json_int_t)(b->read_merges - a->read_merges), "write_merges",
			              (json_int_t)(b->write_merges - a->write_merges), "read_ticks",
			              (json_int_t)(b->read_ms - a->read_ms), "write_ticks",
			              (json_int_t)(b->write_ms - a->write_ms), "in_queue",
			              (json_int_t)(b->weighted_ms - a->weighted_ms), "io_ticks",
			              (json_int_t)(b->io_ms - a->io_ms)));
		}
	} else {
		dev = json_pack("{s:o, s:s}", "disk", disk[0] ? json_string(disk) : json_null(),
		                "why",
		                j->npool  ? "the collector had no sample of the pool's disks while "
		                            "the job was measured"
		                : disk[0] ? "the collector had no sample of the disk while the "
		                            "job was measured"
		                          : j->where.disk_why);
	}
	if (j->lat_seconds)
		json_object_set_new(dev, "latency", job_latency_json(j));
	if (j->npool) {
		json_t *members = json_array();
		for (unsigned i = 0; i < j->npool; i++)
			json_array_append_new(members, json_string(j->pool_disks[i]));
		json_object_set_new(dev, "pool_disks", members);
	}
	json_object_set_new(res, "device", dev);
	static const char *const mode_keys[CPU_MODES] = {
	    [CPU_USER] = "user_pct",     [CPU_NICE] = "nice_pct", [CPU_SYSTEM] = "system_pct",
	    [CPU_IOWAIT] = "iowait_pct", [CPU_IRQ] = "irq_pct",   [CPU_SOFTIRQ] = "softirq_pct",
	    [CPU_STEAL] = "steal_pct",   [CPU_IDLE] = "idle_pct",
	};
	json_t *cpu = json_pack("{s:i}", "seconds", (int)j->cpu_seconds);
	if (j->ncpus > 0)
		json_object_set_new(cpu, "cpus", json_integer(j->ncpus));
	for (int m = 0; m < CPU_MODES; m++)
		json_object_set_new(cpu, mode_keys[m],
		                    j->cpu_seconds ? job_real1(j->cpu[m] / j->cpu_seconds)
		                                   : json_null());
	json_object_set_new(res, "box_cpu", cpu);
	if (j->arc_seconds) {
		double n = j->arc_seconds, all = j->arc_hits + j->arc_iohits + j->arc_misses;
		json_object_set_new(
		    res, "arc",
		    json_pack("{s:i, s:o, s:o, s:o}", "seconds", (int)j->arc_seconds, "hits_per_s",
		              job_real1(j->arc_hits / n), "misses_per_s",
		              job_real1(j->arc_misses / n), "hit_pct",
		              all > 0 ? job_real1(j->arc_hits / all * 100) : json_null()));
	}

	/* the line one reads first: the worker's IOPS, the disk's, the CPU share */
	double iops = 0;
	const char *dirs[] = {"read", "write"};
	for (int d = 0; d < 2; d++)
		iops += json_number_value(json_object_get(json_object_get(res, dirs[d]), "iops"));
	json_t *sum = json_pack("{s:o}", "iops", job_real1(iops));
	json_object_set(sum, "disk", json_object_get(dev, "disk"));
	json_t *dops = json_object_get(dev, "ops_per_s");
	json_object_set_new(sum, "disk_iops", dops ? json_copy(dops) : json_null());
	json_object_set(sum, "cpu_user_pct", json_object_get(cpu, "user_pct"));
	json_object_set(sum, "cpu_system_pct", json_object_get(cpu, "system_pct"));
	json_object_set_new(res, "summary", sum);
}

/* ---- the worker's protocol (checked in job_proto.c) */

/* What an interval line (already checked) says about the job now. */
static void job_interval(struct job *j, const json_t *o)
{
	const char *phase = json_string_value(json_object_get(o, "phase"));
	const json_t *eta = json_object_get(o, "eta_s");
	j->seq++;
	j->progress_pct = json_number_value(json_object_get(o, "progress_pct"));
	static const char *const dirs[2] = {"read", "write"};
	for (int d = 0; d < 2; d++) {
		const json_t *x = json_object_get(o, dirs[d]);
		j->live_iops[d] = json_number_value(json_object_get(x, "iops"));
		j->live_lat_ns[d] = json_number_value(json_object_get(x, "lat_mean_ns"));
	}
	j->eta_s = json_is_null(eta) ? -1 : json_number_value(eta);
	/* the last ramp interval ends where the measured phase begins */
	if (!j->measuring &&
	    (strcmp(phase, "measure") == 0 || json_number_value(json_object_get(o, "t_s")) + 0.05 >=
	                                          (double)j->spec.ramp_ms / 1e3)) {
		j->measuring = true;
		j->measure_ms = util_now_ms();
	}
}

/* What the findings read of an interval (checked): a few numbers a second, not the line,
 * as the lines themselves go to the store while the job runs. */
static void job_keep_interval(struct job *j, const json_t *o)
{
	if (j->nivs >= JOBS_MAX_KEPT_INTERVALS)
		return;
	j->ivs = util_grow(j->ivs, &j->ivs_cap, j->nivs, sizeof(*j->ivs));
	struct kept_interval *k = &j->ivs[j->nivs++];
	k->elapsed_s = json_number_value(json_object_get(o, "elapsed_s"));
	k->iops = json_number_value(json_object_get(json_object_get(o, "read"), "iops")) +
	          json_number_value(json_object_get(json_object_get(o, "write"), "iops"));
	k->measure = strcmp(json_string_value(json_object_get(o, "phase")), "measure") == 0;
	k->pass = json_object_get(o, "pass") != NULL;
}

/* The kept intervals in the shape of the lines, for findings_compute. */
static json_t *job_kept_intervals(const struct job *j)
{
	json_t *a = json_array();
	for (size_t i = 0; i < j->nivs; i++) {
		const struct kept_interval *k = &j->ivs[i];
		json_t *o = json_pack("{s:s, s:f, s:{s:f}, s:{s:i}}", "phase",
		                      k->measure ? "measure" : "ramp", "elapsed_s", k->elapsed_s,
		                      "read", "iops", k->iops, "write", "iops", 0);
		if (k->pass)
			json_object_set_new(o, "pass", json_true());
		json_array_append_new(a, o);
	}
	return a;
}

static void job_protocol_error(struct job *j, const char *why)
{
	if (j->protocol_error)
		return;
	j->protocol_error = true;
	snprintf(j->run.reason, sizeof(j->run.reason), "worker: protocol violation: %s", why);
	log_warn("jobs: job %lld: %s; stopping the worker", (long long)j->run.id, j->run.reason);
	if (j->child)
		child_kill(j->child, SIGKILL);
}

/* Every line is checked before it is believed: a worker that says anything else is
 * stopped, as a relay drops a peer that breaks its message format. */
static void job_on_line(void *arg, const char *line, size_t len)
{
	struct job *j = arg;
	char err[256] = "";
	if (j->protocol_error)
		return;
	struct job_proto_state st = {j->have_start, j->have_result || j->have_error, j->seq};
	struct job_proto_line pl;
	if (job_proto_line(&st, line, len, &pl, err, sizeof(err)) < 0) {
		job_protocol_error(j, err);
		return;
	}
	json_t *o = pl.obj;
	switch (pl.type) {
	case JOB_PROTO_START:
		j->have_start = true;
		j->measuring = j->spec.ramp_ms == 0;
		j->measure_ms = util_now_ms();
		free(j->run.start);
		json_object_del(o, "type");
		j->run.start = json_dumps(o, JSON_COMPACT);
		char *with = job_env_set_worker(j->run.environment,
		                                json_string_value(json_object_get(o, "worker")));
		if (with) {
			free(j->run.environment);
			j->run.environment = with;
		}
		job_write(j, run_dup(&j->run), false);
		break;
	case JOB_PROTO_INTERVAL: {
		job_interval(j, o);
		char *text = xstrndup(line, len);
		for (struct watcher *w = LIST_FIRST(&j->watchers); w; w = LIST_NEXT(w, link))
			watcher_send(w, "interval", text, len);
		j->lines = util_grow(j->lines, &j->cap, j->nlines, sizeof(*j->lines));
		j->lines[j->nlines++] = text;
		job_keep_interval(j, o);
		break;
	}
	case JOB_PROTO_RESULT:
		j->have_result = true;
		json_object_del(o, "type");
		json_decref(j->result);
		j->result = json_incref(o);
		break;
	case JOB_PROTO_ERROR:
		j->have_error = true;
		snprintf(j->error_msg, sizeof(j->error_msg), "%s",
		         json_string_value(json_object_get(o, "message")));
		if (pl.partial) {
			json_decref(j->result);
			j->result = json_copy((json_t *)pl.partial);
			json_object_set_new(j->result, "partial", json_true());
			json_object_del(j->result, "type");
		}
		break;
	}
	json_decref(o);
}

/* ---- running */

/* The findings and the per-second spread, from the figures just added and the intervals. */
static void job_add_findings(struct job *j, json_t *res)
{
	json_t *spec = j->run.spec ? json_loads(j->run.spec, 0, NULL) : NULL;
	json_t *env = j->run.environment ? json_loads(j->run.environment, 0, NULL) : NULL;
	json_t *ivs = job_kept_intervals(j);
	json_t *stab = findings_stability(ivs);
	if (stab)
		json_object_set_new(res, "stability", stab);
	json_object_set_new(res, "findings", findings_compute(spec, env, res, ivs));
	json_decref(ivs);
	json_decref(spec);
	json_decref(env);
}

/* The job has stopped (or never ran): its last row goes to the writer after any lines; it
 * ends when that is stored (job_ended). Until then it reads as it did. */
void job_finish(struct job *j, enum job_state state)
{
	struct db_run *fin = run_dup(&j->run);
	run_set_state(fin, state);
	fin->end_time = util_now();
	if (j->result) {
		job_add_figures(j, j->result);
		job_add_findings(j, j->result);
		free(fin->result);
		fin->result = json_dumps(j->result, JSON_COMPACT);
	}
	j->final = fin;
	j->finishing = true;
	if (!j->writing)
		job_write(j, fin, true);
}

static void job_ended(struct job *j)
{
	struct db_run *fin = j->final;
	/* the final row is the last write handed over, and only a stopped job has one */
	assert(j->pending == 0 && !j->child);
	while (!LIST_EMPTY(&j->watchers))
		watcher_end(LIST_FIRST(&j->watchers), fin);
	job_unlink(j);
	log_info("jobs: job %lld (%s) %s%s%s", (long long)fin->id, fin->name, fin->state,
	         fin->reason[0] ? ": " : "", fin->reason);
	problems_job_ended((long long)fin->id, fin->name, fin->state, fin->reason);
	enum job_state st;
	if (jobs_state_parse(fin->state, &st) == 0)
		jobs.ended[st]++;
	job_free(j); /* and fin with it */
}

static void job_on_exit(void *arg, const struct child_result *res)
{
	struct job *j = arg;
	j->child = NULL;
	jobs.running--;
	enum job_state state = JOB_FAILED;
	char *reason = j->run.reason;
	size_t rlen = sizeof(j->run.reason);
	if (j->cancel) {
		state = JOB_CANCELLED;
		snprintf(reason, rlen, "cancelled by %s", j->cancel_by);
	} else if (jobs.stopping) {
		state = JOB_INTERRUPTED;
		snprintf(reason, rlen, "the daemon stopped while it ran");
	} else if (j->protocol_error) {
		/* the reason is set */
	} else if (res->timed_out) {
		snprintf(reason, rlen, "stopped: it ran past its limit of %lld s",
		         (long long)(j->spec.runtime_ms
		                         ? (j->spec.ramp_ms + j->spec.runtime_ms) / 1000
		                         : (uint64_t)jobs.cfg.max_runtime_s) +
		             jobs.cfg.limit_slack_s);
	} else if (res->signal) {
		const char *abbrev = sigabbrev_np(res->signal);
		snprintf(reason, rlen, "the worker was killed by SIG%s (signal %d)",
		         abbrev ? abbrev : "?", res->signal);
	} else if (res->exited && res->exit_code == 0 && j->have_result) {
		state = JOB_DONE;
		reason[0] = '\0';
	} else if (j->have_error) {
		snprintf(reason, rlen, "%s", j->error_msg);
	} else if (res->exited && res->exit_code == 0) {
		snprintf(reason, rlen, "the worker exited without a result");
	} else {
		snprintf(reason, rlen, "the worker exited with status %d%s%.200s", res->exit_code,
		         res->err_len ? ": " : "", res->err_len ? res->err : "");
	}
	if (state != JOB_DONE && j->result && !json_object_get(j->result, "partial"))
		json_object_set_new(j->result, "partial", json_true());
	job_finish(j, state);
	jobs_subscription();
	if (!jobs.stopping)
		event_active(jobs.kick, 0, 0);
}

/* Runs past ramp + runtime (or the configured limit for an amount) + slack are stopped. */
static int job_limit_ms(const struct job *j)
{
	long long s = j->spec.runtime_ms
	                  ? (long long)((j->spec.ramp_ms + j->spec.runtime_ms + 999) / 1000)
	                  : jobs.cfg.max_runtime_s;
	s += jobs.cfg.limit_slack_s;
	return s > INT_MAX / 1000 ? INT_MAX : (int)(s * 1000);
}

static void job_start(struct job *j)
{
	char *argv[10], nice[16];
	int n = 0;
	argv[n++] = (char *)jobs.cfg.worker;
	argv[n++] = "--spec";
	argv[n++] = "-";
	/* the worker's threads may keep every CPU busy: niced, they leave the loop (and so
	 * the dashboard) its share; the I/O they do is the same */
	snprintf(nice, sizeof(nice), "%d", UTIL_NICE_BACKGROUND);
	argv[n++] = "--nice";
	argv[n++] = nice;
	if (!j->where.device) {
		argv[n++] = "--confine";
		argv[n++] = j->where.confine;
	}
	argv[n] = NULL;
	struct child_opts o = {
	    .argv = argv,
	    .stdin_data = j->run.spec,
	    .stdin_len = strlen(j->run.spec),
	    .timeout_ms = job_limit_ms(j),
	    .kill_grace_ms = JOBS_KILL_GRACE_MS,
	    .max_output = JOBS_MAX_LINE,
	    .on_line = job_on_line,
	    .on_exit = job_on_exit,
	    .arg = j,
	};
	char err[256];
	jobs.queued--;
	struct fault f = {0};
	if (job_target_check_space(&jobs.rules, &j->spec, &j->where, &f) <
	    0) { /* jobs before it may have filled the disk */
		snprintf(j->run.reason, sizeof(j->run.reason), "at its start: %s", f.details);
		job_finish(j, JOB_FAILED);
		return;
	}
	job_target_find_disk(&jobs.rules, &j->where);
	j->run.start_time = util_now();
	j->child = child_spawn(&o, err, sizeof(err));
	if (!j->child) {
		snprintf(j->run.reason, sizeof(j->run.reason), "worker: %s", err);
		job_finish(j, JOB_FAILED);
		return;
	}
	jobs.running++;
	job_set_state(j, JOB_RUNNING);
	job_write(j, run_dup(&j->run), false);
	jobs_subscription();
	log_info("jobs: job %lld (%s) started: worker %d on %s", (long long)j->run.id, j->run.name,
	         (int)child_pid(j->child), j->run.target);
}

/* Is a run of the sweep running? Its runs go one at a time: a run measured beside another
 * of its own would not be the point of the table it makes (and they share a file). */
static bool sweep_busy(int64_t sweep)
{
	for (const struct job *j = TAILQ_FIRST(&jobs.live); sweep && j; j = TAILQ_NEXT(j, link))
		if (j->run.sweep == sweep && j->child)
			return true;
	return false;
}

static void jobs_schedule(void)
{
	if (jobs.stopping || !jobs.ready)
		return;
	for (struct job *j = TAILQ_FIRST(&jobs.live);
	     j && jobs.running < (unsigned)jobs.cfg.concurrency;) {
		struct job *next = TAILQ_NEXT(j, link);
		/* a job cancelled in the queue still reads "queued" until its end is stored */
		if (!j->child && !j->finishing && !j->env_pending && j->state == JOB_QUEUED &&
		    !sweep_busy(j->run.sweep))
			job_start(j);
		j = next;
	}
}

static void jobs_kick(evutil_socket_t fd, short what, void *arg)
{
	jobs_schedule();
}

const struct spec_limits *jobs_limits(void)
{
	static struct spec_limits lim;
	lim.max_runtime_ms = (uint64_t)jobs.cfg.max_runtime_s * 1000;
	lim.max_runtime_why = "bench_max_runtime";
	return &lim;
}

/* ---- start and stop */

static int queued_one(void *arg, int64_t id)
{
	struct job *j = job_new();
	struct spec_errors errs;
	struct fault f = {0};
	if (db_run_get(jobs.db, id, &j->run) != 0) {
		job_free(j);
		return 0;
	}
	j->state = JOB_QUEUED; /* (the store gives the queued ones) */
	json_t *spec = json_loads(j->run.spec ? j->run.spec : "", 0, NULL);
	int rc = spec ? spec_parse_limited(spec, jobs_limits(), &j->spec, &errs) : -1;
	json_decref(spec);
	if (rc == 0)
		rc = job_target(j, &f);
	else
		fault_set(&f, ERR_INVALID_ARG, "%s", spec ? errs.e[0].message : "spec: unreadable");
	if (rc < 0) {
		/* the settings changed under it: it cannot run any more */
		job_set_state(j, JOB_FAILED);
		snprintf(j->run.reason, sizeof(j->run.reason), "at restart: %s", f.details);
		j->run.end_time = util_now();
		job_store(j);
		job_free(j);
		return 0;
	}
	job_link(j);
	jobs.queued++;
	if (!j->run.environment) /* the daemon stopped before it was resolved */
		job_env_begin(j);
	return 0;
}

/* The worker beside this daemon: server/worker/ in the build tree, ../bin when installed
 * (spindled in sbin); else whatever PATH finds. */
static const char *jobs_default_worker(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			static const char *const rel[] = {"/worker/spindle-worker",
			                                  "/../bin/spindle-worker"};
			for (size_t i = 0; i < nitems(rel); i++) {
				snprintf(path, sizeof(path), "%.*s%s", (int)(PATH_MAX - 32), self,
				         rel[i]);
				if (access(path, X_OK) == 0)
					return path;
			}
		}
	}
	return "spindle-worker";
}

int jobs_init(struct event_base *base, struct db *db, const struct jobs_config *cfg)
{
	memset(&jobs, 0, sizeof(jobs));
	TAILQ_INIT(&jobs.live);
	jobs.base = base;
	jobs.db = db;
	jobs.cfg = *cfg;
	if (!jobs.cfg.worker || !*jobs.cfg.worker)
		jobs.cfg.worker = jobs_default_worker();
	log_info("jobs: worker %s, concurrency %d", jobs.cfg.worker, jobs.cfg.concurrency);
	if (jobs.cfg.concurrency < 1)
		jobs.cfg.concurrency = 1;
	jobs.rules.allow_devices = cfg->allow_devices;
	jobs.rules.sys_root = cfg->sys_root;
	jobs.rules.reserve_bytes = cfg->reserve_bytes;
	jobs.rules.reserve_pct = cfg->reserve_pct;
	jobs.rules.reserve_text = cfg->reserve_text;
	char list[PATH_MAX * 2];
	if (cfg->bench_dirs && *cfg->bench_dirs)
		snprintf(list, sizeof(list), "%s", cfg->bench_dirs);
	else
		snprintf(list, sizeof(list), "%s/bench", cfg->state_dir);
	char *save = NULL;
	for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (jobs.rules.ndirs == JOB_TARGET_MAX_DIRS) {
			log_err("jobs: at most %d bench dirs", JOB_TARGET_MAX_DIRS);
			return -1;
		}
		if (d[0] != '/') {
			log_err("jobs: bench dir %s: must be an absolute path", d);
			return -1;
		}
		if (util_mkdirs(d, 0700) < 0 || !realpath(d, jobs.rules.dirs[jobs.rules.ndirs])) {
			log_err("jobs: bench dir %s: %s", d, strerror(errno));
			return -1;
		}
		jobs.rules.ndirs++;
	}
	if (jobs.rules.ndirs == 0) {
		log_err("jobs: no bench dir");
		return -1;
	}
	struct job_env_config ecfg = {
	    .sys_root = cfg->sys_root,
	    .proc_root = cfg->proc_root,
	    .done = job_env_done,
	};
	if (job_env_init(base, &ecfg) < 0) {
		log_err("jobs: cannot start resolving environments");
		return -1;
	}
	jobs.kick = event_new(base, -1, 0, jobs_kick, NULL);
	jobs.flush = event_new(base, -1, EV_PERSIST, jobs_flush_tick, NULL);
	struct timeval tv = {JOBS_FLUSH_S, 0};
	event_add(jobs.flush, &tv);
	int n = db_run_interrupt_running(db, "the daemon stopped while it ran", 0);
	if (n > 0)
		log_warn("jobs: %d runs were interrupted when the daemon stopped", n);
	db_run_queued(db, queued_one, NULL);
	collector_set_fill(jobs_fill_sample, NULL);
	jobs.ready = true;
	if (jobs.queued)
		log_info("jobs: %u queued jobs from before; starting them", jobs.queued);
	event_active(jobs.kick, 0, 0);
	return 0;
}

void jobs_shutdown(void)
{
	if (!jobs.base)
		return;
	jobs.stopping = true;
	job_env_shutdown(); /* resolutions in flight end unrecorded: the next start redoes them */
	jobs_subscription();
	collector_set_fill(NULL, NULL);
	for (struct job *j = TAILQ_FIRST(&jobs.live), *next; j; j = next) {
		next = TAILQ_NEXT(j, link);
		while (!LIST_EMPTY(&j->watchers)) {
			struct watcher *w = LIST_FIRST(&j->watchers);
			watcher_hook(w->s, STREAM_SERVER_STOPPING, w);
		}
		if (j->child) {
			/* child_shutdown() reaps it; its on_exit records it as interrupted */
			child_kill(j->child, SIGTERM);
		} else if (j->unstored && !j->pending) { /* a last try; dbw_shutdown waits */
			job_write(j, j->final, true);
		} else if (!j->finishing) { /* (one finishing ends as dbw_shutdown stores it) */
			job_unlink(j);      /* stays queued in the store for the next start */
			if (j->pending) /* a row it handed over (its environment) still names it */
				j->dropped = true;
			else
				job_free(j);
		}
	}
	event_free(jobs.kick);
	event_free(jobs.flush);
	jobs.kick = jobs.flush = NULL;
}
