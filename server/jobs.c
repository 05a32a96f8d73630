/* The benchmark job supervisor. A job is a row in bench_runs and, while queued or running,
 * a struct job here. Running, it is a child spindle-worker (child.h) fed its spec on stdin
 * and confined to the bench dir of its target; every stdout line is checked against the
 * worker's protocol (start, interval, result, error), anything else stops the worker.
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
#include "jobs.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "audit.h"
#include "child.h"
#include "collector.h"
#include "db/db.h"
#include "http.h"
#include "jobproto.h"
#include "log.h"
#include "problems.h"
#include "sysfs.h"
#include "util.h"
#include "worker/hist.h"
#include "worker/spec.h"
#include "dbw.h"

#define JOBS_PATH          "/api/bench/v1/jobs"
#define JOBS_MAX_DIRS      16
#define JOBS_MAX_QUEUED    256
#define JOBS_MAX_WATCHERS  64
#define JOBS_FLUSH_S       2 /* seconds of lines a crash may cost; written off the loop */
#define JOBS_KILL_GRACE_MS 5000
#define JOBS_MAX_LINE      (16u << 20) /* a result line with its histogram bins */
#define JOBS_COMPARE_MAX   16

static const char *const job_states[] = {"queued", "running",   "done",
                                         "failed", "cancelled", "interrupted"};

struct watcher {
	struct watcher *next;
	struct job *job;
	struct request *r;
	bool sse;
};

struct job {
	struct job *next, *prev;
	struct db_run run; /* the row as stored; spec is its JSON text */
	struct spec spec;
	char confine[PATH_MAX]; /* the bench dir the worker is held in; "" for a device */
	bool device;
	char disk[32]; /* the whole disk under the target, "" when none */
	char disk_why[160];
	struct child *child;
	bool cancel, protocol_error;
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
	struct db_run *final;
	/* the collector's figures over the measured seconds */
	unsigned dev_seconds, cpu_seconds;
	double reads, writes, rbytes, wbytes, busy, queue, rlat_ops, wlat_ops;
	double cpu[CPU_MODES];
	struct watcher *watchers;
};

static struct {
	struct event_base *base;
	struct db *db;
	struct jobs_config cfg;
	char dirs[JOBS_MAX_DIRS][PATH_MAX];
	size_t ndirs;
	struct job *live; /* queued and running, oldest first */
	unsigned running, queued, watchers;
	struct event *kick, *flush;
	bool subscribed, stopping, ready;
} jobs;

static void jobs_schedule(void);

/* ---- small helpers */

void jobs_counts(unsigned *running, unsigned *queued)
{
	*running = jobs.running;
	*queued = jobs.queued;
}

bool jobs_live(double ops_per_s[2], double latency_us[2])
{
	double weighted[2] = {0, 0};
	ops_per_s[0] = ops_per_s[1] = latency_us[0] = latency_us[1] = 0;
	for (const struct job *j = jobs.live; j; j = j->next) {
		if (!j->child || !j->seq)
			continue;
		for (int d = 0; d < 2; d++) {
			ops_per_s[d] += j->live_iops[d];
			weighted[d] += j->live_iops[d] * j->live_lat_ns[d] / 1000;
		}
	}
	for (int d = 0; d < 2; d++)
		latency_us[d] = ops_per_s[d] > 0 ? weighted[d] / ops_per_s[d] : 0;
	return jobs.running > 0;
}

static json_t *iso_or_null(int64_t t)
{
	char buf[32];
	return t ? json_string(util_iso8601(t, buf, sizeof(buf))) : json_null();
}

static json_t *real1(double v)
{
	return json_real(round(v * 10) / 10);
}

static struct job *job_live(int64_t id)
{
	for (struct job *j = jobs.live; j; j = j->next)
		if (j->run.id == id)
			return j;
	return NULL;
}

static int job_id_parse(const char *s, int64_t *id, struct fault *f)
{
	long long v;
	if (!s || util_parse_ll(s, 1, INT64_MAX, &v) < 0)
		return fault_set(f, ERR_NOT_FOUND, "job: no job '%.64s'", s ? s : "");
	*id = v;
	return 0;
}

/* ---- targets */

static bool path_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static const char *dirs_list(char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < jobs.ndirs; i++) {
		if (i)
			strncat(buf, ", ", len - strlen(buf) - 1);
		strncat(buf, jobs.dirs[i], len - strlen(buf) - 1);
	}
	return buf;
}

/* An existing file named as a target (lstat'ed as st): a regular file with one name, the
 * daemon's own. A hard link is another name of a file that may be outside the bench dirs,
 * and another user's file is not the daemon's to overwrite. The worker checks the same on
 * the file it opens (--confine), so a name changed after this check does not slip by. */
static int job_target_file(const char *shown, const struct stat *st, struct fault *f)
{
	if (S_ISLNK(st->st_mode))
		return fault_set(f, ERR_DENIED,
		                 "target: %.200s is a symbolic link; name the file itself", shown);
	if (!S_ISREG(st->st_mode))
		return fault_set(f, ERR_INVALID_ARG,
		                 "target: %.200s is neither a regular file nor a block device",
		                 shown);
	if (st->st_nlink > 1)
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "target: %.200s has %lu hard links; a bench file must have one name "
		    "(another may be outside the bench dirs)",
		    shown, (unsigned long)st->st_nlink);
	if (st->st_uid != geteuid())
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "target: %.200s belongs to uid %u, not to the daemon's user (uid %u)", shown,
		    (unsigned)st->st_uid, (unsigned)geteuid());
	return 0;
}

/* Where a job may read and write: a file inside a bench dir, its parent resolved with
 * symlinks followed and its last component not a link; or, where the settings allow and
 * the spec confirms it, a raw block device. Fills j->run.target, j->confine, j->device. */
static int job_target(struct job *j, struct fault *f)
{
	struct spec *s = &j->spec;
	char list[1024];
	struct stat st;
	if (!s->target[0]) {
		/* its own file in the first bench dir, named after the job */
		int n;
		if (s->name[0])
			n = snprintf(j->run.target, sizeof(j->run.target), "%s/%s", jobs.dirs[0],
			             s->name);
		else
			n = snprintf(j->run.target, sizeof(j->run.target), "%s/job-%lld",
			             jobs.dirs[0], (long long)j->run.id);
		if (n < 0 || (size_t)n >= sizeof(j->run.target))
			return fault_set(f, ERR_INVALID_ARG,
			                 "target: the bench dir's path is too long");
		snprintf(j->confine, sizeof(j->confine), "%s", jobs.dirs[0]);
		/* (an unnamed job's file is named after its id, known once it is stored) */
		if ((s->name[0] || j->run.id) && lstat(j->run.target, &st) == 0)
			return job_target_file(j->run.target, &st, f);
		return 0;
	}
	if (s->target[0] != '/')
		return fault_set(f, ERR_INVALID_ARG, "target: must be an absolute path");
	if (stat(s->target, &st) == 0 && S_ISBLK(st.st_mode)) {
		char real[PATH_MAX];
		if (!realpath(s->target, real))
			return fault_set(f, ERR_INVALID_ARG, "target: %.200s: %s", s->target,
			                 strerror(errno));
		if (!jobs.cfg.allow_devices)
			return fault_set(
			    f, ERR_DENIED,
			    "target: %.200s is a raw block device; the settings do not "
			    "allow devices (bench_allow_devices)",
			    real);
		if (!s->confirm)
			return fault_set(f, ERR_CONFIRM_REQUIRED,
			                 "confirm: %.200s is a raw block device: a job may destroy "
			                 "its data; send \"confirm\": true",
			                 real);
		snprintf(j->run.target, sizeof(j->run.target), "%s", real);
		j->confine[0] = '\0';
		j->device = true;
		return 0;
	}
	/* a file: split off the last component */
	char parent[PATH_MAX], real[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", s->target);
	size_t len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	char *slash = strrchr(parent, '/');
	const char *base = slash + 1;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return fault_set(f, ERR_INVALID_ARG, "target: %.200s names no file", s->target);
	char name[NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", base);
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (!realpath(parent, real))
		return fault_set(f, errno == ENOENT ? ERR_INVALID_ARG : ERR_DENIED,
		                 "target: directory %.200s: %s", parent, strerror(errno));
	size_t d;
	for (d = 0; d < jobs.ndirs; d++)
		if (path_inside(real, jobs.dirs[d]))
			break;
	if (d == jobs.ndirs)
		return fault_set(f, ERR_DENIED, "target: %.200s is outside the bench dirs (%.400s)",
		                 s->target, dirs_list(list, sizeof(list)));
	int n = snprintf(j->run.target, sizeof(j->run.target), "%s%s%s", real,
	                 strcmp(real, "/") ? "/" : "", name);
	if (n < 0 || (size_t)n >= sizeof(j->run.target))
		return fault_set(f, ERR_INVALID_ARG, "target: too long");
	if (lstat(j->run.target, &st) == 0 && job_target_file(s->target, &st, f) < 0)
		return -1;
	snprintf(j->confine, sizeof(j->confine), "%s", jobs.dirs[d]);
	return 0;
}

/* "1.5 GiB": sizes in messages, binary units as the spec takes them. */
static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < nitems(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* Whether the target holds the job's size, or its filesystem can take the layout and keep
 * the reserve (bench_reserve): known before the job is queued, and checked again as it
 * starts (jobs ahead of it may have laid out their files meanwhile). statvfs and a stat:
 * no I/O on the data. The worker lays out size less what the file has. */
static int job_check_space(const struct job *j, struct fault *f)
{
	const struct spec *s = &j->spec;
	char a[32], b[32], c[32];
	struct stat st;
	if (j->device) {
		/* the size the kernel gives, without opening the device */
		if (!s->size || stat(j->run.target, &st) < 0)
			return 0;
		char path[PATH_MAX];
		const char *root =
		    jobs.cfg.sys_root && strcmp(jobs.cfg.sys_root, "/") ? jobs.cfg.sys_root : "";
		snprintf(path, sizeof(path), "%s/sys/dev/block/%u:%u/size", root, major(st.st_rdev),
		         minor(st.st_rdev));
		long long sectors = sysfs_read_ll(path); /* of 512 bytes, whatever the device's */
		if (sectors <= 0)
			return 0;
		if (s->size > (uint64_t)sectors * 512)
			return fault_set(f, ERR_INVALID_ARG,
			                 "size: %s is larger than the device %.80s (%s)",
			                 size_text(s->size, a, sizeof(a)), j->run.target,
			                 size_text((uint64_t)sectors * 512, b, sizeof(b)));
		return 0;
	}
	bool exists = lstat(j->run.target, &st) == 0 && S_ISREG(st.st_mode);
	uint64_t have = exists ? (uint64_t)st.st_size : 0;
	bool rewrites = s->pattern == SPEC_IOZONE && (s->passes & (1u << SPEC_PASS_WRITE));
	if (!s->size) {
		if (!rewrites && have >= s->block_size)
			return 0;
		return fault_set(f, ERR_MISSING_ARG,
		                 "size: required: the target %.120s does not exist or is smaller "
		                 "than one block (%u bytes)",
		                 j->run.target, (unsigned)s->block_size);
	}
	/* iozone's write pass starts from an empty file: what the file holds is freed first */
	uint64_t held = rewrites ? (exists ? (uint64_t)st.st_blocks * 512 : 0) : have;
	uint64_t need = s->size > held ? s->size - held : 0;
	if (!need)
		return 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", j->run.target);
	char *slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	struct statvfs v;
	if (statvfs(dir, &v) < 0)
		return 0; /* the worker finds out */
	uint64_t total = (uint64_t)v.f_blocks * v.f_frsize;
	uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
	if (s->size > total)
		return fault_set(
		    f, ERR_INVALID_ARG, "size: %s is larger than the filesystem holding %.80s (%s)",
		    size_text(s->size, a, sizeof(a)), dir, size_text(total, b, sizeof(b)));
	uint64_t reserve = jobs.cfg.reserve_pct ? total / 100 * (uint64_t)jobs.cfg.reserve_pct
	                                        : jobs.cfg.reserve_bytes;
	if (need > avail || avail - need < reserve)
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "size: laying out %s would leave less than the reserve of %s "
		    "(bench_reserve %s) free on the filesystem of %.80s; it has %s free",
		    size_text(need, a, sizeof(a)), size_text(reserve, b, sizeof(b)),
		    jobs.cfg.reserve_text ? jobs.cfg.reserve_text : "", dir,
		    size_text(avail, c, sizeof(c)));
	return 0;
}

/* The whole disk behind the target, as the collector names it: the device number of the
 * filesystem (or of the device itself) through /sys/dev/block to its disk, a partition
 * counting as the disk that holds it. */
static void job_resolve_disk(struct job *j)
{
	struct stat st;
	dev_t dev;
	char dir[PATH_MAX];
	j->disk[0] = '\0';
	snprintf(dir, sizeof(dir), "%s", j->run.target);
	if (j->device) {
		if (stat(j->run.target, &st) < 0)
			goto none;
		dev = st.st_rdev;
	} else {
		if (stat(j->run.target, &st) < 0) {
			char *slash = strrchr(dir, '/');
			if (slash)
				slash[slash == dir ? 1 : 0] = '\0';
			if (stat(dir, &st) < 0)
				goto none;
		}
		dev = st.st_dev;
	}
	char link[PATH_MAX], real[PATH_MAX], part[PATH_MAX + 16];
	const char *root =
	    jobs.cfg.sys_root && strcmp(jobs.cfg.sys_root, "/") ? jobs.cfg.sys_root : "";
	snprintf(link, sizeof(link), "%s/sys/dev/block/%u:%u", root, major(dev), minor(dev));
	if (!realpath(link, real)) {
		snprintf(j->disk_why, sizeof(j->disk_why),
		         "no block device behind the target (device %u:%u: a network, virtual or "
		         "pooled filesystem?)",
		         major(dev), minor(dev));
		return;
	}
	snprintf(part, sizeof(part), "%s/partition", real);
	if (access(part, F_OK) == 0) {
		char *slash = strrchr(real, '/');
		if (slash)
			*slash = '\0';
	}
	const char *name = strrchr(real, '/');
	snprintf(j->disk, sizeof(j->disk), "%.31s", name ? name + 1 : real);
	return;
none:
	snprintf(j->disk_why, sizeof(j->disk_why), "the target cannot be examined: %s",
	         strerror(errno));
}

/* ---- the job object */

static struct job *job_new(void)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->eta_s = -1;
	return j;
}

/* *dst becomes a copy of *src with texts of its own (db_run_clear() it). */
static void run_copy(struct db_run *dst, const struct db_run *src)
{
	*dst = *src;
	dst->spec = src->spec ? xstrdup(src->spec) : NULL;
	dst->start = src->start ? xstrdup(src->start) : NULL;
	dst->result = src->result ? xstrdup(src->result) : NULL;
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

static void job_free(struct job *j)
{
	for (size_t i = 0; i < j->nlines; i++)
		free(j->lines[i]);
	free(j->lines);
	json_decref(j->result);
	db_run_clear(&j->run);
	run_free(j->final);
	free(j);
}

static void job_link(struct job *j)
{
	struct job *tail = jobs.live;
	while (tail && tail->next)
		tail = tail->next;
	j->prev = tail;
	j->next = NULL;
	if (tail)
		tail->next = j;
	else
		jobs.live = j;
}

static void job_unlink(struct job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		jobs.live = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->next = j->prev = NULL;
}

static void job_set_state(struct job *j, const char *state)
{
	snprintf(j->run.state, sizeof(j->run.state), "%s", state);
}

/* The row now, on the loop's own connection: for what the caller must know is stored. */
static int job_store(struct job *j)
{
	int rc = db_run_update(jobs.db, &j->run);
	if (rc)
		log_err("jobs: job %lld: cannot record its state %s", (long long)j->run.id,
		        j->run.state);
	return rc;
}

/* ---- the writer (dbw.h) */

struct run_write {
	struct job *j;
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
	w->rc = db_run_save(db, w->j->run.id, w->row, w->first, w->lines, w->n);
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
	for (struct job *j = jobs.live, *next; j; j = next) {
		next = j->next; /* (without a writer thread the job may end in job_write) */
		if (j->child && !j->finishing)
			job_write(j, NULL, false);
		else if (j->unstored && !j->pending)
			job_write(j, j->final, true);
	}
}

/* ---- progress streams */

static void watcher_send(struct watcher *w, const char *event, const char *line, size_t len)
{
	if (w->sse) {
		char *s = xasprintf("event: %s\ndata: %.*s\n\n", event, (int)len, line);
		reply_stream_chunk(w->r, s, strlen(s));
		free(s);
	} else {
		reply_stream_chunk(w->r, line, len);
		reply_stream_chunk(w->r, "\n", 1);
	}
}

static void watcher_detach(struct watcher *w)
{
	for (struct watcher **p = &w->job->watchers; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			break;
		}
	}
	jobs.watchers--;
	free(w);
}

static json_t *end_line(const struct db_run *run)
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
	json_t *o = end_line(run);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	watcher_send(w, "end", text, strlen(text));
	free(text);
	reply_stream_end(w->r);
	watcher_detach(w);
}

static void watcher_hook(struct request *r, enum stream_event ev, void *arg)
{
	struct watcher *w = arg;
	if (ev == STREAM_SERVER_STOPPING) {
		struct db_run tmp = w->job->run;
		snprintf(tmp.reason, sizeof(tmp.reason), "the server is stopping");
		watcher_end(w, &tmp);
		return;
	}
	watcher_detach(w);
}

/* ---- the collector's figures */

static void jobs_tick(void *arg, const struct box_sample *s)
{
	for (struct job *j = jobs.live; j; j = j->next) {
		/* only seconds the measured phase covers whole: a partial one would mix in
		 * what the disk did before the job */
		if (!j->child || !j->measuring || (s->time - 1) * 1000 < j->measure_ms)
			continue;
		for (int m = 0; m < CPU_MODES; m++)
			j->cpu[m] += s->cpu_pct[m];
		j->cpu_seconds++;
		for (int i = 0; j->disk[0] && i < s->ndisks; i++) {
			const struct disk_sample *d = &s->disks[i];
			if (strcmp(d->name, j->disk) != 0)
				continue;
			j->dev_seconds++;
			j->reads += d->reads_per_s;
			j->writes += d->writes_per_s;
			j->rbytes += d->read_bytes_per_s;
			j->wbytes += d->write_bytes_per_s;
			j->busy += d->busy_pct;
			j->queue += d->queue;
			j->rlat_ops += d->read_latency_ms * d->reads_per_s;
			j->wlat_ops += d->write_latency_ms * d->writes_per_s;
			break;
		}
	}
}

static void jobs_subscription(void)
{
	bool want = jobs.running > 0 && !jobs.stopping;
	if (want && !jobs.subscribed)
		jobs.subscribed = collector_subscribe(jobs_tick, NULL) == 0;
	else if (!want && jobs.subscribed) {
		collector_unsubscribe(jobs_tick, NULL);
		jobs.subscribed = false;
	}
}

/* What the collector saw while the job was measured, next to the worker's own figures. */
static void job_add_figures(struct job *j, json_t *res)
{
	json_t *dev;
	if (j->disk[0] && j->dev_seconds) {
		double n = j->dev_seconds;
		dev = json_pack(
		    "{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "disk", j->disk,
		    "seconds", (int)j->dev_seconds, "reads_per_s", real1(j->reads / n),
		    "writes_per_s", real1(j->writes / n), "ops_per_s",
		    real1((j->reads + j->writes) / n), "read_bytes_per_s",
		    json_integer((json_int_t)llround(j->rbytes / n)), "write_bytes_per_s",
		    json_integer((json_int_t)llround(j->wbytes / n)), "busy_pct",
		    real1(j->busy / n), "queue", real1(j->queue / n), "read_latency_ms",
		    json_real(j->reads > 0 ? round(j->rlat_ops / j->reads * 1000) / 1000 : 0),
		    "write_latency_ms",
		    json_real(j->writes > 0 ? round(j->wlat_ops / j->writes * 1000) / 1000 : 0));
	} else {
		dev = json_pack("{s:o, s:s}", "disk",
		                j->disk[0] ? json_string(j->disk) : json_null(), "why",
		                j->disk[0] ? "the collector had no sample of the disk while the "
		                             "job was measured"
		                           : j->disk_why);
	}
	json_object_set_new(res, "device", dev);
	static const char *const mode_keys[CPU_MODES] = {
	    [CPU_USER] = "user_pct",     [CPU_NICE] = "nice_pct", [CPU_SYSTEM] = "system_pct",
	    [CPU_IOWAIT] = "iowait_pct", [CPU_IRQ] = "irq_pct",   [CPU_SOFTIRQ] = "softirq_pct",
	    [CPU_STEAL] = "steal_pct",   [CPU_IDLE] = "idle_pct",
	};
	json_t *cpu = json_pack("{s:i}", "seconds", (int)j->cpu_seconds);
	for (int m = 0; m < CPU_MODES; m++)
		json_object_set_new(cpu, mode_keys[m],
		                    j->cpu_seconds ? real1(j->cpu[m] / j->cpu_seconds)
		                                   : json_null());
	json_object_set_new(res, "box_cpu", cpu);

	/* the line one reads first: the worker's IOPS, the disk's, the CPU share */
	double iops = 0;
	const char *dirs[] = {"read", "write"};
	for (int d = 0; d < 2; d++)
		iops += json_number_value(json_object_get(json_object_get(res, dirs[d]), "iops"));
	json_t *sum = json_pack("{s:o}", "iops", real1(iops));
	json_object_set(sum, "disk", json_object_get(dev, "disk"));
	json_t *dops = json_object_get(dev, "ops_per_s");
	json_object_set_new(sum, "disk_iops", dops ? json_copy(dops) : json_null());
	json_object_set(sum, "cpu_user_pct", json_object_get(cpu, "user_pct"));
	json_object_set(sum, "cpu_system_pct", json_object_get(cpu, "system_pct"));
	json_object_set_new(res, "summary", sum);
}

/* ---- the worker's protocol (checked in jobproto.c) */

static bool is_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) && json_number_value(v) >= 0;
}

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
	struct jobproto_state st = {j->have_start, j->have_result || j->have_error, j->seq};
	struct jobproto_line pl;
	if (jobproto_line(&st, line, len, &pl, err, sizeof(err)) < 0) {
		job_protocol_error(j, err);
		return;
	}
	json_t *o = pl.obj;
	switch (pl.type) {
	case JOBPROTO_START:
		j->have_start = true;
		j->measuring = j->spec.ramp_ms == 0;
		j->measure_ms = util_now_ms();
		free(j->run.start);
		json_object_del(o, "type");
		j->run.start = json_dumps(o, JSON_COMPACT);
		job_write(j, run_dup(&j->run), false);
		break;
	case JOBPROTO_INTERVAL: {
		job_interval(j, o);
		char *text = xstrndup(line, len);
		for (struct watcher *w = j->watchers; w; w = w->next)
			watcher_send(w, "interval", text, len);
		if (j->nlines == j->cap) {
			j->cap = j->cap ? j->cap * 2 : 64;
			j->lines = xrealloc(j->lines, j->cap * sizeof(*j->lines));
		}
		j->lines[j->nlines++] = text;
		break;
	}
	case JOBPROTO_RESULT:
		j->have_result = true;
		json_object_del(o, "type");
		json_decref(j->result);
		j->result = json_incref(o);
		break;
	case JOBPROTO_ERROR:
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

/* The job has stopped (or never ran): its last row goes to the writer after any lines; it
 * ends when that is stored (job_ended). Until then it reads as it did. */
static void job_finish(struct job *j, const char *state)
{
	struct db_run *fin = run_dup(&j->run);
	snprintf(fin->state, sizeof(fin->state), "%s", state);
	fin->end_time = util_now();
	if (j->result) {
		job_add_figures(j, j->result);
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
	while (j->watchers)
		watcher_end(j->watchers, fin);
	job_unlink(j);
	log_info("jobs: job %lld (%s) %s%s%s", (long long)fin->id, fin->name, fin->state,
	         fin->reason[0] ? ": " : "", fin->reason);
	problems_job_ended((long long)fin->id, fin->name, fin->state, fin->reason);
	job_free(j); /* and fin with it */
}

static void job_on_exit(void *arg, const struct child_result *res)
{
	struct job *j = arg;
	j->child = NULL;
	jobs.running--;
	const char *state = "failed";
	char *reason = j->run.reason;
	size_t rlen = sizeof(j->run.reason);
	if (j->cancel) {
		state = "cancelled";
		snprintf(reason, rlen, "cancelled by %s", j->cancel_by);
	} else if (jobs.stopping) {
		state = "interrupted";
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
		state = "done";
		reason[0] = '\0';
	} else if (j->have_error) {
		snprintf(reason, rlen, "%s", j->error_msg);
	} else if (res->exited && res->exit_code == 0) {
		snprintf(reason, rlen, "the worker exited without a result");
	} else {
		snprintf(reason, rlen, "the worker exited with status %d%s%.200s", res->exit_code,
		         res->err_len ? ": " : "", res->err_len ? res->err : "");
	}
	if (strcmp(state, "done") != 0 && j->result && !json_object_get(j->result, "partial"))
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
	char *argv[10];
	int n = 0;
	argv[n++] = (char *)jobs.cfg.worker;
	argv[n++] = "--spec";
	argv[n++] = "-";
	/* the worker's threads may keep every CPU busy: niced, they leave the loop (and so
	 * the dashboard) its share; the I/O they do is the same */
	argv[n++] = "--nice";
	argv[n++] = "10";
	if (!j->device) {
		argv[n++] = "--confine";
		argv[n++] = j->confine;
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
	if (job_check_space(j, &f) < 0) { /* jobs before it may have filled the disk */
		snprintf(j->run.reason, sizeof(j->run.reason), "at its start: %s", f.details);
		job_finish(j, "failed");
		return;
	}
	job_resolve_disk(j);
	j->run.start_time = util_now();
	j->child = child_spawn(&o, err, sizeof(err));
	if (!j->child) {
		snprintf(j->run.reason, sizeof(j->run.reason), "worker: %s", err);
		job_finish(j, "failed");
		return;
	}
	jobs.running++;
	job_set_state(j, "running");
	job_write(j, run_dup(&j->run), false);
	jobs_subscription();
	log_info("jobs: job %lld (%s) started: worker %d on %s", (long long)j->run.id, j->run.name,
	         (int)child_pid(j->child), j->run.target);
}

static void jobs_schedule(void)
{
	if (jobs.stopping || !jobs.ready)
		return;
	for (struct job *j = jobs.live; j && jobs.running < (unsigned)jobs.cfg.concurrency;) {
		struct job *next = j->next;
		/* a job cancelled in the queue still reads "queued" until its end is stored */
		if (!j->child && !j->finishing && strcmp(j->run.state, "queued") == 0)
			job_start(j);
		j = next;
	}
}

static void jobs_kick(evutil_socket_t fd, short what, void *arg)
{
	jobs_schedule();
}

/* ---- JSON of a job */

static json_t *run_json(const struct db_run *run, const struct job *live, bool full)
{
	char href[64];
	snprintf(href, sizeof(href), JOBS_PATH "/%lld", (long long)run->id);
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
	json_t *o =
	    json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id",
	              (json_int_t)run->id, "href", href, "name", run->name, "label", run->label,
	              "owner", run->owner, "state", run->state, "target", run->target, "spec",
	              spec ? spec : json_object(), "created", iso_or_null(run->ctime), "started",
	              iso_or_null(run->start_time), "ended", iso_or_null(run->end_time));
	if (run->reason[0])
		json_object_set_new(o, "reason", json_string(run->reason));
	if (live && live->child)
		json_object_set_new(o, "worker_pid", json_integer(child_pid(live->child)));
	if (live) {
		json_object_set_new(o, "progress_pct", real1(live->progress_pct));
		json_object_set_new(o, "eta_s",
		                    live->eta_s >= 0 ? real1(live->eta_s) : json_null());
	} else if (strcmp(run->state, "done") == 0) {
		json_object_set_new(o, "progress_pct", json_real(100));
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

/* A job whose end could not be stored reads as it ended. */
static json_t *job_json(const struct job *j, bool full)
{
	return j->unstored ? run_json(j->final, NULL, full) : run_json(&j->run, j, full);
}

/* ---- the API's calls */

/* The spec's limits that the configuration tightens, for spec_parse_limited. */
static const struct spec_limits *jobs_limits(void)
{
	static struct spec_limits lim;
	lim.max_runtime_ms = (uint64_t)jobs.cfg.max_runtime_s * 1000;
	lim.max_runtime_why = "bench_max_runtime";
	return &lim;
}

static int jobs_spec_fault(const struct spec_errors *errs, struct fault *f)
{
	const struct spec_error *e = &errs->e[0];
	enum fault_kind kind = ERR_INVALID_ARG;
	if (strstr(e->message, ": unknown field"))
		kind = ERR_UNKNOWN_ARG;
	else if (strstr(e->message, ": required"))
		kind = ERR_MISSING_ARG;
	return fault_set(f, kind, "%s", e->message);
}

int jobs_submit(const json_t *body, const struct identity *who, const char *peer, json_t **out,
                struct fault *f)
{
	struct spec_errors errs;
	struct job *j = job_new();
	if (spec_parse_limited(body, jobs_limits(), &j->spec, &errs) < 0) {
		job_free(j);
		return jobs_spec_fault(&errs, f);
	}
	uint64_t total = j->spec.ramp_ms + j->spec.runtime_ms;
	if (total > (uint64_t)jobs.cfg.max_runtime_s * 1000) {
		job_free(j);
		return fault_set(f, ERR_INVALID_ARG,
		                 "runtime_s: ramp and runtime of %.1f s exceed the limit of %d s "
		                 "(bench_max_runtime)",
		                 (double)total / 1000, jobs.cfg.max_runtime_s);
	}
	if (jobs.queued >= JOBS_MAX_QUEUED) {
		job_free(j);
		f->retry_after = 60;
		return fault_set(f, ERR_BUSY, "jobs: %d jobs are queued already", JOBS_MAX_QUEUED);
	}
	if (job_target(j, f) < 0 || job_check_space(j, f) < 0) {
		audit_log(who->user, peer, "bench.submit", j->spec.target, false, "%s", f->details);
		job_free(j);
		return -1;
	}
	struct db_run *run = &j->run;
	snprintf(run->name, sizeof(run->name), "%s",
	         j->spec.name[0] ? j->spec.name : spec_pattern_name(j->spec.pattern));
	snprintf(run->label, sizeof(run->label), "%s", j->spec.label);
	snprintf(run->owner, sizeof(run->owner), "%s", who->user);
	job_set_state(j, "queued");
	run->ctime = util_now();
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
	snprintf(j->spec.target, sizeof(j->spec.target), "%s", run->target);
	json_t *canon = spec_to_json(&j->spec);
	free(run->spec);
	run->spec = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(canon);
	/* the stored spec is what the worker gets: with the resolved target */
	if (job_store(j) < 0) {
		bool full = db_full(jobs.db);
		db_run_delete(jobs.db, run->id);
		job_free(j);
		return fault_store(f, full, "job");
	}
	audit_log(who->user, peer, "bench.submit", run->target, true, "job %lld (%s), %s",
	          (long long)run->id, run->name, spec_pattern_name(j->spec.pattern));
	job_link(j);
	jobs.queued++;
	*out = job_json(j, true);
	event_active(jobs.kick, 0, 0);
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
	if (flt->state) {
		size_t i;
		for (i = 0; i < nitems(job_states); i++)
			if (strcmp(flt->state, job_states[i]) == 0)
				break;
		if (i == nitems(job_states))
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "state: must be queued, running, done, failed, cancelled or "
			    "interrupted");
	}
	struct list_ctx c = {json_array()};
	if (db_run_list(jobs.db, flt->state, flt->label, flt->start, flt->limit, list_one, &c) <
	    0) {
		json_decref(c.arr);
		return fault_set(f, ERR_INTERNAL, "jobs: cannot read the runs");
	}
	*out = c.arr;
	return 0;
}

/* The stored row of any job (a live one's is current too); db_run_clear() it. */
static int run_load(const char *id_text, struct db_run *run, struct fault *f)
{
	int64_t id = 0;
	if (job_id_parse(id_text, &id, f) < 0)
		return -1;
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

int jobs_get(const char *id, json_t **out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	if (run_load(id, run, f) < 0) {
		free(run);
		return -1;
	}
	const struct job *live = job_live(run->id);
	*out = live ? job_json(live, true) : run_json(run, NULL, true);
	db_run_clear(run);
	free(run);
	return 0;
}

int jobs_delete(const char *id_text, const struct identity *who, const char *peer, bool *cancelled,
                json_t **out, struct fault *f)
{
	int64_t id = 0;
	*out = NULL;
	*cancelled = false;
	if (job_id_parse(id_text, &id, f) < 0)
		return -1;
	struct job *j = job_live(id);
	if (j) {
		*cancelled = true;
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
			*out = job_json(j, true);
			return 0;
		}
		if (j->unstored) { /* nothing to delete yet: the row reads as it did */
			f->retry_after = JOBS_FLUSH_S;
			return fault_set(
			    f, j->unstored_full ? ERR_NO_SPACE : ERR_BUSY,
			    "job: job %lld has ended, but its end is not stored yet (%s); "
			    "it is tried again every %d s",
			    (long long)id,
			    j->unstored_full ? "the state filesystem is full"
			                     : "the database refused it",
			    JOBS_FLUSH_S);
		}
		if (j->finishing) { /* it has stopped already: its end, as it is being stored */
			*out = run_json(j->final, NULL, true);
			return 0;
		}
		jobs.queued--;
		snprintf(j->run.reason, sizeof(j->run.reason), "cancelled by %s before it started",
		         who->user);
		/* the answer is the row as it will be stored (the store may take a moment) */
		struct db_run ended = j->run;
		snprintf(ended.state, sizeof(ended.state), "cancelled");
		ended.end_time = util_now();
		*out = run_json(&ended, NULL, true);
		job_finish(j, "cancelled");
		return 0;
	}
	/* finished: deleting its record is an administrator's call */
	if (!(who->perms & PERM_SETTINGS_MODIFY)) {
		struct db_run *run = xmalloc(sizeof(*run));
		int rc = db_run_get(jobs.db, id, run);
		if (rc == 0)
			db_run_clear(run);
		free(run);
		if (rc == DB_NOTFOUND)
			return fault_set(f, ERR_NOT_FOUND, "job: no job %lld", (long long)id);
		return fault_set(f, ERR_DENIED,
		                 "authorization: deleting a finished run needs settings:modify");
	}
	int rc = db_run_delete(jobs.db, id);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "job: no job %lld", (long long)id);
	if (rc)
		return fault_store(f, db_full(jobs.db), "job");
	audit_log(who->user, peer, "bench.delete", "", true, "job %lld", (long long)id);
	return 0;
}

/* ---- fio's shape */

static json_t *fio_lat(const json_t *lat, json_int_t n)
{
	json_t *pct = json_object();
	for (size_t i = 0; i < hist_npcts; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%f", hist_pcts[i]);
		json_object_set(pct, key, json_object_get(lat, hist_pct_names[i]));
	}
	json_t *o =
	    json_pack("{s:O?, s:O?, s:O?, s:O?, s:I}", "min", json_object_get(lat, "min"), "max",
	              json_object_get(lat, "max"), "mean", json_object_get(lat, "mean"), "stddev",
	              json_object_get(lat, "stddev"), "N", n);
	if (n)
		json_object_set_new(o, "percentile", pct);
	else
		json_decref(pct);
	return o;
}

static json_t *fio_dir(const json_t *d, double elapsed_s)
{
	json_int_t ops = json_integer_value(json_object_get(d, "ops"));
	json_int_t bytes = json_integer_value(json_object_get(d, "bytes"));
	double bps = json_number_value(json_object_get(d, "bytes_per_s"));
	const json_t *lat = json_object_get(d, "latency_ns");
	return json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:i, s:i, s:{s:i, s:i, s:f, s:f, "
	                 "s:i}, s:o, s:o}",
	                 "io_bytes", bytes, "io_kbytes", bytes / 1024, "bw_bytes",
	                 (json_int_t)llround(bps), "bw", (json_int_t)llround(bps / 1024), "iops",
	                 json_number_value(json_object_get(d, "iops")), "runtime",
	                 (json_int_t)llround(elapsed_s * 1000), "total_ios", ops, "short_ios", 0,
	                 "drop_ios", 0, "slat_ns", "min", 0, "max", 0, "mean", 0.0, "stddev", 0.0,
	                 "N", 0,
	                 /* the worker times submission to completion: fio's lat; clat the same */
	                 "clat_ns", fio_lat(lat, ops), "lat_ns", fio_lat(lat, ops));
}

static json_t *fio_json(const struct db_run *run, const json_t *res)
{
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : json_object();
	double elapsed = json_number_value(json_object_get(res, "elapsed_s"));
	const json_t *cpu = json_object_get(res, "cpu");
	double usr = json_number_value(json_object_get(cpu, "user_s"));
	double sys = json_number_value(json_object_get(cpu, "system_s"));
	const char *pattern = json_string_value(json_object_get(spec, "pattern"));
	static const struct {
		const char *ours, *fio;
	} rw[] = {{"read", "read"},         {"write", "write"},
	          {"randread", "randread"}, {"randwrite", "randwrite"},
	          {"randrw", "randrw"},     {"slob", "randrw"},
	          {"iozone", "rw"}};
	const char *fio_rw = "randread";
	for (size_t i = 0; pattern && i < nitems(rw); i++)
		if (strcmp(rw[i].ours, pattern) == 0)
			fio_rw = rw[i].fio;
	json_t *opts = json_pack(
	    "{s:s, s:s, s:O?, s:O?, s:O?, s:O?}", "rw", fio_rw, "filename", run->target, "bs",
	    json_object_get(spec, "block_size"), "ioengine", json_object_get(spec, "engine"),
	    "iodepth", json_object_get(spec, "iodepth"), "size", json_object_get(spec, "size"));
	json_object_set_new(opts, "direct",
	                    json_string(json_is_true(json_object_get(spec, "direct")) ? "1" : "0"));
	if (json_object_get(spec, "iodepth_batch"))
		json_object_set(opts, "iodepth_batch_submit",
		                json_object_get(spec, "iodepth_batch"));
	json_t *sync = json_object_get(res, "sync");
	json_int_t nsync = json_integer_value(json_object_get(sync, "ops"));
	json_t *job = json_pack(
	    "{s:s, s:i, s:i, s:i, s:I, s:o, s:o, s:o, s:{s:i, s:i, s:i}, s:{s:I, s:o}, s:I, "
	    "s:f, s:f, s:i, s:i, s:i}",
	    "jobname", run->name, "groupid", 0, "error", 0, "eta", 0, "elapsed",
	    (json_int_t)llround(elapsed), "job options", opts, "read",
	    fio_dir(json_object_get(res, "read"), elapsed), "write",
	    fio_dir(json_object_get(res, "write"), elapsed), "trim", "io_bytes", 0, "iops", 0,
	    "total_ios", 0, "sync", "total_ios", nsync, "lat_ns",
	    fio_lat(json_object_get(sync, "latency_ns"), nsync), "job_runtime",
	    (json_int_t)llround(elapsed * 1000), "usr_cpu",
	    elapsed > 0 ? round(usr / elapsed * 1e6) / 1e4 : 0.0, "sys_cpu",
	    elapsed > 0 ? round(sys / elapsed * 1e6) / 1e4 : 0.0, "ctx", 0, "majf", 0, "minf", 0);
	json_t *o =
	    json_pack("{s:s, s:I, s:I, s:s, s:o, s:[o]}", "fio version",
	              "spindle-worker " PACKAGE_VERSION, "timestamp", (json_int_t)run->end_time,
	              "timestamp_ms", (json_int_t)run->end_time * 1000, "time", "",
	              "global options", json_object(), "jobs", job);
	char when[32];
	json_object_set_new(o, "time",
	                    json_string(util_iso8601(run->end_time, when, sizeof(when))));
	const json_t *dev = json_object_get(res, "device");
	if (json_is_string(json_object_get(dev, "disk")) && is_num(dev, "seconds")) {
		double secs = json_number_value(json_object_get(dev, "seconds"));
		json_t *du = json_pack(
		    "{s:O, s:I, s:I, s:f}", "name", json_object_get(dev, "disk"), "read_ios",
		    (json_int_t)llround(json_number_value(json_object_get(dev, "reads_per_s")) *
		                        secs),
		    "write_ios",
		    (json_int_t)llround(json_number_value(json_object_get(dev, "writes_per_s")) *
		                        secs),
		    "util", json_number_value(json_object_get(dev, "busy_pct")));
		json_object_set_new(o, "disk_util", json_pack("[o]", du));
	}
	json_decref(spec);
	return o;
}

int jobs_result(const char *id, bool fio, json_t **out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	if (run_load(id, run, f) < 0) {
		free(run);
		return -1;
	}
	json_t *res = run->result ? json_loads(run->result, 0, NULL) : NULL;
	int rc = 0;
	if (!res) {
		rc = fault_set(f, ERR_NOT_FOUND, "job: job %lld has no result (it is %s)",
		               (long long)run->id, run->state);
	} else if (fio) {
		*out = fio_json(run, res);
		json_decref(res);
	} else {
		*out = json_pack("{s:o}", "result", res);
	}
	db_run_clear(run);
	free(run);
	return rc;
}

/* ---- comparison */

static const struct {
	const char *path; /* dotted, into the result */
	const char *unit;
} compare_figures[] = {
    {"summary.iops", "operations per second"},
    {"read.iops", "operations per second"},
    {"write.iops", "operations per second"},
    {"read.bytes_per_s", "bytes per second"},
    {"write.bytes_per_s", "bytes per second"},
    {"read.latency_ns.mean", "nanoseconds"},
    {"read.latency_ns.p50", "nanoseconds"},
    {"read.latency_ns.p99", "nanoseconds"},
    {"read.latency_ns.p99.9", "nanoseconds"},
    {"write.latency_ns.mean", "nanoseconds"},
    {"write.latency_ns.p50", "nanoseconds"},
    {"write.latency_ns.p99", "nanoseconds"},
    {"write.latency_ns.p99.9", "nanoseconds"},
    {"cpu.user_s", "seconds"},
    {"cpu.system_s", "seconds"},
    {"device.ops_per_s", "operations per second"},
    {"device.busy_pct", "percent"},
    {"box_cpu.user_pct", "percent"},
    {"box_cpu.system_pct", "percent"},
    {"iozone.write", "bytes per second"},
    {"iozone.rewrite", "bytes per second"},
    {"iozone.read", "bytes per second"},
    {"iozone.reread", "bytes per second"},
    {"iozone.random_read", "bytes per second"},
    {"iozone.random_write", "bytes per second"},
};

/* "read.latency_ns.p99.9": members are matched longest first, as keys hold dots. */
static const json_t *json_path(const json_t *o, const char *path)
{
	while (o && *path) {
		const char *key;
		const json_t *v, *best = NULL;
		size_t bestlen = 0;
		json_object_foreach((json_t *)o, key, v)
		{
			size_t n = strlen(key);
			if (n > bestlen && strncmp(path, key, n) == 0 &&
			    (path[n] == '\0' || path[n] == '.')) {
				best = v;
				bestlen = n;
			}
		}
		if (!best)
			return NULL;
		o = best;
		path += bestlen + (path[bestlen] == '.');
	}
	return o;
}

int jobs_compare(const char *ids, const char *baseline, json_t **out, struct fault *f)
{
	if (!ids || !*ids)
		return fault_set(f, ERR_MISSING_ARG, "jobs: required: job ids, a,b,c");
	int64_t id[JOBS_COMPARE_MAX], base_id = 0;
	size_t n = 0;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", ids);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (util_parse_ll(t, 1, INT64_MAX, &v) < 0)
			return fault_set(f, ERR_INVALID_ARG, "jobs: '%.40s' is not a job id", t);
		if (n == JOBS_COMPARE_MAX)
			return fault_set(f, ERR_INVALID_ARG, "jobs: at most %d jobs",
			                 JOBS_COMPARE_MAX);
		for (size_t k = 0; k < n; k++)
			if (id[k] == v)
				return fault_set(f, ERR_INVALID_ARG, "jobs: %lld is named twice",
				                 v);
		id[n++] = v;
	}
	if (n == 0)
		return fault_set(f, ERR_INVALID_ARG, "jobs: no job ids");
	base_id = id[0];
	if (baseline) {
		long long v;
		size_t k = n;
		if (util_parse_ll(baseline, 1, INT64_MAX, &v) == 0)
			for (k = 0; k < n && id[k] != v; k++)
				;
		if (k == n)
			return fault_set(f, ERR_INVALID_ARG, "baseline: must be one of the jobs");
		base_id = v;
	}
	json_t *results[JOBS_COMPARE_MAX] = {0};
	json_t *list = json_array();
	size_t base = 0;
	int rc = 0;
	struct db_run *run = xmalloc(sizeof(*run));
	for (size_t k = 0; k < n && rc == 0; k++) {
		char idtext[24];
		snprintf(idtext, sizeof(idtext), "%lld", (long long)id[k]);
		if (run_load(idtext, run, f) < 0) {
			rc = -1;
			break;
		}
		results[k] = run->result ? json_loads(run->result, 0, NULL) : NULL;
		if (!results[k] || json_is_true(json_object_get(results[k], "partial")))
			rc = fault_set(f, ERR_INVALID_ARG,
			               "jobs: job %lld has no complete result (it is %s)",
			               (long long)id[k], run->state);
		else
			json_array_append_new(list, run_json(run, NULL, false));
		if (id[k] == base_id)
			base = k;
		db_run_clear(run);
	}
	free(run);
	if (rc == 0) {
		json_t *figs = json_array();
		for (size_t i = 0; i < nitems(compare_figures); i++) {
			json_t *vals = json_array(), *diffs = json_array();
			bool any = false;
			const json_t *bv = json_path(results[base], compare_figures[i].path);
			double b = json_number_value(bv);
			for (size_t k = 0; k < n; k++) {
				const json_t *v = json_path(results[k], compare_figures[i].path);
				if (json_is_number(v)) {
					any = true;
					json_array_append(vals, (json_t *)v);
					json_array_append_new(
					    diffs,
					    json_is_number(bv) && b != 0
					        ? json_real(
					              round((json_number_value(v) - b) / b * 1000) /
					              10)
					        : json_null());
				} else {
					json_array_append_new(vals, json_null());
					json_array_append_new(diffs, json_null());
				}
			}
			if (any)
				json_array_append_new(figs,
				                      json_pack("{s:s, s:s, s:o, s:o}", "name",
				                                compare_figures[i].path, "unit",
				                                compare_figures[i].unit, "values",
				                                vals, "diff_pct", diffs));
			else {
				json_decref(vals);
				json_decref(diffs);
			}
		}
		*out = json_pack("{s:I, s:o, s:o}", "baseline", (json_int_t)base_id, "jobs", list,
		                 "figures", figs);
	} else {
		json_decref(list);
	}
	for (size_t k = 0; k < n; k++)
		json_decref(results[k]);
	return rc;
}

/* ---- progress */

/* Lines out to a stream (r), or into one buffer for a single answer. */
struct replay_ctx {
	struct request *r;
	bool sse;
	int64_t upto; /* stored lines past this seq are in memory too: skipped */
	char *buf;
	size_t len, cap;
};

static void replay_add(struct replay_ctx *c, const char *event, const char *line)
{
	char *s =
	    c->sse ? xasprintf("event: %s\ndata: %s\n\n", event, line) : xasprintf("%s\n", line);
	size_t n = strlen(s);
	if (c->r) {
		reply_stream_chunk(c->r, s, n);
	} else {
		while (c->len + n + 1 > c->cap) {
			c->cap = c->cap ? c->cap * 2 : 65536;
			c->buf = xrealloc(c->buf, c->cap);
		}
		memcpy(c->buf + c->len, s, n);
		c->len += n;
	}
	free(s);
}

static int replay_row(void *arg, int64_t seq, const char *line)
{
	struct replay_ctx *c = arg;
	if (seq <= c->upto)
		replay_add(c, "interval", line);
	return 0;
}

int jobs_progress(struct request *r, const char *id_text, bool sse, struct fault *f)
{
	int64_t id = 0;
	if (job_id_parse(id_text, &id, f) < 0)
		return -1;
	const char *ctype = sse ? "text/event-stream" : "application/x-ndjson";
	struct job *j = job_live(id);
	if (!j) {
		/* finished: everything recorded, then the end, in one answer */
		struct db_run *run = xmalloc(sizeof(*run));
		int rc = db_run_get(jobs.db, id, run);
		if (rc) {
			free(run);
			return fault_set(f, rc == DB_NOTFOUND ? ERR_NOT_FOUND : ERR_INTERNAL,
			                 "job: no job %lld", (long long)id);
		}
		struct replay_ctx c = {
		    .sse = sse, .upto = INT64_MAX, .buf = xmalloc(65536), .cap = 65536};
		db_run_intervals(jobs.db, id, replay_row, &c);
		json_t *end = end_line(run);
		char *text = json_dumps(end, JSON_COMPACT);
		json_decref(end);
		replay_add(&c, "end", text);
		free(text);
		reply_raw(r, 200, ctype, c.buf, c.len);
		free(c.buf);
		db_run_clear(run);
		free(run);
		return 0;
	}
	if (jobs.watchers >= JOBS_MAX_WATCHERS) {
		f->retry_after = 5;
		return fault_set(f, ERR_BUSY, "progress: %d streams are open, the most served",
		                 JOBS_MAX_WATCHERS);
	}
	struct watcher *w = xcalloc(1, sizeof(*w));
	w->job = j;
	w->r = r;
	w->sse = sse;
	w->next = j->watchers;
	j->watchers = w;
	jobs.watchers++;
	log_debug("jobs: job %lld: progress stream for %s (%u streams)", (long long)id, r->peer,
	          jobs.watchers);
	reply_header(r, "X-Accel-Buffering", "no");
	reply_stream_start(r, 200, ctype, sse ? ":\n\n" : "\n", watcher_hook, w);
	/* what is recorded first: the stored lines, then those still in memory */
	struct replay_ctx c = {.r = r, .sse = sse, .upto = j->flushed};
	db_run_intervals(jobs.db, id, replay_row, &c);
	for (size_t i = 0; i < j->nlines; i++)
		replay_add(&c, "interval", j->lines[i]);
	return 0;
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
	json_t *spec = json_loads(j->run.spec ? j->run.spec : "", 0, NULL);
	int rc = spec ? spec_parse_limited(spec, jobs_limits(), &j->spec, &errs) : -1;
	json_decref(spec);
	if (rc == 0)
		rc = job_target(j, &f);
	else
		fault_set(&f, ERR_INVALID_ARG, "%s", spec ? errs.e[0].message : "spec: unreadable");
	if (rc < 0) {
		/* the settings changed under it: it cannot run any more */
		job_set_state(j, "failed");
		snprintf(j->run.reason, sizeof(j->run.reason), "at restart: %s", f.details);
		j->run.end_time = util_now();
		job_store(j);
		job_free(j);
		return 0;
	}
	job_link(j);
	jobs.queued++;
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
	jobs.base = base;
	jobs.db = db;
	jobs.cfg = *cfg;
	if (!jobs.cfg.worker || !*jobs.cfg.worker)
		jobs.cfg.worker = jobs_default_worker();
	log_info("jobs: worker %s, concurrency %d", jobs.cfg.worker, jobs.cfg.concurrency);
	if (jobs.cfg.concurrency < 1)
		jobs.cfg.concurrency = 1;
	char list[PATH_MAX * 2];
	if (cfg->bench_dirs && *cfg->bench_dirs)
		snprintf(list, sizeof(list), "%s", cfg->bench_dirs);
	else
		snprintf(list, sizeof(list), "%s/bench", cfg->state_dir);
	char *save = NULL;
	for (char *d = strtok_r(list, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (jobs.ndirs == JOBS_MAX_DIRS) {
			log_err("jobs: at most %d bench dirs", JOBS_MAX_DIRS);
			return -1;
		}
		if (d[0] != '/') {
			log_err("jobs: bench dir %s: must be an absolute path", d);
			return -1;
		}
		if (util_mkdirs(d, 0700) < 0 || !realpath(d, jobs.dirs[jobs.ndirs])) {
			log_err("jobs: bench dir %s: %s", d, strerror(errno));
			return -1;
		}
		jobs.ndirs++;
	}
	if (jobs.ndirs == 0) {
		log_err("jobs: no bench dir");
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
	jobs_subscription();
	for (struct job *j = jobs.live, *next; j; j = next) {
		next = j->next;
		while (j->watchers) {
			struct watcher *w = j->watchers;
			watcher_hook(w->r, STREAM_SERVER_STOPPING, w);
		}
		if (j->child) {
			/* child_shutdown() reaps it; its on_exit records it as interrupted */
			child_kill(j->child, SIGTERM);
		} else if (j->unstored && !j->pending) { /* a last try; dbw_shutdown waits */
			job_write(j, j->final, true);
		} else if (!j->finishing) { /* (one finishing ends as dbw_shutdown stores it) */
			job_unlink(j);
			job_free(j); /* stays queued in the store for the next start */
		}
	}
	event_free(jobs.kick);
	event_free(jobs.flush);
	jobs.kick = jobs.flush = NULL;
}
