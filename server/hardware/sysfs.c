/* SPDX-License-Identifier: ISC */
/* The hardware inventory from sysfs: DMI for the system, /sys/class/enclosure for SES
 * enclosures and their slots, /sys/block for whole disks. A disk belongs to an enclosure
 * slot when its device has an enclosure_device:<slot> link to the slot, or the slot's
 * device link points at the disk's device; both are compared by their real paths. */
#define _GNU_SOURCE
#include "sysfs.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct scan {
	char root[PATH_MAX]; /* without a trailing '/': "" for "/" */
	bool leds;           /* read the slots' locate and fault files */
	struct sysfs_inventory *inv;
	size_t chassis_cap;
	struct sysfs_disk *sys_disks; /* disks outside any enclosure, before merging */
	size_t nsys, sys_cap;
	struct slot *slots; /* every enclosure slot, in chassis order */
	size_t nslots, slots_cap;
	char *block_real; /* the real path of <root>/sys/block */
	/* Lookups, each value an index + 1: slots by their real path and their device's
	 * (made once the slots are all read), and the disks seen so far by wwid (a slot's
	 * index + 1, or a system disk's as its negative). */
	struct hmap slot_by_real, slot_by_dev;
	bool slots_mapped;
	struct hmap disk_by_wwid;
};

struct slot {
	struct sysfs_disk d;
	char *real;     /* the real path of the slot's directory */
	char *dev_real; /* the real path its device link leads to, or NULL */
};

/* --- reading attributes */

/* Formats a path; false when it does not fit. */
static bool __attribute__((format(printf, 3, 4))) spath(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len;
}

/* Up to len - 1 bytes of a file (path relative to the directory dfd, or AT_FDCWD); -1 when
 * it cannot be read. One read: sysfs hands over a whole attribute at once. */
static ssize_t read_raw_at(int dfd, const char *path, char *buf, size_t len)
{
	/* O_NONBLOCK: a FIFO does not hang */
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	errno = e;
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static ssize_t read_raw(const char *path, char *buf, size_t len)
{
	return read_raw_at(AT_FDCWD, path, buf, len);
}

/* Printable ASCII only (JSON-safe, one line), trimmed at both ends, into out. */
static void clean_text(const char *in, size_t n, char *out, size_t outlen)
{
	size_t i = 0, j = 0;
	while (i < n && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\0'))
		i++;
	for (; i < n && j + 1 < outlen; i++)
		out[j++] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : ' ';
	while (j > 0 && out[j - 1] == ' ')
		j--;
	out[j] = '\0';
}

/* A text attribute of the directory dfd, cleaned; true when it is there and not empty.
 * Relative to a directory already open, the kernel walks one name, not a deep path through
 * its links again for each attribute. */
static bool attr_at(int dfd, char *out, size_t outlen, const char *name)
{
	char buf[4096];
	out[0] = '\0';
	ssize_t got = dfd >= 0 ? read_raw_at(dfd, name, buf, sizeof(buf)) : -1;
	if (got <= 0)
		return false;
	clean_text(buf, (size_t)got, out, outlen);
	return out[0] != '\0';
}

/* A directory to read attributes of (O_PATH: nothing read yet), or -1. */
static int dir_open(const char *path)
{
	return path ? open(path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
}

static void dir_close(int dfd)
{
	if (dfd >= 0)
		close(dfd);
}

/* A text attribute, cleaned; true when it is there and not empty. */
static bool __attribute__((format(printf, 3, 4)))
attr(char *out, size_t outlen, const char *fmt, ...)
{
	char path[PATH_MAX], buf[4096];
	va_list ap;
	out[0] = '\0';
	va_start(ap, fmt);
	int n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return false;
	ssize_t got = read_raw(path, buf, sizeof(buf));
	if (got <= 0)
		return false;
	clean_text(buf, (size_t)got, out, outlen);
	return out[0] != '\0';
}

int sysfs_read_flag(const char *path)
{
	char buf[64];
	ssize_t n = read_raw(path, buf, sizeof(buf));
	if (n < 0)
		return -1;
	long long v;
	char *end;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (end == buf || errno) {
		errno = EINVAL;
		return -1;
	}
	return v > 0 ? 1 : 0;
}

long long sysfs_read_ll(const char *path)
{
	char buf[64];
	if (read_raw(path, buf, sizeof(buf)) < 0)
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(buf, &end, 10);
	return (end == buf || errno || v < 0) ? -1 : v;
}

int sysfs_write(const char *path, const char *value)
{
	/* No O_CREAT: an attribute that is not there is an error, never a new file. */
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	size_t len = strlen(value);
	ssize_t n;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	int e = errno;
	if (close(fd) < 0 && n >= 0) {
		e = errno;
		n = -1;
	}
	errno = e;
	if (n >= 0 && (size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return n < 0 ? -1 : 0;
}

void sysfs_sanitize_id(char *s)
{
	size_t j = 0;
	bool gap = false;
	for (size_t i = 0; s[i]; i++) {
		char ch = s[i];
		bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		            (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
		if (!keep) {
			gap = true;
			continue;
		}
		if (gap && j > 0)
			s[j++] = '-';
		gap = false;
		s[j++] = ch;
	}
	s[j] = '\0';
	while (j > 0 && (s[j - 1] == '-' || s[j - 1] == '.'))
		s[--j] = '\0';
	size_t lead = 0;
	while (s[lead] == '-' || s[lead] == '.')
		lead++;
	memmove(s, s + lead, j - lead + 1);
	if (strlen(s) > SYSFS_ID_MAX)
		s[SYSFS_ID_MAX] = '\0';
}

/* DMI fields that vendors fill with placeholders say nothing. */
static bool placeholder(const char *s)
{
	static const char *const junk[] = {
	    "To Be Filled By O.E.M.",
	    "To be filled by O.E.M.",
	    "Not Specified",
	    "Not Applicable",
	    "System Serial Number",
	    "System Product Name",
	    "System manufacturer",
	    "Default string",
	    "0123456789",
	    "None",
	    "N/A",
	    "Chassis Serial Number",
	    "Base Board Serial Number",
	    "Not Available",
	    "OEM",
	    "O.E.M.",
	};
	if (!*s)
		return true;
	for (size_t i = 0; i < nitems(junk); i++)
		if (strcasecmp(s, junk[i]) == 0)
			return true;
	for (const char *p = s; *p; p++)
		if (*p != '0' && *p != ' ' && *p != 'F' && *p != 'f')
			return false;
	return true; /* all zeros / all FFs */
}

static void dmi(struct scan *s, const char *const *names, size_t n, char *out, size_t outlen)
{
	for (size_t i = 0; i < n; i++)
		if (attr(out, outlen, "%s/sys/class/dmi/id/%s", s->root, names[i]) &&
		    !placeholder(out))
			return;
	out[0] = '\0';
}

/* --- directories */

static bool all_letters(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

/* Device order as people count: sdz before sdaa, nvme2n1 before nvme10n1. */
static int name_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	if (lx != ly && all_letters(x) && all_letters(y))
		return lx < ly ? -1 : 1;
	return strverscmp(x, y);
}

/* The entries of a directory but . and .., in name_cmp order; NULL when it cannot be
 * opened (or is empty), with *n 0. */
static char **list_dir(const char *path, size_t *n)
{
	*n = 0;
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	char **names = NULL;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		names = util_grow(names, &cap, *n, sizeof(*names));
		names[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), name_cmp);
	return names;
}

static void free_list(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static char *real_of(const char *path)
{
	char buf[PATH_MAX];
	return realpath(path, buf) ? xstrdup(buf) : NULL;
}

/* Folds "//", "/./" and "/x/../" out of an absolute path, in place. */
static void fold_path(char *p)
{
	char *out = p;
	for (const char *in = p; *in;) {
		while (*in == '/')
			in++;
		const char *end = strchrnul(in, '/');
		size_t n = (size_t)(end - in);
		if (n == 0 || (n == 1 && in[0] == '.')) {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > p && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in = end;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

/* The real path the link dir_real/name leads to, dir_real being a real path: the link read
 * alone and folded against it, as sysfs's relative links lead through real directories,
 * then checked to be the same file (realpath() would look at every component of a deep
 * path in turn); realpath() where that does not hold. NULL when nothing is there. */
static char *link_real(const char *dir_real, const char *name)
{
	char path[PATH_MAX], target[PATH_MAX], out[PATH_MAX];
	if (!dir_real || !spath(path, sizeof(path), "%s/%s", dir_real, name))
		return NULL;
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return errno == EINVAL ? real_of(path) : NULL; /* not a link: a directory */
	target[n] = '\0';
	if (!spath(out, sizeof(out), "%s/%s", target[0] == '/' ? "" : dir_real, target))
		return real_of(path);
	fold_path(out);
	struct stat a, b;
	if (stat(path, &a) < 0)
		return NULL;
	if (lstat(out, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return real_of(path);
	return xstrdup(out);
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --- the system chassis */

static struct sysfs_chassis *add_chassis(struct scan *s)
{
	struct sysfs_inventory *inv = s->inv;
	inv->chassis =
	    util_grow(inv->chassis, &s->chassis_cap, inv->nchassis, sizeof(*inv->chassis));
	struct sysfs_chassis *c = &inv->chassis[inv->nchassis++];
	memset(c, 0, sizeof(*c));
	return c;
}

static void scan_system(struct scan *s)
{
	static const char *const vendor[] = {"sys_vendor", "board_vendor", "chassis_vendor"};
	static const char *const model[] = {"product_name", "board_name"};
	static const char *const serial[] = {"product_serial", "chassis_serial", "board_serial"};
	struct sysfs_chassis *c = add_chassis(s);
	snprintf(c->id, sizeof(c->id), "system");
	dmi(s, vendor, nitems(vendor), c->vendor, sizeof(c->vendor));
	dmi(s, model, nitems(model), c->model, sizeof(c->model));
	dmi(s, serial, nitems(serial), c->serial, sizeof(c->serial));
	static const char *const version[] = {"product_version", "chassis_version"};
	static const char *const sku[] = {"product_sku"};
	static const char *const uuid[] = {"product_uuid"};
	dmi(s, version, nitems(version), c->revision, sizeof(c->revision));
	dmi(s, sku, nitems(sku), c->part, sizeof(c->part));
	/* Readable by root only on most systems; then the caller derives one. */
	dmi(s, uuid, nitems(uuid), c->uuid, sizeof(c->uuid));
	for (char *p = c->uuid; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if (strlen(c->uuid) != 36 || strspn(c->uuid, "0-") == 36 || strspn(c->uuid, "f-") == 36)
		c->uuid[0] = '\0'; /* not one, or a placeholder */
	c->paths = 1;
	if (gethostname(c->hostname, sizeof(c->hostname) - 1) < 0)
		c->hostname[0] = '\0';
	snprintf(c->name, sizeof(c->name), "%s", c->model[0] ? c->model : "System");
}

/* --- enclosures and their slots */

static void disk_init(struct sysfs_disk *d)
{
	memset(d, 0, sizeof(*d));
	d->rotational = -1;
	d->slot_number = -1;
	d->faulted = -1;
	d->locate = -1;
	d->paths = 1;
}

/* The medium rotation rate from SCSI VPD page B1 (bytes 4-5): 1 means not rotating,
 * 0x401-0xfffe is rpm; anything else (or no page) is 0, unknown. */
static int vpd_rpm(int dfd, const char *name)
{
	unsigned char buf[64];
	ssize_t n = dfd >= 0 ? read_raw_at(dfd, name, (char *)buf, sizeof(buf)) : -1;
	if (n < 6 || buf[1] != 0xb1)
		return 0;
	int v = (buf[4] << 8) | buf[5];
	return v == 1 || (v >= 0x401 && v <= 0xfffe) ? v : 0;
}

static bool slot_status_present(const char *status)
{
	static const char *const present[] = {"OK", "critical", "non-critical", "noncritical",
	                                      "unrecoverable"};
	for (size_t i = 0; i < nitems(present); i++)
		if (strcasecmp(status, present[i]) == 0)
			return true;
	return false;
}

/* What an enclosure's status word says of its slot. */
static void slot_status_parse(const char *status, bool *present, bool *critical)
{
	*present = slot_status_present(status);
	*critical = strcasecmp(status, "critical") == 0 || strcasecmp(status, "unrecoverable") == 0;
}

int sysfs_read_slot_status(const char *slot_dir, bool *present, bool *critical)
{
	char status[64];
	if (!attr(status, sizeof(status), "%s/status", slot_dir))
		return -1;
	slot_status_parse(status, present, critical);
	return 0;
}

/* enc_real: the real path of encdir, whose slots are directories of their own. */
static void scan_slot(struct scan *s, size_t chassis, const char *encdir, const char *enc_real,
                      const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX], type[64], status[64], number[32];
	if (!spath(dir, sizeof(dir), "%s/%s", encdir, name))
		return;
	char *real = enc_real && spath(path, sizeof(path), "%s/%s", enc_real, name) ? xstrdup(path)
	                                                                            : real_of(dir);
	int sfd = dir_open(real); /* fails for a file: not a slot */
	bool typed = attr_at(sfd, type, sizeof(type), "type");
	if (sfd < 0 ||
	    (typed && strcmp(type, "device") != 0 && strcmp(type, "array device") != 0) ||
	    (!typed && faccessat(sfd, "locate", F_OK, 0) < 0)) {
		/* the SES driver only makes device slots, but say so; "power", "subsystem" and
		 * other directories are not slots */
		dir_close(sfd);
		free(real);
		return;
	}

	s->slots = util_grow(s->slots, &s->slots_cap, s->nslots, sizeof(*s->slots));
	struct slot *sl = &s->slots[s->nslots++];
	struct sysfs_disk *d = &sl->d;
	disk_init(d);
	sl->real = real;
	sl->dev_real = link_real(sl->real, "device");

	d->chassis = chassis;
	snprintf(d->slot, sizeof(d->slot), "%s", name);
	snprintf(d->label, sizeof(d->label), "%s", name);
	d->slot_dir = xstrdup(dir);
	long long num = -1;
	if (attr_at(sfd, number, sizeof(number), "slot") &&
	    util_parse_ll(number, 0, 1 << 20, &num) == 0)
		d->slot_number = (int)num;
	if (s->leds) {
		spath(path, sizeof(path), "%s/locate", sl->real);
		d->locate = sysfs_read_flag(path);
		spath(path, sizeof(path), "%s/fault", sl->real);
		d->faulted = sysfs_read_flag(path);
	}
	if (attr_at(sfd, status, sizeof(status), "status")) {
		bool critical;
		slot_status_parse(status, &d->present, &critical);
		if (critical)
			d->faulted = 1;
	}
	dir_close(sfd);
}

static int slot_cmp(const void *a, const void *b)
{
	const struct sysfs_disk *x = &((const struct slot *)a)->d,
	                        *y = &((const struct slot *)b)->d;
	if (x->slot_number != y->slot_number)
		return x->slot_number < y->slot_number ? -1 : 1;
	return strverscmp(x->slot, y->slot);
}

static void scan_enclosure(struct scan *s, const char *sysname)
{
	char encdir[PATH_MAX], id[SYSFS_ID_MAX + 1];
	if (!spath(encdir, sizeof(encdir), "%s/sys/class/enclosure/%s", s->root, sysname) ||
	    !is_dir(encdir))
		return;
	size_t ci = s->inv->nchassis;
	struct sysfs_chassis *c = add_chassis(s);
	c->enclosure = true;
	snprintf(c->sysname, sizeof(c->sysname), "%s", sysname);
	/* The enclosure's logical id (a SAS address) survives reboots; 0 means it has none. */
	if (!attr(id, sizeof(id), "%s/id", encdir) || strcmp(id, "0") == 0 ||
	    strcmp(id, "0x0") == 0)
		attr(id, sizeof(id), "%s/device/wwid", encdir);
	sysfs_sanitize_id(id);
	if (!id[0]) {
		snprintf(id, sizeof(id), "enclosure-%s", sysname);
		sysfs_sanitize_id(id);
	}
	snprintf(c->id, sizeof(c->id), "%s", id);
	attr(c->vendor, sizeof(c->vendor), "%s/device/vendor", encdir);
	attr(c->model, sizeof(c->model), "%s/device/model", encdir);
	attr(c->revision, sizeof(c->revision), "%s/device/rev", encdir);
	char vpd[256];
	char path[PATH_MAX];
	ssize_t n = spath(path, sizeof(path), "%s/device/vpd_pg80", encdir)
	                ? read_raw(path, vpd, sizeof(vpd))
	                : -1;
	if (n > 4 && (unsigned char)vpd[1] == 0x80) {
		size_t len = ((size_t)(unsigned char)vpd[2] << 8) | (unsigned char)vpd[3];
		clean_text(vpd + 4, len < (size_t)n - 4 ? len : (size_t)n - 4, c->serial,
		           sizeof(c->serial));
	}
	if (c->vendor[0] || c->model[0])
		snprintf(c->name, sizeof(c->name), "%.63s%s%.127s", c->vendor,
		         c->vendor[0] ? " " : "", c->model);
	else
		snprintf(c->name, sizeof(c->name), "Enclosure %s", sysname);

	size_t first = s->nslots, nnames;
	char **names = list_dir(encdir, &nnames);
	char *enc_real = real_of(encdir);
	for (size_t i = 0; i < nnames; i++)
		scan_slot(s, ci, encdir, enc_real, names[i]);
	free(enc_real);
	free_list(names, nnames);
	/* Slots without a number count in name order. */
	for (size_t i = first; i < s->nslots; i++)
		if (s->slots[i].d.slot_number < 0)
			s->slots[i].d.slot_number = (int)(i - first);
	size_t cnt = s->nslots - first;
	if (cnt > 1)
		qsort(s->slots + first, cnt, sizeof(*s->slots), slot_cmp);
	c->nslots = (int)cnt;
}

/* --- disks */

/* Virtual block devices that are no disks, and optical drives. */
bool sysfs_not_a_disk(const char *name)
{
	static const char *const prefixes[] = {"loop", "ram", "zram", "dm-",  "md",  "nbd",
	                                       "sr",   "fd",  "zd",   "drbd", "rbd", "bcache"};
	for (size_t i = 0; i < nitems(prefixes); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static void disk_interface(const char *name, const char *rel, const char *vendor, char *out,
                           size_t len)
{
	const char *t = "";
	if (strncmp(name, "nvme", 4) == 0 || strstr(rel, "/nvme/"))
		t = "nvme";
	else if (strncmp(name, "vd", 2) == 0)
		t = "virtio";
	else if (strncmp(name, "xvd", 3) == 0)
		t = "xen";
	else if (strncmp(name, "mmcblk", 6) == 0)
		t = "mmc";
	else if (strstr(rel, "/usb"))
		t = "usb";
	else if (strstr(rel, "/ata") || strcmp(vendor, "ATA") == 0)
		t = "sata";
	else if (strstr(rel, "/end_device-") || strstr(rel, "/sas_") || strstr(rel, "/port-"))
		t = "sas";
	else if (strstr(rel, "/virtio"))
		t = "virtio";
	else if (strncmp(name, "sd", 2) == 0)
		t = "scsi";
	snprintf(out, len, "%s", t);
}

/* The serial from SCSI VPD page 0x80: a 4-byte header, then the serial in ASCII. */
static void vpd_serial(int dfd, const char *name, char *out, size_t outlen)
{
	char buf[256];
	ssize_t n = dfd >= 0 ? read_raw_at(dfd, name, buf, sizeof(buf)) : -1;
	out[0] = '\0';
	if (n <= 4 || (unsigned char)buf[1] != 0x80)
		return;
	size_t len = ((size_t)(unsigned char)buf[2] << 8) | (unsigned char)buf[3];
	clean_text(buf + 4, len < (size_t)n - 4 ? len : (size_t)n - 4, out, outlen);
}

/* Which slot the disk (its device's real path dev_real) sits in: -1 when none. */
static long find_slot(struct scan *s, const char *dev_real)
{
	if (!s->slots_mapped) {
		for (size_t k = 0; k < s->nslots; k++) {
			hmap_index_put(&s->slot_by_real, s->slots[k].real, k);
			hmap_index_put(&s->slot_by_dev, s->slots[k].dev_real, k);
		}
		s->slots_mapped = true;
	}
	size_t n;
	char **names = list_dir(dev_real, &n);
	long found = -1;
	for (size_t i = 0; i < n && found < 0; i++) {
		if (strncmp(names[i], "enclosure_device:", 17) != 0)
			continue;
		char *r = link_real(dev_real, names[i]);
		found = hmap_index_get(&s->slot_by_real, r);
		free(r);
	}
	free_list(names, n);
	return found >= 0 ? found : hmap_index_get(&s->slot_by_dev, dev_real);
}

static void scan_disk(struct scan *s, const char *name)
{
	char buf[64];
	if (sysfs_not_a_disk(name))
		return;
	char *blk_real = link_real(s->block_real, name);
	int bfd = dir_open(blk_real);
	/* Partitions have no place here; hidden ones are NVMe multipath legs. */
	if (bfd < 0 || faccessat(bfd, "partition", F_OK, 0) == 0 ||
	    (attr_at(bfd, buf, sizeof(buf), "hidden") && strcmp(buf, "1") == 0)) {
		dir_close(bfd);
		free(blk_real);
		return;
	}
	char *dev_real = link_real(blk_real, "device");
	free(blk_real);
	int dfd = dir_open(dev_real);
	if (dfd < 0) {
		dir_close(bfd);
		free(dev_real);
		return; /* no device behind it: a virtual block device */
	}

	struct sysfs_disk d;
	disk_init(&d);
	d.present = true;
	snprintf(d.device, sizeof(d.device), "%s", name);
	snprintf(d.label, sizeof(d.label), "%s", name);
	bool scsi = strncmp(name, "sd", 2) == 0;
	char vendor[64] = "";
	if (scsi)
		attr_at(dfd, vendor, sizeof(vendor), "vendor");
	attr_at(dfd, d.model, sizeof(d.model), "model");
	if (!attr_at(bfd, d.wwid, sizeof(d.wwid), "wwid"))
		attr_at(dfd, d.wwid, sizeof(d.wwid), "wwid");
	if (!attr_at(dfd, d.serial, sizeof(d.serial), "serial") &&
	    !attr_at(bfd, d.serial, sizeof(d.serial), "serial"))
		vpd_serial(dfd, "vpd_pg80", d.serial, sizeof(d.serial));
	long long v;
	if (attr_at(bfd, buf, sizeof(buf), "size") &&
	    util_parse_ll(buf, 0, INT64_MAX / 512, &v) == 0)
		d.size = (uint64_t)v * 512;
	if (attr_at(bfd, buf, sizeof(buf), "queue/rotational"))
		d.rotational = strcmp(buf, "1") == 0;
	if (!attr_at(dfd, d.revision, sizeof(d.revision), "rev"))
		attr_at(dfd, d.revision, sizeof(d.revision), "firmware_rev");
	d.rpm = vpd_rpm(dfd, "vpd_pgb1");
	dir_close(bfd);
	dir_close(dfd);
	size_t rl = strlen(s->root);
	const char *rel = strncmp(dev_real, s->root, rl) == 0 ? dev_real + rl : dev_real;
	disk_interface(name, rel, vendor, d.interface, sizeof(d.interface));
	if (strcmp(vendor, "ATA") != 0)
		snprintf(d.vendor, sizeof(d.vendor), "%s", vendor);

	/* One disk reached by two paths (multipath) is listed once, by its first name. */
	void *seen = d.wwid[0] ? hmap_get(&s->disk_by_wwid, d.wwid, strlen(d.wwid)) : NULL;
	if (seen) {
		intptr_t at = (intptr_t)seen;
		if (at > 0)
			s->slots[at - 1].d.paths++;
		else
			s->sys_disks[-at - 1].paths++;
		goto out;
	}
	long k = find_slot(s, dev_real);
	if (k >= 0 && !s->slots[k].d.device[0]) {
		struct sysfs_disk *slot = &s->slots[k].d;
		d.chassis = slot->chassis;
		memcpy(d.slot, slot->slot, sizeof(d.slot));
		memcpy(d.label, slot->label, sizeof(d.label));
		d.slot_number = slot->slot_number;
		d.slot_dir = slot->slot_dir;
		d.faulted = slot->faulted;
		d.locate = slot->locate;
		*slot = d;
		if (d.wwid[0])
			hmap_put(&s->disk_by_wwid, d.wwid, strlen(d.wwid),
			         (void *)(intptr_t)(k + 1));
	} else {
		s->sys_disks = util_grow(s->sys_disks, &s->sys_cap, s->nsys, sizeof(*s->sys_disks));
		s->sys_disks[s->nsys++] = d;
		if (d.wwid[0])
			hmap_put(&s->disk_by_wwid, d.wwid, strlen(d.wwid),
			         (void *)(intptr_t)(-(intptr_t)s->nsys));
	}
out:
	free(dev_real);
}

/* --- ids */

static void disk_id(const struct sysfs_inventory *inv, struct sysfs_disk *d)
{
	/* Sanitised before it is cut: a t10 wwid is mostly padding. */
	char id[512] = "";
	if (d->wwid[0])
		snprintf(id, sizeof(id), "%s", d->wwid);
	sysfs_sanitize_id(id);
	if (!id[0] && d->serial[0]) {
		snprintf(id, sizeof(id), "%s", d->serial);
		sysfs_sanitize_id(id);
	}
	if (!id[0] && d->slot[0]) {
		snprintf(id, sizeof(id), "%s-%s", inv->chassis[d->chassis].id, d->slot);
		sysfs_sanitize_id(id);
	}
	if (!id[0]) {
		/* Nothing stable to go by: the kernel's name, the best there is. */
		snprintf(id, sizeof(id), "%s", d->device);
		sysfs_sanitize_id(id);
	}
	snprintf(d->id, sizeof(d->id), "%.*s", SYSFS_ID_MAX, id);
}

/* Ids repeat only where the hardware repeats itself (a dual-ported enclosure seen twice);
 * the later ones get -2, -3, ... ids is the id field of the first of n structs. */
static void unique_ids(char *ids, size_t stride, size_t n)
{
	struct hmap taken = {0};
	for (size_t i = 0; i < n; i++) {
		char *id = ids + i * stride, base[SYSFS_ID_MAX + 1];
		snprintf(base, sizeof(base), "%s", id);
		for (int suffix = 2; hmap_get(&taken, id, strlen(id)); suffix++)
			snprintf(id, SYSFS_ID_MAX + 1, "%.*s-%d", SYSFS_ID_MAX - 12, base, suffix);
		hmap_put(&taken, id, strlen(id), id);
	}
	hmap_clear(&taken, NULL);
}

int sysfs_scan(const char *root, struct sysfs_inventory *inv, bool leds)
{
	struct scan s;
	memset(&s, 0, sizeof(s));
	memset(inv, 0, sizeof(*inv));
	s.inv = inv;
	s.leds = leds;
	size_t rl = strlen(root);
	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	if (rl >= sizeof(s.root) - 64)
		return -1;
	memcpy(s.root, root, rl);
	s.root[rl] = '\0';

	scan_system(&s);

	char path[PATH_MAX];
	size_t n;
	spath(path, sizeof(path), "%s/sys/class/enclosure", s.root);
	char **names = list_dir(path, &n);
	for (size_t i = 0; i < n; i++)
		scan_enclosure(&s, names[i]);
	free_list(names, n);

	spath(path, sizeof(path), "%s/sys/block", s.root);
	names = list_dir(path, &n);
	s.block_real = real_of(path);
	for (size_t i = 0; i < n; i++)
		scan_disk(&s, names[i]);
	free_list(names, n);
	free(s.block_real);
	hmap_clear(&s.slot_by_real, NULL);
	hmap_clear(&s.slot_by_dev, NULL);
	hmap_clear(&s.disk_by_wwid, NULL);

	spath(path, sizeof(path), "%s/sys/class/ipmi", s.root);
	names = list_dir(path, &n);
	inv->have_ipmi = n > 0;
	free_list(names, n);

	/* The system's disks first, then each enclosure's slots. */
	inv->ndisks = s.nsys + s.nslots;
	inv->disks = xcalloc(inv->ndisks ? inv->ndisks : 1, sizeof(*inv->disks));
	if (s.nsys)
		memcpy(inv->disks, s.sys_disks, s.nsys * sizeof(*inv->disks));
	for (size_t i = 0; i < s.nslots; i++) {
		inv->disks[s.nsys + i] = s.slots[i].d;
		free(s.slots[i].real);
		free(s.slots[i].dev_real);
	}
	free(s.sys_disks);
	free(s.slots);

	/* A dual-ported enclosure shows up once per path, under the same id. */
	for (size_t i = 1; i < inv->nchassis; i++)
		for (size_t j = 1; j < inv->nchassis; j++)
			inv->chassis[i].paths +=
			    strcmp(inv->chassis[i].id, inv->chassis[j].id) == 0;
	unique_ids(inv->chassis[0].id, sizeof(inv->chassis[0]), inv->nchassis);
	for (size_t i = 0; i < inv->ndisks; i++) {
		struct sysfs_disk *d = &inv->disks[i];
		disk_id(inv, d);
		if (d->present)
			inv->chassis[d->chassis].ndisks++;
	}
	unique_ids(inv->disks[0].id, sizeof(inv->disks[0]), inv->ndisks);
	return 0;
}

void sysfs_inventory_free(struct sysfs_inventory *inv)
{
	if (!inv)
		return;
	for (size_t i = 0; i < inv->ndisks; i++)
		free(inv->disks[i].slot_dir);
	free(inv->disks);
	free(inv->chassis);
	memset(inv, 0, sizeof(*inv));
}
