/* SPDX-License-Identifier: ISC */
/* The series store's packed formats: see series_pack.h. */
#include "series_pack.h"
#include "base/log.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t pow10s[4] = {1, 10, 100, 1000};

static void put_byte(struct buf *b, unsigned char c)
{
	buf_add(b, &c, 1);
}

static void put_varint(struct buf *b, uint64_t v)
{
	unsigned char *o = (unsigned char *)buf_room(b, 10);
	while (v >= 0x80) {
		*o++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*o++ = (unsigned char)v;
	b->len = (size_t)((char *)o - b->p);
}

static int get_varint(const unsigned char **pp, const unsigned char *end, uint64_t *out)
{
	const unsigned char *p = *pp;
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (p >= end)
			return -1;
		unsigned char c = *p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* --- blocks */

/* Zigzag on wrapping arithmetic: every difference of two int64 round-trips exactly. */
static uint64_t zz(uint64_t v)
{
	return (v << 1) ^ (0 - (v >> 63)); /* all ones when the sign bit is set */
}

static uint64_t unzz(uint64_t v)
{
	return (v >> 1) ^ (uint64_t)(-(int64_t)(v & 1));
}

/* v in thousandths, clamped; NaN is the caller's business. */
static int64_t fixed(double v)
{
	if (v > SERIES_MAX_VALUE)
		v = SERIES_MAX_VALUE;
	if (v < -SERIES_MAX_VALUE)
		v = -SERIES_MAX_VALUE;
	double m = v * 1000;
	return (int64_t)(m >= 0 ? m + 0.5 : m - 0.5);
}

double series_round(double v)
{
	return isnan(v) ? v : (double)fixed(v) / 1000;
}

/* The coarsest unit (10^(k-3)) every value is a whole multiple of: byte counts pack as
 * integers, percentages keep their decimals. */
static int scale_of(const double *v, size_t n)
{
	int k = 3;
	for (size_t i = 0; i < n && k > 0; i++) {
		if (isnan(v[i]))
			continue;
		int64_t f = fixed(v[i]);
		while (k > 0 && f % pow10s[k] != 0)
			k--;
	}
	return k;
}

enum { TOK_VALUE = 0, TOK_REPEAT = 1, TOK_GAP = 2 };

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* The largest unit every value is a whole multiple of, in thousandths: 1000 for counts,
 * 512000 for byte rates (sectors), 1 for decimals. Packing in it keeps deltas short. */
static int64_t unit_of(const double *v, size_t n)
{
	uint64_t g = 0;
	for (size_t i = 0; i < n && g != 1; i++) {
		if (isnan(v[i]))
			continue;
		int64_t f = fixed(v[i]);
		g = gcd(g, (uint64_t)(f < 0 ? -f : f));
	}
	return g ? (int64_t)g : 1;
}

void series_pack(const double *v, size_t n, struct buf *out)
{
	int64_t unit = unit_of(v, n);
	int64_t prev = 0;
	bool have = false;
	size_t i = 0;

	/* Format: varint unit, then the tokens. */
	put_varint(out, (uint64_t)unit);
	while (i < n) {
		size_t j = i + 1;
		if (isnan(v[i])) {
			while (j < n && isnan(v[j]))
				j++;
			put_varint(out, (uint64_t)(j - i - 1) << 2 | TOK_GAP);
		} else {
			int64_t x = fixed(v[i]) / unit;
			if (have && x == prev) {
				while (j < n && !isnan(v[j]) && fixed(v[j]) / unit == prev)
					j++;
				put_varint(out, (uint64_t)(j - i - 1) << 2 | TOK_REPEAT);
			} else {
				put_varint(out, zz((uint64_t)x - (uint64_t)prev) << 2 | TOK_VALUE);
				prev = x;
				have = true;
			}
		}
		i = j;
	}
}

long series_unpack(const void *data, size_t len, int64_t start, double *out, int64_t out_start,
                   size_t out_n)
{
	const unsigned char *p = data, *end = p + len;
	int64_t t = start, prev = 0, out_end = out_start + (int64_t)out_n;
	bool have = false;
	uint64_t unit;

	if (get_varint(&p, end, &unit) < 0 || unit == 0 || unit > (uint64_t)fixed(SERIES_MAX_VALUE))
		return -1;
	while (p < end) {
		uint64_t tok, n;
		if (get_varint(&p, end, &tok) < 0)
			return -1;
		n = (tok >> 2) + 1;
		/* a run longer than 2^32 seconds is no run of ours */
		if ((tok & 3) != TOK_VALUE && n > (uint64_t)1 << 32)
			return -1;
		switch (tok & 3) {
		case TOK_VALUE:
			prev = (int64_t)((uint64_t)prev + unzz(tok >> 2));
			have = true;
			n = 1;
			__attribute__((fallthrough)); /* the value, once */
		case TOK_REPEAT:
			if (!have)
				return -1;
			{
				int64_t a = t > out_start ? t : out_start;
				int64_t b = t + (int64_t)n < out_end ? t + (int64_t)n : out_end;
				double v = (double)(prev * (int64_t)unit) / 1000;
				for (int64_t u = a; u < b; u++)
					out[u - out_start] = v;
			}
			t += (int64_t)n;
			break;
		case TOK_GAP:
			t += (int64_t)n;
			break;
		default:
			return -1;
		}
	}
	return (long)(t - start);
}

int series_unpack_row(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct series_unpack_ctx *c = arg;
	if (series_unpack(data, len, start, c->vals, c->base, c->n) < 0)
		c->bad = true;
	return 0;
}

/* --- rollups */

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_mul10(int64_t v)
{
	int64_t r;
	if (__builtin_mul_overflow(v, 10, &r))
		return v > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* One unit finer (k - 1). */
static void rollup_refine(struct series_rollup *r)
{
	r->min = sat_mul10(r->min);
	r->max = sat_mul10(r->max);
	r->sum = sat_mul10(r->sum);
	r->k--;
}

void series_rollup_merge(struct series_rollup *into, const struct series_rollup *r)
{
	if (!r->count)
		return;
	if (!into->count) {
		*into = *r;
		return;
	}
	/* Different units (an hour of whole bytes next to one with decimals): the finer. */
	struct series_rollup x = *r;
	while (into->k > x.k)
		rollup_refine(into);
	while (x.k > into->k)
		rollup_refine(&x);
	if (x.min < into->min)
		into->min = x.min;
	if (x.max > into->max)
		into->max = x.max;
	into->sum = sat_add(into->sum, x.sum);
	into->count += x.count;
}

void series_rollups_of(const double *v, size_t n, size_t per_slot, struct series_rollup *out)
{
	int k = scale_of(v, n);
	for (size_t s = 0; s * per_slot < n; s++) {
		struct series_rollup *r = &out[s];
		memset(r, 0, sizeof(*r));
		r->k = k;
		for (size_t i = s * per_slot; i < n && i < (s + 1) * per_slot; i++) {
			if (isnan(v[i]))
				continue;
			int64_t x = fixed(v[i]) / pow10s[k];
			if (!r->count || x < r->min)
				r->min = x;
			if (!r->count || x > r->max)
				r->max = x;
			r->sum = sat_add(r->sum, x);
			r->count++;
		}
	}
}

void series_pack_rollups(const struct series_rollup *r, size_t n, struct buf *out)
{
	uint64_t prev_min = 0, skip = 0;
	int prev_k = -1;

	put_byte(out, 0); /* version */
	for (size_t i = 0; i < n; i++) {
		if (!r[i].count) {
			skip++;
			continue;
		}
		bool same = r[i].k == prev_k;
		put_varint(out, skip);
		put_varint(out, (uint64_t)r[i].count << 3 | (uint64_t)r[i].k << 1 | same);
		put_varint(out, zz(same ? (uint64_t)r[i].min - prev_min : (uint64_t)r[i].min));
		put_varint(out, (uint64_t)r[i].max - (uint64_t)r[i].min);
		/* small for a steady series: the sum over what count times the minimum gives */
		put_varint(out, (uint64_t)r[i].sum - (uint64_t)r[i].count * (uint64_t)r[i].min);
		prev_min = (uint64_t)r[i].min;
		prev_k = r[i].k;
		skip = 0;
	}
}

long series_unpack_rollups(const void *data, size_t len, struct series_rollup *r, size_t n)
{
	const unsigned char *p = data, *end = p + len;
	uint64_t prev_min = 0;
	size_t slot = 0;
	long set = 0;

	for (size_t i = 0; i < n; i++)
		memset(&r[i], 0, sizeof(r[i]));
	if (len < 1 || p[0] != 0)
		return -1;
	p++;
	while (p < end) {
		uint64_t skip, head, dmin, range, extra;
		if (get_varint(&p, end, &skip) < 0 || get_varint(&p, end, &head) < 0 ||
		    get_varint(&p, end, &dmin) < 0 || get_varint(&p, end, &range) < 0 ||
		    get_varint(&p, end, &extra) < 0)
			return -1;
		if (skip >= n || slot + skip >= n)
			return -1;
		slot += skip;
		uint64_t min = (head & 1) ? prev_min + unzz(dmin) : unzz(dmin);
		uint64_t count = head >> 3;
		r[slot].k = (int)((head >> 1) & 3);
		r[slot].count = (int64_t)count;
		r[slot].min = (int64_t)min;
		r[slot].max = (int64_t)(min + range);
		r[slot].sum = (int64_t)(count * min + extra);
		prev_min = min;
		slot++;
		set++;
	}
	return set;
}

void series_rollup_agg(const struct series_rollup *r, struct series_agg *a)
{
	if (!r->count) {
		memset(a, 0, sizeof(*a));
		return;
	}
	a->min = (double)(r->min * pow10s[r->k]) / 1000;
	a->max = (double)(r->max * pow10s[r->k]) / 1000;
	a->sum = (double)r->sum * (double)pow10s[r->k] / 1000;
	a->count = r->count;
}

/* --- flush rows */

void series_flush_piece_put(struct buf *body, int64_t id_delta, int64_t offset,
                            const struct buf *packed)
{
	put_varint(body, (uint64_t)id_delta);
	put_varint(body, (uint64_t)offset);
	put_varint(body, packed->len);
	buf_room(body, packed->len);
	memcpy(body->p + body->len, packed->p, packed->len);
	body->len += packed->len;
}

void series_flush_row_put(struct buf *out, size_t npieces, const struct buf *body)
{
	put_varint(out, npieces);
	buf_room(out, body->len);
	memcpy(out->p + out->len, body->p, body->len);
	out->len += body->len;
}

/* A walk over a flush row's pieces, straight from its bytes. */
struct piece_walk {
	const unsigned char *p, *end;
	uint64_t left;
	int64_t id, start;
};

static int walk_start(struct piece_walk *w, const void *data, size_t len, int64_t start)
{
	w->p = data;
	w->end = w->p + len;
	w->id = 0;
	w->start = start;
	/* SQLite gives NULL for an empty blob: refused here, as any row without a count. */
	return !data || get_varint(&w->p, w->end, &w->left) < 0 || w->left > len ? -1 : 0;
}

/* The next piece: 1, 0 at the end, -1 when the row is malformed. */
static int walk_next(struct piece_walk *w, struct series_flush_piece *out)
{
	uint64_t delta, off, len;
	if (!w->left)
		return 0;
	if (get_varint(&w->p, w->end, &delta) < 0 || get_varint(&w->p, w->end, &off) < 0 ||
	    get_varint(&w->p, w->end, &len) < 0 || len > (uint64_t)(w->end - w->p) || off > 3600)
		return -1;
	w->id += (int64_t)delta;
	*out = (struct series_flush_piece){w->id, w->start + (int64_t)off, w->p, (size_t)len};
	w->p += len;
	w->left--;
	return 1;
}

int series_flush_row_sizes(const void *data, size_t len,
                           void (*fn)(void *arg, int64_t id, size_t len), void *arg)
{
	struct piece_walk w;
	struct series_flush_piece pc;
	int rc;
	if (walk_start(&w, data, len, 0) < 0)
		return -1;
	while ((rc = walk_next(&w, &pc)) > 0)
		fn(arg, pc.id, pc.len);
	return rc;
}

/* Copies the pieces f wants of the row (data, len) into r, sorted by id as the row holds
 * them; -1 when it is malformed. */
static int flush_pieces(const struct series_flush_rows *f, struct series_flush_row *r,
                        const void *data, size_t len)
{
	struct piece_walk w;
	struct series_flush_piece pc;
	size_t cap, total = 0, k = 0;
	int rc;
	if (walk_start(&w, data, len, r->start) < 0)
		return -1;
	cap = f->want && f->nwant < w.left ? f->nwant : (size_t)w.left;
	r->pieces = xcalloc(cap ? cap : 1, sizeof(*r->pieces));
	while ((rc = walk_next(&w, &pc)) > 0) {
		/* ids rise within a row, as f->want does: one walk over both */
		while (f->want && k < f->nwant && f->want[k] < pc.id)
			k++;
		if (f->want && (k == f->nwant || f->want[k] != pc.id))
			continue;
		if (r->npieces == cap)
			return -1; /* an id twice */
		r->pieces[r->npieces++] = pc;
		total += pc.len;
	}
	if (rc < 0)
		return -1;
	/* Only what is wanted is kept: a query of 8 series of a big box holds 8 series' bytes. */
	r->data = xmalloc(total ? total : 1);
	r->len = total;
	for (size_t i = 0, off = 0; i < r->npieces; i++) {
		memcpy(r->data + off, r->pieces[i].p, r->pieces[i].len);
		r->pieces[i].p = r->data + off;
		off += r->pieces[i].len;
	}
	return 0;
}

static const struct series_flush_piece *piece_find(const struct series_flush_row *r, int64_t id)
{
	size_t lo = 0, hi = r->npieces;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->pieces[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->npieces && r->pieces[lo].id == id ? &r->pieces[lo] : NULL;
}

void series_flush_rows_reset(struct series_flush_rows *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->r[i].data);
		free(f->r[i].pieces);
	}
	f->n = 0;
	f->max_id = 0;
	f->loaded = false;
}

void series_flush_rows_free(struct series_flush_rows *f)
{
	series_flush_rows_reset(f);
	free(f->r);
	memset(f, 0, sizeof(*f));
}

int series_flush_rows_add(void *arg, int64_t id, int64_t start, int span, const void *data,
                          size_t len)
{
	struct series_flush_rows *f = arg;
	if (f->max_row && id > f->max_row)
		return 0;
	f->r = util_grow(f->r, &f->cap, f->n, sizeof(*f->r));
	struct series_flush_row *r = &f->r[f->n];
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->start = start;
	if (flush_pieces(f, r, data, len) < 0) {
		log_warn("series: flush row %lld is malformed; skipped", (long long)id);
		free(r->data);
		free(r->pieces);
		return 0;
	}
	if (id > f->max_id)
		f->max_id = id;
	f->n++;
	return 0;
}

bool series_flush_rows_unpack(const struct series_flush_rows *f, int64_t id, double *out,
                              int64_t out_start, size_t out_n)
{
	bool ok = true;
	for (size_t i = 0; i < f->n; i++) {
		const struct series_flush_piece *pc = piece_find(&f->r[i], id);
		if (pc && series_unpack(pc->p, pc->len, pc->start, out, out_start, out_n) < 0)
			ok = false;
	}
	return ok;
}
