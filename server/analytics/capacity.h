/* SPDX-License-Identifier: ISC */
/* Capacity: the mounted filesystems that hold data, with their size, used and available
 * bytes, and the ZFS pools with their health, for the dashboard.
 *
 * statvfs() can block (a disk that stopped answering, a filesystem being remounted), so it
 * never runs on the loop: every CAPACITY_PERIOD_S a thread of this module's own reads
 * <proc-root>/proc/self/mounts (else /proc/mounts), keeps the filesystems that hold data
 * (not pseudo or virtual ones, not network or FUSE ones whose statvfs may hang, and the
 * first mount of each device only: bind mounts repeat it), statvfs()s them, reads the pools'
 * state from <proc-root>/proc/spl/kstat/zfs/<pool>/state, and hands the list to the loop.
 * At most one refresh is in flight; a hung one delays only the next. Loop thread only. */
#ifndef SPINDLE_CAPACITY_H
#define SPINDLE_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

#define CAPACITY_PERIOD_S  10
#define CAPACITY_MAX_FS    16 /* listed at most, in mount order: the phone's document stays small */
#define CAPACITY_MAX_POOLS 16

struct capacity_fs {
	char *name;                 /* the mount point */
	char *type;                 /* "ext4", "xfs", "zfs" (a dataset) ... */
	uint64_t size, used, avail; /* bytes, as df counts them: avail is what non-root may use */
};

struct capacity_pool {
	char *name;
	char *state; /* "ONLINE", "DEGRADED", ... as the kernel module says */
};

struct capacity {
	struct capacity_fs *fs;
	size_t nfs;
	struct capacity_pool *pools;
	size_t npools;
};

/* proc_root: --proc-root ("/" on a live box). Starts the first refresh at once. */
int capacity_init(struct event_base *base, const char *proc_root);
/* Waits for a refresh in flight, then frees everything. */
void capacity_shutdown(void);
/* The newest refresh's list, or NULL before the first one is done. Valid until the next
 * turn of the loop. */
const struct capacity *capacity_latest(void);

/* Is a filesystem of this type one that may hold data and answers statvfs promptly? */
bool capacity_type_listed(const char *type);
/* The kernel writes a space, tab, newline and backslash of a mount's fields as \040,
 * \011, \012 and \134: undone in place (job_env.c reads the mounts too). */
void capacity_unescape(char *s);

#endif
