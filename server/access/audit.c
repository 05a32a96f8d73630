/* SPDX-License-Identifier: ISC */
/* The audit trail over db/: one row per change or login, never failing the caller. */
#include "audit.h"
#include "db/dbw.h"
#include "base/log.h"
#include "base/util.h"
#include "db/db.h"
#include "base/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define AUDIT_LIST_DEFAULT 100
#define AUDIT_LIST_MAX     10000

#define AUDIT_PRUNE_EVERY_S 3600
#define AUDIT_RETRY_S       5    /* entries the disk refused are tried again this often */
#define AUDIT_PENDING_MAX   4096 /* of them kept in memory; beyond, the oldest are lost */

static struct db *audit_db;
static struct event *audit_prune_ev;
static int audit_days;

/* Entries the writer could not store for want of space, oldest first. They wait here,
 * with the entries logged after them (so the order holds), and are tried again. */
static struct {
	struct db_audit *v;
	size_t n, cap;
	size_t lost;   /* dropped from the front since the last success: memory is bounded */
	bool inflight; /* a batch of them is with the writer */
	struct event *ev;
} pend;

static void pend_submit(bool last);

void audit_init(struct db *db)
{
	if (!db && audit_db)
		pend_submit(true); /* a last try before the database closes */
	audit_db = db;
}

static void prune_work(struct db *db, void *arg)
{
	int64_t *before = arg;
	int n = db_audit_prune(db, *before);
	if (n < 0)
		log_warn("audit: could not delete the entries older than %d days", audit_days);
	else if (n > 0)
		log_info("audit: %d entries older than %d days deleted", n, audit_days);
}

static void prune_tick(evutil_socket_t fd, short what, void *arg)
{
	if (!audit_db)
		return;
	int64_t *before = xmalloc(sizeof(*before));
	*before = util_now() - (int64_t)audit_days * 86400;
	dbw_submit(audit_db, prune_work, free, before);
}

static void pend_tick(evutil_socket_t fd, short what, void *arg)
{
	pend_submit(false);
}

int audit_retention(struct event_base *base, int days)
{
	struct timeval tv = {AUDIT_PRUNE_EVERY_S, 0};
	audit_days = days;
	audit_prune_ev = event_new(base, -1, EV_PERSIST, prune_tick, NULL);
	pend.ev = evtimer_new(base, pend_tick, NULL);
	if (!audit_prune_ev || !pend.ev || event_add(audit_prune_ev, &tv) < 0)
		return -1;
	prune_tick(-1, 0, NULL);
	return 0;
}

void audit_retention_stop(void)
{
	if (audit_prune_ev)
		event_free(audit_prune_ev);
	audit_prune_ev = NULL;
	if (pend.ev)
		event_free(pend.ev);
	pend.ev = NULL;
}

/* Appends n entries at the back, or puts them back at the front; beyond
 * AUDIT_PENDING_MAX the oldest go. Arms the retry. */
static void pend_add(const struct db_audit *a, size_t n, bool front)
{
	while (pend.cap < pend.n + n)
		pend.v = util_grow(pend.v, &pend.cap, pend.cap, sizeof(*pend.v));
	if (front)
		memmove(pend.v + n, pend.v, pend.n * sizeof(*pend.v));
	memcpy(front ? pend.v : pend.v + pend.n, a, n * sizeof(*a));
	pend.n += n;
	if (pend.n > AUDIT_PENDING_MAX) {
		size_t drop = pend.n - AUDIT_PENDING_MAX;
		memmove(pend.v, pend.v + drop, AUDIT_PENDING_MAX * sizeof(*pend.v));
		pend.n = AUDIT_PENDING_MAX;
		pend.lost += drop;
	}
	struct timeval tv = {AUDIT_RETRY_S, 0};
	if (pend.ev && !evtimer_pending(pend.ev, NULL))
		evtimer_add(pend.ev, &tv);
}

/* One entry (batch false) or the waiting ones, for the writer. */
struct insert_job {
	bool batch;
	int rc;
	bool full;
	size_t n;
	struct db_audit *v; /* &one, or an array for free() */
	struct db_audit one;
};

static void insert_work(struct db *db, void *arg)
{
	struct insert_job *j = arg;
	j->rc = j->batch ? db_audit_insert_many(db, j->v, j->n) : db_audit_insert(db, j->v);
	j->full = j->rc != 0 && db_full(db);
}

static void insert_done(void *arg)
{
	struct insert_job *j = arg;
	if (j->batch)
		pend.inflight = false;
	if (j->rc == 0 && j->batch) {
		log_info("audit: %zu entries kept in memory while the disk was full are stored now",
		         j->n);
		if (pend.lost)
			log_warn(
			    "audit: %zu older entries were lost: more than %d waited for space",
			    pend.lost, AUDIT_PENDING_MAX);
		pend.lost = 0;
	} else if (j->rc != 0 && j->full && audit_db) {
		if (!j->batch)
			log_warn("audit: %s %s by %s kept in memory: the state filesystem is full",
			         j->v->action, j->v->target, j->v->user);
		pend_add(j->v, j->n, j->batch); /* a batch goes back before what came since */
	} else if (j->rc != 0) {
		log_warn("audit: could not record %zu entr%s (the first: %s %s by %s)%s", j->n,
		         j->n == 1 ? "y" : "ies", j->v->action, j->v->target, j->v->user,
		         j->full ? ": the state filesystem is full" : "");
	}
	if (j->batch)
		free(j->v);
	free(j);
}

/* Hands every waiting entry to the writer as one batch, unless one is on its way (the
 * last try goes anyway: the writer keeps the order). */
static void pend_submit(bool last)
{
	if ((pend.inflight && !last) || pend.n == 0 || !audit_db)
		return;
	struct insert_job *j = xcalloc(1, sizeof(*j));
	j->batch = true;
	j->v = pend.v;
	j->n = pend.n;
	pend.v = NULL;
	pend.n = pend.cap = 0;
	pend.inflight = true;
	dbw_submit(audit_db, insert_work, insert_done, j);
}

static void audit_vfill(struct db_audit *a, const char *user, const char *address,
                        const char *action, const char *target, bool ok, const char *fmt,
                        va_list ap)
{
	memset(a, 0, sizeof(*a));
	a->time = util_now();
	a->ok = ok;
	/* Truncation is fine: the columns are bounded and the row matters more. */
	snprintf(a->user, sizeof(a->user), "%s", user ? user : "");
	snprintf(a->address, sizeof(a->address), "%s", address ? address : "");
	snprintf(a->action, sizeof(a->action), "%s", action ? action : "");
	snprintf(a->target, sizeof(a->target), "%s", target ? target : "");
	if (fmt)
		vsnprintf(a->details, sizeof(a->details), fmt, ap);
	/* login names come from headers as raw bytes */
	utf8_clean(a->user, UTF8_CONTROLS);
	utf8_clean(a->address, UTF8_CONTROLS);
	utf8_clean(a->action, UTF8_CONTROLS);
	utf8_clean(a->target, UTF8_CONTROLS);
	utf8_clean(a->details, UTF8_CONTROLS);
	log_debug("audit: %s from %s: %s %s %s: %s", a->user, a->address, a->action, a->target,
	          ok ? "ok" : "failed", a->details);
}

void audit_entry(struct db_audit *a, const char *user, const char *address, const char *action,
                 const char *target, bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	audit_vfill(a, user, address, action, target, ok, fmt, ap);
	va_end(ap);
}

void audit_log(const char *user, const char *address, const char *action, const char *target,
               bool ok, const char *fmt, ...)
{
	struct insert_job *j = xcalloc(1, sizeof(*j));
	va_list ap;

	va_start(ap, fmt);
	audit_vfill(&j->one, user, address, action, target, ok, fmt, ap);
	va_end(ap);
	j->v = &j->one;
	j->n = 1;
	if (!audit_db) {
		log_warn("audit: no database, dropped %s %s", j->one.action, j->one.target);
		free(j);
		return;
	}
	/* Behind the waiting ones, if any: the log keeps its order. */
	if (pend.n || pend.inflight) {
		pend_add(&j->one, 1, false);
		free(j);
		return;
	}
	/* to the writer: the caller's answer does not wait for the disk (dbw.h) */
	dbw_submit(audit_db, insert_work, insert_done, j);
}

static int audit_list_cb(void *arg, const struct db_audit *a)
{
	json_t *logs = arg;
	char when[32];

	json_array_append_new(logs, json_pack("{sI ss ss ss ss ss ss ss}", "id", (json_int_t)a->id,
	                                      "time", util_iso8601(a->time, when, sizeof(when)),
	                                      "user", a->user, "address", a->address, "action",
	                                      a->action, "target", a->target, "details", a->details,
	                                      "result", a->ok ? "success" : "failure"));
	return 0;
}

static json_t *audit_list_db(struct db *db, int64_t start, int limit)
{
	if (limit <= 0)
		limit = AUDIT_LIST_DEFAULT;
	if (limit > AUDIT_LIST_MAX)
		limit = AUDIT_LIST_MAX;
	json_t *logs = json_array();
	if (db_audit_list(db, start, limit, audit_list_cb, logs) < 0) {
		json_decref(logs);
		return NULL;
	}
	return json_pack("{so}", "logs", logs); /* steals logs */
}

int audit_list(int64_t start, int limit, json_t **out)
{
	*out = audit_db ? audit_list_db(audit_db, start, limit) : NULL;
	return *out ? 0 : -1;
}

/* The list is read by the writer, after every entry handed to it before. */
struct list_job {
	int64_t start;
	int limit;
	json_t *out;
	audit_list_fn cb;
	void *arg;
};

static void list_work(struct db *db, void *arg)
{
	struct list_job *l = arg;
	l->out = audit_list_db(db, l->start, l->limit);
}

static void list_done(void *arg)
{
	struct list_job *l = arg;
	l->cb(l->arg, l->out);
	free(l);
}

void audit_list_async(int64_t start, int limit, audit_list_fn cb, void *arg)
{
	if (!audit_db) {
		cb(arg, NULL);
		return;
	}
	struct list_job *l = xcalloc(1, sizeof(*l));
	*l = (struct list_job){.start = start, .limit = limit, .cb = cb, .arg = arg};
	dbw_submit(audit_db, list_work, list_done, l);
}
