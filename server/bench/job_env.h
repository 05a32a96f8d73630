/* SPDX-License-Identifier: ISC */
/* The environment of a benchmark job: what its target sits on, resolved when the job is
 * submitted and stored with its run (bench_runs.environment), so that a result read later
 * can be explained: the filesystem (type, mount point, source, options, block size), the
 * block devices from the target's down to whole disks (partition, dm, md, loop, disk with
 * their queue settings), on ZFS the dataset's properties, the pool's vdevs and the ARC's
 * limit, and the system (kernel, CPUs, memory, versions).
 *
 * Files are read under --sys-root and --proc-root on a helper thread of this module's
 * own; the zfs and zpool commands run as children (child.h) from the loop, with a timeout.
 * Nothing here fails a job: a part that cannot be read is left out and a "why" member of
 * the object it belongs to (the whole environment for the devices) says what was missing.
 * Loop thread only, but for the parsers. */
#ifndef SPINDLE_JOB_ENV_H
#define SPINDLE_JOB_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

struct event_base;

/* The environment of job id is resolved: text is its JSON (ours to keep and free). Runs on
 * the loop thread, never inside job_env_resolve(). */
typedef void (*job_env_done_fn)(int64_t id, char *text);

struct job_env_config {
	const char *sys_root;   /* "/" on a live box */
	const char *proc_root;  /* "/" on a live box */
	int command_timeout_ms; /* zfs and zpool; 0: 10 s */
	job_env_done_fn done;
};

int job_env_init(struct event_base *base, const struct job_env_config *cfg);
/* Waits for the files being read; resolutions in flight end without their done call (their
 * children end with child_shutdown). */
void job_env_shutdown(void);
/* Starts resolving the environment of the target path (a file, which need not exist yet,
 * in a resolved directory; or a block device). */
void job_env_resolve(int64_t id, const char *path, bool device);

/* The environment text with system.worker_version set to worker (the worker's start
 * line's "worker"): a new text, or NULL when text is NULL or not an object. */
char *job_env_set_worker(const char *text, const char *worker);

/* ---- the parsers, for the resolution and the tests */

/* The mount in a mounts file (/proc/self/mounts) holding path: the longest mount point
 * above it, one on device dev (its stat) first. 0 with the fields unescaped and NUL-ended
 * (each at most len bytes with the NUL), or -1 when none holds it. */
struct job_env_mount {
	char source[256], point[4096], type[64], options[512];
};
int job_env_find_mount(const char *mounts, const char *path, dev_t dev, struct job_env_mount *m);
/* Into obj: "model name" as cpu_model and the count of "processor" lines as cpus, of
 * /proc/cpuinfo; -1 when it names neither. */
int job_env_parse_cpuinfo(const char *text, json_t *obj);
/* c_max of /proc/spl/kstat/zfs/arcstats, or -1. */
long long job_env_parse_arc_c_max(const char *text);
/* Into zfs: the values `zfs get -Hp -o property,value ...` printed (recordsize a number of
 * bytes, the others strings; "-" is left out). The count of properties taken. */
int job_env_parse_zfs_get(const char *text, json_t *zfs);
/* The vdevs of `zpool status -P POOL`'s config section, as
 * [{"type": "mirror", "devices": ["sda", "sdb"]}, ...] (a device by its path's last
 * component; "class": "log", "cache", "spare", "special" or "dedup" outside the data
 * vdevs). NULL when the text has no config section. */
json_t *job_env_parse_zpool_status(const char *text);
/* The block devices from dev (st_dev of a file, st_rdev of a device) down to whole disks,
 * read under <sys_root>/sys; NULL with why set when there is no block device behind it. */
json_t *job_env_devices(const char *sys_root, dev_t dev, char *why, size_t whylen);

#endif
