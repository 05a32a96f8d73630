/* SPDX-License-Identifier: ISC */
/* The kernel's uevents: see uevent.h. */
#define _GNU_SOURCE
#include "uevent.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>

#include <event2/event.h>

#define UEVENT_BUF    8192      /* the kernel's own limit for one event is 2048 */
#define UEVENT_RCVBUF (1 << 20) /* a burst of a shelf's disks coming at once */

static struct {
	int fd;
	struct event *ev;
	uevent_fn fn;
	void *arg;
} ue = {.fd = -1};

bool uevent_parse(char *buf, size_t len, struct uevent *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->devtype = "";
	/* A message from udevd ("libudev" and a binary header) is not the kernel's. */
	if (len == 0 || len >= UEVENT_BUF || !memchr(buf, '@', strnlen(buf, len)))
		return false;
	buf[len - 1] = '\0'; /* the kernel ends every string with NUL; be sure of the last */
	for (size_t off = strlen(buf) + 1; off < len; off += strlen(buf + off) + 1) {
		char *kv = buf + off;
		if (strncmp(kv, "ACTION=", 7) == 0)
			ev->action = kv + 7;
		else if (strncmp(kv, "DEVPATH=", 8) == 0)
			ev->devpath = kv + 8;
		else if (strncmp(kv, "SUBSYSTEM=", 10) == 0)
			ev->subsystem = kv + 10;
		else if (strncmp(kv, "DEVTYPE=", 8) == 0)
			ev->devtype = kv + 8;
	}
	if (!ev->action || !ev->devpath || !ev->subsystem)
		return false;
	if (strcmp(ev->subsystem, "block") == 0)
		return strcmp(ev->devtype, "disk") == 0; /* not its partitions */
	if (strcmp(ev->subsystem, "scsi") == 0)
		return strcmp(ev->devtype, "scsi_device") == 0; /* not hosts and targets */
	return strcmp(ev->subsystem, "enclosure") == 0 || strcmp(ev->subsystem, "nvme") == 0;
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	static char buf[UEVENT_BUF];
	for (int i = 0; i < 64; i++) { /* a burst, then the loop's other work */
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == ENOBUFS) {
				/* Events were lost: the inventory must be looked at as if one came.
				 */
				struct uevent lost = {"change", "enclosure", "/", ""};
				ue.fn(ue.arg, &lost);
				continue;
			}
			if (errno != EAGAIN && errno != EINTR)
				log_warn("uevent: %s", strerror(errno));
			return;
		}
		struct uevent ev;
		if (uevent_parse(buf, (size_t)n, &ev))
			ue.fn(ue.arg, &ev);
	}
}

int uevent_start(struct event_base *base, uevent_fn fn, void *arg)
{
	int fd =
	    socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -1;
	int rcv = UEVENT_RCVBUF;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)); /* capped by rmem_max */
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1 /* the kernel's */};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	ue.fd = fd;
	ue.fn = fn;
	ue.arg = arg;
	ue.ev = event_new(base, fd, EV_READ | EV_PERSIST, on_readable, NULL);
	if (!ue.ev || event_add(ue.ev, NULL) < 0) {
		uevent_stop();
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void uevent_stop(void)
{
	if (ue.ev)
		event_free(ue.ev);
	ue.ev = NULL;
	if (ue.fd >= 0)
		close(ue.fd);
	ue.fd = -1;
}
