/* SPDX-License-Identifier: ISC */
/* Levelled logging: stderr with a timestamp in the foreground, syslog otherwise. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static bool log_foreground = true;
static enum log_level log_max = LOG_LEVEL_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const int level_syslog[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

void log_init(bool foreground, enum log_level level)
{
	log_foreground = foreground;
	log_max = level;
	if (!foreground)
		openlog("spindled", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (level > log_max)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!log_foreground) {
		syslog(level_syslog[level], "%s", msg);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char when[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %-5s %s\n", when, ts.tv_nsec / 1000000, level_names[level], msg);
}
