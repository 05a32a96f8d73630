/* SPDX-License-Identifier: ISC */
/* The series store: every series' newest seconds in memory (the last few as doubles, the
 * rest packed as they were flushed), handed to the writer thread (series_writer.c) every
 * SERIES_CHUNK seconds, and queries across memory and disk. See series.h for the shape of it; the
 * comments here say why things are done so. Everything here runs on the loop thread except q_disk,
 * on a helper thread. */
#define _GNU_SOURCE
#include "series.h"
#include "series_pack.h"
#include "series_writer.h"
#include "db/db.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/loopwork.h"
#include "base/util.h"
#include "base/workq.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The newest seconds of a series as doubles, a power of two above SERIES_CHUNK: the seconds
 * not flushed yet are always among them, and a stream's tick reads them without unpacking. */
#define RECENT 16
/* The part of memory a query leaves to the disk although memory still holds it, so
 * a disk read may take this long before memory has moved past where it starts (half as
 * long while memory sheds seconds to fit its budget: see mem_fit). */
#define QUERY_SLACK 64
/* The pieces of a flush kept per turn of the loop (flush_finish_slice). */
#define FINISH_SLICE 512
/* The fewest seconds memory keeps however far over its budget it is. */
#define MEM_MIN 256
/* Memory's budget unless the configuration says: a box of 300 busy disks keeps the ring. */
#define MEM_BUDGET_DEFAULT (16 << 20)

/* --- the loop's side: series in memory */

struct series {
	int64_t id, dataset;
	char *key;
	/* The seconds (newest - RECENT, newest], NaN: no value; NULL while the series has no
	 * value in memory. */
	double *recent;
	/* Every flushed second memory holds, as the flushes packed them, in pages of its own
	 * (below): memory follows what the series keeps (a few bytes per 10 s for an idle
	 * disk, 2 to 5 per second for a busy one), never more than a page beyond it. */
	struct {
		struct page *head, *tail; /* oldest first */
		size_t off;               /* the first live entry's offset in head */
		size_t bytes;             /* of its pages */
	} past;
	int64_t last_value; /* the second of its newest value in memory */
	double staged;      /* the value put for the second being collected */
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
	struct hmap by_name; /* "dataset/key" -> the series, for series_open */
	int64_t next_id;
	int64_t newest, oldest;    /* the seconds memory holds: [oldest, newest] */
	int64_t past_bytes;        /* the pages of every series' past */
	int64_t budget;            /* what they may take (series_config.memory_bytes) */
	bool held;                 /* the budget has cut memory short of the ring */
	struct flush_job *pending; /* the flush being packed on a helper thread */
	struct flush_job *spare;   /* the last one's arrays, for the next */
	int64_t flushed;           /* seconds before this went to the writer */
	struct series_retention ret;
	struct sub *subs;
	size_t nsubs, subs_cap;
	bool notifying;
	pthread_mutex_t readers_mu; /* the pool of read connections of the helper threads */
	struct db_samples **readers;
	size_t nreaders, readers_cap;
} store = {.readers_mu = PTHREAD_MUTEX_INITIALIZER};

/* The value of second u among the recent ones (newest - RECENT < u <= newest). */
static inline double recent_get(const struct series *s, int64_t u)
{
	return s->recent ? s->recent[u & (RECENT - 1)] : NAN;
}

static void put_varint(unsigned char **o, uint64_t v)
{
	while (v >= 0x80) {
		*(*o)++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*(*o)++ = (unsigned char)v;
}

/* Reads a varint of past's own making (so never malformed) and moves *p past it. */
static uint64_t get_varint(const unsigned char **p)
{
	uint64_t v = 0;
	for (int shift = 0;; shift += 7) {
		unsigned char c = *(*p)++;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
}

/* A page of a series' past: entries of varint start (seconds after t0), varint length and
 * that many bytes of series_pack(), oldest first. Pages are of one size (but for an entry
 * larger than one, which ten seconds never make) so that a freed one serves any series:
 * no fragments, no copying as a series grows, and at most a page unused per series. */
#define PAGE_SIZE   512
#define PAGES_SPARE 2048 /* freed pages kept for reuse: a flush of a big box fills hundreds */

struct page {
	struct page *next;
	int64_t t0;
	uint32_t used, cap;
	unsigned char data[];
};

static struct {
	struct page *free;
	size_t nfree;
} pages;

static struct page *page_new(size_t need)
{
	size_t cap = PAGE_SIZE - sizeof(struct page);
	struct page *pg;
	if (need <= cap && pages.free) {
		pg = pages.free;
		pages.free = pg->next;
		pages.nfree--;
	} else {
		if (need > cap)
			cap = need;
		pg = xmalloc(sizeof(*pg) + cap);
		pg->cap = (uint32_t)cap;
	}
	pg->next = NULL;
	pg->used = 0;
	return pg;
}

static void page_free(struct page *pg)
{
	if (pg->cap == PAGE_SIZE - sizeof(struct page) && pages.nfree < PAGES_SPARE) {
		pg->next = pages.free;
		pages.free = pg;
		pages.nfree++;
	} else {
		free(pg);
	}
}

/* Keeps a flushed piece (seconds from t, packed) in s->past. */
static void past_add(struct series *s, int64_t t, const void *packed, size_t len)
{
	size_t need = 20 + len;
	struct page *pg = s->past.tail;
	if (!pg || pg->cap - pg->used < need) {
		pg = page_new(need);
		pg->t0 = t;
		if (s->past.tail)
			s->past.tail->next = pg;
		else
			s->past.head = pg;
		s->past.tail = pg;
		s->past.bytes += sizeof(*pg) + pg->cap;
		store.past_bytes += (int64_t)(sizeof(*pg) + pg->cap);
	}
	unsigned char *o = pg->data + pg->used;
	put_varint(&o, (uint64_t)(t - pg->t0));
	put_varint(&o, len);
	memcpy(o, packed, len);
	pg->used = (uint32_t)(o - pg->data + len);
}

/* Reads s->past's entries, oldest first, from where at says (at->pg NULL: the first). */
struct past_at {
	const struct page *pg;
	size_t off;
};

static bool past_next(const struct series *s, struct past_at *at, int64_t *t,
                      const unsigned char **p, size_t *len)
{
	if (!at->pg) {
		at->pg = s->past.head;
		at->off = s->past.off;
	}
	while (at->pg && at->off >= at->pg->used) {
		at->pg = at->pg->next;
		at->off = 0;
	}
	if (!at->pg)
		return false;
	const unsigned char *q = at->pg->data + at->off;
	*t = at->pg->t0 + (int64_t)get_varint(&q);
	*len = get_varint(&q);
	*p = q;
	at->off = (size_t)(q - at->pg->data) + *len;
	return true;
}

/* Forgets the entries whose chunk ends at or before oldest: memory holds no such second. */
static void past_trim(struct series *s, int64_t oldest)
{
	struct past_at at = {0};
	int64_t t;
	const unsigned char *p;
	size_t len;
	while (past_next(s, &at, &t, &p, &len) && t - t % SERIES_CHUNK + SERIES_CHUNK <= oldest) {
		while (s->past.head != at.pg) {
			struct page *pg = s->past.head;
			s->past.head = pg->next;
			s->past.bytes -= sizeof(*pg) + pg->cap;
			store.past_bytes -= (int64_t)(sizeof(*pg) + pg->cap);
			page_free(pg);
		}
		s->past.off = at.off;
	}
	/* pages read to their end go now */
	while (s->past.head && s->past.off >= s->past.head->used) {
		struct page *pg = s->past.head;
		s->past.head = pg->next;
		s->past.off = 0;
		s->past.bytes -= sizeof(*pg) + pg->cap;
		store.past_bytes -= (int64_t)(sizeof(*pg) + pg->cap);
		page_free(pg);
	}
	if (!s->past.head)
		s->past.tail = NULL;
}

/* The values memory holds of the seconds [a, a + n), NaN where it has none. */
static void mem_read(const struct series *s, int64_t a, size_t n, double *out)
{
	int64_t b = a + (int64_t)n, ring_lo = store.newest - RECENT + 1;
	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
	if (!s->recent)
		return;
	struct past_at at = {0};
	int64_t t;
	const unsigned char *p;
	size_t len;
	/* Entries never cross a chunk, so one starting at t ends by t + SERIES_CHUNK. */
	while (a < ring_lo && past_next(s, &at, &t, &p, &len) && t < b && t < ring_lo)
		if (t + SERIES_CHUNK > a)
			series_unpack(p, len, t, out, a, n);
	for (int64_t u = a > ring_lo ? a : ring_lo; u < b && u <= store.newest; u++)
		out[u - a] = recent_get(s, u);
}

/* Frees what memory holds of s: it has no value there. */
static void mem_free(struct series *s)
{
	free(s->recent);
	s->recent = NULL;
	store.past_bytes -= (int64_t)s->past.bytes;
	while (s->past.head) {
		struct page *pg = s->past.head;
		s->past.head = pg->next;
		page_free(pg);
	}
	memset(&s->past, 0, sizeof(s->past));
}

static void series_free(struct series *s)
{
	free(s->key);
	mem_free(s);
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

/* The index's name of (dataset, key); the caller frees it. */
static char *index_name(int64_t dataset, const char *key, size_t *len)
{
	char *name = xasprintf("%lld/%s", (long long)dataset, key);
	*len = strlen(name);
	return name;
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
	size_t len;
	char *name = index_name(dataset, key, &len);
	if (!hmap_get(&store.by_name, name, len))
		hmap_put(&store.by_name, name, len, s);
	free(name);
	if (id >= store.next_id)
		store.next_id = id + 1;
	return s;
}

static void load_series(void *arg, int64_t id, int64_t dataset, const char *key)
{
	series_new(id, dataset, key, true);
}

int series_init(const struct series_config *cfg, char *err, size_t errlen)
{
	store.ret = cfg->retention;
	store.budget = cfg->memory_bytes > 0 ? cfg->memory_bytes : MEM_BUDGET_DEFAULT;
	store.db_path = xstrdup(cfg->db_path);
	store.wq = cfg->wq;
	store.next_id = 1;

	size_t hours;
	if (series_writer_start(cfg, load_series, NULL, &hours, err, errlen) < 0)
		return -1;
	store.ready = true;
	log_info("series: %zu series on disk, %zu hours to pack", store.n, hours);
	return 0;
}

/* --- flushing */

/* A flush: the seconds [lo, upto) (at most RECENT, all among the recent ones) of every
 * series with a value there, copied on the loop, so that packing them (a microsecond a
 * series: 5 ms for a box of 1,152 disks) can run on a helper thread while the loop goes
 * on. Packed, they become the writer's batch, one flush row per 10-second chunk holding
 * every series' piece (so no row crosses an hour), and each series' piece kept in its
 * past, back on the loop (flush_finish). */
struct flush_rec {
	size_t entry;
	int64_t t;       /* its first second */
	size_t off, len; /* in packed */
};

struct flush_out {
	struct series_batch *b;
	struct buf packed; /* every piece's bytes, back to back */
	struct flush_rec *recs;
	size_t nrecs, recs_cap;
};

struct flush_job {
	int64_t lo, upto;
	size_t n, cap;       /* series, in id order; room for */
	struct series **ser; /* referenced until finished; the helper never touches them */
	int64_t *ids;        /* theirs */
	double *vals;        /* theirs, RECENT a series: vals[i * RECENT + u - lo], second u */
	struct series_batch_new *news; /* series whose rows go with this flush */
	size_t nnews;
	bool taken;  /* the loop finished it itself (flush_settle): what comes back is dropped */
	bool packed; /* the helper is done: out holds its work */
	size_t next_rec;      /* the first of out's pieces not kept yet */
	struct flush_out out; /* the helper's */
};

/* Packs j into o: pure work over j's copies, on whichever thread. */
static void flush_pack(const struct flush_job *j, struct flush_out *o)
{
	struct buf body = {0}, tmp = {0};
	struct series_batch *b = o->b = xcalloc(1, sizeof(*o->b));
	b->kind = SERIES_BATCH_FLUSH;
	b->upto = j->upto;
	b->from = j->lo;
	for (int64_t c = j->lo - j->lo % SERIES_CHUNK; c < j->upto; c += SERIES_CHUNK) {
		int64_t a0 = c > j->lo ? c : j->lo;
		int64_t e0 = c + SERIES_CHUNK < j->upto ? c + SERIES_CHUNK : j->upto;
		int64_t prev_id = 0;
		size_t count = 0;
		body.len = 0;
		for (size_t i = 0; i < j->n; i++) {
			const double *v = &j->vals[i * RECENT];
			int64_t a = a0, e = e0;
			while (a < e && isnan(v[a - j->lo]))
				a++;
			while (e > a && isnan(v[e - 1 - j->lo]))
				e--;
			if (a >= e)
				continue;
			tmp.len = 0;
			series_pack(&v[a - j->lo], (size_t)(e - a), &tmp);
			o->recs = util_grow(o->recs, &o->recs_cap, o->nrecs, sizeof(*o->recs));
			o->recs[o->nrecs++] = (struct flush_rec){i, a, o->packed.len, tmp.len};
			buf_add(&o->packed, tmp.p, tmp.len);
			size_t before = body.len;
			series_flush_piece_put(&body, j->ids[i] - prev_id, a - a0, &tmp);
			prev_id = j->ids[i];
			count++;
			b->pieces =
			    util_grow(b->pieces, &b->pieces_cap, b->npieces, sizeof(*b->pieces));
			b->pieces[b->npieces++] =
			    (struct series_batch_piece){j->ids[i], body.len - before};
		}
		if (!count)
			continue;
		b->rows = util_grow(b->rows, &b->rows_cap, b->nrows, sizeof(*b->rows));
		struct series_batch_row *r = &b->rows[b->nrows++];
		r->start = a0;
		r->span = (int)(e0 - a0);
		r->off = b->data.len;
		series_flush_row_put(&b->data, count, &body);
		r->len = b->data.len - r->off;
	}
	buf_free(&body);
	buf_free(&tmp);
}

static void flush_out_free(struct flush_out *o)
{
	if (o->b)
		series_batch_free(o->b);
	buf_free(&o->packed);
	free(o->recs);
	memset(o, 0, sizeof(*o));
}

/* What a job holds beyond its arrays: the series it introduces, the helper's work. */
static void flush_job_clear(struct flush_job *j)
{
	for (size_t i = 0; i < j->nnews; i++)
		free(j->news[i].key);
	free(j->news);
	j->news = NULL;
	j->nnews = j->n = j->next_rec = 0;
	j->taken = j->packed = false;
	flush_out_free(&j->out);
}

static void flush_job_free(struct flush_job *j)
{
	if (!j)
		return;
	flush_job_clear(j);
	free(j->ser);
	free(j->ids);
	free(j->vals);
	free(j);
}

/* Keeps a finished job's arrays for the next flush: half a megabyte on a big box, which
 * the system would hand out afresh each time, faulting it in page by page on the loop
 * (5 ms a flush in a VM, where every page fault is an exit). */
static void flush_job_recycle(struct flush_job *j)
{
	if (store.spare || !store.ready) {
		flush_job_free(j);
		return;
	}
	flush_job_clear(j);
	store.spare = j;
}

/* On the loop: each series keeps its pieces, and the writer gets the batch (with the
 * series it introduces). o is j's own or the loop's. */
static void flush_finish_pieces(struct flush_job *j, struct flush_out *o, size_t from, size_t to)
{
	for (size_t k = from; k < to; k++) {
		const struct flush_rec *r = &o->recs[k];
		struct series *s = j->ser[r->entry];
		/* dropped, or memory let it go (a clock that stepped back) meanwhile */
		if (s->recent && !s->dropped)
			past_add(s, r->t, o->packed.p + r->off, r->len);
	}
}

static void flush_finish_end(struct flush_job *j, struct flush_out *o)
{
	for (size_t i = 0; i < j->n; i++)
		series_unref(j->ser[i]);
	struct series_batch *b = o->b;
	o->b = NULL;
	b->news = j->news;
	b->nnews = b->news_cap = j->nnews;
	j->news = NULL;
	j->nnews = 0;
	if (store.ready)
		series_writer_enqueue(b);
	else
		series_batch_free(b);
}

/* On the loop, all at once: each series keeps its pieces, and the writer gets the batch
 * (with the series it introduces). o is j's own or the loop's. */
static void flush_finish(struct flush_job *j, struct flush_out *o)
{
	flush_finish_pieces(j, o, 0, o->nrecs);
	flush_finish_end(j, o);
}

static void flush_work(void *arg)
{
	struct flush_job *j = arg;
	flush_pack(j, &j->out);
}

static void flush_nothing(void *arg)
{
	(void)arg;
}

/* The helper's pieces kept FINISH_SLICE at a time, each slice a turn of the loop of its
 * own (through the helpers' queue, which wakes the loop), so that even a box of a thousand
 * disks never holds it more than a fraction of a millisecond. */
static void flush_finish_slice(void *arg)
{
	struct flush_job *j = arg;
	if (j->taken) {
		flush_job_recycle(j);
		return;
	}
	struct loopwork w;
	loopwork_begin(&w);
	size_t to =
	    j->next_rec + FINISH_SLICE < j->out.nrecs ? j->next_rec + FINISH_SLICE : j->out.nrecs;
	flush_finish_pieces(j, &j->out, j->next_rec, to);
	j->next_rec = to;
	if (to < j->out.nrecs &&
	    workq_submit(store.wq, flush_nothing, flush_finish_slice, j) == 0) {
		loopwork_end(&w);
		return;
	}
	flush_finish_pieces(j, &j->out, j->next_rec, j->out.nrecs); /* the queue is full */
	store.pending = NULL;
	flush_finish_end(j, &j->out);
	loopwork_end(&w);
	flush_job_recycle(j);
}

static void flush_done(void *arg)
{
	struct flush_job *j = arg;
	if (j->taken) {
		flush_job_recycle(j);
		return;
	}
	j->packed = true;
	flush_finish_slice(j);
}

/* The flush on a helper thread, if any, is finished now, on the loop: before its seconds
 * leave the recent ones, and before anything that must come after it (another flush, a
 * dataset's purge, a stop). Packed already, its pieces not kept yet are; else the loop
 * packs it, and the helper's work is dropped when it comes back. */
static void flush_settle(void)
{
	struct flush_job *j = store.pending;
	if (!j)
		return;
	store.pending = NULL;
	j->taken = true;
	if (j->packed) {
		flush_finish_pieces(j, &j->out, j->next_rec, j->out.nrecs);
		flush_finish_end(j, &j->out);
		return;
	}
	struct flush_out o = {0};
	flush_pack(j, &o);
	flush_finish(j, &o);
	flush_out_free(&o);
}

/* Hands the seconds [store.flushed, upto) over: packed on a helper thread when the store
 * has one (and the loop may go on: sync false), else here. */
static void flush_upto(int64_t upto, bool sync)
{
	flush_settle();
	int64_t lo = store.flushed > upto - RECENT ? store.flushed : upto - RECENT;
	if (upto <= lo)
		return;
	store.flushed = upto;
	struct flush_job *j = store.spare ? store.spare : xcalloc(1, sizeof(*j));
	store.spare = NULL;
	j->lo = lo;
	j->upto = upto;
	size_t news_cap = 0;
	for (size_t i = 0; i < store.n; i++) {
		struct series *s = store.all[i];
		if (store.ready && !s->sent) {
			j->news = util_grow(j->news, &news_cap, j->nnews, sizeof(*j->news));
			j->news[j->nnews++] =
			    (struct series_batch_new){s->id, s->dataset, xstrdup(s->key)};
			s->sent = true;
		}
		if (!s->recent)
			continue;
		if (j->n == j->cap) {
			j->cap = j->cap ? 2 * j->cap : 256;
			j->ser = xrealloc(j->ser, j->cap * sizeof(*j->ser));
			j->ids = xrealloc(j->ids, j->cap * sizeof(*j->ids));
			j->vals = xrealloc(j->vals, j->cap * RECENT * sizeof(*j->vals));
		}
		double *v = &j->vals[j->n * RECENT];
		for (int64_t u = lo; u < upto; u++)
			v[u - lo] = recent_get(s, u);
		series_ref(s);
		j->ser[j->n] = s;
		j->ids[j->n++] = s->id;
	}
	/* In id order: series are made with rising ids and dropped in place. */
	if (!sync && store.wq && workq_submit(store.wq, flush_work, flush_done, j) == 0) {
		store.pending = j;
		return;
	}
	flush_pack(j, &j->out);
	flush_finish(j, &j->out);
	flush_job_recycle(j);
}

/* Memory over its budget (a box of many busy disks): its oldest seconds go a chunk faster
 * than time moves until what it holds fits, as few as MEM_MIN seconds; under it, memory
 * grows back a chunk at a time up to the ring. Queries read what memory does not hold from
 * the disk. Memory's start moves at most two seconds a second, so a query's disk read has
 * QUERY_SLACK / 2 seconds before memory has moved past where it started. */
static void mem_fit(void)
{
	/* The disk refusing flushes has not stored what memory would shed: kept, up to the
	 * ring, as the writer keeps the flushes. */
	if (store.past_bytes <= store.budget || (store.ready && series_writer_holding()))
		return;
	int64_t o = store.oldest + SERIES_CHUNK, lim = store.newest - MEM_MIN + 1;
	if (store.newest - store.oldest + 1 < SERIES_RING)
		o += SERIES_CHUNK; /* time moved no start of the ring on: two chunks make one */
	if (o > lim)
		o = lim;
	if (o > store.oldest) {
		store.oldest = o;
		store.held = true;
	}
}

void series_put(struct series *s, int64_t t, double v)
{
	/* Staged until series_commit(t): flushing may still need the slot t overwrites. */
	s->staged = series_round(v);
	s->has_staged = true;
}

bool series_put_late(struct series *s, int64_t t, double v)
{
	if (!store.newest || t != store.newest || t < store.flushed)
		return false;
	if (!s->recent) {
		s->recent = xmalloc(RECENT * sizeof(*s->recent));
		for (int j = 0; j < RECENT; j++)
			s->recent[j] = NAN;
	}
	s->recent[t & (RECENT - 1)] = series_round(v);
	s->last_value = t;
	return true;
}

void series_commit(int64_t t)
{
	if (store.newest && t <= store.newest) {
		/* The clock stepped back: what memory holds is flushed, then it starts afresh. */
		flush_upto(store.newest + 1, true);
		for (size_t i = 0; i < store.n; i++)
			mem_free(store.all[i]);
		store.newest = store.oldest = store.flushed = 0;
		store.held = false;
	}
	/* A jump past the current chunk: flush it before its seconds could be overwritten.
	 * The seconds jumped over have no value: nothing to flush there. */
	if (store.newest && t / SERIES_CHUNK != store.newest / SERIES_CHUNK) {
		flush_upto(store.newest + 1, true);
		if (store.flushed < t - t % SERIES_CHUNK)
			store.flushed = t - t % SERIES_CHUNK;
	}
	int64_t from = store.newest ? store.newest + 1 : t;
	if (from < t - RECENT)
		from = t - RECENT;
	/* Slot t holds second t - RECENT until now: a flush still packing it is finished. */
	if (store.pending && t - RECENT >= store.pending->lo)
		flush_settle();
	for (size_t i = 0; i < store.n; i++) {
		struct series *s = store.all[i];
		if (!s->recent && s->has_staged) {
			s->recent = xmalloc(RECENT * sizeof(*s->recent));
			for (int j = 0; j < RECENT; j++)
				s->recent[j] = NAN;
		}
		if (!s->recent)
			continue;
		for (int64_t u = from; u < t; u++)
			s->recent[u & (RECENT - 1)] = NAN;
		s->recent[t & (RECENT - 1)] = s->has_staged ? s->staged : NAN;
		if (s->has_staged)
			s->last_value = t;
		s->has_staged = false;
	}
	store.newest = t;
	if (!store.oldest)
		store.oldest = t;
	else if (t - store.oldest >= SERIES_RING)
		store.oldest = t - SERIES_RING + 1;
	if (!store.flushed)
		store.flushed = t;
	if ((t + 1) % SERIES_CHUNK == 0) {
		flush_upto(t + 1, false);
		mem_fit();
		/* What memory no longer holds goes; a series with no value left in it keeps
		 * nothing until its next one. */
		for (size_t i = 0; i < store.n; i++) {
			struct series *s = store.all[i];
			if (!s->recent)
				continue;
			if (s->last_value < store.oldest)
				mem_free(s);
			else
				past_trim(s, store.oldest);
		}
	}

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

bool series_flush_pending(void)
{
	return store.pending != NULL;
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
	size_t len;
	char *name = index_name(dataset, key, &len);
	struct series *s = hmap_get(&store.by_name, name, len);
	free(name);
	return s ? s : series_new(store.next_id, dataset, key, false);
}

void series_each(int64_t dataset, void (*cb)(void *arg, struct series *s), void *arg)
{
	for (size_t i = 0; i < store.n; i++)
		if (store.all[i]->dataset == dataset)
			cb(arg, store.all[i]);
}

static void drop_where(bool (*match)(const struct series *s, const void *ctx), const void *ctx)
{
	flush_settle(); /* its rows before the purge */
	struct series_batch *b = xcalloc(1, sizeof(*b));
	b->kind = SERIES_BATCH_PURGE;
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
		size_t len;
		char *name = index_name(s->dataset, s->key, &len);
		if (hmap_get(&store.by_name, name, len) == s)
			hmap_del(&store.by_name, name, len);
		free(name);
		s->dropped = true;
		series_unref(s);
	}
	store.n = n;
	if (b->nids)
		series_writer_enqueue(b);
	else
		series_batch_free(b);
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
	                 (s->recent ? RECENT * sizeof(*s->recent) : 0) + s->past.bytes);
}

int64_t series_disk_bytes(const struct series *s)
{
	return series_writer_disk_bytes(s->id);
}

void series_retention_set(const struct series_retention *r)
{
	store.ret = *r;
	series_writer_retention(r);
}

void series_sync(void)
{
	flush_settle();
	series_writer_sync();
}

void series_shutdown(void)
{
	if (!store.ready)
		return;
	if (store.newest)
		flush_upto(store.newest + 1, true);
	series_writer_stop();
	flush_job_free(store.spare);
	store.spare = NULL;

	for (size_t i = 0; i < store.n; i++) {
		store.all[i]->dropped = true;
		series_unref(store.all[i]);
	}
	free(store.all);
	hmap_clear(&store.by_name, NULL);
	while (pages.free) {
		struct page *pg = pages.free;
		pages.free = pg->next;
		free(pg);
	}
	pages.nfree = 0;
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
	store.held = false;
	store.ready = false;
}

/* --- queries */

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
	int64_t *want; /* ids, sorted, once each: what the flush rows are read for */
	size_t nwant;
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
	struct series_flush_rows
	    flushes[2]; /* of the last two hours read: every series wants the same */
	int next_flushes;
};

/* The flush rows (not packed yet) of an hour, read once for all the query's series. */
static const struct series_flush_rows *q_flushes(struct qjob *j, int64_t hour)
{
	for (int i = 0; i < 2; i++)
		if (j->flushes[i].loaded && j->flushes[i].hour == hour)
			return &j->flushes[i];
	struct series_flush_rows *f = &j->flushes[j->next_flushes];
	j->next_flushes ^= 1;
	series_flush_rows_reset(f);
	f->hour = hour;
	f->want = j->want;
	f->nwant = j->nwant;
	if (db_samples_recent_range(j->ds, hour, hour + 3600, series_flush_rows_add, f) < 0)
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
		struct series_unpack_ctx c = {j->vals, a, (size_t)(e - a), false};
		for (int64_t u = 0; u < e - a; u++)
			j->vals[u] = NAN;
		/* the hour's block if packed, and its flushes if not (or not all) */
		if (db_samples_range(j->ds, DB_SAMPLES_SECONDS, id, h, h + 1, series_unpack_row,
		                     &c) < 0)
			return -1;
		const struct series_flush_rows *f = q_flushes(j, h);
		if (!f)
			return -1;
		series_flush_rows_unpack(f, id, j->vals, a, (size_t)(e - a));
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
	series_flush_rows_free(&j->flushes[0]);
	series_flush_rows_free(&j->flushes[1]);
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
		if (!s->recent)
			continue;
		double v[512];
		for (int64_t a = from; a < to; a += 512) {
			size_t n = to - a < 512 ? (size_t)(to - a) : 512;
			mem_read(s, a, n, v);
			for (size_t u = 0; u < n; u++)
				if (!isnan(v[u]))
					agg_add(&out[(a + (int64_t)u - q->start) / q->width], v[u]);
		}
	}
}

static void q_finish(void *arg)
{
	struct qjob *j = arg;
	struct series_query *q = j->q;
	int status = j->status;
	if (status == 0 && store.newest && store.oldest > j->split) {
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
	free(j->want);
	free(j);
	done(darg, status);
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void series_query(struct series_query *q, void (*done)(void *arg, int status), void *arg)
{
	memset(q->out, 0, q->nseries * q->nbuckets * sizeof(*q->out));
	series_query_zeroed(q, done, arg);
}

void series_query_zeroed(struct series_query *q, void (*done)(void *arg, int status), void *arg)
{
	struct qjob *j = xcalloc(1, sizeof(*j));
	j->q = q;
	j->done = done;
	j->arg = arg;

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
	else if (store.newest - store.oldest + 1 < SERIES_RING && !store.held &&
	         (store.newest - store.oldest + 1 < MEM_MIN ||
	          store.past_bytes <= store.budget / 2))
		j->split = store.oldest; /* memory's start stays put while the disk is read */
	else
		j->split = store.oldest + QUERY_SLACK;

	for (size_t i = 0; i < q->nseries; i++)
		series_ref(q->series[i]);
	int64_t wend = q_end(q);
	if (j->lo >= j->split || j->lo >= wend || !store.ready) {
		q_finish(j);
		return;
	}
	j->ids = xcalloc(q->nseries, sizeof(*j->ids));
	j->want = xcalloc(q->nseries, sizeof(*j->want));
	for (size_t i = 0; i < q->nseries; i++)
		j->ids[i] = j->want[i] = q->series[i]->id;
	qsort(j->want, q->nseries, sizeof(*j->want), cmp_id);
	for (size_t i = 0; i < q->nseries; i++)
		if (!j->nwant || j->want[j->nwant - 1] != j->want[i])
			j->want[j->nwant++] = j->want[i];
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
