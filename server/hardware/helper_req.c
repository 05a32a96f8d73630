/* SPDX-License-Identifier: ISC */
/* The request side of the root helpers (helper_req.h). */
#define _GNU_SOURCE
#include "helper_req.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DRAIN_MAX 4096 /* of a refused request, read this much before answering */

static volatile sig_atomic_t timed_out;
static const char *program = "spindle-helper";

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

void helper_init(const char *name)
{
	program = name;
	struct sigaction sa = {.sa_handler = on_alarm};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool helper_timed_out(void)
{
	return timed_out;
}

int helper_reply(int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	printf("%s\n", msg);
	fflush(stdout);
	if (code)
		fprintf(stderr, "%s: %s\n", program, msg);
	return code;
}

int helper_read_line(char *buf, size_t len, int timeout_s)
{
	size_t n = 0, total = 0;
	bool eol = false, bad = false;
	alarm((unsigned)timeout_s);
	while (total < DRAIN_MAX) {
		char chunk[256];
		ssize_t r = read(STDIN_FILENO, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR && !timed_out)
			continue;
		if (r < 0) {
			bad = true;
			break;
		}
		if (r == 0)
			break;
		total += (size_t)r;
		for (ssize_t i = 0; i < r && !bad; i++) {
			char c = chunk[i];
			if (eol || c == '\0' || n + 1 >= len)
				bad = true;
			else if (c == '\n')
				eol = true;
			else
				buf[n++] = c;
		}
	}
	alarm(0);
	if (bad || timed_out || total >= DRAIN_MAX)
		return -1;
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return n ? 0 : -1;
}

/* Reads SYS/block/NAME/FILE's first line into out; false when it cannot be read. */
static bool sys_block_read(const char *sys_root, const char *name, const char *file, char *out,
                           size_t outlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/sys/block/%s/%s", sys_root, name, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(out, (int)outlen, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = '\0';
	return ok;
}

bool helper_slot_disk(const char *sys_root, const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > HELPER_NAME_MAX || name[0] < 'a' || name[0] > 'z')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
			return false;
	char path[PATH_MAX], removable[8];
	struct stat st;
	snprintf(path, sizeof(path), "%s/sys/block/%s", sys_root, name);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	snprintf(path, sizeof(path), "%s/sys/block/%s/device", sys_root, name);
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	return sys_block_read(sys_root, name, "removable", removable, sizeof(removable)) &&
	       strcmp(removable, "0") == 0;
}

const char *helper_dev_name(const char *sys_root, const char *dev)
{
	if (strncmp(dev, "/dev/", 5) != 0 || !helper_slot_disk(sys_root, dev + 5))
		return NULL;
	return dev + 5;
}
