/* SPDX-License-Identifier: ISC */
/* The series store: every value the analytics datasets collect, one series per
 * (dataset, key), the key "" holding a dataset's total.
 *
 * - Memory: each series keeps its newest SERIES_RING seconds (more than an hour), so the
 *   dashboard and "last N seconds" never touch the disk: the newest few as doubles, the
 *   rest as the flushes packed them, so its memory follows what it holds. All of them
 *   within a budget (series_config.memory_bytes): past it memory keeps fewer seconds,
 *   and queries read the rest from disk.
 * - Disk: every SERIES_CHUNK seconds the loop copies the seconds just completed, a helper
 *   thread packs them (the store's workq, if it has one) and the writer thread stores them
 *   in ONE transaction on a connection of its own. Once an hour is complete the writer packs its
 *   chunks into one block per series and writes the minute and hour rollups (min, max,
 *   sum, count); it prunes what is past retention and purges deleted datasets, in steps
 *   of a few milliseconds each, so the loop's own writes never wait long for the lock.
 *   A flush the disk refuses (a full disk) is kept and tried again before each next one,
 *   for as long as memory holds its seconds; what has to be given up is logged.
 * - Values keep 3 decimals (fixed point, |v| <= SERIES_MAX_VALUE); memory, disk and the
 *   rollups hold exactly the same numbers.
 * Everything here runs on the loop thread unless it says otherwise. This header is the
 * store's face for the rest of the daemon; behind it are series.c (memory and queries),
 * series_writer.c (the writer thread) and series_pack.c (the packed formats), each
 * above the next; series_defs.h holds what all three share. */
#ifndef SPINDLE_SERIES_H
#define SPINDLE_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "series_defs.h"

struct series;

/* Opens the samples connection, loads the series and starts the writer thread. */
int series_init(const struct series_config *cfg, char *err, size_t errlen);
/* Flushes what memory holds that the disk does not, and stops the writer. */
void series_shutdown(void);
/* Blocks until the writer has stored everything handed to it and has no maintenance due
 * (tests and benchmarks). */
void series_sync(void);

/* The series (dataset, key), loaded or new (its row is written with the next flush). */
struct series *series_open(int64_t dataset, const char *key);
/* Calls cb for every series of dataset known now (loaded from disk or opened since). */
void series_each(int64_t dataset, void (*cb)(void *arg, struct series *s), void *arg);
/* Series of datasets not in the list are purged (start-up: datasets deleted before). */
void series_keep_only(const int64_t *datasets, size_t n);
/* Forgets the dataset's series: from memory now, from disk in steps. */
void series_drop_dataset(int64_t dataset);
/* A reference keeps a series' memory while a query or stream uses it. */
void series_ref(struct series *s);
void series_unref(struct series *s);

const char *series_key(const struct series *s);
int64_t series_id(const struct series *s);
int64_t series_incore_bytes(const struct series *s);
/* Packed bytes stored for it (plus an estimate of the rows' overhead). */
int64_t series_disk_bytes(const struct series *s);

/* The value of second t (the second that starts at t), before series_commit(t). */
void series_put(struct series *s, int64_t t, double v);
/* Second t is complete: series without a value for it have a gap there. Flushes at
 * every SERIES_CHUNK boundary, then tells the subscribers. */
void series_commit(int64_t t);
/* The value of second t after series_commit(t), for a series opened since (a dataset made
 * after the tick that read the second): kept while t is the newest second and not yet
 * flushed; false (and nothing kept) otherwise. */
bool series_put_late(struct series *s, int64_t t, double v);
int64_t series_newest(void); /* the newest second committed, 0 before the first */
/* Whether a flush is being packed on a helper thread (tests). */
bool series_flush_pending(void);
/* Now, as far as retention goes: the second after the newest, or the wall clock. */
int64_t series_now(void);

typedef void (*series_commit_fn)(void *arg, int64_t t);
void series_subscribe(series_commit_fn fn, void *arg);
void series_unsubscribe(series_commit_fn fn, void *arg);

void series_retention_set(const struct series_retention *r); /* prunes soon after */

/* --- queries */

struct series_query {
	struct series **series; /* referenced by the store until done */
	size_t nseries;
	int64_t start;   /* the first bucket; a multiple of gran */
	int64_t gran;    /* 1, 60 or 3600: the rollups used and the retention applied */
	int64_t width;   /* seconds per bucket, a multiple of gran */
	size_t nbuckets; /* out holds nseries * nbuckets, series after series */
	struct series_agg *out;
	int64_t end; /* 0, or where the window ends (a multiple of gran): the last bucket
	              * takes no second from there on, so buckets cover the window exactly */
};

/* Fills q->out (zeroing it first). Parts older than memory holds are read from disk on
 * a helper thread; done(arg, status) runs on the loop once out is complete: 0, or -1 when
 * the disk could not be read (logged). When nothing needs the disk, done runs before
 * series_query returns. Granules older than the retention of gran are left out. */
void series_query(struct series_query *q, void (*done)(void *arg, int status), void *arg);
/* series_query() of an out that is zero already (cleared on a helper thread): megabytes of
 * it would hold the loop. */
void series_query_zeroed(struct series_query *q, void (*done)(void *arg, int status), void *arg);
/* Adds the seconds [from, to) that memory holds to q's buckets (streams, after a tick). */
void series_query_memory(struct series_query *q, int64_t from, int64_t to);

#endif
