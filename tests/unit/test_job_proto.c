/* SPDX-License-Identifier: ISC */
/* The worker's NDJSON lines as spindled checks them: a table of lines, each against the
 * state the lines before it left, and the verdict (the type, or the reason it is refused). */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bench/job_proto.h"
#include "base/util.h"
#include "worker/hist.h"

#define START                                                                                      \
	"{\"type\":\"start\",\"version\":1,\"spec\":{\"name\":\"t\"},\"target\":{\"size\":"        \
	"1048576},"                                                                                \
	"\"threads\":{\"readers\":1}}"
#define DIR_IV                                                                                     \
	"{\"ops\":10,\"bytes\":40960,\"iops\":10.0,\"bytes_per_s\":40960,\"lat_mean_ns\":5024.2,"  \
	"\"lat_max_ns\":20109,\"lat_p99_ns\":1891}"
#define DIR_IV_HIST(bins)                                                                          \
	"{\"ops\":10,\"bytes\":40960,\"iops\":10.0,\"bytes_per_s\":40960,\"lat_mean_ns\":5024.2,"  \
	"\"lat_max_ns\":20109,\"lat_p99_ns\":1891,\"hist\":{\"bins\":" bins "}}"
#define IV_HIST(bins)                                                                              \
	"{\"type\":\"interval\",\"seq\":1,\"t_s\":1.25,\"elapsed_s\":1.01,\"phase\":"              \
	"\"measure\",\"progress_pct\":33.7,\"read\":" DIR_IV_HIST(bins) ",\"write\":" DIR_IV       \
	                                                                ",\"eta_s\":2.0}"
#define IV(seq, extra)                                                                             \
	"{\"type\":\"interval\",\"seq\":" #seq ",\"t_s\":1.25,\"elapsed_s\":1.01,\"phase\":"       \
	"\"measure\",\"progress_pct\":33.7,\"read\":" DIR_IV ",\"write\":" DIR_IV                  \
	",\"eta_s\":2.0" extra "}"

/* A result line of two directions with ops operations each, from a real histogram. */
static char *result_line(const char *type, int ops, const char *extra)
{
	struct hist *h = xmalloc(sizeof(*h));
	hist_init(h);
	for (int i = 0; i < ops; i++)
		hist_record(h, 1000 + (uint64_t)i * 37);
	json_t *dir =
	    json_pack("{s:I, s:I, s:f, s:f, s:o, s:o}", "ops", (json_int_t)ops, "bytes",
	              (json_int_t)ops * 4096, "iops", (double)ops, "bytes_per_s", ops * 4096.0,
	              "latency_ns", hist_summary_json(h), "hist", hist_to_json(h));
	free(h);
	json_t *o = json_pack("{s:s, s:i, s:f, s:{s:f, s:f}, s:O, s:o}", "type", type, "version", 1,
	                      "elapsed_s", 2.0, "cpu", "user_s", 0.5, "system_s", 0.25, "read", dir,
	                      "write", dir);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (extra) {
		char *t = xasprintf("%.*s,%s}", (int)strlen(text) - 1, text, extra);
		free(text);
		text = t;
	}
	return text;
}

struct row {
	const char *what;
	struct job_proto_state st;
	const char *line;
	int type;        /* enum job_proto_type, or -1: refused */
	const char *why; /* refused: text the reason holds */
};

static void check(const struct row *r)
{
	struct job_proto_line pl;
	char err[256] = "";
	int rc = job_proto_line(&r->st, r->line, strlen(r->line), &pl, err, sizeof(err));
	if (r->type < 0) {
		ok(rc == -1 && strstr(err, r->why), "%s: refused (%s)", r->what, err);
		return;
	}
	ok(rc == 0 && (int)pl.type == r->type && pl.obj, "%s: accepted (%s)", r->what,
	   rc ? err : "");
	if (rc == 0)
		json_decref(pl.obj);
}

int main(void)
{
	const struct job_proto_state fresh = {false, false, 0}, started = {true, false, 0},
	                             after2 = {true, false, 2}, ended = {true, true, 3};
	char *result = result_line("result", 3, NULL);
	char *bad_hist = result_line("result", 3, NULL);
	memcpy(strstr(bad_hist, "loglin2"), "loglin9", 7);
	char *err_partial =
	    xasprintf("{\"type\":\"error\",\"message\":\"stopped\",\"partial\":%s}", result);
	char *err_bad_partial =
	    xasprintf("{\"type\":\"error\",\"message\":\"stopped\",\"partial\":%s}", bad_hist);
	const struct row rows[] = {
	    {"start", fresh, START, JOB_PROTO_START, NULL},
	    {"a second start", started, START, -1, "a second start line"},
	    {"start of version 2", fresh, "{\"type\":\"start\",\"version\":2}", -1, "version must"},
	    {"start without threads", fresh,
	     "{\"type\":\"start\",\"version\":1,\"spec\":{},\"target\":{\"size\":1}}", -1,
	     "threads are required"},
	    {"start with a negative size", fresh,
	     "{\"type\":\"start\",\"version\":1,\"spec\":{},\"target\":{\"size\":-1},"
	     "\"threads\":{}}",
	     -1, "target.size"},
	    {"interval 1", started, IV(1, ""), JOB_PROTO_INTERVAL, NULL},
	    {"interval 3 after 2", after2, IV(3, ""), JOB_PROTO_INTERVAL, NULL},
	    {"interval with a pass", started, IV(1, ",\"pass\":\"write\""), JOB_PROTO_INTERVAL,
	     NULL},
	    {"interval with eta null", started,
	     "{\"type\":\"interval\",\"seq\":1,\"t_s\":1,\"elapsed_s\":1,\"phase\":\"ramp\","
	     "\"progress_pct\":0,\"read\":" DIR_IV ",\"write\":" DIR_IV ",\"eta_s\":null}",
	     JOB_PROTO_INTERVAL, NULL},
	    {"interval before start", fresh, IV(1, ""), -1, "before the start line"},
	    {"interval skipping a seq", started, IV(2, ""), -1, "seq must be 1"},
	    {"interval repeating a seq", after2, IV(2, ""), -1, "seq must be 3"},
	    {"interval with a histogram", started, IV_HIST("[100,4,110,6]"), JOB_PROTO_INTERVAL,
	     NULL},
	    {"interval histogram not adding up", started, IV_HIST("[100,4,110,5]"), -1,
	     "ops is 10"},
	    {"interval histogram not ascending", started, IV_HIST("[110,4,100,6]"), -1,
	     "ascending index"},
	    {"interval histogram index out of range", started, IV_HIST("[464,10]"), -1,
	     "ascending index"},
	    {"interval histogram odd", started, IV_HIST("[100]"), -1, "read.hist must be"},
	    {"interval with an extra member", started, IV(1, ",\"colour\":\"red\""), -1,
	     "unexpected members"},
	    {"interval with a pass not a string", started, IV(1, ",\"pass\":1"), -1,
	     "pass a string"},
	    {"interval over 100 %", started,
	     "{\"type\":\"interval\",\"seq\":1,\"t_s\":1,\"elapsed_s\":1,\"phase\":\"ramp\","
	     "\"progress_pct\":100.5,\"read\":" DIR_IV ",\"write\":" DIR_IV ",\"eta_s\":null}",
	     -1, "progress_pct"},
	    {"interval of another phase", started,
	     "{\"type\":\"interval\",\"seq\":1,\"t_s\":1,\"elapsed_s\":1,\"phase\":\"warm\","
	     "\"progress_pct\":1,\"read\":" DIR_IV ",\"write\":" DIR_IV ",\"eta_s\":null}",
	     -1, "phase must be"},
	    {"interval with negative ops", started,
	     "{\"type\":\"interval\",\"seq\":1,\"t_s\":1,\"elapsed_s\":1,\"phase\":\"ramp\","
	     "\"progress_pct\":1,\"read\":{\"ops\":-1,\"bytes\":0,\"iops\":0,\"bytes_per_s\":0,"
	     "\"lat_mean_ns\":0,\"lat_max_ns\":0,\"lat_p99_ns\":0},\"write\":" DIR_IV
	     ",\"eta_s\":null}",
	     -1, "read.ops must be a count"},
	    {"result", after2, result, JOB_PROTO_RESULT, NULL},
	    {"result before start", fresh, result, -1, "before the start line"},
	    {"result with a foreign histogram", after2, bad_hist, -1, "read.hist"},
	    {"result without cpu", started, "{\"type\":\"result\",\"elapsed_s\":1}", -1,
	     "cpu.user_s"},
	    {"a line after the result", ended, IV(4, ""), -1, "a interval line after the end"},
	    {"error", fresh, "{\"type\":\"error\",\"message\":\"no such file\"}", JOB_PROTO_ERROR,
	     NULL},
	    {"error with a partial result", after2, err_partial, JOB_PROTO_ERROR, NULL},
	    {"error with a broken partial", after2, err_bad_partial, JOB_PROTO_ERROR, NULL},
	    {"error without a message", started, "{\"type\":\"error\"}", -1, "without a message"},
	    {"error after the end", ended, "{\"type\":\"error\",\"message\":\"x\"}", -1,
	     "after the end"},
	    {"not JSON", started, "hello", -1, "not a JSON object"},
	    {"an array", started, "[1,2]", -1, "no type"},
	    {"no type", started, "{\"seq\":1}", -1, "no type"},
	    {"a type that is a number", started, "{\"type\":1}", -1, "no type"},
	    {"duplicate keys", fresh, "{\"type\":\"error\",\"message\":\"a\",\"message\":\"b\"}",
	     -1, "duplicate"},
	    {"unknown type", started, "{\"type\":\"bogus\"}", -1, "unknown line type 'bogus'"},
	    {"empty line", started, "", -1, "not a JSON object"},
	};
	for (size_t i = 0; i < nitems(rows); i++)
		check(&rows[i]);

	/* the partial result is handed over only when it is one */
	struct job_proto_line pl;
	char err[256];
	ok(job_proto_line(&after2, err_partial, strlen(err_partial), &pl, err, sizeof(err)) == 0 &&
	       pl.partial == json_object_get(pl.obj, "partial"),
	   "an error's well-formed partial result is handed over");
	json_decref(pl.obj);
	ok(job_proto_line(&fresh, err_partial, strlen(err_partial), &pl, err, sizeof(err)) == 0 &&
	       pl.partial == NULL,
	   "but not before a start line");
	json_decref(pl.obj);
	ok(job_proto_line(&after2, err_bad_partial, strlen(err_bad_partial), &pl, err,
	                  sizeof(err)) == 0 &&
	       pl.partial == NULL,
	   "nor when it is not well formed");
	json_decref(pl.obj);
	/* a NUL inside the line is the line's, not its end */
	static const char nul[] = "{\"type\":\"error\",\"message\":\"a\"}\0{\"type\":\"bogus\"}";
	ok(job_proto_line(&started, nul, sizeof(nul) - 1, &pl, err, sizeof(err)) == -1,
	   "a line with a NUL in it is refused whole");

	free(result);
	free(bad_hist);
	free(err_partial);
	free(err_bad_partial);
	return done_testing();
}
