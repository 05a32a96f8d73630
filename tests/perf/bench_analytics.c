/* SPDX-License-Identifier: ISC */
/* Benchmark, not a test: the analytics collector and store on a synthetic box of 64 disks
 * (48 busy in a pool, 16 idle spares), 8 NICs (2 busy, 1 trickling, 5 idle), 16 CPUs,
 * pressure and a ZFS ARC, whose counters follow a daily load curve with noise.
 *
 *   bench_analytics tick [TICKS]   CPU per collector tick on the loop thread
 *   bench_analytics day DIR        a simulated day (86,400 ticks, as fast as it goes) into
 *                                  DIR/spindle.db: bytes on disk per stored value, and
 *                                  query times for a day at minute and an hour at second
 *                                  granularity; DIR is then a state dir spindled can open
 *
 * Run through tests/perf/collector.sh, which builds it and adds the HTTP figures. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "analytics/collector.h"
#include "analytics/datasets.h"
#include "db/db.h"
#include "analytics/series.h"
#include "base/util.h"

#define NDISKS 64
#define NBUSY  48
#define NNICS  8
#define NCPUS  16

static char root[256];
static char *text;
static size_t text_cap = 1 << 20;

static struct {
	uint64_t cpu[8]; /* user nice system idle iowait irq softirq steal */
	uint64_t disk[NDISKS][9];
	uint64_t rx[NNICS], tx[NNICS];
	uint64_t psi[3];
	uint64_t hits, misses, iohits, arc_size;
	uint64_t cached_kb;
	uint64_t rng;
} B = {.rng = 88172645463325252ull};

static uint64_t rnd(void)
{
	B.rng ^= B.rng << 13;
	B.rng ^= B.rng >> 7;
	B.rng ^= B.rng << 17;
	return B.rng;
}

/* A uniform factor in [lo, hi). */
static double between(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() % 1000000) / 1e6;
}

/* The day's load: low at night, high in the afternoon (a triangle, no libm). */
static double load(int64_t t)
{
	double x = (double)(t % 86400) / 86400;
	return 0.15 + 0.85 * (x < 0.6 ? x / 0.6 : (1 - x) / 0.4);
}

static void put_file(const char *rel, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/proc/%s", root, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* Advances the counters by one second of load and writes every file. */
static void box_second(int64_t t)
{
	double f = load(t);
	size_t n = 0;

	uint64_t total = 100 * NCPUS;
	uint64_t user = (uint64_t)((double)total * 0.3 * f * between(0.8, 1.2));
	uint64_t sys = (uint64_t)((double)total * 0.08 * f * between(0.7, 1.3));
	uint64_t iow = (uint64_t)((double)total * 0.03 * between(0, 1));
	uint64_t soft = (uint64_t)((double)total * 0.01 * f * between(0.5, 1.5));
	uint64_t irq = rnd() % 3;
	uint64_t busy = user + sys + iow + soft + irq;
	B.cpu[0] += user;
	B.cpu[2] += sys;
	B.cpu[3] += busy < total ? total - busy : 0;
	B.cpu[4] += iow;
	B.cpu[5] += irq;
	B.cpu[6] += soft;
	n = (size_t)snprintf(text, text_cap, "cpu  %llu %llu %llu %llu %llu %llu %llu %llu 0 0\n",
	                     (unsigned long long)B.cpu[0], (unsigned long long)B.cpu[1],
	                     (unsigned long long)B.cpu[2], (unsigned long long)B.cpu[3],
	                     (unsigned long long)B.cpu[4], (unsigned long long)B.cpu[5],
	                     (unsigned long long)B.cpu[6], (unsigned long long)B.cpu[7]);
	for (int c = 0; c < NCPUS; c++)
		n += (size_t)snprintf(text + n, text_cap - n, "cpu%d 1 1 1 1 1 1 1 1 0 0\n", c);
	n += (size_t)snprintf(text + n, text_cap - n, "btime 1700000000\n");
	put_file("stat", n);

	n = 0;
	for (int d = 0; d < NDISKS; d++) {
		uint64_t *k = B.disk[d];
		if (d < NBUSY) {
			uint64_t r = (uint64_t)(800 * f * between(0.6, 1.4));
			uint64_t w = (uint64_t)(250 * f * between(0.5, 1.5));
			uint64_t rms = (uint64_t)((double)r * between(0.3, 2.5));
			uint64_t wms = (uint64_t)((double)w * between(0.8, 4));
			uint64_t io = r + w > 0 ? (uint64_t)(1000 * f * between(0.5, 0.95)) : 0;
			k[0] += r;
			k[1] += r * (rnd() % 8 ? 16 : 256); /* 8k reads, now and then 128k */
			k[2] += rms;
			k[3] += w;
			k[4] += w * (16 + 16 * (rnd() % 4));
			k[5] += wms;
			k[7] += io;
			k[8] += rms + wms;
		}
		/* the kernel's order: each disk followed by its one partition */
		n += (size_t)snprintf(
		    text + n, text_cap - n,
		    "   8 %d sd%c%c %llu 0 %llu %llu %llu 0 %llu %llu %llu %llu %llu 0 0 0 0\n"
		    "   8 %d sd%c%c1 %llu 0 %llu %llu %llu 0 %llu %llu %llu %llu %llu 0 0 0 0\n",
		    2 * d, 'a' + d / 26, 'a' + d % 26, (unsigned long long)k[0],
		    (unsigned long long)k[1], (unsigned long long)k[2], (unsigned long long)k[3],
		    (unsigned long long)k[4], (unsigned long long)k[5], (unsigned long long)k[6],
		    (unsigned long long)k[7], (unsigned long long)k[8], 2 * d + 1, 'a' + d / 26,
		    'a' + d % 26, (unsigned long long)k[0], (unsigned long long)k[1],
		    (unsigned long long)k[2], (unsigned long long)k[3], (unsigned long long)k[4],
		    (unsigned long long)k[5], (unsigned long long)k[6], (unsigned long long)k[7],
		    (unsigned long long)k[8]);
	}
	put_file("diskstats", n);

	n = (size_t)snprintf(text, text_cap,
	                     "Inter-|   Receive |  Transmit\n face |bytes packets\n"
	                     "    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	for (int i = 0; i < NNICS; i++) {
		if (i < 2) {
			B.rx[i] += (uint64_t)(60e6 * f * between(0.5, 1.5));
			B.tx[i] += (uint64_t)(25e6 * f * between(0.5, 1.5));
		} else if (i == 2) { /* management: a trickle */
			B.rx[i] += 200 + rnd() % 3000;
			B.tx[i] += 100 + rnd() % 1000;
		}
		n += (size_t)snprintf(text + n, text_cap - n,
		                      "  eth%d: %llu 1 0 0 0 0 0 0 %llu 1 0 0 0 0 0 0\n", i,
		                      (unsigned long long)B.rx[i], (unsigned long long)B.tx[i]);
	}
	put_file("net/dev", n);

	if (t % 60 == 0) /* the page cache moves slowly */
		B.cached_kb = 100000000 + rnd() % 20000000;
	n = (size_t)snprintf(text, text_cap,
	                     "MemTotal: 268435456 kB\nMemFree: %llu kB\nBuffers: 1048576 kB\n"
	                     "Cached: %llu kB\nSReclaimable: 4194304 kB\n",
	                     (unsigned long long)(150000000 - B.cached_kb / 2),
	                     (unsigned long long)B.cached_kb);
	put_file("meminfo", n);

	static const char *const psi[3] = {"pressure/cpu", "pressure/io", "pressure/memory"};
	B.psi[1] += rnd() % 10 == 0 ? rnd() % 50000 : 0; /* io stalls now and then */
	for (int i = 0; i < 3; i++) {
		n = (size_t)snprintf(text, text_cap,
		                     "some avg10=0.00 avg60=0.00 avg300=0.00 total=%llu\n"
		                     "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		                     (unsigned long long)B.psi[i]);
		put_file(psi[i], n);
	}

	uint64_t acc = (uint64_t)(6000 * f * between(0.7, 1.3));
	B.hits += acc * 94 / 100;
	B.iohits += acc / 100;
	B.misses += acc - acc * 94 / 100 - acc / 100;
	if (t % 60 == 0)
		B.arc_size = 200000000000ull + rnd() % 1000000000;
	n = (size_t)snprintf(text, text_cap,
	                     "13 1 0x01 1 2 3 4\nname type data\nhits 4 %llu\niohits 4 %llu\n"
	                     "misses 4 %llu\nc 4 214748364800\nsize 4 %llu\ndata_size 4 %llu\n"
	                     "metadata_size 4 20000000000\nmfu_size 4 1\nmru_size 4 1\n",
	                     (unsigned long long)B.hits, (unsigned long long)B.iohits,
	                     (unsigned long long)B.misses, (unsigned long long)B.arc_size,
	                     (unsigned long long)(B.arc_size - 30000000000ull));
	put_file("spl/kstat/zfs/arcstats", n);
}

static void mkdirs_for_proc(void)
{
	char path[512];
	static const char *const dirs[] = {"/proc/net", "/proc/pressure", "/proc/spl/kstat/zfs"};
	for (size_t i = 0; i < nitems(dirs); i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		util_mkdirs(path, 0755);
	}
}

static double ms_of(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct stack {
	struct db *db;
	struct event_base *base;
};

static void stack_up(struct stack *st, const char *state)
{
	char path[512], err[256];
	util_mkdirs(state, 0700);
	snprintf(path, sizeof(path), "%s/spindle.db", state);
	st->db = db_open(path, err, sizeof(err));
	if (!st->db) {
		fprintf(stderr, "bench: %s\n", err);
		exit(1);
	}
	struct series_config sc = {.db_path = path, .unpaced = true, .retention = {24, 336, 8760}};
	if (series_init(&sc, err, sizeof(err)) < 0 || datasets_init(st->db) < 0) {
		fprintf(stderr, "bench: %s\n", err);
		exit(1);
	}
	st->base = event_base_new();
	struct collector_config cc = {root, root, false, false};
	collector_init(st->base, &cc);
}

static void stack_down(struct stack *st)
{
	collector_shutdown();
	datasets_shutdown();
	series_shutdown();
	event_base_free(st->base);
	db_close(st->db);
}

static int bench_tick(int ticks)
{
	struct stack st;
	char state[300];
	snprintf(state, sizeof(state), "%s/state", root);
	stack_up(&st, state);
	int64_t t0 = util_now() - ticks - 100;
	double *cpu = xcalloc((size_t)ticks, sizeof(*cpu));
	struct timespec p0 = {0}, p1 = {0};
	double main_ms = 0;
	for (int i = -20; i < ticks; i++) { /* 20 to warm up: the first ticks allocate */
		box_second(t0 + i);
		struct timespec a, b;
		if (i == 0)
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		collector_tick_at(t0 + 20 + i);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		if (i >= 0) {
			cpu[i] = ms_of(&a, &b);
			main_ms += cpu[i];
		}
	}
	series_sync();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
	const struct box_sample *s = collector_latest();
	size_t nser = 0;
	struct dataset *d = datasets_find("io.ops[disk]");
	struct dataset_info in;
	datasets_info(d, &in);
	nser = in.nkeys;
	double sum = 0;
	for (int i = 0; i < ticks; i++)
		sum += cpu[i];
	qsort(cpu, (size_t)ticks, sizeof(*cpu), cmp_double);
	printf("collector: %d disks (%d partitions left out), %d NICs, %d CPUs, ARC %s; "
	       "io.ops[disk] has %zu keys\n",
	       s->ndisks, NDISKS, s->nnics, s->ncpus, s->have_arc ? "yes" : "no", nser);
	printf("collector: CPU per tick on the loop thread over %d ticks: mean %.3f ms, "
	       "median %.3f ms, p99 %.3f ms, max %.3f ms (target < 0.3 ms)\n",
	       ticks, sum / ticks, cpu[ticks / 2], cpu[ticks * 99 / 100], cpu[ticks - 1]);
	/* the writer's share: the process's CPU not spent on the loop thread's ticks or on
	 * writing the synthetic files (measured apart below) */
	struct timespec w0, w1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &w0);
	for (int i = 0; i < 200; i++)
		box_second(t0 + ticks + 100 + i);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &w1);
	double files_ms = ms_of(&w0, &w1) / 200 * ticks;
	double writer = ms_of(&p0, &p1) - main_ms - files_ms;
	printf("collector: the samples writer thread: %.3f ms of CPU per second of data\n",
	       writer > 0 ? writer / ticks : 0);
	free(cpu);
	stack_down(&st);
	return 0; /* figures, not a verdict */
}

/* --- the day */

static uint64_t values_stored;

static void count_value(void *arg, const char *key, double v)
{
	values_stored++;
}

static void count_dataset(void *arg, struct dataset *d)
{
	struct dataset_info in;
	datasets_info(d, &in);
	if (!in.suspended)
		datasets_values(d, arg, count_value, NULL);
}

static void count_tick(void *arg, const struct box_sample *s)
{
	datasets_each(count_dataset, (void *)s);
}

struct qcase {
	const char *dataset;
	int64_t start, gran;
	size_t nbuckets;
	const char *what;
};

static void no_done(void *arg, int status)
{
}

static double query_ms(const struct qcase *c)
{
	double runs[5];
	for (int r = 0; r < 5; r++) {
		struct series_query q = {0};
		q.nseries = datasets_series(datasets_find(c->dataset), &q.series);
		q.start = c->start;
		q.gran = c->gran;
		q.width = c->gran;
		q.nbuckets = c->nbuckets;
		q.out = xcalloc(q.nseries * q.nbuckets, sizeof(*q.out));
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		series_query(&q, no_done, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		runs[r] = ms_of(&a, &b);
		size_t have = 0;
		for (size_t i = 0; i < q.nbuckets; i++)
			have += q.out[i].count > 0;
		if (r == 0 && have < q.nbuckets * 9 / 10)
			printf("query: %s: only %zu of %zu samples have data\n", c->what, have,
			       q.nbuckets);
		for (size_t i = 0; i < q.nseries; i++)
			series_unref(q.series[i]);
		free(q.series);
		free(q.out);
	}
	qsort(runs, 5, sizeof(*runs), cmp_double);
	return runs[2];
}

static int bench_day(const char *state)
{
	struct stack st;
	stack_up(&st, state);
	collector_subscribe(count_tick, NULL);
	/* A day that ends about now, on an hour boundary, so every hour gets packed. */
	int64_t t0 = util_now() - 86400 - 3600;
	t0 -= t0 % 3600;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int64_t t = t0; t <= t0 + 86400; t++) {
		box_second(t);
		collector_tick_at(t + 1); /* the sample ending at t+1 is the second t */
		if ((t - t0) % 21600 == 0 && t > t0)
			fprintf(stderr, "bench: %lld hours simulated\n",
			        (long long)(t - t0) / 3600);
	}
	series_sync();
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("day: 86,400 ticks simulated in %.1f s; %llu values stored (%.1f a second)\n",
	       ms_of(&a, &b) / 1000, (unsigned long long)values_stored,
	       (double)values_stored / 86400);

	/* Queries, in process: the disk part runs inline here (on a helper thread in spindled). */
	const struct qcase cases[] = {
	    {"io.ops[disk]", t0, 60, 1440, "io.ops[disk] (64 disks), a day at minute granularity"},
	    {"cpu.utilization[mode]", t0, 60, 1440,
	     "cpu.utilization[mode], a day at minute granularity"},
	    {"io.ops[disk]", t0 + 86400 - 3600, 1, 3600,
	     "io.ops[disk] (64 disks), the last hour at second granularity (memory)"},
	    {"cpu.utilization[mode]", t0 + 86400 - 3600, 1, 3600,
	     "cpu.utilization[mode], the last hour at second granularity (memory)"},
	    {"io.ops[disk]", t0 + 86400 - 7200, 1, 3600,
	     "io.ops[disk] (64 disks), an hour at second granularity from disk"},
	};
	for (size_t i = 0; i < nitems(cases); i++)
		printf("query: %s: %.2f ms (median of 5; target < 20 ms)\n", cases[i].what,
		       query_ms(&cases[i]));
	stack_down(&st);

	/* Bytes on disk: the database after a checkpoint, free pages left out. */
	char path[512];
	snprintf(path, sizeof(path), "%s/spindle.db", state);
	sqlite3 *db;
	sqlite3_stmt *stmt;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return 1;
	sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	int64_t pages = 0, freel = 0, psize = 0;
	sqlite3_prepare_v2(db,
	                   "SELECT * FROM pragma_page_count, pragma_freelist_count, "
	                   "pragma_page_size",
	                   -1, &stmt, NULL);
	if (sqlite3_step(stmt) == SQLITE_ROW) {
		pages = sqlite3_column_int64(stmt, 0);
		freel = sqlite3_column_int64(stmt, 1);
		psize = sqlite3_column_int64(stmt, 2);
	}
	sqlite3_finalize(stmt);
	double used = (double)((pages - freel) * psize);
	printf("disk: database %.1f MB in use (%.1f MB file): %.2f bytes per stored value "
	       "(target <= 2)\n",
	       used / 1e6, (double)(pages * psize) / 1e6, used / (double)values_stored);
	if (sqlite3_prepare_v2(db,
	                       "SELECT name, sum(pgsize) FROM dbstat WHERE name LIKE 'analytics%'"
	                       " GROUP BY name ORDER BY 2 DESC",
	                       -1, &stmt, NULL) == SQLITE_OK) {
		while (sqlite3_step(stmt) == SQLITE_ROW)
			printf("disk:   %-28s %8.1f MB  %.2f bytes per value\n",
			       (const char *)sqlite3_column_text(stmt, 0),
			       (double)sqlite3_column_int64(stmt, 1) / 1e6,
			       (double)sqlite3_column_int64(stmt, 1) / (double)values_stored);
		sqlite3_finalize(stmt);
	}
	sqlite3_close(db);
	printf("day: data from %lld to %lld (epoch seconds)\n", (long long)t0,
	       (long long)(t0 + 86400));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "tick") != 0 && strcmp(argv[1], "day") != 0) ||
	    (strcmp(argv[1], "day") == 0 && argc != 3)) {
		fprintf(stderr, "usage: bench_analytics tick [TICKS] | day STATE_DIR\n");
		return 2;
	}
	snprintf(root, sizeof(root), "%s/spindle-bench.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	text = xmalloc(text_cap);
	mkdirs_for_proc();
	int rc = strcmp(argv[1], "tick") == 0 ? bench_tick(argc > 2 ? atoi(argv[2]) : 3000)
	                                      : bench_day(argv[2]);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: could not remove %s\n", root);
	free(text);
	return rc;
}
