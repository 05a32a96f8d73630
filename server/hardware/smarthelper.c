/* SPDX-License-Identifier: ISC */
/* spindle-smart-helper: the one way spindled, an unprivileged user, has to read a disk's
 * SMART or NVMe health, which needs root (raw ATA, SCSI and NVMe admin commands).
 * spindle-smart.socket (group spindle, 0660) starts it once per connection (Accept=yes)
 * with the connection as stdin and stdout.
 *
 * The request is one line, and only this:
 *   smart /dev/NAME
 * NAME is a whole disk that can sit in a slot (helper_req.h: letters and digits, under
 * /sys/block, backed by a device, not removable), so no path or option can be smuggled in.
 * The helper runs `smartctl --json -a -n standby /dev/NAME` (a disk spun down is left
 * asleep: smartctl says so and exits) and answers with smartctl's JSON, whatever its exit
 * status (its bits are in the JSON), or with one line "error REASON" when smartctl could
 * not run, gave no JSON, or took longer than 30 s (it is killed).
 * Exit status: 0 when smartctl's JSON was answered, 1 when not, 2 on a refused request. */
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

#define LINE_MAX_LEN 64         /* "smart /dev/" and a name of at most 32 */
#define READ_TIMEOUT 5          /* seconds the client has to send its line */
#define RUN_TIMEOUT  30         /* seconds smartctl may take before it is killed */
#define OUTPUT_MAX   (1u << 20) /* smartctl -a's JSON is some 10 to 60 KB */

/* Runs smartctl on dev; its JSON on stdout, or the line saying why not. */
static int run_smartctl(const char *smartctl, const char *dev, int timeout_s)
{
	int fds[2];
	if (pipe(fds) < 0)
		return helper_reply(1, "error pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		return helper_reply(1, "error fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(fds[1]);
		close(STDIN_FILENO);
		char *argv[] = {(char *)smartctl, "--json",    "-a", "-n",
		                "standby",        (char *)dev, NULL};
		execvp(smartctl, argv);
		fprintf(stderr, "spindle-smart-helper: cannot run %s: %s\n", smartctl,
		        strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	char *out = malloc(OUTPUT_MAX);
	size_t n = 0;
	bool cut = false;
	alarm((unsigned)timeout_s);
	while (out) {
		char buf[4096];
		ssize_t r = read(fds[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR) {
			if (helper_timed_out())
				kill(pid, SIGKILL);
			continue;
		}
		if (r <= 0)
			break;
		size_t take = (size_t)r;
		if (take > OUTPUT_MAX - n) {
			take = OUTPUT_MAX - n;
			cut = true;
		}
		memcpy(out + n, buf, take);
		n += take;
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		if (helper_timed_out())
			kill(pid, SIGKILL);
	alarm(0);
	close(fds[0]);
	int rc;
	size_t lead = 0;
	while (out && lead < n && (out[lead] == ' ' || out[lead] == '\n' || out[lead] == '\t'))
		lead++;
	if (!out)
		rc = helper_reply(1, "error out of memory");
	else if (helper_timed_out())
		rc = helper_reply(1, "error %s %s gave no answer within %d s and was killed",
		                  smartctl, dev, timeout_s);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0)
		rc = helper_reply(1, "error cannot run %s", smartctl);
	else if (WIFSIGNALED(status))
		rc = helper_reply(1, "error %s %s was killed by signal %d", smartctl, dev,
		                  WTERMSIG(status));
	else if (cut)
		rc = helper_reply(1, "error %s %s said more than %u bytes", smartctl, dev,
		                  OUTPUT_MAX);
	else if (lead == n || out[lead] != '{')
		rc = helper_reply(1, "error %s %s gave no JSON (exit status %d)", smartctl, dev,
		                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	else {
		fwrite(out + lead, 1, n - lead, stdout);
		rc = fflush(stdout) == 0 ? 0 : 1;
	}
	free(out);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: spindle-smart-helper [--sys-root DIR] [--smartctl PROGRAM] [--timeout S]\n"
	        "Reads one request, \"smart /dev/NAME\", on stdin, runs\n"
	        "smartctl --json -a -n standby /dev/NAME and answers with its JSON on stdout,\n"
	        "or with \"error REASON\". smartctl is stopped after S seconds (30).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"sys-root", required_argument, NULL, 's'},
	                                         {"smartctl", required_argument, NULL, 'c'},
	                                         {"timeout", required_argument, NULL, 't'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	const char *sys_root = "", *smartctl = "smartctl";
	int c, timeout_s = RUN_TIMEOUT;
	char *end;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sys_root = optarg;
			break;
		case 'c':
			smartctl = optarg;
			break;
		case 't':
			timeout_s = (int)strtol(optarg, &end, 10);
			if (*end || timeout_s < 1 || timeout_s > 600) {
				usage(stderr);
				return 2;
			}
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
	helper_init("spindle-smart-helper");

	char line[LINE_MAX_LEN];
	if (helper_read_line(line, sizeof(line), READ_TIMEOUT) < 0)
		return helper_reply(2, "error the request must be one line: smart /dev/NAME");
	if (strncmp(line, "smart ", 6) != 0)
		return helper_reply(2, "error the request must be: smart /dev/NAME");
	const char *dev = line + 6;
	if (!helper_dev_name(sys_root, dev))
		return helper_reply(2,
		                    "error '%.40s' is not a disk that can sit in a slot (a whole, "
		                    "non-removable disk under /dev backed by a device)",
		                    dev);
	return run_smartctl(smartctl, dev, timeout_s);
}
