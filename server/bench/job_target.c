/* SPDX-License-Identifier: ISC */
/* Where a benchmark job may read and write, checked from the spec before the job is queued
 * and again as it starts. stat, lstat, statvfs and realpath only: no I/O on the data. */
#define _GNU_SOURCE
#include "job_target.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hardware/sysfs.h"
#include "base/util.h"

static bool path_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static const char *dirs_list(const struct job_target_rules *r, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < r->ndirs; i++) {
		if (i)
			strncat(buf, ", ", len - strlen(buf) - 1);
		strncat(buf, r->dirs[i], len - strlen(buf) - 1);
	}
	return buf;
}

/* <sys_root>/sys/...: "" for the live box. */
static const char *sys_root(const struct job_target_rules *r)
{
	return r->sys_root && strcmp(r->sys_root, "/") ? r->sys_root : "";
}

/* An existing file named as a target (lstat'ed as st): a regular file with one name, the
 * daemon's own. A hard link is another name of a file that may be outside the bench dirs,
 * and another user's file is not the daemon's to overwrite. The worker checks the same on
 * the file it opens (--confine), so a name changed after this check does not slip by. */
static int target_file(const char *shown, const struct stat *st, struct fault *f)
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

int job_target_resolve(const struct job_target_rules *r, const struct spec *s, int64_t id,
                       struct job_target *t, struct fault *f)
{
	char list[1024];
	struct stat st;
	if (!s->target[0]) {
		/* its own file in the first bench dir, named after the job */
		int n;
		if (s->name[0])
			n = snprintf(t->path, sizeof(t->path), "%s/%s", r->dirs[0], s->name);
		else
			n = snprintf(t->path, sizeof(t->path), "%s/job-%lld", r->dirs[0],
			             (long long)id);
		if (n < 0 || (size_t)n >= sizeof(t->path))
			return fault_set(f, ERR_INVALID_ARG,
			                 "target: the bench dir's path is too long");
		snprintf(t->confine, sizeof(t->confine), "%s", r->dirs[0]);
		/* (an unnamed job's file is named after its id, known once it is stored) */
		if ((s->name[0] || id) && lstat(t->path, &st) == 0)
			return target_file(t->path, &st, f);
		return 0;
	}
	if (s->target[0] != '/')
		return fault_set(f, ERR_INVALID_ARG, "target: must be an absolute path");
	if (stat(s->target, &st) == 0 && S_ISBLK(st.st_mode)) {
		char real[PATH_MAX];
		if (!realpath(s->target, real))
			return fault_set(f, ERR_INVALID_ARG, "target: %.200s: %s", s->target,
			                 strerror(errno));
		if (!r->allow_devices)
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
		snprintf(t->path, sizeof(t->path), "%s", real);
		t->confine[0] = '\0';
		t->device = true;
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
	for (d = 0; d < r->ndirs; d++)
		if (path_inside(real, r->dirs[d]))
			break;
	if (d == r->ndirs)
		return fault_set(f, ERR_DENIED, "target: %.200s is outside the bench dirs (%.400s)",
		                 s->target, dirs_list(r, list, sizeof(list)));
	int n =
	    snprintf(t->path, sizeof(t->path), "%s%s%s", real, strcmp(real, "/") ? "/" : "", name);
	if (n < 0 || (size_t)n >= sizeof(t->path))
		return fault_set(f, ERR_INVALID_ARG, "target: too long");
	if (lstat(t->path, &st) == 0 && target_file(s->target, &st, f) < 0)
		return -1;
	snprintf(t->confine, sizeof(t->confine), "%s", r->dirs[d]);
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
int job_target_check_space(const struct job_target_rules *r, const struct spec *s,
                           const struct job_target *t, struct fault *f)
{
	char a[32], b[32], c[32];
	struct stat st;
	if (t->device) {
		/* the size the kernel gives, without opening the device */
		if (!s->size || stat(t->path, &st) < 0)
			return 0;
		char path[PATH_MAX];
		const char *root = sys_root(r);
		snprintf(path, sizeof(path), "%s/sys/dev/block/%u:%u/size", root, major(st.st_rdev),
		         minor(st.st_rdev));
		long long sectors = sysfs_read_ll(path); /* of 512 bytes, whatever the device's */
		if (sectors <= 0)
			return 0;
		if (s->size > (uint64_t)sectors * 512)
			return fault_set(f, ERR_INVALID_ARG,
			                 "size: %s is larger than the device %.80s (%s)",
			                 size_text(s->size, a, sizeof(a)), t->path,
			                 size_text((uint64_t)sectors * 512, b, sizeof(b)));
		return 0;
	}
	bool exists = lstat(t->path, &st) == 0 && S_ISREG(st.st_mode);
	uint64_t have = exists ? (uint64_t)st.st_size : 0;
	bool rewrites = s->pattern == SPEC_IOZONE && (s->passes & (1u << SPEC_PASS_WRITE));
	if (!s->size) {
		if (!rewrites && have >= s->block_size)
			return 0;
		return fault_set(f, ERR_MISSING_ARG,
		                 "size: required: the target %.120s does not exist or is smaller "
		                 "than one block (%u bytes)",
		                 t->path, (unsigned)s->block_size);
	}
	/* iozone's write pass starts from an empty file: what the file holds is freed first */
	uint64_t held = rewrites ? (exists ? (uint64_t)st.st_blocks * 512 : 0) : have;
	uint64_t need = s->size > held ? s->size - held : 0;
	if (!need)
		return 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", t->path);
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
	uint64_t reserve =
	    r->reserve_pct ? total / 100 * (uint64_t)r->reserve_pct : r->reserve_bytes;
	if (need > avail || avail - need < reserve)
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "size: laying out %s would leave less than the reserve of %s "
		    "(bench_reserve %s) free on the filesystem of %.80s; it has %s free",
		    size_text(need, a, sizeof(a)), size_text(reserve, b, sizeof(b)),
		    r->reserve_text ? r->reserve_text : "", dir, size_text(avail, c, sizeof(c)));
	return 0;
}

/* The whole disk behind the target, as the collector names it: the device number of the
 * filesystem (or of the device itself) through /sys/dev/block to its disk, a partition
 * counting as the disk that holds it. */
void job_target_find_disk(const struct job_target_rules *r, struct job_target *t)
{
	struct stat st;
	dev_t dev;
	char dir[PATH_MAX];
	t->disk[0] = '\0';
	snprintf(dir, sizeof(dir), "%s", t->path);
	if (t->device) {
		if (stat(t->path, &st) < 0)
			goto none;
		dev = st.st_rdev;
	} else {
		if (stat(t->path, &st) < 0) {
			char *slash = strrchr(dir, '/');
			if (slash)
				slash[slash == dir ? 1 : 0] = '\0';
			if (stat(dir, &st) < 0)
				goto none;
		}
		dev = st.st_dev;
	}
	char link[PATH_MAX], real[PATH_MAX], part[PATH_MAX + 16];
	const char *root = sys_root(r);
	snprintf(link, sizeof(link), "%s/sys/dev/block/%u:%u", root, major(dev), minor(dev));
	if (!realpath(link, real)) {
		snprintf(t->disk_why, sizeof(t->disk_why),
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
	snprintf(t->disk, sizeof(t->disk), "%.31s", name ? name + 1 : real);
	return;
none:
	snprintf(t->disk_why, sizeof(t->disk_why), "the target cannot be examined: %s",
	         strerror(errno));
}
