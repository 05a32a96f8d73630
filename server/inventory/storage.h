/* SPDX-License-Identifier: ISC */
/* Storage: the box's ZFS pools and datasets, read-only, in the appliance's terms (pools;
 * under each pool its projects, and under each project its filesystems and LUNs), for
 * /api/storage/v1, the dashboard and /metrics.
 *
 * What ZFS says comes from its own commands, run as children off the loop, each with a
 * timeout: `zpool list -Hp`, `zpool status` and one `zfs get -Hp` of every filesystem and
 * volume. They run at start and then every STORAGE_PERIOD_S; their output is parsed on a
 * helper thread of this module's own into a snapshot the loop swaps in whole, with every
 * answer of the storage service already in it as bytes (and gzip, and tags): a request
 * costs the loop a lookup, never a command, a parse or a JSON document; one that comes
 * before the first refresh is done waits for it. A box without ZFS (no `zpool` on PATH, or
 * no pool) has an empty snapshot. A pool that is not ONLINE is a problem naming the vdevs
 * at fault.
 *
 * A name ZFS itself would refuse (OpenZFS's zfs_namecheck.c: components of alphanumerics
 * and "-_.: " ('%' too in a dataset's), none empty, "." or ".."; a pool's beginning with a
 * letter, not one `zpool create` keeps for vdevs), a dataset of no pool or project listed
 * before it, one printed twice, or one too long for the API to address is left out, and
 * logged once.
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

/* What the API makes of the objects before their answers are built; set once, before the
 * first refresh ends (storage_init). */
struct storage_shape {
	/* On the loop as a refresh begins: what shape() reads (a new reference, or NULL). */
	json_t *(*begin)(void);
	/* On the storage thread, for each object of kind "pools", "projects", "filesystems" or
	 * "luns": adds its href and the like. */
	void (*shape)(json_t *obj, const char *kind, const json_t *ctx);
	/* The longest pool, project or share name (under its project) it can address; a longer
	 * one is left out (0: 255, the longest ZFS has). */
	size_t name_max;
};
void storage_set_shape(const struct storage_shape *s);

/* An answer as bytes: the JSON and a newline; its gzip when long enough to gain (else
 * NULL); and their tags (quoted, of their bytes: an answer that did not change keeps its
 * tag from one snapshot to the next). */
struct storage_doc {
	const char *body;
	size_t len;
	const char *etag;
	const void *gz;
	size_t gz_len;
	const char *etag_gz;
};

/* An answer of the newest snapshot, valid until the loop turns, or NULL (no such object,
 * or no snapshot). what "pools", "projects", "filesystems" or "luns": {what: [...]}, all of
 * them, or a pool's projects (pool given), or a project's filesystems or LUNs (pool and
 * project given). what "pool", "project", "filesystem" or "lun": {what: {...}}, the one
 * named name in its pool and project (as the kind has them; NULL for the others). */
const struct storage_doc *storage_answer(const char *what, const char *pool, const char *project,
                                         const char *name);

/* What a refresh does with the commands' outputs: parse them into a snapshot (each text
 * may be NULL: the command failed). Pure; exposed for the fuzz harness. */
struct storage_snapshot;
struct storage_snapshot *storage_parse(const char *zpool_list, const char *zpool_status,
                                       const char *zfs_get);
void storage_snapshot_free(struct storage_snapshot *s);
/* A snapshot's pools, and its list of a kind (a new reference; as parsed, before the answers
 * are built of it), for the same. */
const struct storage_pool *storage_snapshot_pools(const struct storage_snapshot *s, size_t *n);
json_t *storage_snapshot_list(const struct storage_snapshot *s, const char *kind);

#endif
