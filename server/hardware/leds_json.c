/* SPDX-License-Identifier: ISC */
/* The hardware inventory in the appliance's shape: chassis and disks as JSON, with their
 * locator LEDs, and the disks that report a fault as problems. */
#include "leds_int.h"
#include "problems.h"
#include "smart.h"
#include "base/util.h"
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
	json_object_set_new(o, "led_backend", json_string(led_backends[c->backend]->name));
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

json_t *chassis_json(const struct snap *s, size_t i)
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

json_t *disk_json(const struct snap *s, size_t i)
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
	smart_json_add(o, d->id, d->present ? d->interface : NULL);
	return o;
}

void smart_from_snap(const struct snap *s)
{
	if (!s)
		return;
	struct smart_disk *list = xcalloc(s->inv.ndisks + 1, sizeof(*list));
	char(*labels)[32] = xcalloc(s->inv.ndisks + 1, sizeof(*labels));
	char(*hrefs)[2 * SYSFS_ID_MAX + 64] = xcalloc(s->inv.ndisks + 1, sizeof(*hrefs));
	size_t n = 0;
	for (size_t i = 0; i < s->inv.ndisks; i++) {
		const struct sysfs_disk *d = &s->inv.disks[i];
		if (!d->present || !d->device[0])
			continue;
		const struct sysfs_chassis *ch = &s->inv.chassis[d->chassis];
		disk_label(s, i, labels[n], sizeof(labels[n]));
		snprintf(hrefs[n], sizeof(hrefs[n]), "/api/hardware/v1/chassis/%s/disk/%s", ch->id,
		         d->id);
		list[n] = (struct smart_disk){.id = d->id,
		                              .device = d->device,
		                              .interface = d->interface,
		                              .chassis = ch->id,
		                              .label = labels[n],
		                              .slot = d->slot,
		                              .serial = d->serial,
		                              .href = hrefs[n]};
		n++;
	}
	smart_inventory(list, n);
	free(hrefs);
	free(labels);
	free(list);
}

/* An open problem for every present disk its enclosure marks faulted; cleared when the
 * mark goes (or the disk does). */
void faults_to_problems(const struct snap *s)
{
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
