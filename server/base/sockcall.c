/* SPDX-License-Identifier: ISC */
/* A root helper's answer over a unix socket (sockcall.h). */
#define _GNU_SOURCE
#include "sockcall.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#define SOCKCALL_MAX_OUTPUT (1 << 20)

struct sockcall {
	int fd;
	struct event *ev;
	struct evbuffer *buf;
	size_t max_output;
	void (*on_exit)(void *arg, const struct child_result *res);
	void *arg;
};

static void sockcall_free(struct sockcall *c)
{
	if (c->ev)
		event_free(c->ev);
	if (c->fd >= 0)
		close(c->fd);
	if (c->buf)
		evbuffer_free(c->buf);
	free(c);
}

void sockcall_cancel(struct sockcall *c)
{
	if (c)
		sockcall_free(c);
}

static void sockcall_end(struct sockcall *c, int err, bool timed_out)
{
	size_t len = evbuffer_get_length(c->buf);
	char *out = xmalloc(len + 1);
	if (len)
		evbuffer_copyout(c->buf, out, len);
	out[len] = '\0';
	char why[128] = "";
	if (err)
		snprintf(why, sizeof(why), "read: %s", strerror(err));
	struct child_result res = {
	    .exited = !timed_out,
	    .exit_code = err ? 1 : 0,
	    .timed_out = timed_out,
	    .out = out,
	    .out_len = len,
	    .err = why,
	    .err_len = strlen(why),
	};
	void (*on_exit)(void *, const struct child_result *) = c->on_exit;
	void *arg = c->arg;
	sockcall_free(c);
	on_exit(arg, &res);
	free(out);
}

static void sockcall_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct sockcall *c = arg;
	if (what & EV_TIMEOUT) {
		sockcall_end(c, 0, true);
		return;
	}
	char chunk[16384];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		sockcall_end(c, n < 0 ? errno : 0, false);
		return;
	}
	size_t have = evbuffer_get_length(c->buf);
	size_t room = have < c->max_output ? c->max_output - have : 0;
	evbuffer_add(c->buf, chunk, (size_t)n < room ? (size_t)n : room);
}

struct sockcall *sockcall_start(struct event_base *base, const struct sockcall_opts *o, char *err,
                                size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(o->path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: the socket path is too long", o->path);
		return NULL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->path);
	/* non-blocking from the start: a full backlog is an error, never a wait on the loop */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	size_t rlen = o->request ? strlen(o->request) : 0;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (rlen && write(fd, o->request, rlen) != (ssize_t)rlen) || shutdown(fd, SHUT_WR) < 0) {
		snprintf(err, errlen, "cannot reach %s: %s", o->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct sockcall *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->max_output = o->max_output ? o->max_output : SOCKCALL_MAX_OUTPUT;
	c->on_exit = o->on_exit;
	c->arg = o->arg;
	c->buf = evbuffer_new();
	c->ev = event_new(base, fd, EV_READ | EV_PERSIST, sockcall_on_read, c);
	struct timeval tv = {o->timeout_ms / 1000, (o->timeout_ms % 1000) * 1000};
	if (!c->buf || !c->ev || event_add(c->ev, o->timeout_ms > 0 ? &tv : NULL) < 0) {
		snprintf(err, errlen, "%s: out of memory", o->path);
		sockcall_free(c);
		return NULL;
	}
	return c;
}
