/* SPDX-License-Identifier: ISC */
/* Where a benchmark job may read and write: a file inside one of the bench dirs (its
 * parent resolved with symlinks followed, the file itself no link, with one name, the
 * daemon's own), or a raw block device where the settings allow it and the spec confirms
 * it; whether the filesystem has room for the job's layout and the reserve; and the whole
 * disk under the target, as the collector names it. Used by jobs.c. */
#ifndef SPINDLE_JOB_TARGET_H
#define SPINDLE_JOB_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fault.h"
#include "worker/spec.h"

#define JOB_TARGET_MAX_DIRS 16

/* The settings a target is checked against. */
struct job_target_rules {
	char dirs[JOB_TARGET_MAX_DIRS][PATH_MAX]; /* the bench dirs, resolved; a job without a
	                                           * target gets its own file in dirs[0] */
	size_t ndirs;
	bool allow_devices;   /* raw block devices (with "confirm": true) */
	const char *sys_root; /* <sys_root>/sys/dev/block resolves a target's disk */
	/* free space a layout must leave on a target's filesystem: a share of its size
	 * (reserve_pct, when not 0) or bytes; reserve_text as configured, for messages */
	uint64_t reserve_bytes;
	int reserve_pct;
	const char *reserve_text;
};

struct job_target {
	char path[PATH_MAX];    /* the file or device, resolved */
	char confine[PATH_MAX]; /* the bench dir the worker is held in; "" for a device */
	bool device;
	char disk[32];      /* the whole disk under it (job_target_find_disk); "" when none */
	char disk_why[160]; /* why there is none */
};

/* The target of a job with spec s: the spec's, resolved and checked, or, when it names
 * none, a file in the first bench dir named after the job (its name, else "job-<id>").
 * Fills t's path, confine and device. */
int job_target_resolve(const struct job_target_rules *r, const struct spec *s, int64_t id,
                       struct job_target *t, struct fault *f);
/* Whether the target holds the job's size, or its filesystem can take the layout and keep
 * the reserve (a device: whether it is as large). */
int job_target_check_space(const struct job_target_rules *r, const struct spec *s,
                           const struct job_target *t, struct fault *f);
/* Fills t's disk, or disk_why. */
void job_target_find_disk(const struct job_target_rules *r, struct job_target *t);

#endif
