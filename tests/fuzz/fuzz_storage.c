/* SPDX-License-Identifier: ISC */
/* The storage service's parser on any text, as a refresh runs it on what the commands
 * printed: the input is up to three texts separated by the byte 0x1e (ASCII record
 * separator), in the order `zpool list -Hp -o ...`, `zpool status`, `zfs get -Hp ...`
 * (a missing one is a command that failed). The snapshot's pools must each have a name
 * and a health, and every project, filesystem and LUN a pool and a name. */
#include <string.h>

#include "fuzz.h"
#include "base/util.h"
#include "inventory/storage.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static char *next_text(const char **p, const char *end)
{
	if (*p >= end)
		return NULL;
	const char *rs = memchr(*p, 0x1e, (size_t)(end - *p));
	const char *stop = rs ? rs : end;
	char *text = xstrndup(*p, (size_t)(stop - *p));
	*p = rs ? rs + 1 : end;
	return text;
}

static void check(json_t *list, const char *const *keys)
{
	size_t i;
	json_t *o;
	fuzz_assert(json_is_array(list));
	json_array_foreach(list, i, o)
	{
		for (const char *const *k = keys; *k; k++)
			fuzz_assert(json_is_string(json_object_get(o, *k)));
	}
	json_decref(list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *list = next_text(&p, end), *status = next_text(&p, end), *get = next_text(&p, end);
	struct storage_snapshot *s = storage_parse(list, status, get);
	size_t n;
	const struct storage_pool *pools = storage_snapshot_pools(s, &n);
	for (size_t i = 0; i < n; i++)
		fuzz_assert(pools[i].name && pools[i].health && pools[i].allocated <= UINT64_MAX);
	static const char *const pool_keys[] = {"name", "status", "profile", NULL};
	static const char *const share_keys[] = {"name", "pool", "canonical_name", NULL};
	check(storage_snapshot_list(s, "pools"), pool_keys);
	check(storage_snapshot_list(s, "projects"), share_keys);
	check(storage_snapshot_list(s, "filesystems"), share_keys);
	check(storage_snapshot_list(s, "luns"), share_keys);
	storage_snapshot_free(s);
	free(list);
	free(status);
	free(get);
	return 0;
}
