/* SPDX-License-Identifier: ISC */
/* The series store's writer thread (series_writer.c). It owns the samples connection and
 * everything done with it: it stores each batch the loop hands over in one transaction,
 * keeps a flush the disk refused and tries it again before the next, packs every complete
 * hour into blocks and rollups, prunes what is past retention and purges deleted series,
 * in steps of a few milliseconds each. It also counts the bytes each series takes on
 * disk. series.c is its only user; the functions here run on the loop thread. */
#ifndef SPINDLE_SERIES_WRITER_H
#define SPINDLE_SERIES_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "series_defs.h"
#include "series_pack.h"

enum series_batch_kind { SERIES_BATCH_FLUSH, SERIES_BATCH_PURGE };

/* A flush row of a batch: its bytes are data.p[off, off + len). */
struct series_batch_row {
	int64_t start;
	int span;
	size_t off, len;
};

/* The bytes one series got in a batch's rows, for the count of its bytes on disk. */
struct series_batch_piece {
	int64_t series;
	size_t len;
};

/* A series whose row the batch writes. */
struct series_batch_new {
	int64_t id, dataset;
	char *key;
};

/* What the loop hands over: a flush (new series and flush rows) or series to purge. */
struct series_batch {
	enum series_batch_kind kind;
	struct series_batch_new *news;
	size_t nnews, news_cap;
	struct series_batch_row *rows; /* flush rows, data in data */
	size_t nrows, rows_cap;
	struct series_batch_piece *pieces; /* what each series got, for the byte counts */
	size_t npieces, pieces_cap;
	struct buf data;
	int64_t from; /* the first second it holds */
	int64_t upto; /* every second before it is in this batch or an earlier one */
	int64_t *ids; /* SERIES_BATCH_PURGE */
	size_t nids, ids_cap;
	struct series_batch *next; /* the writer's queue */
};

void series_batch_free(struct series_batch *b);

/* Called for every series on disk, before the thread starts. */
typedef void (*series_writer_load_fn)(void *arg, int64_t id, int64_t dataset, const char *key);

/* Opens the writer's connection, lists the series on disk (load) and the hours of flush
 * rows still to pack (*hours: how many), and starts the thread. -1 with err. */
int series_writer_start(const struct series_config *cfg, series_writer_load_fn load, void *arg,
                        size_t *hours, char *err, size_t errlen);
/* Stops the thread after what is queued, a last try for what the disk refused (what stays
 * refused is logged as lost), and frees everything. */
void series_writer_stop(void);
/* Queues b for the writer, which takes it. */
void series_writer_enqueue(struct series_batch *b);
/* Whether the disk has refused flushes that are still waiting (memory then keeps their
 * seconds, whatever its budget says). */
bool series_writer_holding(void);
/* Blocks until the writer has stored everything queued and has no maintenance due. */
void series_writer_sync(void);
/* Retention from now on; the writer prunes soon after. */
void series_writer_retention(const struct series_retention *r);
/* The bytes series id takes on disk: its packed bytes and rollups, its share of the flush
 * rows not packed yet, and an estimate of the rows' overhead. */
int64_t series_writer_disk_bytes(int64_t id);

#endif
