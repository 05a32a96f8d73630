/* SPDX-License-Identifier: ISC */
/* The LED backends that are commands: ledctl (as a child, or through the root helper's
 * socket, spindle-ledctl.socket, when spindled runs unprivileged and it is there:
 * server/hardware/ledhelper.c) and ipmitool's chassis identify. Neither can read an LED
 * back: what was set is what is recorded. */
#include "leds_int.h"
#include "base/child.h"
#include "base/util.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* One ledctl request through the helper's socket: its answer is read on the loop. */
struct sock_req {
	struct op *op;
	int fd;
	struct event *ev;
	char buf[512];
	size_t len;
	struct sock_req *next;
};

static struct {
	const struct led_env *env;
	struct sock_req *socks; /* requests waiting on the helper's answer */
} cmd;

void led_command_start(const struct led_env *env)
{
	cmd.env = env;
}

bool ledctl_via_socket(void)
{
	const char *s = cmd.env ? cmd.env->ledctl_socket : NULL;
	return s && access(s, F_OK) == 0;
}

/* The first line of a command's complaint, for the fault. */
static void first_line(const char *s, char *out, size_t len)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	size_t n = strcspn(s, "\r\n");
	if (n >= len)
		n = len - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[n] = '\0';
}

static void command_exit(void *arg, const struct child_result *res)
{
	struct op *op = arg;
	char msg[160], why[400];
	if (cmd.env->stopping) {
		op->refused = true;
		op->done(op, ERR_BUSY, "the server is shutting down");
		return;
	}
	if (res->exited && res->exit_code == 0) {
		op->now = op->on;
		op->done(op, 0, NULL);
		return;
	}
	first_line(res->err_len ? res->err : res->out ? res->out : "", msg, sizeof(msg));
	if (res->timed_out) {
		snprintf(why, sizeof(why), "%s gave no answer within %d s and was killed",
		         op->command, cmd.env->timeout_ms / 1000);
		op->done(op, ERR_TIMEOUT, why);
		return;
	}
	if (res->exited)
		snprintf(why, sizeof(why), "%s failed with exit status %d%s%s", op->command,
		         res->exit_code, msg[0] ? ": " : "", msg);
	else
		snprintf(why, sizeof(why), "%s was killed by signal %d%s%s", op->command,
		         res->signal, msg[0] ? ": " : "", msg);
	op->done(op, ERR_BACKEND, why);
}

static void sock_req_free(struct sock_req *q)
{
	for (struct sock_req **pp = &cmd.socks; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	if (q->ev)
		event_free(q->ev);
	if (q->fd >= 0)
		close(q->fd);
	free(q);
}

/* The helper's answer: one line, "ok" or "error REASON", then the end of the stream. */
static void sock_read(evutil_socket_t fd, short what, void *arg)
{
	struct sock_req *q = arg;
	struct op *op = q->op;
	char why[700];
	if (what & EV_TIMEOUT) {
		snprintf(why, sizeof(why), "%s gave no answer within %d s", op->command,
		         cmd.env->timeout_ms / 1000);
		sock_req_free(q);
		op->done(op, ERR_TIMEOUT, why);
		return;
	}
	ssize_t n = read(fd, q->buf + q->len, sizeof(q->buf) - 1 - q->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		q->len += (size_t)n;
		if (q->len < sizeof(q->buf) - 1)
			return;
	}
	int err = n < 0 ? errno : 0;
	q->buf[q->len] = '\0';
	char line[400];
	first_line(q->buf, line, sizeof(line));
	sock_req_free(q);
	if (strcmp(line, "ok") == 0) {
		op->now = op->on;
		op->done(op, 0, NULL);
		return;
	}
	if (err)
		snprintf(why, sizeof(why), "%s: %s", op->command, strerror(err));
	else if (strncmp(line, "error ", 6) == 0)
		snprintf(why, sizeof(why), "%s", line + 6);
	else
		snprintf(why, sizeof(why), "%s gave no answer%s%s", op->command,
		         line[0] ? ": " : "", line);
	op->done(op, ERR_BACKEND, why);
}

/* ledctl through the root helper (spindle-ledctl.socket): one request line, the write
 * side shut so that the helper knows it is whole, the answer read on the loop. A local
 * stream socket takes a line this short at once. */
static void sock_start(struct op *op, const char *arg)
{
	char why[PATH_MAX + 128];
	snprintf(op->command, sizeof(op->command), "ledctl %s (via the helper)", arg);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(cmd.env->ledctl_socket) >= sizeof(sa.sun_path)) {
		snprintf(why, sizeof(why), "%s: the socket path is too long", op->command);
		op->done(op, ERR_BACKEND, why);
		return;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", cmd.env->ledctl_socket);
	/* Non-blocking from the start: a full backlog is an error, never a wait on the loop. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	char req[96];
	int len = snprintf(req, sizeof(req), "%s /dev/%s\n", op->on ? "locate" : "locate_off",
	                   op->device);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, req, (size_t)len) != len || shutdown(fd, SHUT_WR) < 0) {
		snprintf(why, sizeof(why), "%s: cannot reach %s: %s", op->command,
		         cmd.env->ledctl_socket, strerror(errno));
		if (fd >= 0)
			close(fd);
		op->done(op, ERR_BACKEND, why);
		return;
	}
	struct sock_req *q = xcalloc(1, sizeof(*q));
	q->op = op;
	q->fd = fd;
	q->ev = event_new(cmd.env->base, fd, EV_READ | EV_PERSIST, sock_read, q);
	q->next = cmd.socks;
	cmd.socks = q;
	struct timeval tv = {cmd.env->timeout_ms / 1000, (cmd.env->timeout_ms % 1000) * 1000};
	event_add(q->ev, &tv);
}

static void command_start(struct op *op)
{
	char arg[64];
	char *argv[5] = {NULL};
	if (op->backend == LED_LEDCTL && ledctl_via_socket()) {
		snprintf(arg, sizeof(arg), "%s=/dev/%s", op->on ? "locate" : "locate_off",
		         op->device);
		sock_start(op, arg);
		return;
	}
	if (op->backend == LED_LEDCTL) {
		snprintf(arg, sizeof(arg), "%s=/dev/%s", op->on ? "locate" : "locate_off",
		         op->device);
		argv[0] = "ledctl";
		argv[1] = arg;
	} else {
		argv[0] = "ipmitool";
		argv[1] = "chassis";
		argv[2] = "identify";
		argv[3] = op->on ? "force" : "0";
	}
	size_t n = 0;
	for (int i = 0; argv[i]; i++)
		n += (size_t)snprintf(op->command + n, sizeof(op->command) - n, "%s%s",
		                      i ? " " : "", argv[i]);
	struct child_opts o = {
	    .argv = argv,
	    .timeout_ms = cmd.env->timeout_ms,
	    .kill_grace_ms = LEDS_KILL_GRACE_MS,
	    .max_output = 4096,
	    .on_exit = command_exit,
	    .arg = op,
	};
	char err[256];
	if (!child_spawn(&o, err, sizeof(err))) {
		char why[320];
		snprintf(why, sizeof(why), "cannot run %s: %.200s", op->command, err);
		op->done(op, ERR_BACKEND, why);
	}
}

/* ledctl locate=/dev/NAME, as a child or through the root helper. */
const struct led_backend_ops led_ledctl = {"ledctl", command_start, false, true};
/* ipmitool chassis identify: the system's LED. */
const struct led_backend_ops led_ipmi = {"ipmi", command_start, false, true};

void led_command_stop(void)
{
	/* ledctl requests with the helper are answered as command_exit answers a child's. */
	while (cmd.socks) {
		struct op *op = cmd.socks->op;
		sock_req_free(cmd.socks);
		op->refused = true;
		op->done(op, ERR_BUSY, "the server is shutting down");
	}
}
