/* SPDX-License-Identifier: ISC */
/* GET /metrics: the Prometheus exposition. Public at the router: the allow-list
 * (--metrics-allow) lets scrapers in without a token; anyone else needs one with
 * stat:read, checked here. */
#include "api.h"
#include "status/metrics.h"

#include <string.h>
#include <strings.h>

static const char *bearer(const struct request *r)
{
	const char *t = request_header(r, "X-Auth-Session");
	if (t && *t)
		return t;
	const char *a = request_header(r, "Authorization");
	if (!a || strncasecmp(a, "Bearer ", 7) != 0)
		return NULL;
	for (a += 7; *a == ' ';)
		a++;
	return *a ? a : NULL;
}

static int metrics_authorize(struct request *r, struct fault *f)
{
	if (metrics_peer_allowed(r->peer))
		return 0;
	const char *token = bearer(r);
	if (!token)
		return fault_set(f, ERR_UNAUTHORIZED,
		                 "credentials: %s is not in --metrics-allow; send a token with "
		                 "stat:read (Authorization: Bearer)",
		                 r->peer);
	if (auth_verify(token, &r->who, f) < 0)
		return -1;
	r->authenticated = true;
	if (!(r->who.perms & PERM_STAT_READ))
		return fault_set(f, ERR_DENIED, "authorization: /metrics needs stat:read");
	return 0;
}

void metrics_api_get(struct request *r)
{
	struct fault f;
	size_t len;

	if (metrics_authorize(r, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	const char *text = metrics_text(&len);
	reply_header(r, "Cache-Control", "no-store");
	reply_raw(r, 200, METRICS_CONTENT_TYPE, text ? text : "", text ? len : 0);
}
