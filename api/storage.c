/* SPDX-License-Identifier: ISC */
/* /api/storage/v1, read-only: the ZFS pools, projects, filesystems and LUNs of
 * server/inventory/storage.c, as the appliance's storage service shapes them. Each answer
 * is built once per snapshot on the storage thread (with the hrefs and owner added here,
 * storage_shape) and served as its bytes (a request before the first snapshot waits for
 * it); a write to any of these routes is the router's 405. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base/loopwork.h"
#include "base/util.h"
#include "inventory/storage.h"

#define S            "/api/storage/v1"
#define POOL_HREF    S "/pools/{name}"
#define PROJECT_HREF S "/pools/{pool}/projects/{name}"
#define FS_HREF      S "/pools/{pool}/projects/{project}/filesystems/{name}"
#define LUN_HREF     S "/pools/{pool}/projects/{project}/luns/{name}"

/* What a request asks, kept while it waits for the first snapshot: the collection, and
 * which path parameters name the pool, the project and the object (-1: none). */
struct ask {
	struct request *r;
	const char *kind; /* "pools", "projects", "filesystems", "luns" */
	int pool, project, name;
};

static const char *href_of(const char *kind)
{
	return strcmp(kind, "pools") == 0      ? POOL_HREF
	       : strcmp(kind, "projects") == 0 ? PROJECT_HREF
	       : strcmp(kind, "luns") == 0     ? LUN_HREF
	                                       : FS_HREF;
}

/* What the objects of a snapshot read, taken on the loop as its refresh begins. */
static json_t *shape_begin(void)
{
	return json_pack("{s:s, s:s}", "owner", system_nodename(), "asn", system_asn());
}

/* On the storage thread. A pool is owned by this node: its owner and asn are the version
 * answer's nodename and asn (the appliance's clients check a pool is theirs so). A name
 * may hold a '/' ("home/alice"): its href writes it so that it reads back to itself. */
static void shape(json_t *o, const char *kind, const json_t *ctx)
{
	if (strcmp(kind, "pools") == 0) {
		const char *owner = json_string_value(json_object_get(ctx, "owner"));
		const char *asn = json_string_value(json_object_get(ctx, "asn"));
		json_object_set_new(o, "owner", json_string(owner ? owner : ""));
		json_object_set_new(o, "asn", json_string(asn ? asn : ""));
	}
	api_href_nested(o, href_of(kind));
}

void storage_service_init(void)
{
	/* a name is one path segment (api_nested_name); no character of a name ZFS allows is
	 * escaped, so the segment is as long as the name */
	storage_set_shape(&(struct storage_shape){
	    .begin = shape_begin, .shape = shape, .name_max = ROUTE_PARAM_MAX - 1});
}

/* The singular of a collection's name, the key of one object's answer. */
static const char *singular(const char *kind)
{
	return strcmp(kind, "pools") == 0      ? "pool"
	       : strcmp(kind, "projects") == 0 ? "project"
	       : strcmp(kind, "luns") == 0     ? "lun"
	                                       : "filesystem";
}

/* A path segment back to a name ("home|alice": home/alice); one that no href writes is
 * kept as it is, to name nothing but itself in the 404. */
static const char *segment_name(char *out, size_t len, const char *seg)
{
	seg = seg ? seg : "";
	if (api_nested_name(seg, out, len) < 0)
		snprintf(out, len, "%s", seg);
	return out;
}

static bool pool_exists(const char *pool)
{
	return storage_answer("pool", NULL, NULL, pool) != NULL;
}

static void not_found(struct request *r, const char *kind, const char *pool, const char *project,
                      const char *name)
{
	struct fault f;
	if (pool && !pool_exists(pool))
		fault_set(&f, ERR_NOT_FOUND, "pool: no pool '%.128s'", pool);
	else if (project && strcmp(kind, "projects") != 0 &&
	         !storage_answer("project", pool, NULL, project))
		fault_set(&f, ERR_NOT_FOUND, "project: no project '%.128s' in pool '%.128s'",
		          project, pool);
	else
		fault_set(&f, ERR_NOT_FOUND, "%s: no %s '%.256s'", singular(kind), singular(kind),
		          name ? name : "");
	reply_fault(r, &f);
}

static void answer_now(struct ask *a)
{
	struct request *r = a->r;
	char pool[ROUTE_PARAM_MAX], project[ROUTE_PARAM_MAX], name[ROUTE_PARAM_MAX];
	const char *pl =
	    a->pool < 0 ? NULL : segment_name(pool, sizeof(pool), request_param(r, a->pool));
	const char *pr = a->project < 0
	                     ? NULL
	                     : segment_name(project, sizeof(project), request_param(r, a->project));
	const char *nm =
	    a->name < 0 ? NULL : segment_name(name, sizeof(name), request_param(r, a->name));
	const char *kind = a->kind;
	free(a);

	const struct storage_doc *d = storage_answer(nm ? singular(kind) : kind, pl, pr, nm);
	if (d) {
		reply_cached(r, &(struct cached_doc){.type = "application/json",
		                                     .cache_control = "private, no-cache",
		                                     .body = d->body,
		                                     .len = d->len,
		                                     .etag = d->etag,
		                                     .gz = d->gz,
		                                     .gz_len = d->gz_len,
		                                     .etag_gz = d->etag_gz});
		return;
	}
	if (nm || pl || pr)
		not_found(r, kind, pl, pr, nm);
	else /* no snapshot: spindled is stopping */
		reply_json(r, 200, json_pack("{s:[]}", kind));
}

/* Timed as the loop's work (loopwork.h): /metrics says how long an answer held it. */
static void answer(void *arg)
{
	struct loopwork w;
	loopwork_begin(&w);
	answer_now(arg);
	loopwork_end(&w);
}

static void ask(struct request *r, const char *kind, int pool, int project, int name)
{
	struct ask *a = xcalloc(1, sizeof(*a));
	*a = (struct ask){r, kind, pool, project, name};
	storage_when_ready(answer, a);
}

/* The routes of api/routes.c: the all-pools lists have no parameter. */
void storage_pools_list(struct request *r)
{
	ask(r, "pools", -1, -1, -1);
}

void storage_pool_get(struct request *r)
{
	ask(r, "pools", -1, -1, 0);
}

void storage_projects_list(struct request *r)
{
	ask(r, "projects", r->match.nparams > 0 ? 0 : -1, -1, -1);
}

void storage_project_get(struct request *r)
{
	ask(r, "projects", 0, -1, 1);
}

void storage_filesystems_list(struct request *r)
{
	bool in_project = r->match.nparams == 2;
	ask(r, "filesystems", in_project ? 0 : -1, in_project ? 1 : -1, -1);
}

void storage_filesystem_get(struct request *r)
{
	ask(r, "filesystems", 0, 1, 2);
}

void storage_luns_list(struct request *r)
{
	bool in_project = r->match.nparams == 2;
	ask(r, "luns", in_project ? 0 : -1, in_project ? 1 : -1, -1);
}

void storage_lun_get(struct request *r)
{
	ask(r, "luns", 0, 1, 2);
}
