/* SPDX-License-Identifier: ISC */
/* The knee of a sweep (server/bench/sweeps.c): the smallest thread count past which IOPS grow
 * less than 5 % while p99 grows, per group of the other axes' values. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "bench/sweeps.h"
#include "base/util.h"

static void knee_of(const double (*rows)[3], size_t n, struct sweep_knee *k)
{
	struct sweep_point pts[16];
	for (size_t i = 0; i < n; i++)
		pts[i] = (struct sweep_point){rows[i][0], rows[i][1], rows[i][2]};
	sweep_knee_find(pts, n, k);
}

static void test_find(void)
{
	struct sweep_knee k;
	/* IOPS = min(threads, 8) * 1000, p99 flat to 8 threads and growing past */
	static const double flat[][3] = {{1, 1000, 100000}, {2, 2000, 100000},  {4, 4000, 100000},
	                                 {8, 8000, 100000}, {16, 8000, 200000}, {32, 8000, 400000}};
	knee_of(flat, nitems(flat), &k);
	ok(k.found, "a knee where IOPS stop growing and p99 grows");
	ok(k.threads == 8 && k.iops == 8000 && k.p99_ns == 100000, "at 8 threads (%g)", k.threads);
	is_str(k.why, "16 threads gave +0.0 % IOPS for +100.0 % p99", "why says the next step");

	/* given out of order: sorted by threads first */
	static const double shuffled[][3] = {{32, 8000, 400000}, {2, 2000, 100000},
	                                     {8, 8000, 100000},  {16, 8000, 200000},
	                                     {1, 1000, 100000},  {4, 4000, 100000}};
	knee_of(shuffled, nitems(shuffled), &k);
	ok(k.found && k.threads == 8, "order does not matter (%g)", k.threads);

	/* +4.9 % is under the bar, +5 % is not */
	static const double small[][3] = {{4, 1000, 100}, {8, 1049, 150}, {16, 1060, 300}};
	knee_of(small, nitems(small), &k);
	ok(k.found && k.threads == 4, "+4.9 %% IOPS for more p99 is the knee (%g)", k.threads);
	is_str(k.why, "8 threads gave +4.9 % IOPS for +50.0 % p99", "why with the shares");
	static const double five[][3] = {{4, 1000, 100}, {8, 1050, 150}};
	knee_of(five, nitems(five), &k);
	ok(!k.found, "+5 %% IOPS is still growth");

	/* flat IOPS but p99 not growing: no knee yet */
	static const double calm[][3] = {{1, 1000, 100}, {2, 1010, 100}, {4, 1020, 90}};
	knee_of(calm, nitems(calm), &k);
	ok(!k.found, "no knee while p99 does not grow");
	is_str(k.why,
	       "IOPS grew by 5 % or more, or p99 did not grow, at every step up to 4 threads",
	       "why there is none");

	/* IOPS kept growing */
	static const double growing[][3] = {{1, 1000, 100}, {2, 1900, 120}, {4, 3500, 200}};
	knee_of(growing, nitems(growing), &k);
	ok(!k.found, "no knee while IOPS keep growing");

	/* the first qualifying step wins, even if a later one grows again */
	static const double twice[][3] = {{1, 1000, 100}, {2, 1010, 200}, {4, 3000, 300}};
	knee_of(twice, nitems(twice), &k);
	ok(k.found && k.threads == 1, "the smallest thread count (%g)", k.threads);

	/* too few */
	knee_of(flat, 1, &k);
	ok(!k.found, "one run: no knee");
	is_str(k.why, "1 finished run in this group; the knee needs two thread counts or more",
	       "why: too few");
	knee_of(flat, 0, &k);
	ok(!k.found && strstr(k.why, "0 finished runs"), "no runs: no knee");

	/* zero IOPS then some: growth */
	static const double zero[][3] = {{1, 0, 100}, {2, 10, 200}};
	knee_of(zero, nitems(zero), &k);
	ok(!k.found, "from zero IOPS any IOPS are growth");
}

static json_t *row(int threads, const char *bs, const char *state, double iops, double p99)
{
	return json_pack("{s:{s:i, s:s}, s:s, s:f, s:f}", "values", "threads", threads,
	                 "block_size", bs, "state", state, "iops", iops, "p99_ns", p99);
}

static void test_json(void)
{
	json_t *axes =
	    json_loads("{\"threads\":[1,2,4,8,16],\"block_size\":[\"4k\",\"8k\"]}", 0, NULL);
	json_t *table = json_array();
	static const int threads[] = {1, 2, 4, 8, 16};
	for (size_t i = 0; i < nitems(threads); i++) {
		int t = threads[i];
		/* 4k: knee at 8; 8k: IOPS keep growing */
		json_array_append_new(
		    table, row(t, "4k", "done", (t < 8 ? t : 8) * 1000.0, t > 8 ? 200000 : 100000));
		json_array_append_new(
		    table, row(t, "8k", t == 16 ? "running" : "done", t * 500.0, 100000 + t));
	}
	json_t *knee = sweep_knee_json(axes, table);
	is_int(json_array_size(knee), 2, "one entry per group of the other axes");
	json_t *a = json_array_get(knee, 0), *b = json_array_get(knee, 1);
	is_str(json_string_value(json_object_get(json_object_get(a, "group"), "block_size")), "4k",
	       "the first group is the first value");
	is_str(json_string_value(json_object_get(a, "axis")), "threads", "over threads");
	is_int(json_integer_value(json_object_get(a, "threads")), 8, "4k: the knee at 8 threads");
	ok(json_real_value(json_object_get(a, "iops")) == 8000, "with its IOPS");
	is_int(json_integer_value(json_object_get(a, "p99_ns")), 100000, "and its p99");
	ok(json_is_null(json_object_get(b, "threads")), "8k: none");
	is_str(json_string_value(json_object_get(b, "why")),
	       "IOPS grew by 5 % or more, or p99 did not grow, at every step up to 8 threads",
	       "8k: only the runs done count");
	json_decref(knee);

	json_t *noaxis = json_loads("{\"block_size\":[\"4k\",\"8k\"]}", 0, NULL);
	knee = sweep_knee_json(noaxis, table);
	is_int(json_array_size(knee), 1, "without a threads axis: one entry");
	a = json_array_get(knee, 0);
	ok(json_is_null(json_object_get(a, "threads")) && json_is_null(json_object_get(a, "axis")),
	   "no knee, no axis");
	ok(strstr(json_string_value(json_object_get(a, "why")), "no threads axis") != NULL,
	   "why: no threads axis");
	ok(json_object_size(json_object_get(a, "group")) == 0, "the group is empty");
	json_decref(knee);
	json_decref(noaxis);

	/* readers count as threads; one axis only: one group, empty */
	json_t *readers = json_loads("{\"readers\":[1,2]}", 0, NULL);
	json_t *t2 =
	    json_pack("[{s:{s:i}, s:s, s:f, s:f}, {s:{s:i}, s:s, s:f, s:f}]", "values", "readers",
	              1, "state", "done", "iops", 1000.0, "p99_ns", 10.0, "values", "readers", 2,
	              "state", "done", "iops", 1010.0, "p99_ns", 20.0);
	knee = sweep_knee_json(readers, t2);
	a = json_array_get(knee, 0);
	is_str(json_string_value(json_object_get(a, "axis")), "readers", "readers as the axis");
	is_int(json_integer_value(json_object_get(a, "threads")), 1, "its knee");
	json_decref(knee);
	json_decref(readers);
	json_decref(t2);
	json_decref(table);
	json_decref(axes);
}

int main(void)
{
	test_find();
	test_json();
	return done_testing();
}
