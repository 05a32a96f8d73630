/* SPDX-License-Identifier: ISC */
/* spindle-ledctl-helper: the one way spindled, an unprivileged user, has to run ledctl,
 * which needs root. spindle-ledctl.socket (group spindle, 0660) starts it once per
 * connection (Accept=yes) with the connection as stdin and stdout.
 *
 * The request is one line, and only these two:
 *   locate /dev/NAME
 *   locate_off /dev/NAME
 * NAME is a whole disk (no partition) the kernel lists under /sys/block, backed by a
 * device (SCSI, SATA, SAS, NVMe: no loop, md, dm, ram or nbd device, which sit in no
 * slot) that is not removable (no optical drive or card reader): letters and digits
 * only, so no path can be smuggled in. Anything else is refused before ledctl runs;
 * everything the client sent is read before the answer, so that it reads the answer
 * rather than a reset connection. The helper runs `ledctl locate=/dev/NAME` (or locate_off=) and
 * answers one line: "ok", or "error REASON".
 * Exit status: 0 when ledctl succeeded, 1 when it failed, 2 on a refused request. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_req.h"

#define LINE_MAX_LEN 96  /* "locate_off /dev/" and a name of at most 32 */
#define READ_TIMEOUT 5   /* seconds the client has to send its line */
#define RUN_TIMEOUT  30  /* seconds ledctl may take before it is killed */
#define OUTPUT_MAX   512 /* of ledctl's complaint, the start is enough */

/* Runs ledctl ARG with its output in a pipe; the first line of what it said in out. */
static int run_ledctl(const char *ledctl, const char *arg, char *out, size_t outlen)
{
	int fds[2];
	if (pipe(fds) < 0)
		return helper_reply(1, "error pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return helper_reply(1, "error fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0 || dup2(fds[1], STDERR_FILENO) < 0)
			_exit(127);
		close(fds[1]);
		close(STDIN_FILENO);
		char *argv[] = {(char *)ledctl, (char *)arg, NULL};
		execvp(ledctl, argv);
		fprintf(stderr, "cannot run %s: %s\n", ledctl, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	size_t n = 0;
	alarm(RUN_TIMEOUT);
	for (;;) {
		char buf[256];
		ssize_t r = read(fds[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR) {
			if (helper_timed_out())
				kill(pid, SIGKILL);
			continue;
		}
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && n + 1 < outlen; i++)
			out[n++] = buf[i];
	}
	out[n] = '\0';
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		if (helper_timed_out())
			kill(pid, SIGKILL);
	alarm(0);
	close(fds[0]);
	char *s = out + strspn(out, " \t\r\n");
	s[strcspn(s, "\r\n")] = '\0';
	memmove(out, s, strlen(s) + 1);
	if (helper_timed_out())
		return helper_reply(1, "error %s gave no answer within %d s and was killed", ledctl,
		                    RUN_TIMEOUT);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return helper_reply(0, "ok");
	if (WIFEXITED(status))
		return helper_reply(1, "error %s %s failed with exit status %d%s%s", ledctl, arg,
		                    WEXITSTATUS(status), *out ? ": " : "", out);
	return helper_reply(1, "error %s %s was killed by signal %d", ledctl, arg,
	                    WTERMSIG(status));
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: spindle-ledctl-helper [--sys-root DIR] [--ledctl PROGRAM]\n"
	        "Reads one request, \"locate /dev/NAME\" or \"locate_off /dev/NAME\", on stdin,\n"
	        "runs ledctl for it and answers \"ok\" or \"error REASON\" on stdout.\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"sys-root", required_argument, NULL, 's'},
	                                         {"ledctl", required_argument, NULL, 'l'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *sys_root = "", *ledctl = "ledctl";
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sys_root = optarg;
			break;
		case 'l':
			ledctl = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	helper_init("spindle-ledctl-helper");

	char line[LINE_MAX_LEN];
	if (helper_read_line(line, sizeof(line), READ_TIMEOUT) < 0)
		return helper_reply(
		    2, "error the request must be one line: locate|locate_off /dev/NAME");
	const char *verb, *dev;
	char *sp = strchr(line, ' ');
	if (!sp)
		return helper_reply(2, "error the request must be: locate|locate_off /dev/NAME");
	*sp = '\0';
	verb = line;
	dev = sp + 1;
	if (strcmp(verb, "locate") != 0 && strcmp(verb, "locate_off") != 0)
		return helper_reply(2, "error unknown request '%.20s': locate or locate_off", verb);
	if (!helper_dev_name(sys_root, dev))
		return helper_reply(
		    2,
		    "error '%.40s' is not a disk that can have a slot LED (a whole, "
		    "non-removable disk under /dev backed by a device)",
		    dev);

	char arg[LINE_MAX_LEN + 8], out[OUTPUT_MAX];
	snprintf(arg, sizeof(arg), "%s=%s", verb, dev);
	return run_ledctl(ledctl, arg, out, sizeof(out));
}
