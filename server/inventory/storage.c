/* SPDX-License-Identifier: ISC */
/* ZFS pools and datasets in the appliance's shape (storage.h): the commands run as
 * children on the loop, their output is parsed on this module's own helper thread. */
#include "storage.h"
#include "base/child.h"
#include "base/gzip.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/loopwork.h"
#include "base/utf8.h"
#include "base/util.h"
#include "base/workq.h"
#include "hardware/problems.h"
#include "zpool.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <zlib.h>

/* What one zfs get asks of every filesystem and volume: all exist in OpenZFS 2.1 (an
 * unknown name would fail the whole command). */
#define ZFS_PROPS                                                                                  \
	"type,creation,guid,used,available,referenced,usedbydataset,usedbysnapshots,"              \
	"usedbyrefreservation,quota,refquota,reservation,refreservation,mountpoint,"               \
	"compression,compressratio,recordsize,volsize,volblocksize,readonly,atime,dedup,"          \
	"checksum,logbias,copies,sharenfs,sharesmb,snapdir,aclinherit,secondarycache,sync,"        \
	"casesensitivity,normalization,utf8only,nbmand,vscan,encryption,keystatus"

struct storage_snapshot {
	json_t *pools, *projects, *filesystems, *luns; /* arrays */
	struct storage_pool *pool;                     /* names point into pools' objects */
	size_t npools;
	json_t *faults;   /* {pool: {"vdevs": "sdb UNAVAIL: cannot open, ..."}} for the problems */
	json_t *refused;  /* {name: why} of the names left out */
	struct hmap keys; /* doc_key() of each object placed -> its JSON: who is there already */
	struct hmap docs; /* doc_key() of each answer -> its struct sdoc */
};

/* An answer as bytes: the JSON and a newline, its gzip (when long enough to gain), tags. */
struct sdoc {
	struct storage_doc d;
	char *body;
	unsigned char *gz;
	char etag[40], etag_gz[44];
};

/* Room for a doc_key(): a kind and three names, each shorter than a dataset's name. */
#define KEY_MAX 1024

static void sdoc_free(void *p);

enum step { STEP_LIST, STEP_STATUS, STEP_GET, STEP_N };

static struct {
	struct event *timer;
	struct workq *wq;
	bool in_flight, stopping;
	enum step step;
	char *out[STEP_N]; /* the commands' outputs of the refresh in flight */
	struct child *child;
	struct storage_snapshot *latest;
	struct waitlist waiters; /* requests before the first snapshot */
} st;

/* How the API shapes the objects (storage_set_shape); the longest name it can address. */
static struct storage_shape shaper;
static size_t name_max = 255;

/* The largest record size the ZFS module allows (its zfs_max_recordsize, read at start;
 * OpenZFS 2.1's default until then): the appliance's maxblocksize. */
static uint64_t max_blocksize = 1048576;

/* ---- parsing: pure, on the helper thread (and in the fuzz harness) */

/* The fields of a tab-separated line, in place: up to max, their count. */
static size_t split_tabs(char *line, char **f, size_t max)
{
	size_t n = 0;
	while (n < max) {
		f[n++] = line;
		char *tab = strchr(line, '\t');
		if (!tab)
			break;
		*tab = '\0';
		line = tab + 1;
	}
	return n;
}

static uint64_t u64_of(const char *s)
{
	if (!s || !*s || *s == '-')
		return 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	return end == s ? 0 : (uint64_t)v;
}

/* A ratio ("1.52", "1.52x") as the appliance's percent: 152. */
static json_int_t percent_of(const char *s)
{
	double v = s ? strtod(s, NULL) : 0;
	return isfinite(v) && v > 0 ? (json_int_t)llround(v * 100) : 100;
}

/* A number as JSON: an integer when it is one (Go clients decode ratios into ints). */
static json_t *num_json(double v)
{
	if (isfinite(v) && v == floor(v) && fabs(v) < 9e15)
		return json_integer((json_int_t)v);
	return json_real(isfinite(v) ? v : 0);
}

/* "on"/"off" and the like as a boolean. */
static bool on_of(const char *s)
{
	return s && (strcmp(s, "on") == 0 || strcmp(s, "yes") == 0 || strcmp(s, "true") == 0 ||
	             strncmp(s, "sha", 3) == 0 || strcmp(s, "verify") == 0);
}

/* The appliance's time, "20170116T19:11:01" (UTC), of epoch seconds in text. */
static json_t *time_json(const char *epoch)
{
	char buf[32];
	struct tm tm;
	time_t t = (time_t)u64_of(epoch);
	if (!t || !gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y%m%dT%H:%M:%S", &tm))
		return json_string("");
	return json_string(buf);
}

/* The key of an object or an answer: what ("pools", "pool", ...) and the names that place
 * it (those not NULL), each ended by a NUL (no name holds one): what and the number of
 * names say which list or object it is. Its length, or 0 when it does not fit. */
static size_t doc_key(char *k, const char *what, const char *pool, const char *project,
                      const char *name)
{
	const char *part[] = {what, pool, project, name};
	size_t n = 0;
	for (size_t i = 0; i < nitems(part); i++) {
		if (!part[i])
			continue;
		size_t len = strlen(part[i]);
		if (n + len + 1 > KEY_MAX)
			return 0;
		memcpy(k + n, part[i], len + 1);
		n += len + 1;
	}
	return n;
}

static json_t *keyed(const struct storage_snapshot *s, const char *what, const char *pool,
                     const char *project, const char *name)
{
	char k[KEY_MAX];
	size_t n = doc_key(k, what, pool, project, name);
	return n ? hmap_get(&s->keys, k, n) : NULL;
}

/* Leaves a name out of the snapshot, saying why (the refresh logs it once). */
static void refuse(struct storage_snapshot *s, const char *name, const char *why)
{
	if (!json_object_get(s->refused, name))
		json_object_set_new(s->refused, name, json_string(why));
}

/* Is the key of an object taken (then full, its name, is refused: printed twice)? */
static bool taken(struct storage_snapshot *s, const char *full, const char *what, const char *pool,
                  const char *project, const char *name)
{
	if (!keyed(s, what, pool, project, name))
		return false;
	refuse(s, full, "printed twice");
	return true;
}

/* o (borrowed: the snapshot's arrays hold it) under its key. */
static json_t *key_put(struct storage_snapshot *s, json_t *o, const char *what, const char *pool,
                       const char *project, const char *name)
{
	char k[KEY_MAX];
	size_t n = doc_key(k, what, pool, project, name);
	if (n)
		hmap_put(&s->keys, k, n, o);
	return o;
}

/* A character ZFS allows in a name (OpenZFS's zfs_namecheck.c, valid_char). */
static bool zfs_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == ':' || c == ' ';
}

/* Why ZFS would not have a pool so named (pool_namecheck, and the names `zpool create` and
 * `zpool import` keep for vdevs), or NULL. */
static const char *pool_name_fault(const char *name)
{
	static const char *const reserved[] = {"mirror", "raidz", "draid", "spare"};
	size_t len = strlen(name);
	if (!len || len >= 256 - 2 - 2 * strlen("$ORIGIN"))
		return "not a pool name ZFS allows (empty or too long)";
	for (const char *p = name; *p; p++)
		if (!zfs_char(*p))
			return "not a pool name ZFS allows (a character it refuses)";
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
		return "not a pool name ZFS allows (it begins with a letter)";
	for (size_t i = 0; i < nitems(reserved); i++)
		if (strncmp(name, reserved[i], strlen(reserved[i])) == 0)
			return "a name ZFS keeps for vdevs";
	if (strcmp(name, "log") == 0)
		return "a name ZFS keeps for vdevs";
	if (len > name_max)
		return "longer than a path segment of the API";
	return NULL;
}

/* Why ZFS would not have a filesystem or volume so named (entity_namecheck: components of
 * its characters and '%', which its temporary clones use; none empty, "." or ".."), or
 * NULL. */
static const char *dataset_name_fault(const char *name)
{
	if (strlen(name) >= 256)
		return "not a dataset name ZFS allows (too long)";
	for (const char *c = name;; c++) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return "not a dataset name ZFS allows (an empty, '.' or '..' component)";
		for (size_t i = 0; i < n; i++)
			if (!zfs_char(c[i]) && c[i] != '%')
				return "not a dataset name ZFS allows (a character it refuses)";
		c += n;
		if (!*c)
			return NULL;
	}
}

/* ---- zpool list -Hp -o name,size,allocated,free,health,dedupratio,guid */

static void parse_list(struct storage_snapshot *s, char *text)
{
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[7];
		if (split_tabs(line, f, 7) < 7 || !*f[0])
			continue;
		const char *why = pool_name_fault(f[0]);
		if (why) {
			refuse(s, f[0], why);
			continue;
		}
		if (taken(s, f[0], "pool", f[0], NULL, NULL))
			continue;
		char health[32];
		snprintf(health, sizeof(health), "%s", f[4]);
		for (char *p = health; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		json_t *usage = json_pack("{s:I, s:I, s:I, s:I}", "total", (json_int_t)u64_of(f[1]),
		                          "used", (json_int_t)u64_of(f[2]), "free",
		                          (json_int_t)u64_of(f[3]), "dedupratio", percent_of(f[5]));
		/* status is what clients read, state the guide's name for it: the same value */
		json_t *pool =
		    json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:s}", "name", f[0], "status",
		              health, "state", health, "health", f[4], "profile", "", "peer",
		              "00000000-0000-0000-0000-000000000000", "usage", usage, "guid", f[6]);
		json_array_append_new(s->pools, key_put(s, pool, "pool", f[0], NULL, NULL));
	}
}

static json_t *pool_named(const struct storage_snapshot *s, const char *name)
{
	return keyed(s, "pool", name, NULL, NULL);
}

/* ---- zpool status: each pool's layout (its profile) and the devices not ONLINE */

static bool device_ok(const char *state)
{
	return strcmp(state, "ONLINE") == 0 || strcmp(state, "AVAIL") == 0 ||
	       strcmp(state, "INUSE") == 0;
}

/* The appliance's profile of a pool's first data vdev: stripe, mirror, mirror3, raidz1 */
static void profile_of(json_t *vdevs, char *buf, size_t len)
{
	size_t i;
	json_t *v;
	snprintf(buf, len, "stripe");
	json_array_foreach(vdevs, i, v)
	{
		if (json_object_get(v, "class"))
			continue;
		const char *type = json_string_value(json_object_get(v, "type"));
		size_t width = json_array_size(json_object_get(v, "devices"));
		if (!type || strcmp(type, "disk") == 0)
			return;
		if (strcmp(type, "mirror") == 0 && width > 2)
			snprintf(buf, len, "mirror%zu", width);
		else
			snprintf(buf, len, "%s", strcmp(type, "raidz") == 0 ? "raidz1" : type);
		return;
	}
}

/* One pool's part of `zpool status` (from its "pool:" line to the next). */
static void pool_status(struct storage_snapshot *s, const char *name, const char *part)
{
	json_t *pool = pool_named(s, name), *vdevs = zpool_parse_vdevs(part);
	if (!pool || !vdevs) {
		json_decref(vdevs);
		return;
	}
	char prof[64];
	profile_of(vdevs, prof, sizeof(prof));
	json_object_set_new(pool, "profile", json_string(prof));
	struct buf bad = {0};
	size_t i, k;
	json_t *v, *d;
	json_array_foreach(vdevs, i, v)
	{
		json_array_foreach(json_object_get(v, "devices"), k, d)
		{
			const char *state = json_string_value(json_object_get(d, "state"));
			const char *note = json_string_value(json_object_get(d, "note"));
			if (!state || device_ok(state))
				continue;
			buf_printf(&bad, "%s%s %s%s%s", bad.len ? ", " : "",
			           json_string_value(json_object_get(d, "name")), state,
			           note && *note ? ": " : "", note ? note : "");
		}
	}
	if (bad.len)
		json_object_set_new(s->faults, name, json_pack("{s:s}", "vdevs", bad.p));
	buf_free(&bad);
	json_decref(vdevs);
}

/* The start of the line after the one at l (the text's end after the last). */
static const char *line_after(const char *l)
{
	l += strcspn(l, "\n");
	return *l ? l + 1 : l;
}

static bool pool_line(const char *l)
{
	return strncmp(l + strspn(l, " "), "pool: ", 6) == 0;
}

static void parse_status(struct storage_snapshot *s, const char *text)
{
	const char *l = text;
	while (*l) {
		if (!pool_line(l)) {
			l = line_after(l);
			continue;
		}
		/* this pool's part runs to the next "pool:" line */
		const char *end = line_after(l);
		while (*end && !pool_line(end))
			end = line_after(end);
		const char *p = l + strspn(l, " ") + 6;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, "\n"), p);
		utf8_clean(name, UTF8_DROP_CUT);
		char *part = xstrndup(l, (size_t)(end - l));
		pool_status(s, name, part);
		free(part);
		l = end;
	}
}

/* ---- zfs get -Hp -o name,property,value,source */

struct ds {
	char *name;
	json_t *v, *src; /* property -> value, property -> source (strings) */
};

static const char *pv(const struct ds *d, const char *prop)
{
	const char *v = json_string_value(json_object_get(d->v, prop));
	return v ? v : "";
}

/* The appliance's source of a property: "local" when set on this dataset. */
static const char *source_of(const struct ds *d, const char *prop)
{
	const char *s = json_string_value(json_object_get(d->src, prop));
	return s && (strcmp(s, "local") == 0 || strcmp(s, "received") == 0) ? "local" : "inherited";
}

/* What projects, filesystems and LUNs share: space, data services, identity. */
static json_t *share_json(const struct ds *d, const char *pool, const char *project,
                          const char *name)
{
	bool refq = u64_of(pv(d, "refquota")) > 0, refr = u64_of(pv(d, "refreservation")) > 0;
	const char *keystatus = pv(d, "keystatus");
	json_t *o = json_pack(
	    "{s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:I, "
	    "s:b, s:s, s:s, s:b, s:s, s:s}",
	    "name", name, "pool", pool, "project", project, "canonical_name", d->name, "id",
	    pv(d, "guid"), "creation", time_json(pv(d, "creation")), "space_data",
	    (json_int_t)u64_of(pv(d, "usedbydataset")), "space_snapshots",
	    (json_int_t)u64_of(pv(d, "usedbysnapshots")), "space_available",
	    (json_int_t)u64_of(pv(d, "available")), "space_total",
	    (json_int_t)u64_of(pv(d, "used")), "space_unused_res",
	    (json_int_t)u64_of(pv(d, "usedbyrefreservation")), "quota",
	    (json_int_t)u64_of(pv(d, refq ? "refquota" : "quota")), "reservation",
	    (json_int_t)u64_of(pv(d, refr ? "refreservation" : "reservation")), "compression",
	    pv(d, "compression"), "compressratio", percent_of(pv(d, "compressratio")), "checksum",
	    pv(d, "checksum"), "copies", (json_int_t)u64_of(pv(d, "copies")), "dedup",
	    on_of(pv(d, "dedup")), "logbias", pv(d, "logbias"), "secondarycache",
	    pv(d, "secondarycache"), "readonly", on_of(pv(d, "readonly")), "encryption",
	    pv(d, "encryption"), "keystatus", *keystatus && *keystatus != '-' ? keystatus : "none");
	json_t *src = json_pack(
	    "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "compression", source_of(d, "compression"),
	    "checksum", source_of(d, "checksum"), "copies", source_of(d, "copies"), "dedup",
	    source_of(d, "dedup"), "logbias", source_of(d, "logbias"), "secondarycache",
	    source_of(d, "secondarycache"), "readonly", source_of(d, "readonly"), "reservation",
	    source_of(d, refr ? "refreservation" : "reservation"));
	/* the appliance's that ZFS on Linux has no property for: what they mean here */
	json_t *add = json_pack("{s:s, s:s, s:b, s:I}", "snaplabel", "", "keychangedate", "",
	                        "nodestroy", false, "maxblocksize", (json_int_t)max_blocksize);
	json_object_update(o, add);
	json_decref(add);
	static const char *const fixed[] = {"keychangedate", "maxblocksize"};
	for (size_t i = 0; i < nitems(fixed); i++)
		json_object_set_new(src, fixed[i], json_string("inherited"));
	json_object_set_new(o, "source", src);
	return o;
}

/* What a filesystem (and a project, which is one) adds. */
static void fs_props(json_t *o, const struct ds *d)
{
	bool refq = u64_of(pv(d, "refquota")) > 0, refr = u64_of(pv(d, "refreservation")) > 0;
	json_t *add = json_pack(
	    "{s:s, s:I, s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:b}", "mountpoint",
	    pv(d, "mountpoint"), "recordsize", (json_int_t)u64_of(pv(d, "recordsize")), "atime",
	    on_of(pv(d, "atime")), "sharenfs", pv(d, "sharenfs"), "sharesmb", pv(d, "sharesmb"),
	    "snapdir", pv(d, "snapdir"), "aclinherit", pv(d, "aclinherit"), "casesensitivity",
	    pv(d, "casesensitivity"), "normalization", pv(d, "normalization"), "utf8only",
	    on_of(pv(d, "utf8only")), "nbmand", on_of(pv(d, "nbmand")), "vscan",
	    on_of(pv(d, "vscan")), "quota_snap", !refq, "reservation_snap", !refr);
	json_object_update(o, add);
	json_decref(add);
	/* ZFS shares over NFS and SMB alone; Linux lets only root give a file away */
	bool nfs = *pv(d, "sharenfs") && strcmp(pv(d, "sharenfs"), "off") != 0;
	bool smb = *pv(d, "sharesmb") && strcmp(pv(d, "sharesmb"), "off") != 0;
	add = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b}", "sharedav", "off", "shareftp", "off",
	                "sharetftp", "off", "sharesftp", "off", "shadow", "none", "exported",
	                nfs || smb, "rstchown", true);
	json_object_update(o, add);
	json_decref(add);
	json_t *src = json_object_get(o, "source");
	static const char *const props[] = {"mountpoint", "recordsize", "atime",
	                                    "sharenfs",   "sharesmb",   "snapdir",
	                                    "aclinherit", "nbmand",     "vscan"};
	for (size_t i = 0; i < nitems(props); i++)
		json_object_set_new(src, props[i], json_string(source_of(d, props[i])));
	static const char *const fixed[] = {"sharedav",  "shareftp", "sharetftp",
	                                    "sharesftp", "exported", "rstchown"};
	for (size_t i = 0; i < nitems(fixed); i++)
		json_object_set_new(src, fixed[i], json_string("inherited"));
}

/* A project: a filesystem, standing for the shares below it (no project of its own). */
static json_t *project_json(const struct ds *d, const char *pool, const char *name)
{
	json_t *o = share_json(d, pool, name, name);
	json_object_del(o, "project");
	fs_props(o, d);
	return o;
}

static json_t *lun_json(const struct ds *d, const char *pool, const char *project, const char *name)
{
	json_t *o = share_json(d, pool, project, name);
	uint64_t volsize = u64_of(pv(d, "volsize"));
	json_t *add = json_pack(
	    "{s:I, s:I, s:b, s:s, s:s, s:s, s:b, s:[], s:s, s:b}", "volsize", (json_int_t)volsize,
	    "volblocksize", (json_int_t)u64_of(pv(d, "volblocksize")), "sparse",
	    u64_of(pv(d, "refreservation")) == 0, "status", "online", "lunguid", "", "lunumber",
	    "auto", "fixednumber", false, "initiatorgroup", "targetgroup", "", "writecache",
	    strcmp(pv(d, "sync"), "disabled") == 0);
	json_object_update(o, add);
	json_decref(add);
	return o;
}

/* A finished dataset: a project, a filesystem or a LUN, by where it sits. Its name is one
 * ZFS allows, in a pool zpool lists, under a project (or the root) printed before it (as
 * zfs prints parents first), and each part short enough to be a path segment; else it is
 * refused. */
static void place(struct storage_snapshot *s, struct ds *d, json_t *roots)
{
	const char *why = dataset_name_fault(d->name);
	const char *slash = strchr(d->name, '/');
	bool volume = strcmp(pv(d, "type"), "volume") == 0;
	char pool[256], project[256];
	snprintf(pool, sizeof(pool), "%.*s", (int)strcspn(d->name, "/"), d->name);
	if (!why && !pool_named(s, pool))
		why = "of no pool zpool lists";
	if (why) {
		refuse(s, d->name, why);
		return;
	}
	if (!slash) { /* a pool's root dataset: its figures feed the pool's usage */
		if (json_object_get(roots, d->name))
			refuse(s, d->name, "printed twice");
		else
			json_object_set_new(roots, d->name,
			                    json_pack("{s:O, s:O}", "v", d->v, "src", d->src));
		return;
	}
	const char *rest = slash + 1, *below = strchr(rest, '/');
	snprintf(project, sizeof(project), "%.*s", (int)strcspn(rest, "/"), rest);
	const char *name = below ? below + 1 : rest;
	if (strlen(project) > name_max || strlen(name) > name_max) {
		refuse(s, d->name, "longer than a path segment of the API");
		return;
	}
	if (!below && volume) { /* a LUN of the project the root dataset stands for */
		if (!json_object_get(roots, pool))
			refuse(s, d->name, "of no root dataset zfs lists");
		else if (!taken(s, d->name, "lun", pool, STORAGE_DEFAULT_PROJECT, rest))
			json_array_append_new(
			    s->luns, key_put(s, lun_json(d, pool, STORAGE_DEFAULT_PROJECT, rest),
			                     "lun", pool, STORAGE_DEFAULT_PROJECT, rest));
		return;
	}
	if (!below) {
		if (!taken(s, d->name, "project", pool, rest, NULL))
			json_array_append_new(s->projects, key_put(s, project_json(d, pool, rest),
			                                           "project", pool, rest, NULL));
		return;
	}
	if (!keyed(s, "project", pool, project, NULL)) {
		refuse(s, d->name, "of no project zfs lists");
		return;
	}
	const char *what = volume ? "lun" : "filesystem";
	if (taken(s, d->name, what, pool, project, name))
		return;
	json_t *o;
	if (volume) {
		o = lun_json(d, pool, project, name);
	} else {
		o = share_json(d, pool, project, name);
		fs_props(o, d);
	}
	json_array_append_new(volume ? s->luns : s->filesystems,
	                      key_put(s, o, what, pool, project, name));
}

static void ds_clear(struct ds *d)
{
	free(d->name);
	json_decref(d->v);
	json_decref(d->src);
	memset(d, 0, sizeof(*d));
}

/* Sums over every dataset of a pool: what its usage needs beyond the root's figures. */
static void pool_sums(json_t *sums, const struct ds *d)
{
	char pool[256];
	snprintf(pool, sizeof(pool), "%.*s", (int)strcspn(d->name, "/"), d->name);
	json_t *p = json_object_get(sums, pool);
	if (!p) {
		p = json_pack("{s:I, s:I}", "snapshots", (json_int_t)0, "reservation",
		              (json_int_t)0);
		json_object_set_new(sums, pool, p);
	}
	json_object_set_new(p, "snapshots",
	                    json_integer(json_integer_value(json_object_get(p, "snapshots")) +
	                                 (json_int_t)u64_of(pv(d, "usedbysnapshots"))));
	json_object_set_new(p, "reservation",
	                    json_integer(json_integer_value(json_object_get(p, "reservation")) +
	                                 (json_int_t)u64_of(pv(d, "usedbyrefreservation"))));
}

static void parse_get(struct storage_snapshot *s, char *text, json_t *roots, json_t *sums)
{
	struct ds d = {0};
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = {0};
		size_t n = line ? split_tabs(line, f, 4) : 0;
		if (line && n < 4)
			continue;
		if (d.name && (!line || strcmp(f[0], d.name) != 0)) {
			pool_sums(sums, &d);
			if (strcmp(pv(&d, "type"), "filesystem") == 0 ||
			    strcmp(pv(&d, "type"), "volume") == 0)
				place(s, &d, roots);
			ds_clear(&d);
		}
		if (!line)
			break;
		if (!d.name) {
			d.name = xstrdup(f[0]);
			d.v = json_object();
			d.src = json_object();
		}
		json_object_set_new(d.v, f[1], json_string(f[2]));
		json_object_set_new(d.src, f[1], json_string(f[3]));
	}
}

/* The pools' usage from their root datasets and the sums over their datasets. */
static void pool_usage(struct storage_snapshot *s, json_t *roots, json_t *sums)
{
	size_t i;
	json_t *p;
	json_array_foreach(s->pools, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		json_t *u = json_object_get(p, "usage");
		json_t *root = json_object_get(json_object_get(roots, name), "v");
		json_t *sum = json_object_get(sums, name);
		json_int_t free_b = json_integer_value(json_object_get(u, "free"));
		const char *avail = json_string_value(json_object_get(root, "available"));
		const char *used = json_string_value(json_object_get(root, "used"));
		json_int_t snaps = json_integer_value(json_object_get(sum, "snapshots"));
		json_int_t res = json_integer_value(json_object_get(sum, "reservation"));
		json_int_t total = root ? (json_int_t)u64_of(used) : 0;
		json_int_t data = total - snaps - res;
		json_object_set_new(u, "available",
		                    json_integer(root ? (json_int_t)u64_of(avail) : free_b));
		json_object_set_new(u, "usage_total", json_integer(total));
		json_object_set_new(u, "usage_data", json_integer(data > 0 ? data : 0));
		json_object_set_new(u, "usage_snapshots", json_integer(snaps));
		json_object_set_new(u, "usage_reservation", json_integer(res));
		const char *cr = json_string_value(json_object_get(root, "compressratio"));
		double ratio = cr ? strtod(cr, NULL) : 1;
		json_object_set_new(u, "compression", num_json(ratio > 0 ? ratio : 1));
	}
}

static void snapshot_pools(struct storage_snapshot *s)
{
	s->npools = json_array_size(s->pools);
	s->pool = xcalloc(s->npools ? s->npools : 1, sizeof(*s->pool));
	for (size_t i = 0; i < s->npools; i++) {
		json_t *p = json_array_get(s->pools, i), *u = json_object_get(p, "usage");
		s->pool[i] = (struct storage_pool){
		    json_string_value(json_object_get(p, "name")),
		    json_string_value(json_object_get(p, "health")),
		    (uint64_t)json_integer_value(json_object_get(u, "total")),
		    (uint64_t)json_integer_value(json_object_get(u, "used")),
		    (uint64_t)json_integer_value(json_object_get(u, "free")),
		    (uint64_t)json_integer_value(json_object_get(u, "available"))};
	}
}

/* A volume directly under a root dataset is in "default": the root dataset stands for
 * that project, unless a filesystem of the name is one. */
static void default_projects(struct storage_snapshot *s, json_t *roots)
{
	size_t i;
	json_t *l;
	json_array_foreach(s->luns, i, l)
	{
		const char *pool = json_string_value(json_object_get(l, "pool"));
		if (strcmp(json_string_value(json_object_get(l, "project")),
		           STORAGE_DEFAULT_PROJECT))
			continue;
		json_t *root = json_object_get(roots, pool);
		if (!root || keyed(s, "project", pool, STORAGE_DEFAULT_PROJECT, NULL))
			continue;
		struct ds d = {(char *)pool, json_object_get(root, "v"),
		               json_object_get(root, "src")};
		json_array_append_new(s->projects,
		                      key_put(s, project_json(&d, pool, STORAGE_DEFAULT_PROJECT),
		                              "project", pool, STORAGE_DEFAULT_PROJECT, NULL));
	}
}

struct storage_snapshot *storage_parse(const char *zpool_list, const char *zpool_status,
                                       const char *zfs_get)
{
	struct storage_snapshot *s = xcalloc(1, sizeof(*s));
	s->pools = json_array();
	s->projects = json_array();
	s->filesystems = json_array();
	s->luns = json_array();
	s->faults = json_object();
	s->refused = json_object();
	char *text;
	/* another program's text: bytes that are no UTF-8 become '?' (JSON holds no other) */
	if (zpool_list) {
		utf8_clean(text = xstrdup(zpool_list), 0);
		parse_list(s, text);
		free(text);
	}
	if (zpool_status)
		parse_status(s, zpool_status);
	json_t *roots = json_object(), *sums = json_object();
	if (zfs_get && json_array_size(s->pools)) {
		utf8_clean(text = xstrdup(zfs_get), 0);
		parse_get(s, text, roots, sums);
		free(text);
	}
	pool_usage(s, roots, sums);
	default_projects(s, roots);
	json_decref(roots);
	json_decref(sums);
	snapshot_pools(s);
	return s;
}
void storage_snapshot_free(struct storage_snapshot *s)
{
	if (!s)
		return;
	json_decref(s->pools);
	json_decref(s->projects);
	json_decref(s->filesystems);
	json_decref(s->luns);
	json_decref(s->faults);
	json_decref(s->refused);
	hmap_clear(&s->keys, NULL);
	hmap_clear(&s->docs, sdoc_free);
	free(s->pool);
	free(s);
}

const struct storage_pool *storage_snapshot_pools(const struct storage_snapshot *s, size_t *n)
{
	*n = s ? s->npools : 0;
	return s ? s->pool : NULL;
}

static json_t *snapshot_array(const struct storage_snapshot *s, const char *kind)
{
	if (!s)
		return NULL;
	if (strcmp(kind, "pools") == 0)
		return s->pools;
	if (strcmp(kind, "projects") == 0)
		return s->projects;
	if (strcmp(kind, "filesystems") == 0)
		return s->filesystems;
	if (strcmp(kind, "luns") == 0)
		return s->luns;
	return NULL;
}

json_t *storage_snapshot_list(const struct storage_snapshot *s, const char *kind)
{
	json_t *a = snapshot_array(s, kind);
	return a ? json_deep_copy(a) : NULL;
}

/* ---- the answers: every list and object as bytes, built once per snapshot on the thread */

#define SDOC_GZIP_MIN   1024 /* as http_reply.c: a shorter answer gains nothing from gzip */
#define SDOC_GZIP_LEVEL 1    /* zlib's fastest, as http_reply.c */

static void sdoc_free(void *p)
{
	struct sdoc *d = p;
	if (!d)
		return;
	free(d->body);
	free(d->gz);
	free(d);
}

/* A quoted tag of bytes: their CRC-32, Adler-32 and length, as http_reply.c tags a JSON
 * answer, so an answer that did not change keeps its tag from one snapshot to the next. */
static void sdoc_tag(const char *body, size_t len, const char *suffix, char *tag, size_t size)
{
	uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)body, (uInt)len);
	uLong adler = adler32(adler32(0L, Z_NULL, 0), (const Bytef *)body, (uInt)len);
	snprintf(tag, size, "\"%08lx%08lx-%zx%s\"", crc & 0xffffffffUL, adler & 0xffffffffUL, len,
	         suffix);
}

/* {key: value} (value borrowed) as an answer's bytes, under the doc_key k. */
static void sdoc_put(struct storage_snapshot *s, const char *k, size_t klen, const char *key,
                     json_t *value)
{
	json_t *wrap = json_pack("{s:O}", key, value);
	char *text = json_dumps(wrap, JSON_COMPACT);
	json_decref(wrap);
	if (!text || hmap_get(&s->docs, k, klen)) {
		free(text);
		return;
	}
	struct sdoc *d = xcalloc(1, sizeof(*d));
	size_t len = strlen(text) + 1; /* and a newline, as reply_json() ends an answer */
	d->body = xrealloc(text, len + 1);
	memcpy(d->body + len - 1, "\n", 2);
	d->d = (struct storage_doc){.body = d->body, .len = len, .etag = d->etag};
	sdoc_tag(d->body, len, "", d->etag, sizeof(d->etag));
	if (len >= SDOC_GZIP_MIN)
		d->gz = gzip_bytes(d->body, len, SDOC_GZIP_LEVEL, &d->d.gz_len);
	if (d->gz) {
		sdoc_tag(d->body, len, "-gz", d->etag_gz, sizeof(d->etag_gz));
		d->d.gz = d->gz;
		d->d.etag_gz = d->etag_gz;
	}
	hmap_put(&s->docs, k, klen, d);
}

/* A list being gathered: its doc_key, and the objects so far. */
struct list {
	const char *kind;
	json_t *arr;
	size_t klen;
	char k[];
};

static void list_open(struct hmap *lists, const char *kind, const char *pool, const char *project)
{
	char k[KEY_MAX];
	size_t n = doc_key(k, kind, pool, project, NULL);
	if (!n || hmap_get(lists, k, n))
		return;
	struct list *l = xmalloc(sizeof(*l) + n);
	*l = (struct list){kind, json_array(), n};
	memcpy(l->k, k, n);
	hmap_put(lists, k, n, l);
}

static void list_add(struct hmap *lists, json_t *o, const char *kind, const char *pool,
                     const char *project)
{
	char k[KEY_MAX];
	size_t n = doc_key(k, kind, pool, project, NULL);
	struct list *l = n ? hmap_get(lists, k, n) : NULL;
	if (l)
		json_array_append(l->arr, o);
}

static bool list_done(void *val, void *arg)
{
	struct list *l = val;
	sdoc_put(arg, l->k, l->klen, l->kind, l->arr);
	json_decref(l->arr);
	free(l);
	return true;
}

static const char *member(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Every answer of a snapshot: the four lists, each pool's projects, each project's
 * filesystems and LUNs (empty ones too), each object alone; each object shaped by the API
 * first. The objects' JSON then goes (their bytes are all that is served), but the
 * pools'. */
static void snapshot_answers(struct storage_snapshot *s, const json_t *ctx)
{
	static const char *const kinds[] = {"pools", "projects", "filesystems", "luns"};
	static const char *const one[] = {"pool", "project", "filesystem", "lun"};
	struct hmap lists = {0};
	size_t i;
	json_t *o;
	for (size_t k = 0; k < nitems(kinds); k++) {
		list_open(&lists, kinds[k], NULL, NULL);
		json_array_foreach(snapshot_array(s, kinds[k]), i, o)
		{
			if (shaper.shape)
				shaper.shape(o, kinds[k], ctx);
		}
	}
	json_array_foreach(s->pools, i, o)
	{
		list_open(&lists, "projects", member(o, "name"), NULL);
	}
	json_array_foreach(s->projects, i, o)
	{
		list_open(&lists, "filesystems", member(o, "pool"), member(o, "name"));
		list_open(&lists, "luns", member(o, "pool"), member(o, "name"));
	}
	for (size_t k = 0; k < nitems(kinds); k++) {
		json_array_foreach(snapshot_array(s, kinds[k]), i, o)
		{
			const char *pool = k ? member(o, "pool") : NULL, *name = member(o, "name");
			const char *project = k > 1 ? member(o, "project") : NULL;
			list_add(&lists, o, kinds[k], NULL, NULL);
			if (k == 1)
				list_add(&lists, o, kinds[k], pool, NULL);
			else if (k > 1)
				list_add(&lists, o, kinds[k], pool, project);
			char key[KEY_MAX];
			size_t n = doc_key(key, one[k], pool, project, name);
			if (n)
				sdoc_put(s, key, n, one[k], o);
		}
	}
	hmap_filter(&lists, list_done, s);
	hmap_clear(&lists, NULL);
	hmap_clear(&s->keys, NULL); /* it borrows the objects that go now */
	json_array_clear(s->projects);
	json_array_clear(s->filesystems);
	json_array_clear(s->luns);
}

/* ---- queries of the newest snapshot */

const struct storage_pool *storage_pools(size_t *n)
{
	return storage_snapshot_pools(st.latest, n);
}

void storage_set_shape(const struct storage_shape *s)
{
	shaper = *s;
	if (s->name_max)
		name_max = s->name_max;
}

const struct storage_doc *storage_answer(const char *what, const char *pool, const char *project,
                                         const char *name)
{
	char k[KEY_MAX];
	size_t n = st.latest ? doc_key(k, what, pool, project, name) : 0;
	const struct sdoc *d = n ? hmap_get(&st.latest->docs, k, n) : NULL;
	return d ? &d->d : NULL;
}

/* ---- the refresh: three commands on the loop, the parse on the helper thread */

static void run_step(void);

static void raise_problems(const struct storage_snapshot *s)
{
	static const struct problem_text degraded = {
	    "SP-POOL-DEGRADED", "Fault",
	    "The pool runs without some of its redundancy: another failure may lose data.",
	    "Replace or reconnect the device named, then let the pool resilver (zpool status)."};
	static const struct problem_text faulted = {
	    "SP-POOL-FAULTED", "Fault", "The pool's data cannot be read or written.",
	    "Bring back the devices named (zpool status), or restore the pool from a backup."};
	const char **keep = xcalloc(s->npools ? s->npools : 1, sizeof(*keep));
	char **keys = xcalloc(s->npools ? s->npools : 1, sizeof(*keys));
	size_t nkeep = 0;
	for (size_t i = 0; i < s->npools; i++) {
		const struct storage_pool *p = &s->pool[i];
		if (strcmp(p->health, "ONLINE") == 0)
			continue;
		keys[nkeep] = xasprintf("pool/%s", p->name);
		keep[nkeep] = keys[nkeep];
		const char *vdevs = json_string_value(
		    json_object_get(json_object_get(s->faults, p->name), "vdevs"));
		char *href = xasprintf("/api/storage/v1/pools/%s", p->name);
		struct problem_component comp = {NULL, vdevs ? vdevs : p->name, href};
		bool major = strcmp(p->health, "DEGRADED") == 0;
		problems_raise(keys[nkeep], major ? PROBLEM_MAJOR : PROBLEM_CRITICAL,
		               major ? &degraded : &faulted, &comp, "ZFS pool %s is %s%s%s",
		               p->name, p->health, vdevs ? ": " : "", vdevs ? vdevs : "");
		free(href);
		nkeep++;
	}
	problems_clear_others("pool/", keep, nkeep);
	for (size_t i = 0; i < nkeep; i++)
		free(keys[i]);
	free(keys);
	free(keep);
}

struct parse_job {
	char *out[STEP_N];
	json_t *ctx;                   /* what the API's shape reads, taken on the loop */
	struct storage_snapshot *snap; /* NULL: the same as the last one */
	char *news;                    /* the names refused that were not last time, for the log */
};

/* What the thread keeps from one refresh to the next (it alone touches it): the outputs
 * and the context of the last snapshot built, and the names it refused. */
static struct {
	bool have;
	char *out[STEP_N];
	char *ctx;
	json_t *refused;
} last;

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The names refused now that were not the last time, as a line for the log, or NULL: a
 * name is told once, not at every refresh. */
static char *refusals_news(struct storage_snapshot *s)
{
	struct buf b = {0};
	size_t n = 0;
	const char *name;
	json_t *why;
	json_object_foreach(s->refused, name, why)
	{
		if (json_object_get(last.refused, name) || n++ >= 5)
			continue;
		char shown[129]; /* another program's text: no control characters in the log */
		snprintf(shown, sizeof(shown), "%s", name);
		for (char *p = shown; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		buf_printf(&b, "%s'%s' (%s)", n > 1 ? ", " : "", shown, json_string_value(why));
	}
	json_decref(last.refused);
	last.refused = s->refused; /* the thread's from now */
	s->refused = NULL;
	char *line = n ? xasprintf("storage: leaving out %zu name%s: %s%s", n, n > 1 ? "s" : "",
	                           b.p, n > 5 ? ", ..." : "")
	               : NULL;
	buf_free(&b);
	return line;
}

/* The parse and every answer of the snapshot, unless the commands said just what they
 * said the last time. */
static void parse_work(void *arg)
{
	struct parse_job *j = arg;
	char *ctx = j->ctx ? json_dumps(j->ctx, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	bool same = last.have && same_text(ctx, last.ctx);
	for (int i = 0; same && i < STEP_N; i++)
		same = same_text(j->out[i], last.out[i]);
	if (same) {
		free(ctx);
		return;
	}
	j->snap = storage_parse(j->out[STEP_LIST], j->out[STEP_STATUS], j->out[STEP_GET]);
	snapshot_answers(j->snap, j->ctx);
	j->news = refusals_news(j->snap);
	for (int i = 0; i < STEP_N; i++) {
		free(last.out[i]);
		last.out[i] = j->out[i];
		j->out[i] = NULL;
	}
	free(last.ctx);
	last.ctx = ctx;
	last.have = true;
}

static void snapshot_free_work(void *arg)
{
	storage_snapshot_free(arg);
}

static void parse_done(void *arg)
{
	struct loopwork w;
	loopwork_begin(&w);
	struct parse_job *j = arg;
	for (int i = 0; i < STEP_N; i++)
		free(j->out[i]);
	json_decref(j->ctx);
	if (j->news)
		log_warn("%s", j->news);
	free(j->news);
	if (j->snap) {
		struct storage_snapshot *old = st.latest;
		st.latest = j->snap;
		/* thousands of objects to free: slow work too, for the thread */
		if (old && (st.stopping || !st.wq ||
		            workq_submit(st.wq, snapshot_free_work, NULL, old) < 0))
			storage_snapshot_free(old);
	}
	if (!st.stopping && st.latest)
		raise_problems(st.latest);
	free(j);
	st.in_flight = false;
	waitlist_run(&st.waiters);
	loopwork_end(&w);
}

static void refresh_end(void)
{
	struct parse_job *j = xcalloc(1, sizeof(*j));
	memcpy(j->out, st.out, sizeof(j->out));
	j->ctx = shaper.begin ? shaper.begin() : NULL;
	memset(st.out, 0, sizeof(st.out));
	if (!st.wq || workq_submit(st.wq, parse_work, parse_done, j) < 0) {
		parse_work(j);
		parse_done(j);
	}
}

static void step_exit(void *arg, const struct child_result *res)
{
	st.child = NULL;
	if (st.stopping) { /* killed by storage_shutdown: nothing more to do but answer */
		for (int i = 0; i < STEP_N; i++) {
			free(st.out[i]);
			st.out[i] = NULL;
		}
		st.in_flight = false;
		waitlist_run(&st.waiters);
		return;
	}
	if (res->exited && res->exit_code == 0) {
		st.out[st.step] = xstrndup(res->out ? res->out : "", res->out_len);
	} else {
		/* a box without ZFS has no zpool: that is no pool, not a fault worth a word */
		if (st.step != STEP_LIST || res->exited)
			log_warn("storage: %s %s%s", st.step == STEP_GET ? "zfs get" : "zpool",
			         res->timed_out ? "timed out" : "failed: ",
			         res->timed_out
			             ? ""
			             : (res->err && *res->err ? res->err : "(no message)"));
	}
	if (st.step == STEP_LIST && !st.out[STEP_LIST]) {
		refresh_end();
		return;
	}
	st.step++;
	run_step();
}

static void run_step(void)
{
	static char *const list[] = {
	    "zpool", "list", "-Hp", "-o", "name,size,allocated,free,health,dedupratio,guid", NULL};
	static char *const status[] = {"zpool", "status", NULL};
	static char *const get[] = {
	    "zfs",     "get", "-Hp", "-t", "filesystem,volume", "-o", "name,property,value,source",
	    ZFS_PROPS, NULL};
	if (st.step >= STEP_N || (st.step == STEP_GET && !st.out[STEP_LIST][0])) {
		refresh_end(); /* no pool: nothing to ask zfs */
		return;
	}
	char *const *argv = st.step == STEP_LIST ? list : st.step == STEP_STATUS ? status : get;
	char err[256];
	/* -p: numbers for machines, in bytes and seconds, whatever the locale */
	struct child_opts o = {.argv = argv,
	                       .timeout_ms = STORAGE_CMD_TIMEOUT_MS,
	                       .max_output = STORAGE_MAX_OUTPUT,
	                       .on_exit = step_exit};
	st.child = child_spawn(&o, err, sizeof(err));
	if (!st.child) {
		if (st.step != STEP_LIST)
			log_warn("storage: %s", err);
		refresh_end();
	}
}

static void refresh(evutil_socket_t fd, short what, void *arg)
{
	if (st.in_flight || st.stopping)
		return;
	st.in_flight = true;
	st.step = STEP_LIST;
	run_step();
}

void storage_when_ready(void (*cb)(void *arg), void *arg)
{
	if (st.latest || st.stopping) {
		cb(arg);
		return;
	}
	waitlist_add(&st.waiters, cb, arg);
}

int storage_init(struct event_base *base, const char *sys_root)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/sys/module/zfs/parameters/zfs_max_recordsize",
	         sys_root ? sys_root : "");
	char *text = util_read_file(path, NULL);
	if (text && strtoull(text, NULL, 10) > 0)
		max_blocksize = strtoull(text, NULL, 10);
	free(text);
	st.stopping = false;
	st.wq = workq_new(base, 1);
	if (!st.wq)
		return -1;
	workq_set_limit(st.wq, 0);
	st.timer = event_new(base, -1, EV_PERSIST, refresh, NULL);
	struct timeval tv = {STORAGE_PERIOD_S, 0};
	if (!st.timer || event_add(st.timer, &tv) < 0)
		return -1;
	refresh(-1, 0, NULL);
	return 0;
}

/* A command still running is killed; its exit (on the loop, or in child_shutdown) then
 * frees what the refresh holds and answers any waiter. */
void storage_shutdown(void)
{
	st.stopping = true;
	if (st.timer)
		event_free(st.timer);
	st.timer = NULL;
	if (st.child)
		child_kill(st.child, SIGTERM);
	if (st.wq)
		workq_free(st.wq); /* runs a parse's done callback still due */
	st.wq = NULL;
	storage_snapshot_free(st.latest);
	st.latest = NULL;
	for (int i = 0; i < STEP_N; i++) { /* the thread is gone: what it kept goes */
		free(last.out[i]);
		last.out[i] = NULL;
	}
	free(last.ctx);
	json_decref(last.refused);
	memset(&last, 0, sizeof(last));
	if (!st.child)
		waitlist_run(&st.waiters);
}
