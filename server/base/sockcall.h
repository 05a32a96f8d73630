/* SPDX-License-Identifier: ISC */
/* A root helper behind a unix stream socket, one connection an answer (a systemd socket
 * with Accept=yes that runs a command with its output on the connection): connect, read
 * the whole answer to EOF on the loop, and hand it over as a child's result (child.h), so
 * a caller that runs a command or asks its helper takes both the same way: out the answer,
 * exited with 0; a connection refused or a read failing, exited with 1 and err saying so;
 * no EOF within timeout_ms, timed_out. Loop thread only. */
#ifndef SPINDLE_SOCKCALL_H
#define SPINDLE_SOCKCALL_H

#include <stdbool.h>
#include <stddef.h>

#include "child.h"

struct event_base;
struct sockcall;

struct sockcall_opts {
	const char *path;
	const char *request; /* a line sent before the write side is shut, or NULL; short (a
	                      * local socket takes it at once) */
	int timeout_ms;
	size_t max_output; /* 0: 1 MiB; what comes past it is dropped */
	void (*on_exit)(void *arg, const struct child_result *res);
	void *arg;
};

/* NULL with err when the socket cannot be reached at once (a local socket connects at once
 * or not at all); else on_exit runs once, later, on the loop. */
struct sockcall *sockcall_start(struct event_base *base, const struct sockcall_opts *o, char *err,
                                size_t errlen);
/* Ends a call without its on_exit (at shutdown). */
void sockcall_cancel(struct sockcall *c);

#endif
