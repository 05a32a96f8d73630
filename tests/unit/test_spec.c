/* SPDX-License-Identifier: ISC */
/* The job spec: units, defaults, presets, the canonical form and one error per field. */
#include <stdint.h>
#include <string.h>

#include "tap.h"
#include "worker/spec.h"

static void test_units(void)
{
	static const struct {
		const char *text;
		uint64_t want; /* 0: refused */
	} sizes[] = {
	    {"512", 512},        {"8k", 8192},
	    {"8K", 8192},        {"8kb", 8192},
	    {"8 KiB", 8192},     {"1M", 1 << 20},
	    {"1G", 1ull << 30},  {"2t", 2ull << 40},
	    {"1.5k", 1536},      {" 4m ", 4 << 20},
	    {"0.3k", 0},         {"k", 0},
	    {"-1", 0},           {"1e3", 0},
	    {"8x", 0},           {"", 0},
	    {"1.k", 0},          {"99999999999999999999", 0},
	    {"99999999999p", 0},
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t v = 0;
		int rc = spec_parse_size(sizes[i].text, &v);
		if (sizes[i].want)
			ok(rc == 0 && v == sizes[i].want, "size \"%s\" = %llu (got %llu)",
			   sizes[i].text, (unsigned long long)sizes[i].want, (unsigned long long)v);
		else
			ok(rc < 0, "size \"%s\" is refused", sizes[i].text);
	}
	static const struct {
		const char *text;
		uint64_t want_ms;
	} times[] = {
	    {"30s", 30000},  {"30", 30000},    {"500ms", 500}, {"1.5s", 1500}, {"2m", 120000},
	    {"1h", 3600000}, {"1d", 86400000}, {"3x", 0},      {"s", 0},       {"1.0001s", 0},
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		uint64_t v = 0;
		int rc = spec_parse_duration(times[i].text, &v);
		if (times[i].want_ms)
			ok(rc == 0 && v == times[i].want_ms, "duration \"%s\" = %llu ms",
			   times[i].text, (unsigned long long)times[i].want_ms);
		else
			ok(rc < 0, "duration \"%s\" is refused", times[i].text);
	}
}

static int parse(const char *text, struct spec *s, struct spec_errors *e)
{
	return spec_parse_text(text, strlen(text), s, e);
}

static void test_defaults(void)
{
	struct spec s;
	struct spec_errors e;
	ok(parse("{\"pattern\":\"randread\"}", &s, &e) == 0, "the smallest spec is a pattern");
	is_int(s.readers, 1, "one reader by default");
	is_int(s.writers + s.threads, 0, "and nothing else");
	is_int(s.block_size, 8192, "8k blocks by default");
	ok(s.engine == SPEC_PSYNC && s.iodepth == 1 && !s.direct, "psync, depth 1, buffered");

	ok(parse("{\"pattern\":\"randrw\"}", &s, &e) == 0, "randrw alone");
	ok(s.threads == 1 && s.rwmix_read == 50, "randrw: one mixed thread, 50 %% reads");
	ok(parse("{\"pattern\":\"randrw\",\"readers\":4,\"writers\":2}", &s, &e) == 0 &&
	       s.readers == 4 && s.writers == 2 && s.threads == 0,
	   "randrw with reader and writer groups");
	ok(parse("{\"pattern\":\"write\",\"threads\":3}", &s, &e) == 0 && s.writers == 3 &&
	       s.threads == 0,
	   "threads of a write pattern are writers");

	ok(parse("{\"pattern\":\"slob\",\"sessions\":10,\"update_pct\":25}", &s, &e) == 0,
	   "slob preset");
	ok(s.readers == 7 && s.writers == 3, "slob: 25 %% of 10 sessions are writers (%u/%u)",
	   s.readers, s.writers);
	ok(s.block_size == 8192 && s.runtime_ms == 300000 && spec_is_random(s.pattern),
	   "slob: random 8k for SLOB's 300 s");
	ok(parse("{\"pattern\":\"slob\",\"readers\":4,\"run_time\":\"1m\"}", &s, &e) == 0 &&
	       s.sessions == 4 && s.readers == 4 && s.runtime_ms == 60000,
	   "slob takes readers and run_time too");

	ok(parse("{\"pattern\":\"iozone\",\"file_size\":\"1G\",\"record_size\":\"64k\"}", &s, &e) ==
	       0,
	   "iozone preset with its own words");
	ok(s.size == 1ull << 30 && s.block_size == 65536 && s.threads == 1 &&
	       s.passes == (1u << SPEC_NPASSES) - 1,
	   "iozone: all six passes, one thread");
	ok(parse("{\"pattern\":\"iozone\",\"size\":\"1M\",\"passes\":[\"read\",\"write\"]}", &s,
	         &e) == 0 &&
	       s.passes == ((1u << SPEC_PASS_READ) | (1u << SPEC_PASS_WRITE)) &&
	       s.block_size == 131072,
	   "iozone: a subset of passes, 128k records by default");
	ok(spec_writes(&s), "a write pass writes");
}

static void test_roundtrip(void)
{
	static const char *const specs[] = {
	    "{\"pattern\":\"randread\",\"name\":\"slob-32r\",\"target\":\"/var/tmp/t1\","
	    "\"size\":\"1G\",\"readers\":32,\"direct\":true,\"runtime_s\":60,\"ramp_s\":5,"
	    "\"label\":\"zfs recordsize=8k\"}",
	    "{\"pattern\":\"randrw\",\"threads\":4,\"rwmix_read\":70,\"engine\":\"io_uring\","
	    "\"iodepth\":16,\"io_size\":\"64M\",\"fsync_every\":8,\"seed\":42,\"runtime_s\":0.5}",
	    "{\"pattern\":\"randrw\",\"readers\":3,\"writers\":0,\"confirm\":true}",
	    "{\"pattern\":\"slob\",\"sessions\":8,\"update_pct\":20,\"run_time\":\"250ms\"}",
	    "{\"pattern\":\"iozone\",\"size\":\"4M\",\"record_size\":\"4k\",\"threads\":2,"
	    "\"passes\":[\"random_write\",\"write\"]}",
	    "{\"pattern\":\"read\",\"size\":\"64k\",\"block_size\":512,\"readers\":4}",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct spec a, b;
		struct spec_errors e;
		if (!ok(parse(specs[i], &a, &e) == 0, "spec %zu parses", i)) {
			diag("%s", e.e[0].message);
			continue;
		}
		json_t *j = spec_to_json(&a);
		char *text = json_dumps(j, JSON_COMPACT);
		int rc = parse(text, &b, &e);
		ok(rc == 0 && memcmp(&a, &b, sizeof(a)) == 0,
		   "spec %zu: its canonical form parses to the same spec: %s", i, text);
		free(text);
		json_decref(j);
	}
}

static void test_errors(void)
{
	static const struct {
		const char *text;
		const char *field;
	} bad[] = {
	    {"{}", "pattern"},
	    {"[1]", "spec"},
	    {"{\"pattern\":\"randread\"", "spec"},
	    {"{\"pattern\":\"foo\"}", "pattern"},
	    {"{\"pattern\":\"randread\",\"pattern\":\"read\"}", "spec"},
	    {"{\"pattern\":\"randread\",\"block_size\":1000}", "block_size"},
	    {"{\"pattern\":\"randread\",\"block_size\":\"32M\"}", "block_size"},
	    {"{\"pattern\":\"randread\",\"block_size\":256}", "block_size"},
	    {"{\"pattern\":\"randread\",\"writers\":1}", "writers"},
	    {"{\"pattern\":\"randwrite\",\"readers\":1}", "readers"},
	    {"{\"pattern\":\"randread\",\"readers\":0}", "readers"},
	    {"{\"pattern\":\"randread\",\"readers\":300}", "readers"},
	    {"{\"pattern\":\"randread\",\"iodepth\":8}", "iodepth"},
	    {"{\"pattern\":\"randread\",\"engine\":\"libaio\"}", "engine"},
	    {"{\"pattern\":\"randread\",\"size\":\"1M\",\"block_size\":\"3k\"}", "size"},
	    {"{\"pattern\":\"randread\",\"io_size\":1000}", "io_size"},
	    {"{\"pattern\":\"randrw\",\"readers\":1,\"rwmix_read\":50}", "rwmix_read"},
	    {"{\"pattern\":\"randrw\",\"rwmix_read\":101}", "rwmix_read"},
	    {"{\"pattern\":\"randrw\",\"readers\":0,\"writers\":0}", "readers"},
	    {"{\"pattern\":\"randrw\",\"threads\":2,\"readers\":1}", "threads"},
	    {"{\"pattern\":\"randread\",\"rwmix_read\":50}", "rwmix_read"},
	    {"{\"pattern\":\"randread\",\"runtime_s\":-1}", "runtime_s"},
	    {"{\"pattern\":\"randread\",\"runtime_s\":0}", "runtime_s"},
	    {"{\"pattern\":\"randread\",\"runtime_s\":\"3x\"}", "runtime_s"},
	    {"{\"pattern\":\"randread\",\"runtime_s\":\"30d\"}", "runtime_s"},
	    {"{\"pattern\":\"randread\",\"ramp_s\":true}", "ramp_s"},
	    {"{\"pattern\":\"randread\",\"run_time\":5,\"runtime_s\":5}", "runtime_s"},
	    {"{\"pattern\":\"randread\",\"direct\":\"yes\"}", "direct"},
	    {"{\"pattern\":\"randread\",\"foo\":1}", "foo"},
	    {"{\"pattern\":\"randread\",\"name\":\"../x\"}", "name"},
	    {"{\"pattern\":\"randread\",\"label\":\"a\\nb\"}", "label"},
	    {"{\"pattern\":\"randread\",\"target\":\"\"}", "target"},
	    {"{\"pattern\":\"randread\",\"seed\":-4}", "seed"},
	    {"{\"pattern\":\"randread\",\"fsync_every\":2}", "fsync_every"},
	    {"{\"pattern\":\"randread\",\"sessions\":2}", "sessions"},
	    {"{\"pattern\":\"read\",\"size\":\"16k\",\"readers\":4}", "size"},
	    {"{\"pattern\":\"randread\",\"readers\":256,\"engine\":\"io_uring\","
	     "\"iodepth\":1024,\"block_size\":\"16M\"}",
	     "iodepth"},
	    {"{\"pattern\":\"slob\",\"threads\":2}", "threads"},
	    {"{\"pattern\":\"slob\",\"writers\":2}", "writers"},
	    {"{\"pattern\":\"slob\",\"update_pct\":120}", "update_pct"},
	    {"{\"pattern\":\"slob\",\"sessions\":2,\"readers\":2}", "readers"},
	    {"{\"pattern\":\"iozone\"}", "size"},
	    {"{\"pattern\":\"iozone\",\"size\":\"1M\",\"runtime_s\":5}", "runtime_s"},
	    {"{\"pattern\":\"iozone\",\"size\":\"1M\",\"readers\":2}", "readers"},
	    {"{\"pattern\":\"iozone\",\"size\":\"1M\",\"passes\":[\"bogus\"]}", "passes"},
	    {"{\"pattern\":\"iozone\",\"size\":\"1M\",\"passes\":[]}", "passes"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct spec s;
		struct spec_errors e;
		int rc = parse(bad[i].text, &s, &e);
		size_t fl = strlen(bad[i].field);
		if (!ok(rc < 0 && e.n >= 1 && strcmp(e.e[0].field, bad[i].field) == 0 &&
		            strncmp(e.e[0].message, bad[i].field, fl) == 0 &&
		            e.e[0].message[fl] == ':',
		        "%s -> %s", bad[i].text, rc < 0 ? e.e[0].message : "accepted"))
			diag("want the field %s", bad[i].field);
	}
	struct spec s;
	struct spec_errors e;
	int rc = parse("{\"pattern\":\"randread\",\"block_size\":1000,\"engine\":\"x\","
	               "\"direct\":1,\"zzz\":0}",
	               &s, &e);
	ok(rc < 0 && e.n == 4, "every field at fault is named at once (%u)", e.n);
	json_t *j = spec_errors_json(&e);
	ok(json_array_size(j) == e.n, "the errors as JSON");
	json_decref(j);
	/* A typo of a field names the field meant; aliases are near too. */
	static const struct {
		const char *text, *message;
	} typo[] = {
	    {"{\"pattern\":\"randread\",\"blocksize\":\"8k\"}",
	     "blocksize: unknown field; did you mean block_size?"},
	    {"{\"pattern\":\"slob\",\"runtime\":5}",
	     "runtime: unknown field; did you mean run_time?"},
	    {"{\"pattern\":\"iozone\",\"recordsize\":\"8k\"}",
	     "recordsize: unknown field; did you mean record_size?"},
	    {"{\"pattern\":\"randread\",\"zzz\":0}",
	     "zzz: unknown field (see spindle-worker --help)"},
	};
	for (size_t i = 0; i < sizeof(typo) / sizeof(typo[0]); i++) {
		rc = parse(typo[i].text, &s, &e);
		ok(rc < 0 && e.n >= 1 && strcmp(e.e[0].message, typo[i].message) == 0, "%s -> %s",
		   typo[i].text, rc < 0 ? e.e[0].message : "accepted");
	}
}

/* A field name is cut to fit an error; cut inside a character it was not UTF-8, and the
 * error went missing from spec_errors_json() (spindle-worker's "errors": []). */
static void test_errors_cut_in_a_character(void)
{
	char text[2048], key[700] = "";
	for (int i = 0; i < 17; i++) /* 34 bytes: cut at 31, inside the 16th "é" */
		strcat(key, "\xc3\xa9");
	snprintf(text, sizeof(text), "{\"pattern\":\"read\",\"%s\":1}", key);
	struct spec s;
	struct spec_errors e;
	ok(parse(text, &s, &e) < 0 && e.n == 1, "a long unknown field is refused");
	json_t *j = spec_errors_json(&e);
	ok(json_array_size(j) == 1, "its error is in the JSON list (%zu)", json_array_size(j));
	json_t *field = json_string(e.e[0].field), *msg = json_string(e.e[0].message);
	ok(field && msg, "field and message are UTF-8");
	ok(strncmp(e.e[0].field, key, strlen(e.e[0].field)) == 0 &&
	       strlen(e.e[0].field) >= sizeof(e.e[0].field) - 2,
	   "the field is cut at the last whole character (%zu bytes)", strlen(e.e[0].field));
	json_decref(field);
	json_decref(msg);
	json_decref(j);

	/* a message cut inside a character too: the name alone fills it */
	key[0] = '\0';
	for (int i = 0; i < 150; i++)
		strcat(key, "\xe2\x82\xac"); /* "€": 450 bytes */
	snprintf(text, sizeof(text), "{\"pattern\":\"read\",\"%s\":1}", key);
	ok(parse(text, &s, &e) < 0 && e.n == 1, "a very long unknown field is refused");
	j = spec_errors_json(&e);
	ok(json_array_size(j) == 1, "its error is in the JSON list (%zu)", json_array_size(j));
	msg = json_string(e.e[0].message);
	ok(msg != NULL, "its message is UTF-8");
	json_decref(msg);
	json_decref(j);
}

/* jansson's error text shows the bytes before the fault, here the first byte of "é" alone:
 * the message was not UTF-8 and spindle-worker wrote no error line at all. */
static void test_errors_quoting_jansson(void)
{
	static const char text[] = "{\"pattern\":\"read\",\"x\":\"\\\xc3\xa9\"}";
	struct spec s;
	struct spec_errors e;
	ok(parse(text, &s, &e) < 0 && e.n == 1 && strcmp(e.e[0].field, "spec") == 0,
	   "an invalid escape is refused");
	json_t *j = spec_errors_json(&e);
	ok(json_array_size(j) == 1, "its error is in the JSON list (%zu)", json_array_size(j));
	json_decref(j);
	json_t *msg = json_string(e.e[0].message);
	ok(msg && strstr(e.e[0].message, "invalid escape"), "its message is UTF-8: %s",
	   e.e[0].message);
	json_decref(msg);
}

/* Each error says what kind it is, as a value: a caller picks its error code from it, not
 * from the message (whose value text is the client's, and may read "required"). */
static void test_error_kinds(void)
{
	static const struct {
		const char *text;
		enum spec_error_kind kind;
	} kinds[] = {
	    {"{}", SPEC_ERR_MISSING},
	    {"{\"pattern\":\"iozone\"}", SPEC_ERR_MISSING},
	    {"{\"pattern\":\"read\",\"zzz\":0}", SPEC_ERR_UNKNOWN},
	    {"{\"pattern\":\"read\",\"blocksize\":\"8k\"}", SPEC_ERR_UNKNOWN},
	    {"{\"pattern\":\"bogus\"}", SPEC_ERR_INVALID},
	    {"{\"pattern\":\"read\",\"size\":\"x: required\"}", SPEC_ERR_INVALID},
	    {"{\"pattern\":\"read\",\"runtime_s\":\"x: unknown field\"}", SPEC_ERR_INVALID},
	    {"{\"pattern\":\"slob\",\"writers\":2}", SPEC_ERR_INVALID},
	    {"[1]", SPEC_ERR_INVALID},
	    {"{", SPEC_ERR_INVALID},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct spec s;
		struct spec_errors e;
		int rc = parse(kinds[i].text, &s, &e);
		ok(rc < 0 && e.n >= 1 && e.e[0].kind == kinds[i].kind, "%s -> kind %d (%s)",
		   kinds[i].text, (int)kinds[i].kind, rc < 0 ? e.e[0].message : "accepted");
	}
}

int main(void)
{
	test_units();
	test_defaults();
	test_roundtrip();
	test_errors();
	test_errors_cut_in_a_character();
	test_errors_quoting_jansson();
	test_error_kinds();
	json_t *p = spec_presets_json();
	ok(json_array_size(json_object_get(p, "presets")) == 2, "two presets described");
	json_decref(p);
	ok(strstr(spec_help(), "rwmix_read") && strstr(spec_help(), "update_pct"),
	   "the help explains the fields");
	return done_testing();
}
