/* SPDX-License-Identifier: ISC */
/* Findings from synthetic results, environments and intervals, with exact numbers: the
 * 128k-recordsize-under-8k-random-reads amplification, the cache-served share, system CPU
 * per I/O, the limit, the tail, stability and warm-up; absent inputs leave a finding out.
 * Then a comparison's differences and its significance notes. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bench/job_findings.h"

#define is_num(got, want, ...)                                                                     \
	do {                                                                                       \
		double g_ = (got), w_ = (want);                                                    \
		if (!ok(fabs(g_ - w_) < 1e-9 * (fabs(w_) + 1), __VA_ARGS__))                       \
			printf("#   got %.10g, want %.10g\n", g_, w_);                             \
	} while (0)

static json_t *J(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	if (!o) {
		printf("# bad JSON in the test: %s: %s\n", err.text, text);
		exit(2);
	}
	return o;
}

static const json_t *find(const json_t *arr, const char *id)
{
	size_t i;
	const json_t *f;
	json_array_foreach(arr, i, f)
	{
		if (strcmp(json_string_value(json_object_get(f, "id")), id) == 0)
			return f;
	}
	return NULL;
}

static double value(const json_t *f)
{
	return json_number_value(json_object_get(f, "value"));
}

static double input(const json_t *f, const char *k)
{
	return json_number_value(json_object_get(json_object_get(f, "inputs"), k));
}

static bool flag(const json_t *f)
{
	return json_is_true(json_object_get(f, "flag"));
}

static const char *text(const json_t *f)
{
	const char *t = json_string_value(json_object_get(f, "text"));
	return t ? t : "";
}

/* 8k random reads on a dataset of 128k records: 1000 reads/s asked, the disk 1000 reads/s
 * of 128k each; busy 97.5 %; 4 CPUs 12.5 % in the kernel; p99.9 25x p50. */
#define RESULT_ZFS                                                                                 \
	"{\"elapsed_s\":10.0,\"read\":{\"ops\":10000,\"bytes\":81920000,\"iops\":1000.0,"          \
	"\"bytes_per_s\":8192000,\"latency_ns\":{\"p50\":100000,\"p99.9\":2500000}},"              \
	"\"write\":{\"ops\":0,\"bytes\":0,\"iops\":0.0,\"bytes_per_s\":0,\"latency_ns\":{\"p50\":" \
	"0,\"p99.9\":0}},\"cpu\":{\"user_s\":1.0,\"system_s\":2.0},"                               \
	"\"device\":{\"disk\":\"sda\",\"seconds\":10,\"reads_per_s\":1000.0,"                      \
	"\"read_bytes_per_s\":131072000,\"busy_pct\":97.5,\"queue\":31.2},"                        \
	"\"box_cpu\":{\"seconds\":10,\"cpus\":4,\"idle_pct\":50.0,\"system_pct\":12.5}}"

static void test_zfs_randread(void)
{
	json_t *spec = J("{\"pattern\":\"randread\",\"block_size\":8192}");
	json_t *env = J("{\"zfs\":{\"recordsize\":131072,\"primarycache\":\"all\"}}");
	json_t *res = J(RESULT_ZFS);
	json_t *fs = findings_compute(spec, env, res, NULL);
	const json_t *f = find(fs, "read_amplification");
	ok(f != NULL, "128k records under 8k random reads: read amplification");
	is_num(value(f), 16.0, "131072000 / 8192000 = 16x");
	ok(flag(f), "flagged (above 1.5)");
	is_num(input(f, "worst_case"), 16, "recordsize / block size: 16x at worst");
	is_num(input(f, "recordsize"), 131072, "the recordsize is an input");
	is_num(input(f, "block_size"), 8192, "the block size is an input");
	is_num(input(f, "disk_read_bytes"), 1310720000, "disk bytes over the 10 s");
	is_num(input(f, "app_read_bytes"), 81920000, "the job's bytes over the 10 s");
	ok(strstr(text(f), "16.00x") && strstr(text(f), "up to 16x"), "the text: %s", text(f));
	ok(strstr(json_string_value(json_object_get(f, "rule")), "flagged above 1.5") != NULL,
	   "the rule names its threshold");
	is_str(json_string_value(json_object_get(f, "unit")), "x", "unit x");

	f = find(fs, "cache_served");
	is_num(value(f), 0, "as many disk reads as reads asked: nothing from a cache");
	ok(!flag(f), "not flagged");

	f = find(fs, "sys_cpu_per_io");
	is_num(value(f), 500, "12.5 %% x 4 CPUs / 1000 IOPS = 500 µs");
	is_num(input(f, "worker_us_per_io"), 200, "the worker's 2 s / 10000 I/Os = 200 µs");
	ok(strstr(json_string_value(json_object_get(f, "rule")), "the box's system CPU share"),
	   "the rule says which CPU time");
	ok(flag(f), "flagged above 50 µs");

	f = find(fs, "limit");
	is_str(json_string_value(json_object_get(f, "value")), "device",
	       "busy 97.5 %%: the device");
	is_num(input(f, "queue"), 31.2, "with its queue depth");
	ok(flag(f) && strstr(text(f), "31.2 requests"), "flagged; the text: %s", text(f));

	f = find(fs, "tail");
	is_num(value(f), 25, "p99.9 2.5 ms / p50 100 µs = 25x");
	ok(flag(f), "flagged above 10");
	is_str(json_string_value(json_object_get(json_object_get(f, "inputs"), "direction")),
	       "read", "of the reads (the writes had none)");

	ok(!find(fs, "stability") && !find(fs, "warmup"), "no intervals: no stability, no warm-up");
	is_int(json_array_size(fs), 5, "five findings");
	json_decref(fs);

	/* the same dataset under sequential reads, and 128k random reads: no worst case */
	json_t *seq = J("{\"pattern\":\"read\",\"block_size\":8192}");
	fs = findings_compute(seq, env, res, NULL);
	f = find(fs, "read_amplification");
	ok(f && !json_object_get(json_object_get(f, "inputs"), "worst_case"),
	   "sequential reads: measured, no worst case");
	json_decref(fs);
	json_decref(seq);
	json_decref(spec);
	json_decref(env);
	json_decref(res);
}

static void test_absent_inputs(void)
{
	json_t *spec = J("{\"pattern\":\"randread\",\"block_size\":8192}");
	json_t *res =
	    J("{\"read\":{\"ops\":100,\"iops\":50.0,\"bytes_per_s\":409600,"
	      "\"latency_ns\":{\"p50\":1000,\"p99.9\":5000}},\"cpu\":{\"system_s\":0.01},"
	      "\"device\":{\"disk\":null,\"why\":\"not a disk\"},\"box_cpu\":{\"seconds\":0,"
	      "\"idle_pct\":null}}");
	json_t *fs = findings_compute(spec, NULL, res, NULL);
	ok(!find(fs, "read_amplification"), "no disk figures, no ZFS: no read amplification");
	ok(!find(fs, "cache_served"), "no disk figures, no ARC: no cache-served share");
	ok(!find(fs, "limit"), "neither the disk nor the CPUs measured: no limit");
	const json_t *f = find(fs, "sys_cpu_per_io");
	is_num(value(f), 100, "the worker's 0.01 s / 100 I/Os = 100 µs");
	ok(strstr(json_string_value(json_object_get(f, "rule")), "the worker's system CPU seconds"),
	   "the rule says it is the worker's");
	f = find(fs, "tail");
	is_num(value(f), 5, "tail 5x");
	ok(!flag(f), "not flagged");
	json_decref(fs);

	/* ZFS without the disk's figures: the worst case alone */
	json_t *env = J("{\"zfs\":{\"recordsize\":131072}}");
	fs = findings_compute(spec, env, res, NULL);
	f = find(fs, "read_amplification");
	is_num(value(f), 16, "the worst case when the disk was not measured");
	ok(!json_object_get(json_object_get(f, "inputs"), "disk_read_bytes"),
	   "no disk bytes invented");
	ok(strstr(text(f), "not measured") != NULL, "the text says so: %s", text(f));
	json_decref(fs);

	/* nothing read: no read findings at all */
	json_t *w = J("{\"read\":{\"ops\":0,\"iops\":0.0,\"bytes_per_s\":0},\"write\":{\"ops\":0,"
	              "\"iops\":0.0}}");
	fs = findings_compute(spec, env, w, NULL);
	is_int(json_array_size(fs), 0, "no I/O, nothing measured: no findings");
	json_decref(fs);
	fs = findings_compute(NULL, NULL, NULL, NULL);
	is_int(json_array_size(fs), 0, "no result: no findings");
	json_decref(fs);
	json_decref(w);
	json_decref(env);
	json_decref(spec);
	json_decref(res);
}

static void test_cache_and_limit(void)
{
	json_t *res =
	    J("{\"read\":{\"ops\":5000,\"iops\":1000.0,\"bytes_per_s\":4096000},"
	      "\"device\":{\"seconds\":5,\"reads_per_s\":250.0,\"read_bytes_per_s\":1024000,"
	      "\"busy_pct\":40.0,\"queue\":1.5},\"box_cpu\":{\"seconds\":5,\"idle_pct\":3.0,"
	      "\"system_pct\":60.0,\"cpus\":2},\"arc\":{\"seconds\":5,\"hits_per_s\":49000.0,"
	      "\"misses_per_s\":1000.0,\"hit_pct\":98.0}}");
	json_t *fs = findings_compute(NULL, NULL, res, NULL);
	const json_t *f = find(fs, "cache_served");
	is_num(value(f), 75, "1 - 250 / 1000 = 75 %%");
	ok(flag(f), "flagged at 50 %% or more");
	is_num(input(f, "arc_hits_per_s"), 49000, "ARC hits beside it");
	is_num(input(f, "arc_hit_pct"), 98, "and the ARC's hit share");
	ok(strstr(text(f), "98.0 %") != NULL, "the text: %s", text(f));
	f = find(fs, "read_amplification");
	is_num(value(f), 0.25, "a quarter of the bytes from the disk");
	ok(!flag(f), "not flagged");
	f = find(fs, "limit");
	is_str(json_string_value(json_object_get(f, "value")), "cpu", "idle 3 %%: the CPU");
	ok(flag(f), "flagged");
	json_decref(fs);

	json_object_set_new(json_object_get(res, "box_cpu"), "idle_pct", json_real(50));
	fs = findings_compute(NULL, NULL, res, NULL);
	f = find(fs, "limit");
	is_str(json_string_value(json_object_get(f, "value")), "neither", "busy 40 %%, idle 50 %%");
	ok(!flag(f), "not flagged");
	json_decref(fs);

	/* the disk unmeasured and the CPUs idle: the disk could be the limit; not said */
	json_object_set_new(res, "device", json_pack("{s:n}", "disk"));
	fs = findings_compute(NULL, NULL, res, NULL);
	ok(!find(fs, "limit"), "one side unmeasured and the other not saturated: no limit");
	ok(!find(fs, "cache_served"), "no disk figures, not on ZFS: the box's ARC says nothing");
	json_decref(fs);
	json_t *zfs = J("{\"zfs\":{\"recordsize\":131072}}");
	fs = findings_compute(NULL, zfs, res, NULL);
	f = find(fs, "cache_served");
	is_num(value(f), 98, "no disk figures, on ZFS: the ARC's hit share");
	ok(strstr(json_string_value(json_object_get(f, "rule")), "on ZFS, ARC hits") != NULL,
	   "the rule says so");
	json_decref(fs);
	json_decref(zfs);
	json_decref(res);
}

/* one ramp second, ten measured seconds (the first at half speed), a partial last one */
static json_t *intervals(const double *iops, size_t n)
{
	json_t *a = json_array();
	json_array_append_new(a, J("{\"phase\":\"ramp\",\"elapsed_s\":1.0,\"read\":{\"iops\":1.0},"
	                           "\"write\":{\"iops\":0.0}}"));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a,
		                      json_pack("{s:s, s:f, s:{s:f}, s:{s:f}}", "phase", "measure",
		                                "elapsed_s", 1.001, "read", "iops", iops[i] * 0.75,
		                                "write", "iops", iops[i] * 0.25));
	json_array_append_new(a, J("{\"phase\":\"measure\",\"elapsed_s\":0.3,\"read\":{\"iops\":"
	                           "9.0},\"write\":{\"iops\":0.0}}"));
	return a;
}

static void test_stability_and_warmup(void)
{
	static const double slow_start[10] = {500, 990,  1010, 990,  1010,
	                                      990, 1010, 990,  1010, 1000};
	json_t *iv = intervals(slow_start, 10);
	json_t *res = J("{\"read\":{\"ops\":1}}");
	json_t *fs = findings_compute(NULL, NULL, res, iv);
	const json_t *f = find(fs, "stability");
	double sd = sqrt(225800.0 / 9);
	is_num(input(f, "seconds"), 10, "ten whole measured seconds (not the ramp, not the tail)");
	is_num(input(f, "iops_mean"), 950, "mean 950");
	is_num(input(f, "iops_stddev"), round(sd * 10) / 10, "sample standard deviation, 0.1");
	is_num(value(f), round(sd / 950 * 1e3) / 10, "cv 16.7 %% (16.67, as the text prints it)");
	ok(flag(f), "flagged above 10 %%");
	f = find(fs, "warmup");
	is_num(input(f, "first_seconds"), 1, "the first 10 %% of 10 s: 1 s");
	is_num(input(f, "first_iops_mean"), 500, "at 500");
	is_num(input(f, "rest_iops_mean"), 1000, "the rest at 1000");
	is_num(input(f, "rest_iops_stddev"), 10, "spread 10");
	is_num(input(f, "stderr"), round(1000 * sqrt(1 + 1.0 / 9)) / 100,
	       "standard error from the rest's spread");
	is_num(value(f), -50, "-50 %%");
	ok(flag(f), "a warm-up: beyond 2 standard errors and 10 %%");
	ok(strstr(text(f), "ramp_s") != NULL, "the text: %s", text(f));
	json_decref(fs);

	json_t *st = findings_stability(iv);
	is_int(json_integer_value(json_object_get(st, "seconds")), 10, "stability: 10 s");
	is_num(json_number_value(json_object_get(st, "iops_mean")), 950, "mean");
	is_num(json_number_value(json_object_get(st, "iops_stddev")), 158.4, "stddev, 0.1");
	is_num(json_number_value(json_object_get(st, "iops_cv")), 0.1667, "cv, 4 places");
	json_decref(st);
	json_decref(iv);

	static const double steady[10] = {1000, 990, 1010, 990, 1010, 990, 1010, 990, 1010, 1000};
	iv = intervals(steady, 10);
	fs = findings_compute(NULL, NULL, res, iv);
	f = find(fs, "stability");
	is_num(value(f), round(sqrt(800.0 / 9) / 1000 * 1e3) / 10, "steady: cv under 1 %%");
	ok(!flag(f), "not flagged");
	f = find(fs, "warmup");
	ok(f && !flag(f), "no warm-up");
	json_decref(fs);
	json_decref(iv);

	/* within 10 % although beyond 2 standard errors: not a warm-up */
	static const double slight[10] = {950,  1000, 1000, 1000, 1000,
	                                  1000, 1000, 1000, 1000, 1000};
	iv = intervals(slight, 10);
	fs = findings_compute(NULL, NULL, res, iv);
	ok(!flag(find(fs, "warmup")), "5 %% slower at first: not a warm-up");
	json_decref(fs);
	json_decref(iv);

	iv = intervals(steady, 2);
	fs = findings_compute(NULL, NULL, res, iv);
	ok(!find(fs, "stability") && !find(fs, "warmup"), "two seconds: neither finding");
	st = findings_stability(iv);
	ok(st && json_integer_value(json_object_get(st, "seconds")) == 2,
	   "but the spread of two seconds is stored");
	json_decref(st);
	json_decref(fs);
	json_decref(iv);
	json_decref(res);

	/* iozone's passes are not one series */
	iv =
	    J("[{\"phase\":\"measure\",\"elapsed_s\":1.0,\"pass\":\"write\",\"read\":{\"iops\":1},"
	      "\"write\":{\"iops\":1}},{\"phase\":\"measure\",\"elapsed_s\":1.0,\"pass\":\"write\","
	      "\"read\":{\"iops\":1},\"write\":{\"iops\":1}}]");
	ok(findings_stability(iv) == NULL, "passes: no stability");
	json_decref(iv);
}

static void test_differences(void)
{
	json_t *specs[2] = {J("{\"name\":\"a\",\"pattern\":\"randread\",\"block_size\":4096}"),
	                    J("{\"name\":\"b\",\"pattern\":\"randread\",\"block_size\":8192}")};
	json_t *envs[2] = {
	    J("{\"resolved_at\":\"2026-12-01T21:00:00Z\",\"filesystem\":null,\"zfs\":{"
	      "\"recordsize\":"
	      "131072,\"primarycache\":\"all\",\"vdevs\":[{\"type\":\"mirror\",\"devices\":["
	      "\"sda\","
	      "\"sdb\"]}]},\"devices\":[{\"name\":\"sda\",\"scheduler\":\"none\"}]}"),
	    J("{\"resolved_at\":\"2026-12-01T22:00:00Z\",\"filesystem\":null,\"zfs\":{"
	      "\"recordsize\":"
	      "8192,\"primarycache\":\"metadata\",\"vdevs\":[{\"type\":\"mirror\",\"devices\":["
	      "\"sda\","
	      "\"sdb\"]}]},\"devices\":[{\"name\":\"sda\",\"scheduler\":\"mq-deadline\"}],"
	      "\"system\":"
	      "{\"cpus\":2}}")};
	json_t *d =
	    findings_differences((const json_t *const *)specs, (const json_t *const *)envs, 2, 0);
	is_str(json_string_value(json_object_get(d, "text")),
	       "block_size 4k → 8k, recordsize 128k → 8k, primarycache all → metadata, "
	       "sda.scheduler none → mq-deadline, cpus (none) → 2",
	       "the line of what changed");
	const json_t *fields = json_object_get(d, "fields");
	is_int(json_array_size(fields), 6, "six fields differ (the name too, not the time)");
	const json_t *first = json_array_get(fields, 0);
	is_str(json_string_value(json_object_get(first, "name")), "name", "spec first: name");
	is_str(json_string_value(json_object_get(first, "in")), "spec", "in the spec");
	const json_t *rs = json_array_get(fields, 2);
	is_str(json_string_value(json_object_get(rs, "name")), "zfs.recordsize", "flattened leaf");
	is_int(json_integer_value(json_array_get(json_object_get(rs, "values"), 1)), 8192,
	       "each job's value");
	json_decref(d);

	/* the baseline second: its values first in the text */
	d = findings_differences((const json_t *const *)specs, (const json_t *const *)envs, 2, 1);
	ok(strncmp(json_string_value(json_object_get(d, "text")), "block_size 8k → 4k", 20) == 0,
	   "baseline first: %s", json_string_value(json_object_get(d, "text")));
	json_decref(d);

	/* the same spec and environment: nothing */
	const json_t *same_s[2] = {specs[0], specs[0]}, *same_e[2] = {envs[0], NULL};
	d = findings_differences(same_s, same_e, 1, 0);
	is_str(json_string_value(json_object_get(d, "text")), "", "one job: no differences");
	json_decref(d);
	d = findings_differences(same_s, same_e, 2, 0);
	ok(strstr(json_string_value(json_object_get(d, "text")), "recordsize 128k → (none)"),
	   "an environment not recorded: (none)");
	json_decref(d);
	for (int k = 0; k < 2; k++) {
		json_decref(specs[k]);
		json_decref(envs[k]);
	}

	/* sizes as the spec takes them; one that is no whole number of KiB in bytes */
	json_t *sz[2] = {J("{\"size\":2147483648,\"io_size\":1000,\"threads\":8192}"),
	                 J("{\"size\":3145728,\"io_size\":1536,\"threads\":4}")};
	json_t *fs_env[2] = {
	    J("{\"filesystem\":{\"block_size\":4096,\"size_bytes\":1099511627776}}"),
	    J("{\"filesystem\":{\"block_size\":65536,\"size_bytes\":5000}}")};
	d = findings_differences((const json_t *const *)sz, (const json_t *const *)fs_env, 2, 0);
	is_str(json_string_value(json_object_get(d, "text")),
	       "size 2G → 3M, io_size 1000 → 1536, threads 8192 → 4, filesystem.block_size 4k → "
	       "64k, filesystem.size_bytes 1T → 5000",
	       "sizes in k, M, G, T; a count stays a count");
	json_decref(d);
	for (int k = 0; k < 2; k++) {
		json_decref(sz[k]);
		json_decref(fs_env[k]);
	}
}

static void test_significance(void)
{
	json_t *base = J("{\"seconds\":10,\"iops_mean\":1000.0,\"iops_stddev\":10.0}");
	json_t *up = J("{\"seconds\":10,\"iops_mean\":1020.0,\"iops_stddev\":10.0}");
	json_t *s = findings_significance(base, up);
	is_num(json_number_value(json_object_get(s, "diff")), 20, "difference 20");
	is_num(json_number_value(json_object_get(s, "diff_pct")), 2, "2 %%");
	is_num(json_number_value(json_object_get(s, "stderr")), round(sqrt(20) * 100) / 100,
	       "stderr sqrt(10²/10 + 10²/10)");
	is_num(json_number_value(json_object_get(s, "t")), round(20 / sqrt(20) * 100) / 100,
	       "t 4.47");
	is_num(json_number_value(json_object_get(s, "df")), 18, "Welch's degrees of freedom: 18");
	is_num(json_number_value(json_object_get(s, "critical_t")), 2.101, "95 %% point at 18");
	ok(json_is_true(json_object_get(s, "beyond_noise")), "beyond the noise");
	ok(strstr(json_string_value(json_object_get(s, "text")), "beyond the noise"), "%s",
	   json_string_value(json_object_get(s, "text")));
	is_str(json_string_value(json_object_get(s, "summary")),
	       "2.0 % more IOPS than the baseline, clearly beyond the noise of these runs: a real "
	       "difference.",
	       "the verdict in words, no statistics");
	json_decref(s);
	json_decref(up);
	json_t *down = J("{\"seconds\":10,\"iops_mean\":900.0,\"iops_stddev\":10.0}");
	s = findings_significance(base, down);
	ok(strncmp(json_string_value(json_object_get(s, "summary")), "10.0 % fewer IOPS", 17) == 0,
	   "%s", json_string_value(json_object_get(s, "summary")));
	json_decref(s);
	json_decref(down);

	json_t *near = J("{\"seconds\":10,\"iops_mean\":1003.0,\"iops_stddev\":10.0}");
	s = findings_significance(base, near);
	ok(json_is_false(json_object_get(s, "beyond_noise")), "3 in 1000 with spread 10: noise");
	ok(strstr(json_string_value(json_object_get(s, "text")), "may be chance"), "%s",
	   json_string_value(json_object_get(s, "text")));
	is_str(json_string_value(json_object_get(s, "summary")),
	       "+0.3 % IOPS against the baseline, within the noise of these runs: no difference "
	       "they can show.",
	       "within the noise, in words");
	json_decref(s);
	json_decref(near);

	json_t *flat = J("{\"seconds\":5,\"iops_mean\":1000.0,\"iops_stddev\":0.0}");
	json_t *flat2 = J("{\"seconds\":5,\"iops_mean\":1001.0,\"iops_stddev\":0.0}");
	s = findings_significance(flat, flat2);
	ok(json_is_true(json_object_get(s, "beyond_noise")) &&
	       json_is_null(json_object_get(s, "t")),
	   "no spread at all: any difference is beyond it, t undefined");
	json_decref(s);
	json_t *one = J("{\"seconds\":1,\"iops_mean\":1000.0,\"iops_stddev\":0.0}");
	ok(findings_significance(base, one) == NULL, "one second: no note");
	ok(findings_significance(NULL, base) == NULL, "no baseline stability: no note");
	json_decref(one);
	json_decref(flat);
	json_decref(flat2);
	json_decref(base);
}

/* The disks' latency buckets (device.latency, the eBPF helper's) beside the worker's p50. */
static void test_stack(void)
{
	/* the worker's median read 100 µs; the disks' in [49152, 57344) ns */
	json_t *res =
	    J("{\"read\":{\"ops\":1000,\"latency_ns\":{\"p50\":100000,\"p99.9\":"
	      "200000}},\"write\":{\"ops\":10,\"latency_ns\":{\"p50\":10,\"p99.9\":"
	      "10}},\"device\":{\"disk\":\"sda\",\"seconds\":5,\"latency\":{\"seconds\":5,\"read\":"
	      "{\"ops\":990,\"p50_ns\":{\"low\":49152,\"high\":57344}},\"write\":"
	      "{\"ops\":10,\"p50_ns\":{\"low\":1024,\"high\":1280}}}}}");
	json_t *fs = findings_compute(NULL, NULL, res, NULL);
	const json_t *f = find(fs, "stack");
	ok(f != NULL, "the disks' latencies beside the worker's: the stack above them");
	is_num(value(f), 42.7, "(100 - 57.344) / 100 µs, at least, above the block layer");
	ok(!flag(f), "not flagged (50 %% or less)");
	is_str(json_string_value(json_object_get(json_object_get(f, "inputs"), "direction")),
	       "read", "of the reads, the direction with the most operations");
	is_num(input(f, "disk_p50_high_ns"), 57344, "the top of the disks' median bucket");
	ok(strstr(text(f), "100.0 µs in the worker and 49.2-57.3 µs at the disks") &&
	       strstr(text(f), "at least 42.7 µs (42.7 %)"),
	   "the text: %s", text(f));
	json_decref(fs);
	json_decref(res);

	/* a median below the disks' bucket: a cache answered */
	res = J("{\"read\":{\"ops\":1000,\"latency_ns\":{\"p50\":2000}},\"device\":"
	        "{\"seconds\":5,\"latency\":{\"read\":{\"ops\":5,\"p50_ns\":{\"low\":49152,"
	        "\"high\":57344}}}}}");
	fs = findings_compute(NULL, NULL, res, NULL);
	f = find(fs, "stack");
	ok(f && value(f) == 0 && strstr(text(f), "did not wait for the disks"),
	   "a median below the disks' says the I/Os did not wait for them: %s", f ? text(f) : "");
	json_decref(fs);
	json_decref(res);

	/* without the helper's buckets, or where the last bucket is open above: none */
	res = J("{\"read\":{\"ops\":1000,\"latency_ns\":{\"p50\":2000}},\"device\":"
	        "{\"seconds\":5,\"latency\":{\"read\":{\"ops\":5,\"p50_ns\":{\"low\":68719476736,"
	        "\"high\":null}}}}}");
	fs = findings_compute(NULL, NULL, res, NULL);
	ok(!find(fs, "stack"), "a median in the open last bucket: no finding");
	json_decref(fs);
	json_decref(res);
}

/* A run without Direct I/O whose reads the disk mostly did not see measured the page cache:
 * the finding says so by name and says what to change; with Direct I/O it is a cache below. */
static void test_page_cache(void)
{
	json_t *res = J("{\"read\":{\"ops\":5000,\"iops\":558000.0,\"bytes_per_s\":4571136000},"
	                "\"device\":{\"seconds\":5,\"reads_per_s\":12.0,"
	                "\"read_bytes_per_s\":98304}}");
	json_t *buffered = J("{\"pattern\":\"randread\",\"direct\":false}");
	json_t *fs = findings_compute(buffered, NULL, res, NULL);
	const json_t *f = find(fs, "cache_served");
	is_str(json_string_value(json_object_get(f, "title")), "The page cache answered",
	       "buffered, the disk saw almost nothing: the page cache answered");
	ok(flag(f), "flagged");
	is_num(value(f), 100, "1 - 12 / 558000 = 100.0 %%");
	ok(json_is_false(json_object_get(json_object_get(f, "inputs"), "direct")),
	   "direct false is an input");
	ok(strstr(text(f), "Direct I/O") && strstr(text(f), "12 reads/s"), "the text: %s", text(f));
	json_decref(fs);

	json_t *direct = J("{\"pattern\":\"randread\",\"direct\":true}");
	fs = findings_compute(direct, NULL, res, NULL);
	f = find(fs, "cache_served");
	is_str(json_string_value(json_object_get(f, "title")), "Served from cache",
	       "with Direct I/O: a cache below the job, not the page cache");
	ok(!strstr(text(f), "page cache"), "not named the page cache: %s", text(f));
	json_decref(fs);

	/* buffered, but the disk saw every read: nothing to warn of */
	json_object_set_new(json_object_get(res, "device"), "reads_per_s", json_real(558000));
	fs = findings_compute(buffered, NULL, res, NULL);
	f = find(fs, "cache_served");
	is_str(json_string_value(json_object_get(f, "title")), "Served from cache",
	       "buffered, every read on the disk: the plain finding");
	ok(!flag(f), "not flagged");
	json_decref(fs);
	json_decref(direct);
	json_decref(buffered);
	json_decref(res);
}

/* The disks' health when the job was submitted: flagged at one disk not well. */
static void test_disk_health(void)
{
	json_t *res = J("{\"read\":{\"ops\":1000}}");
	json_t *sick = J("{\"disks\":[{\"name\":\"sda\",\"health\":\"ok\",\"details\":\"\"},"
	                 "{\"name\":\"sdb\",\"health\":\"warning\","
	                 "\"details\":\"8 sectors pending reallocation\"},"
	                 "{\"name\":\"sdc\",\"health\":\"failing\","
	                 "\"details\":\"the drive's own health check failed\"}]}");
	json_t *fs = findings_compute(NULL, sick, res, NULL);
	const json_t *f = find(fs, "disk_health");
	ok(f && flag(f) && value(f) == 2, "two disks not well: flagged, 2");
	is_str(
	    f ? text(f) : "",
	    "sdb (warning: 8 sectors pending reallocation); sdc (failing: the drive's own health "
	    "check failed). A run on a disk that is not well measures its trouble, not the "
	    "setup: replace or rule out the disk before trusting this result.",
	    "each named, with why");
	ok(f && json_equal(json_object_get(f, "inputs"),
	                   J("{\"sda\":\"ok\",\"sdb\":\"warning\",\"sdc\":\"failing\"}")),
	   "its inputs: each disk's health");
	json_decref(fs);
	json_t *well = J("{\"disks\":[{\"name\":\"sda\",\"health\":\"ok\",\"details\":\"\"}]}");
	fs = findings_compute(NULL, well, res, NULL);
	f = find(fs, "disk_health");
	ok(f && !flag(f) && value(f) == 0 &&
	       strcmp(text(f), "The 1 disk under the target reported no trouble.") == 0,
	   "all well: not flagged (%s)", f ? text(f) : "none");
	json_decref(fs);
	fs = findings_compute(NULL, J("{\"devices\":[]}"), res, NULL);
	ok(!find(fs, "disk_health"), "no disks known: no finding");
	json_decref(fs);
}

int main(void)
{
	test_disk_health();
	test_stack();
	test_zfs_randread();
	test_absent_inputs();
	test_cache_and_limit();
	test_page_cache();
	test_stability_and_warmup();
	test_differences();
	test_significance();
	return done_testing();
}
