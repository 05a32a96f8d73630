/* SPDX-License-Identifier: ISC */
/* The series store's packed formats (series_pack.c): pure functions over bytes, shared by
 * the loop (which packs each flush), the writer thread (which packs complete hours) and
 * the queries (which read them back). No state, no I/O; anything malformed is refused,
 * never trusted.
 * - A block: the values of consecutive seconds, in the largest unit they are all whole
 *   multiples of, as varint tokens (a value's zigzag delta, a run of repeats, a run of
 *   gaps).
 * - Rollups: min, max, sum and count of the seconds of each slot (a minute of an hour, an
 *   hour of a day), in units of 10^(k-3).
 * - A flush row: every series' block of one flush, so a flush dirties a page or two of
 *   the database instead of one per series. */
#ifndef SPINDLE_SERIES_PACK_H
#define SPINDLE_SERIES_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "series_defs.h"
#include "base/util.h" /* struct buf */

/* --- blocks */

/* Appends v[0..n) (NaN: no value), the first at the row's start: the block's unit (the
 * greatest common divisor of its values, in thousandths), then varint tokens: a zigzag
 * delta of the value in units, a run of repeats, or a run of gaps. */
void series_pack(const double *v, size_t n, struct buf *out);
/* Writes the values of a row starting at `start` that fall in [out_start, out_start +
 * out_n) into out[t - out_start]; the rest of out is left alone. Returns the seconds the
 * row covers, or -1 when it is malformed. */
long series_unpack(const void *p, size_t len, int64_t start, double *out, int64_t out_start,
                   size_t out_n);

/* Unpacks rows into vals (n seconds from base) as a db_samples_range() callback; a
 * malformed row sets bad and is skipped. */
struct series_unpack_ctx {
	double *vals;
	int64_t base;
	size_t n;
	bool bad;
};
int series_unpack_row(void *arg, int64_t start, int span, const void *data, size_t len);

/* --- rollups */

/* A rollup in units of 10^(k-3): min, max, sum and count of the seconds it covers. */
struct series_rollup {
	int64_t min, max, sum, count;
	int k;
};
/* Rollups of consecutive slots (count 0: an empty slot). */
void series_rollups_of(const double *v, size_t n, size_t per_slot, struct series_rollup *out);
/* Adds r to into, in the finer of their units; sums saturate. */
void series_rollup_merge(struct series_rollup *into, const struct series_rollup *r);
void series_pack_rollups(const struct series_rollup *r, size_t n, struct buf *out);
/* Fills r[0..n) (slots not in the row get count 0); returns the slots set or -1. */
long series_unpack_rollups(const void *p, size_t len, struct series_rollup *r, size_t n);
/* The rollup in value units. */
void series_rollup_agg(const struct series_rollup *r, struct series_agg *a);

/* --- flush rows: varint count, then per series in ascending id: varint id delta, varint
 * offset of its first second from the row's start, varint length, and that many bytes of
 * series_pack(). */

/* Appends one series' piece to a row's body: packed holds its block, offset is where its
 * first second is from the row's start, id_delta its id less the piece's before (or its
 * id, first). */
void series_flush_piece_put(struct buf *body, int64_t id_delta, int64_t offset,
                            const struct buf *packed);
/* Appends the row of the npieces pieces in body to out. */
void series_flush_row_put(struct buf *out, size_t npieces, const struct buf *body);

/* A series' piece of a flush row read back. */
struct series_flush_piece {
	int64_t id, start;
	const unsigned char *p;
	size_t len;
};

/* A flush row read back, with its pieces (pointing into data), sorted by id. */
struct series_flush_row {
	int64_t id, start;
	unsigned char *data;
	size_t len;
	struct series_flush_piece *pieces;
	size_t npieces;
};

/* The flush rows of an hour. want (sorted, nwant of them; NULL: all) and max_row (0: any)
 * choose what series_flush_rows_add() keeps; the rest is how far it got. */
struct series_flush_rows {
	const int64_t *want;
	size_t nwant;
	int64_t max_row;
	int64_t hour;
	bool loaded;
	int64_t max_id; /* the newest row kept */
	struct series_flush_row *r;
	size_t n, cap;
};

/* Keeps a copy of the pieces of a row the rows want, as a db_samples_recent_range()
 * callback (arg: the struct series_flush_rows); a malformed row is logged and skipped. */
int series_flush_rows_add(void *arg, int64_t id, int64_t start, int span, const void *data,
                          size_t len);
/* Calls fn with the series id and packed length of each piece of a flush row; -1 when it
 * is malformed (fn may have been called for the pieces before). */
int series_flush_row_sizes(const void *data, size_t len,
                           void (*fn)(void *arg, int64_t id, size_t len), void *arg);
/* Unpacks the piece of series id in each row into out (out_n seconds from out_start);
 * false when one was malformed. */
bool series_flush_rows_unpack(const struct series_flush_rows *f, int64_t id, double *out,
                              int64_t out_start, size_t out_n);
/* Forgets the rows (keeping the memory of the array, and what they want). */
void series_flush_rows_reset(struct series_flush_rows *f);
void series_flush_rows_free(struct series_flush_rows *f);

#endif
