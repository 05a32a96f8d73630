/* SPDX-License-Identifier: ISC */
/* The database writer (db/dbw.c) against a real SQLite file: work runs on its own
 * thread in the order handed over, done callbacks follow on the loop in that order, a read
 * handed over after writes sees them, shutdown drains everything, and without the writer
 * work runs in place on the caller's connection. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "db/db.h"
#include "db/dbw.h"
#include "base/log.h"
#include "tap.h"

#define N 200

static pthread_t loop_thread;
static struct db *main_db;
static int done_order[N + 16], ndone;
static int off_loop, on_main_conn, failed;

struct w {
	int i;
	int64_t rows_seen; /* for reads: the entries the writer's connection held */
	bool read;
};

static int count_cb(void *arg, const struct db_audit *a)
{
	(void)a;
	(*(int64_t *)arg)++;
	return 0;
}

static void work(struct db *db, void *arg)
{
	struct w *w = arg;
	if (!pthread_equal(pthread_self(), loop_thread))
		off_loop++;
	if (db == main_db)
		on_main_conn++;
	if (w->read) {
		if (db_audit_list(db, 0, 100000, count_cb, &w->rows_seen) < 0)
			failed++;
		return;
	}
	struct db_audit a = {.time = 1, .ok = true};
	snprintf(a.user, sizeof(a.user), "u%d", w->i);
	snprintf(a.action, sizeof(a.action), "test");
	if (db_audit_insert(db, &a) != 0)
		failed++;
}

static void done(void *arg)
{
	struct w *w = arg;
	if (!pthread_equal(pthread_self(), loop_thread))
		failed++;
	if (ndone < (int)(sizeof(done_order) / sizeof(done_order[0])))
		done_order[ndone] = w->i;
	ndone++;
}

static int64_t rows_now(void)
{
	int64_t n = 0;
	return db_audit_list(main_db, 0, 100000, count_cb, &n) < 0 ? -1 : n;
}

int main(void)
{
	char dir[] = "/tmp/spindle-test-dbw.XXXXXX", path[PATH_MAX], err[256];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/spindle.db", dir);
	log_init(true, LOG_LEVEL_WARN);
	/* as spindled does: the writer thread's event_active() needs a locked, notifiable base
	 * (without it the loop was seen to spin for ever on a corrupted active queue) */
	evthread_use_pthreads();
	loop_thread = pthread_self();
	struct event_base *base = event_base_new();
	main_db = db_open(path, err, sizeof(err));
	ok(base && main_db, "a loop and the main connection");

	/* before dbw_init: in place, at once, on the caller's connection */
	static struct w early = {.i = -1};
	dbw_submit(main_db, work, done, &early);
	is_int(ndone, 1, "without the writer, done follows the work at once");
	is_int(on_main_conn, 1, "... which ran on the caller's connection");
	is_int(off_loop, 0, "... on the caller's thread");

	ok(dbw_init(base, path, err, sizeof(err)) == 0, "the writer starts (%s)", err);
	static struct w ws[N + 1];
	for (int i = 0; i < N; i++) {
		ws[i].i = i;
		dbw_submit(main_db, work, done, &ws[i]);
	}
	ws[N] = (struct w){.i = N, .read = true};
	dbw_submit(main_db, work, done, &ws[N]);
	is_int(ndone, 1, "handing over does not wait for the work");
	struct timeval tv = {0, 10000};
	for (int spins = 0; ndone < N + 2 && spins < 3000; spins++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	is_int(ndone, N + 2, "every done callback ran on the loop");
	int in_order = 1;
	for (int i = 0; i < N + 1; i++)
		if (done_order[i + 1] != i)
			in_order = 0;
	ok(in_order, "done callbacks in the order the work was handed over");
	is_int(off_loop, N + 1, "the work ran on the writer's thread");
	is_int(on_main_conn, 1, "... on a connection of its own");
	is_int(ws[N].rows_seen, N + 1, "a read handed over after the writes sees them all");
	is_int(rows_now(), N + 1, "the main connection sees them too");

	/* shutdown drains what is queued, with its done callbacks, without the loop */
	static struct w late[8];
	for (int i = 0; i < 8; i++) {
		late[i].i = 1000 + i;
		dbw_submit(main_db, work, done, &late[i]);
	}
	dbw_shutdown();
	is_int(ndone, N + 2 + 8, "dbw_shutdown ran everything handed over and its callbacks");
	is_int(rows_now(), N + 1 + 8, "... and it is stored");
	static struct w after = {.i = 2000};
	int before_main = on_main_conn;
	dbw_submit(main_db, work, done, &after);
	is_int(ndone, N + 2 + 8 + 1, "after shutdown: in place again");
	is_int(on_main_conn, before_main + 1, "... on the caller's connection");
	is_int(failed, 0, "no store call failed, no callback off the loop");

	db_close(main_db);
	event_base_free(base);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
