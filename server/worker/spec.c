/* SPDX-License-Identifier: ISC */
/* The benchmark job spec: parsing with units, per-field errors, resolution of thread
 * groups and presets, and the canonical form spindled stores and hands to the worker. */
#include "spec.h"
#include "base/suggest.h"
#include "base/utf8.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define KIB 1024ull

enum spec_field {
	F_NAME,
	F_LABEL,
	F_TARGET,
	F_PATTERN,
	F_SIZE,
	F_BLOCK_SIZE,
	F_READERS,
	F_WRITERS,
	F_THREADS,
	F_RWMIX_READ,
	F_ENGINE,
	F_IODEPTH,
	F_IODEPTH_BATCH,
	F_DIRECT,
	F_RUNTIME,
	F_RAMP,
	F_IO_SIZE,
	F_FSYNC_EVERY,
	F_SEED,
	F_CONFIRM,
	F_SESSIONS,
	F_UPDATE_PCT,
	F_PASSES,
	F_COUNT
};

/* Canonical names first; aliases map onto them (the message names what the user wrote). */
static const struct {
	const char *key;
	enum spec_field field;
} spec_keys[] = {
    {"name", F_NAME},
    {"label", F_LABEL},
    {"target", F_TARGET},
    {"pattern", F_PATTERN},
    {"size", F_SIZE},
    {"block_size", F_BLOCK_SIZE},
    {"readers", F_READERS},
    {"writers", F_WRITERS},
    {"threads", F_THREADS},
    {"rwmix_read", F_RWMIX_READ},
    {"engine", F_ENGINE},
    {"iodepth", F_IODEPTH},
    {"iodepth_batch", F_IODEPTH_BATCH},
    {"direct", F_DIRECT},
    {"runtime_s", F_RUNTIME},
    {"ramp_s", F_RAMP},
    {"io_size", F_IO_SIZE},
    {"fsync_every", F_FSYNC_EVERY},
    {"seed", F_SEED},
    {"confirm", F_CONFIRM},
    {"sessions", F_SESSIONS},
    {"update_pct", F_UPDATE_PCT},
    {"passes", F_PASSES},
    /* aliases: slob's and iozone's own words */
    {"run_time", F_RUNTIME},
    {"file_size", F_SIZE},
    {"record_size", F_BLOCK_SIZE},
};

static const char *const pattern_names[] = {"read",   "write", "randread", "randwrite",
                                            "randrw", "slob",  "iozone"};
static const char *const engine_names[] = {"psync", "io_uring"};
static const char *const pass_names[] = {"write",  "rewrite",     "read",
                                         "reread", "random_read", "random_write"};

const char *spec_pattern_name(enum spec_pattern p)
{
	return pattern_names[p];
}

static const char *spec_engine_name(enum spec_engine e)
{
	return engine_names[e];
}

const char *spec_pass_name(enum spec_pass p)
{
	return pass_names[p];
}

bool spec_is_random(enum spec_pattern p)
{
	return p == SPEC_RANDREAD || p == SPEC_RANDWRITE || p == SPEC_RANDRW || p == SPEC_SLOB;
}

unsigned spec_nthreads(const struct spec *s)
{
	return s->readers + s->writers + s->threads;
}

bool spec_writes(const struct spec *s)
{
	if (s->pattern == SPEC_IOZONE)
		return s->passes & ((1u << SPEC_PASS_WRITE) | (1u << SPEC_PASS_REWRITE) |
		                    (1u << SPEC_PASS_RANDWRITE));
	return s->writers > 0 || (s->threads > 0 && s->rwmix_read < 100);
}

static void spec_verror(struct spec_errors *errs, enum spec_error_kind kind, const char *field,
                        const char *fmt, va_list ap)
{
	if (errs->n >= SPEC_MAX_ERRORS)
		return;
	struct spec_error *e = &errs->e[errs->n++];
	e->kind = kind;
	snprintf(e->field, sizeof(e->field), "%s", field);
	utf8_clean(e->field, UTF8_DROP_CUT); /* a spec key cut to fit */
	int n = snprintf(e->message, sizeof(e->message), "%s: ", field);
	if (n >= 0 && (size_t)n < sizeof(e->message))
		vsnprintf(e->message + n, sizeof(e->message) - (size_t)n, fmt, ap);
	utf8_clean(e->message, UTF8_DROP_CUT); /* may quote jansson's error text */
}

/* A value at fault (SPEC_ERR_INVALID); spec_error_of for the other kinds. */
static void spec_error(struct spec_errors *errs, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void spec_error(struct spec_errors *errs, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	spec_verror(errs, SPEC_ERR_INVALID, field, fmt, ap);
	va_end(ap);
}

static void spec_error_of(struct spec_errors *errs, enum spec_error_kind kind, const char *field,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void spec_error_of(struct spec_errors *errs, enum spec_error_kind kind, const char *field,
                          const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	spec_verror(errs, kind, field, fmt, ap);
	va_end(ap);
}

/* "12", "1.5" into an integer scaled by mult (with up to 9 fractional digits), exact only:
 * a value that is not a whole number of base units is refused. */
static int spec_scaled(const char *num, size_t len, uint64_t mult, uint64_t *out)
{
	uint64_t ip = 0, fp = 0, fdiv = 1;
	size_t i = 0;
	if (len == 0 || !isdigit((unsigned char)num[0]))
		return -1;
	for (; i < len && isdigit((unsigned char)num[i]); i++) {
		if (ip > (UINT64_MAX - 9) / 10)
			return -1;
		ip = ip * 10 + (uint64_t)(num[i] - '0');
	}
	if (i < len && num[i] == '.') {
		i++;
		if (i == len || !isdigit((unsigned char)num[i]))
			return -1;
		for (; i < len && isdigit((unsigned char)num[i]); i++) {
			if (fdiv >= 1000000000ull)
				return -1;
			fp = fp * 10 + (uint64_t)(num[i] - '0');
			fdiv *= 10;
		}
	}
	if (i != len)
		return -1;
	if (ip && mult > UINT64_MAX / ip)
		return -1;
	uint64_t whole = ip * mult;
	/* fp / fdiv * mult must be whole: fp * mult divisible by fdiv */
	unsigned __int128 f = (unsigned __int128)fp * mult;
	if (f % fdiv)
		return -1;
	uint64_t frac = (uint64_t)(f / fdiv);
	if (whole > UINT64_MAX - frac)
		return -1;
	*out = whole + frac;
	return 0;
}

struct spec_unit {
	const char *suffix;
	uint64_t mult;
};

static int spec_with_units(const char *text, const struct spec_unit *units, size_t nunits,
                           uint64_t *out)
{
	while (isspace((unsigned char)*text))
		text++;
	size_t len = strlen(text);
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	size_t nl = 0;
	while (nl < len && (isdigit((unsigned char)text[nl]) || text[nl] == '.'))
		nl++;
	size_t us = nl;
	while (us < len && isspace((unsigned char)text[us]))
		us++;
	for (size_t u = 0; u < nunits; u++) {
		size_t sl = strlen(units[u].suffix);
		if (len - us == sl && strncasecmp(text + us, units[u].suffix, sl) == 0)
			return spec_scaled(text, nl, units[u].mult, out);
	}
	return -1;
}

static const struct spec_unit size_units[] = {
    {"", 1},
    {"b", 1},
    {"k", KIB},
    {"kb", KIB},
    {"kib", KIB},
    {"m", KIB *KIB},
    {"mb", KIB *KIB},
    {"mib", KIB *KIB},
    {"g", KIB *KIB *KIB},
    {"gb", KIB *KIB *KIB},
    {"gib", KIB *KIB *KIB},
    {"t", KIB *KIB *KIB *KIB},
    {"tb", KIB *KIB *KIB *KIB},
    {"tib", KIB *KIB *KIB *KIB},
    {"p", KIB *KIB *KIB *KIB *KIB},
    {"pb", KIB *KIB *KIB *KIB *KIB},
    {"pib", KIB *KIB *KIB *KIB *KIB},
};

static const struct spec_unit time_units[] = {
    {"ms", 1},    {"", 1000},     {"s", 1000},    {"sec", 1000},
    {"m", 60000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000},
};

int spec_parse_size(const char *text, uint64_t *out)
{
	return spec_with_units(text, size_units, sizeof(size_units) / sizeof(size_units[0]), out);
}

int spec_parse_duration(const char *text, uint64_t *out_ms)
{
	return spec_with_units(text, time_units, sizeof(time_units) / sizeof(time_units[0]),
	                       out_ms);
}

/* Per-field getters: each reports its own error and returns -1; the caller keeps going so
 * one reply names every field at fault. */

static int get_uint(const json_t *v, const char *key, unsigned min, unsigned max, unsigned *out,
                    struct spec_errors *errs)
{
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		spec_error(errs, key, "must be an integer from %u to %u", min, max);
		return -1;
	}
	*out = (unsigned)json_integer_value(v);
	return 0;
}

static int get_size(const json_t *v, const char *key, uint64_t min, uint64_t max, uint64_t *out,
                    struct spec_errors *errs)
{
	uint64_t n;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		n = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		if (spec_parse_size(json_string_value(v), &n)) {
			spec_error(errs, key,
			           "\"%s\" is not a size: a whole number of bytes, optionally "
			           "with a unit k, m, g, t (powers of 1024), e.g. \"8k\" or \"1G\"",
			           json_string_value(v));
			return -1;
		}
	} else {
		spec_error(errs, key, "must be a number of bytes or a string such as \"8k\"");
		return -1;
	}
	if (n < min || n > max) {
		spec_error(errs, key, "%llu bytes is outside %llu to %llu", (unsigned long long)n,
		           (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

/* max_why: where max_ms comes from when it is not the spec's own limit, for the message */
static int get_duration(const json_t *v, const char *key, uint64_t min_ms, uint64_t max_ms,
                        const char *max_why, uint64_t *out, struct spec_errors *errs)
{
	uint64_t ms;
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    (uint64_t)json_integer_value(v) <= max_ms / 1000) {
		ms = (uint64_t)json_integer_value(v) * 1000;
	} else if (json_is_real(v) && json_real_value(v) >= 0 &&
	           json_real_value(v) * 1000 <= (double)max_ms) {
		ms = (uint64_t)llround(json_real_value(v) * 1000);
	} else if (json_is_string(v)) {
		if (spec_parse_duration(json_string_value(v), &ms)) {
			spec_error(errs, key,
			           "\"%s\" is not a duration: a number with a unit ms, s, m, h or "
			           "d (seconds without one), e.g. \"30s\" or \"500ms\"",
			           json_string_value(v));
			return -1;
		}
	} else if (json_is_number(v)) {
		ms = UINT64_MAX;
	} else {
		spec_error(errs, key, "must be a number of seconds or a string such as \"30s\"");
		return -1;
	}
	if (ms < min_ms || ms > max_ms) {
		spec_error(errs, key, "must be from %.3f s to %llu s%s%s%s", (double)min_ms / 1000,
		           (unsigned long long)(max_ms / 1000), max_why ? " (" : "",
		           max_why ? max_why : "", max_why ? ")" : "");
		return -1;
	}
	*out = ms;
	return 0;
}

static int get_bool(const json_t *v, const char *key, bool *out, struct spec_errors *errs)
{
	if (!json_is_boolean(v)) {
		spec_error(errs, key, "must be true or false");
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

static int get_enum(const json_t *v, const char *key, const char *const *names, size_t n,
                    unsigned *out, struct spec_errors *errs)
{
	const char *s = json_string_value(v);
	for (size_t i = 0; s && i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (unsigned)i;
			return 0;
		}
	}
	char list[160] = "";
	for (size_t i = 0; i < n; i++) {
		strncat(list, names[i], sizeof(list) - strlen(list) - 1);
		if (i + 1 < n)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
	}
	spec_error(errs, key, "must be one of %s", list);
	return -1;
}

static bool spec_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > SPEC_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

static bool spec_text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* An unknown field: the known one it is probably a typo of, else where they are listed. */
static void spec_unknown(struct spec_errors *errs, const char *key)
{
	struct suggest sg;
	suggest_init(&sg, key);
	for (size_t i = 0; i < sizeof(spec_keys) / sizeof(spec_keys[0]); i++)
		suggest_try(&sg, spec_keys[i].key);
	if (suggest_best(&sg))
		spec_error_of(errs, SPEC_ERR_UNKNOWN, key, "unknown field; did you mean %s?",
		              suggest_best(&sg));
	else
		spec_error_of(errs, SPEC_ERR_UNKNOWN, key,
		              "unknown field (see spindle-worker --help)");
}

int spec_parse(const json_t *doc, struct spec *s, struct spec_errors *errs)
{
	return spec_parse_limited(doc, NULL, s, errs);
}

int spec_parse_limited(const json_t *doc, const struct spec_limits *lim, struct spec *s,
                       struct spec_errors *errs)
{
	uint64_t max_runtime_ms = SPEC_MAX_RUNTIME;
	const char *max_runtime_why = NULL;
	if (lim && lim->max_runtime_ms && lim->max_runtime_ms < max_runtime_ms) {
		max_runtime_ms = lim->max_runtime_ms;
		max_runtime_why = lim->max_runtime_why;
	}
	memset(s, 0, sizeof(*s));
	memset(errs, 0, sizeof(*errs));
	if (!json_is_object(doc)) {
		spec_error(errs, "spec", "must be a JSON object");
		return -1;
	}
	const json_t *val[F_COUNT] = {0};
	const char *key[F_COUNT] = {0};
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)doc, k, v)
	{
		size_t i;
		for (i = 0; i < sizeof(spec_keys) / sizeof(spec_keys[0]); i++)
			if (strcmp(k, spec_keys[i].key) == 0)
				break;
		if (i == sizeof(spec_keys) / sizeof(spec_keys[0])) {
			spec_unknown(errs, k);
			continue;
		}
		enum spec_field f = spec_keys[i].field;
		if (val[f]) {
			spec_error(errs, k, "the same setting as %s; give only one", key[f]);
			continue;
		}
		val[f] = v;
		key[f] = k;
	}

	/* pattern first: it decides which fields apply */
	unsigned u;
	bool pattern_ok = false;
	if (!val[F_PATTERN])
		spec_error_of(errs, SPEC_ERR_MISSING, "pattern",
		              "required: read, write, randread, randwrite, randrw, slob or iozone");
	else if (get_enum(val[F_PATTERN], key[F_PATTERN], pattern_names, 7, &u, errs) == 0) {
		s->pattern = (enum spec_pattern)u;
		pattern_ok = true;
	}

	s->name[0] = '\0';
	if (val[F_NAME]) {
		const char *n = json_string_value(val[F_NAME]);
		if (!n || !spec_name_ok(n))
			spec_error(errs, key[F_NAME],
			           "must be 1 to %d letters, digits, '.', '_' or '-', not starting "
			           "with '.' or '-'",
			           SPEC_NAME_MAX);
		else
			snprintf(s->name, sizeof(s->name), "%s", n);
	}
	if (val[F_LABEL]) {
		const char *l = json_string_value(val[F_LABEL]);
		if (!l || strlen(l) > SPEC_LABEL_MAX || !spec_text_ok(l))
			spec_error(errs, key[F_LABEL],
			           "must be a string of at most %d characters without control "
			           "characters",
			           SPEC_LABEL_MAX);
		else
			snprintf(s->label, sizeof(s->label), "%s", l);
	}
	if (val[F_TARGET]) {
		const char *t = json_string_value(val[F_TARGET]);
		if (!t || !*t || strlen(t) >= SPEC_PATH_MAX || !spec_text_ok(t))
			spec_error(errs, key[F_TARGET], "must be a non-empty path");
		else
			snprintf(s->target, sizeof(s->target), "%s", t);
	}

	bool size_ok = true, bs_ok = true, io_ok = true, threads_ok = true, depth_ok = true;
	if (val[F_SIZE] &&
	    get_size(val[F_SIZE], key[F_SIZE], SPEC_MIN_BS, SPEC_MAX_SIZE, &s->size, errs))
		size_ok = false;
	uint64_t bs = pattern_ok && s->pattern == SPEC_IOZONE ? 128 * KIB : 8 * KIB;
	if (val[F_BLOCK_SIZE]) {
		if (get_size(val[F_BLOCK_SIZE], key[F_BLOCK_SIZE], SPEC_MIN_BS, SPEC_MAX_BS, &bs,
		             errs)) {
			bs_ok = false;
		} else if (bs % SPEC_MIN_BS) {
			spec_error(errs, key[F_BLOCK_SIZE], "must be a multiple of 512 bytes");
			bs_ok = false;
		}
	}
	s->block_size = (uint32_t)bs;

	s->engine = SPEC_PSYNC;
	if (val[F_ENGINE] && get_enum(val[F_ENGINE], key[F_ENGINE], engine_names, 2, &u, errs) == 0)
		s->engine = (enum spec_engine)u;
	s->iodepth = 1;
	if (val[F_IODEPTH] &&
	    get_uint(val[F_IODEPTH], key[F_IODEPTH], 1, SPEC_MAX_IODEPTH, &s->iodepth, errs))
		depth_ok = false;
	if (depth_ok && s->iodepth > 1 && s->engine == SPEC_PSYNC) {
		spec_error(errs, key[F_IODEPTH],
		           "psync does one I/O at a time per thread; use engine io_uring for a "
		           "queue depth of %u",
		           s->iodepth);
		depth_ok = false;
	}
	/* as fio's iodepth_batch_submit, default 1: each I/O goes to the kernel as it is
	 * queued, so a device sees a steady stream, not bursts of the depth at once */
	s->iodepth_batch = 1;
	if (val[F_IODEPTH_BATCH] &&
	    get_uint(val[F_IODEPTH_BATCH], key[F_IODEPTH_BATCH], 1, SPEC_MAX_IODEPTH,
	             &s->iodepth_batch, errs) == 0 &&
	    depth_ok && s->iodepth_batch > s->iodepth)
		spec_error(errs, key[F_IODEPTH_BATCH], "must be at most iodepth (%u)", s->iodepth);
	if (val[F_DIRECT])
		get_bool(val[F_DIRECT], key[F_DIRECT], &s->direct, errs);
	if (val[F_CONFIRM])
		get_bool(val[F_CONFIRM], key[F_CONFIRM], &s->confirm, errs);
	if (val[F_RUNTIME])
		get_duration(val[F_RUNTIME], key[F_RUNTIME], 1, max_runtime_ms, max_runtime_why,
		             &s->runtime_ms, errs);
	if (val[F_RAMP])
		get_duration(val[F_RAMP], key[F_RAMP], 0, 86400 * 1000, NULL, &s->ramp_ms, errs);
	if (val[F_IO_SIZE] && get_size(val[F_IO_SIZE], key[F_IO_SIZE], SPEC_MIN_BS, UINT64_MAX / 2,
	                               &s->io_size, errs))
		io_ok = false;
	if (val[F_FSYNC_EVERY])
		get_uint(val[F_FSYNC_EVERY], key[F_FSYNC_EVERY], 0, 1u << 30, &s->fsync_every,
		         errs);
	if (val[F_SEED]) {
		if (!json_is_integer(val[F_SEED]) || json_integer_value(val[F_SEED]) < 0)
			spec_error(errs, key[F_SEED], "must be a non-negative integer");
		else {
			s->seed = (uint64_t)json_integer_value(val[F_SEED]);
			s->seed_set = true;
		}
	}

	/* Fields that belong to some patterns only. */
	static const struct {
		enum spec_field f;
		unsigned allowed; /* bit per pattern */
		const char *why;
	} only[] = {
	    {F_SESSIONS, 1u << SPEC_SLOB, "only for pattern slob"},
	    {F_UPDATE_PCT, 1u << SPEC_SLOB, "only for pattern slob"},
	    {F_PASSES, 1u << SPEC_IOZONE, "only for pattern iozone"},
	    {F_RWMIX_READ, 1u << SPEC_RANDRW, "only for pattern randrw"},
	    {F_WRITERS, (1u << SPEC_RANDWRITE) | (1u << SPEC_WRITE) | (1u << SPEC_RANDRW),
	     "this pattern does not write; use randrw for readers and writers"},
	    {F_READERS,
	     (1u << SPEC_RANDREAD) | (1u << SPEC_READ) | (1u << SPEC_RANDRW) | (1u << SPEC_SLOB),
	     "this pattern does not read; use randrw for readers and writers"},
	    {F_RUNTIME, ~(1u << SPEC_IOZONE), "iozone passes each move size bytes; no time limit"},
	    {F_RAMP, ~(1u << SPEC_IOZONE), "iozone passes have no ramp"},
	    {F_IO_SIZE, ~(1u << SPEC_IOZONE), "iozone passes each move size bytes"},
	    {F_THREADS, ~(1u << SPEC_SLOB), "slob takes sessions and update_pct"},
	};
	bool misplaced = false;
	for (size_t i = 0; pattern_ok && i < sizeof(only) / sizeof(only[0]); i++) {
		if (val[only[i].f] && !(only[i].allowed & (1u << s->pattern))) {
			const char *why = only[i].why;
			if (s->pattern == SPEC_IOZONE &&
			    (only[i].f == F_READERS || only[i].f == F_WRITERS))
				why = "iozone takes threads; every pass is done by all of them";
			else if (s->pattern == SPEC_SLOB && only[i].f == F_WRITERS)
				why = "slob makes update_pct percent of the sessions writers";
			spec_error(errs, key[only[i].f], "%s", why);
			misplaced = true;
		}
	}

	if (pattern_ok && !misplaced) {
		unsigned r = 0, w = 0, t = 0;
		bool gr = val[F_READERS] != NULL, gw = val[F_WRITERS] != NULL;
		if (gr && get_uint(val[F_READERS], key[F_READERS], 0, SPEC_MAX_THREADS, &r, errs))
			threads_ok = false;
		if (gw && get_uint(val[F_WRITERS], key[F_WRITERS], 0, SPEC_MAX_THREADS, &w, errs))
			threads_ok = false;
		if (val[F_THREADS] &&
		    get_uint(val[F_THREADS], key[F_THREADS], 1, SPEC_MAX_THREADS, &t, errs))
			threads_ok = false;
		if (threads_ok && val[F_THREADS] && (gr || gw)) {
			spec_error(errs, key[F_THREADS],
			           "give either threads or readers/writers, not both");
			threads_ok = false;
		}
		if (threads_ok) {
			switch (s->pattern) {
			case SPEC_READ:
			case SPEC_RANDREAD:
				s->readers = gr ? r : (t ? t : 1);
				if (s->readers == 0) {
					spec_error(errs, key[F_READERS], "must be at least 1");
					threads_ok = false;
				}
				break;
			case SPEC_WRITE:
			case SPEC_RANDWRITE:
				s->writers = gw ? w : (t ? t : 1);
				if (s->writers == 0) {
					spec_error(errs, key[F_WRITERS], "must be at least 1");
					threads_ok = false;
				}
				break;
			case SPEC_RANDRW:
				if (gr || gw) {
					s->readers = r;
					s->writers = w;
					if (r + w == 0) {
						spec_error(errs,
						           gr ? key[F_READERS] : key[F_WRITERS],
						           "at least one reader or writer");
						threads_ok = false;
					}
					if (val[F_RWMIX_READ]) {
						spec_error(errs, key[F_RWMIX_READ],
						           "applies to threads only; readers and "
						           "writers are separate groups");
						threads_ok = false;
					}
				} else {
					s->threads = t ? t : 1;
					s->rwmix_read = 50;
					if (val[F_RWMIX_READ] &&
					    get_uint(val[F_RWMIX_READ], key[F_RWMIX_READ], 0, 100,
					             &s->rwmix_read, errs))
						threads_ok = false;
				}
				break;
			case SPEC_SLOB: {
				unsigned n = 0;
				if (val[F_SESSIONS] && gr) {
					spec_error(
					    errs, key[F_READERS],
					    "the same setting as sessions for slob; give only "
					    "one");
					threads_ok = false;
					break;
				}
				if (val[F_SESSIONS] && get_uint(val[F_SESSIONS], key[F_SESSIONS], 1,
				                                SPEC_MAX_THREADS, &n, errs)) {
					threads_ok = false;
					break;
				}
				if (gr && r == 0) {
					spec_error(errs, key[F_READERS], "must be at least 1");
					threads_ok = false;
					break;
				}
				if (gr)
					n = r;
				if (n == 0)
					n = 1;
				if (val[F_UPDATE_PCT] &&
				    get_uint(val[F_UPDATE_PCT], key[F_UPDATE_PCT], 0, 100,
				             &s->update_pct, errs)) {
					threads_ok = false;
					break;
				}
				s->sessions = n;
				/* update_pct of the sessions become writers, rounded up */
				s->writers = (n * s->update_pct + 99) / 100;
				s->readers = n - s->writers;
				if (!val[F_RUNTIME] && !val[F_IO_SIZE])
					s->runtime_ms = 300 * 1000; /* SLOB's RUN_TIME */
				break;
			}
			case SPEC_IOZONE:
				s->threads = t ? t : 1;
				s->rwmix_read = 100;
				s->passes = (1u << SPEC_NPASSES) - 1;
				if (val[F_PASSES]) {
					const json_t *p = val[F_PASSES];
					s->passes = 0;
					if (!json_is_array(p) || json_array_size(p) == 0) {
						spec_error(
						    errs, key[F_PASSES],
						    "must be a non-empty array of pass names");
						threads_ok = false;
						break;
					}
					size_t i;
					const json_t *e;
					json_array_foreach(p, i, e)
					{
						if (get_enum(e, key[F_PASSES], pass_names,
						             SPEC_NPASSES, &u, errs)) {
							threads_ok = false;
							break;
						}
						s->passes |= 1u << u;
					}
				}
				break;
			}
		}
	}

	if (pattern_ok && s->pattern == SPEC_IOZONE && size_ok && !val[F_SIZE]) {
		spec_error_of(errs, SPEC_ERR_MISSING, "size",
		              "required for iozone (the file size of its passes)");
		size_ok = false;
	}
	if (size_ok && bs_ok && s->size && s->size % s->block_size) {
		spec_error(errs, key[F_SIZE], "%llu is not a multiple of block_size (%u)",
		           (unsigned long long)s->size, s->block_size);
		size_ok = false;
	}
	if (io_ok && bs_ok && s->io_size && s->io_size % s->block_size)
		spec_error(errs, key[F_IO_SIZE], "%llu is not a multiple of block_size (%u)",
		           (unsigned long long)s->io_size, s->block_size);
	if (pattern_ok && threads_ok && !misplaced) {
		unsigned n = spec_nthreads(s);
		if (n > SPEC_MAX_THREADS) {
			spec_error(errs, key[F_READERS] ? key[F_READERS] : "writers",
			           "%u threads in all; at most %d", n, SPEC_MAX_THREADS);
		} else if (size_ok && bs_ok && s->size && !spec_is_random(s->pattern) &&
		           s->size / s->block_size < n) {
			spec_error(errs, key[F_SIZE],
			           "%llu blocks of %u bytes cannot be shared by %u sequential "
			           "threads",
			           (unsigned long long)(s->size / s->block_size), s->block_size, n);
		}
		if (bs_ok && depth_ok &&
		    (unsigned long long)n * s->iodepth * s->block_size > SPEC_MAX_BUFFERS)
			spec_error(errs, val[F_IODEPTH] ? key[F_IODEPTH] : "block_size",
			           "%u threads x iodepth %u x %u bytes need more than %llu GiB "
			           "of buffers",
			           n, s->iodepth, s->block_size, SPEC_MAX_BUFFERS >> 30);
		if (val[F_FSYNC_EVERY] && s->fsync_every && !spec_writes(s))
			spec_error(errs, key[F_FSYNC_EVERY], "the job does not write");
	}
	return errs->n ? -1 : 0;
}

int spec_parse_text(const char *text, size_t len, struct spec *s, struct spec_errors *errs)
{
	json_error_t jerr;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		memset(s, 0, sizeof(*s));
		memset(errs, 0, sizeof(*errs));
		spec_error(errs, "spec", "not valid JSON (line %d, column %d): %s", jerr.line,
		           jerr.column, jerr.text);
		return -1;
	}
	int rc = spec_parse(doc, s, errs);
	json_decref(doc);
	return rc;
}

static json_t *spec_seconds(uint64_t ms)
{
	if (ms % 1000 == 0)
		return json_integer((json_int_t)(ms / 1000));
	return json_real((double)ms / 1000.0);
}

json_t *spec_to_json(const struct spec *s)
{
	json_t *o = json_object();
	if (s->name[0])
		json_object_set_new(o, "name", json_string(s->name));
	if (s->label[0])
		json_object_set_new(o, "label", json_string(s->label));
	if (s->target[0])
		json_object_set_new(o, "target", json_string(s->target));
	json_object_set_new(o, "pattern", json_string(spec_pattern_name(s->pattern)));
	if (s->size)
		json_object_set_new(o, "size", json_integer((json_int_t)s->size));
	json_object_set_new(o, "block_size", json_integer(s->block_size));
	switch (s->pattern) {
	case SPEC_SLOB:
		json_object_set_new(o, "sessions", json_integer(s->sessions));
		json_object_set_new(o, "update_pct", json_integer(s->update_pct));
		break;
	case SPEC_IOZONE: {
		json_object_set_new(o, "threads", json_integer(s->threads));
		json_t *p = json_array();
		for (unsigned i = 0; i < SPEC_NPASSES; i++)
			if (s->passes & (1u << i))
				json_array_append_new(p, json_string(pass_names[i]));
		json_object_set_new(o, "passes", p);
		break;
	}
	default:
		if (s->threads) {
			json_object_set_new(o, "threads", json_integer(s->threads));
			json_object_set_new(o, "rwmix_read", json_integer(s->rwmix_read));
		} else {
			if (s->readers || s->pattern == SPEC_RANDRW)
				json_object_set_new(o, "readers", json_integer(s->readers));
			if (s->writers || s->pattern == SPEC_RANDRW)
				json_object_set_new(o, "writers", json_integer(s->writers));
		}
	}
	json_object_set_new(o, "engine", json_string(spec_engine_name(s->engine)));
	json_object_set_new(o, "iodepth", json_integer(s->iodepth));
	if (s->engine == SPEC_IO_URING)
		json_object_set_new(o, "iodepth_batch", json_integer(s->iodepth_batch));
	json_object_set_new(o, "direct", json_boolean(s->direct));
	if (s->runtime_ms)
		json_object_set_new(o, "runtime_s", spec_seconds(s->runtime_ms));
	if (s->ramp_ms)
		json_object_set_new(o, "ramp_s", spec_seconds(s->ramp_ms));
	if (s->io_size)
		json_object_set_new(o, "io_size", json_integer((json_int_t)s->io_size));
	if (s->fsync_every)
		json_object_set_new(o, "fsync_every", json_integer(s->fsync_every));
	if (s->seed_set)
		json_object_set_new(o, "seed", json_integer((json_int_t)s->seed));
	if (s->confirm)
		json_object_set_new(o, "confirm", json_true());
	return o;
}

json_t *spec_errors_json(const struct spec_errors *errs)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < errs->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "field", errs->e[i].field,
		                                   "message", errs->e[i].message));
	return a;
}

const char *spec_help(void)
{
	return "The job spec is one JSON object:\n"
	       "\n"
	       "  {\"name\": \"slob-32r\", \"target\": \"/var/lib/spindle/bench/t1\", \"size\": "
	       "\"1G\",\n"
	       "   \"pattern\": \"randread\", \"block_size\": \"8k\", \"readers\": 32,\n"
	       "   \"engine\": \"psync\", \"direct\": true, \"runtime_s\": 60, \"ramp_s\": 5}\n"
	       "\n"
	       "Sizes are bytes or strings with a binary unit: 512, \"8k\", \"1M\", \"1G\" "
	       "(k = 1024).\n"
	       "Durations are seconds or strings with a unit: 30, 0.5, \"500ms\", \"30s\", "
	       "\"2m\", \"1h\".\n"
	       "\n"
	       "  pattern      read | write | randread | randwrite | randrw | slob | iozone "
	       "(required)\n"
	       "  target       the file (or block device) to test; laid out with incompressible,\n"
	       "               non-repeating data when missing or smaller than size\n"
	       "  size         bytes of the target used; default: its current size. A multiple "
	       "of\n"
	       "               block_size. Sequential threads each take an equal slice of it\n"
	       "  block_size   512 to 16M, a multiple of 512 (default 8k; iozone 128k). "
	       "Alias\n"
	       "               record_size\n"
	       "  readers      threads that only read     } separate groups, as SLOB runs "
	       "them\n"
	       "  writers      threads that only write    }\n"
	       "  threads      threads that each mix reads and writes (randrw), rwmix_read "
	       "percent\n"
	       "               of their I/Os reads (default 50); for the other patterns the "
	       "same as\n"
	       "               readers or writers. Default 1; at most 256 threads in all\n"
	       "  engine       psync (pread/pwrite) or io_uring (default psync)\n"
	       "  iodepth      I/Os in flight per thread, io_uring only (default 1)\n"
	       "  iodepth_batch  I/Os handed to the kernel in one call, 1 to iodepth (default 1:\n"
	       "               each as it is queued, as fio's iodepth_batch_submit)\n"
	       "  direct       true: O_DIRECT with aligned buffers, bypassing the page cache\n"
	       "               (default false); refused where the filesystem does not support "
	       "it\n"
	       "  runtime_s    measured run time (alias run_time)\n"
	       "  io_size      bytes to move in the measured phase, over all threads\n"
	       "               Neither runtime_s nor io_size: one pass of size bytes. Both: "
	       "whichever\n"
	       "               comes first\n"
	       "  ramp_s       run this long first without counting it (default 0)\n"
	       "  fsync_every  fsync after every N writes of a thread (default 0: never)\n"
	       "  seed         seed of the random offsets (default: a fresh one per run)\n"
	       "  name, label  free text kept with the run (name: letters, digits, . _ -)\n"
	       "\n"
	       "Presets:\n"
	       "  slob         sessions (alias readers) threads doing random 8k I/O for "
	       "runtime_s\n"
	       "               (alias run_time, default 300 s); update_pct percent of the "
	       "sessions\n"
	       "               (rounded up) are writers doing random 8k writes, the rest "
	       "readers\n"
	       "  iozone       the passes write, rewrite, read, reread, random_read, "
	       "random_write,\n"
	       "               each moving size (alias file_size, required) bytes in "
	       "block_size\n"
	       "               (alias record_size) records; passes: a subset to run; "
	       "threads share\n"
	       "               the file in slices. Write passes end with an fsync inside the "
	       "timing\n"
	       "               (iozone -e). The result holds the iozone table in bytes/s\n";
}

json_t *spec_presets_json(void)
{
	return json_pack(
	    "{s:[{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:{s:s, s:i, s:i, s:s, s:b, s:i}},"
	    "{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s, s:[s,s,s,s,s,s]}}]}",
	    "presets", "name", "slob", "description",
	    "SLOB-style sessions doing random 8 KiB I/O: readers read, update_pct percent of the "
	    "sessions write",
	    "fields", "sessions", "number of sessions (threads), default 1", "update_pct",
	    "percent of the sessions that are writers (rounded up), default 0", "run_time",
	    "measured time (alias runtime_s), default 300 s", "block_size", "default 8k", "size",
	    "bytes of the target file used", "example", "pattern", "slob", "sessions", 32,
	    "update_pct", 0, "size", "1G", "direct", 1, "run_time", 60,

	    "name", "iozone", "description",
	    "iozone-style passes over one file; the result is the iozone table in bytes/s",
	    "fields", "file_size", "bytes each pass moves (alias size), required", "record_size",
	    "the record size (alias block_size), default 128k", "passes",
	    "which of write, rewrite, read, reread, random_read, random_write (default all)",
	    "threads", "threads sharing the file in slices, default 1", "example", "pattern",
	    "iozone", "file_size", "1G", "record_size", "128k", "passes", "write", "rewrite",
	    "read", "reread", "random_read", "random_write");
}
