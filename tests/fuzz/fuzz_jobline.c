/* SPDX-License-Identifier: ISC */
/* The worker's NDJSON lines as the daemon reads them: the input is what a worker wrote to
 * its stdout, cut at '\n' as the child reader does (server/base/child.c), each line handed to
 * job_proto_line() in a heap block of its exact length, with the state the lines before it
 * left. The first refused line ends it, as the daemon then stops the worker. What
 * job_on_line() does with an accepted line is done here too: read its figures, keep its
 * text, copy an error's partial result. */
#include <string.h>

#include "fuzz.h"
#include "bench/job_proto.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void use(const struct job_proto_line *pl)
{
	json_t *o = pl->obj;
	switch (pl->type) {
	case JOB_PROTO_START: {
		json_object_del(o, "type");
		char *text = json_dumps(o, JSON_COMPACT);
		fuzz_assert(text != NULL);
		free(text);
		break;
	}
	case JOB_PROTO_INTERVAL: {
		static const char *const dirs[2] = {"read", "write"};
		double sum = json_number_value(json_object_get(o, "progress_pct"));
		for (int d = 0; d < 2; d++) {
			const json_t *x = json_object_get(o, dirs[d]);
			fuzz_assert(json_is_object(x));
			sum += json_number_value(json_object_get(x, "iops")) +
			       json_number_value(json_object_get(x, "lat_mean_ns"));
		}
		fuzz_assert(sum >= 0);
		break;
	}
	case JOB_PROTO_RESULT:
		json_object_del(o, "type");
		break;
	case JOB_PROTO_ERROR:
		fuzz_assert(json_string_value(json_object_get(o, "message")) != NULL);
		if (pl->partial) {
			json_t *p = json_copy((json_t *)pl->partial);
			json_object_set_new(p, "partial", json_true());
			json_decref(p);
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct job_proto_state st = {false, false, 0};
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		/* a last line without its newline (the worker died mid-line) is delivered at EOF */
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		char *line = malloc(len ? len : 1); /* no NUL after it: a read past len shows */
		fuzz_assert(line != NULL);
		memcpy(line, p, len);
		p = nl ? nl + 1 : end;

		struct job_proto_line pl;
		char err[256] = "";
		int rc = job_proto_line(&st, line, len, &pl, err, sizeof(err));
		free(line);
		if (rc < 0) {
			fuzz_assert(err[0] != '\0');
			break;
		}
		fuzz_assert(pl.obj != NULL && !st.ended);
		use(&pl);
		json_decref(pl.obj);
		switch (pl.type) {
		case JOB_PROTO_START:
			st.have_start = true;
			break;
		case JOB_PROTO_INTERVAL:
			fuzz_assert(st.have_start);
			st.seq++;
			break;
		case JOB_PROTO_RESULT:
		case JOB_PROTO_ERROR:
			st.ended = true;
			break;
		}
	}
	return 0;
}
