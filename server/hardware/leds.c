/* SPDX-License-Identifier: ISC */
/* Locator LEDs over the hardware inventory. The loop owns a snapshot of the inventory and
 * the recorded LED states; a helper thread of its own scans sysfs, reads LEDs back and
 * writes them; ledctl and ipmitool run as child processes (ledctl through the root
 * helper's socket, spindle-ledctl.socket, when spindled runs unprivileged and it is
 * there: server/hardware/ledhelper.c). Every request is an op that
 * waits for a fresh enough snapshot, reads back the LEDs its answer shows, and answers. */
#define _GNU_SOURCE
#include "leds_int.h"
#include "uevent.h"
#include "access/audit.h"
#include "db/dbw.h"
#include "base/child.h"
#include "base/log.h"
#include "base/loopwork.h"
#include "problems.h"
#include "sysfs.h"
#include "base/util.h"
#include "base/workq.h"
#include "db/db.h"

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

struct leds_state leds;

static void op_run(struct op *op, bool fresh);
static void op_free(struct op *op);

/* --- small helpers */

static int choice_parse(const char *s)
{
	if (!s || strcmp(s, "auto") == 0)
		return CHOOSE_AUTO;
	for (size_t i = 0; i < nitems(led_backends); i++)
		if (strcmp(s, led_backends[i]->name) == 0)
			return (int)i;
	return CHOOSE_AUTO;
}

static bool file_exists(const char *path)
{
	return path && access(path, F_OK) == 0;
}

static void snap_free(struct snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->inv.nchassis; i++) {
		free(s->chassis[i].path);
		free(s->chassis[i].fault_path);
	}
	for (size_t i = 0; i < s->inv.ndisks; i++) {
		free(s->disks[i].path);
		free(s->disks[i].fault_path);
	}
	free(s->chassis);
	free(s->disks);
	hmap_clear(&s->by_key, NULL);
	sysfs_inventory_free(&s->inv);
	free(s);
}

static long chassis_index(const struct snap *s, const char *id)
{
	for (size_t i = 0; i < s->inv.nchassis; i++)
		if (strcmp(s->inv.chassis[i].id, id) == 0)
			return (long)i;
	return -1;
}

static long disk_index(const struct snap *s, size_t chassis, const char *id)
{
	for (size_t i = 0; i < s->inv.ndisks; i++)
		if (s->inv.disks[i].chassis == chassis && strcmp(s->inv.disks[i].id, id) == 0)
			return (long)i;
	return -1;
}

struct comp *comp_by_key(struct snap *s, const char *key, long *idx, bool *disk)
{
	long i = s ? hmap_index_get(&s->by_key, key) : -1;
	if (i < 0)
		return NULL;
	*disk = (size_t)i >= s->inv.nchassis;
	*idx = *disk ? i - (long)s->inv.nchassis : i;
	return *disk ? &s->disks[*idx] : &s->chassis[*idx];
}

/* Indexes the snapshot's components by key: chassis first, then disks. */
static void index_keys(struct snap *s)
{
	for (size_t i = 0; i < s->inv.nchassis; i++)
		hmap_index_put(&s->by_key, s->chassis[i].key, i);
	for (size_t i = 0; i < s->inv.ndisks; i++)
		hmap_index_put(&s->by_key, s->disks[i].key, s->inv.nchassis + i);
}

/* --- scanning (helper thread) */

static void choose_system(struct snap *s, bool full)
{
	struct comp *c = &s->chassis[0];
	char *brightness = leds.system_led ? xasprintf("%s/sys/class/leds/%s/brightness", leds.root,
	                                               leds.system_led)
	                                   : NULL;
	bool have_leds = file_exists(brightness);
	switch (leds.sys_choice) {
	case LED_LEDS:
		c->backend = have_leds ? LED_LEDS : LED_VIRTUAL;
		break;
	case LED_IPMI:
		c->backend = LED_IPMI; /* forced: ipmitool will say itself if it cannot */
		break;
	case LED_VIRTUAL:
		c->backend = LED_VIRTUAL;
		break;
	default:
		if (have_leds)
			c->backend = LED_LEDS;
		else if (s->inv.have_ipmi && child_on_path("ipmitool"))
			c->backend = LED_IPMI;
		else
			c->backend = LED_VIRTUAL;
	}
	if (c->backend == LED_LEDS) {
		c->path = brightness;
		c->locate = full ? sysfs_read_flag(brightness) : -1;
	} else {
		free(brightness);
	}
}

static void choose_disk(struct comp *c, const struct sysfs_disk *d, int *have_ledctl)
{
	char *locate = d->slot_dir ? xasprintf("%s/locate", d->slot_dir) : NULL;
	bool ses = file_exists(locate);
	/* ledmon drives SATA (SGPIO), SAS and NVMe (VMD, NPEM) disks; not virtio or USB. */
	bool ledctl_able =
	    d->device[0] && (strcmp(d->interface, "sata") == 0 ||
	                     strcmp(d->interface, "sas") == 0 || strcmp(d->interface, "nvme") == 0);
	switch (leds.disk_choice) {
	case LED_SES:
		c->backend = ses ? LED_SES : LED_VIRTUAL;
		break;
	case LED_LEDCTL:
		c->backend = d->device[0] ? LED_LEDCTL : LED_VIRTUAL;
		break;
	case LED_VIRTUAL:
		c->backend = LED_VIRTUAL;
		break;
	default:
		if (ses) {
			c->backend = LED_SES;
		} else if (ledctl_able) {
			if (*have_ledctl < 0)
				*have_ledctl = ledctl_via_socket() || child_on_path("ledctl");
			c->backend = *have_ledctl ? LED_LEDCTL : LED_VIRTUAL;
		} else {
			c->backend = LED_VIRTUAL;
		}
	}
	if (c->backend == LED_SES) {
		c->path = locate;
		c->fault_path = xasprintf("%s/fault", d->slot_dir);
		c->locate = d->locate;
	} else {
		free(locate);
	}
}

static void scan_work(void *arg)
{
	struct scan_job *j = arg;
	struct snap *s = xcalloc(1, sizeof(*s));
	if (sysfs_scan(leds.root, &s->inv, j->full) < 0) {
		free(s);
		return;
	}
	s->chassis = xcalloc(s->inv.nchassis, sizeof(*s->chassis));
	s->disks = xcalloc(s->inv.ndisks ? s->inv.ndisks : 1, sizeof(*s->disks));
	int have_ledctl = -1; /* looked up once per scan, when a disk could use it */
	for (size_t i = 0; i < s->inv.nchassis; i++) {
		struct comp *c = &s->chassis[i];
		snprintf(c->key, sizeof(c->key), "chassis/%s", s->inv.chassis[i].id);
		c->backend = LED_VIRTUAL; /* SES has no enclosure-wide locate in sysfs */
		c->locate = -1;
	}
	choose_system(s, j->full);
	for (size_t i = 0; i < s->inv.ndisks; i++) {
		struct comp *c = &s->disks[i];
		snprintf(c->key, sizeof(c->key), "disk/%s", s->inv.disks[i].id);
		c->locate = -1;
		choose_disk(c, &s->inv.disks[i], &have_ledctl);
	}
	index_keys(s);
	s->taken_ns = util_mono_ns();
	j->snap = s;
}

static void reapply_all(void);

static void waiters_fail(const struct fault *f)
{
	struct op *op = leds.waiters;
	leds.waiters = leds.waiters_tail = NULL;
	while (op) {
		struct op *next = op->next;
		if (op->cb)
			op->cb(op->arg, NULL, f);
		op_free(op);
		op = next;
	}
}

/* Serves the waiting ops from the current snapshot; fresh: it was just read whole. */
static void waiters_run(bool fresh)
{
	struct op *op = leds.waiters;
	leds.waiters = leds.waiters_tail = NULL;
	while (op) {
		struct op *next = op->next;
		op->next = NULL;
		op_run(op, fresh);
		op = next;
	}
}

/* A scan without LED reads keeps what the last reads said, for the same LED file. */
static void carry_leds(struct snap *s, struct snap *old)
{
	for (size_t k = 0; old && k < s->inv.nchassis + s->inv.ndisks; k++) {
		bool disk = k >= s->inv.nchassis;
		size_t i = disk ? k - s->inv.nchassis : k;
		struct comp *c = disk ? &s->disks[i] : &s->chassis[i];
		if (!c->path)
			continue;
		long j;
		bool was_disk;
		const struct comp *o = comp_by_key(old, c->key, &j, &was_disk);
		if (!o || !o->path || strcmp(o->path, c->path) != 0)
			continue;
		if (c->locate < 0)
			c->locate = o->locate;
		if (disk && was_disk && s->inv.disks[i].faulted < 0)
			s->inv.disks[i].faulted = old->inv.disks[j].faulted;
	}
}

/* A scan's inventory taken in, on the loop (scan_done times it). */
static void scan_take(void *arg)
{
	struct scan_job *j = arg;
	bool first = !leds.snap, full = j->full;
	leds.scanning = false;
	if (j->snap) {
		if (!full)
			carry_leds(j->snap, leds.snap);
		snap_free(leds.snap);
		leds.snap = j->snap;
		leds.snap->gen = ++leds.gen;
	} else {
		log_warn("leds: the hardware inventory under %s cannot be read", leds.root);
	}
	free(j);
	faults_to_problems(leds.snap);
	smart_from_snap(leds.snap);
	if (!leds.snap) {
		struct fault f = {.kind = ERR_INTERNAL};
		snprintf(f.details, sizeof(f.details), "chassis: the inventory cannot be read");
		waiters_fail(&f);
		return;
	}
	if (first) {
		log_info("leds: %zu chassis, %zu disks and slots; system locator via %s",
		         leds.snap->inv.nchassis, leds.snap->inv.ndisks,
		         led_backends[leds.snap->chassis[0].backend]->name);
		if (leds.system_led && leds.snap->chassis[0].backend != LED_LEDS)
			log_warn("leds: no LED %s under %s/sys/class/leds", leds.system_led,
			         leds.root);
		reapply_all();
	}
	/* After a scan that read every LED, the waiters need no read of their own. */
	waiters_run(full);
}

/* Timed as the loop's work (loopwork.h): at a big box's every rescan it replaces a thousand
 * disks' state. */
static void scan_done(void *arg)
{
	struct loopwork w;
	loopwork_begin(&w);
	scan_take(arg);
	loopwork_end(&w);
}

static bool snap_older(uint64_t ns)
{
	return !leds.snap || util_mono_ns() - leds.snap->taken_ns > ns;
}

const char *const leds_scan_why_names[LEDS_SCAN_NWHY] = {"start", "uevent", "request", "watch"};

uint64_t leds_scans(enum leds_scan_why why)
{
	return why < LEDS_SCAN_NWHY ? leds.scans[why] : 0;
}

/* full: read every LED and slot as well (the first scan, the watch). */
static void scan_start(bool full, enum leds_scan_why why)
{
	if (leds.scanning)
		return;
	if (leds.env.stopping) {
		struct fault f = {.kind = ERR_BUSY, .retry_after = 1};
		snprintf(f.details, sizeof(f.details), "chassis: the server is shutting down");
		if (leds.snap)
			waiters_run(false);
		else
			waiters_fail(&f);
		return;
	}
	struct scan_job *j = xcalloc(1, sizeof(*j));
	j->full = full || !leds.snap;
	if (workq_submit(leds.env.wq, scan_work, scan_done, j) < 0) {
		free(j);
		/* A queue this full means readers are plenty: serve them what we have. */
		if (leds.snap) {
			waiters_run(false);
		} else {
			struct fault f = {.kind = ERR_BUSY, .retry_after = 1};
			snprintf(f.details, sizeof(f.details),
			         "chassis: the inventory is being read");
			waiters_fail(&f);
		}
		return;
	}
	leds.scanning = true;
	leds.stale = false; /* an event from now on asks for another */
	leds.scans[why]++;
}

/* The rescan a burst of uevents asks for, once it is over and no scan is running. */
static void settle_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (!leds.stale)
		return; /* a request's scan took it */
	if (leds.scanning) {
		struct timeval tv = {0, LEDS_SETTLE_MS * 1000};
		event_add(leds.settle, &tv);
		return;
	}
	scan_start(false, LEDS_SCAN_UEVENT);
}

static void on_uevent(void *arg, const struct uevent *ev)
{
	(void)arg;
	const char *name = strrchr(ev->devpath, '/');
	name = name ? name + 1 : ev->devpath;
	if (strcmp(ev->subsystem, "block") == 0 && sysfs_not_a_disk(name))
		return; /* a loop device, a RAM disk, device-mapper: never in the inventory */
	log_debug("hardware: uevent %s %s (%s)", ev->action, ev->devpath, ev->subsystem);
	leds.stale = true;
	if (!event_pending(leds.settle, EV_TIMEOUT, NULL)) {
		struct timeval tv = {0, LEDS_SETTLE_MS * 1000};
		event_add(leds.settle, &tv);
	}
}

static void op_free(struct op *op)
{
	free(op->rb);
	free(op->path);
	free(op->fault_path);
	free(op);
}

void op_fail(struct op *op, enum fault_kind kind, const char *fmt, ...)
{
	struct fault f = {.kind = kind};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.details, sizeof(f.details), fmt, ap);
	va_end(ap);
	if (kind == ERR_BUSY)
		f.retry_after = 1;
	if (op->cb)
		op->cb(op->arg, NULL, &f);
	op_free(op);
}

/* The chassis and disk the op names, as indexes in s (-1: it names none); false, with
 * the op failed and freed, when one of them is not there. */
static bool op_find(struct op *op, const struct snap *s, long *ci, long *di)
{
	*ci = *di = -1;
	if (op->kind != OP_CHASSIS_LIST && op->kind != OP_WATCH) {
		*ci = chassis_index(s, op->chassis);
		if (*ci < 0) {
			op_fail(op, ERR_NOT_FOUND, "chassis: no chassis '%.128s'", op->chassis);
			return false;
		}
	}
	if (op->disk[0]) {
		*di = disk_index(s, (size_t)*ci, op->disk);
		if (*di < 0) {
			op_fail(op, ERR_NOT_FOUND, "disk: no disk '%.128s' in chassis '%.128s'",
			        op->disk, op->chassis);
			return false;
		}
	}
	return true;
}

/* Answers from the current snapshot, looking the objects up again by id: the snapshot may
 * have been replaced while the op waited. */
static void op_answer(struct op *op)
{
	struct snap *s = leds.snap;
	long ci, di;
	if (!op_find(op, s, &ci, &di))
		return;
	json_t *out = NULL;
	switch (op->kind) {
	case OP_CHASSIS_LIST:
		out = json_array();
		for (size_t i = 0; i < s->inv.nchassis; i++)
			json_array_append_new(out, chassis_json(s, i));
		break;
	case OP_DISK_LIST:
		out = json_array();
		for (size_t i = 0; i < s->inv.ndisks; i++)
			if (s->inv.disks[i].chassis == (size_t)ci)
				json_array_append_new(out, disk_json(s, i));
		break;
	case OP_CHASSIS: {
		/* As the appliance does: a chassis embeds its components. */
		json_t *disks = json_array();
		for (size_t i = 0; i < s->inv.ndisks; i++)
			if (s->inv.disks[i].chassis == (size_t)ci)
				json_array_append_new(disks, disk_json(s, i));
		out = chassis_json(s, (size_t)ci);
		json_object_set_new(out, "disk", disks);
		break;
	}
	case OP_DISK:
	case OP_LOCATE:
		out = di >= 0 ? disk_json(s, (size_t)di) : chassis_json(s, (size_t)ci);
		break;
	case OP_REAPPLY:
	case OP_WATCH:
		break;
	}
	if (op->cb)
		op->cb(op->arg, out, NULL);
	else
		json_decref(out);
	op_free(op);
}

/* --- reading back (helper thread) */

static void readbacks_free(struct op *op)
{
	for (size_t i = 0; i < op->nrb; i++) {
		free(op->rb[i].path);
		free(op->rb[i].fault_path);
		free(op->rb[i].slot_dir);
	}
	op->nrb = 0;
}

static void readback_work(void *arg)
{
	struct op *op = arg;
	for (size_t i = 0; i < op->nrb; i++) {
		struct readback *rb = &op->rb[i];
		rb->locate = rb->slot_dir ? -1 : sysfs_read_flag(rb->path);
		rb->faulted = rb->fault_path ? sysfs_read_flag(rb->fault_path) : -1;
		bool present, critical;
		/* the watch's: a critical slot is a faulted one, as a scan says */
		if (rb->slot_dir &&
		    sysfs_read_slot_status(rb->slot_dir, &present, &critical) == 0 && critical)
			rb->faulted = 1;
	}
}

static void readback_done(void *arg)
{
	struct op *op = arg;
	struct snap *s = leds.snap;
	struct loopwork w; /* the watch's every slot, on the loop: timed as its work */
	loopwork_begin(&w);
	for (size_t i = 0; s && i < op->nrb; i++) {
		struct readback *rb = &op->rb[i];
		struct comp *c;
		long idx = (long)rb->idx;
		bool disk = rb->disk;
		if (s->gen == op->gen)
			c = disk ? &s->disks[idx] : &s->chassis[idx];
		else
			c = comp_by_key(s, rb->key, &idx, &disk);
		if (!c || !c->path)
			continue;
		if (!rb->slot_dir)
			c->locate = rb->locate;
		if (disk && rb->fault_path)
			s->inv.disks[idx].faulted = rb->faulted;
	}
	readbacks_free(op);
	if (op->kind == OP_WATCH)
		leds.watching = false;
	faults_to_problems(leds.snap);
	op_answer(op);
	loopwork_end(&w);
}

static void readback_add(struct op *op, const struct comp *c, bool disk, size_t idx)
{
	if (!c->path)
		return;
	op->rb = util_grow(op->rb, &op->rb_cap, op->nrb, sizeof(*op->rb));
	struct readback *rb = &op->rb[op->nrb++];
	memset(rb, 0, sizeof(*rb));
	rb->disk = disk;
	rb->idx = idx;
	snprintf(rb->key, sizeof(rb->key), "%s", c->key);
	rb->path = xstrdup(c->path);
	rb->fault_path = c->fault_path ? xstrdup(c->fault_path) : NULL;
}

/* --- changing an LED */

static void op_target(struct op *op)
{
	if (op->disk[0])
		snprintf(op->target, sizeof(op->target), "chassis/%s/disk/%s", op->chassis,
		         op->disk);
	else
		snprintf(op->target, sizeof(op->target), "chassis/%s", op->chassis);
}

static void led_put_work(struct db *db, void *arg)
{
	const struct db_led *row = arg;
	if (db_led_put(db, row) != 0)
		log_warn("leds: could not record %s as %s", row->component, onoff(row->locate));
}

/* The row of a change. A LED lit already keeps the time it was lit (a re-apply at start,
 * a second "on"); otherwise the change is stamped now, and the record in memory takes the
 * same second (locate_apply), so a restart reads back what was shown. */
static void led_row(struct db_led *row, struct op *op)
{
	const struct rec *r = rec_find(op->key);
	op->at = op->on && r && r->locate && r->lit_since ? r->lit_since : util_now();
	row->mtime = op->at;
	row->locate = op->on;
	snprintf(row->component, sizeof(row->component), "%s", op->key);
	snprintf(row->backend, sizeof(row->backend), "%s", led_backends[op->backend]->name);
}

/* What the hardware now shows, into the snapshot; the record follows when set. */
static void locate_apply(struct op *op, bool record)
{
	struct rec *r = rec_get(op->key);
	r->busy = false;
	if (record) {
		r->locate = op->on;
		if (!op->on)
			r->lit_since = 0;
		else if (!r->lit_since)
			r->lit_since = op->at ? op->at : util_now();
		r->fault[0] = '\0';
		char key[LEDS_KEY_MAX + 8];
		snprintf(key, sizeof(key), "led/%s", op->key);
		problems_clear(key);
	}
	long idx;
	bool disk;
	struct comp *c = comp_by_key(leds.snap, op->key, &idx, &disk);
	if (c && c->path && led_backends[c->backend]->readable) {
		c->locate = op->now;
		if (disk && op->fault_path)
			leds.snap->inv.disks[idx].faulted = op->faulted;
	}
}

static void locate_backend(struct op *op);

/* A change is answered only once its row and audit entry are committed together. */
struct store_job {
	struct db_led row;
	struct db_audit audit;
	struct op *op;
	int rc;
	bool full;
};

static void store_work(struct db *db, void *arg)
{
	struct store_job *j = arg;
	j->rc = db_led_put_audited(db, &j->row, &j->audit);
	j->full = j->rc != 0 && db_full(db);
}

static void stores_remove(struct op *op)
{
	for (struct op **p = &leds.stores; *p; p = &(*p)->next_store)
		if (*p == op) {
			*p = op->next_store;
			return;
		}
}

static void store_done(void *arg)
{
	struct store_job *j = arg;
	struct op *op = j->op;
	bool ok = j->rc == 0, full = j->full;
	free(j);
	if (!leds.started) {
		op_free(op); /* answered at shutdown (leds_shutdown) */
		return;
	}
	stores_remove(op);
	if (ok) {
		locate_apply(op, true);
		log_info("leds: %s locate %s -> %s (%s) by %s", op->target, onoff(op->old),
		         onoff(op->on), led_backends[op->backend]->name, op->user);
		op_answer(op);
		return;
	}
	/* Not stored: not done. The hardware goes back to what it showed, and the answer
	 * says why. */
	char what[sizeof(op->target) + 32];
	snprintf(what, sizeof(what), "locate: %s %s", op->target, onoff(op->on));
	fault_store(&op->unstored, full, what);
	audit_log(op->user, op->peer, "hardware.locate", op->target, false,
	          "locate %s -> %s (%s) not recorded: %s%s%s", onoff(op->old), onoff(op->on),
	          led_backends[op->backend]->name,
	          full ? "the state filesystem is full" : "database error",
	          op->named[0] ? "; disk " : "", op->named);
	log_warn("leds: %s", op->unstored.details);
	op->undoing = true;
	if (op->backend == LED_VIRTUAL || op->old < 0 || op->old == (op->on ? 1 : 0)) {
		locate_apply(op, false);
		op_fail(op, op->unstored.kind, "%s", op->unstored.details);
		return;
	}
	op->on = op->old == 1;
	op->now = -1;
	locate_backend(op);
}

/* The change took on the hardware: record it (with its audit entry) before answering. */
static void locate_commit(struct op *op)
{
	if (op->kind == OP_REAPPLY) {
		/* the record says on already; the row is written again for its backend */
		struct db_led *row = xcalloc(1, sizeof(*row));
		led_row(row, op);
		locate_apply(op, true);
		dbw_submit(leds.db, led_put_work, free, row);
		log_info("leds: %s re-applied: locate on (%s)", op->key,
		         led_backends[op->backend]->name);
		op_free(op);
		return;
	}
	if (op->undoing) {
		locate_apply(op, false);
		log_info("leds: %s turned back %s", op->target, onoff(op->on));
		op_fail(op, op->unstored.kind, "%s", op->unstored.details);
		return;
	}
	struct store_job *j = xcalloc(1, sizeof(*j));
	led_row(&j->row, op);
	audit_entry(&j->audit, op->user, op->peer, "hardware.locate", op->target, true,
	            "locate %s -> %s (%s)%s%s", onoff(op->old), onoff(op->on),
	            led_backends[op->backend]->name, op->named[0] ? "; disk " : "", op->named);
	j->op = op;
	op->next_store = leds.stores;
	leds.stores = op;
	dbw_submit(leds.db, store_work, store_done, j);
}

/* A locator that was on and could not be lit again at start is a problem until it is
 * set anew. */
static void led_problem(const struct op *op, const char *why)
{
	char key[LEDS_KEY_MAX + 8], href[2 * SYSFS_ID_MAX + 64];
	snprintf(key, sizeof(key), "led/%s", op->key);
	if (op->disk[0])
		snprintf(href, sizeof(href), "/api/hardware/v1/chassis/%s/disk/%s", op->chassis,
		         op->disk);
	else
		snprintf(href, sizeof(href), "/api/hardware/v1/chassis/%s", op->chassis);
	struct problem_component c = {.chassis = op->chassis, .label = op->key, .href = href};
	static const struct problem_text t = {
	    "SP-LED-REAPPLY", "Defect", "The locator may be dark although it was turned on.",
	    "Check the LED backend; setting the locator again clears this."};
	problems_raise(key, PROBLEM_MINOR, &t, &c,
	               "The locator LED of %s was on and could not be lit again at start (%s): "
	               "%.200s",
	               op->key, led_backends[op->backend]->name, why);
}

/* The change failed: the recorded state stays as it was. */
static void locate_failed(struct op *op, enum fault_kind kind, const char *why)
{
	struct rec *r = rec_find(op->key);
	if (r)
		r->busy = false;
	if (op->undoing) {
		log_warn("leds: %s could not be turned back %s: %s", op->target, onoff(op->on),
		         why);
		op_fail(op, op->unstored.kind, "%.120s; turning it back %s failed: %.100s",
		        op->unstored.details, onoff(op->on), why);
		return;
	}
	if (op->kind == OP_REAPPLY) {
		if (r)
			snprintf(r->fault, sizeof(r->fault), "re-applying at start failed: %s",
			         why);
		led_problem(op, why);
		log_warn("leds: re-applying %s failed: %s", op->key, why);
		op_free(op);
		return;
	}
	audit_log(op->user, op->peer, "hardware.locate", op->target, false,
	          "locate %s -> %s (%s) failed: %s%s%s", onoff(op->old), onoff(op->on),
	          led_backends[op->backend]->name, why, op->named[0] ? "; disk " : "", op->named);
	op_fail(op, kind, "locate: %s", why);
}

static void locate_start(struct op *op, long ci, long di)
{
	struct snap *s = leds.snap;
	struct comp *c = di >= 0 ? &s->disks[di] : &s->chassis[ci];
	snprintf(op->key, sizeof(op->key), "%s", c->key);
	op->backend = c->backend;
	op->path = c->path ? xstrdup(c->path) : NULL;
	op->fault_path = c->fault_path ? xstrdup(c->fault_path) : NULL;
	if (di >= 0) {
		const struct sysfs_disk *d = &s->inv.disks[di];
		snprintf(op->device, sizeof(op->device), "%s", d->device);
		size_t n = 0;
		const char *parts[] = {d->device, strcmp(d->label, d->device) ? d->label : ""};
		for (size_t i = 0; i < nitems(parts); i++)
			if (parts[i][0] && n < sizeof(op->named))
				n += (size_t)snprintf(op->named + n, sizeof(op->named) - n, "%s%s",
				                      n ? " · " : "", parts[i]);
		if (d->serial[0] && n < sizeof(op->named))
			snprintf(op->named + n, sizeof(op->named) - n, "%sserial %s",
			         n ? " · " : "", d->serial);
		if (!op->named[0])
			snprintf(op->named, sizeof(op->named), "an empty slot");
	}
	op->old = comp_locate(c);
	op->now = -1;
	op->faulted = -1;
	op_target(op);

	struct rec *r = rec_get(op->key);
	if (leds.env.stopping) {
		op_fail(op, ERR_BUSY, "locate: the server is shutting down");
		return;
	}
	if (r->busy) {
		op_fail(op, ERR_BUSY, "locate: a change of this LED is already in progress");
		return;
	}
	r->busy = true;
	locate_backend(op);
}

/* The backend's end of a change. A refusal before anything was tried is a plain fault; a
 * failure is audited, and what the LED read back then (op->read) shows in the snapshot. */
static void locate_done(struct op *op, enum fault_kind kind, const char *why)
{
	if (!why) {
		locate_commit(op);
		return;
	}
	if (op->refused) {
		struct rec *r = rec_find(op->key);
		if (r)
			r->busy = false;
		op_fail(op, kind, "locate: %s", why);
		return;
	}
	if (op->read) {
		long idx;
		bool disk;
		struct comp *c = comp_by_key(leds.snap, op->key, &idx, &disk);
		if (c)
			c->locate = op->now;
	}
	locate_failed(op, kind, why);
}

/* Sets op->on on the op's backend; then locate_done. */
static void locate_backend(struct op *op)
{
	op->done = locate_done;
	op->refused = op->read = false;
	led_backends[op->backend]->set(op);
}

/* After the first scan: what was lit where the hardware cannot tell is lit again. */
static void reapply_all(void)
{
	struct snap *s = leds.snap;
	for (size_t k = 0; k < s->inv.nchassis + s->inv.ndisks; k++) {
		bool disk = k >= s->inv.nchassis;
		size_t i = disk ? k - s->inv.nchassis : k;
		struct comp *c = disk ? &s->disks[i] : &s->chassis[i];
		const struct rec *r = rec_find(c->key);
		if (!r || !r->locate || !led_backends[c->backend]->forgets)
			continue;
		struct op *op = xcalloc(1, sizeof(*op));
		op->kind = OP_REAPPLY;
		op->on = true;
		snprintf(op->chassis, sizeof(op->chassis), "%s",
		         s->inv.chassis[disk ? s->inv.disks[i].chassis : i].id);
		if (disk)
			snprintf(op->disk, sizeof(op->disk), "%s", s->inv.disks[i].id);
		log_info("leds: re-applying locate on for %s (%s)", c->key,
		         led_backends[c->backend]->name);
		locate_start(op, disk ? (long)s->inv.disks[i].chassis : (long)i,
		             disk ? (long)i : -1);
	}
}

/* --- ops */

static void op_run(struct op *op, bool fresh)
{
	struct snap *s = leds.snap;
	long ci, di;
	if (!op_find(op, s, &ci, &di))
		return;
	if (op->kind == OP_LOCATE) {
		locate_start(op, ci, di);
		return;
	}
	/* Read back just the LEDs this answer shows. */
	if (!fresh && !leds.env.stopping) {
		switch (op->kind) {
		case OP_CHASSIS_LIST:
			for (size_t i = 0; i < s->inv.nchassis; i++)
				readback_add(op, &s->chassis[i], false, i);
			break;
		case OP_CHASSIS: /* it embeds its disks */
			readback_add(op, &s->chassis[ci], false, (size_t)ci);
			/* fall through */
		case OP_DISK_LIST:
			for (size_t i = 0; i < s->inv.ndisks; i++)
				if (s->inv.disks[i].chassis == (size_t)ci)
					readback_add(op, &s->disks[i], true, i);
			break;
		case OP_DISK:
			readback_add(op, &s->disks[di], true, (size_t)di);
			break;
		default:
			break;
		}
		op->gen = s->gen;
		if (op->nrb && workq_submit(leds.env.wq, readback_work, readback_done, op) == 0)
			return;
		/* Nothing to read, or the helper is swamped: what we know is the answer. */
		readbacks_free(op);
	}
	op_answer(op);
}

static void op_start(struct op *op)
{
	if (!leds.started) {
		op_fail(op, ERR_INTERNAL, "chassis: the hardware service is not running");
		return;
	}
	if (!leds.snap || leds.stale || (!leds.uevents && snap_older(LEDS_TTL_NS))) {
		if (leds.waiters_tail)
			leds.waiters_tail->next = op;
		else
			leds.waiters = op;
		leds.waiters_tail = op;
		scan_start(false, LEDS_SCAN_REQUEST);
		return;
	}
	op_run(op, false);
}

static struct op *op_new(enum op_kind kind, const char *chassis, const char *disk, leds_done cb,
                         void *arg)
{
	struct op *op = xcalloc(1, sizeof(*op));
	op->kind = kind;
	op->cb = cb;
	op->arg = arg;
	snprintf(op->chassis, sizeof(op->chassis), "%s", chassis ? chassis : "");
	snprintf(op->disk, sizeof(op->disk), "%s", disk ? disk : "");
	return op;
}

void leds_chassis_list(leds_done cb, void *arg)
{
	op_start(op_new(OP_CHASSIS_LIST, NULL, NULL, cb, arg));
}

void leds_chassis_get(const char *chassis, leds_done cb, void *arg)
{
	op_start(op_new(OP_CHASSIS, chassis, NULL, cb, arg));
}

void leds_disk_list(const char *chassis, leds_done cb, void *arg)
{
	op_start(op_new(OP_DISK_LIST, chassis, NULL, cb, arg));
}

void leds_disk_get(const char *chassis, const char *disk, leds_done cb, void *arg)
{
	op_start(op_new(OP_DISK, chassis, disk, cb, arg));
}

void leds_locate(const char *chassis, const char *disk, bool on, const char *user, const char *peer,
                 leds_done cb, void *arg)
{
	struct op *op = op_new(OP_LOCATE, chassis, disk, cb, arg);
	op->on = on;
	snprintf(op->user, sizeof(op->user), "%s", user ? user : "");
	snprintf(op->peer, sizeof(op->peer), "%s", peer ? peer : "");
	op_start(op);
}

/* From what is known, never a read of its own: an enclosure is asked nothing for a count
 * the dashboard or /metrics shows. Changes made here count at once; others (a button,
 * another tool) once a read of the hardware, or the watch (--hardware-watch), sees them. */
unsigned leds_lit_count(void)
{
	if (!leds.started || !leds.snap)
		return 0;
	unsigned n = 0;
	for (size_t i = 0; i < leds.snap->inv.nchassis; i++)
		n += comp_locate(&leds.snap->chassis[i]) == 1;
	for (size_t i = 0; i < leds.snap->inv.ndisks; i++)
		n += comp_locate(&leds.snap->disks[i]) == 1;
	return n;
}

/* A lit LED keeps its time; one found lit that was not turned on here (its button,
 * another tool) counts from now; one found off has none. */
static void lit_each(const struct comp *c, size_t n, leds_lit_fn fn, void *arg)
{
	for (size_t i = 0; i < n; i++) {
		if (comp_locate(&c[i]) != 1) {
			struct rec *r = rec_find(c[i].key);
			if (r)
				r->lit_since = 0;
			continue;
		}
		struct rec *r = rec_get(c[i].key);
		if (!r->lit_since)
			r->lit_since = util_now();
		fn(arg, c[i].key, r->lit_since);
	}
}

void leds_lit_each(leds_lit_fn fn, void *arg)
{
	if (!leds.started || !leds.snap)
		return;
	lit_each(leds.snap->chassis, leds.snap->inv.nchassis, fn, arg);
	lit_each(leds.snap->disks, leds.snap->inv.ndisks, fn, arg);
}

/* --- start and stop */

/* The watch: a disk its enclosure marks faulted is a problem with nobody looking at the
 * hardware. Each SES slot's status and fault are read (two commands to its enclosure), not
 * its locate, nor the rest of the inventory: the kernel's uevents say when that changes.
 * Without uevents it rescans everything, LEDs and all. */
static void watch_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (!leds.uevents) {
		scan_start(true, LEDS_SCAN_WATCH);
		return;
	}
	struct snap *s = leds.snap;
	if (!s || leds.watching || leds.env.stopping)
		return;
	struct loopwork w; /* a readback per slot made on the loop: timed as its work */
	loopwork_begin(&w);
	struct op *op = xcalloc(1, sizeof(*op));
	op->kind = OP_WATCH;
	op->gen = s->gen;
	for (size_t i = 0; i < s->inv.ndisks; i++) {
		if (!s->disks[i].fault_path || !s->inv.disks[i].slot_dir)
			continue;
		size_t at = op->nrb;
		readback_add(op, &s->disks[i], true, i);
		if (op->nrb > at)
			op->rb[at].slot_dir = xstrdup(s->inv.disks[i].slot_dir);
	}
	if (!op->nrb || workq_submit(leds.env.wq, readback_work, readback_done, op) < 0) {
		readbacks_free(op);
		op_free(op);
		loopwork_end(&w);
		return;
	}
	leds.watching = true;
	leds.scans[LEDS_SCAN_WATCH]++;
	loopwork_end(&w);
}

int leds_init(struct event_base *base, struct db *db, const struct leds_config *cfg)
{
	memset(&leds, 0, sizeof(leds));
	leds.env.base = base;
	leds.db = db;
	leds.root = xstrdup(cfg->sys_root && *cfg->sys_root ? cfg->sys_root : "/");
	size_t n = strlen(leds.root);
	while (n > 0 && leds.root[n - 1] == '/')
		leds.root[--n] = '\0'; /* "/" becomes "", so paths read "<root>/sys/..." */
	leds.system_led = cfg->system_led && *cfg->system_led ? xstrdup(cfg->system_led) : NULL;
	leds.sys_choice = choice_parse(cfg->system_backend);
	leds.disk_choice = choice_parse(cfg->disk_backend);
	leds.env.timeout_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 10000;
	leds.ledctl_socket =
	    cfg->ledctl_socket && *cfg->ledctl_socket ? xstrdup(cfg->ledctl_socket) : NULL;
	leds.env.ledctl_socket = leds.ledctl_socket;
	/* One thread of its own: a slow enclosure must not hold up password hashing. */
	leds.env.wq = workq_new(base, 1);
	if (!leds.env.wq)
		return -1;
	led_sysfs_start(&leds.env);
	led_command_start(&leds.env);
	led_records_load(db);
	leds.started = true;
	scan_start(true, LEDS_SCAN_START);
	leds.settle = event_new(base, -1, 0, settle_tick, NULL);
	if (!leds.settle)
		return -1;
	if (uevent_start(base, on_uevent, NULL) == 0) {
		leds.uevents = true;
		log_info(
		    "hardware: the kernel's uevents say when disks and enclosures come and go");
	} else {
		log_warn("hardware: no kernel uevents (%s): a read of the hardware rescans it when "
		         "it is a second old",
		         strerror(errno));
	}
	if (cfg->watch_s > 0) {
		struct timeval tv = {cfg->watch_s, 0};
		leds.watch = event_new(base, -1, EV_PERSIST, watch_tick, NULL);
		if (!leds.watch || event_add(leds.watch, &tv) < 0)
			return -1;
	}
	return 0;
}

void leds_shutdown(void)
{
	if (!leds.started)
		return;
	leds.env.stopping = true;
	if (leds.watch)
		event_free(leds.watch);
	leds.watch = NULL;
	uevent_stop();
	leds.uevents = false;
	if (leds.settle)
		event_free(leds.settle);
	leds.settle = NULL;
	led_command_stop();
	/* Its done callbacks answer whoever waits on a scan, a read or a write. */
	workq_free(leds.env.wq);
	leds.env.wq = NULL;
	/* Changes whose row the writer still holds are answered now, while their requests
	 * live; the writer's done callback then only frees them. */
	for (struct op *op = leds.stores; op; op = op->next_store) {
		struct fault f = {.kind = ERR_BUSY, .retry_after = 1};
		snprintf(f.details, sizeof(f.details),
		         "locate: the server is stopping; the change may not have been stored");
		if (op->cb)
			op->cb(op->arg, NULL, &f);
		op->cb = NULL;
	}
	leds.stores = NULL;
	struct fault f = {.kind = ERR_BUSY, .retry_after = 1};
	snprintf(f.details, sizeof(f.details), "chassis: the server is shutting down");
	waiters_fail(&f);
	snap_free(leds.snap);
	leds.snap = NULL;
	led_records_clear();
	free(leds.root);
	free(leds.system_led);
	free(leds.ledctl_socket);
	leds.root = leds.system_led = leds.ledctl_socket = NULL;
	leds.started = false;
}
