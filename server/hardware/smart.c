/* SPDX-License-Identifier: ISC */
/* Disk health (smart.h): smartctl's JSON read into a reading, and the readings kept up to
 * date one disk at a time. */
#include "smart.h"
#include "problems.h"
#include "base/child.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/sockcall.h"
#include "base/util.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* smartctl's exit status, a bit mask (smartctl(8), RETURN VALUES) */
#define SMARTCTL_CMDLINE      0x01 /* the command line did not parse */
#define SMARTCTL_OPEN         0x02 /* the device did not open, or is asleep (-n) */
#define SMARTCTL_COMMAND      0x04 /* a SMART command failed, or a checksum */
#define SMARTCTL_FAILING      0x08 /* SMART status: DISK FAILING */
#define SMARTCTL_PREFAIL_NOW  0x10 /* a pre-failure attribute at or below its threshold */
#define SMARTCTL_USAGE_BEFORE 0x20 /* an attribute was at or below its threshold once */

/* smartctl -a's JSON is some 10 to 60 KB; jansson's tree of one is some 80 times its size
 * (a megabyte of "{}," is 80 MB on the loop), so a longer answer is not parsed. */
#define ANSWER_MAX (256 * 1024)

const char *smart_health_name(enum smart_health h)
{
	static const char *const names[] = {"unknown", "ok", "warning", "failing"};
	return names[h];
}

/* --- reading smartctl's JSON */

/* The integer at a dotted path ("a.b.c"), or SMART_NONE. */
static int64_t jint(json_t *o, const char *path)
{
	char key[64];
	const char *p = path;
	while (o && *p) {
		size_t n = strcspn(p, ".");
		if (n >= sizeof(key))
			return SMART_NONE;
		memcpy(key, p, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		p += n + (p[n] == '.');
	}
	return json_is_integer(o) ? (int64_t)json_integer_value(o) : SMART_NONE;
}

/* The raw count of ATA attribute id (the low 48 bits: some drives pack more above). */
static int64_t ata_attr(json_t *doc, int id)
{
	json_t *table = json_object_get(json_object_get(doc, "ata_smart_attributes"), "table");
	size_t i;
	json_t *a;
	json_array_foreach(table, i, a)
	{
		if (jint(a, "id") == id) {
			int64_t raw = jint(a, "raw.value");
			return raw < 0 ? SMART_NONE : raw & 0xffffffffffffLL;
		}
	}
	return SMART_NONE;
}

static void why_add(struct smart_info *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void why_add(struct smart_info *s, const char *fmt, ...)
{
	size_t n = strlen(s->why);
	if (n + 3 >= sizeof(s->why))
		return;
	if (n)
		n += (size_t)snprintf(s->why + n, sizeof(s->why) - n, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why + n, sizeof(s->why) - n, fmt, ap);
	va_end(ap);
}

static void worse(struct smart_info *s, enum smart_health h)
{
	if (h > s->health)
		s->health = h;
}

/* smartctl's first message of a severity ("error"), or of any when sev is NULL. */
static const char *message(json_t *doc, const char *sev, const char *containing)
{
	json_t *msgs = json_object_get(json_object_get(doc, "smartctl"), "messages");
	size_t i;
	json_t *m;
	json_array_foreach(msgs, i, m)
	{
		const char *s = json_string_value(json_object_get(m, "string"));
		const char *v = json_string_value(json_object_get(m, "severity"));
		if (s && (!sev || (v && strcmp(v, sev) == 0)) &&
		    (!containing || strstr(s, containing)))
			return s;
	}
	return NULL;
}

static void values_none(struct smart_info *s)
{
	s->overall_passed = SMART_NONE;
	s->temperature_c = s->temperature_limit_c = s->power_on_hours = SMART_NONE;
	s->reallocated = s->pending = s->offline_uncorrectable = s->crc_errors = SMART_NONE;
	s->grown_defects = s->uncorrected_read = s->uncorrected_write = SMART_NONE;
	s->critical_warning = s->percentage_used = s->available_spare =
	    s->available_spare_threshold = s->media_errors = SMART_NONE;
}

/* The health the values say, and why. */
static void judge(struct smart_info *s, int64_t exit_status)
{
	s->health = SMART_OK;
	if (s->overall_passed == 0 || (exit_status & SMARTCTL_FAILING)) {
		worse(s, SMART_FAILING);
		why_add(s, "the drive's own health check failed");
	}
	if (exit_status & SMARTCTL_PREFAIL_NOW) {
		worse(s, SMART_FAILING);
		why_add(s, "a pre-failure attribute is at or below its threshold");
	}
	if (s->critical_warning > 0) {
		static const char *const bits[] = {
		    "spare capacity below its threshold",
		    "temperature out of range",
		    "reliability degraded by media or internal errors",
		    "media read-only",
		    "volatile memory backup failed",
		    "persistent memory read-only"};
		worse(s, SMART_FAILING);
		char list[256] = "";
		for (size_t b = 0; b < nitems(bits); b++)
			if (s->critical_warning & (1 << b))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				         list[0] ? ", " : "", bits[b]);
		why_add(s, "NVMe critical warning 0x%02llx: %s", (long long)s->critical_warning,
		        list[0] ? list : "a bit of a later revision");
	}
	if (s->pending > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld sectors pending reallocation", (long long)s->pending);
	}
	if (s->offline_uncorrectable > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld sectors uncorrectable offline",
		        (long long)s->offline_uncorrectable);
	}
	if (s->reallocated > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld sectors reallocated", (long long)s->reallocated);
	}
	if (s->grown_defects > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld grown defects", (long long)s->grown_defects);
	}
	if (s->uncorrected_read > 0 || s->uncorrected_write > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld uncorrected read and %lld write errors",
		        (long long)(s->uncorrected_read > 0 ? s->uncorrected_read : 0),
		        (long long)(s->uncorrected_write > 0 ? s->uncorrected_write : 0));
	}
	if (s->media_errors > 0) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld media and data integrity errors", (long long)s->media_errors);
	}
	if (s->percentage_used >= 100) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld %% of its rated endurance used", (long long)s->percentage_used);
	}
	if (s->temperature_c != SMART_NONE && s->temperature_limit_c > 0 &&
	    s->temperature_c >= s->temperature_limit_c) {
		worse(s, SMART_WARNING);
		why_add(s, "%lld °C, at or above its limit of %lld °C", (long long)s->temperature_c,
		        (long long)s->temperature_limit_c);
	}
	if (exit_status & SMARTCTL_USAGE_BEFORE) {
		worse(s, SMART_WARNING);
		why_add(s, "an attribute has been at or below its threshold");
	}
}

static void unknown(struct smart_info *s, const struct smart_info *prev, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void unknown(struct smart_info *s, const struct smart_info *prev, const char *fmt, ...)
{
	if (prev)
		*s = *prev; /* the values stay; what became of this try is said */
	else
		values_none(s);
	s->health = SMART_UNKNOWN;
	s->asleep = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

void smart_parse(const char *out, size_t len, int64_t now, const struct smart_info *prev,
                 struct smart_info *s)
{
	memset(s, 0, sizeof(*s));
	if (len >= 6 && strncmp(out, "error ", 6) == 0) {
		/* the helper's: smartctl did not run, hung, or said no JSON */
		size_t n = strcspn(out + 6, "\r\n");
		unknown(s, prev, "%.*s", (int)(n > 300 ? 300 : n), out + 6);
		return;
	}
	json_error_t err;
	json_t *doc = json_loadb(out, len, 0, &err);
	if (!json_is_object(doc)) {
		json_decref(doc);
		unknown(s, prev, "smartctl's answer is not JSON (%s)", err.text);
		return;
	}
	int64_t exit_status = jint(doc, "smartctl.exit_status");
	if (exit_status < 0) {
		unknown(s, prev, "smartctl's answer has no exit status");
		json_decref(doc);
		return;
	}
	const char *asleep = message(doc, NULL, "Device is in ");
	if ((exit_status & SMARTCTL_OPEN) && asleep && strstr(asleep, " mode")) {
		/* -n standby: smartctl left it spun down; what was read before stays */
		if (prev && prev->read_at) {
			*s = *prev;
		} else {
			values_none(s);
			s->health = SMART_UNKNOWN;
			snprintf(s->why, sizeof(s->why),
			         "spun down: not woken to read it (it is read when it next spins)");
		}
		s->asleep = true;
		json_decref(doc);
		return;
	}
	if (exit_status & (SMARTCTL_CMDLINE | SMARTCTL_OPEN)) {
		const char *m = message(doc, "error", NULL);
		unknown(s, prev, "smartctl cannot read it: %s",
		        m ? m : "it did not open (exit status 2)");
		json_decref(doc);
		return;
	}
	values_none(s);
	const char *proto =
	    json_string_value(json_object_get(json_object_get(doc, "device"), "protocol"));
	snprintf(s->protocol, sizeof(s->protocol), "%s", proto ? proto : "");
	json_t *passed = json_object_get(json_object_get(doc, "smart_status"), "passed");
	s->overall_passed = json_is_boolean(passed) ? json_is_true(passed) : SMART_NONE;
	s->temperature_c = jint(doc, "temperature.current");
	s->temperature_limit_c = jint(doc, "temperature.drive_trip");
	if (s->temperature_limit_c == SMART_NONE)
		s->temperature_limit_c = jint(doc, "temperature.op_limit_max");
	if (s->temperature_limit_c == SMART_NONE)
		s->temperature_limit_c = jint(doc, "nvme_composite_temperature_threshold.critical");
	s->power_on_hours = jint(doc, "power_on_time.hours");
	if (strcmp(s->protocol, "ATA") == 0) {
		s->reallocated = ata_attr(doc, 5);
		s->pending = ata_attr(doc, 197);
		s->offline_uncorrectable = ata_attr(doc, 198);
		s->crc_errors = ata_attr(doc, 199);
	} else if (strcmp(s->protocol, "SCSI") == 0) {
		s->grown_defects = jint(doc, "scsi_grown_defect_list");
		s->uncorrected_read =
		    jint(doc, "scsi_error_counter_log.read.total_uncorrected_errors");
		s->uncorrected_write =
		    jint(doc, "scsi_error_counter_log.write.total_uncorrected_errors");
	} else if (strcmp(s->protocol, "NVMe") == 0) {
		const char *log = "nvme_smart_health_information_log";
		char path[96];
		static const char *const keys[] = {"critical_warning", "percentage_used",
		                                   "available_spare", "available_spare_threshold",
		                                   "media_errors"};
		int64_t *vals[] = {&s->critical_warning, &s->percentage_used, &s->available_spare,
		                   &s->available_spare_threshold, &s->media_errors};
		for (size_t i = 0; i < nitems(keys); i++) {
			snprintf(path, sizeof(path), "%s.%s", log, keys[i]);
			*vals[i] = jint(doc, path);
		}
	}
	json_decref(doc);
	if (!s->protocol[0] || (s->overall_passed == SMART_NONE && s->temperature_c == SMART_NONE &&
	                        s->power_on_hours == SMART_NONE)) {
		unknown(s, prev, "smartctl read no health from it (exit status %lld)",
		        (long long)exit_status);
		return;
	}
	s->read_at = now;
	judge(s, exit_status);
}

/* --- keeping the readings */

struct sdisk {
	char id[160], device[32], interface[16];
	char chassis[160], label[32], slot[96], serial[128], href[320]; /* for its problem */
	struct smart_info info;
	bool have;   /* info holds a try's outcome */
	bool seen;   /* in the last inventory */
	int64_t due; /* monotonic seconds: when to read it next; INT64_MAX: never */
};

static struct {
	struct event_base *base;
	struct smart_config cfg;
	struct hmap by_id;
	struct sdisk **all;
	size_t n, cap;
	struct event *timer;
	struct sdisk *busy; /* being read */
	struct child *child;
	struct sockcall *call;
	bool ready;
	bool missing_said; /* that smartctl is not installed, logged once */
	bool temperatures; /* a disk has given one */
} sm;

static int64_t mono_s(void)
{
	return (int64_t)(util_mono_ns() / 1000000000ull);
}

/* Disks smartctl cannot read: a hypervisor's virtual ones. */
static bool virtual_disk(const char *interface)
{
	return strcmp(interface, "virtio") == 0 || strcmp(interface, "xen") == 0;
}

static void schedule(void);

/* The disk's problem: open while it is failing or warned of, its text refreshed at each
 * reading; cleared when it is ok again. A reading that could not be taken (unknown, the
 * values kept) leaves it as it was: a failing disk that stops answering is still failing. */
static void problem(const struct sdisk *d)
{
	char key[200];
	snprintf(key, sizeof(key), "smart/%s", d->id);
	const struct smart_info *s = &d->info;
	if (s->health == SMART_OK) {
		problems_clear(key);
		return;
	}
	if (s->health != SMART_FAILING && s->health != SMART_WARNING)
		return;
	static const struct problem_text
	    failing = {"SP-DISK-FAILING", "Fault",
	               "The disk says it is failing: what it holds may become unreadable, and a "
	               "pool that "
	               "counts on it may degrade.",
	               "Replace the disk soon, after its data is safe elsewhere; its locator LED "
	               "can be lit "
	               "to find it."},
	    warning = {
	        "SP-DISK-WARNING", "Fault",
	        "The disk reports errors, wear or heat that often come before a failure; a "
	        "benchmark "
	        "on it measures a disk that is not well.",
	        "Watch its counts (GET the disk); plan to replace it if they grow. Its locator LED "
	        "can be lit to find it."};
	struct problem_component c = {.chassis = d->chassis, .label = d->label, .href = d->href};
	problems_raise(key, s->health == SMART_FAILING ? PROBLEM_CRITICAL : PROBLEM_MAJOR,
	               s->health == SMART_FAILING ? &failing : &warning, &c,
	               "The disk in %s (%s%s%s) %s: %s", d->slot[0] ? d->slot : d->label, d->device,
	               d->serial[0] ? ", serial " : "", d->serial,
	               s->health == SMART_FAILING ? "is failing" : "reports trouble", s->why);
}

static void reading_done(struct sdisk *d, const struct child_result *res, const char *how,
                         bool quiet)
{
	struct smart_info info;
	const struct smart_info *prev = d->have ? &d->info : NULL;
	char why[300];
	if (res->timed_out) {
		snprintf(why, sizeof(why), "error %s gave no answer within %d s", how,
		         sm.cfg.timeout_ms / 1000);
		smart_parse(why, strlen(why), util_now(), prev, &info);
	} else if (res->out_len > ANSWER_MAX) {
		snprintf(why, sizeof(why), "error %s answered more than %d KB: not read", how,
		         ANSWER_MAX / 1024);
		smart_parse(why, strlen(why), util_now(), prev, &info);
	} else if (res->out_len) {
		smart_parse(res->out, res->out_len, util_now(), prev, &info);
	} else {
		if (!child_result_why(res, how, sm.cfg.timeout_ms, why + 6, sizeof(why) - 6))
			snprintf(why + 6, sizeof(why) - 6, "%s said nothing", how);
		memcpy(why, "error ", 6);
		smart_parse(why, strlen(why), util_now(), prev, &info);
	}
	if (!quiet && (info.health != d->info.health || !d->have))
		log_info("smart: %s (%s): %s%s%s", d->device, d->id, smart_health_name(info.health),
		         info.why[0] ? ": " : "", info.why);
	d->info = info;
	d->have = true;
	sm.temperatures |= info.read_at && info.temperature_c != SMART_NONE;
	problem(d);
	/* a disk not ok, or asleep (to be caught awake), sooner */
	d->due = mono_s() +
	         (info.health == SMART_OK && !info.asleep ? sm.cfg.interval_s : sm.cfg.retry_s);
}

/* A reading's end (a child's, or the helper's answer): kept if the disk is still there;
 * a disk that went while it was read, or a reading ending after smart_shutdown(), is
 * freed. */
static void reading_end(struct sdisk *d, const struct child_result *res, const char *how)
{
	sm.child = NULL;
	sm.call = NULL;
	sm.busy = NULL;
	if (!sm.ready || !d->seen) {
		free(d);
		return;
	}
	reading_done(d, res, how, false);
	schedule();
}

static void child_exit(void *arg, const struct child_result *res)
{
	reading_end(arg, res, "smartctl");
}

static void call_exit(void *arg, const struct child_result *res)
{
	reading_end(arg, res, "smartctl (through the helper)");
}

static void read_disk(struct sdisk *d)
{
	char dev[48], err[300];
	bool missing = false;
	snprintf(dev, sizeof(dev), "/dev/%s", d->device);
	sm.busy = d;
	if (sm.cfg.socket && access(sm.cfg.socket, F_OK) == 0) {
		char req[64];
		snprintf(req, sizeof(req), "smart %s\n", dev);
		struct sockcall_opts o = {.path = sm.cfg.socket,
		                          .request = req,
		                          .timeout_ms = sm.cfg.timeout_ms,
		                          .max_output = ANSWER_MAX + 1, /* past it: too long */
		                          .on_exit = call_exit,
		                          .arg = d};
		sm.call = sockcall_start(sm.base, &o, err, sizeof(err));
		if (sm.call)
			return;
	} else {
		char *argv[] = {"smartctl", "--json", "-a", "-n", "standby", dev, NULL};
		struct child_opts o = {.argv = argv,
		                       .timeout_ms = sm.cfg.timeout_ms,
		                       .max_output = ANSWER_MAX + 1,
		                       .on_exit = child_exit,
		                       .arg = d};
		missing = !child_on_path("smartctl");
		if (missing) {
			snprintf(
			    err, sizeof(err),
			    "smartctl is not installed (smartmontools), and the helper's socket "
			    "%s is not there",
			    sm.cfg.socket ? sm.cfg.socket : "(none)");
			if (!sm.missing_said) /* once, not once a disk */
				log_warn("smart: %s: every disk's health is unknown", err);
			sm.missing_said = true;
		} else if ((sm.child = child_spawn(&o, err, sizeof(err))) != NULL) {
			return;
		}
	}
	sm.busy = NULL;
	char why[320];
	snprintf(why, sizeof(why), "error %s", err);
	struct child_result res = {.exited = true,
	                           .exit_code = 1,
	                           .out = why,
	                           .out_len = strlen(why),
	                           .err = err,
	                           .err_len = strlen(err)};
	reading_done(d, &res, "smartctl", missing);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	schedule();
}

/* Reads the disk most overdue, or waits for the next one due. One at a time: a reading
 * sends the disk a few commands, and a box of a thousand disks is read in some minutes. */
static void schedule(void)
{
	if (!sm.ready || sm.busy || sm.cfg.interval_s <= 0)
		return;
	int64_t now = mono_s();
	for (int guard = 0; guard < 64 && !sm.busy; guard++) {
		struct sdisk *next = NULL;
		for (size_t i = 0; i < sm.n; i++)
			if (!next || sm.all[i]->due < next->due)
				next = sm.all[i];
		if (!next || next->due == INT64_MAX)
			return;
		if (next->due > now) {
			struct timeval tv = {(time_t)(next->due - now), 0};
			evtimer_add(sm.timer, &tv);
			return;
		}
		read_disk(next); /* sets busy, or has recorded why it cannot be read */
	}
	if (!sm.busy) { /* 64 could not be read at once (no smartctl): the rest next turn */
		struct timeval tv = {0, 0};
		evtimer_add(sm.timer, &tv);
	}
}

static void forget(size_t i)
{
	struct sdisk *d = sm.all[i];
	char key[200];
	snprintf(key, sizeof(key), "smart/%s", d->id);
	problems_clear(key); /* a disk gone is no problem of its own (its slot's may be) */
	hmap_del(&sm.by_id, d->id, strlen(d->id));
	sm.all[i] = sm.all[--sm.n];
	d->seen = false;
	if (d != sm.busy)
		free(d);
}

void smart_inventory(const struct smart_disk *disks, size_t n)
{
	if (!sm.ready)
		return;
	for (size_t i = 0; i < sm.n; i++)
		sm.all[i]->seen = false;
	int64_t now = mono_s();
	for (size_t i = 0; i < n; i++) {
		const struct smart_disk *x = &disks[i];
		struct sdisk *d = hmap_get(&sm.by_id, x->id, strlen(x->id));
		if (d && strcmp(d->device, x->device) != 0) {
			/* the same disk under another name (a reboot, a rescan): read it anew */
			snprintf(d->device, sizeof(d->device), "%s", x->device);
			d->due = now;
		}
		if (!d) {
			d = xcalloc(1, sizeof(*d));
			snprintf(d->id, sizeof(d->id), "%s", x->id);
			/* (what names it is set below, at every inventory) */
			snprintf(d->device, sizeof(d->device), "%s", x->device);
			snprintf(d->interface, sizeof(d->interface), "%s", x->interface);
			d->due = now;
			if (virtual_disk(d->interface)) {
				values_none(&d->info);
				d->info.health = SMART_UNKNOWN;
				snprintf(d->info.why, sizeof(d->info.why),
				         "a %s disk of a virtual machine: it has no SMART",
				         d->interface);
				d->have = true;
				d->due = INT64_MAX;
			}
			hmap_put(&sm.by_id, d->id, strlen(d->id), d);
			sm.all = util_grow(sm.all, &sm.cap, sm.n, sizeof(*sm.all));
			sm.all[sm.n++] = d;
		}
		d->seen = true;
		snprintf(d->chassis, sizeof(d->chassis), "%s", x->chassis ? x->chassis : "");
		snprintf(d->label, sizeof(d->label), "%s", x->label ? x->label : x->device);
		snprintf(d->slot, sizeof(d->slot), "%s", x->slot ? x->slot : "");
		snprintf(d->serial, sizeof(d->serial), "%s", x->serial ? x->serial : "");
		snprintf(d->href, sizeof(d->href), "%s", x->href ? x->href : "");
	}
	for (size_t i = sm.n; i-- > 0;)
		if (!sm.all[i]->seen)
			forget(i);
	schedule();
}

const struct smart_info *smart_get(const char *id)
{
	struct sdisk *d = sm.ready ? hmap_get(&sm.by_id, id, strlen(id)) : NULL;
	return d && d->have ? &d->info : NULL;
}

bool smart_have_temperature(void)
{
	return sm.ready && sm.temperatures;
}

const struct smart_info *smart_get_device(const char *name, const char **disk)
{
	char whole[32];
	snprintf(whole, sizeof(whole), "%s", name);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; sm.ready && i < sm.n; i++)
			if (sm.all[i]->have && strcmp(sm.all[i]->device, whole) == 0) {
				if (disk)
					*disk = sm.all[i]->device;
				return &sm.all[i]->info;
			}
		/* a partition: sdb1 of sdb, nvme0n1p2 of nvme0n1 (a digit before the p) */
		size_t n = strlen(whole);
		while (n && whole[n - 1] >= '0' && whole[n - 1] <= '9')
			n--;
		if (n == strlen(whole) || n == 0)
			return NULL;
		if (whole[n - 1] == 'p' && n >= 2 && whole[n - 2] >= '0' && whole[n - 2] <= '9')
			n--;
		whole[n] = '\0';
	}
	return NULL;
}

void smart_each(void (*cb)(void *arg, const char *device, const struct smart_info *s), void *arg)
{
	for (size_t i = 0; sm.ready && i < sm.n; i++)
		if (sm.all[i]->have)
			cb(arg, sm.all[i]->device, &sm.all[i]->info);
}

static json_t *count(int64_t v)
{
	return v == SMART_NONE ? json_null() : json_integer((json_int_t)v);
}

void smart_json_add(json_t *o, const char *id, const char *interface)
{
	const struct smart_info *s = smart_get(id);
	if (!s) {
		bool off = !sm.ready || sm.cfg.interval_s <= 0;
		json_object_set_new(o, "health", json_string("unknown"));
		json_object_set_new(o, "health_details",
		                    json_string(off ? "disk health is not read (--smart-interval 0)"
		                                : interface && interface[0]
		                                    ? "not read yet"
		                                    : "no disk in the slot"));
		json_object_set_new(o, "temperature_c", json_null());
		json_object_set_new(o, "power_on_hours", json_null());
		json_object_set_new(o, "smart", json_null());
		return;
	}
	json_object_set_new(o, "health", json_string(smart_health_name(s->health)));
	json_object_set_new(o, "health_details", json_string(s->why));
	json_object_set_new(o, "temperature_c", count(s->temperature_c));
	json_object_set_new(o, "power_on_hours", count(s->power_on_hours));
	char when[32];
	json_t *d = json_object();
	json_object_set_new(d, "read",
	                    s->read_at ? json_string(util_iso8601(s->read_at, when, sizeof(when)))
	                               : json_null());
	json_object_set_new(d, "asleep", json_boolean(s->asleep));
	json_object_set_new(d, "protocol", s->protocol[0] ? json_string(s->protocol) : json_null());
	json_object_set_new(d, "overall_passed",
	                    s->overall_passed == SMART_NONE ? json_null()
	                                                    : json_boolean(s->overall_passed));
	json_object_set_new(d, "temperature_limit_c", count(s->temperature_limit_c));
	if (strcmp(s->protocol, "ATA") == 0) {
		json_object_set_new(d, "reallocated_sectors", count(s->reallocated));
		json_object_set_new(d, "pending_sectors", count(s->pending));
		json_object_set_new(d, "offline_uncorrectable", count(s->offline_uncorrectable));
		json_object_set_new(d, "crc_errors", count(s->crc_errors));
	} else if (strcmp(s->protocol, "SCSI") == 0) {
		json_object_set_new(d, "grown_defects", count(s->grown_defects));
		json_object_set_new(d, "uncorrected_read_errors", count(s->uncorrected_read));
		json_object_set_new(d, "uncorrected_write_errors", count(s->uncorrected_write));
	} else if (strcmp(s->protocol, "NVMe") == 0) {
		json_object_set_new(d, "critical_warning", count(s->critical_warning));
		json_object_set_new(d, "percentage_used", count(s->percentage_used));
		json_object_set_new(d, "available_spare", count(s->available_spare));
		json_object_set_new(d, "available_spare_threshold",
		                    count(s->available_spare_threshold));
		json_object_set_new(d, "media_errors", count(s->media_errors));
	}
	json_object_set_new(o, "smart", d);
}

int smart_init(struct event_base *base, const struct smart_config *cfg)
{
	sm.base = base;
	sm.cfg = *cfg;
	sm.timer = evtimer_new(base, on_timer, NULL);
	if (!sm.timer)
		return -1;
	sm.ready = true;
	if (cfg->interval_s <= 0)
		log_info("smart: disk health is not read (--smart-interval 0)");
	return 0;
}

void smart_shutdown(void)
{
	if (!sm.ready)
		return;
	sm.ready = false;
	if (sm.call) { /* cancelled: no answer comes, so its disk goes here */
		sockcall_cancel(sm.call);
		sm.call = NULL;
		sm.busy = NULL;
	}
	/* A child still running is killed and reaped by child_shutdown(), later: its exit
	 * frees its disk (reading_end). */
	for (size_t i = 0; i < sm.n; i++)
		if (sm.all[i] != sm.busy)
			free(sm.all[i]);
	if (!sm.child && sm.busy)
		free(sm.busy);
	free(sm.all);
	hmap_clear(&sm.by_id, NULL);
	if (sm.timer)
		event_free(sm.timer);
	memset(&sm, 0, sizeof(sm));
}
