/* SPDX-License-Identifier: ISC */
/* /api/storage/v1, read-only: the ZFS pools, projects, filesystems and LUNs of
 * server/inventory/storage.c, as the appliance's storage service shapes them. Answers come
 * from the newest snapshot (a request before the first one waits for it); a write to any
 * of these routes is the router's 405. */
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

/* A pool is owned by this node: its owner and asn are the version answer's nodename and
 * asn (the appliance's clients check a pool is theirs so). */
static json_t *with_href(json_t *o, const char *kind)
{
	if (strcmp(kind, "pools") == 0) {
		json_object_set_new(o, "owner", json_string(system_nodename()));
		json_object_set_new(o, "asn", json_string(system_asn()));
	}
	return api_href(o, href_of(kind));
}

/* The singular of a collection's name, the key of one object's answer. */
static const char *singular(const char *kind)
{
	return strcmp(kind, "pools") == 0      ? "pool"
	       : strcmp(kind, "projects") == 0 ? "project"
	       : strcmp(kind, "luns") == 0     ? "lun"
	                                       : "filesystem";
}

/* A path segment back to a name: the '|' of an href stands for a '/' ("home|alice"). */
static const char *unbar(char *out, size_t len, const char *seg)
{
	snprintf(out, len, "%s", seg ? seg : "");
	for (char *p = out; *p; p++)
		if (*p == '|')
			*p = '/';
	return out;
}

/* Is o an object (and drops it)? */
static bool json_decref_ret(json_t *o)
{
	json_decref(o);
	return o != NULL;
}

static bool pool_exists(const char *pool)
{
	return json_decref_ret(storage_get("pools", NULL, NULL, pool));
}

static void not_found(struct request *r, const char *kind, const char *pool, const char *project,
                      const char *name)
{
	struct fault f;
	if (pool && !pool_exists(pool))
		fault_set(&f, ERR_NOT_FOUND, "pool: no pool '%.128s'", pool);
	else if (project && strcmp(kind, "projects") != 0 &&
	         !json_decref_ret(storage_get("projects", pool, NULL, project)))
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
	char pool[256], project[256], name[512];
	const char *pl = a->pool < 0 ? NULL : unbar(pool, sizeof(pool), request_param(r, a->pool));
	const char *pr =
	    a->project < 0 ? NULL : unbar(project, sizeof(project), request_param(r, a->project));
	const char *nm = a->name < 0 ? NULL : unbar(name, sizeof(name), request_param(r, a->name));
	const char *kind = a->kind;
	free(a);

	if (nm) {
		json_t *o = storage_get(kind, pl, pr, nm);
		if (o)
			reply_json(r, 200, json_pack("{s:o}", singular(kind), with_href(o, kind)));
		else
			not_found(r, kind, pl, pr, nm);
		return;
	}
	json_t *list = storage_list(kind, pl, pr);
	if (!list && (pl || pr)) {
		not_found(r, kind, pl, pr, NULL);
		return;
	}
	if (!list)
		list = json_array(); /* no snapshot: spindled is stopping */
	size_t k;
	json_t *o;
	json_array_foreach(list, k, o)
	{
		with_href(o, kind);
	}
	reply_json(r, 200, json_pack("{s:o}", kind, list));
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
