/* The series store: rings in memory, packed rows on disk, a writer thread between them.
 * See series.h for the shape of it; the comments here say why things are done so. */
#define _GNU_SOURCE
#include "series.h"
#include "db/db.h"
#include "log.h"
#include "util.h"
#include "workq.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING_MASK (SERIES_RING - 1)
/* The part of the ring a query leaves to the disk although memory still holds it, so
 * a disk read may take this long before memory has moved past where it starts. */
#define QUERY_SLACK 64
/* Per-row cost besides the packed bytes, for the on-disk estimate (key, header, cell). */
#define ROW_OVERHEAD 16
/* Series per maintenance transaction, and the pause after each: a step holds the
 * database's write lock for a few milliseconds at most, and the pause lets the loop's
 * own writes in between. */
#define COMPACT_STEP   8
#define PRUNE_STEP     32
#define PURGE_STEP     16
#define MAINT_PAUSE_US 3000

static const int64_t pow10s[4] = {1, 10, 100, 1000};

/* --- packed formats */

void series_buf_free(struct series_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void buf_reserve(struct series_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

static void put_byte(struct series_buf *b, unsigned char c)
{
	buf_reserve(b, 1);
	b->p[b->len++] = c;
}

static void put_varint(struct series_buf *b, uint64_t v)
{
	buf_reserve(b, 10);
	while (v >= 0x80) {
		b->p[b->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (unsigned char)v;
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

void series_pack(const double *v, size_t n, struct series_buf *out)
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

static void rollup_merge(struct series_rollup *into, const struct series_rollup *r)
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

void series_pack_rollups(const struct series_rollup *r, size_t n, struct series_buf *out)
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

static void agg_add(struct series_agg *a, double v)
{
	if (!a->count || v < a->min)
		a->min = v;
	if (!a->count || v > a->max)
		a->max = v;
	a->sum += v;
	a->count++;
}

static void agg_merge(struct series_agg *a, const struct series_agg *b)
{
	if (!b->count)
		return;
	if (!a->count || b->min < a->min)
		a->min = b->min;
	if (!a->count || b->max > a->max)
		a->max = b->max;
	a->sum += b->sum;
	a->count += b->count;
}

/* --- flush rows: one row per flush holds every series' seconds, so a flush dirties a
 * page or two of the database instead of one per series. Format: varint count, then per
 * series in ascending id: varint id delta, varint offset of its first second from the
 * row's start, varint length, and that many bytes of series_pack(). */

struct piece {
	int64_t id, start;
	const unsigned char *p;
	size_t len;
};

/* A flush row read back, with its pieces (pointing into data), sorted by id. */
struct frow {
	int64_t id, start;
	unsigned char *data;
	size_t len;
	struct piece *pieces;
	size_t npieces;
};

struct frows {
	int64_t hour;
	bool loaded;
	int64_t max_id;
	struct frow *r;
	size_t n, cap;
};

static long flush_pieces(struct frow *r)
{
	const unsigned char *p = r->data, *end = r->data + r->len;
	uint64_t n, delta, off, len;
	int64_t id = 0;
	if (get_varint(&p, end, &n) < 0 || n > r->len)
		return -1;
	r->pieces = xcalloc(n ? n : 1, sizeof(*r->pieces));
	for (uint64_t i = 0; i < n; i++) {
		if (get_varint(&p, end, &delta) < 0 || get_varint(&p, end, &off) < 0 ||
		    get_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p) || off > 3600)
			return -1;
		id += (int64_t)delta;
		r->pieces[i] = (struct piece){id, r->start + (int64_t)off, p, (size_t)len};
		p += len;
	}
	r->npieces = (size_t)n;
	return (long)n;
}

static const struct piece *piece_find(const struct frow *r, int64_t id)
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

static void frows_reset(struct frows *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->r[i].data);
		free(f->r[i].pieces);
	}
	f->n = 0;
	f->max_id = 0;
	f->loaded = false;
}

static void frows_free(struct frows *f)
{
	frows_reset(f);
	free(f->r);
	memset(f, 0, sizeof(*f));
}

static int copy_frow(void *arg, int64_t id, int64_t start, int span, const void *data, size_t len)
{
	struct frows *f = arg;
	f->r = util_grow(f->r, &f->cap, f->n, sizeof(*f->r));
	struct frow *r = &f->r[f->n];
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->start = start;
	r->len = len;
	r->data = xmalloc(len ? len : 1);
	/* SQLite gives NULL for an empty blob; flush_pieces then refuses the row. */
	if (len)
		memcpy(r->data, data, len);
	if (flush_pieces(r) < 0) {
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

/* Unpacks the piece of series id in each row into out (out_n seconds from out_start). */
static bool frows_unpack(const struct frows *f, int64_t id, double *out, int64_t out_start,
                         size_t out_n)
{
	bool ok = true;
	for (size_t i = 0; i < f->n; i++) {
		const struct piece *pc = piece_find(&f->r[i], id);
		if (pc && series_unpack(pc->p, pc->len, pc->start, out, out_start, out_n) < 0)
			ok = false;
	}
	return ok;
}

/* --- the writer thread: owns the samples connection and everything it does */

enum { WB_FLUSH, WB_PURGE };

struct wrow {
	int64_t start;
	int span;
	size_t off, len;
};

struct wpiece {
	int64_t series;
	size_t len;
};

struct wnew {
	int64_t id, dataset;
	char *key;
};

struct wbatch {
	int kind;
	struct wnew *news;
	size_t nnews, news_cap;
	struct wrow *rows; /* flush rows, data in data */
	size_t nrows, rows_cap;
	struct wpiece *pieces; /* what each series got, for the byte counts */
	size_t npieces, pieces_cap;
	struct series_buf data;
	int64_t from; /* the first second it holds */
	int64_t upto; /* every second before it is in this batch or an earlier one */
	int64_t *ids; /* WB_PURGE */
	size_t nids, ids_cap;
	struct wbatch *next;
};

struct acct {
	int64_t id, rows, bytes;
};

static struct {
	pthread_t thread;
	bool started;
	pthread_mutex_t mu; /* guards the queue, the flags, acct and retention */
	pthread_cond_t wake, idle_cv;
	struct wbatch *head, *tail;
	bool stop, idle, unpaced;
	/* the writer's: flushes the disk refused, oldest first, tried again before the next */
	struct wbatch *failed, *failed_tail;
	bool failed_full; /* the last refusal was for want of space */
	struct series_retention ret;
	bool prune_requested;
	struct acct *acct; /* sorted by id */
	size_t nacct, acct_cap;

	/* the writer's own, touched by no other thread once it runs */
	struct db_samples *ds;
	int64_t upto, now, last_prune_hour;
	int64_t *hours; /* hours the flush rows cover, to pack once complete; sorted */
	size_t nhours, hours_cap;
	int64_t *ids; /* series in the database; sorted */
	size_t nids, ids_cap;
	int64_t *purge;
	size_t npurge, purge_cap;
	bool prune_due, accounted;
	size_t prune_pos;
	/* the hour being packed: its flush rows, its series, how far it got */
	struct frows cmp;
	int64_t *cmp_series;
	size_t cmp_n, cmp_cap, cmp_pos;
	bool cmp_active;
	double hour[3600];
	struct series_buf buf;
} writer;

/* Inserts v into a sorted array unless it is there; returns whether it was added. */
static bool sorted_add(int64_t **arr, size_t *n, size_t *cap, int64_t v)
{
	size_t lo = 0, hi = *n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((*arr)[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *n && (*arr)[lo] == v)
		return false;
	*arr = util_grow(*arr, cap, *n, sizeof(**arr));
	memmove(&(*arr)[lo + 1], &(*arr)[lo], (*n - lo) * sizeof(**arr));
	(*arr)[lo] = v;
	(*n)++;
	return true;
}

static bool sorted_has(const int64_t *arr, size_t n, int64_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (arr[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && arr[lo] == v;
}

static void sorted_remove(int64_t *arr, size_t *n, int64_t v)
{
	for (size_t i = 0; i < *n; i++) {
		if (arr[i] == v) {
			memmove(&arr[i], &arr[i + 1], (*n - i - 1) * sizeof(*arr));
			(*n)--;
			return;
		}
	}
}

/* writer.mu held. */
static struct acct *acct_find(int64_t id, bool create)
{
	size_t lo = 0, hi = writer.nacct;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (writer.acct[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < writer.nacct && writer.acct[lo].id == id)
		return &writer.acct[lo];
	if (!create)
		return NULL;
	writer.acct = util_grow(writer.acct, &writer.acct_cap, writer.nacct, sizeof(*writer.acct));
	memmove(&writer.acct[lo + 1], &writer.acct[lo], (writer.nacct - lo) * sizeof(*writer.acct));
	writer.acct[lo] = (struct acct){id, 0, 0};
	writer.nacct++;
	return &writer.acct[lo];
}

/* What the series' packed hours and rollups take; its share of the flush rows not packed
 * yet is counted as they come. */
static void acct_measure(int64_t id)
{
	int64_t rows, bytes;
	if (db_samples_bytes(writer.ds, id, &rows, &bytes) < 0)
		return;
	pthread_mutex_lock(&writer.mu);
	struct acct *a = acct_find(id, true);
	a->rows = rows;
	a->bytes = bytes;
	pthread_mutex_unlock(&writer.mu);
}

static void batch_free(struct wbatch *b)
{
	for (size_t i = 0; i < b->nnews; i++)
		free(b->news[i].key);
	free(b->news);
	free(b->rows);
	free(b->pieces);
	free(b->ids);
	series_buf_free(&b->data);
	free(b);
}

/* One flush in one transaction; false when the disk refused it (nothing stored). */
static bool writer_flush(struct wbatch *b)
{
	int rc = db_samples_begin(writer.ds);
	for (size_t i = 0; rc == 0 && i < b->nnews; i++)
		rc = db_samples_series_insert(writer.ds, b->news[i].id, b->news[i].dataset,
		                              b->news[i].key);
	for (size_t i = 0; rc == 0 && i < b->nrows; i++) {
		const struct wrow *r = &b->rows[i];
		rc =
		    db_samples_recent_add(writer.ds, r->start, r->span, b->data.p + r->off, r->len);
	}
	if (db_samples_end(writer.ds, rc) < 0) {
		writer.failed_full = db_samples_full(writer.ds);
		return false;
	}
	for (size_t i = 0; i < b->nnews; i++)
		sorted_add(&writer.ids, &writer.nids, &writer.ids_cap, b->news[i].id);
	pthread_mutex_lock(&writer.mu);
	for (size_t i = 0; i < b->npieces; i++)
		acct_find(b->pieces[i].series, true)->bytes += (int64_t)b->pieces[i].len;
	pthread_mutex_unlock(&writer.mu);
	for (size_t i = 0; i < b->nrows; i++)
		sorted_add(&writer.hours, &writer.nhours, &writer.hours_cap,
		           b->rows[i].start - b->rows[i].start % 3600);
	/* Hours are packed only up to here: a refused flush before it holds them back. */
	if (b->upto > writer.upto)
		writer.upto = b->upto;
	return true;
}

static const char *refusal(void)
{
	return writer.failed_full ? "the state filesystem is full" : "a database error";
}

/* The refused flushes, oldest first, until one is refused again. */
static void writer_retry(void)
{
	int64_t from = writer.failed ? writer.failed->from : 0, upto = 0;
	while (writer.failed && writer_flush(writer.failed)) {
		struct wbatch *b = writer.failed;
		upto = b->upto;
		writer.failed = b->next;
		if (!writer.failed)
			writer.failed_tail = NULL;
		batch_free(b);
	}
	if (upto)
		log_info("series: the samples from %lld to %lld, kept in memory while the disk "
		         "refused them, are stored now",
		         (long long)from, (long long)upto);
}

/* Keeps a refused flush to try again, but no more than memory holds (SERIES_RING
 * seconds): older ones are given up, logged; the series they introduce move on. */
static void writer_keep(struct wbatch *b)
{
	if (!writer.failed)
		log_err("series: the samples from %lld on could not be stored (%s); they are kept "
		        "in memory and tried again with every flush",
		        (long long)b->from, refusal());
	b->next = NULL;
	if (writer.failed_tail)
		writer.failed_tail->next = b;
	else
		writer.failed = b;
	writer.failed_tail = b;
	while (writer.failed != b && writer.failed->upto <= b->upto - SERIES_RING) {
		struct wbatch *old = writer.failed;
		writer.failed = old->next;
		log_err("series: the samples from %lld to %lld are lost: the disk refused them "
		        "(%s) for longer than memory holds them",
		        (long long)old->from, (long long)old->upto, refusal());
		for (size_t i = 0; i < old->nnews; i++) {
			writer.failed->news =
			    util_grow(writer.failed->news, &writer.failed->news_cap,
			              writer.failed->nnews, sizeof(*writer.failed->news));
			writer.failed->news[writer.failed->nnews++] = old->news[i];
		}
		old->nnews = 0;
		batch_free(old);
	}
}

struct unpack_ctx {
	double *vals;
	int64_t base;
	size_t n;
	bool bad;
};

static int unpack_row(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct unpack_ctx *c = arg;
	if (series_unpack(data, len, start, c->vals, c->base, c->n) < 0)
		c->bad = true;
	return 0;
}

static int unpack_rollup_row(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct series_rollup *r = arg;
	if (series_unpack_rollups(data, len, r, 24) < 0)
		memset(r, 0, 24 * sizeof(*r));
	return 0;
}

/* Packs the hour [hour, hour+3600) of one series from the flush rows in writer.cmp: one block
 * of seconds, one row of minute rollups, and the hour's entry in the day's row. A block
 * packed before (a clock that stepped back) takes part, so packing again is harmless. */
static int writer_compact(int64_t series, int64_t hour)
{
	struct unpack_ctx c = {writer.hour, hour, 3600, false};
	for (int i = 0; i < 3600; i++)
		writer.hour[i] = NAN;
	if (db_samples_range(writer.ds, DB_SAMPLES_SECONDS, series, hour, hour + 1, unpack_row,
	                     &c) < 0)
		return -1;
	if (!frows_unpack(&writer.cmp, series, writer.hour, hour, 3600) || c.bad)
		log_warn("series: %lld: malformed samples in the hour at %lld skipped",
		         (long long)series, (long long)hour);
	int last = 3599;
	while (last >= 0 && isnan(writer.hour[last]))
		last--;
	if (last < 0)
		return 0;

	writer.buf.len = 0;
	series_pack(writer.hour, (size_t)last + 1, &writer.buf);
	if (db_samples_put(writer.ds, DB_SAMPLES_SECONDS, series, hour, 3600, writer.buf.p,
	                   writer.buf.len) < 0)
		return -1;

	struct series_rollup minutes[60], total = {0}, day[24];
	series_rollups_of(writer.hour, 3600, 60, minutes);
	for (int i = 0; i < 60; i++)
		rollup_merge(&total, &minutes[i]);
	writer.buf.len = 0;
	series_pack_rollups(minutes, 60, &writer.buf);
	if (db_samples_put(writer.ds, DB_SAMPLES_MINUTES, series, hour, 0, writer.buf.p,
	                   writer.buf.len) < 0)
		return -1;

	int64_t d = hour - hour % 86400;
	memset(day, 0, sizeof(day));
	if (db_samples_range(writer.ds, DB_SAMPLES_HOURS, series, d, d + 1, unpack_rollup_row,
	                     day) < 0)
		return -1;
	day[(hour - d) / 3600] = total;
	writer.buf.len = 0;
	series_pack_rollups(day, 24, &writer.buf);
	return db_samples_put(writer.ds, DB_SAMPLES_HOURS, series, d, 0, writer.buf.p,
	                      writer.buf.len);
}

/* One step of packing the oldest complete hour: read its flush rows, then a few series
 * per transaction, then drop the rows. A crash in between leaves the rows: the hour is
 * packed again at the next start, to the same result. True when a step was done. */
static bool writer_compact_step(void)
{
	if (!writer.cmp_active) {
		if (writer.nhours == 0 || writer.hours[0] + 3600 > writer.upto)
			return false;
		int64_t hour = writer.hours[0];
		memmove(writer.hours, writer.hours + 1,
		        (writer.nhours - 1) * sizeof(*writer.hours));
		writer.nhours--;
		frows_reset(&writer.cmp);
		writer.cmp.hour = hour;
		writer.cmp_n = writer.cmp_pos = 0;
		if (db_samples_recent_range(writer.ds, hour, hour + 3600, copy_frow, &writer.cmp) <
		    0) {
			log_err("series: the hour at %lld cannot be read; packed at the next start",
			        (long long)hour);
			frows_reset(&writer.cmp);
			return true;
		}
		/* Deleted series' pieces are left behind: they go with the rows. */
		for (size_t i = 0; i < writer.cmp.n; i++)
			for (size_t k = 0; k < writer.cmp.r[i].npieces; k++)
				if (sorted_has(writer.ids, writer.nids,
				               writer.cmp.r[i].pieces[k].id))
					sorted_add(&writer.cmp_series, &writer.cmp_n,
					           &writer.cmp_cap, writer.cmp.r[i].pieces[k].id);
		writer.cmp_active = true;
		return true;
	}
	int64_t hour = writer.cmp.hour;
	if (writer.cmp_pos < writer.cmp_n) {
		size_t n = writer.cmp_n - writer.cmp_pos < COMPACT_STEP
		               ? writer.cmp_n - writer.cmp_pos
		               : COMPACT_STEP;
		int rc = db_samples_begin(writer.ds);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = writer_compact(writer.cmp_series[writer.cmp_pos + i], hour);
		if (db_samples_end(writer.ds, rc) < 0)
			log_err("series: packing the hour at %lld failed; its flushes stay",
			        (long long)hour);
		for (size_t i = 0; i < n; i++)
			acct_measure(writer.cmp_series[writer.cmp_pos + i]);
		writer.cmp_pos += n;
		return true;
	}
	int rc = db_samples_begin(writer.ds);
	if (rc == 0)
		rc = db_samples_recent_delete(writer.ds, hour, hour + 3600, writer.cmp.max_id);
	db_samples_end(writer.ds, rc);
	frows_reset(&writer.cmp);
	writer.cmp_active = false;
	/* An hour is done: time to prune, once an hour. */
	int64_t h = writer.now / 3600;
	if (h != writer.last_prune_hour) {
		writer.last_prune_hour = h;
		writer.prune_due = true;
	}
	return true;
}

static bool writer_prune_step(void)
{
	pthread_mutex_lock(&writer.mu);
	if (writer.prune_requested) {
		writer.prune_requested = false;
		writer.prune_due = true;
		writer.prune_pos = 0;
	}
	struct series_retention r = writer.ret;
	pthread_mutex_unlock(&writer.mu);
	if (!writer.prune_due || writer.now == 0)
		return false;

	/* A row goes when all it covers is past retention: seconds and minutes rows cover an
	 * hour, hour rows a day. Queries hide what is past retention in the rows kept. */
	int64_t cut_s = writer.now - r.second_h * 3600, cut_m = writer.now - r.minute_h * 3600;
	int64_t cut_h = writer.now - r.hour_h * 3600;
	size_t end = writer.prune_pos + PRUNE_STEP < writer.nids ? writer.prune_pos + PRUNE_STEP
	                                                         : writer.nids;
	int rc = db_samples_begin(writer.ds);
	/* Flush rows never packed (an hour that failed) go with the seconds' retention. */
	if (rc == 0 && writer.prune_pos == 0 && !writer.cmp_active)
		rc = db_samples_recent_delete(writer.ds, 0, cut_s - 3600 + 1, INT64_MAX);
	for (size_t i = writer.prune_pos; rc == 0 && i < end; i++) {
		int64_t s = writer.ids[i];
		rc = db_samples_delete(writer.ds, DB_SAMPLES_SECONDS, s, 0, cut_s - 3600 + 1);
		if (rc == 0)
			rc = db_samples_delete(writer.ds, DB_SAMPLES_MINUTES, s, 0,
			                       cut_m - 3600 + 1);
		if (rc == 0)
			rc =
			    db_samples_delete(writer.ds, DB_SAMPLES_HOURS, s, 0, cut_h - 86400 + 1);
	}
	if (db_samples_end(writer.ds, rc) < 0)
		log_err("series: pruning failed; it is tried again in an hour");
	for (size_t i = writer.prune_pos; i < end; i++)
		acct_measure(writer.ids[i]);
	writer.prune_pos = end;
	if (writer.prune_pos >= writer.nids) {
		writer.prune_due = false;
		writer.prune_pos = 0;
	}
	return true;
}

static bool writer_purge_step(void)
{
	if (writer.npurge == 0)
		return false;
	size_t n = writer.npurge < PURGE_STEP ? writer.npurge : PURGE_STEP;
	int rc = db_samples_begin(writer.ds);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		for (int level = 0; rc == 0 && level < DB_SAMPLES_LEVELS; level++)
			rc = db_samples_delete(writer.ds, level, writer.purge[i], 0, INT64_MAX);
		if (rc == 0)
			rc = db_samples_series_delete(writer.ds, writer.purge[i]);
	}
	if (db_samples_end(writer.ds, rc) < 0) {
		log_err("series: purging deleted series failed; retrying later");
		return true;
	}
	pthread_mutex_lock(&writer.mu);
	for (size_t i = 0; i < n; i++) {
		struct acct *a = acct_find(writer.purge[i], false);
		if (a) {
			size_t at = (size_t)(a - writer.acct);
			memmove(a, a + 1, (writer.nacct - at - 1) * sizeof(*a));
			writer.nacct--;
		}
	}
	pthread_mutex_unlock(&writer.mu);
	memmove(writer.purge, writer.purge + n, (writer.npurge - n) * sizeof(*writer.purge));
	writer.npurge -= n;
	return true;
}

static bool writer_account_step(void)
{
	if (writer.accounted)
		return false;
	/* Once after start: what each series holds on disk already. */
	for (size_t i = 0; i < writer.nids; i++)
		acct_measure(writer.ids[i]);
	writer.accounted = true;
	return true;
}

static void writer_batch(struct wbatch *b)
{
	if (b->kind == WB_PURGE) {
		for (size_t i = 0; i < b->nids; i++) {
			sorted_remove(writer.ids, &writer.nids, b->ids[i]);
			writer.purge = util_grow(writer.purge, &writer.purge_cap, writer.npurge,
			                         sizeof(*writer.purge));
			writer.purge[writer.npurge++] = b->ids[i];
		}
		writer.prune_pos = 0; /* the list moved under the walk */
		batch_free(b);
		return;
	}
	writer.now = b->upto;
	writer_retry();
	if (writer.failed || !writer_flush(b)) {
		writer_keep(b);
		return;
	}
	batch_free(b);
}

static void *writer_main(void *arg)
{
	pthread_mutex_lock(&writer.mu);
	for (;;) {
		if (writer.head) {
			struct wbatch *b = writer.head;
			writer.head = b->next;
			if (!writer.head)
				writer.tail = NULL;
			writer.idle = false;
			pthread_mutex_unlock(&writer.mu);
			writer_batch(b);
			pthread_mutex_lock(&writer.mu);
			continue;
		}
		if (writer.stop)
			break;
		writer.idle = false;
		pthread_mutex_unlock(&writer.mu);
		/* Maintenance, one small step at a time; batches always go first. */
		bool did = writer_account_step() || writer_purge_step() || writer_compact_step() ||
		           writer_prune_step();
		if (did && !writer.unpaced)
			usleep(MAINT_PAUSE_US);
		pthread_mutex_lock(&writer.mu);
		if (did)
			continue;
		if (writer.head || writer.stop || writer.prune_requested)
			continue;
		writer.idle = true;
		pthread_cond_broadcast(&writer.idle_cv);
		pthread_cond_wait(&writer.wake, &writer.mu);
	}
	pthread_mutex_unlock(&writer.mu);
	/* Stopping: a last try for what the disk refused; what stays refused is lost. */
	writer_retry();
	for (struct wbatch *b = writer.failed; b; b = b->next)
		log_err("series: stopping: the samples from %lld to %lld are lost (%s)",
		        (long long)b->from, (long long)b->upto, refusal());
	pthread_mutex_lock(&writer.mu);
	writer.idle = true;
	pthread_cond_broadcast(&writer.idle_cv);
	pthread_mutex_unlock(&writer.mu);
	return NULL;
}

static void writer_enqueue(struct wbatch *b)
{
	pthread_mutex_lock(&writer.mu);
	if (writer.tail)
		writer.tail->next = b;
	else
		writer.head = b;
	writer.tail = b;
	writer.idle = false;
	pthread_cond_signal(&writer.wake);
	pthread_mutex_unlock(&writer.mu);
}

/* --- the loop's side: series in memory */

struct series {
	int64_t id, dataset;
	char *key;
	double *ring;  /* SERIES_RING seconds, NaN: no value; NULL until the first value */
	double staged; /* the value put for the second being collected */
	bool has_staged;
	bool sent;    /* its row is in the database or on its way */
	bool dropped; /* its dataset is gone; freed with the last reference */
	int refs;
};

struct sub {
	series_commit_fn fn;
	void *arg;
};

static struct {
	bool ready;
	char *db_path;
	struct workq *wq;
	struct series **all;
	size_t n, cap;
	int64_t next_id;
	int64_t newest, oldest; /* the seconds memory holds: [oldest, newest] */
	int64_t flushed;        /* seconds before this went to the writer */
	struct series_retention ret;
	struct sub *subs;
	size_t nsubs, subs_cap;
	bool notifying;
	pthread_mutex_t readers_mu; /* the pool of read connections of the helper threads */
	struct db_samples **readers;
	size_t nreaders, readers_cap;
} store = {.readers_mu = PTHREAD_MUTEX_INITIALIZER};

static void series_free(struct series *s)
{
	free(s->key);
	free(s->ring);
	free(s);
}

void series_ref(struct series *s)
{
	s->refs++;
}

void series_unref(struct series *s)
{
	if (--s->refs == 0)
		series_free(s);
}

static struct series *series_new(int64_t id, int64_t dataset, const char *key, bool sent)
{
	struct series *s = xcalloc(1, sizeof(*s));
	s->id = id;
	s->dataset = dataset;
	s->key = xstrdup(key);
	s->sent = sent;
	s->refs = 1;
	store.all = util_grow(store.all, &store.cap, store.n, sizeof(*store.all));
	store.all[store.n++] = s;
	if (id >= store.next_id)
		store.next_id = id + 1;
	return s;
}

static int load_series(void *arg, int64_t id, int64_t dataset, const char *key)
{
	series_new(id, dataset, key, true);
	sorted_add(&writer.ids, &writer.nids, &writer.ids_cap, id);
	return 0;
}

static int load_hour(void *arg, int64_t hour)
{
	sorted_add(&writer.hours, &writer.nhours, &writer.hours_cap, hour);
	return 0;
}

int series_init(const struct series_config *cfg, char *err, size_t errlen)
{
	memset(&writer, 0, sizeof(writer));
	pthread_mutex_init(&writer.mu, NULL);
	pthread_cond_init(&writer.wake, NULL);
	pthread_cond_init(&writer.idle_cv, NULL);
	writer.ret = cfg->retention;
	writer.unpaced = cfg->unpaced;
	writer.last_prune_hour = -1;
	store.ret = cfg->retention;
	store.db_path = xstrdup(cfg->db_path);
	store.wq = cfg->wq;
	store.next_id = 1;

	writer.ds = db_samples_open(cfg->db_path, false, err, errlen);
	if (!writer.ds)
		return -1;
	/* Before the writer runs, so both lists are the writer's from then on. */
	if (db_samples_series_list(writer.ds, load_series, NULL) < 0 ||
	    db_samples_recent_hours(writer.ds, load_hour, NULL) < 0) {
		snprintf(err, errlen, "%s: cannot read the analytics series", cfg->db_path);
		return -1;
	}
	if (pthread_create(&writer.thread, NULL, writer_main, NULL) != 0) {
		snprintf(err, errlen, "cannot start the samples writer: %s", strerror(errno));
		return -1;
	}
	writer.started = true;
	store.ready = true;
	log_info("series: %zu series on disk, %zu hours to pack", store.n, writer.nhours);
	return 0;
}

/* --- flushing */

/* Appends the piece of series s for the seconds [a, e) to body; false when it has no
 * value there. prev_id is the id of the piece before (for the delta). */
static bool flush_piece(struct series_buf *body, struct series_buf *tmp, const struct series *s,
                        int64_t row_start, int64_t a, int64_t e, int64_t *prev_id)
{
	while (a < e && isnan(s->ring[a & RING_MASK]))
		a++;
	while (e > a && isnan(s->ring[(e - 1) & RING_MASK]))
		e--;
	if (a >= e)
		return false;
	double v[SERIES_CHUNK];
	for (int64_t u = a; u < e; u++)
		v[u - a] = s->ring[u & RING_MASK];
	tmp->len = 0;
	series_pack(v, (size_t)(e - a), tmp);
	put_varint(body, (uint64_t)(s->id - *prev_id));
	put_varint(body, (uint64_t)(a - row_start));
	put_varint(body, tmp->len);
	buf_reserve(body, tmp->len);
	memcpy(body->p + body->len, tmp->p, tmp->len);
	body->len += tmp->len;
	*prev_id = s->id;
	return true;
}

/* Hands the seconds [store.flushed, upto) to the writer: one flush row per 10-second chunk
 * (normally just one), holding every series' values, so no row ever crosses an hour. */
static void flush_upto(int64_t upto)
{
	static struct series_buf body, tmp;
	if (!store.ready || upto <= store.flushed)
		return;
	struct wbatch *b = xcalloc(1, sizeof(*b));
	b->kind = WB_FLUSH;
	b->upto = upto;
	for (size_t i = 0; i < store.n; i++) {
		struct series *s = store.all[i];
		if (!s->sent) {
			b->news = util_grow(b->news, &b->news_cap, b->nnews, sizeof(*b->news));
			b->news[b->nnews++] = (struct wnew){s->id, s->dataset, xstrdup(s->key)};
			s->sent = true;
		}
	}
	int64_t lo = store.flushed > upto - SERIES_RING ? store.flushed : upto - SERIES_RING;
	for (int64_t c = lo - lo % SERIES_CHUNK; c < upto; c += SERIES_CHUNK) {
		int64_t a = c > lo ? c : lo, e = c + SERIES_CHUNK < upto ? c + SERIES_CHUNK : upto;
		int64_t prev_id = 0;
		size_t count = 0;
		body.len = 0;
		/* store.all is in id order: series are made with rising ids and dropped in place.
		 */
		for (size_t i = 0; i < store.n; i++) {
			struct series *s = store.all[i];
			size_t before = body.len;
			if (!s->ring || !flush_piece(&body, &tmp, s, a, a, e, &prev_id))
				continue;
			count++;
			b->pieces =
			    util_grow(b->pieces, &b->pieces_cap, b->npieces, sizeof(*b->pieces));
			b->pieces[b->npieces++] = (struct wpiece){s->id, body.len - before};
		}
		if (!count)
			continue;
		b->rows = util_grow(b->rows, &b->rows_cap, b->nrows, sizeof(*b->rows));
		struct wrow *r = &b->rows[b->nrows++];
		r->start = a;
		r->span = (int)(e - a);
		r->off = b->data.len;
		put_varint(&b->data, count);
		buf_reserve(&b->data, body.len);
		memcpy(b->data.p + b->data.len, body.p, body.len);
		b->data.len += body.len;
		r->len = b->data.len - r->off;
	}
	b->from = lo;
	store.flushed = upto;
	writer_enqueue(b);
}

void series_put(struct series *s, int64_t t, double v)
{
	/* Staged until series_commit(t): flushing may still need the slot t overwrites. */
	s->staged = series_round(v);
	s->has_staged = true;
}

void series_commit(int64_t t)
{
	if (store.newest && t <= store.newest) {
		/* The clock stepped back: what memory holds is flushed, then it starts afresh. */
		flush_upto(store.newest + 1);
		for (size_t i = 0; i < store.n; i++)
			for (int j = 0; store.all[i]->ring && j < SERIES_RING; j++)
				store.all[i]->ring[j] = NAN;
		store.newest = store.oldest = store.flushed = 0;
	}
	/* A jump past the current chunk: flush it before its seconds could be overwritten. */
	if (store.newest && t / SERIES_CHUNK != store.newest / SERIES_CHUNK)
		flush_upto(store.newest + 1);
	int64_t from = store.newest ? store.newest + 1 : t;
	if (t - from > SERIES_RING)
		from = t - SERIES_RING;
	for (size_t i = 0; i < store.n; i++) {
		struct series *s = store.all[i];
		if (!s->ring && s->has_staged) {
			s->ring = xmalloc(SERIES_RING * sizeof(*s->ring));
			for (int j = 0; j < SERIES_RING; j++)
				s->ring[j] = NAN;
		}
		if (!s->ring)
			continue;
		for (int64_t u = from; u < t; u++)
			s->ring[u & RING_MASK] = NAN;
		s->ring[t & RING_MASK] = s->has_staged ? s->staged : NAN;
		s->has_staged = false;
	}
	store.newest = t;
	if (!store.oldest)
		store.oldest = t;
	else if (t - store.oldest >= SERIES_RING)
		store.oldest = t - SERIES_RING + 1;
	if (!store.flushed)
		store.flushed = t;
	if ((t + 1) % SERIES_CHUNK == 0)
		flush_upto(t + 1);

	store.notifying = true;
	for (size_t i = 0; i < store.nsubs; i++)
		if (store.subs[i].fn)
			store.subs[i].fn(store.subs[i].arg, t);
	store.notifying = false;
	size_t n = 0;
	for (size_t i = 0; i < store.nsubs; i++)
		if (store.subs[i].fn)
			store.subs[n++] = store.subs[i];
	store.nsubs = n;
}

int64_t series_newest(void)
{
	return store.newest;
}

int64_t series_now(void)
{
	return store.newest ? store.newest + 1 : util_now();
}

void series_subscribe(series_commit_fn fn, void *arg)
{
	store.subs = util_grow(store.subs, &store.subs_cap, store.nsubs, sizeof(*store.subs));
	store.subs[store.nsubs++] = (struct sub){fn, arg};
}

void series_unsubscribe(series_commit_fn fn, void *arg)
{
	for (size_t i = 0; i < store.nsubs; i++) {
		if (store.subs[i].fn != fn || store.subs[i].arg != arg)
			continue;
		if (store.notifying) {
			store.subs[i].fn = NULL;
		} else {
			memmove(&store.subs[i], &store.subs[i + 1],
			        (store.nsubs - i - 1) * sizeof(*store.subs));
			store.nsubs--;
		}
		return;
	}
}

/* --- catalog of series */

struct series *series_open(int64_t dataset, const char *key)
{
	for (size_t i = 0; i < store.n; i++)
		if (store.all[i]->dataset == dataset && strcmp(store.all[i]->key, key) == 0)
			return store.all[i];
	return series_new(store.next_id, dataset, key, false);
}

void series_each(int64_t dataset, void (*cb)(void *arg, struct series *s), void *arg)
{
	for (size_t i = 0; i < store.n; i++)
		if (store.all[i]->dataset == dataset)
			cb(arg, store.all[i]);
}

static void drop_where(bool (*match)(const struct series *s, const void *ctx), const void *ctx)
{
	struct wbatch *b = xcalloc(1, sizeof(*b));
	b->kind = WB_PURGE;
	size_t n = 0;
	for (size_t i = 0; i < store.n; i++) {
		struct series *s = store.all[i];
		if (!match(s, ctx)) {
			store.all[n++] = s;
			continue;
		}
		if (s->sent) {
			b->ids = util_grow(b->ids, &b->ids_cap, b->nids, sizeof(*b->ids));
			b->ids[b->nids++] = s->id;
		}
		s->dropped = true;
		series_unref(s);
	}
	store.n = n;
	if (b->nids)
		writer_enqueue(b);
	else
		batch_free(b);
}

static bool match_dataset(const struct series *s, const void *ctx)
{
	return s->dataset == *(const int64_t *)ctx;
}

void series_drop_dataset(int64_t dataset)
{
	drop_where(match_dataset, &dataset);
}

struct keep_ctx {
	const int64_t *datasets;
	size_t n;
};

static bool match_orphan(const struct series *s, const void *ctx)
{
	const struct keep_ctx *k = ctx;
	for (size_t i = 0; i < k->n; i++)
		if (k->datasets[i] == s->dataset)
			return false;
	return true;
}

void series_keep_only(const int64_t *datasets, size_t n)
{
	struct keep_ctx k = {datasets, n};
	drop_where(match_orphan, &k);
}

const char *series_key(const struct series *s)
{
	return s->key;
}

int64_t series_id(const struct series *s)
{
	return s->id;
}

int64_t series_incore_bytes(const struct series *s)
{
	return (int64_t)(sizeof(*s) + strlen(s->key) + 1 +
	                 (s->ring ? SERIES_RING * sizeof(*s->ring) : 0));
}

int64_t series_disk_bytes(const struct series *s)
{
	int64_t bytes = 0;
	pthread_mutex_lock(&writer.mu);
	const struct acct *a = acct_find(s->id, false);
	if (a)
		bytes = a->bytes + a->rows * ROW_OVERHEAD;
	pthread_mutex_unlock(&writer.mu);
	return bytes;
}

void series_retention_set(const struct series_retention *r)
{
	store.ret = *r;
	pthread_mutex_lock(&writer.mu);
	writer.ret = *r;
	writer.prune_requested = true;
	pthread_cond_signal(&writer.wake);
	pthread_mutex_unlock(&writer.mu);
}

void series_retention_get(struct series_retention *r)
{
	*r = store.ret;
}

void series_sync(void)
{
	pthread_mutex_lock(&writer.mu);
	while (writer.started && !(writer.idle && !writer.head && !writer.prune_requested))
		pthread_cond_wait(&writer.idle_cv, &writer.mu);
	pthread_mutex_unlock(&writer.mu);
}

void series_shutdown(void)
{
	if (!store.ready)
		return;
	if (store.newest)
		flush_upto(store.newest + 1);
	if (writer.started) {
		pthread_mutex_lock(&writer.mu);
		writer.stop = true;
		pthread_cond_signal(&writer.wake);
		pthread_mutex_unlock(&writer.mu);
		pthread_join(writer.thread, NULL);
	}
	while (writer.head) {
		struct wbatch *b = writer.head;
		writer.head = b->next;
		batch_free(b);
	}
	while (writer.failed) {
		struct wbatch *b = writer.failed;
		writer.failed = b->next;
		batch_free(b);
	}
	db_samples_close(writer.ds);
	free(writer.hours);
	frows_free(&writer.cmp);
	free(writer.cmp_series);
	free(writer.ids);
	free(writer.purge);
	free(writer.acct);
	series_buf_free(&writer.buf);
	pthread_mutex_destroy(&writer.mu);
	pthread_cond_destroy(&writer.wake);
	pthread_cond_destroy(&writer.idle_cv);
	memset(&writer, 0, sizeof(writer));

	for (size_t i = 0; i < store.n; i++) {
		store.all[i]->dropped = true;
		series_unref(store.all[i]);
	}
	free(store.all);
	for (size_t i = 0; i < store.nreaders; i++)
		db_samples_close(store.readers[i]);
	free(store.readers);
	free(store.subs);
	free(store.db_path);
	store.all = NULL;
	store.n = store.cap = store.nsubs = store.subs_cap = store.nreaders = store.readers_cap = 0;
	store.readers = NULL;
	store.subs = NULL;
	store.db_path = NULL;
	store.newest = store.oldest = store.flushed = 0;
	store.ready = false;
}

/* --- queries */

static struct db_samples *reader_get(void)
{
	struct db_samples *ds = NULL;
	pthread_mutex_lock(&store.readers_mu);
	if (store.nreaders)
		ds = store.readers[--store.nreaders];
	pthread_mutex_unlock(&store.readers_mu);
	if (!ds) {
		char err[256];
		ds = db_samples_open(store.db_path, true, err, sizeof(err));
	}
	return ds;
}

static void reader_put(struct db_samples *ds)
{
	pthread_mutex_lock(&store.readers_mu);
	store.readers =
	    util_grow(store.readers, &store.readers_cap, store.nreaders, sizeof(*store.readers));
	store.readers[store.nreaders++] = ds;
	pthread_mutex_unlock(&store.readers_mu);
}

/* What a query's disk part needs, copied so the helper thread touches nothing else. */
struct qjob {
	struct series_query *q;
	int64_t *ids;
	int64_t split; /* the disk answers for t < split, memory for t >= split */
	int64_t lo;    /* the first granule not past retention */
	int status;
	void (*done)(void *arg, int status);
	void *arg;
	/* the helper thread's */
	struct db_samples *ds;
	struct series_agg *out; /* of the series being read */
	double vals[3600];
	struct series_rollup roll[60];
	bool roll_found;
	struct frows flushes[2]; /* of the last two hours read: every series wants the same */
	int next_flushes;
};

/* The flush rows (not packed yet) of an hour, read once for all the query's series. */
static const struct frows *q_flushes(struct qjob *j, int64_t hour)
{
	for (int i = 0; i < 2; i++)
		if (j->flushes[i].loaded && j->flushes[i].hour == hour)
			return &j->flushes[i];
	struct frows *f = &j->flushes[j->next_flushes];
	j->next_flushes ^= 1;
	frows_reset(f);
	f->hour = hour;
	if (db_samples_recent_range(j->ds, hour, hour + 3600, copy_frow, f) < 0)
		return NULL;
	f->loaded = true;
	return f;
}

/* Where a query's buckets end: their last second, or the window's end before it. */
static int64_t q_end(const struct series_query *q)
{
	int64_t wend = q->start + (int64_t)q->nbuckets * q->width;
	return q->end > 0 && q->end < wend ? q->end : wend;
}

static void q_add(struct qjob *j, int64_t t, const struct series_agg *a)
{
	const struct series_query *q = j->q;
	int64_t b = (t - q->start) / q->width;
	if (t >= q->start && b < (int64_t)q->nbuckets && t < q_end(q))
		agg_merge(&j->out[b], a);
}

/* Seconds [a, b) from disk, hour by hour (rows never cross an hour). */
static int q_seconds(struct qjob *j, int64_t id, int64_t a, int64_t b)
{
	while (a < b) {
		int64_t h = a - a % 3600, e = h + 3600 < b ? h + 3600 : b;
		struct unpack_ctx c = {j->vals, a, (size_t)(e - a), false};
		for (int64_t u = 0; u < e - a; u++)
			j->vals[u] = NAN;
		/* the hour's block if packed, and its flushes if not (or not all) */
		if (db_samples_range(j->ds, DB_SAMPLES_SECONDS, id, h, h + 1, unpack_row, &c) < 0)
			return -1;
		const struct frows *f = q_flushes(j, h);
		if (!f)
			return -1;
		frows_unpack(f, id, j->vals, a, (size_t)(e - a));
		for (int64_t u = a; u < e; u++) {
			double v = j->vals[u - a];
			if (!isnan(v)) {
				struct series_agg one = {v, v, v, 1};
				q_add(j, u, &one);
			}
		}
		a = e;
	}
	return 0;
}

static int found_rollups(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct qjob *j = arg;
	j->roll_found = series_unpack_rollups(data, len, j->roll, 60) >= 0;
	return 0;
}

/* Minutes of [a, b) within one hour: the hour's rollups where they are and memory does
 * not hold the minute too, else the seconds. */
static int q_minutes(struct qjob *j, int64_t id, int64_t a, int64_t b)
{
	int64_t h = a - a % 3600;
	j->roll_found = false;
	if (db_samples_range(j->ds, DB_SAMPLES_MINUTES, id, h, h + 1, found_rollups, j) < 0)
		return -1;
	for (int64_t m = a - a % 60; m < b; m += 60) {
		int64_t ma = m > a ? m : a, mb = m + 60 < b ? m + 60 : b;
		if (j->roll_found && ma == m && m + 60 <= b && m + 60 <= j->split) {
			struct series_agg agg;
			series_rollup_agg(&j->roll[(m - h) / 60], &agg);
			q_add(j, m, &agg);
		} else if (q_seconds(j, id, ma, mb) < 0) {
			return -1;
		}
	}
	return 0;
}

static int found_day(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct qjob *j = arg;
	struct series_rollup day[24];
	if (series_unpack_rollups(data, len, day, 24) >= 0) {
		memcpy(j->roll, day, sizeof(day));
		j->roll_found = true;
	}
	return 0;
}

static int q_series(struct qjob *j, int64_t id)
{
	const struct series_query *q = j->q;
	int64_t wend = q_end(q);
	int64_t a = j->lo, b = wend < j->split ? wend : j->split;

	if (q->gran == 1)
		return q_seconds(j, id, a, b);
	if (q->gran == 60) {
		for (int64_t h = a - a % 3600; h < b; h += 3600)
			if (q_minutes(j, id, h > a ? h : a, h + 3600 < b ? h + 3600 : b) < 0)
				return -1;
		return 0;
	}
	for (int64_t d = a - a % 86400; d < b; d += 86400) {
		struct series_rollup day[24];
		j->roll_found = false;
		if (db_samples_range(j->ds, DB_SAMPLES_HOURS, id, d, d + 1, found_day, j) < 0)
			return -1;
		bool have_day = j->roll_found;
		memcpy(day, j->roll, sizeof(day));
		for (int64_t h = d; h < d + 86400 && h < b; h += 3600) {
			if (h + 3600 <= a)
				continue;
			int64_t ha = h > a ? h : a, hb = h + 3600 < b ? h + 3600 : b;
			const struct series_rollup *r = &day[(h - d) / 3600];
			if (have_day && r->count && ha == h && h + 3600 <= b &&
			    h + 3600 <= j->split) {
				struct series_agg agg;
				series_rollup_agg(r, &agg);
				q_add(j, h, &agg);
			} else if (q_minutes(j, id, ha, hb) < 0) {
				return -1;
			}
		}
	}
	return 0;
}

static void q_disk(void *arg)
{
	struct qjob *j = arg;
	j->ds = reader_get();
	if (!j->ds) {
		j->status = -1;
		return;
	}
	/* One snapshot: a packing step in between cannot make a second count twice. */
	j->status = db_samples_begin(j->ds);
	for (size_t i = 0; j->status == 0 && i < j->q->nseries; i++) {
		j->out = &j->q->out[i * j->q->nbuckets];
		j->status = q_series(j, j->ids[i]);
	}
	db_samples_end(j->ds, 0);
	reader_put(j->ds);
	frows_free(&j->flushes[0]);
	frows_free(&j->flushes[1]);
}

void series_query_memory(struct series_query *q, int64_t from, int64_t to)
{
	int64_t wend = q_end(q);
	if (from < q->start)
		from = q->start;
	if (to > wend)
		to = wend;
	if (store.newest && to > store.newest + 1)
		to = store.newest + 1;
	if (from < store.oldest)
		from = store.oldest;
	if (!store.newest || from >= to)
		return;
	for (size_t i = 0; i < q->nseries; i++) {
		const struct series *s = q->series[i];
		struct series_agg *out = &q->out[i * q->nbuckets];
		if (!s->ring)
			continue;
		for (int64_t u = from; u < to; u++) {
			double v = s->ring[u & RING_MASK];
			if (!isnan(v))
				agg_add(&out[(u - q->start) / q->width], v);
		}
	}
}

static void q_finish(void *arg)
{
	struct qjob *j = arg;
	struct series_query *q = j->q;
	int status = j->status;
	if (status == 0 && store.newest && store.newest - SERIES_RING + 1 > j->split) {
		log_warn("series: a query read the disk for too long; memory moved on");
		status = -1;
	}
	if (status == 0) {
		int64_t from = j->split > j->lo ? j->split : j->lo;
		series_query_memory(q, from, INT64_MAX);
	} else if (j->status != 0) {
		log_err("series: a query could not read the disk");
	}
	for (size_t i = 0; i < q->nseries; i++)
		series_unref(q->series[i]);
	void (*done)(void *, int) = j->done;
	void *darg = j->arg;
	free(j->ids);
	free(j);
	done(darg, status);
}

void series_query(struct series_query *q, void (*done)(void *arg, int status), void *arg)
{
	struct qjob *j = xcalloc(1, sizeof(*j));
	j->q = q;
	j->done = done;
	j->arg = arg;
	memset(q->out, 0, q->nseries * q->nbuckets * sizeof(*q->out));

	/* Retention: no granule older than its granularity keeps. */
	int64_t keep_h = q->gran >= 3600 ? store.ret.hour_h
	                 : q->gran >= 60 ? store.ret.minute_h
	                                 : store.ret.second_h;
	int64_t cutoff = series_now() - keep_h * 3600;
	j->lo = q->start;
	if (cutoff > q->start)
		j->lo = q->start + (cutoff - q->start + q->gran - 1) / q->gran * q->gran;
	/* Memory answers from split on; QUERY_SLACK keeps it valid while the disk is read. */
	if (!store.newest)
		j->split = INT64_MAX;
	else if (store.newest - store.oldest + 1 < SERIES_RING)
		j->split = store.oldest;
	else
		j->split = store.newest - SERIES_RING + 1 + QUERY_SLACK;

	for (size_t i = 0; i < q->nseries; i++)
		series_ref(q->series[i]);
	int64_t wend = q_end(q);
	if (j->lo >= j->split || j->lo >= wend || !store.ready) {
		q_finish(j);
		return;
	}
	j->ids = xcalloc(q->nseries, sizeof(*j->ids));
	for (size_t i = 0; i < q->nseries; i++)
		j->ids[i] = q->series[i]->id;
	if (!store.wq) {
		q_disk(j);
		q_finish(j);
		return;
	}
	if (workq_submit(store.wq, q_disk, q_finish, j) < 0) {
		j->status = -1;
		q_finish(j);
	}
}
