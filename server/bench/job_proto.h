/* SPDX-License-Identifier: ISC */
/* The worker's NDJSON protocol as spindled reads it: each stdout line of spindle-worker is
 * parsed and checked here, against what the lines before it said, before jobs.c believes a
 * byte of it. Pure: no job, no I/O, no clock, so the checks are table-tested and fuzzed
 * (tests/fuzz/fuzz_jobline.c) apart from the code that moves bytes. */
#ifndef SPINDLE_JOB_PROTO_H
#define SPINDLE_JOB_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

enum job_proto_type { JOB_PROTO_START, JOB_PROTO_INTERVAL, JOB_PROTO_RESULT, JOB_PROTO_ERROR };

/* What the worker's earlier lines said. The caller moves it on after each accepted line:
 * a start sets have_start, an interval adds one to seq, a result or an error sets ended. */
struct job_proto_state {
	bool have_start;
	bool ended;
	int64_t seq; /* the last interval's; 0 before the first */
};

struct job_proto_line {
	enum job_proto_type type;
	json_t *obj; /* the line as parsed, "type" still in it; a new reference */
	/* an error line's "partial" when it is a well-formed result after a start (borrowed
	 * from obj), else NULL */
	const json_t *partial;
};

/* 0 with *out filled when line (len bytes, no newline) is a line the worker may send
 * now; -1 with err saying why (the worker is then to be stopped). */
int job_proto_line(const struct job_proto_state *st, const char *line, size_t len,
                   struct job_proto_line *out, char *err, size_t errlen);

#endif
