/* SPDX-License-Identifier: ISC */
/* The database writer: one helper thread with a connection of its own, for the writes whose
 * truth the loop already holds in memory (audit entries, sessions' last_seen, running
 * jobs). A commit waits for the disk (synchronous=FULL, an fsync), and the disk may be the
 * one a benchmark is saturating: the loop hands such writes over and carries on.
 *
 * Work runs in the order it was handed over and its done callbacks run on the loop in the
 * same order, so a read handed over after some writes sees them. Nothing is refused: the
 * queue is bounded by what callers hold in memory anyway. Before dbw_init and after
 * dbw_shutdown, work runs at once on the caller's connection and done follows. */
#ifndef SPINDLE_DBW_H
#define SPINDLE_DBW_H

#include <event2/event.h>

struct db;

/* On the writer thread (or in place); db is the connection to use. */
typedef void (*dbw_work_fn)(struct db *db, void *arg);
/* On the loop thread, after the work. */
typedef void (*dbw_done_fn)(void *arg);

/* Opens path (migrated already: a second db_open) for the thread. -1 with err set. */
int dbw_init(struct event_base *base, const char *path, char *err, size_t errlen);
/* in_place: the connection for work when there is no writer (NULL work is not run then).
 * done may be NULL. */
void dbw_submit(struct db *in_place, dbw_work_fn work, dbw_done_fn done, void *arg);
/* Everything handed over is written and its done callback run; the connection closes.
 * After the loop has stopped, before the main connection closes. */
void dbw_shutdown(void);

#endif
