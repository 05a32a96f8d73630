/* SPDX-License-Identifier: ISC */
/* The benchmark job spec: JSON in, a checked and resolved struct spec out, with one clear
 * message per field at fault ("block_size: must be a multiple of 512 ..."). Numbers take
 * units ("8k", "1G", "30s"). Shared by spindle-worker and spindled (which checks a job
 * before queueing it); depends on jansson only. */
#ifndef SPINDLE_SPEC_H
#define SPINDLE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define SPEC_NAME_MAX    64
#define SPEC_LABEL_MAX   256
#define SPEC_PATH_MAX    4096
#define SPEC_MAX_THREADS 256
#define SPEC_MIN_BS      512u
#define SPEC_MAX_BS      (16u << 20)
#define SPEC_MAX_IODEPTH 1024u
#define SPEC_MAX_BUFFERS (4ull << 30) /* threads x iodepth x block_size */
#define SPEC_MAX_RUNTIME (7ull * 86400 * 1000)
#define SPEC_MAX_SIZE    (1ull << 50)
#define SPEC_MAX_ERRORS  16

enum spec_pattern {
	SPEC_READ,
	SPEC_WRITE,
	SPEC_RANDREAD,
	SPEC_RANDWRITE,
	SPEC_RANDRW,
	SPEC_SLOB,
	SPEC_IOZONE,
};

enum spec_engine { SPEC_PSYNC, SPEC_IO_URING };

/* The iozone passes, in the order they run. */
enum spec_pass {
	SPEC_PASS_WRITE,
	SPEC_PASS_REWRITE,
	SPEC_PASS_READ,
	SPEC_PASS_REREAD,
	SPEC_PASS_RANDREAD,
	SPEC_PASS_RANDWRITE,
	SPEC_NPASSES
};

struct spec {
	char name[SPEC_NAME_MAX + 1];
	char label[SPEC_LABEL_MAX + 1];
	char target[SPEC_PATH_MAX]; /* "" when spindled is to choose it */
	enum spec_pattern pattern;
	uint64_t size; /* bytes; 0: the target's current size */
	uint32_t block_size;
	/* Resolved thread groups: readers only read, writers only write, threads mix
	 * reads and writes (rwmix_read percent reads). */
	unsigned readers, writers, threads;
	unsigned rwmix_read;
	enum spec_engine engine;
	unsigned iodepth;
	unsigned iodepth_batch; /* io_uring: SQEs per submit */
	bool direct;
	uint64_t runtime_ms; /* 0: no time limit */
	uint64_t ramp_ms;
	uint64_t io_size; /* bytes moved in the measured phase; 0: no amount limit */
	unsigned fsync_every;
	bool seed_set;
	uint64_t seed;
	bool confirm;        /* spindled: a raw device target needs it; the worker ignores it */
	unsigned sessions;   /* slob */
	unsigned update_pct; /* slob */
	unsigned passes;     /* iozone: bit per enum spec_pass */
};

/* What is wrong, for callers that answer with an error code of their own (spindled's
 * ERR_INVALID_ARG, ERR_UNKNOWN_ARG, ERR_MISSING_ARG). */
enum spec_error_kind {
	SPEC_ERR_INVALID, /* a value of the wrong type, out of range or out of place */
	SPEC_ERR_UNKNOWN, /* a field the spec does not have */
	SPEC_ERR_MISSING, /* a field the job needs and does not give */
};

struct spec_error {
	enum spec_error_kind kind;
	char field[32];
	char message[224]; /* starts with the field name */
};

struct spec_errors {
	unsigned n;
	struct spec_error e[SPEC_MAX_ERRORS];
};

/* Checks a parsed document (an object); 0, or -1 with errs filled (at least one). */
int spec_parse(const json_t *doc, struct spec *s, struct spec_errors *errs);
/* Limits tighter than the spec's own, set by whoever runs the jobs (spindled's
 * --bench-max-runtime); the messages state them. 0: the spec's own. */
struct spec_limits {
	uint64_t max_runtime_ms;
	const char *max_runtime_why; /* e.g. "bench_max_runtime" */
};
int spec_parse_limited(const json_t *doc, const struct spec_limits *lim, struct spec *s,
                       struct spec_errors *errs);
/* The same from JSON text; a syntax error is reported against the field "spec". */
int spec_parse_text(const char *text, size_t len, struct spec *s, struct spec_errors *errs);
/* The resolved spec as canonical JSON; spec_parse of it gives the same struct. New reference. */
json_t *spec_to_json(const struct spec *s);
/* [{"field":..,"message":..},...]. New reference. */
json_t *spec_errors_json(const struct spec_errors *errs);

/* "8k" -> 8192 (binary units: k, m, g, t, p with optional "b"/"ib"); -1 on error. */
int spec_parse_size(const char *text, uint64_t *out);
/* "30s", "500ms", "2m", "1h", "1d", plain seconds; into milliseconds; -1 on error. */
int spec_parse_duration(const char *text, uint64_t *out_ms);

const char *spec_pattern_name(enum spec_pattern p);
const char *spec_pass_name(enum spec_pass p);
bool spec_is_random(enum spec_pattern p);
unsigned spec_nthreads(const struct spec *s);
bool spec_writes(const struct spec *s);

/* The text of spindle-worker --help that explains the spec. */
const char *spec_help(void);
/* {"presets":[{"name","description","fields":{...},"example":{...}}]}. New reference. */
json_t *spec_presets_json(void);

#endif
