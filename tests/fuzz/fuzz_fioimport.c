/* SPDX-License-Identifier: ISC */
/* POST /api/bench/v1/jobs/import: a fio JSON result from anyone with bench:run, read into
 * a run (job_fio_import), and what the findings make of the figures it carries (any
 * numbers: zeros, negatives, huge ones). A document it refuses has a fault with its
 * reason; one it takes is a run whose spec and result are JSON objects, and whose findings
 * are an array. */
#include <string.h>

#include "db/db.h"
#include "fuzz.h"
#include "bench/job_findings.h"
#include "bench/job_fio.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	struct db_run run;
	struct fault f = {0};
	memset(&run, 0, sizeof(run));
	if (job_fio_import(doc, &run, &f) == 0) {
		json_t *spec = run.spec ? json_loads(run.spec, 0, NULL) : NULL;
		json_t *res = run.result ? json_loads(run.result, 0, NULL) : NULL;
		fuzz_assert(json_is_object(spec) && json_is_object(res));
		fuzz_assert(run.imported && strcmp(run.state, "done") == 0);
		json_t *found = findings_compute(spec, NULL, res, NULL);
		fuzz_assert(json_is_array(found));
		char *text = json_dumps(found, JSON_COMPACT);
		fuzz_assert(text != NULL);
		free(text);
		json_decref(found);
		json_decref(spec);
		json_decref(res);
	} else {
		fuzz_assert(f.details[0] != '\0');
	}
	db_run_clear(&run);
	json_decref(doc);
	return 0;
}
