/* SPDX-License-Identifier: ISC */
/* Heavy requests in flight per user: see inflight.h. */
#include "inflight.h"
#include "base/hmap.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static struct {
	struct hmap by_user; /* user -> struct count; an entry lives while its count is not 0 */
	int limit;
} in = {.limit = 2}; /* until start-up sets --analytics-heavy-reads */

struct count {
	int n;
};

void inflight_set_limit(int limit)
{
	in.limit = limit > 0 ? limit : 1;
}

int inflight_limit(void)
{
	return in.limit;
}

int inflight_take(const char *user)
{
	size_t len = strlen(user);
	struct count *c = hmap_get(&in.by_user, user, len);
	if (c && c->n >= in.limit)
		return -1;
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		hmap_put(&in.by_user, user, len, c);
	}
	c->n++;
	return 0;
}

void inflight_put(const char *user)
{
	size_t len = strlen(user);
	struct count *c = hmap_get(&in.by_user, user, len);
	if (c && --c->n <= 0)
		free(hmap_del(&in.by_user, user, len)); /* a user idle again costs nothing */
}
