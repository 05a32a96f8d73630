/* SPDX-License-Identifier: ISC */
/* The database writer (dbw.h): a one-thread workq, unbounded, and a connection that only
 * its thread uses. */
#include "dbw.h"

#include <stdlib.h>

#include "db.h"
#include "base/log.h"
#include "base/util.h"
#include "base/workq.h"

struct dbw_job {
	dbw_work_fn work;
	dbw_done_fn done;
	void *arg;
};

static struct {
	struct workq *wq;
	struct db *db;
} dbw;

int dbw_init(struct event_base *base, const char *path, char *err, size_t errlen)
{
	dbw.db = db_open(path, err, errlen);
	if (!dbw.db)
		return -1;
	/* The loop's priority: its transactions are short, never spin, and sessions, audit and
	 * runs wait on them in turn. */
	dbw.wq = workq_new_nice(base, 1, 0);
	if (!dbw.wq) {
		snprintf(err, errlen, "cannot start its thread");
		db_close(dbw.db);
		dbw.db = NULL;
		return -1;
	}
	workq_set_limit(dbw.wq, 0);
	return 0;
}

static void dbw_thread_work(void *p)
{
	struct dbw_job *j = p;
	j->work(dbw.db, j->arg);
}

static void dbw_thread_done(void *p)
{
	struct dbw_job *j = p;
	if (j->done)
		j->done(j->arg);
	free(j);
}

void dbw_submit(struct db *in_place, dbw_work_fn work, dbw_done_fn done, void *arg)
{
	if (dbw.wq) {
		struct dbw_job *j = xmalloc(sizeof(*j));
		*j = (struct dbw_job){work, done, arg};
		if (workq_submit(dbw.wq, dbw_thread_work, dbw_thread_done, j) == 0)
			return;
		free(j); /* only while stopping: the queue has no limit */
	}
	if (in_place)
		work(in_place, arg);
	if (done)
		done(arg);
}

void dbw_shutdown(void)
{
	/* dbw.wq stays set while it drains: done callbacks that hand over more work get it run
	 * in place (workq_submit refuses once stopping), after what was queued before. */
	workq_free(dbw.wq);
	dbw.wq = NULL;
	db_close(dbw.db);
	dbw.db = NULL;
}
