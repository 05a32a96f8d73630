/* SPDX-License-Identifier: ISC */
/* The series store: rollups against the raw seconds, queries across memory and disk,
 * pruning to retention (what is past it and nothing else), a restart keeping history,
 * what is on disk between flushes, and purging a deleted dataset. The packed formats are
 * test_series_pack's. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "db/db.h"
#include "analytics/series.h"
#include "analytics/series_defs.h"
#include "base/util.h"
#include "base/workq.h"

#include <event2/thread.h>

static bool near(double got, double want)
{
	return fabs(got - want) <= 1e-6 * (fabs(want) > 1 ? fabs(want) : 1);
}

/* --- the store */

static char dir[256], dbpath[300];
static const int64_t T0 = 1800000000 - 1800000000 % 86400; /* a day boundary */
#define RUN (3 * 3600 + 100)

/* what the test stores: the total has every second; "k" misses some */
static double value_total(int64_t t)
{
	return (double)((t * 7919) % 1000) / 8; /* eighths: three decimals hold them */
}

static bool k_has(int64_t t)
{
	return !(t >= T0 + 100 && t < T0 + 130) && !(t >= T0 + 600 && t < T0 + 660);
}

static double value_k(int64_t t)
{
	return (double)(t % 13) * 1000;
}

static int64_t stored_end = T0; /* the seconds [T0, stored_end) were stored */

static struct series_agg expect(int64_t a, int64_t b, bool total)
{
	struct series_agg e = {0};
	for (int64_t t = a; t < b && t < stored_end; t++) {
		if (t < T0 || (!total && !k_has(t)))
			continue;
		double v = total ? value_total(t) : value_k(t);
		if (!e.count || v < e.min)
			e.min = v;
		if (!e.count || v > e.max)
			e.max = v;
		e.sum += v;
		e.count++;
	}
	return e;
}

static bool agg_is(const struct series_agg *got, const struct series_agg *want)
{
	if (got->count != want->count)
		return false;
	return !got->count ||
	       (got->min == want->min && got->max == want->max && near(got->sum, want->sum));
}

static int done_status;
static void query_done(void *arg, int status)
{
	done_status = status;
}

/* Buckets [start, start + n * width) at gran, for the series given, checked against the
 * stored values: returns the buckets that differ, -1 if the query failed. */
static int check_query_to(struct series *tot, struct series *k, int64_t start, int64_t gran,
                          int64_t width, size_t n, int64_t visible_from, int64_t end)
{
	struct series *ser[2] = {tot, k};
	struct series_query q = {ser, 2, start, gran, width, n, xcalloc(2 * n, sizeof(*q.out)),
	                         end};
	done_status = -2;
	series_query(&q, query_done, NULL);
	if (done_status != 0) {
		free(q.out);
		return -1;
	}
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t a = start + (int64_t)i * width;
		int64_t from = a > visible_from ? a : visible_from;
		int64_t to = end && end < a + width ? end : a + width;
		for (int s = 0; s < 2; s++) {
			struct series_agg want = expect(from, to, s == 0);
			if (!agg_is(&q.out[(size_t)s * n + i], &want)) {
				if (bad < 3)
					diag("bucket %lld (%s): got %lld values %g..%g sum %g, "
					     "want %lld "
					     "%g..%g sum %g",
					     (long long)(a - T0), s ? "k" : "total",
					     (long long)q.out[(size_t)s * n + i].count,
					     q.out[(size_t)s * n + i].min,
					     q.out[(size_t)s * n + i].max,
					     q.out[(size_t)s * n + i].sum, (long long)want.count,
					     want.min, want.max, want.sum);
				bad++;
			}
		}
	}
	free(q.out);
	return bad;
}

static int check_query(struct series *tot, struct series *k, int64_t start, int64_t gran,
                       int64_t width, size_t n, int64_t visible_from)
{
	return check_query_to(tot, k, start, gran, width, n, visible_from, 0);
}

struct rows {
	int n, spans;
	int64_t first, last;
};

static int count_row(void *arg, int64_t start, int span, const void *data, size_t len)
{
	struct rows *r = arg;
	if (!r->n)
		r->first = start;
	r->last = start;
	r->n++;
	r->spans += span;
	return 0;
}

static int count_flush(void *arg, int64_t id, int64_t start, int span, const void *data, size_t len)
{
	return count_row(arg, start, span, data, len);
}

/* The flush rows (not packed into hours yet) with start in [from, to). */
static struct rows flushes_of(int64_t from, int64_t to)
{
	char err[256];
	struct rows r = {0};
	struct db_samples *ds = db_samples_open(dbpath, true, err, sizeof(err));
	if (ds) {
		db_samples_recent_range(ds, from, to, count_flush, &r);
		db_samples_close(ds);
	}
	return r;
}

static struct rows rows_of(enum db_samples_level level, int64_t series, int64_t from, int64_t to)
{
	char err[256];
	struct rows r = {0};
	struct db_samples *ds = db_samples_open(dbpath, true, err, sizeof(err));
	if (ds) {
		db_samples_range(ds, level, series, from, to, count_row, &r);
		db_samples_close(ds);
	}
	return r;
}

static void count_series(void *arg, struct series *s)
{
	(*(int *)arg)++;
}

static int start_store(struct series_retention ret)
{
	char err[256];
	struct series_config c = {.db_path = dbpath, .unpaced = true, .retention = ret};
	int rc = series_init(&c, err, sizeof(err));
	if (rc < 0)
		diag("%s", err);
	series_retention_set(&ret);
	return rc;
}

/* A series of another dataset, born 150 s before the first run ends; one of an idle disk
 * (0 every second); one whose values stop after its first 100 s. */
static struct series *late, *idle, *gone;
#define LATE_FROM (T0 + RUN - 150)

static double value_late(int64_t t)
{
	return (double)(t % 1000) / 8;
}

static void run_until(struct series *tot, struct series *k, int64_t from, int64_t to)
{
	for (int64_t t = from; t < to; t++) {
		series_put(tot, t, value_total(t));
		if (k_has(t))
			series_put(k, t, value_k(t));
		if (late && t >= LATE_FROM)
			series_put(late, t, value_late(t));
		if (idle)
			series_put(idle, t, 0);
		if (gone && t < T0 + 100)
			series_put(gone, t, (double)t);
		series_commit(t);
		if (t + 1 > stored_end)
			stored_end = t + 1;
	}
}

static void test_store(void)
{
	struct series_retention keep = {24, 336, 8760};
	char err[256];
	struct db *db = db_open(dbpath, err, sizeof(err));
	if (!ok(db != NULL, "database"))
		return;
	ok(start_store(keep) == 0, "store started");
	struct series *tot = series_open(1, ""), *k = series_open(1, "k");
	int64_t id_tot = series_id(tot), id_k = series_id(k);
	late = series_open(2, "late");
	idle = series_open(2, "idle");
	gone = series_open(2, "gone");

	/* Three hours and 100 s, then 5 s more that no flush has taken yet. */
	run_until(tot, k, T0, T0 + RUN);
	series_sync();
	struct rows r = rows_of(DB_SAMPLES_SECONDS, id_tot, T0, T0 + RUN + 10);
	ok(r.n == 3 && r.first == T0 && r.last == T0 + 2 * 3600,
	   "each complete hour is packed into one row per series");
	struct rows fl = flushes_of(0, INT64_MAX);
	ok(fl.n == 10 && fl.spans == 100 && fl.first == T0 + 3 * 3600,
	   "the rest stays in one flush row per 10 s, for all series: %d rows", fl.n);
	struct rows m = rows_of(DB_SAMPLES_MINUTES, id_k, T0, T0 + RUN);
	ok(m.n == 3, "a minute rollup row per complete hour");
	struct rows h = rows_of(DB_SAMPLES_HOURS, id_k, T0, T0 + RUN);
	ok(h.n == 1 && h.first == T0, "the hour rollups of the day in one row");
	/* Memory keeps the seconds packed as flushed, but the newest few. */
	int64_t head = (int64_t)sizeof(int64_t) * 16 + 64; /* a series' own fields, at most */
	ok(series_disk_bytes(tot) > 0 && series_incore_bytes(tot) > SERIES_RING &&
	       series_incore_bytes(tot) < SERIES_RING * 4,
	   "bytes on disk (%lld); in memory %lld: its %d seconds of noise, packed",
	   (long long)series_disk_bytes(tot), (long long)series_incore_bytes(tot), SERIES_RING);
	ok(series_incore_bytes(idle) < head + 16 * 8 + SERIES_RING,
	   "an idle disk's %d seconds of 0 take %lld bytes, under one a second", SERIES_RING,
	   (long long)series_incore_bytes(idle));
	ok(series_incore_bytes(gone) < head,
	   "a series with no value in memory's hour keeps nothing there (%lld bytes)",
	   (long long)series_incore_bytes(gone));
	int64_t late_bytes = series_incore_bytes(late) - (int64_t)strlen("late") - 1;
	ok(late_bytes < head + 16 * 8 + 150 * 4,
	   "a series born 150 s ago holds its seconds in %lld bytes", (long long)late_bytes);
	struct series_agg idle_out[1];
	struct series_query iq = {.series = &idle,
	                          .nseries = 1,
	                          .start = T0 + RUN - SERIES_RING + 64,
	                          .gran = 1,
	                          .width = SERIES_RING,
	                          .nbuckets = 1,
	                          .out = idle_out};
	done_status = -2;
	series_query(&iq, query_done, NULL);
	ok(done_status == 0 && idle_out[0].count == SERIES_RING - 64 && idle_out[0].max == 0,
	   "the idle disk's seconds back from memory: %lld of %d", (long long)idle_out[0].count,
	   SERIES_RING - 64);
	idle = gone = NULL;

	struct series_agg out[160];
	struct series_query q = {.series = &late,
	                         .nseries = 1,
	                         .start = LATE_FROM - 10,
	                         .gran = 1,
	                         .width = 1,
	                         .nbuckets = 160,
	                         .out = out};
	done_status = -2;
	series_query(&q, query_done, NULL);
	int wrong = done_status != 0;
	for (int b = 0; b < 160; b++) {
		int64_t t = LATE_FROM - 10 + b;
		bool want = b >= 10 && t < T0 + RUN;
		if (want ? out[b].count != 1 || out[b].sum != value_late(t) : out[b].count != 0)
			wrong++;
	}
	is_int(wrong, 0, "its seconds from memory, none before its first");
	late = NULL;

	/* Rollups against the raw seconds; memory against disk; across the split. */
	is_int(check_query(tot, k, T0, 60, 60, 180, 0), 0,
	       "minute rollups of the packed hours agree with the seconds");
	is_int(check_query(tot, k, T0, 3600, 3600, 4, 0), 0,
	       "hour rollups agree with the seconds (the last hour from memory)");
	is_int(check_query(tot, k, T0, 1, 1, RUN, 0), 0, "every second, from disk and memory");
	is_int(check_query(tot, k, T0, 60, 60, RUN / 60 + 1, 0), 0,
	       "minutes across where memory starts: none counted twice");
	is_int(check_query(tot, k, T0 + 30, 1, 7, 500, 0), 0,
	       "buckets of 7 seconds from an unaligned start");
	is_int(check_query(tot, k, T0, 60, 600, 19, 0), 0, "points: 10 minutes a bucket");
	/* The window's end inside the last bucket: that bucket stops there. */
	is_int(check_query_to(tot, k, T0 + 30, 1, 7, 500, 0, T0 + 30 + 7 * 499 + 3), 0,
	       "points: the last bucket of seconds ends with the window");
	is_int(check_query_to(tot, k, T0, 60, 600, 19, 0, T0 + 60 * 185), 0,
	       "points: the last bucket of minutes ends with the window");

	/* What the disk holds while memory goes on: everything up to the last flush. */
	run_until(tot, k, T0 + RUN, T0 + RUN + 5);
	series_sync();
	fl = flushes_of(T0 + RUN, T0 + RUN + 10);
	is_int(fl.n, 0, "seconds after the last 10 s boundary are in memory only");
	fl = flushes_of(T0 + RUN - 10, T0 + RUN);
	ok(fl.n == 1 && fl.spans == 10, "the 10 s before it are on disk");

	/* Restart: the rest is flushed, and history comes back. */
	series_shutdown();
	ok(start_store(keep) == 0, "store started again");
	tot = series_open(1, "");
	k = series_open(1, "k");
	is_int(series_id(tot), id_tot, "the series keeps its id");
	fl = flushes_of(T0 + RUN, T0 + RUN + 10);
	ok(fl.n == 1 && fl.spans == 5, "stopping flushed the last 5 seconds");
	is_int(check_query(tot, k, T0, 60, 60, 180, 0), 0, "minutes after a restart");
	is_int(check_query(tot, k, T0, 1, 1, RUN, 0), 0, "seconds after a restart (all disk)");

	/* Retention: seconds 1 h, minutes 2 h, hours 3 h, with now at T0 + RUN + 5. */
	struct series_retention short_ret = {1, 2, 3};
	series_retention_set(&short_ret);
	run_until(tot, k, T0 + RUN + 5, T0 + RUN + 10); /* a flush: the writer's clock moves */
	series_sync();
	int64_t now = T0 + RUN + 10;
	r = rows_of(DB_SAMPLES_SECONDS, id_tot, 0, now);
	ok(r.n == 1 && r.first == T0 + 2 * 3600,
	   "seconds: hours wholly past 1 h are gone (first %lld)", (long long)(r.first - T0));
	m = rows_of(DB_SAMPLES_MINUTES, id_tot, 0, now);
	ok(m.n == 2 && m.first == T0 + 3600, "minutes: the hour wholly past 2 h is gone");
	h = rows_of(DB_SAMPLES_HOURS, id_tot, 0, now);
	ok(h.n == 1, "hours: the day row stays (only partly past 3 h)");
	is_int(check_query(tot, k, T0, 1, 1, RUN, now - 3600), 0,
	       "second queries show exactly the last hour");
	is_int(check_query(tot, k, T0, 60, 60, RUN / 60 + 1, now - 7200 + 60 - (now - 7200) % 60),
	       0, "minute queries exactly the last 2 hours' whole minutes");
	is_int(check_query(tot, k, T0, 3600, 3600, 4, T0 + 3600), 0,
	       "hour queries the hours within 3 hours");

	/* The clock steps back a minute: no harm, and it goes on. */
	run_until(tot, k, now - 60, now - 50);
	ok(series_newest() == now - 51, "after a step back the store goes on");

	/* Deleting the dataset purges its rows. */
	series_drop_dataset(1);
	series_sync();
	r = rows_of(DB_SAMPLES_SECONDS, id_tot, 0, INT64_MAX);
	struct rows rk = rows_of(DB_SAMPLES_SECONDS, id_k, 0, INT64_MAX);
	m = rows_of(DB_SAMPLES_MINUTES, id_k, 0, INT64_MAX);
	ok(r.n == 0 && rk.n == 0 && m.n == 0, "a deleted dataset's packed samples are purged");

	series_shutdown();
	ok(start_store(keep) == 0, "store started a third time");
	int left = 0;
	series_each(1, count_series, &left);
	is_int(left, 0, "purged series are not loaded again");
	series_shutdown();
	db_close(db);
}

/* --- a budget: a box whose seconds outgrow memory's budget */

#define NB     40
#define BUDGET (64 << 10)
#define RUN_B  (2 * 3600 + 300)
static const int64_t T1 = 1800000000 - 1800000000 % 86400 + 86400;

static double value_b(int i, int64_t t)
{
	return (double)((t * 7919 + i * 104729) % 1000) / 8;
}

/* Seconds [start, start + n * width) of the series i0, i0 + step, ... (ns of them) against
 * what was stored: the buckets that differ, -1 when the query failed. */
static int check_b(struct series **all, int i0, int step, int ns, int64_t start, int64_t gran,
                   int64_t width, size_t n)
{
	struct series *ser[NB];
	for (int s = 0; s < ns; s++)
		ser[s] = all[i0 + s * step];
	struct series_query q = {
	    ser, (size_t)ns, start, gran, width, n, xcalloc((size_t)ns * n, sizeof(*q.out)), 0};
	done_status = -2;
	series_query(&q, query_done, NULL);
	int bad = done_status != 0 ? -1 : 0;
	for (int s = 0; bad >= 0 && s < ns; s++) {
		for (size_t b = 0; b < n; b++) {
			struct series_agg want = {0};
			for (int64_t t = start + (int64_t)b * width;
			     t < start + (int64_t)(b + 1) * width; t++) {
				if (t < T1 || t >= T1 + RUN_B)
					continue;
				double v = value_b(i0 + s * step, t);
				if (!want.count || v < want.min)
					want.min = v;
				if (!want.count || v > want.max)
					want.max = v;
				want.sum += v;
				want.count++;
			}
			if (!agg_is(&q.out[(size_t)s * n + b], &want)) {
				if (bad < 3)
					diag("series %d bucket %lld: %lld values, want %lld",
					     i0 + s * step,
					     (long long)(start + (int64_t)b * width - T1),
					     (long long)q.out[(size_t)s * n + b].count,
					     (long long)want.count);
				bad++;
			}
		}
	}
	free(q.out);
	return bad;
}

static void test_budget(void)
{
	char err[256];
	snprintf(dbpath, sizeof(dbpath), "%s/budget.db", dir);
	struct db *db = db_open(dbpath, err, sizeof(err));
	ok(db != NULL, "a second database: %s", db ? "" : err);
	struct series_config c = {.db_path = dbpath,
	                          .unpaced = true,
	                          .retention = {24, 336, 8760},
	                          .memory_bytes = BUDGET,
	                          .pack_bytes = 4096};
	ok(series_init(&c, err, sizeof(err)) == 0, "a store of %d KB of memory", BUDGET >> 10);
	struct series *all[NB];
	char key[16];
	for (int i = 0; i < NB; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		all[i] = series_open(3, key);
	}
	int64_t most = 0;
	for (int64_t t = T1; t < T1 + RUN_B; t++) {
		for (int i = 0; i < NB; i++)
			series_put(all[i], t, value_b(i, t));
		series_commit(t);
		int64_t bytes = 0;
		for (int i = 0; t % 60 == 0 && i < NB; i++)
			bytes += series_incore_bytes(all[i]);
		if (bytes > most)
			most = bytes;
	}
	series_sync();
	/* The ring would take some 9 bytes a second of each (three values of noise in 8):
	 * 1.4 MB. A page each beyond the budget, the 16 numbers and the series' own. */
	int64_t bound = BUDGET + NB * (512 + 16 * 8 + 96);
	ok(most > BUDGET / 2 && most <= bound,
	   "memory stays within its budget all the while: at most %lld bytes (bound %lld)",
	   (long long)most, (long long)bound);
	struct rows r = rows_of(DB_SAMPLES_SECONDS, series_id(all[7]), T1, T1 + RUN_B);
	ok(r.n == 2, "both complete hours packed, in groups of 4 KB of rows (%d rows)", r.n);
	is_int(check_b(all, 0, 1, NB, T1, 1, 1, RUN_B), 0,
	       "every second of every series: packed hours, flush rows and memory");
	is_int(check_b(all, 3, 9, 4, T1 + 2 * 3600 - 100, 1, 1, 400), 0,
	       "4 of 40 series across the hour and into memory: only theirs read");
	is_int(check_b(all, 0, 1, NB, T1, 60, 60, RUN_B / 60 + 1), 0,
	       "minutes: the rollups of the groups' series agree with their seconds");
	is_int(check_b(all, 5, 1, 1, T1 + RUN_B - 3600, 1, 60, 60), 0,
	       "the last hour in minutes of seconds, mostly from disk");
	series_shutdown();
	db_close(db);
}

/* --- a value after its second was committed (a dataset made by the database writer) */

static void test_late(void)
{
	char err[256];
	snprintf(dbpath, sizeof(dbpath), "%s/late.db", dir);
	struct db *db = db_open(dbpath, err, sizeof(err));
	struct series_config c = {.db_path = dbpath, .unpaced = true, .retention = {24, 336, 8760}};
	if (!ok(db && series_init(&c, err, sizeof(err)) == 0, "a store"))
		return;
	struct series *a = series_open(5, "a");
	const int64_t t0 = T1 + 3; /* mid-chunk */
	for (int64_t t = t0; t < t0 + 3; t++) {
		series_put(a, t, 1);
		series_commit(t);
	}
	struct series *b = series_open(6, "b");
	ok(!series_put_late(b, t0 + 1, 7), "a second before the newest is refused");
	ok(series_put_late(b, t0 + 2, 8), "the newest second is taken");
	series_put(b, t0 + 3, 9);
	series_commit(t0 + 3);
	struct series_agg out[4];
	struct series_query q = {.series = &b,
	                         .nseries = 1,
	                         .start = t0,
	                         .gran = 1,
	                         .width = 1,
	                         .nbuckets = 4,
	                         .out = out};
	done_status = -2;
	series_query(&q, query_done, NULL);
	ok(done_status == 0 && out[0].count == 0 && out[1].count == 0 && out[2].count == 1 &&
	       out[2].sum == 8 && out[3].count == 1 && out[3].sum == 9,
	   "it holds the late second and the next, nothing before (%lld %lld %lld %lld)",
	   (long long)out[0].count, (long long)out[1].count, (long long)out[2].count,
	   (long long)out[3].count);
	/* The last second of a chunk is flushed by its commit: too late for it. */
	int64_t last = t0 + 3;
	while ((last + 1) % SERIES_CHUNK)
		series_commit(++last);
	struct series *c2 = series_open(6, "c");
	ok(!series_put_late(c2, last, 1), "a flushed second is refused");
	series_shutdown();
	db_close(db);
}

/* --- series by (dataset, key): one series for each, found again by name (an index,
 * not a search of every series: a box of a thousand disks opens thousands at its start) */

static void test_open(void)
{
	char err[256];
	snprintf(dbpath, sizeof(dbpath), "%s/open.db", dir);
	struct db *db = db_open(dbpath, err, sizeof(err));
	struct series_config c = {.db_path = dbpath, .unpaced = true, .retention = {24, 336, 8760}};
	if (!ok(db && series_init(&c, err, sizeof(err)) == 0, "a store"))
		return;
	struct series *a = series_open(7, "sda"), *b = series_open(7, "sdb");
	ok(a != b && series_open(7, "sda") == a && series_open(7, "sdb") == b,
	   "each key of a dataset is one series, found again");
	struct series *other = series_open(8, "sda"), *slash = series_open(1, "7/sda");
	ok(other != a && slash != a && slash != other && series_open(8, "sda") == other &&
	       series_open(1, "7/sda") == slash,
	   "the same key in another dataset, or a key holding the separator, is another");
	int64_t id = series_id(a);
	series_ref(a);
	series_drop_dataset(7);
	struct series *again = series_open(7, "sda");
	ok(again != a && series_id(again) > id,
	   "a dropped dataset's key opens a new series (the old one kept while referenced)");
	series_unref(a);
	ok(series_open(8, "sda") == other, "other datasets' series stay");
	series_shutdown();
	db_close(db);
}

/* --- flushes packed on a helper thread */

#define NBH 600 /* more than a turn of the loop keeps */

static void test_helper_flush(void)
{
	char err[256];
	snprintf(dbpath, sizeof(dbpath), "%s/helper.db", dir);
	struct db *db = db_open(dbpath, err, sizeof(err));
	struct event_base *base = event_base_new();
	struct workq *wq = base ? workq_new(base, 2) : NULL;
	if (!ok(db && wq, "a database, a loop and two helper threads"))
		return;
	struct series_config c = {
	    .db_path = dbpath, .wq = wq, .unpaced = true, .retention = {24, 336, 8760}};
	ok(series_init(&c, err, sizeof(err)) == 0, "a store that packs on the helpers");
	struct series *all[NBH];
	char key[16];
	for (int i = 0; i < NBH; i++) {
		snprintf(key, sizeof(key), "d%d", i);
		all[i] = series_open(4, key);
	}
	/* The first 200 s with the loop let run after each flush: the helper's pack is
	 * finished by the loop, 512 pieces a turn; the next 200 s without: each is finished
	 * by the loop itself when its seconds are about to leave the recent ones. */
	int handed = 0, back = 0, settled = 0;
	for (int64_t t = T1; t < T1 + 400; t++) {
		for (int i = 0; i < NBH; i++)
			if ((t + i) % 7)
				series_put(all[i], t, value_b(i, t));
		bool was = series_flush_pending();
		series_commit(t);
		if (was && !series_flush_pending())
			settled++;
		if ((t + 1) % 10 || !series_flush_pending())
			continue;
		handed++;
		if (t >= T1 + 200)
			continue;
		for (int k = 0; k < 10000 && series_flush_pending(); k++) {
			event_base_loop(base, EVLOOP_NONBLOCK);
			usleep(100);
		}
		back += !series_flush_pending();
	}
	ok(handed == 40 && back == 20 && settled == 19 && series_flush_pending(),
	   "40 flushes went to the helpers: 20 came back to the loop, 19 were settled by it, "
	   "the last is on its way (%d, %d, %d)",
	   handed, back, settled);
	/* What every second holds, from memory and from disk after a restart. */
	int wrong = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < NBH; i++) {
			struct series_agg out[400];
			struct series_query q = {.series = &all[i],
			                         .nseries = 1,
			                         .start = T1,
			                         .gran = 1,
			                         .width = 1,
			                         .nbuckets = 400,
			                         .out = out};
			done_status = -2;
			series_query(&q, query_done, NULL);
			for (int k = 0; k < 10000 && done_status == -2; k++) {
				event_base_loop(base, EVLOOP_NONBLOCK);
				usleep(100);
			}
			for (int64_t t = T1; t < T1 + 400; t++) {
				bool has = (t + i) % 7;
				const struct series_agg *a = &out[t - T1];
				if (done_status != 0 || a->count != has ||
				    (has && a->sum != value_b(i, t)))
					wrong++;
			}
		}
		if (pass == 0) {
			series_shutdown();
			event_base_loop(base, EVLOOP_NONBLOCK);
			ok(series_init(&c, err, sizeof(err)) == 0, "started again");
			for (int i = 0; i < NBH; i++) {
				snprintf(key, sizeof(key), "d%d", i);
				all[i] = series_open(4, key);
			}
		}
	}
	is_int(wrong, 0, "every second of every series, in memory and on disk after a stop");
	series_shutdown();
	workq_free(wq);
	event_base_free(base);
	db_close(db);
}

int main(void)
{
	evthread_use_pthreads();
	snprintf(dir, sizeof(dir), "/tmp/spindle-test-series.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/spindle.db", dir);
	test_store();
	test_budget();
	test_late();
	test_open();
	test_helper_flush();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
