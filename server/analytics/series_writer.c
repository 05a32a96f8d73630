/* SPDX-License-Identifier: ISC */
/* The series store's writer thread: see series_writer.h. The series_writer_ functions run
 * on the loop; everything else runs on the writer thread, or in series_writer_start()
 * before the thread does. */
#define _GNU_SOURCE
#include "series_writer.h"
#include "db/db.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Per-row cost besides the packed bytes, for the on-disk estimate (key, header, cell). */
#define ROW_OVERHEAD 16
/* Series per maintenance transaction, and the pause after each: a step holds the
 * database's write lock for a few milliseconds at most, and the pause lets the loop's
 * own writes in between. */
#define COMPACT_STEP   8
#define PRUNE_STEP     32
#define PURGE_STEP     16
#define MAINT_PAUSE_US 3000
/* The flush rows' bytes held at once while an hour is packed: the series are packed in
 * groups of about this much, each group reading the rows again for its own pieces, so a
 * box of a thousand busy disks (60 MB of rows an hour) never holds its whole hour: 30
 * reads of them, some seconds of the writer's an hour, against 60 MB. */
#define PACK_BYTES_DEFAULT (2 << 20)

struct acct {
	int64_t id, rows, bytes;
};

static struct {
	pthread_t thread;
	bool started;
	pthread_mutex_t mu; /* guards the queue, the flags, acct and retention */
	pthread_cond_t wake, idle_cv;
	struct series_batch *head, *tail;
	bool stop, idle, unpaced;
	/* the writer's: flushes the disk refused, oldest first, tried again before the next */
	struct series_batch *failed, *failed_tail;
	bool failed_full; /* the last refusal was for want of space */
	bool holding;     /* writer.mu: failed is not empty, as the loop may ask */
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
	/* the hour being packed: its series (sorted) and the bytes of their pieces, the flush
	 * rows of the group being packed (cmp_series[cmp_pos, cmp_end)), how far it got */
	struct series_flush_rows cmp;
	int64_t *cmp_series, *cmp_bytes;
	size_t cmp_n, cmp_cap, bytes_cap, cmp_pos, cmp_end;
	int64_t cmp_hour, cmp_max_row;
	int64_t pack_bytes; /* PACK_BYTES_DEFAULT unless the configuration says */
	bool cmp_active;
	double hour[3600];
	struct buf buf;
} writer;

/* Inserts v into a sorted array unless it is there; returns whether it was added. */
/* Where v is, or would go, in the sorted arr. */
static size_t sorted_at(const int64_t *arr, size_t n, int64_t v)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (arr[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool sorted_add(int64_t **arr, size_t *n, size_t *cap, int64_t v)
{
	size_t lo = sorted_at(*arr, *n, v);
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
	size_t lo = sorted_at(arr, n, v);
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

void series_batch_free(struct series_batch *b)
{
	for (size_t i = 0; i < b->nnews; i++)
		free(b->news[i].key);
	free(b->news);
	free(b->rows);
	free(b->pieces);
	free(b->ids);
	buf_free(&b->data);
	free(b);
}

/* One flush in one transaction; false when the disk refused it (nothing stored). */
static bool writer_flush(struct series_batch *b)
{
	int rc = db_samples_begin(writer.ds);
	for (size_t i = 0; rc == 0 && i < b->nnews; i++)
		rc = db_samples_series_insert(writer.ds, b->news[i].id, b->news[i].dataset,
		                              b->news[i].key);
	for (size_t i = 0; rc == 0 && i < b->nrows; i++) {
		const struct series_batch_row *r = &b->rows[i];
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
		struct series_batch *b = writer.failed;
		upto = b->upto;
		writer.failed = b->next;
		if (!writer.failed)
			writer.failed_tail = NULL;
		series_batch_free(b);
	}
	if (upto)
		log_info("series: the samples from %lld to %lld, kept in memory while the disk "
		         "refused them, are stored now",
		         (long long)from, (long long)upto);
}

/* Keeps a refused flush to try again, but no more than memory holds (SERIES_RING
 * seconds): older ones are given up, logged; the series they introduce move on. */
static void writer_keep(struct series_batch *b)
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
		struct series_batch *old = writer.failed;
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
		series_batch_free(old);
	}
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
	struct series_unpack_ctx c = {writer.hour, hour, 3600, false};
	for (int i = 0; i < 3600; i++)
		writer.hour[i] = NAN;
	if (db_samples_range(writer.ds, DB_SAMPLES_SECONDS, series, hour, hour + 1,
	                     series_unpack_row, &c) < 0)
		return -1;
	if (!series_flush_rows_unpack(&writer.cmp, series, writer.hour, hour, 3600) || c.bad)
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
		series_rollup_merge(&total, &minutes[i]);
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

/* A piece of the hour being packed (series_flush_row_sizes): its series counted. Deleted
 * series' pieces are left behind: they go with the rows. */
static void count_piece(void *arg, int64_t id, size_t len)
{
	if (!sorted_has(writer.ids, writer.nids, id))
		return;
	size_t lo = sorted_at(writer.cmp_series, writer.cmp_n, id);
	if (lo == writer.cmp_n || writer.cmp_series[lo] != id) {
		writer.cmp_series =
		    util_grow(writer.cmp_series, &writer.cmp_cap, writer.cmp_n, sizeof(int64_t));
		writer.cmp_bytes =
		    util_grow(writer.cmp_bytes, &writer.bytes_cap, writer.cmp_n, sizeof(int64_t));
		size_t tail = (writer.cmp_n - lo) * sizeof(int64_t);
		memmove(&writer.cmp_series[lo + 1], &writer.cmp_series[lo], tail);
		memmove(&writer.cmp_bytes[lo + 1], &writer.cmp_bytes[lo], tail);
		writer.cmp_series[lo] = id;
		writer.cmp_bytes[lo] = 0;
		writer.cmp_n++;
	}
	writer.cmp_bytes[lo] += (int64_t)len;
}

static int count_row(void *arg, int64_t id, int64_t start, int span, const void *data, size_t len)
{
	if (series_flush_row_sizes(data, len, count_piece, NULL) < 0)
		log_warn("series: flush row %lld is malformed; skipped", (long long)id);
	if (id > writer.cmp_max_row)
		writer.cmp_max_row = id;
	return 0;
}

/* One step of packing the oldest complete hour: count its series' bytes in its flush rows,
 * then per group of series (pack_bytes) read their pieces and pack a few series per
 * transaction, then drop the rows. A crash in between leaves the rows: the hour is packed
 * again at the next start, to the same result. True when a step was done. */
static bool writer_compact_step(void)
{
	if (!writer.cmp_active) {
		if (writer.nhours == 0 || writer.hours[0] + 3600 > writer.upto)
			return false;
		int64_t hour = writer.hours[0];
		memmove(writer.hours, writer.hours + 1,
		        (writer.nhours - 1) * sizeof(*writer.hours));
		writer.nhours--;
		writer.cmp_hour = hour;
		writer.cmp_n = writer.cmp_pos = writer.cmp_end = 0;
		writer.cmp_max_row = 0;
		if (db_samples_recent_range(writer.ds, hour, hour + 3600, count_row, NULL) < 0) {
			log_err("series: the hour at %lld cannot be read; packed at the next start",
			        (long long)hour);
			return true;
		}
		writer.cmp_active = true;
		return true;
	}
	int64_t hour = writer.cmp_hour;
	if (writer.cmp_pos < writer.cmp_n && writer.cmp_pos == writer.cmp_end) {
		/* The next group: rows written since the count (a clock that stepped back) wait
		 * for the next start, as they are not deleted either. */
		size_t e = writer.cmp_pos;
		int64_t bytes = 0;
		while (e < writer.cmp_n &&
		       (e == writer.cmp_pos || bytes + writer.cmp_bytes[e] <= writer.pack_bytes))
			bytes += writer.cmp_bytes[e++];
		series_flush_rows_reset(&writer.cmp);
		writer.cmp.hour = hour;
		writer.cmp.want = &writer.cmp_series[writer.cmp_pos];
		writer.cmp.nwant = e - writer.cmp_pos;
		writer.cmp.max_row = writer.cmp_max_row;
		if (db_samples_recent_range(writer.ds, hour, hour + 3600, series_flush_rows_add,
		                            &writer.cmp) < 0) {
			log_err("series: the hour at %lld cannot be read; packed at the next start",
			        (long long)hour);
			series_flush_rows_reset(&writer.cmp);
			writer.cmp_active = false;
			return true;
		}
		writer.cmp_end = e;
		return true;
	}
	if (writer.cmp_pos < writer.cmp_n) {
		size_t n = writer.cmp_end - writer.cmp_pos < COMPACT_STEP
		               ? writer.cmp_end - writer.cmp_pos
		               : COMPACT_STEP;
		/* A series purged since the count is left out: its rows are gone, and packing
		 * would write new ones nothing would ever delete. */
		int rc = db_samples_begin(writer.ds);
		for (size_t i = writer.cmp_pos; rc == 0 && i < writer.cmp_pos + n; i++)
			if (sorted_has(writer.ids, writer.nids, writer.cmp_series[i]))
				rc = writer_compact(writer.cmp_series[i], hour);
		if (db_samples_end(writer.ds, rc) < 0)
			log_err("series: packing the hour at %lld failed; its flushes stay",
			        (long long)hour);
		for (size_t i = writer.cmp_pos; i < writer.cmp_pos + n; i++)
			if (sorted_has(writer.ids, writer.nids, writer.cmp_series[i]))
				acct_measure(writer.cmp_series[i]);
		writer.cmp_pos += n;
		return true;
	}
	int rc = db_samples_begin(writer.ds);
	if (rc == 0)
		rc = db_samples_recent_delete(writer.ds, hour, hour + 3600, writer.cmp_max_row);
	db_samples_end(writer.ds, rc);
	series_flush_rows_reset(&writer.cmp);
	writer.cmp_active = false;
	/* What the packing held, in blocks under the mmap threshold, goes back to the system
	 * rather than staying in this thread's heap until the next hour. */
	malloc_trim(0);
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

static void writer_batch(struct series_batch *b)
{
	if (b->kind == SERIES_BATCH_PURGE) {
		for (size_t i = 0; i < b->nids; i++) {
			sorted_remove(writer.ids, &writer.nids, b->ids[i]);
			writer.purge = util_grow(writer.purge, &writer.purge_cap, writer.npurge,
			                         sizeof(*writer.purge));
			writer.purge[writer.npurge++] = b->ids[i];
		}
		writer.prune_pos = 0; /* the list moved under the walk */
		series_batch_free(b);
		return;
	}
	writer.now = b->upto;
	writer_retry();
	if (writer.failed || !writer_flush(b)) {
		writer_keep(b);
		return;
	}
	series_batch_free(b);
}

static void *writer_main(void *arg)
{
	pthread_mutex_lock(&writer.mu);
	for (;;) {
		if (writer.head) {
			struct series_batch *b = writer.head;
			writer.head = b->next;
			if (!writer.head)
				writer.tail = NULL;
			writer.idle = false;
			pthread_mutex_unlock(&writer.mu);
			writer_batch(b);
			pthread_mutex_lock(&writer.mu);
			writer.holding = writer.failed != NULL;
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
	for (struct series_batch *b = writer.failed; b; b = b->next)
		log_err("series: stopping: the samples from %lld to %lld are lost (%s)",
		        (long long)b->from, (long long)b->upto, refusal());
	pthread_mutex_lock(&writer.mu);
	writer.idle = true;
	pthread_cond_broadcast(&writer.idle_cv);
	pthread_mutex_unlock(&writer.mu);
	return NULL;
}

bool series_writer_holding(void)
{
	pthread_mutex_lock(&writer.mu);
	bool h = writer.holding;
	pthread_mutex_unlock(&writer.mu);
	return h;
}

void series_writer_enqueue(struct series_batch *b)
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

struct load_ctx {
	series_writer_load_fn fn;
	void *arg;
};

static int load_series(void *arg, int64_t id, int64_t dataset, const char *key)
{
	struct load_ctx *c = arg;
	c->fn(c->arg, id, dataset, key);
	sorted_add(&writer.ids, &writer.nids, &writer.ids_cap, id);
	return 0;
}

static int load_hour(void *arg, int64_t hour)
{
	sorted_add(&writer.hours, &writer.nhours, &writer.hours_cap, hour);
	return 0;
}

int series_writer_start(const struct series_config *cfg, series_writer_load_fn load, void *arg,
                        size_t *hours, char *err, size_t errlen)
{
	memset(&writer, 0, sizeof(writer));
	pthread_mutex_init(&writer.mu, NULL);
	pthread_cond_init(&writer.wake, NULL);
	pthread_cond_init(&writer.idle_cv, NULL);
	writer.ret = cfg->retention;
	writer.unpaced = cfg->unpaced;
	writer.pack_bytes = cfg->pack_bytes > 0 ? cfg->pack_bytes : PACK_BYTES_DEFAULT;
	writer.last_prune_hour = -1;

	writer.ds = db_samples_open(cfg->db_path, false, err, errlen);
	if (!writer.ds)
		return -1;
	/* Before the thread runs, so both lists are the writer's from then on. */
	struct load_ctx c = {load, arg};
	if (db_samples_series_list(writer.ds, load_series, &c) < 0 ||
	    db_samples_recent_hours(writer.ds, load_hour, NULL) < 0) {
		snprintf(err, errlen, "%s: cannot read the analytics series", cfg->db_path);
		return -1;
	}
	*hours = writer.nhours;
	if (pthread_create(&writer.thread, NULL, writer_main, NULL) != 0) {
		snprintf(err, errlen, "cannot start the samples writer: %s", strerror(errno));
		return -1;
	}
	writer.started = true;
	return 0;
}

void series_writer_stop(void)
{
	if (writer.started) {
		pthread_mutex_lock(&writer.mu);
		writer.stop = true;
		pthread_cond_signal(&writer.wake);
		pthread_mutex_unlock(&writer.mu);
		pthread_join(writer.thread, NULL);
	}
	while (writer.head) {
		struct series_batch *b = writer.head;
		writer.head = b->next;
		series_batch_free(b);
	}
	while (writer.failed) {
		struct series_batch *b = writer.failed;
		writer.failed = b->next;
		series_batch_free(b);
	}
	db_samples_close(writer.ds);
	free(writer.hours);
	series_flush_rows_free(&writer.cmp);
	free(writer.cmp_series);
	free(writer.cmp_bytes);
	free(writer.ids);
	free(writer.purge);
	free(writer.acct);
	buf_free(&writer.buf);
	pthread_mutex_destroy(&writer.mu);
	pthread_cond_destroy(&writer.wake);
	pthread_cond_destroy(&writer.idle_cv);
	memset(&writer, 0, sizeof(writer));
}

void series_writer_sync(void)
{
	pthread_mutex_lock(&writer.mu);
	while (writer.started && !(writer.idle && !writer.head && !writer.prune_requested))
		pthread_cond_wait(&writer.idle_cv, &writer.mu);
	pthread_mutex_unlock(&writer.mu);
}

void series_writer_retention(const struct series_retention *r)
{
	pthread_mutex_lock(&writer.mu);
	writer.ret = *r;
	writer.prune_requested = true;
	pthread_cond_signal(&writer.wake);
	pthread_mutex_unlock(&writer.mu);
}

int64_t series_writer_disk_bytes(int64_t id)
{
	int64_t bytes = 0;
	pthread_mutex_lock(&writer.mu);
	const struct acct *a = acct_find(id, false);
	if (a)
		bytes = a->bytes + a->rows * ROW_OVERHEAD;
	pthread_mutex_unlock(&writer.mu);
	return bytes;
}
