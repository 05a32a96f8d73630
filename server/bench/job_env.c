/* SPDX-License-Identifier: ISC */
/* The environment of a benchmark job (job_env.h). A resolution is a task: its files are
 * read on this module's helper thread (sysfs can be slow, statvfs can hang), then, on ZFS,
 * `zfs get` and `zpool status` run one after the other as children of the loop (child.c
 * reaps every child of the daemon, so no other thread may fork), and the text goes to
 * the done callback. A part that cannot be read leaves a "why" instead. */
#define _GNU_SOURCE
#include "job_env.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "analytics/capacity.h"
#include "base/child.h"
#include "base/log.h"
#include "analytics/procfs.h"
#include "hardware/smart.h"
#include "hardware/sysfs.h"
#include "inventory/zpool.h"
#include "base/util.h"
#include "base/workq.h"
#include "base/utf8.h"

#define ENV_MAX_DEVICES 64
#define ENV_TIMEOUT_MS  10000

static const char *const zfs_props =
    "recordsize,primarycache,secondarycache,compression,atime,sync,logbias";

static struct {
	struct workq *wq;
	struct job_env_config cfg;
	bool stopping;
} env;

struct env_task {
	int64_t id;
	char path[PATH_MAX];
	bool device;
	json_t *env; /* built on the thread, finished on the loop */
	json_t *zfs; /* env's "zfs" (borrowed), NULL when not on ZFS */
	char dataset[256], pool[256];
};

/* <root>/...: "" for the live box's "/". */
static const char *root_of(const char *root)
{
	return root && strcmp(root, "/") ? root : "";
}

/* A JSON string of text read from outside (a file, a command's output, a path): bytes
 * that are not UTF-8 become '?' (jansson refuses them, and the member would be lost). */

/* Appends to obj's "why", "; " between reasons. */
static void why_add(json_t *obj, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(json_t *obj, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	const char *had = json_string_value(json_object_get(obj, "why"));
	if (had) {
		char *both = xasprintf("%s; %s", had, msg);
		json_object_set_new(obj, "why", utf8_json(both));
		free(both);
	} else {
		json_object_set_new(obj, "why", utf8_json(msg));
	}
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	size_t lead = strspn(s, " \t");
	memmove(s, s + lead, n - lead + 1);
}

/* A small attribute file, trimmed, into out; 0, or -1 when it cannot be read. */
static int read_attr(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int read_attr(char *out, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	char *text = util_read_file(path, NULL);
	if (!text)
		return -1;
	snprintf(out, len, "%s", text);
	free(text);
	trim(out);
	return 0;
}

static void set_ll_attr(json_t *o, const char *key, const char *dir, const char *file)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	long long v = sysfs_read_ll(path);
	if (v >= 0)
		json_object_set_new(o, key, json_integer(v));
}

/* ---- the parsers */

static const char *next_line(const char *l)
{
	const char *nl = strchr(l, '\n');
	return nl ? nl + 1 : l + strlen(l);
}

/* The line at l into buf, without its newline. */
static void line_copy(const char *l, char *buf, size_t len)
{
	size_t n = strcspn(l, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, l, n);
	buf[n] = '\0';
}

/* Is mount point mp path or above it? */
static bool holds(const char *mp, const char *path)
{
	size_t n = strlen(mp);
	if (strcmp(mp, "/") == 0)
		return path[0] == '/';
	return strncmp(path, mp, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

int job_env_find_mount(const char *mounts, const char *path, dev_t dev, struct job_env_mount *m)
{
	size_t best = 0;
	bool found = false, best_same = false;
	char line[8192];
	for (const char *l = mounts; *l; l = next_line(l)) {
		line_copy(l, line, sizeof(line));
		struct job_env_mount c;
		char *save = NULL, *f[4];
		int nf = 0;
		for (char *t = strtok_r(line, " ", &save); t && nf < 4;
		     t = strtok_r(NULL, " ", &save))
			f[nf++] = t;
		if (nf < 4)
			continue;
		for (int i = 0; i < 4; i++)
			capacity_unescape(f[i]);
		if (strlen(f[1]) >= sizeof(c.point) || !holds(f[1], path))
			continue;
		struct stat st;
		bool same = stat(f[1], &st) == 0 && st.st_dev == dev;
		size_t len = strlen(f[1]);
		/* one on the target's device wins; among equals the longest, then the last
		 * (a later mount on the same point hides the earlier) */
		if (found && (best_same && !same))
			continue;
		if (found && best_same == same && len < best)
			continue;
		snprintf(c.source, sizeof(c.source), "%s", f[0]);
		snprintf(c.point, sizeof(c.point), "%s", f[1]);
		snprintf(c.type, sizeof(c.type), "%s", f[2]);
		snprintf(c.options, sizeof(c.options), "%s", f[3]);
		*m = c;
		best = len;
		best_same = same;
		found = true;
	}
	return found ? 0 : -1;
}

int job_env_parse_cpuinfo(const char *text, json_t *obj)
{
	int count = 0;
	bool model = false;
	char line[512];
	for (const char *l = text; *l; l = next_line(l)) {
		line_copy(l, line, sizeof(line));
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		trim(line);
		char *value = colon + 1;
		trim(value);
		if (strcmp(line, "processor") == 0) {
			count++;
		} else if (!model && strcmp(line, "model name") == 0 && *value) {
			json_object_set_new(obj, "cpu_model", utf8_json(value));
			model = true;
		}
	}
	if (count)
		json_object_set_new(obj, "cpus", json_integer(count));
	return count || model ? 0 : -1;
}

long long job_env_parse_arc_c_max(const char *text)
{
	for (const char *l = text; *l; l = next_line(l)) {
		unsigned type;
		long long v;
		if (strncmp(l, "c_max ", 6) == 0 && sscanf(l + 6, "%u %lld", &type, &v) == 2 &&
		    v >= 0)
			return v;
	}
	return -1;
}

int job_env_parse_zfs_get(const char *text, json_t *zfs)
{
	int n = 0;
	char line[512];
	for (const char *l = text; *l; l = next_line(l)) {
		line_copy(l, line, sizeof(line));
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		const char *prop = line, *value = tab + 1;
		if (!*value || strcmp(value, "-") == 0)
			continue;
		/* only what was asked for: the names are the JSON's */
		const char *p = strstr(zfs_props, prop);
		size_t plen = strlen(prop);
		if (!plen || !p || (p != zfs_props && p[-1] != ',') || (p[plen] && p[plen] != ','))
			continue;
		if (strcmp(prop, "recordsize") == 0) {
			long long v;
			if (util_parse_ll(value, 0, LLONG_MAX, &v) < 0)
				continue;
			json_object_set_new(zfs, prop, json_integer(v));
		} else {
			json_object_set_new(zfs, prop, utf8_json(value));
		}
		n++;
	}
	return n;
}

static const char *last_component(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

json_t *job_env_parse_zpool_status(const char *text)
{
	json_t *vdevs = zpool_parse_vdevs(text);
	size_t i, k;
	json_t *v, *d;
	/* a run's environment names each device by its path's last component alone */
	json_array_foreach(vdevs, i, v)
	{
		json_t *names = json_array();
		json_array_foreach(json_object_get(v, "devices"), k, d)
		{
			const char *name = json_string_value(json_object_get(d, "name"));
			json_array_append_new(names, utf8_json(last_component(name ? name : "")));
		}
		json_object_set_new(v, "devices", names);
	}
	return vdevs;
}

/* ---- the block devices */

static bool attr_exists(const char *dir, const char *file)
{
	char path[PATH_MAX];
	struct stat st;
	return snprintf(path, sizeof(path), "%s/%s", dir, file) < (int)sizeof(path) &&
	       stat(path, &st) == 0;
}

struct dev_walk {
	char *dirs[ENV_MAX_DEVICES]; /* resolved sysfs directories, in the order found */
	size_t n;
};

/* Adds dir (resolved) unless it is there already; its name into below. */
static void walk_add(struct dev_walk *w, const char *dir, json_t *below)
{
	if (below)
		json_array_append_new(below, utf8_json(last_component(dir)));
	for (size_t i = 0; i < w->n; i++)
		if (strcmp(last_component(w->dirs[i]), last_component(dir)) == 0)
			return;
	if (w->n < ENV_MAX_DEVICES)
		w->dirs[w->n++] = xstrdup(dir);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The devices under dir's slaves/, sorted by name. */
static void walk_slaves(struct dev_walk *w, const char *dir, json_t *below)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/slaves", dir);
	DIR *d = opendir(path);
	if (!d)
		return;
	char *names[ENV_MAX_DEVICES] = {NULL};
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < ENV_MAX_DEVICES)
		if (e->d_name[0] != '.')
			names[n++] = xstrdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		char link[PATH_MAX], real[PATH_MAX];
		if (snprintf(link, sizeof(link), "%s/%s", path, names[i]) < (int)sizeof(link) &&
		    realpath(link, real))
			walk_add(w, real, below);
		free(names[i]);
	}
}

static json_t *device_json(struct dev_walk *w, const char *dir)
{
	json_t *o = json_pack("{s:o}", "name", utf8_json(last_component(dir)));
	json_t *below = json_array();
	char buf[PATH_MAX];
	/* in sectors of 512 bytes, whatever the device's */
	set_ll_attr(o, "size_bytes", dir, "size");
	json_t *size = json_object_get(o, "size_bytes");
	if (size)
		json_integer_set(size, json_integer_value(size) * 512);
	if (attr_exists(dir, "partition")) {
		json_object_set_new(o, "kind", utf8_json("partition"));
		snprintf(buf, sizeof(buf), "%s", dir);
		char *slash = strrchr(buf, '/');
		if (slash && slash != buf) {
			*slash = '\0';
			walk_add(w, buf, below);
		}
		json_object_set_new(o, "below", below);
		return o; /* a partition has no queue of its own */
	}
	if (read_attr(buf, sizeof(buf), "%s/dm/name", dir) == 0) {
		json_object_set_new(o, "kind", utf8_json("dm"));
		json_object_set_new(o, "dm_name", utf8_json(buf));
	} else if (read_attr(buf, sizeof(buf), "%s/md/level", dir) == 0) {
		json_object_set_new(o, "kind", utf8_json("md"));
		json_object_set_new(o, "level", utf8_json(buf));
	} else if (attr_exists(dir, "loop")) {
		json_object_set_new(o, "kind", utf8_json("loop"));
		if (read_attr(buf, sizeof(buf), "%s/loop/backing_file", dir) == 0)
			json_object_set_new(o, "backing_file", utf8_json(buf));
	} else {
		json_object_set_new(o, "kind", utf8_json("disk"));
	}
	if (read_attr(buf, sizeof(buf), "%s/device/model", dir) == 0 && *buf)
		json_object_set_new(o, "model", utf8_json(buf));
	snprintf(buf, sizeof(buf), "%s/queue/rotational", dir);
	int rot = sysfs_read_flag(buf);
	if (rot >= 0)
		json_object_set_new(o, "rotational", json_boolean(rot));
	if (read_attr(buf, sizeof(buf), "%s/queue/scheduler", dir) == 0 && *buf) {
		/* "none [mq-deadline] kyber": the active one is in brackets */
		char *open = strchr(buf, '['), *close = open ? strchr(open, ']') : NULL;
		if (open && close) {
			*close = '\0';
			json_object_set_new(o, "scheduler", utf8_json(open + 1));
		} else if (!strchr(buf, ' ')) {
			json_object_set_new(o, "scheduler", utf8_json(buf));
		}
	}
	set_ll_attr(o, "nr_requests", dir, "queue/nr_requests");
	set_ll_attr(o, "max_sectors_kb", dir, "queue/max_sectors_kb");
	if (read_attr(buf, sizeof(buf), "%s/queue/write_cache", dir) == 0 && *buf)
		json_object_set_new(o, "write_cache", utf8_json(buf));
	walk_slaves(w, dir, below);
	json_object_set_new(o, "below", below);
	return o;
}

json_t *job_env_devices(const char *sys_root, dev_t dev, char *why, size_t whylen)
{
	char link[PATH_MAX], real[PATH_MAX];
	snprintf(link, sizeof(link), "%s/sys/dev/block/%u:%u", root_of(sys_root), major(dev),
	         minor(dev));
	if (!realpath(link, real)) {
		snprintf(why, whylen,
		         "devices: no block device behind the target (device %u:%u: a network, "
		         "virtual or pooled filesystem?)",
		         major(dev), minor(dev));
		return NULL;
	}
	struct dev_walk w = {.n = 0};
	walk_add(&w, real, NULL);
	json_t *arr = json_array();
	/* breadth first: each device is listed before the ones below it */
	for (size_t i = 0; i < w.n; i++)
		json_array_append_new(arr, device_json(&w, w.dirs[i]));
	for (size_t i = 0; i < w.n; i++)
		free(w.dirs[i]);
	return arr;
}

/* ---- the resolution, on the helper thread */

static json_t *filesystem_json(struct env_task *t, dev_t dev, const char *dir)
{
	json_t *fs = json_object();
	char path[PATH_MAX];
	const char *proc = root_of(env.cfg.proc_root);
	snprintf(path, sizeof(path), "%s/proc/self/mounts", proc);
	char *mounts = util_read_file(path, NULL);
	if (!mounts) {
		snprintf(path, sizeof(path), "%s/proc/mounts", proc);
		mounts = util_read_file(path, NULL);
	}
	struct job_env_mount *m = xmalloc(sizeof(*m));
	if (!mounts) {
		why_add(fs, "the mounts cannot be read (%s): %s", path, strerror(errno));
	} else if (job_env_find_mount(mounts, t->path, dev, m) < 0) {
		why_add(fs, "no mount in %s holds the target", path);
	} else {
		json_object_set_new(fs, "type", utf8_json(m->type));
		json_object_set_new(fs, "mount_point", utf8_json(m->point));
		json_object_set_new(fs, "source", utf8_json(m->source));
		json_object_set_new(fs, "options", utf8_json(m->options));
		if (strcmp(m->type, "zfs") == 0) {
			snprintf(t->dataset, sizeof(t->dataset), "%s", m->source);
			snprintf(t->pool, sizeof(t->pool), "%.*s", (int)strcspn(m->source, "/"),
			         m->source);
		}
	}
	free(m);
	free(mounts);
	struct statvfs v;
	if (statvfs(dir, &v) == 0)
		json_object_set_new(fs, "block_size", json_integer((json_int_t)v.f_bsize));
	else
		why_add(fs, "block_size: statvfs %s: %s", dir, strerror(errno));
	return fs;
}

/* What the files say of ZFS: the dataset, its pool and the ARC's limit. */
static json_t *zfs_json(const struct env_task *t)
{
	json_t *z =
	    json_pack("{s:o, s:o}", "dataset", utf8_json(t->dataset), "pool", utf8_json(t->pool));
	char buf[64];
	long long v = -1;
	const char *sys = root_of(env.cfg.sys_root), *proc = root_of(env.cfg.proc_root);
	if (read_attr(buf, sizeof(buf), "%s/sys/module/zfs/parameters/zfs_arc_max", sys) < 0 ||
	    util_parse_ll(buf, 0, LLONG_MAX, &v) < 0) {
		why_add(z, "arc_max_bytes: %s/sys/module/zfs/parameters/zfs_arc_max cannot be read",
		        sys);
		return z;
	}
	if (v == 0) { /* the default: what the module computed */
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/proc/spl/kstat/zfs/arcstats", proc);
		char *text = util_read_file(path, NULL);
		v = text ? job_env_parse_arc_c_max(text) : -1;
		free(text);
		if (v < 0)
			why_add(z,
			        "arc_max_bytes: zfs_arc_max is 0 (the default) and %s has no c_max",
			        path);
	}
	if (v > 0)
		json_object_set_new(z, "arc_max_bytes", json_integer(v));
	return z;
}

static json_t *system_json(void)
{
	json_t *s = json_object();
	const char *proc = root_of(env.cfg.proc_root);
	char buf[256], path[PATH_MAX];
	if (read_attr(buf, sizeof(buf), "%s/proc/sys/kernel/osrelease", proc) == 0 && *buf)
		json_object_set_new(s, "kernel", utf8_json(buf));
	else
		why_add(s, "kernel: %s/proc/sys/kernel/osrelease cannot be read", proc);
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", proc);
	char *text = util_read_file(path, NULL);
	if (!text || job_env_parse_cpuinfo(text, s) < 0)
		why_add(s, "cpu: %s cannot be read", path);
	free(text);
	snprintf(path, sizeof(path), "%s/proc/meminfo", proc);
	text = util_read_file(path, NULL);
	struct procfs_snapshot snap = {.have_mem = false};
	if (text && procfs_parse_meminfo(text, &snap) == 0)
		json_object_set_new(s, "memory_bytes", json_integer((json_int_t)snap.mem_total));
	else
		why_add(s, "memory_bytes: %s cannot be read", path);
	free(text);
	json_object_set_new(s, "spindle_version", utf8_json(PACKAGE_VERSION));
	return s;
}

static void task_work(void *arg)
{
	struct env_task *t = arg;
	char at[32];
	json_t *e = json_pack("{s:s, s:{s:o, s:s}}", "resolved_at",
	                      util_iso8601(util_now(), at, sizeof(at)), "target", "path",
	                      utf8_json(t->path), "kind", t->device ? "block_device" : "file");
	t->env = e;
	struct stat st;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", t->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	/* a file may not exist yet: its directory is on the same filesystem */
	int rc = t->device ? stat(t->path, &st) : stat(t->path, &st) == 0 ? 0 : stat(dir, &st);
	if (rc < 0) {
		why_add(e, "the target cannot be examined: %s", strerror(errno));
		json_object_set_new(e, "filesystem", json_null());
		json_object_set_new(e, "devices", json_array());
	} else {
		dev_t dev = t->device ? st.st_rdev : st.st_dev;
		json_object_set_new(e, "filesystem",
		                    t->device ? json_null() : filesystem_json(t, dev, dir));
		char why[256];
		json_t *devs = job_env_devices(env.cfg.sys_root, dev, why, sizeof(why));
		if (!devs)
			why_add(e, "%s", why);
		json_object_set_new(e, "devices", devs ? devs : json_array());
	}
	if (t->dataset[0]) {
		t->zfs = zfs_json(t);
		json_object_set_new(e, "zfs", t->zfs);
	}
	json_object_set_new(e, "system", system_json());
}

/* ---- the commands and the end, on the loop */

static void task_free(struct env_task *t)
{
	json_decref(t->env);
	free(t);
}

/* The health of a disk under the target, once (disks lists the names given). */
static void disk_health_add(json_t *disks, const char *name)
{
	const char *disk = NULL;
	const struct smart_info *s = smart_get_device(name, &disk);
	if (!s)
		return;
	size_t i;
	json_t *e;
	json_array_foreach(disks, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "name")), disk) == 0)
			return;
	}
	json_array_append_new(disks, json_pack("{s:s, s:s, s:s}", "name", disk, "health",
	                                       smart_health_name(s->health), "details", s->why));
}

/* The environment's "disks": each whole disk under the target (its devices, or on ZFS the
 * pool's vdevs) with its health when the job was submitted, so that a run on a disk that
 * reports trouble says so (findings) and a comparison shows a health that changed. */
static void disks_health(json_t *e)
{
	json_t *disks = json_array();
	size_t i, j;
	json_t *d, *v;
	json_array_foreach(json_object_get(e, "devices"), i, d)
	{
		const char *kind = json_string_value(json_object_get(d, "kind"));
		const char *name = json_string_value(json_object_get(d, "name"));
		if (kind && name && strcmp(kind, "disk") == 0)
			disk_health_add(disks, name);
	}
	json_array_foreach(json_object_get(json_object_get(e, "zfs"), "vdevs"), i, v)
	{
		json_t *name;
		json_array_foreach(json_object_get(v, "devices"), j, name)
		{
			if (json_is_string(name))
				disk_health_add(disks, json_string_value(name));
		}
	}
	if (json_array_size(disks))
		json_object_set_new(e, "disks", disks);
	else
		json_decref(disks);
}

static void task_end(struct env_task *t)
{
	disks_health(t->env);
	char *text = json_dumps(t->env, JSON_COMPACT);
	int64_t id = t->id;
	task_free(t);
	env.cfg.done(id, text);
}

static void zpool_exit(void *arg, const struct child_result *res);
static void zfs_exit(void *arg, const struct child_result *res);

/* Runs argv as a child; false (with a why) when it cannot be started. */
static bool task_spawn(struct env_task *t, char *const *argv,
                       void (*on_exit)(void *, const struct child_result *))
{
	struct child_opts o = {
	    .argv = argv,
	    .timeout_ms = env.cfg.command_timeout_ms ? env.cfg.command_timeout_ms : ENV_TIMEOUT_MS,
	    .kill_grace_ms = 1000,
	    .on_exit = on_exit,
	    .arg = t,
	};
	char err[256];
	if (child_spawn(&o, err, sizeof(err)))
		return true;
	why_add(t->zfs, "%s: %s", argv[0], err);
	return false;
}

/* Did the command do its work? Else a why saying how it ended. */
static bool command_ok(struct env_task *t, const char *what, const struct child_result *res)
{
	char why[256];
	if (!child_result_why(
	        res, what, env.cfg.command_timeout_ms ? env.cfg.command_timeout_ms : ENV_TIMEOUT_MS,
	        why, sizeof(why)))
		return true;
	why_add(t->zfs, "%s", why);
	return false;
}

static void zpool_start(struct env_task *t)
{
	char *argv[] = {"zpool", "status", "-P", t->pool, NULL};
	if (!task_spawn(t, argv, zpool_exit))
		task_end(t);
}

static void zfs_exit(void *arg, const struct child_result *res)
{
	struct env_task *t = arg;
	if (env.stopping) {
		task_free(t);
		return;
	}
	if (command_ok(t, "zfs get", res) && job_env_parse_zfs_get(res->out, t->zfs) == 0)
		why_add(t->zfs, "zfs get: no properties in its answer");
	zpool_start(t);
}

/* A leaf of the pool (a path's last component, a by-id name or a kernel name) as the
 * whole disk the collector reports: its kernel name through /dev/disk/by-* or /dev when
 * that resolves, a partition counting as its disk (<sys_root>/sys/class/block). */
static void pool_leaf_disk(const char *leaf, char *out, size_t len)
{
	static const char *const dirs[] = {"/dev/disk/by-id", "/dev/disk/by-path",
	                                   "/dev/disk/by-uuid", "/dev/disk/by-partuuid", "/dev"};
	char path[PATH_MAX], real[PATH_MAX];
	snprintf(out, len, "%s", leaf);
	for (size_t i = 0; i < nitems(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], leaf);
		if (realpath(path, real)) {
			snprintf(out, len, "%.*s", (int)len - 1, last_component(real));
			break;
		}
	}
	snprintf(path, sizeof(path), "%s/sys/class/block/%s", root_of(env.cfg.sys_root), out);
	if (!realpath(path, real))
		return;
	size_t n = strlen(real);
	snprintf(real + n, sizeof(real) - n, "/partition");
	if (access(real, F_OK) != 0)
		return;
	real[n] = '\0';
	char *slash = strrchr(real, '/');
	if (slash) {
		*slash = '\0';
		snprintf(out, len, "%.*s", (int)len - 1, last_component(real));
	}
}

/* The whole disks under the pool's vdevs (spares idle, so not theirs), each once: where a
 * job on the pool reads and writes, as the collector names them. */
static json_t *pool_disks(const json_t *vdevs)
{
	json_t *disks = json_array();
	size_t i, k;
	const json_t *v, *leaf;
	json_array_foreach(vdevs, i, v)
	{
		const char *cls = json_string_value(json_object_get(v, "class"));
		if (cls && strcmp(cls, "spare") == 0)
			continue;
		json_array_foreach(json_object_get(v, "devices"), k, leaf)
		{
			char disk[64];
			pool_leaf_disk(json_string_value(leaf), disk, sizeof(disk));
			bool seen = false;
			for (size_t d = 0; d < json_array_size(disks) && !seen; d++)
				seen =
				    strcmp(json_string_value(json_array_get(disks, d)), disk) == 0;
			if (!seen)
				json_array_append_new(disks, utf8_json(disk));
		}
	}
	return disks;
}

static void zpool_exit(void *arg, const struct child_result *res)
{
	struct env_task *t = arg;
	if (env.stopping) {
		task_free(t);
		return;
	}
	if (command_ok(t, "zpool status", res)) {
		json_t *vdevs = job_env_parse_zpool_status(res->out);
		if (vdevs) {
			json_object_set_new(t->zfs, "vdevs", vdevs);
			json_object_set_new(t->zfs, "disks", pool_disks(vdevs));
		} else
			why_add(t->zfs, "zpool status: no config section in its answer");
	}
	task_end(t);
}

static void task_done(void *arg)
{
	struct env_task *t = arg;
	if (env.stopping) {
		task_free(t);
		return;
	}
	if (!t->zfs) {
		task_end(t);
		return;
	}
	/* a dataset name is never an option, but the command line is no place to find out */
	if (t->dataset[0] == '-' || t->pool[0] == '-') {
		why_add(t->zfs, "the dataset %s is not a name zfs takes", t->dataset);
		task_end(t);
		return;
	}
	char props[128];
	snprintf(props, sizeof(props), "%s", zfs_props);
	char *argv[] = {"zfs", "get", "-Hp", "-o", "property,value", props, t->dataset, NULL};
	if (!task_spawn(t, argv, zfs_exit))
		zpool_start(t);
}

/* ---- the module */

int job_env_init(struct event_base *base, const struct job_env_config *cfg)
{
	env.cfg = *cfg;
	env.stopping = false;
	/* one thread: resolutions are rare and each reads a few dozen small files */
	env.wq = workq_new(base, 1);
	if (!env.wq)
		return -1;
	workq_set_limit(env.wq, 0); /* a queued job must get its environment */
	return 0;
}

void job_env_shutdown(void)
{
	env.stopping = true;
	/* what is queued would be dropped at its end: not worked at all (a sweep's runs queue
	 * up to the limit, each a few dozen files, seconds on a busy box at helper priority) */
	if (env.wq)
		workq_drop_queued(env.wq);
	workq_free(env.wq);
	env.wq = NULL;
}

void job_env_resolve(int64_t id, const char *path, bool device)
{
	struct env_task *t = xcalloc(1, sizeof(*t));
	t->id = id;
	t->device = device;
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (!env.wq || workq_submit(env.wq, task_work, task_done, t) < 0) {
		/* (only while stopping: the next start resolves it) */
		free(t);
		log_warn("jobs: job %lld: its environment is not resolved now", (long long)id);
	}
}

char *job_env_set_worker(const char *text, const char *worker)
{
	json_t *e = text && worker ? json_loads(text, 0, NULL) : NULL;
	if (!json_is_object(e)) {
		json_decref(e);
		return NULL;
	}
	json_t *s = json_object_get(e, "system");
	if (!json_is_object(s)) {
		s = json_object();
		json_object_set_new(e, "system", s);
	}
	json_object_set_new(s, "worker_version", utf8_json(worker));
	char *out = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return out;
}
