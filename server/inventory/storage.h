/* SPDX-License-Identifier: ISC */
/* Storage: the box's ZFS pools and datasets, read-only, in the appliance's terms (pools;
 * under each pool its projects, and under each project its filesystems and LUNs), for
 * /api/storage/v1, the dashboard and /metrics.
 *
 * What ZFS says comes from its own commands, run as children off the loop, each with a
 * timeout: `zpool list -Hp`, `zpool status` and one `zfs get -Hp` of every filesystem and
 * volume. They run at start and then every STORAGE_PERIOD_S; their output is parsed on a
 * helper thread of this module's own into a snapshot the loop swaps in whole. Requests are
 * answered from the newest snapshot, never by running a command; one that comes before the
 * first refresh is done waits for it. A box without ZFS (no `zpool` on PATH, or no pool)
 * has an empty snapshot. A pool that is not ONLINE is a problem naming the vdevs at fault.
 *
 * The appliance's model on a plain ZFS box: a project is a filesystem directly under a
 * pool's root dataset; a filesystem is any filesystem below a project, named by its path
 * under the project ("home/alice"); a LUN is any volume below a project. A volume directly
 * under the root dataset is a LUN of the project "default", which stands for the root
 * dataset itself (when no filesystem of that name exists). Loop thread only. */
#ifndef SPINDLE_STORAGE_H
#define SPINDLE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

struct event_base;

#define STORAGE_PERIOD_S        10
#define STORAGE_CMD_TIMEOUT_MS  20000
#define STORAGE_MAX_OUTPUT      (32u << 20) /* a zfs get of tens of thousands of datasets */
#define STORAGE_DEFAULT_PROJECT "default"

/* A pool as the dashboard and /metrics show it. */
struct storage_pool {
	const char *name;
	const char *health; /* as zpool says it: ONLINE, DEGRADED, FAULTED, ... */
	uint64_t size, allocated, free, available;
};

/* Starts the first refresh at once; 0, or -1 when the timer or the thread cannot be had.
 * sys_root: --sys-root, where the ZFS module's parameters are read. */
int storage_init(struct event_base *base, const char *sys_root);
void storage_shutdown(void);

/* cb(arg) once a snapshot exists: at once when it does, else when the first refresh ends
 * (whatever it found). */
void storage_when_ready(void (*cb)(void *arg), void *arg);

/* The newest snapshot's pools (n of them; NULL before the first), valid until the loop
 * turns. */
const struct storage_pool *storage_pools(size_t *n);

/* The objects of the newest snapshot, new references, each without its href:
 * kind "pools", "projects", "filesystems" or "luns"; pool and project narrow the list
 * (NULL: all). An array, or NULL when pool (or project in pool) does not exist. */
json_t *storage_list(const char *kind, const char *pool, const char *project);
/* One object by its path, or NULL. */
json_t *storage_get(const char *kind, const char *pool, const char *project, const char *name);

/* What a refresh does with the commands' outputs: parse them into a snapshot (each text
 * may be NULL: the command failed). Pure; exposed for the fuzz harness. */
struct storage_snapshot;
struct storage_snapshot *storage_parse(const char *zpool_list, const char *zpool_status,
                                       const char *zfs_get);
void storage_snapshot_free(struct storage_snapshot *s);
/* A snapshot's pools, and its list of a kind (a new reference), for the same. */
const struct storage_pool *storage_snapshot_pools(const struct storage_snapshot *s, size_t *n);
json_t *storage_snapshot_list(const struct storage_snapshot *s, const char *kind);

#endif
