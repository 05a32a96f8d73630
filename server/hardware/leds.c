/* SPDX-License-Identifier: ISC */
/* Locator LEDs over the hardware inventory. The loop owns a snapshot of the inventory and
 * the recorded LED states; a helper thread of its own scans sysfs, reads LEDs back and
 * writes them; ledctl and ipmitool run as child processes (ledctl through the root
 * helper's socket, spindle-ledctl.socket, when spindled runs unprivileged and it is
 * there: server/hardware/ledhelper.c). Every request is an op that
 * waits for a fresh enough snapshot, reads back the LEDs its answer shows, and answers. */
#define _GNU_SOURCE
#include "leds.h"
#include "access/audit.h"
#include "db/dbw.h"
#include "base/child.h"
#include "base/log.h"
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

#define LEDS_TTL_NS        1000000000ull  /* a request finds an older inventory stale */
#define LEDS_COUNT_TTL_NS  10000000000ull /* leds_lit_count rereads every LED this often */
#define LEDS_KILL_GRACE_MS 1000
#define LEDS_KEY_MAX       (SYSFS_ID_MAX + 16)

enum led_backend { LED_VIRTUAL, LED_SES, LED_LEDS, LED_LEDCTL, LED_IPMI };
static const char *const backend_names[] = {"virtual", "ses", "leds", "ledctl", "ipmi"};

/* What the config asks for: auto, or one backend. */
enum led_choice { CHOOSE_AUTO = -1 };

/* One LED in a snapshot. */
struct comp {
	char key[LEDS_KEY_MAX]; /* "chassis/<id>" or "disk/<id>" */
	enum led_backend backend;
	char *path;       /* ses: the slot's locate file; leds: brightness; else NULL */
	char *fault_path; /* ses: the slot's fault file */
	int locate;       /* ses, leds: as last read back (1, 0, -1 unreadable) */
};

struct snap {
	struct sysfs_inventory inv;
	struct comp *chassis; /* parallel to inv.chassis */
	struct comp *disks;   /* parallel to inv.disks */
	uint64_t taken_ns;
	unsigned gen;
};

/* What was last set on a component, as led_state holds it. */
struct rec {
	char key[LEDS_KEY_MAX];
	bool locate;
	int64_t lit_since; /* Unix time the LED was turned on (or first seen lit), 0: off */
	bool busy;         /* a change is in flight */
	char fault[200];   /* why re-applying it at start failed, or "" */
};

enum op_kind { OP_CHASSIS_LIST, OP_CHASSIS, OP_DISK_LIST, OP_DISK, OP_LOCATE, OP_REAPPLY };

struct readback {
	bool disk;
	size_t idx;
	char key[LEDS_KEY_MAX];
	char *path, *fault_path; /* copies: the snapshot may go while the helper reads */
	int locate, faulted;
};

struct op {
	enum op_kind kind;
	char chassis[SYSFS_ID_MAX + 1], disk[SYSFS_ID_MAX + 1];
	bool on;
	char user[65], peer[64];
	leds_done cb;
	void *arg;
	struct op *next; /* waiting for a scan */
	/* reading back */
	struct readback *rb;
	size_t nrb, rb_cap;
	unsigned gen;
	/* a change */
	char key[LEDS_KEY_MAX];
	char target[2 * SYSFS_ID_MAX + 16]; /* "chassis/<c>/disk/<d>" for the audit */
	enum led_backend backend;
	char *path, *fault_path;
	char device[32];
	char command[96]; /* as run, for messages */
	int old, now, faulted, err;
	int64_t at; /* the row's time, and so the lit LED's lit_since: one clock read */
	/* the change could not be stored: it is being undone, then this is the answer */
	bool undoing;
	struct fault unstored;
	struct op *next_store; /* in leds.stores while its row is with the writer */
};

struct scan_job {
	struct snap *snap;
	bool full; /* every LED read too, not just what is there */
};

static struct {
	struct event_base *base;
	struct db *db;
	struct workq *wq;
	char *root;
	char *system_led;
	char *ledctl_socket;    /* the root helper's socket, used when it exists */
	struct sock_req *socks; /* ledctl requests waiting on the helper's answer */
	int sys_choice, disk_choice;
	int timeout_ms;
	struct snap *snap;
	unsigned gen;
	bool scanning;
	uint64_t leds_read_ns; /* when every LED was last read */
	struct op *waiters, *waiters_tail;
	struct rec *recs;
	size_t nrecs, caprecs;
	struct op *stores; /* changes whose row and audit entry are with the writer */
	bool started, stopping;
} leds;

/* One ledctl request through the helper's socket: its answer is read on the loop. */
struct sock_req {
	struct op *op;
	int fd;
	struct event *ev;
	char buf[512];
	size_t len;
	struct sock_req *next;
};

static void op_run(struct op *op, bool fresh);
static void op_free(struct op *op);
static void faults_to_problems(void);

/* --- small helpers */

static int choice_parse(const char *s)
{
	if (!s || strcmp(s, "auto") == 0)
		return CHOOSE_AUTO;
	for (size_t i = 0; i < nitems(backend_names); i++)
		if (strcmp(s, backend_names[i]) == 0)
			return (int)i;
	return CHOOSE_AUTO;
}

static bool file_exists(const char *path)
{
	return path && access(path, F_OK) == 0;
}

/* Whether a program is on the daemon's PATH, as child_spawn will look for it. */
static bool on_path(const char *name)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char full[PATH_MAX];
		struct stat st;
		snprintf(full, sizeof(full), "%.*s/%s", (int)n, n ? p : ".", name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			return true;
		if (!colon)
			return false;
		p = colon + 1;
	}
}

/* Whether ledctl goes through the root helper: its socket is there. */
static bool ledctl_via_socket(void)
{
	return leds.ledctl_socket && access(leds.ledctl_socket, F_OK) == 0;
}

static struct rec *rec_find(const char *key)
{
	for (size_t i = 0; i < leds.nrecs; i++)
		if (strcmp(leds.recs[i].key, key) == 0)
			return &leds.recs[i];
	return NULL;
}

static struct rec *rec_get(const char *key)
{
	struct rec *r = rec_find(key);
	if (r)
		return r;
	leds.recs = util_grow(leds.recs, &leds.caprecs, leds.nrecs, sizeof(*leds.recs));
	r = &leds.recs[leds.nrecs++];
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	return r;
}

static bool readable(enum led_backend b)
{
	return b == LED_SES || b == LED_LEDS;
}

/* What a component's LED shows: read back where the hardware tells, else as recorded. */
static int comp_locate(const struct comp *c)
{
	if (readable(c->backend))
		return c->locate;
	const struct rec *r = rec_find(c->key);
	return r && r->locate ? 1 : 0;
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

static struct comp *comp_by_key(struct snap *s, const char *key, long *idx, bool *disk)
{
	for (size_t i = 0; s && i < s->inv.nchassis; i++)
		if (strcmp(s->chassis[i].key, key) == 0) {
			*idx = (long)i;
			*disk = false;
			return &s->chassis[i];
		}
	for (size_t i = 0; s && i < s->inv.ndisks; i++)
		if (strcmp(s->disks[i].key, key) == 0) {
			*idx = (long)i;
			*disk = true;
			return &s->disks[i];
		}
	return NULL;
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
		else if (s->inv.have_ipmi && on_path("ipmitool"))
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
				*have_ledctl = ledctl_via_socket() || on_path("ledctl");
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

static void scan_done(void *arg)
{
	struct scan_job *j = arg;
	bool first = !leds.snap, full = j->full;
	leds.scanning = false;
	if (j->snap) {
		if (full)
			leds.leds_read_ns = j->snap->taken_ns;
		else
			carry_leds(j->snap, leds.snap);
		snap_free(leds.snap);
		leds.snap = j->snap;
		leds.snap->gen = ++leds.gen;
	} else {
		log_warn("leds: the hardware inventory under %s cannot be read", leds.root);
	}
	free(j);
	faults_to_problems();
	if (!leds.snap) {
		struct fault f = {.kind = ERR_INTERNAL};
		snprintf(f.details, sizeof(f.details), "chassis: the inventory cannot be read");
		waiters_fail(&f);
		return;
	}
	if (first) {
		log_info("leds: %zu chassis, %zu disks and slots; system locator via %s",
		         leds.snap->inv.nchassis, leds.snap->inv.ndisks,
		         backend_names[leds.snap->chassis[0].backend]);
		if (leds.system_led && leds.snap->chassis[0].backend != LED_LEDS)
			log_warn("leds: no LED %s under %s/sys/class/leds", leds.system_led,
			         leds.root);
		reapply_all();
	}
	/* After a scan that read every LED, the waiters need no read of their own. */
	waiters_run(full);
}

static bool snap_older(uint64_t ns)
{
	return !leds.snap || util_mono_ns() - leds.snap->taken_ns > ns;
}

/* full: read every LED as well (the first scan, and the lit count's refresh). */
static void scan_start(bool full)
{
	if (leds.scanning)
		return;
	if (leds.stopping) {
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
	if (workq_submit(leds.wq, scan_work, scan_done, j) < 0) {
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
}

/* --- answering */

static json_t *str_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

/* The guide's string keys are strings: "" where the box cannot tell (null breaks clients
 * that call string methods on them). */
static json_t *str_or_empty(const char *s)
{
	return json_string(s ? s : "");
}

static json_t *tri(int v)
{
	return v < 0 ? json_null() : json_boolean(v);
}

static void add_led(json_t *o, const struct comp *c)
{
	json_object_set_new(o, "locate", tri(comp_locate(c)));
	json_object_set_new(o, "led_backend", json_string(backend_names[c->backend]));
	const struct rec *r = rec_find(c->key);
	if (r && r->fault[0])
		json_object_set_new(o, "led_fault", json_string(r->fault));
}

/* A name-based (RFC 4122 version 5) uuid: the same id gives the same uuid after every
 * restart, as the ids themselves stay. */
static void derived_uuid(const char *kind, const char *id, char out[37])
{
	/* The namespace: a fixed random uuid of Spindle's own. */
	static const unsigned char ns[16] = {0x5b, 0x1d, 0x3c, 0x7e, 0x0a, 0x94, 0x4f, 0x2e,
	                                     0x9c, 0x61, 0x27, 0xd8, 0x43, 0xb0, 0x85, 0x16};
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char name[2 * SYSFS_ID_MAX + 32], hex[33];
	int n = snprintf(name, sizeof(name), "%s/%s", kind, id);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, ns, sizeof(ns)) != 1 ||
	    EVP_DigestUpdate(ctx, name, (size_t)(n < 0 ? 0 : n)) != 1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen < 16)
		memset(md, 0, 16);
	EVP_MD_CTX_free(ctx);
	md[6] = (unsigned char)((md[6] & 0x0f) | 0x50); /* version 5 */
	md[8] = (unsigned char)((md[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	util_hex(md, 16, hex);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/* The appliance's manufacturer: the SCSI vendor, else (ATA, NVMe) the first word of a
 * model that has one, as "Samsung SSD 860" names its maker. */
static json_t *manufacturer(const char *vendor, const char *model)
{
	if (vendor[0])
		return json_string(vendor);
	const char *sp = strchr(model, ' ');
	if (!sp || sp == model)
		return json_string("");
	return json_stringn(model, (size_t)(sp - model));
}

/* rpm where the disk says it (VPD page B1); null for solid state and unknown. */
static json_t *rpm_json(int rpm)
{
	return rpm > 1 ? json_integer(rpm) : json_null();
}

static bool disk_faulted(const struct sysfs_disk *d)
{
	return d->present && d->faulted == 1;
}

/* The appliance's FMRI of a chassis, hc://:chassis-mfg=...:chassis-serial=... */
static json_t *chassis_fru(const struct sysfs_chassis *ch)
{
	return json_sprintf(
	    "hc://:chassis-mfg=%s:chassis-name=%s:chassis-part=%s:chassis-serial=%s",
	    ch->vendor[0] ? ch->vendor : "unknown", ch->model[0] ? ch->model : "unknown",
	    ch->part[0] ? ch->part : "unknown", ch->serial[0] ? ch->serial : "unknown");
}

static json_t *chassis_json(const struct snap *s, size_t i)
{
	const struct sysfs_chassis *ch = &s->inv.chassis[i];
	json_t *o = json_object();
	bool faulted = false;
	int rpm = -1; /* the rpm its disks share: -1 none seen yet, 0 they differ */
	for (size_t k = 0; k < s->inv.ndisks; k++) {
		const struct sysfs_disk *d = &s->inv.disks[k];
		if (d->chassis != i || !d->present)
			continue;
		faulted |= disk_faulted(d);
		int r = d->rpm > 1 ? d->rpm : 0;
		rpm = rpm < 0 ? r : rpm == r ? rpm : 0;
	}
	char uuid[37];
	if (ch->uuid[0])
		snprintf(uuid, sizeof(uuid), "%s", ch->uuid);
	else
		derived_uuid("chassis", ch->id, uuid);
	json_object_set_new(o, "id", json_string(ch->id));
	/* The appliance names the system chassis by its host and a disk shelf by its serial;
	 * Spindle's descriptive name is display_name. */
	json_object_set_new(o, "name",
	                    json_string(!ch->enclosure && ch->hostname[0] ? ch->hostname
	                                : ch->enclosure && ch->serial[0]  ? ch->serial
	                                : ch->enclosure                   ? ch->id
	                                                                  : ch->name));
	json_object_set_new(o, "display_name", json_string(ch->name));
	/* The appliance's types: "system", and "storage" for a disk shelf. */
	json_object_set_new(o, "type", json_string(ch->enclosure ? "storage" : "system"));
	json_object_set_new(o, "kind", json_string(ch->enclosure ? "enclosure" : "system"));
	json_object_set_new(o, "vendor", str_or_null(ch->vendor));
	json_object_set_new(o, "manufacturer", str_or_empty(ch->vendor));
	json_object_set_new(o, "model", str_or_empty(ch->model));
	json_object_set_new(o, "serial", str_or_empty(ch->serial));
	json_object_set_new(o, "revision", str_or_empty(ch->revision));
	json_object_set_new(o, "part", str_or_empty(ch->part));
	json_object_set_new(o, "faulted", json_boolean(faulted));
	json_object_set_new(o, "rpm", rpm_json(rpm));
	json_object_set_new(o, "path", json_integer(ch->paths > 0 ? ch->paths : 1));
	json_object_set_new(o, "uuid", json_string(uuid));
	json_object_set_new(o, "fru", chassis_fru(ch));
	if (!ch->enclosure)
		json_object_set_new(o, "hostname", str_or_null(ch->hostname));
	add_led(o, &s->chassis[i]);
	json_object_set_new(o, "disk_count", json_integer(ch->ndisks));
	if (ch->enclosure)
		json_object_set_new(o, "slot_count", json_integer(ch->nslots));
	return o;
}

/* The appliance labels disk bays "HDD 0", "HDD 1", ...: by slot number in an enclosure,
 * by place in the list in the system chassis. */
static long disk_label(const struct snap *s, size_t i, char *out, size_t len)
{
	const struct sysfs_disk *d = &s->inv.disks[i];
	if (d->slot_number >= 0) {
		snprintf(out, len, "HDD %d", d->slot_number);
		return d->slot_number;
	}
	long n = 0;
	for (size_t k = 0; k < i; k++)
		n += s->inv.disks[k].chassis == d->chassis;
	snprintf(out, len, "HDD %ld", n);
	return n;
}

static json_t *disk_json(const struct snap *s, size_t i)
{
	const struct sysfs_disk *d = &s->inv.disks[i];
	const struct sysfs_chassis *ch = &s->inv.chassis[d->chassis];
	char label[32], uuid[37];
	long bay = disk_label(s, i, label, sizeof(label));
	derived_uuid("disk", d->id, uuid);
	json_t *o = json_object();
	json_object_set_new(o, "id", json_string(d->id));
	json_object_set_new(o, "chassis", json_string(ch->id));
	json_object_set_new(o, "device", str_or_null(d->device));
	json_object_set_new(o, "label", json_string(label));
	json_object_set_new(o, "location", str_or_null(d->label));
	json_object_set_new(o, "vendor", str_or_null(d->vendor));
	json_object_set_new(o, "manufacturer",
	                    d->present ? manufacturer(d->vendor, d->model) : json_string(""));
	json_object_set_new(o, "model", str_or_empty(d->model));
	json_object_set_new(o, "serial", str_or_empty(d->serial));
	json_object_set_new(o, "revision", str_or_empty(d->revision));
	json_object_set_new(o, "part", json_string(""));
	json_object_set_new(o, "wwid", str_or_null(d->wwid));
	json_object_set_new(o, "size",
	                    d->device[0] ? json_integer((json_int_t)d->size) : json_null());
	json_object_set_new(o, "rotational", tri(d->rotational));
	json_object_set_new(o, "rpm", rpm_json(d->rpm));
	json_object_set_new(o, "interface", str_or_null(d->interface));
	json_object_set_new(o, "present", json_boolean(d->present));
	json_object_set_new(o, "faulted", json_boolean(disk_faulted(d)));
	json_object_set_new(o, "fault_status",
	                    json_string(d->faulted < 0 ? "unknown"
	                                : d->faulted   ? "faulted"
	                                               : "ok"));
	json_object_set_new(o, "pathcount", json_integer(d->device[0] ? d->paths : 0));
	json_object_set_new(
	    o, "fru",
	    json_sprintf("hc://:chassis-serial=%s:fru-serial=%s:fru-part=%s/bay=%ld",
	                 ch->serial[0] ? ch->serial : ch->id, d->serial[0] ? d->serial : "unknown",
	                 d->model[0] ? d->model : "unknown", bay));
	json_object_set_new(o, "uuid", json_string(uuid));
	json_object_set_new(o, "enclosure", ch->enclosure ? json_string(ch->id) : json_null());
	json_object_set_new(o, "slot", str_or_null(d->slot));
	add_led(o, &s->disks[i]);
	return o;
}

/* An open problem for every present disk its enclosure marks faulted; cleared when the
 * mark goes (or the disk does). */
static void faults_to_problems(void)
{
	struct snap *s = leds.snap;
	if (!s)
		return;
	const char **keep = xcalloc(s->inv.ndisks + 1, sizeof(*keep));
	char(*keys)[LEDS_KEY_MAX + 8] = xcalloc(s->inv.ndisks + 1, sizeof(*keys));
	size_t n = 0;
	for (size_t i = 0; i < s->inv.ndisks; i++) {
		const struct sysfs_disk *d = &s->inv.disks[i];
		if (!disk_faulted(d))
			continue;
		const struct sysfs_chassis *ch = &s->inv.chassis[d->chassis];
		char label[32], href[2 * SYSFS_ID_MAX + 64];
		disk_label(s, i, label, sizeof(label));
		snprintf(keys[n], sizeof(keys[n]), "disk/%s", d->id);
		snprintf(href, sizeof(href), "/api/hardware/v1/chassis/%s/disk/%s", ch->id, d->id);
		struct problem_component c = {.chassis = ch->id, .label = label, .href = href};
		static const struct problem_text t = {
		    "SP-DISK-FAULT", "Fault", "The disk may fail or already return errors.",
		    "Replace the disk; its locator LED can be lit to find it."};
		problems_raise(keys[n], PROBLEM_MAJOR, &t, &c,
		               "The enclosure %s marks the disk in %s (%s%s%s) as faulted", ch->id,
		               d->slot[0] ? d->slot : label, d->device[0] ? d->device : "no device",
		               d->serial[0] ? ", serial " : "", d->serial);
		keep[n] = keys[n];
		n++;
	}
	problems_clear_others("disk/", keep, n);
	free(keys);
	free(keep);
}

static void op_free(struct op *op)
{
	free(op->rb);
	free(op->path);
	free(op->fault_path);
	free(op);
}

static void op_fail(struct op *op, enum fault_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void op_fail(struct op *op, enum fault_kind kind, const char *fmt, ...)
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
	if (op->kind != OP_CHASSIS_LIST) {
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
		break;
	}
	if (op->cb)
		op->cb(op->arg, out, NULL);
	else
		json_decref(out);
	op_free(op);
}

/* --- reading back (helper thread) */

static void readback_work(void *arg)
{
	struct op *op = arg;
	for (size_t i = 0; i < op->nrb; i++) {
		struct readback *rb = &op->rb[i];
		rb->locate = sysfs_read_flag(rb->path);
		rb->faulted = rb->fault_path ? sysfs_read_flag(rb->fault_path) : -1;
	}
}

static void readback_done(void *arg)
{
	struct op *op = arg;
	struct snap *s = leds.snap;
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
		c->locate = rb->locate;
		if (disk && rb->fault_path)
			s->inv.disks[idx].faulted = rb->faulted;
	}
	for (size_t i = 0; i < op->nrb; i++) {
		free(op->rb[i].path);
		free(op->rb[i].fault_path);
	}
	op->nrb = 0;
	faults_to_problems();
	op_answer(op);
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

static const char *onoff(int v)
{
	return v < 0 ? "unknown" : v ? "on" : "off";
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
	snprintf(row->backend, sizeof(row->backend), "%s", backend_names[op->backend]);
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
	if (c && c->path && readable(c->backend)) {
		c->locate = op->now;
		if (disk && op->fault_path)
			leds.snap->inv.disks[idx].faulted = op->faulted;
	}
}

static void locate_failed(struct op *op, enum fault_kind kind, const char *why);
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
		         onoff(op->on), backend_names[op->backend], op->user);
		op_answer(op);
		return;
	}
	/* Not stored: not done. The hardware goes back to what it showed, and the answer
	 * says why. */
	char what[sizeof(op->target) + 32];
	snprintf(what, sizeof(what), "locate: %s %s", op->target, onoff(op->on));
	fault_store(&op->unstored, full, what);
	audit_log(op->user, op->peer, "hardware.locate", op->target, false,
	          "locate %s -> %s (%s) not recorded: %s", onoff(op->old), onoff(op->on),
	          backend_names[op->backend],
	          full ? "the state filesystem is full" : "database error");
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
		         backend_names[op->backend]);
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
	            "locate %s -> %s (%s)", onoff(op->old), onoff(op->on),
	            backend_names[op->backend]);
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
	               op->key, backend_names[op->backend], why);
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
	          "locate %s -> %s (%s) failed: %s", onoff(op->old), onoff(op->on),
	          backend_names[op->backend], why);
	op_fail(op, kind, "locate: %s", why);
}

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
	op->faulted = op->fault_path ? sysfs_read_flag(op->fault_path) : -1;
}

static void write_done(void *arg)
{
	struct op *op = arg;
	char why[PATH_MAX + 64];
	if (op->err) {
		snprintf(why, sizeof(why), "cannot write %s: %s", op->path, strerror(op->err));
		locate_failed(op, ERR_BACKEND, why);
		return;
	}
	if (op->now != (op->on ? 1 : 0)) {
		long idx;
		bool disk;
		struct comp *c = comp_by_key(leds.snap, op->key, &idx, &disk);
		if (c)
			c->locate = op->now;
		snprintf(why, sizeof(why), "%s reads %s after writing %s", op->path, onoff(op->now),
		         onoff(op->on));
		locate_failed(op, ERR_BACKEND, why);
		return;
	}
	locate_commit(op);
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
	if (leds.stopping) {
		struct rec *r = rec_find(op->key);
		if (r)
			r->busy = false;
		op_fail(op, ERR_BUSY, "locate: the server is shutting down");
		return;
	}
	if (res->exited && res->exit_code == 0) {
		op->now = op->on;
		locate_commit(op);
		return;
	}
	first_line(res->err_len ? res->err : res->out ? res->out : "", msg, sizeof(msg));
	if (res->timed_out) {
		snprintf(why, sizeof(why), "%s gave no answer within %d s and was killed",
		         op->command, leds.timeout_ms / 1000);
		locate_failed(op, ERR_TIMEOUT, why);
		return;
	}
	if (res->exited)
		snprintf(why, sizeof(why), "%s failed with exit status %d%s%s", op->command,
		         res->exit_code, msg[0] ? ": " : "", msg);
	else
		snprintf(why, sizeof(why), "%s was killed by signal %d%s%s", op->command,
		         res->signal, msg[0] ? ": " : "", msg);
	locate_failed(op, ERR_BACKEND, why);
}

static void sock_req_free(struct sock_req *q)
{
	for (struct sock_req **pp = &leds.socks; *pp; pp = &(*pp)->next)
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
		         leds.timeout_ms / 1000);
		sock_req_free(q);
		locate_failed(op, ERR_TIMEOUT, why);
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
		locate_commit(op);
		return;
	}
	if (err)
		snprintf(why, sizeof(why), "%s: %s", op->command, strerror(err));
	else if (strncmp(line, "error ", 6) == 0)
		snprintf(why, sizeof(why), "%s", line + 6);
	else
		snprintf(why, sizeof(why), "%s gave no answer%s%s", op->command,
		         line[0] ? ": " : "", line);
	locate_failed(op, ERR_BACKEND, why);
}

/* ledctl through the root helper (spindle-ledctl.socket): one request line, the write
 * side shut so that the helper knows it is whole, the answer read on the loop. A local
 * stream socket takes a line this short at once. */
static void sock_start(struct op *op, const char *arg)
{
	char why[PATH_MAX + 128];
	snprintf(op->command, sizeof(op->command), "ledctl %s (via the helper)", arg);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(leds.ledctl_socket) >= sizeof(sa.sun_path)) {
		snprintf(why, sizeof(why), "%s: the socket path is too long", op->command);
		locate_failed(op, ERR_BACKEND, why);
		return;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", leds.ledctl_socket);
	/* Non-blocking from the start: a full backlog is an error, never a wait on the loop. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	char req[96];
	int len = snprintf(req, sizeof(req), "%s /dev/%s\n", op->on ? "locate" : "locate_off",
	                   op->device);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, req, (size_t)len) != len || shutdown(fd, SHUT_WR) < 0) {
		snprintf(why, sizeof(why), "%s: cannot reach %s: %s", op->command,
		         leds.ledctl_socket, strerror(errno));
		if (fd >= 0)
			close(fd);
		locate_failed(op, ERR_BACKEND, why);
		return;
	}
	struct sock_req *q = xcalloc(1, sizeof(*q));
	q->op = op;
	q->fd = fd;
	q->ev = event_new(leds.base, fd, EV_READ | EV_PERSIST, sock_read, q);
	q->next = leds.socks;
	leds.socks = q;
	struct timeval tv = {leds.timeout_ms / 1000, (leds.timeout_ms % 1000) * 1000};
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
	    .timeout_ms = leds.timeout_ms,
	    .kill_grace_ms = LEDS_KILL_GRACE_MS,
	    .max_output = 4096,
	    .on_exit = command_exit,
	    .arg = op,
	};
	char err[256];
	if (!child_spawn(&o, err, sizeof(err))) {
		char why[320];
		snprintf(why, sizeof(why), "cannot run %s: %.200s", op->command, err);
		locate_failed(op, ERR_BACKEND, why);
	}
}

static void locate_start(struct op *op, long ci, long di)
{
	struct snap *s = leds.snap;
	struct comp *c = di >= 0 ? &s->disks[di] : &s->chassis[ci];
	snprintf(op->key, sizeof(op->key), "%s", c->key);
	op->backend = c->backend;
	op->path = c->path ? xstrdup(c->path) : NULL;
	op->fault_path = c->fault_path ? xstrdup(c->fault_path) : NULL;
	if (di >= 0)
		snprintf(op->device, sizeof(op->device), "%s", s->inv.disks[di].device);
	op->old = comp_locate(c);
	op->now = -1;
	op->faulted = -1;
	op_target(op);

	struct rec *r = rec_get(op->key);
	if (leds.stopping) {
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

/* Sets op->on on the op's backend; then locate_commit or locate_failed. */
static void locate_backend(struct op *op)
{
	switch (op->backend) {
	case LED_VIRTUAL:
		op->now = op->on;
		locate_commit(op);
		break;
	case LED_SES:
	case LED_LEDS:
		if (workq_submit(leds.wq, write_work, write_done, op) == 0)
			break;
		if (op->undoing) {
			locate_failed(op, ERR_BUSY, "too many hardware requests at once");
		} else {
			rec_get(op->key)->busy = false;
			op_fail(op, ERR_BUSY, "locate: too many hardware requests at once");
		}
		break;
	case LED_LEDCTL:
	case LED_IPMI:
		command_start(op);
		break;
	}
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
		if (!r || !r->locate || (c->backend != LED_LEDCTL && c->backend != LED_IPMI))
			continue;
		struct op *op = xcalloc(1, sizeof(*op));
		op->kind = OP_REAPPLY;
		op->on = true;
		snprintf(op->chassis, sizeof(op->chassis), "%s",
		         s->inv.chassis[disk ? s->inv.disks[i].chassis : i].id);
		if (disk)
			snprintf(op->disk, sizeof(op->disk), "%s", s->inv.disks[i].id);
		log_info("leds: re-applying locate on for %s (%s)", c->key,
		         backend_names[c->backend]);
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
	if (!fresh && !leds.stopping) {
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
		if (op->nrb && workq_submit(leds.wq, readback_work, readback_done, op) == 0)
			return;
		/* Nothing to read, or the helper is swamped: what we know is the answer. */
		for (size_t i = 0; i < op->nrb; i++) {
			free(op->rb[i].path);
			free(op->rb[i].fault_path);
		}
		op->nrb = 0;
	}
	op_answer(op);
}

static void op_start(struct op *op)
{
	if (!leds.started) {
		op_fail(op, ERR_INTERNAL, "chassis: the hardware service is not running");
		return;
	}
	if (snap_older(LEDS_TTL_NS)) {
		if (leds.waiters_tail)
			leds.waiters_tail->next = op;
		else
			leds.waiters = op;
		leds.waiters_tail = op;
		scan_start(false);
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

unsigned leds_lit_count(void)
{
	if (!leds.started || !leds.snap)
		return 0;
	/* Changes made here count at once; others (a button, another tool) at the next read. */
	if (!leds.stopping && util_mono_ns() - leds.leds_read_ns > LEDS_COUNT_TTL_NS)
		scan_start(true);
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

static int rec_load(void *arg, const struct db_led *l)
{
	struct rec *r = rec_get(l->component);
	r->locate = l->locate;
	r->lit_since = l->locate ? l->mtime : 0; /* the row's time: when it was turned on */
	return 0;
}

int leds_init(struct event_base *base, struct db *db, const struct leds_config *cfg)
{
	memset(&leds, 0, sizeof(leds));
	leds.base = base;
	leds.db = db;
	leds.root = xstrdup(cfg->sys_root && *cfg->sys_root ? cfg->sys_root : "/");
	size_t n = strlen(leds.root);
	while (n > 0 && leds.root[n - 1] == '/')
		leds.root[--n] = '\0'; /* "/" becomes "", so paths read "<root>/sys/..." */
	leds.system_led = cfg->system_led && *cfg->system_led ? xstrdup(cfg->system_led) : NULL;
	leds.sys_choice = choice_parse(cfg->system_backend);
	leds.disk_choice = choice_parse(cfg->disk_backend);
	leds.timeout_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 10000;
	leds.ledctl_socket =
	    cfg->ledctl_socket && *cfg->ledctl_socket ? xstrdup(cfg->ledctl_socket) : NULL;
	/* One thread of its own: a slow enclosure must not hold up password hashing. */
	leds.wq = workq_new(base, 1);
	if (!leds.wq)
		return -1;
	if (db_led_list(db, rec_load, NULL) != 0)
		log_warn("leds: the recorded LED states cannot be read; starting with none");
	leds.started = true;
	scan_start(true);
	return 0;
}

void leds_shutdown(void)
{
	if (!leds.started)
		return;
	leds.stopping = true;
	/* ledctl requests with the helper are answered as command_exit answers a child's. */
	while (leds.socks) {
		struct op *op = leds.socks->op;
		struct rec *r = rec_find(op->key);
		if (r)
			r->busy = false;
		sock_req_free(leds.socks);
		op_fail(op, ERR_BUSY, "locate: the server is shutting down");
	}
	/* Its done callbacks answer whoever waits on a scan, a read or a write. */
	workq_free(leds.wq);
	leds.wq = NULL;
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
	free(leds.recs);
	leds.recs = NULL;
	leds.nrecs = leds.caprecs = 0;
	free(leds.root);
	free(leds.system_led);
	free(leds.ledctl_socket);
	leds.root = leds.system_led = leds.ledctl_socket = NULL;
	leds.started = false;
}
