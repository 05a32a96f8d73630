/* SPDX-License-Identifier: ISC */
/* spindle-worker: runs one benchmark job and writes NDJSON to stdout.
 *
 * The protocol (every line one JSON object with "type"; spindled validates each):
 *   start     once, before any I/O: the resolved spec, the target, the seed, the threads
 *   interval  once a second: per-interval deltas (not cumulative) per direction
 *   result    once, at the end: totals, latency summaries and histogram bins, CPU
 *   error     instead of result: what went wrong ("field: reason" where a field is at fault)
 * Exit status: 0 done, 1 the run failed, 2 bad usage or spec, 3 stopped by SIGINT/SIGTERM.
 *
 * The worker links nothing of spindled: only spec.c, hist.c and engine.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "hist.h"
#include "spec.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

#define WORKER_PROTOCOL 1
#define EXIT_FAILED     1
#define EXIT_USAGE      2
#define EXIT_SIGNAL     3
#define MAX_SPEC_BYTES  (1u << 20)

struct worker {
	struct spec spec;
	const char *confine;
	int fd;
	bool is_device;
	uint64_t size, nblocks, laid_out;
	uint64_t seed;
	uint64_t t0_ns; /* first I/O */
	unsigned seq;
	const char *pass; /* iozone: the pass running */
	unsigned pass_no, npasses;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

static json_t *iso_now(void)
{
	char buf[32];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

/* One line, one write(2): a reader never sees half a line. -1 when stdout is gone. */
static int emit(json_t *line)
{
	char *s = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(12));
	json_decref(line);
	if (!s)
		return -1;
	size_t len = strlen(s);
	s[len] = '\n';
	size_t off = 0;
	int rc = 0;
	while (off < len + 1) {
		ssize_t n = write(STDOUT_FILENO, s + off, len + 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = -1;
			break;
		}
		off += (size_t)n;
	}
	free(s);
	return rc;
}

static int emit_error(const char *code, const char *field, const char *message, json_t *extra)
{
	json_t *o = json_pack("{s:s, s:i, s:o, s:s, s:s}", "type", "error", "version",
	                      WORKER_PROTOCOL, "time", iso_now(), "code", code, "message", message);
	if (field)
		json_object_set_new(o, "field", json_string(field));
	if (extra)
		json_object_update(o, extra);
	json_decref(extra);
	return emit(o);
}

/* "field: reason" -> the field, for the error line. */
static char *error_field(const char *msg, char *buf, size_t len)
{
	const char *c = strstr(msg, ": ");
	if (!c || (size_t)(c - msg) >= len || strchr(msg, ' ') < c)
		return NULL;
	memcpy(buf, msg, (size_t)(c - msg));
	buf[c - msg] = '\0';
	return buf;
}

static int fail(const char *code, const char *msg, int status)
{
	char field[64];
	emit_error(code, error_field(msg, field, sizeof(field)), msg, NULL);
	return status;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: spindle-worker --spec FILE|- [--confine DIR] [--nice N]\n"
	        "       spindle-worker --check --spec FILE|-\n"
	        "\n"
	        "Runs one storage benchmark job and writes its progress and result to stdout as\n"
	        "NDJSON, one JSON object per line:\n"
	        "  {\"type\":\"start\", ...}     the resolved spec, target, seed and threads\n"
	        "  {\"type\":\"interval\", ...}  every second: ops, bytes, IOPS, bytes/s and "
	        "latency\n"
	        "                            mean/max/p99 and histogram (fio's buckets, four\n"
	        "                            merged) of that second, per direction\n"
	        "  {\"type\":\"result\", ...}    totals, latency min/mean/max/percentiles and\n"
	        "                            histogram bins per direction, CPU seconds\n"
	        "  {\"type\":\"error\", ...}     instead of result when the job fails\n"
	        "Exit status: 0 done, 1 the run failed, 2 bad usage or spec, 3 stopped by\n"
	        "SIGINT/SIGTERM (the part done is in the error line's \"partial\").\n"
	        "\n"
	        "  --spec FILE   the job spec (JSON); - reads it from stdin\n"
	        "  --check       check the spec and print it resolved; no I/O\n"
	        "  --confine DIR refuse a target that does not resolve beneath DIR (symlinks out\n"
	        "                of it are not followed), or a file with more than one link or\n"
	        "                of another user\n"
	        "  --nice N      run at this nice value (0-19): the I/O is the same, but a\n"
	        "                server beside it keeps its CPU when the threads compete\n"
	        "  --presets     print the presets as JSON\n"
	        "  --help        this text; --version its version\n"
	        "\n"
	        "%s",
	        spec_help());
}

/* openat2() is refused with ENOSYS where a seccomp filter wants programs to fall back to
 * openat() (systemd's RestrictSUIDSGID=, which spindled.service sets), or with EPERM by
 * older container runtimes: then the path is walked one component at a time instead. */
static bool openat2_refused;

/* The walk without openat2: each component below dfd opened with O_NOFOLLOW, so neither a
 * symbolic link (absolute, relative or magic) nor ".." can lead out of it; stricter than
 * RESOLVE_BENEATH, which follows links that stay beneath. Takes dfd. */
static int worker_open_walk(int dfd, const char *path, const char *rel, int flags, mode_t mode,
                            int confine_len, const char *confine, char *err, size_t errlen)
{
	char buf[SPEC_PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		close(dfd);
		snprintf(err, errlen, "target: %s: %s", path, strerror(ENAMETOOLONG));
		errno = ENAMETOOLONG;
		return -1;
	}
	char *comp = buf, *next;
	for (;; comp = next) {
		while (*comp == '/')
			comp++;
		next = comp + strcspn(comp, "/");
		bool last = next[strspn(next, "/")] == '\0';
		if (*next)
			*next++ = '\0';
		if (strcmp(comp, "..") == 0) {
			close(dfd);
			snprintf(err, errlen,
			         "target: %s resolves outside %.*s ('..' is refused beneath it)",
			         path, confine_len, confine);
			errno = EXDEV;
			return -1;
		}
		const char *name = *comp ? comp : ".";
		int fd = last ? openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
		              : openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		struct stat st;
		/* O_PATH | O_NOFOLLOW opens a link itself; other flags fail on one (ELOOP, or
		 * ENOTDIR with O_DIRECTORY): either way, a link is named as such. */
		bool link = fd >= 0 ? (fstat(fd, &st) == 0 && S_ISLNK(st.st_mode))
		                    : ((e == ELOOP || e == ENOTDIR) &&
		                       fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		                       S_ISLNK(st.st_mode));
		close(dfd);
		if (link) {
			if (fd >= 0)
				close(fd);
			snprintf(
			    err, errlen,
			    "target: %s resolves outside %.*s or through a symbolic link (%s is "
			    "one)",
			    path, confine_len, confine, name);
			errno = EXDEV;
			return -1;
		}
		if (fd < 0) {
			snprintf(err, errlen, "target: %s: %s", path, strerror(e));
			errno = e;
			return -1;
		}
		if (last)
			return fd;
		dfd = fd;
	}
}

/* Opens path; with a confine dir, only beneath it (openat2 RESOLVE_BENEATH, or the walk
 * above where openat2 is refused). */
static int worker_open(const struct worker *w, const char *path, int flags, mode_t mode, char *err,
                       size_t errlen)
{
	if (!w->confine) {
		int fd = open(path, flags | O_CLOEXEC, mode);
		if (fd < 0)
			snprintf(err, errlen, "target: %s: %s", path, strerror(errno));
		return fd;
	}
	size_t n = strlen(w->confine);
	while (n > 1 && w->confine[n - 1] == '/')
		n--;
	if (strncmp(path, w->confine, n) != 0 || (path[n] != '/' && path[n] != '\0')) {
		snprintf(err, errlen, "target: %s is not inside %.*s", path, (int)n, w->confine);
		errno = EXDEV;
		return -1;
	}
	const char *rel = path + n;
	while (*rel == '/')
		rel++;
	int dfd = open(w->confine, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "target: %.*s: %s", (int)n, w->confine, strerror(errno));
		return -1;
	}
	int fd = -1, e = 0;
	if (!openat2_refused) {
		struct open_how how = {
		    .flags = (uint64_t)(flags | O_CLOEXEC),
		    .mode = (flags & O_CREAT) ? mode : 0,
		    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		fd = (int)syscall(SYS_openat2, dfd, *rel ? rel : ".", &how, sizeof(how));
		e = errno;
		if (fd < 0 && (e == ENOSYS || e == EPERM))
			openat2_refused = true;
	}
	if (openat2_refused) {
		fd = worker_open_walk(dfd, path, rel, flags, mode, (int)n, w->confine, err, errlen);
		if (fd < 0)
			return -1;
	} else {
		close(dfd);
	}
	if (fd < 0) {
		if (e == EXDEV)
			snprintf(err, errlen, "target: %s resolves outside %.*s", path, (int)n,
			         w->confine);
		else
			snprintf(err, errlen, "target: %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	/* A hard link is another name of a file that may live outside DIR, and a file of
	 * another user is not ours to overwrite: checked on what was opened, not on a name
	 * that may change meanwhile. */
	struct stat st;
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "target: %s: %s", path, strerror(e));
	} else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
		e = EPERM;
		snprintf(err, errlen,
		         "target: %s has %lu hard links; a file of more than one name may be "
		         "outside %.*s",
		         path, (unsigned long)st.st_nlink, (int)n, w->confine);
	} else if (S_ISREG(st.st_mode) && st.st_uid != geteuid()) {
		e = EPERM;
		snprintf(err, errlen, "target: %s belongs to uid %u, not to this user (uid %u)",
		         path, (unsigned)st.st_uid, (unsigned)geteuid());
	} else {
		return fd;
	}
	close(fd);
	errno = e;
	return -1;
}

/* After a layout that failed or was stopped: the filesystem as it was. The file gets its
 * size back, or goes when this run created it (checked to be the same file: the name
 * is looked up again beneath the confine dir). */
static void worker_unlayout(const struct worker *w, int fd, bool created, uint64_t had)
{
	const char *path = w->spec.target;
	if (ftruncate(fd, (off_t)had) < 0)
		fprintf(stderr, "spindle-worker: %s: truncating back: %s\n", path, strerror(errno));
	if (!created)
		return;
	char dir[SPEC_PATH_MAX], err[256];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || !slash[1])
		return;
	const char *name = path + (slash - dir) + 1;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	struct stat mine, now;
	int dfd = worker_open(w, dir, O_PATH | O_DIRECTORY, 0, err, sizeof(err));
	if (dfd < 0)
		return;
	if (fstat(fd, &mine) == 0 && fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    mine.st_dev == now.st_dev && mine.st_ino == now.st_ino && unlinkat(dfd, name, 0) < 0)
		fprintf(stderr, "spindle-worker: %s: removing it: %s\n", path, strerror(errno));
	close(dfd);
}

/* Finds the target, lays it out when missing or too small, opens it for the run. */
static int worker_prepare(struct worker *w, char *err, size_t errlen)
{
	struct spec *s = &w->spec;
	bool iozone_writes = s->pattern == SPEC_IOZONE && (s->passes & (1u << SPEC_PASS_WRITE));
	struct stat st;
	bool exists = false;
	int pfd = worker_open(w, s->target, O_PATH, 0, err, errlen);
	if (pfd >= 0) {
		if (fstat(pfd, &st) < 0) {
			snprintf(err, errlen, "target: %s: %s", s->target, strerror(errno));
			close(pfd);
			return -1;
		}
		close(pfd);
		exists = true;
	} else if (errno != ENOENT) {
		return -1;
	}
	if (exists && S_ISBLK(st.st_mode)) {
		w->is_device = true;
		int fd = worker_open(w, s->target, O_RDONLY, 0, err, errlen);
		if (fd < 0)
			return -1;
		uint64_t bytes = 0;
		int rc = ioctl(fd, BLKGETSIZE64, &bytes);
		close(fd);
		if (rc < 0) {
			snprintf(err, errlen, "target: %s: size of the device: %s", s->target,
			         strerror(errno));
			return -1;
		}
		if (s->size > bytes) {
			snprintf(err, errlen, "size: %llu is larger than the device (%llu bytes)",
			         (unsigned long long)s->size, (unsigned long long)bytes);
			return -1;
		}
		w->size = s->size ? s->size : bytes - bytes % s->block_size;
	} else if (exists && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "target: %s is neither a regular file nor a block device",
		         s->target);
		return -1;
	} else {
		uint64_t have = exists ? (uint64_t)st.st_size : 0;
		if (iozone_writes)
			have = 0;
		if (s->size == 0 && have < s->block_size) {
			snprintf(err, errlen,
			         "size: required: the target %s does not exist or is smaller than "
			         "one block",
			         s->target);
			return -1;
		}
		w->size = s->size ? s->size : have - have % s->block_size;
		if (!iozone_writes && have < w->size) {
			/* buffered: any offset and length will do, and the cache is dropped */
			int lfd =
			    worker_open(w, s->target, O_WRONLY | O_CREAT | (exists ? 0 : O_EXCL),
			                0600, err, errlen);
			if (lfd < 0)
				return -1;
			uint64_t from = have - have % 4096;
			int rc = engine_layout(lfd, from, w->size, w->seed, err, errlen);
			if (rc == 0)
				posix_fadvise(lfd, 0, 0, POSIX_FADV_DONTNEED);
			else /* a full disk left as full helps nobody; no run came of it */
				worker_unlayout(w, lfd, !exists, have);
			close(lfd);
			if (rc)
				return rc > 0 ? 1 : -1;
			w->laid_out = w->size - from;
		}
	}
	w->nblocks = w->size / s->block_size;
	if (!spec_is_random(s->pattern) && s->pattern != SPEC_IOZONE &&
	    w->nblocks < spec_nthreads(s)) {
		snprintf(err, errlen, "size: %llu blocks cannot be shared by %u sequential threads",
		         (unsigned long long)w->nblocks, spec_nthreads(s));
		return -1;
	}

	int flags = spec_writes(s) ? O_RDWR : O_RDONLY;
	if (!w->is_device && iozone_writes)
		flags |= O_CREAT;
	if (s->direct)
		flags |= O_DIRECT;
	w->fd = worker_open(w, s->target, flags, 0600, err, errlen);
	if (w->fd < 0) {
		if (errno == EINVAL && s->direct)
			snprintf(err, errlen,
			         "direct: the filesystem holding %s refuses O_DIRECT (EINVAL); set "
			         "direct to false",
			         s->target);
		return -1;
	}
	if (iozone_writes && !w->is_device && ftruncate(w->fd, 0) < 0) {
		snprintf(err, errlen, "target: truncating %s: %s", s->target, strerror(errno));
		return -1;
	}
	/* as fio's invalidate=1: the first reads come from the device, not the cache */
	posix_fadvise(w->fd, 0, 0, POSIX_FADV_DONTNEED);
	if (s->direct && !iozone_writes && engine_probe(w->fd, s->block_size, err, errlen))
		return -1;
	return 0;
}

/* An interval's latency histogram, {"bins":[idx,count,...]}: its non-empty buckets in
 * fio's scheme merged as fio's log_hist_coarseness 2 merges them (hist.h HIST_FIO_COARSE),
 * so spindled writes fio's per-interval histogram log from them, and they add up to the
 * result's histogram folded the same way. At most 464 pairs, in practice the few dozen a
 * second's latencies spread over. */
static json_t *interval_hist_json(const uint64_t *counts)
{
	uint64_t coarse[HIST_FIO_COARSE_NR] = {0};
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if (counts[i])
			coarse[hist_fio_index(hist_bucket_low(i)) >> HIST_FIO_COARSE] += counts[i];
	json_t *bins = json_array();
	for (unsigned i = 0; i < HIST_FIO_COARSE_NR; i++) {
		if (!coarse[i])
			continue;
		json_array_append_new(bins, json_integer(i));
		json_array_append_new(bins, json_integer((json_int_t)coarse[i]));
	}
	return json_pack("{s:o}", "bins", bins);
}

static json_t *dir_interval_json(const struct engine_dir_interval *d, double secs)
{
	double iops = secs > 0 ? (double)d->ops / secs : 0;
	json_t *o =
	    json_pack("{s:I, s:I, s:f, s:I, s:f, s:I, s:I}", "ops", (json_int_t)d->ops, "bytes",
	              (json_int_t)d->bytes, "iops", round_to(iops, 0.1), "bytes_per_s",
	              (json_int_t)llround(secs > 0 ? (double)d->bytes / secs : 0), "lat_mean_ns",
	              round_to(d->lat_mean_ns, 0.1), "lat_max_ns", (json_int_t)d->lat_max_ns,
	              "lat_p99_ns", (json_int_t)d->lat_p99_ns);
	if (d->ops && d->hist)
		json_object_set_new(o, "hist", interval_hist_json(d->hist));
	return o;
}

static int on_interval(void *arg, const struct engine_interval *iv)
{
	struct worker *w = arg;
	double progress = iv->progress;
	double eta = iv->eta_s;
	if (w->npasses > 1) {
		progress = (w->pass_no + progress) / w->npasses;
		eta = -1;
	}
	json_t *o = json_pack("{s:s, s:I, s:f, s:f, s:s, s:f, s:o, s:o}", "type", "interval", "seq",
	                      (json_int_t)++w->seq, "t_s",
	                      round_to((double)(mono_ns() - w->t0_ns) / 1e9, 1e-6), "elapsed_s",
	                      round_to(iv->elapsed_s, 1e-6), "phase", iv->ramp ? "ramp" : "measure",
	                      "progress_pct", round_to(progress * 100, 0.1), "read",
	                      dir_interval_json(&iv->dir[ENGINE_READ], iv->elapsed_s), "write",
	                      dir_interval_json(&iv->dir[ENGINE_WRITE], iv->elapsed_s));
	json_object_set_new(o, "eta_s", eta >= 0 ? json_real(round_to(eta, 0.1)) : json_null());
	if (w->pass)
		json_object_set_new(o, "pass", json_string(w->pass));
	return emit(o);
}

static json_t *dir_json(const struct hist *h, uint32_t bs, double secs)
{
	double bytes = (double)h->count * bs;
	return json_pack("{s:I, s:I, s:f, s:I, s:o, s:o}", "ops", (json_int_t)h->count, "bytes",
	                 (json_int_t)(h->count * bs), "iops",
	                 round_to(secs > 0 ? (double)h->count / secs : 0, 0.1), "bytes_per_s",
	                 (json_int_t)llround(secs > 0 ? bytes / secs : 0), "latency_ns",
	                 hist_summary_json(h), "hist", hist_to_json(h));
}

static json_t *sync_json(const struct hist *h)
{
	return json_pack("{s:I, s:o, s:o}", "ops", (json_int_t)h->count, "latency_ns",
	                 hist_summary_json(h), "hist", hist_to_json(h));
}

static json_t *result_json(const struct worker *w, const struct engine_result *r, double layout_s)
{
	json_t *o = json_pack(
	    "{s:s, s:i, s:o, s:f, s:f, s:o, s:o, s:o, s:{s:f, s:f}, s:f}", "type", "result",
	    "version", WORKER_PROTOCOL, "time", iso_now(), "elapsed_s",
	    round_to(r->elapsed_s, 1e-6), "ramp_s", (double)w->spec.ramp_ms / 1e3, "read",
	    dir_json(&r->lat[ENGINE_READ], w->spec.block_size, r->elapsed_s), "write",
	    dir_json(&r->lat[ENGINE_WRITE], w->spec.block_size, r->elapsed_s), "sync",
	    sync_json(&r->sync), "cpu", "user_s", round_to(r->cpu_user_s, 1e-6), "system_s",
	    round_to(r->cpu_sys_s, 1e-6), "layout_s", round_to(layout_s, 1e-3));
	return o;
}

static void job_from_spec(const struct worker *w, struct engine_job *j)
{
	const struct spec *s = &w->spec;
	memset(j, 0, sizeof(*j));
	j->fd = w->fd;
	j->engine = s->engine;
	j->iodepth = s->iodepth;
	j->iodepth_batch = s->iodepth_batch;
	j->block_size = s->block_size;
	j->nblocks = w->nblocks;
	j->random = spec_is_random(s->pattern);
	j->readers = s->readers;
	j->writers = s->writers;
	j->mixed = s->threads;
	j->rwmix_read = s->rwmix_read;
	j->runtime_ms = s->runtime_ms;
	j->ramp_ms = s->ramp_ms;
	j->io_ops = s->io_size / s->block_size;
	if (!s->runtime_ms && !s->io_size)
		j->io_ops = w->nblocks; /* one pass */
	j->fsync_every = s->fsync_every;
	j->seed = w->seed;
	j->direct = s->direct;
}

static int run_plain(struct worker *w, double layout_s)
{
	struct engine_job j;
	struct engine_result *r = malloc(sizeof(*r));
	char err[256];
	job_from_spec(w, &j);
	w->t0_ns = mono_ns();
	int rc = engine_run(&j, on_interval, w, r, err, sizeof(err));
	if (rc < 0) {
		free(r);
		return fail(strncmp(err, "output:", 7) == 0 ? "output" : "io", err, EXIT_FAILED);
	}
	json_t *res = result_json(w, r, layout_s);
	if (rc > 0) {
		json_object_set_new(res, "type", json_string("partial"));
		emit_error("interrupted", NULL,
		           r->signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM",
		           json_pack("{s:o}", "partial", res));
		free(r);
		return EXIT_SIGNAL;
	}
	free(r);
	return emit(res) ? EXIT_FAILED : 0;
}

/* iozone: the passes one after another on the same file; the table in bytes/s. */
static int run_iozone(struct worker *w, double layout_s)
{
	struct spec *s = &w->spec;
	struct engine_result *r = malloc(sizeof(*r)), *all = calloc(1, sizeof(*all));
	char err[256];
	json_t *passes = json_array();
	json_t *table =
	    json_pack("{s:I, s:I, s:i, s:s}", "file_size", (json_int_t)w->size, "record_size",
	              (json_int_t)s->block_size, "threads", s->threads, "unit", "bytes_per_s");
	for (int d = 0; d < ENGINE_DIRS; d++)
		hist_init(&all->lat[d]);
	hist_init(&all->sync);
	w->npasses = 0;
	for (unsigned p = 0; p < SPEC_NPASSES; p++)
		if (s->passes & (1u << p))
			w->npasses++;
	w->t0_ns = mono_ns();
	int status = 0;
	w->pass_no = 0;
	for (unsigned p = 0; p < SPEC_NPASSES && status == 0; p++) {
		if (!(s->passes & (1u << p)))
			continue;
		bool writes =
		    p == SPEC_PASS_WRITE || p == SPEC_PASS_REWRITE || p == SPEC_PASS_RANDWRITE;
		struct engine_job j;
		job_from_spec(w, &j);
		j.readers = writes ? 0 : s->threads;
		j.writers = writes ? s->threads : 0;
		j.mixed = 0;
		j.random = p == SPEC_PASS_RANDREAD || p == SPEC_PASS_RANDWRITE;
		j.io_ops = w->nblocks;
		j.runtime_ms = j.ramp_ms = 0;
		j.fsync_at_end = writes; /* iozone -e: the flush is part of the pass */
		j.seed = w->seed + p;
		w->pass = spec_pass_name((enum spec_pass)p);
		int rc = engine_run(&j, on_interval, w, r, err, sizeof(err));
		if (rc < 0) {
			status = fail("io", err, EXIT_FAILED);
			break;
		}
		int d = writes ? ENGINE_WRITE : ENGINE_READ;
		json_t *pj = dir_json(&r->lat[d], s->block_size, r->elapsed_s);
		json_object_set_new(pj, "pass", json_string(w->pass));
		json_object_set_new(pj, "elapsed_s", json_real(round_to(r->elapsed_s, 1e-6)));
		if (writes)
			json_object_set_new(pj, "sync", sync_json(&r->sync));
		json_array_append_new(passes, pj);
		json_object_set(table, w->pass, json_object_get(pj, "bytes_per_s"));
		hist_merge(&all->lat[ENGINE_READ], &r->lat[ENGINE_READ]);
		hist_merge(&all->lat[ENGINE_WRITE], &r->lat[ENGINE_WRITE]);
		hist_merge(&all->sync, &r->sync);
		all->elapsed_s += r->elapsed_s;
		all->cpu_user_s += r->cpu_user_s;
		all->cpu_sys_s += r->cpu_sys_s;
		w->pass_no++;
		if (rc > 0) {
			json_t *res = result_json(w, all, layout_s);
			json_object_set_new(res, "type", json_string("partial"));
			json_object_set_new(res, "passes", passes);
			json_object_set_new(res, "iozone", table);
			passes = table = NULL;
			emit_error("interrupted", NULL,
			           r->signal == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM",
			           json_pack("{s:o}", "partial", res));
			status = EXIT_SIGNAL;
		}
	}
	if (status == 0) {
		json_t *res = result_json(w, all, layout_s);
		json_object_set_new(res, "iozone", table);
		json_object_set_new(res, "passes", passes);
		passes = table = NULL;
		status = emit(res) ? EXIT_FAILED : 0;
	}
	json_decref(passes);
	json_decref(table);
	free(r);
	free(all);
	return status;
}

static char *read_spec(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(MAX_SPEC_BYTES + 1);
	size_t n = buf ? fread(buf, 1, MAX_SPEC_BYTES + 1, f) : 0;
	bool bad = !buf || ferror(f) || n > MAX_SPEC_BYTES;
	if (f != stdin)
		fclose(f);
	if (bad) {
		free(buf);
		errno = EFBIG;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spec", required_argument, NULL, 's'}, {"confine", required_argument, NULL, 'c'},
	    {"nice", required_argument, NULL, 'n'}, {"check", no_argument, NULL, 'k'},
	    {"presets", no_argument, NULL, 'p'},    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},    {NULL, 0, NULL, 0},
	};
	struct worker w;
	memset(&w, 0, sizeof(w));
	w.fd = -1;
	const char *spec_path = NULL;
	bool check = false;
	int c;
	while ((c = getopt_long(argc, argv, "s:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			spec_path = optarg;
			break;
		case 'c':
			w.confine = optarg;
			break;
		case 'n': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end || end == optarg || n < 0 || n > 19) {
				fprintf(stderr, "spindle-worker: --nice: '%s' is not 0 to 19\n",
				        optarg);
				return EXIT_USAGE;
			}
			/* before any thread starts: they inherit it */
			if (setpriority(PRIO_PROCESS, 0, (int)n) < 0) {
				fprintf(stderr, "spindle-worker: --nice: %s\n", strerror(errno));
				return EXIT_USAGE;
			}
			break;
		}
		case 'k':
			check = true;
			break;
		case 'p': {
			json_t *p = spec_presets_json();
			json_dumpf(p, stdout, JSON_INDENT(2));
			putchar('\n');
			json_decref(p);
			return 0;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("spindle-worker %s (protocol %d)\n", PACKAGE_VERSION,
			       WORKER_PROTOCOL);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!spec_path || optind != argc) {
		fprintf(stderr, "spindle-worker: %s\n",
		        optind != argc ? "unexpected argument" : "--spec FILE|- is required");
		usage(stderr);
		return EXIT_USAGE;
	}

	/* Signals are taken by the engine's sigtimedwait, never by a handler. */
	sigset_t set;
	engine_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	size_t len;
	char *text = read_spec(spec_path, &len);
	if (!text) {
		char msg[PATH_MAX + 64];
		snprintf(msg, sizeof(msg), "spec: %s: %s", spec_path, strerror(errno));
		return fail("spec", msg, EXIT_USAGE);
	}
	struct spec_errors errs;
	int rc = spec_parse_text(text, len, &w.spec, &errs);
	free(text);
	if (rc == 0 && !w.spec.target[0] && !check) {
		rc = -1;
		errs.n = 1;
		errs.e[0].kind = SPEC_ERR_MISSING;
		snprintf(errs.e[0].field, sizeof(errs.e[0].field), "target");
		snprintf(errs.e[0].message, sizeof(errs.e[0].message),
		         "target: required: the file or device to test");
	}
	if (rc) {
		emit_error("spec", errs.e[0].field, errs.e[0].message,
		           json_pack("{s:o}", "errors", spec_errors_json(&errs)));
		return EXIT_USAGE;
	}
	if (check) {
		json_t *o = spec_to_json(&w.spec);
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(o);
		return 0;
	}
	w.seed = w.spec.seed;
	if (!w.spec.seed_set && getrandom(&w.seed, sizeof(w.seed), 0) != sizeof(w.seed))
		w.seed = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
	w.seed &= (1ull << 53) - 1; /* stays exact in any JSON reader */

	char err[SPEC_PATH_MAX * 2 + 512];
	uint64_t t_layout = mono_ns();
	rc = worker_prepare(&w, err, sizeof(err));
	if (rc > 0)
		return fail("interrupted", "stopped by a signal while laying out the target",
		            EXIT_SIGNAL);
	if (rc < 0)
		return fail("setup", err, EXIT_FAILED);
	double layout_s = (double)(mono_ns() - t_layout) / 1e9;

	json_t *spec = spec_to_json(&w.spec);
	json_object_set_new(spec, "seed", json_integer((json_int_t)w.seed));
	json_t *start = json_pack(
	    "{s:s, s:i, s:o, s:i, s:s, s:o, s:{s:s, s:s, s:I, s:I, s:b}, s:{s:i, s:i, s:i}}",
	    "type", "start", "version", WORKER_PROTOCOL, "time", iso_now(), "pid", (int)getpid(),
	    "worker", "spindle-worker " PACKAGE_VERSION, "spec", spec, "target", "path",
	    w.spec.target, "kind", w.is_device ? "block_device" : "file", "size",
	    (json_int_t)w.size, "laid_out_bytes", (json_int_t)w.laid_out, "direct", w.spec.direct,
	    "threads", "readers", w.spec.readers, "writers", w.spec.writers, "mixed",
	    w.spec.pattern == SPEC_IOZONE ? 0 : w.spec.threads);
	if (emit(start))
		return EXIT_FAILED;
	rc = w.spec.pattern == SPEC_IOZONE ? run_iozone(&w, layout_s) : run_plain(&w, layout_s);
	close(w.fd);
	return rc;
}
