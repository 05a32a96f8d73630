/* SPDX-License-Identifier: ISC */
/* The series store's packed formats (series_pack.c), with no database: blocks of seconds
 * round-trip and refuse what is malformed, rollups merge across units, and flush rows
 * give each series back its piece. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "analytics/series_pack.h"
#include "base/util.h"

static bool near(double got, double want)
{
	return fabs(got - want) <= 1e-6 * (fabs(want) > 1 ? fabs(want) : 1);
}

/* A varint as the formats write it; returns its length. */
static size_t varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* --- formats: round trips, units, rollups */

/* The unit a packed row starts with (a varint). */
static long long unit_of_row(const struct buf *b)
{
	unsigned long long v = 0;
	for (size_t i = 0, shift = 0; i < b->len && shift < 64; i++, shift += 7) {
		v |= (unsigned long long)(b->p[i] & 0x7f) << shift;
		if (!(b->p[i] & 0x80))
			break;
	}
	return (long long)v;
}

static void roundtrip(const char *what, const double *v, size_t n)
{
	struct buf b = {0};
	double *out = xcalloc(n + 2, sizeof(*out));
	series_pack(v, n, &b);
	for (size_t i = 0; i < n + 2; i++)
		out[i] = -12345;
	long covered = series_unpack(b.p, b.len, 1000, out + 1, 1000, n);
	bool same = true;
	for (size_t i = 0; i < n; i++) {
		double want = series_round(v[i]);
		if (isnan(want))
			same = same && out[i + 1] == -12345; /* gaps leave out alone */
		else
			same = same && out[i + 1] == want;
	}
	ok(same && out[0] == -12345 && out[n + 1] == -12345 && covered <= (long)n,
	   "%s: %zu values in %zu bytes come back", what, n, b.len);
	buf_free(&b);
	free(out);
}

static void test_formats(void)
{
	const double ints[] = {0, 1, 2, 3, 3, 3, 3, NAN, NAN, 5, 1000000, -7, 123456789012};
	const double decs[] = {0.001, 12.345, -7.5, 37.5, 37.5, 0, 99.999, 1e-4};
	const double big[] = {SERIES_MAX_VALUE, -SERIES_MAX_VALUE, 4.5e12, 1.5e15};
	roundtrip("integers, repeats and gaps", ints, nitems(ints));
	roundtrip("decimals (3 kept)", decs, nitems(decs));
	roundtrip("large values", big, nitems(big));
	ok(series_round(1.23456) == 1.235, "values keep 3 decimals");
	ok(series_round(2e15) == SERIES_MAX_VALUE, "and stay within SERIES_MAX_VALUE");

	struct buf b = {0};
	series_pack(ints, nitems(ints), &b);
	is_int(unit_of_row(&b), 1000, "whole numbers pack as counts");
	const double halves[] = {37.5, 12.5, 0.5};
	b.len = 0;
	series_pack(halves, 3, &b);
	is_int(unit_of_row(&b), 500, "halves pack in units of 0.5");
	double sectors[64];
	for (int i = 0; i < 64; i++)
		sectors[i] = 512.0 * (100000 + (i * 7919) % 1000);
	roundtrip("byte rates", sectors, 64);
	b.len = 0;
	series_pack(sectors, 64, &b);
	is_int(unit_of_row(&b), 512000, "byte rates pack in sectors");
	ok(b.len <= 4 + 64 * 2, "64 of them in %zu bytes", b.len);
	double flat[3600];
	for (int i = 0; i < 3600; i++)
		flat[i] = 42;
	b.len = 0;
	series_pack(flat, 3600, &b);
	ok(b.len <= 6, "an hour of one value packs into %zu bytes", b.len);
	for (int i = 0; i < 3600; i++)
		flat[i] = NAN;
	b.len = 0;
	series_pack(flat, 3600, &b);
	ok(b.len <= 4, "an hour without values packs into %zu bytes", b.len);

	double out[8];
	const unsigned char truncated[] = {1, 0x80};
	const unsigned char unit0[] = {0, 0};
	const unsigned char repeat_first[] = {1, 1};
	ok(series_unpack(truncated, sizeof(truncated), 0, out, 0, 8) < 0, "a truncated varint");
	ok(series_unpack(unit0, sizeof(unit0), 0, out, 0, 8) < 0, "a unit of zero");
	ok(series_unpack(repeat_first, sizeof(repeat_first), 0, out, 0, 8) < 0,
	   "a repeat before any value");

	/* rollups */
	double v[180];
	for (int i = 0; i < 180; i++)
		v[i] = i < 60 ? i * 0.5 : i < 120 ? NAN : 1000 + (i % 7);
	struct series_rollup r[3], back[3];
	series_rollups_of(v, 180, 60, r);
	struct series_agg a;
	series_rollup_agg(&r[0], &a);
	ok(a.count == 60 && a.min == 0 && a.max == 29.5 && near(a.sum, 885), "minute 0: %g..%g %g",
	   a.min, a.max, a.sum);
	is_int(r[1].count, 0, "minute 1 has no values");
	series_rollup_agg(&r[2], &a);
	double sum = 0;
	for (int i = 120; i < 180; i++)
		sum += v[i];
	ok(a.count == 60 && a.min == 1000 && a.max == 1006 && near(a.sum, sum), "minute 2");
	b.len = 0;
	series_pack_rollups(r, 3, &b);
	is_int(series_unpack_rollups(b.p, b.len, back, 3), 2, "two rollups stored");
	bool same = true;
	for (int i = 0; i < 3; i++)
		same = same && r[i].count == back[i].count &&
		       (!r[i].count || (r[i].min == back[i].min && r[i].max == back[i].max &&
		                        r[i].sum == back[i].sum && r[i].k == back[i].k));
	ok(same, "rollups come back exactly");
	ok(series_unpack_rollups(b.p, b.len - 1, back, 3) < 0, "a cut rollup row is refused");
	buf_free(&b);
}

/* --- blocks by hand: what series_unpack() takes and what it refuses */

enum { TOK_VALUE = 0, TOK_REPEAT = 1, TOK_GAP = 2 };

struct block_case {
	const char *what;
	uint64_t words[4]; /* the unit, then tokens: (n - 1) << 2 | kind, or delta << 2 */
	size_t nwords;
	long covers; /* -1: refused */
	int64_t at;  /* a second with a value, or -1 */
	double value;
};

static const struct block_case block_cases[] = {
    {"empty", {0}, 0, -1, -1, 0},
    {"a unit alone covers nothing", {1000}, 1, 0, -1, 0},
    {"one value", {1000, 10 << 2 | TOK_VALUE}, 2, 1, 0, 5},
    {"a gap, then a value", {1000, 2 << 2 | TOK_GAP, 10 << 2 | TOK_VALUE}, 3, 4, 3, 5},
    {"a value, then repeats", {500, 6 << 2 | TOK_VALUE, 4 << 2 | TOK_REPEAT}, 3, 6, 5, 1.5},
    {"a negative value (zigzag)", {1, 3 << 2 | TOK_VALUE}, 2, 1, 0, -0.002},
    {"the largest unit", {1000000000000000000ull}, 1, 0, -1, 0},
    {"a unit past the largest", {1000000000000000001ull}, 1, -1, -1, 0},
    {"a gap of 2^32 seconds", {1, ((1ull << 32) - 1) << 2 | TOK_GAP}, 2, 1l << 32, -1, 0},
    {"a gap past 2^32 seconds", {1, (1ull << 32) << 2 | TOK_GAP}, 2, -1, -1, 0},
    {"a repeat run past 2^32",
     {1, 2 << 2 | TOK_VALUE, (1ull << 32) << 2 | TOK_REPEAT},
     3,
     -1,
     -1,
     0},
    {"a repeat with nothing before", {1000, 0 << 2 | TOK_REPEAT}, 2, -1, -1, 0},
    {"an unknown token", {1000, 3}, 2, -1, -1, 0},
};

static void test_blocks(void)
{
	for (size_t i = 0; i < nitems(block_cases); i++) {
		const struct block_case *c = &block_cases[i];
		unsigned char bytes[64];
		size_t len = 0;
		for (size_t w = 0; w < c->nwords; w++)
			len += varint(bytes + len, c->words[w]);
		double out[8];
		for (int k = 0; k < 8; k++)
			out[k] = NAN;
		long got = series_unpack(bytes, len, 100, out, 100, 8);
		if (c->covers < 0) {
			is_int(got, -1, "block: %s: refused", c->what);
			continue;
		}
		is_int(got, c->covers, "block: %s: covers %ld seconds", c->what, c->covers);
		if (c->at >= 0)
			ok(near(out[c->at], c->value), "block: %s: second %lld is %g (%g)", c->what,
			   (long long)c->at, c->value, out[c->at]);
	}
	/* a truncated varint anywhere is refused */
	unsigned char cut[] = {0xe8, 0x07, 0x80};
	is_int(series_unpack(cut, sizeof(cut), 0, NULL, 0, 0), -1, "block: a token cut short");
}

/* --- rollups merged: the finer unit wins, sums saturate */

struct merge_case {
	const char *what;
	struct series_rollup into, r, want;
};

static const struct merge_case merge_cases[] = {
    {"into an empty one: a copy", {0, 0, 0, 0, 3}, {1, 4, 9, 3, 2}, {1, 4, 9, 3, 2}},
    {"an empty one: nothing", {1, 4, 9, 3, 2}, {0, 0, 0, 0, 0}, {1, 4, 9, 3, 2}},
    {"the same unit", {5, 7, 12, 2, 3}, {1, 9, 10, 2, 3}, {1, 9, 22, 4, 3}},
    {"whole seconds with thousandths", {5, 7, 12, 2, 3}, {1, 2, 3, 2, 0}, {1, 7000, 12003, 4, 0}},
    {"thousandths with tenths", {1, 2, 3, 2, 0}, {5, 7, 12, 2, 2}, {1, 700, 1203, 4, 0}},
    {"a sum saturates", {1, 1, INT64_MAX - 1, 2, 3}, {1, 1, 5, 1, 3}, {1, 1, INT64_MAX, 3, 3}},
    {"refining saturates",
     {INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2, 1, 3},
     {1, 1, 1, 1, 2},
     {1, INT64_MAX, INT64_MAX, 2, 2}},
};

static void test_merge(void)
{
	for (size_t i = 0; i < nitems(merge_cases); i++) {
		const struct merge_case *c = &merge_cases[i];
		struct series_rollup got = c->into;
		series_rollup_merge(&got, &c->r);
		ok(got.min == c->want.min && got.max == c->want.max && got.sum == c->want.sum &&
		       got.count == c->want.count && got.k == c->want.k,
		   "merge: %s: got %lld..%lld sum %lld count %lld k %d", c->what,
		   (long long)got.min, (long long)got.max, (long long)got.sum, (long long)got.count,
		   got.k);
	}
}

/* --- flush rows */

/* A row of the pieces of series ids[i], its values v[i] from offs[i] on. */
static void flush_row(struct buf *row, const int64_t *ids, const int64_t *offs,
                      const double (*v)[3], size_t n)
{
	struct buf body = {0}, tmp = {0};
	int64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		tmp.len = 0;
		series_pack(v[i], 3, &tmp);
		series_flush_piece_put(&body, ids[i] - prev, offs[i], &tmp);
		prev = ids[i];
	}
	row->len = 0;
	series_flush_row_put(row, n, &body);
	buf_free(&body);
	buf_free(&tmp);
}

struct sizes {
	int64_t id[8];
	size_t n, total;
};

static void add_size(void *arg, int64_t id, size_t len)
{
	struct sizes *sz = arg;
	if (sz->n < 8)
		sz->id[sz->n++] = id;
	sz->total += len;
}

static void test_flush_rows(void)
{
	const int64_t ids[] = {3, 7, 12}, offs[] = {0, 2, 7};
	const double v[][3] = {{1, 2, 3}, {10, NAN, 30}, {0.5, 0.25, 0.125}};
	struct buf row = {0};
	struct series_flush_rows f = {0};
	double out[10];

	flush_row(&row, ids, offs, v, 3);
	series_flush_rows_add(&f, 41, 1000, 10, row.p, row.len);
	is_int(f.n, 1, "flush: the row is kept");
	is_int(f.r[0].npieces, 3, "flush: with its three pieces");
	bool all = true;
	for (size_t i = 0; i < 3; i++) {
		for (int k = 0; k < 10; k++)
			out[k] = -1;
		all = all && series_flush_rows_unpack(&f, ids[i], out, 1000, 10);
		for (int k = 0; k < 10; k++) {
			int64_t at = k - offs[i];
			double want =
			    at >= 0 && at < 3 && !isnan(v[i][at]) ? series_round(v[i][at]) : -1;
			all = all && out[k] == want;
		}
	}
	ok(all, "flush: each series gets its values back at its offset");
	for (int k = 0; k < 10; k++)
		out[k] = -1;
	ok(series_flush_rows_unpack(&f, 5, out, 1000, 10) && out[0] == -1 && out[9] == -1,
	   "flush: a series without a piece is left alone");

	/* a second row (the next chunk) for one of them */
	const int64_t id2[] = {7}, off2[] = {1};
	const double v2[][3] = {{40, 50, 60}};
	flush_row(&row, id2, off2, v2, 1);
	series_flush_rows_add(&f, 42, 1010, 10, row.p, row.len);
	double wide[16];
	for (int k = 0; k < 16; k++)
		wide[k] = -1;
	series_flush_rows_unpack(&f, 7, wide, 1000, 16);
	ok(wide[2] == 10 && wide[3] == -1 && wide[4] == 30 && wide[10] == -1 && wide[11] == 40 &&
	       wide[13] == 60 && wide[14] == -1,
	   "flush: a window across two rows takes from both");
	is_int(f.max_id, 42, "flush: the newest row's id is kept");

	/* malformed rows are skipped, and the rows kept stay */
	flush_row(&row, ids, offs, v, 3);
	series_flush_rows_add(&f, 43, 1020, 10, row.p, row.len - 1);
	is_int(f.n, 2, "flush: a row cut short is skipped");
	series_flush_rows_add(&f, 44, 1020, 10, NULL, 0);
	is_int(f.n, 2, "flush: an empty row is skipped");
	unsigned char bad[16];
	size_t len = varint(bad, 1);
	len += varint(bad + len, 1);
	len += varint(bad + len, 3601);
	len += varint(bad + len, 0);
	series_flush_rows_add(&f, 45, 1020, 10, bad, len);
	is_int(f.n, 2, "flush: a piece starting past the hour is refused");
	len = varint(bad, 1000);
	series_flush_rows_add(&f, 46, 1020, 10, bad, len);
	is_int(f.n, 2, "flush: more pieces than bytes is refused");
	is_int(f.max_id, 42, "flush: skipped rows do not count");

	series_flush_rows_reset(&f);
	is_int(f.n, 0, "flush: reset forgets the rows");

	/* rows read for some series: only their pieces are copied, in a row of their size */
	const int64_t want[] = {2, 7, 12, 40};
	f.want = want;
	f.nwant = 4;
	flush_row(&row, ids, offs, v, 3);
	series_flush_rows_add(&f, 50, 1000, 10, row.p, row.len);
	ok(f.n == 1 && f.r[0].npieces == 2 && f.r[0].pieces[0].id == 7 &&
	       f.r[0].pieces[1].id == 12 &&
	       f.r[0].len == f.r[0].pieces[0].len + f.r[0].pieces[1].len,
	   "flush: of a row only the wanted series' pieces are kept (%zu bytes of %zu)", f.r[0].len,
	   row.len);
	for (int k = 0; k < 16; k++)
		wide[k] = -1;
	ok(series_flush_rows_unpack(&f, 12, wide, 1000, 16) && wide[7] == 0.5 && wide[9] == 0.125 &&
	       wide[10] == -1,
	   "flush: a wanted series' values come back");
	for (int k = 0; k < 16; k++)
		wide[k] = -1;
	series_flush_rows_unpack(&f, 3, wide, 1000, 16);
	ok(wide[0] == -1, "flush: one not wanted has none");
	f.nwant = 1;
	series_flush_rows_add(&f, 51, 1010, 10, row.p, row.len);
	ok(f.n == 2 && f.r[1].npieces == 0 && f.r[1].len == 0,
	   "flush: a row without a wanted piece is kept empty");
	f.max_row = 51;
	series_flush_rows_add(&f, 52, 1020, 10, row.p, row.len);
	ok(f.n == 2 && f.max_id == 51, "flush: rows past max_row are left out");
	series_flush_rows_free(&f);

	/* the sizes of a row's pieces, read straight from its bytes */
	struct sizes sz = {0};
	ok(series_flush_row_sizes(row.p, row.len, add_size, &sz) == 0 && sz.n == 3 &&
	       sz.id[0] == 3 && sz.id[2] == 12 && sz.total < row.len && sz.total > 3,
	   "flush: the sizes of each series' piece (%zu bytes in all)", sz.total);
	ok(series_flush_row_sizes(row.p, row.len - 1, add_size, &sz) < 0 &&
	       series_flush_row_sizes(NULL, 0, add_size, &sz) < 0,
	   "flush: sizes of a malformed row are refused");
	buf_free(&row);
}

int main(void)
{
	test_formats();
	test_blocks();
	test_merge();
	test_flush_rows();
	return done_testing();
}
