/* SPDX-License-Identifier: ISC */
/* The job spec parser, as spindled checks a submitted job and spindle-worker reads its
 * spec: spec_parse_text() of any bytes. An accepted spec turns into canonical JSON
 * (spec_to_json) whose text parses back to the same struct, as the worker gets it from the
 * daemon; a refused one has 1 to SPEC_MAX_ERRORS errors, each naming its field, all of them
 * in spec_errors_json(). The size and duration units are parsed on their own too. */
#include <string.h>

#include "fuzz.h"
#include "worker/spec.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void accepted(const struct spec *s)
{
	fuzz_assert(spec_nthreads(s) >= 1 && spec_nthreads(s) <= SPEC_MAX_THREADS);
	fuzz_assert(s->block_size >= SPEC_MIN_BS && s->block_size <= SPEC_MAX_BS &&
	            s->block_size % SPEC_MIN_BS == 0);
	fuzz_assert(s->size <= SPEC_MAX_SIZE && s->size % s->block_size == 0);
	json_t *j = spec_to_json(s);
	fuzz_assert(j != NULL);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	fuzz_assert(text != NULL);
	struct spec again;
	struct spec_errors errs;
	int rc = spec_parse_text(text, strlen(text), &again, &errs);
	if (rc != 0)
		fprintf(stderr, "canonical spec %s refused: %s\n", text, errs.e[0].message);
	fuzz_assert(rc == 0);
	if (memcmp(s, &again, sizeof(again)) != 0)
		fprintf(stderr, "canonical spec %s parses to another spec\n", text);
	fuzz_assert(memcmp(s, &again, sizeof(again)) == 0);
	free(text);
}

static void refused(const struct spec_errors *errs)
{
	fuzz_assert(errs->n >= 1 && errs->n <= SPEC_MAX_ERRORS);
	for (unsigned i = 0; i < errs->n; i++) {
		const struct spec_error *e = &errs->e[i];
		fuzz_assert(strnlen(e->field, sizeof(e->field)) < sizeof(e->field));
		fuzz_assert(strnlen(e->message, sizeof(e->message)) < sizeof(e->message));
	}
	json_t *list = spec_errors_json(errs);
	if (json_array_size(list) != errs->n)
		fprintf(stderr, "%u errors, %zu of them in the JSON list (first: %s)\n", errs->n,
		        json_array_size(list), errs->e[0].message);
	fuzz_assert(json_array_size(list) == errs->n);
	json_decref(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spec s;
	struct spec_errors errs;
	if (spec_parse_text((const char *)data, size, &s, &errs) == 0)
		accepted(&s);
	else
		refused(&errs);

	char *text = strndup((const char *)data, size); /* spec.c links jansson only: no util.h */
	fuzz_assert(text != NULL);
	uint64_t v;
	spec_parse_size(text, &v);
	spec_parse_duration(text, &v);
	free(text);
	return 0;
}
