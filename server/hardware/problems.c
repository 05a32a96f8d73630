/* SPDX-License-Identifier: ISC */
/* Open problems, kept in memory in the order they were first seen. */
#define _GNU_SOURCE
#include "problems.h"
#include "base/log.h"
#include "base/util.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#define PROBLEMS_MAX            256 /* more open problems than this say nothing new */
#define PROBLEMS_STATE_PERIOD   2   /* seconds between looks at the state dir */
#define PROBLEMS_STATE_FULL_PCT 95

struct problem {
	char key[160];
	char uuid[37];
	enum problem_severity severity;
	char code[32], type[16];
	char description[512], impact[256], action[256];
	char chassis[160], label[160], href[320];
	int64_t first, last;
};

static struct {
	struct problem *list;
	size_t n, cap;
	char *state_dir;
	struct event *timer;
} P;

static const char *const severity_names[] = {"Minor", "Major", "Critical"};

static struct problem *find(const char *key)
{
	for (size_t i = 0; i < P.n; i++)
		if (strcmp(P.list[i].key, key) == 0)
			return &P.list[i];
	return NULL;
}

static void new_uuid(char out[37])
{
	unsigned char b[16];
	char hex[33];
	if (util_random(b, sizeof(b)) < 0) {
		/* Unique for this process all the same: a counter and the time. */
		static unsigned seq;
		memset(b, 0, sizeof(b));
		int64_t t = util_now_ms();
		memcpy(b, &t, sizeof(t));
		seq++;
		memcpy(b + 8, &seq, sizeof(seq));
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	util_hex(b, sizeof(b), hex);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

void problems_raise(const char *key, enum problem_severity severity, const struct problem_text *t,
                    const struct problem_component *comp, const char *fmt, ...)
{
	struct problem *p = find(key);
	if (!p) {
		if (P.n >= PROBLEMS_MAX)
			return;
		P.list = util_grow(P.list, &P.cap, P.n, sizeof(*P.list));
		p = &P.list[P.n++];
		memset(p, 0, sizeof(*p));
		snprintf(p->key, sizeof(p->key), "%s", key);
		new_uuid(p->uuid);
		p->first = util_now();
	}
	char before[sizeof(p->description)];
	memcpy(before, p->description, sizeof(before));
	p->severity = severity;
	p->last = util_now();
	snprintf(p->code, sizeof(p->code), "%s", t->code);
	snprintf(p->type, sizeof(p->type), "%s", t->type ? t->type : "Fault");
	snprintf(p->impact, sizeof(p->impact), "%s", t->impact ? t->impact : "");
	snprintf(p->action, sizeof(p->action), "%s", t->action ? t->action : "");
	snprintf(p->chassis, sizeof(p->chassis), "%s", comp && comp->chassis ? comp->chassis : "");
	snprintf(p->label, sizeof(p->label), "%s", comp && comp->label ? comp->label : "");
	snprintf(p->href, sizeof(p->href), "%s", comp && comp->href ? comp->href : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->description, sizeof(p->description), fmt, ap);
	va_end(ap);
	if (strcmp(before, p->description) != 0)
		log_warn("problem %s (%s): %s", p->uuid, p->key, p->description);
}

static void drop(size_t i)
{
	log_info("problem %s (%s) cleared", P.list[i].uuid, P.list[i].key);
	memmove(&P.list[i], &P.list[i + 1], (P.n - i - 1) * sizeof(*P.list));
	P.n--;
}

void problems_clear(const char *key)
{
	struct problem *p = find(key);
	if (p)
		drop((size_t)(p - P.list));
}

void problems_clear_others(const char *prefix, const char *const *keep, size_t n)
{
	size_t plen = strlen(prefix);
	for (size_t i = P.n; i-- > 0;) {
		if (strncmp(P.list[i].key, prefix, plen) != 0)
			continue;
		bool kept = false;
		for (size_t k = 0; k < n && !kept; k++)
			kept = strcmp(keep[k], P.list[i].key) == 0;
		if (!kept)
			drop(i);
	}
}

unsigned problems_count(void)
{
	return (unsigned)P.n;
}

/* The guide's "2013-02-21 17:37:12" (UTC). */
static char *appliance_time(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

static json_t *str_or_null(const char *s)
{
	return s[0] ? json_string(s) : json_null();
}

static json_t *problem_json(const struct problem *p)
{
	char ts[32], diag[32], first[32], last[32], href[128];
	snprintf(href, sizeof(href), "/api/problem/v1/problems/%s", p->uuid);
	json_t *comp = json_pack("{s:i, s:s, s:o, s:o, s:o}", "certainty", 100, "status",
	                         p->severity == PROBLEM_MINOR ? "degraded" : "faulted", "chassis",
	                         str_or_null(p->chassis), "label", str_or_null(p->label), "href",
	                         str_or_null(p->href));
	/* Every key of the guide's problem; diagnosed is when it was first seen, and Spindle
	 * phones nowhere home, nor has a knowledge article to link. */
	return json_pack(
	    "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:s, s:s, s:[o], s:s, s:s, "
	    "s:s, s:s}",
	    "uuid", p->uuid, "code", p->code, "diagnosed",
	    appliance_time(p->first, diag, sizeof(diag)), "phoned_home", "never", "url", "",
	    "description", p->description, "impact", p->impact[0] ? p->impact : p->description,
	    "repairable", 0, "type", p->type, "timestamp", appliance_time(p->first, ts, sizeof(ts)),
	    "severity", severity_names[p->severity], "response", "None.", "action",
	    p->action[0] ? p->action : "None.", "components", comp, "href", href, "key", p->key,
	    "first_seen", util_iso8601(p->first, first, sizeof(first)), "last_seen",
	    util_iso8601(p->last, last, sizeof(last)));
}

json_t *problems_list_json(void)
{
	json_t *a = json_array();
	for (size_t i = 0; i < P.n; i++)
		json_array_append_new(a, problem_json(&P.list[i]));
	return json_pack("{s:o}", "problems", a);
}

/* The first line of text, at most PROBLEMS_SUMMARY_MAX bytes: a longer one is cut on a
 * character boundary (UTF-8) and ends in an ellipsis. */
static void summary(const char *text, char out[PROBLEMS_SUMMARY_MAX + 1])
{
	size_t n = strcspn(text, "\r\n");
	if (n > PROBLEMS_SUMMARY_MAX) {
		static const char ellipsis[] = "\xe2\x80\xa6";
		n = PROBLEMS_SUMMARY_MAX - (sizeof(ellipsis) - 1);
		while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--; /* not inside a character */
		memcpy(out, text, n);
		memcpy(out + n, ellipsis, sizeof(ellipsis));
		return;
	}
	memcpy(out, text, n);
	out[n] = '\0';
}

json_t *problems_recent_json(size_t max)
{
	json_t *a = json_array();
	for (size_t i = P.n; i-- > 0 && json_array_size(a) < max;) {
		char line[PROBLEMS_SUMMARY_MAX + 1];
		summary(P.list[i].description, line);
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "id", P.list[i].uuid,
		                                   "severity", severity_names[P.list[i].severity],
		                                   "summary", line));
	}
	return a;
}

json_t *problems_get_json(const char *uuid)
{
	for (size_t i = 0; i < P.n; i++)
		if (strcasecmp(P.list[i].uuid, uuid) == 0)
			return json_pack("{s:o}", "problem", problem_json(&P.list[i]));
	return NULL;
}

/* --- sources */

void problems_collector(const char *unread)
{
	if (!unread || !unread[0]) {
		problems_clear("collector");
		return;
	}
	static const struct problem_text t = {
	    "SP-COLLECT-READ", "Defect",
	    "Analytics, the dashboard and /metrics miss what those files hold.",
	    "Check that the files exist and are readable by spindled (--proc-root)."};
	struct problem_component c = {.label = unread};
	problems_raise("collector", PROBLEM_MAJOR, &t, &c, "The analytics collector cannot read %s",
	               unread);
}

void problems_job_ended(long long id, const char *name, const char *state, const char *reason)
{
	if (strcmp(state, "failed") == 0) {
		char href[64];
		snprintf(href, sizeof(href), "/api/bench/v1/jobs/%lld", id);
		static const struct problem_text t = {
		    "SP-BENCH-FAILED", "Defect", "The last benchmark run has no complete result.",
		    "Read the job's reason; the problem clears when a later job does not fail."};
		struct problem_component c = {.label = name, .href = href};
		problems_raise("bench/last-job", PROBLEM_MINOR, &t, &c,
		               "The last benchmark job, %lld (%s), failed: %s", id, name, reason);
	} else if (strcmp(state, "interrupted") != 0) {
		problems_clear("bench/last-job");
	}
}

int problems_check_state_dir(void)
{
	struct statvfs sv;
	if (!P.state_dir)
		return -1;
	if (statvfs(P.state_dir, &sv) < 0 || sv.f_blocks == 0)
		return -1;
	/* As df counts: what non-root users may still use. */
	unsigned long long avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
	unsigned long long used = (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	unsigned long long total = used + avail;
	unsigned pct = total ? (unsigned)((used * 100 + total - 1) / total) : 0;
	if (pct >= PROBLEMS_STATE_FULL_PCT) {
		static const struct problem_text t = {
		    "SP-STATE-FULL", "Fault",
		    "Samples, runs, settings and LED states may not be stored.",
		    "Free space on that file system, or lower the analytics retention."};
		struct problem_component c = {.label = P.state_dir};
		problems_raise("state-dir", pct >= 99 ? PROBLEM_CRITICAL : PROBLEM_MAJOR, &t, &c,
		               "The state directory %s is %u%% full (%llu bytes left)", P.state_dir,
		               pct, avail);
	} else {
		problems_clear("state-dir");
	}
	return 0;
}

static void state_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	problems_check_state_dir();
}

int problems_init(struct event_base *base, const char *state_dir)
{
	P.state_dir = xstrdup(state_dir);
	P.timer = event_new(base, -1, EV_PERSIST, state_tick, NULL);
	struct timeval tv = {PROBLEMS_STATE_PERIOD, 0};
	if (!P.timer || event_add(P.timer, &tv) < 0)
		return -1;
	problems_check_state_dir();
	return 0;
}

void problems_shutdown(void)
{
	if (P.timer)
		event_free(P.timer);
	free(P.list);
	free(P.state_dir);
	memset(&P, 0, sizeof(P));
}
