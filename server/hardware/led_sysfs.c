/* SPDX-License-Identifier: ISC */
/* The LED backends written through sysfs: an SES enclosure slot's locate file and an LED
 * class device's brightness, on a helper thread, each read back after the write. */
#include "leds_int.h"
#include "base/util.h"
#include "base/workq.h"
#include "sysfs.h"

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

static void write_work(void *arg)
{
	struct op *op = arg;
	int was = sysfs_read_flag(op->path);
	if (was >= 0)
		op->old = was;
	char value[32] = "0\n";
	if (op->on && op->backend == LED_LEDS) {
		/* An LED is on at any brightness; full brightness is what people look for. */
		char *dir = xstrdup(op->path), *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		char *maxp = xasprintf("%s/max_brightness", dir);
		long long max = sysfs_read_ll(maxp);
		snprintf(value, sizeof(value), "%lld\n", max > 0 ? max : 1);
		free(maxp);
		free(dir);
	} else if (op->on) {
		snprintf(value, sizeof(value), "1\n");
	}
	if (sysfs_write(op->path, value) < 0) {
		op->err = errno;
		return;
	}
	op->now = sysfs_read_flag(op->path);
	op->read = true;
	op->faulted = op->fault_path ? sysfs_read_flag(op->fault_path) : -1;
}

static void write_done(void *arg)
{
	struct op *op = arg;
	char why[PATH_MAX + 64];
	if (op->err) {
		snprintf(why, sizeof(why), "cannot write %s: %s", op->path, strerror(op->err));
		op->done(op, ERR_BACKEND, why);
		return;
	}
	if (op->now != (op->on ? 1 : 0)) {
		snprintf(why, sizeof(why), "%s reads %s after writing %s", op->path, onoff(op->now),
		         onoff(op->on));
		op->done(op, ERR_BACKEND, why);
		return;
	}
	op->done(op, 0, NULL);
}

static const struct led_env *env;

void led_sysfs_start(const struct led_env *e)
{
	env = e;
}

/* The write runs on a helper thread; a full queue refuses the change at once (a change
 * being undone fails as any other). */
static void sysfs_set(struct op *op)
{
	if (workq_submit(env->wq, write_work, write_done, op) == 0)
		return;
	op->refused = !op->undoing;
	op->done(op, ERR_BUSY, "too many hardware requests at once");
}

/* An SES enclosure slot's locate file (and its fault file, read back with it). */
const struct led_backend_ops led_ses = {"ses", sysfs_set, true, false};
/* An LED class device: brightness, full when on. */
const struct led_backend_ops led_leds = {"leds", sysfs_set, true, false};
