/* /api/system/v1: what this box runs, and a liveness probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "api.h"
#include "util.h"

static int64_t started_at;

/* Boot time from /proc/stat's btime; 0 when unreadable. */
static int64_t boot_time(void)
{
	static int64_t btime = -1;
	if (btime >= 0)
		return btime;
	btime = 0;
	FILE *fp = fopen("/proc/stat", "re");
	char line[256];
	while (fp && fgets(line, sizeof(line), fp)) {
		long long v;
		if (sscanf(line, "btime %lld", &v) == 1) {
			btime = v;
			break;
		}
	}
	if (fp)
		fclose(fp);
	return btime;
}

void system_started(void)
{
	started_at = util_now();
	boot_time();
}

static int64_t daemon_uptime(void)
{
	return util_now() - started_at;
}

void system_health(struct request *r)
{
	reply_json(r, 200,
	           json_pack("{s:{s:s, s:I}}", "health", "status", "ok", "uptime_s",
	                     (json_int_t)daemon_uptime()));
}

/* The phone polls this: the answer changes once a second at most (uptime), so it is
 * built once a second and served as bytes in between. */
void system_version(struct request *r)
{
	static char os[200], host[256];
	static char *body;
	static size_t body_len;
	static int64_t body_at = -1, host_read_at;
	int64_t now = util_now();

	if (now != body_at) {
		if (!os[0]) {
			struct utsname u;
			if (uname(&u) == 0)
				snprintf(os, sizeof(os), "%s %s %s", u.sysname, u.release,
				         u.machine);
			else
				snprintf(os, sizeof(os), "Linux");
		}
		if (now - host_read_at >= 60) { /* a renamed host shows within a minute */
			if (gethostname(host, sizeof(host) - 1) < 0)
				host[0] = '\0';
			host_read_at = now;
		}
		int64_t bt = boot_time();
		char boot[32], start[32];
		json_t *j = json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I}}",
		                      "version", "product", "Spindle", "version", PACKAGE_VERSION,
		                      "build", SPINDLE_BUILD, "os", os, "hostname", host,
		                      "boot_time", util_iso8601(bt, boot, sizeof(boot)), "uptime_s",
		                      (json_int_t)(bt ? now - bt : 0), "start_time",
		                      util_iso8601(started_at, start, sizeof(start)),
		                      "daemon_uptime_s", (json_int_t)(now - started_at));
		free(body);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		body_len = body ? strlen(body) : 0;
		body_at = now;
	}
	if (!body) {
		reply_error(r, ERR_INTERNAL, "version: out of memory");
		return;
	}
	reply_header(r, "Cache-Control", "no-store");
	reply_raw(r, 200, "application/json", body, body_len);
}
