/* SPDX-License-Identifier: ISC */
/* What a job's environment is read from, all of it text the daemon did not write: the
 * output of `zpool status -P` and `zfs get -Hp` (another program's, whatever its version
 * prints), the mounts table, /proc/cpuinfo and the ARC's kstat. The input goes whole to
 * each parser as a NUL-ended string in a heap block of its exact size, as the daemon reads
 * a file or a child's output. */
#include <string.h>

#include "fuzz.h"
#include "bench/job_env.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	fuzz_assert(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';

	json_t *vdevs = job_env_parse_zpool_status(text);
	if (vdevs) {
		size_t i;
		json_t *v;
		fuzz_assert(json_is_array(vdevs));
		json_array_foreach(vdevs, i, v)
		{
			fuzz_assert(json_is_string(json_object_get(v, "type")));
			fuzz_assert(json_is_array(json_object_get(v, "devices")));
		}
		json_decref(vdevs);
	}

	/* a value that is not UTF-8 is left out (jansson holds UTF-8 only), so the count may
	 * exceed the members */
	json_t *zfs = json_object();
	fuzz_assert(job_env_parse_zfs_get(text, zfs) >= 0);
	const char *key;
	json_t *val;
	json_object_foreach(zfs, key, val)
	{
		fuzz_assert(strcmp(key, "recordsize") == 0 ? json_is_integer(val)
		                                           : json_is_string(val));
	}
	json_decref(zfs);

	json_t *cpu = json_object();
	if (job_env_parse_cpuinfo(text, cpu) == 0)
		fuzz_assert(json_object_size(cpu) > 0);
	json_decref(cpu);

	(void)job_env_parse_arc_c_max(text);

	struct job_env_mount m;
	if (job_env_find_mount(text, "/a/b/c", 0, &m) == 0) {
		fuzz_assert(memchr(m.point, '\0', sizeof(m.point)) != NULL);
		fuzz_assert(strncmp("/a/b/c", m.point, strlen(m.point)) == 0 ||
		            m.point[0] == '\0' || strcmp(m.point, "/") == 0);
	}
	free(text);
	return 0;
}
