/* SPDX-License-Identifier: ISC */
/* The /sys parsers: sysfs_scan() reads only from paths, so the harness builds a small fake
 * sysfs once (the DMI ids, an SES enclosure with two slots, a SAS disk seated in the first
 * and an NVMe disk, linked as the kernel links them) and writes the input into its
 * attribute files before every scan. The input is up to NATTRS file contents separated by
 * the byte 0x1e (ASCII record separator), in the order of attrs[] below, then a slot name
 * and a block device name, each made an entry of its own (a link to an existing one).
 *
 * What the inventory promises: every chassis and disk id is 1 to SYSFS_ID_MAX characters
 * of [A-Za-z0-9._-], unique among its kind; the text read from attributes is printable
 * ASCII; a disk's chassis exists; flags are 1, 0 or -1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "hardware/sysfs.h"
#include "base/util.h"

#define ENCDEV                                                                                     \
	"sys/devices/pci0000:00/0000:00:03.0/0000:02:00.0/host0/port-0:0/expander-0:0/"            \
	"port-0:0:0/end_device-0:0:0/target0:0:0/0:0:0:0"
#define ENC ENCDEV "/enclosure/0:0:0:0"
#define SDADEV                                                                                     \
	"sys/devices/pci0000:00/0000:00:03.0/0000:02:00.0/host0/port-0:0/expander-0:0/"            \
	"port-0:0:1/end_device-0:0:1/target0:0:1/0:0:1:0"
#define SDA   SDADEV "/block/sda"
#define NVDEV "sys/devices/pci0000:00/0000:00:1d.0/0000:3b:00.0/nvme/nvme0"
#define NVME  NVDEV "/nvme0n1"
#define DMI   "sys/devices/virtual/dmi/id"

/* The attribute files the input fills, in its order. */
static const char *const attrs[] = {
    DMI "/sys_vendor",       /* 0 */
    DMI "/product_name",     /* 1 */
    DMI "/product_serial",   /* 2 */
    ENC "/id",               /* 3 */
    ENCDEV "/vpd_pg80",      /* 4 */
    ENCDEV "/vendor",        /* 5 */
    ENC "/Slot 00/type",     /* 6 */
    ENC "/Slot 00/slot",     /* 7 */
    ENC "/Slot 00/status",   /* 8 */
    ENC "/Slot 00/locate",   /* 9 */
    ENC "/Slot 01/slot",     /* 10 */
    ENC "/Slot 01/status",   /* 11 */
    SDADEV "/vendor",        /* 12 */
    SDADEV "/model",         /* 13 */
    SDADEV "/wwid",          /* 14 */
    SDADEV "/vpd_pg80",      /* 15 */
    SDA "/size",             /* 16 */
    SDA "/queue/rotational", /* 17 */
    NVME "/wwid",            /* 18 */
    NVDEV "/serial",         /* 19 */
    NVDEV "/model",          /* 20 */
};
#define NATTRS (sizeof(attrs) / sizeof(attrs[0]))

/* Fixed files of the tree: path, content. */
static const char *const fixed[][2] = {
    {DMI "/board_vendor", "Supermicro"},
    {ENCDEV "/model", "SC846-P"},
    {ENCDEV "/wwid", "naa.5003048001234567"},
    {ENC "/components", "2"},
    {ENC "/power/control", "auto"},
    {ENC "/Slot 00/fault", "0"},
    {ENC "/Slot 01/type", "array device"},
    {ENC "/Slot 01/locate", "0"},
    {ENC "/Slot 01/fault", "1"},
    {SDA "/dev", "8:0"},
    {NVME "/size", "2000409264"},
    {NVME "/queue/rotational", "0"},
    {"sys/devices/platform/ipmi_si.0/ipmi/ipmi0/dev", "239:0"},
};

/* Links of the tree: where, to what (both under the root; made relative, as sysfs's are). */
static const char *const links[][2] = {
    {"sys/class/dmi/id", DMI},
    {ENC "/device", ENCDEV},
    {"sys/class/enclosure/0:0:0:0", ENC},
    {SDA "/device", SDADEV},
    {"sys/block/sda", SDA},
    {SDADEV "/enclosure_device:Slot 00", ENC "/Slot 00"},
    {ENC "/Slot 00/device", SDADEV},
    {NVME "/device", NVDEV},
    {"sys/block/nvme0n1", NVME},
    {"sys/class/ipmi/ipmi0", "sys/devices/platform/ipmi_si.0/ipmi/ipmi0"},
};

static char root[PATH_MAX];

static char *at(const char *rel)
{
	return xasprintf("%s/%s", root, rel);
}

static void mkdirs_for(const char *rel)
{
	char *path = at(rel);
	*strrchr(path, '/') = '\0';
	fuzz_assert(util_mkdirs(path, 0755) == 0);
	free(path);
}

static void put(const char *rel, const char *data, size_t len)
{
	char *path = at(rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fuzz_assert(fd >= 0);
	fuzz_assert(write(fd, data, len) == (ssize_t)len);
	close(fd);
	free(path);
}

/* A relative link at rel to target, as sysfs makes them. */
static int link_to(const char *rel, const char *target)
{
	size_t common = 0;
	for (size_t i = 0; rel[i] && rel[i] == target[i]; i++)
		if (rel[i] == '/')
			common = i + 1;
	char up[PATH_MAX] = "";
	for (const char *p = rel + common; (p = strchr(p, '/')); p++)
		strcat(up, "../");
	char *dest = xasprintf("%s%s", up, target + common);
	char *path = at(rel);
	int rc = symlink(dest, path);
	free(dest);
	free(path);
	return rc;
}

static void remove_tree(void)
{
	if (!root[0])
		return;
	char *cmd = xasprintf("rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_sysfs: could not remove %s\n", root);
	free(cmd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/spindle-fuzz-sysfs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fuzz_assert(mkdtemp(root) != NULL);
	atexit(remove_tree);
	for (size_t i = 0; i < NATTRS; i++) {
		mkdirs_for(attrs[i]);
		put(attrs[i], "", 0);
	}
	for (size_t i = 0; i < nitems(fixed); i++) {
		mkdirs_for(fixed[i][0]);
		put(fixed[i][0], fixed[i][1], strlen(fixed[i][1]));
	}
	for (size_t i = 0; i < nitems(links); i++) {
		mkdirs_for(links[i][0]);
		fuzz_assert(link_to(links[i][0], links[i][1]) == 0);
	}
	return 0;
}

/* The next part of the input (not NUL-terminated), or "" once it is used up. */
static const char *next_part(const char **p, const char *end, size_t *len)
{
	if (*p >= end) {
		*len = 0;
		return "";
	}
	const char *rs = memchr(*p, 0x1e, (size_t)(end - *p));
	const char *part = *p, *stop = rs ? rs : end;
	*len = (size_t)(stop - part);
	*p = rs ? rs + 1 : end;
	return part;
}

/* An entry named by the input in dir, linked to target; NULL when the name cannot be one
 * (or is taken). For free(). */
static char *entry(const char *dir, const char *name, size_t len, const char *target,
                   bool kernel_name)
{
	if (len == 0 || len > 200 || memchr(name, '\0', len) || memchr(name, '/', len))
		return NULL;
	/* block device names are the kernel's own: [a-z0-9] */
	for (size_t i = 0; kernel_name && i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
			return NULL;
	char *rel = xasprintf("%s/%.*s", dir, (int)len, name);
	const char *base = strrchr(rel, '/') + 1;
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || link_to(rel, target) < 0) {
		free(rel);
		return NULL;
	}
	return rel;
}

/* Removes an entry made by entry() and frees its name. */
static void unmake(char *rel)
{
	if (!rel)
		return;
	char *path = at(rel);
	fuzz_assert(unlink(path) == 0);
	free(path);
	free(rel);
}

static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > SYSFS_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s >= 0x7f)
			return false;
	return true;
}

static void check(const struct sysfs_inventory *inv)
{
	fuzz_assert(inv->nchassis >= 1 && strcmp(inv->chassis[0].id, "system") == 0);
	for (size_t i = 0; i < inv->nchassis; i++) {
		const struct sysfs_chassis *c = &inv->chassis[i];
		fuzz_assert(id_ok(c->id));
		for (size_t k = 0; k < i; k++)
			fuzz_assert(strcmp(inv->chassis[k].id, c->id) != 0);
		fuzz_assert(printable(c->vendor) && printable(c->model) && printable(c->serial));
		fuzz_assert(c->ndisks >= 0 && c->ndisks <= (int)inv->ndisks);
	}
	for (size_t i = 0; i < inv->ndisks; i++) {
		const struct sysfs_disk *d = &inv->disks[i];
		fuzz_assert(id_ok(d->id));
		for (size_t k = 0; k < i; k++)
			fuzz_assert(strcmp(inv->disks[k].id, d->id) != 0);
		fuzz_assert(d->chassis < inv->nchassis);
		fuzz_assert(printable(d->vendor) && printable(d->model) && printable(d->serial) &&
		            printable(d->wwid));
		fuzz_assert(d->rotational >= -1 && d->rotational <= 1);
		fuzz_assert(d->faulted >= -1 && d->faulted <= 1);
		fuzz_assert(d->locate >= -1 && d->locate <= 1);
		fuzz_assert(d->size % 512 == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	size_t len;
	for (size_t i = 0; i < NATTRS; i++) {
		const char *part = next_part(&p, end, &len);
		put(attrs[i], part, len);
	}
	const char *name = next_part(&p, end, &len);
	char *slot = entry(ENC, name, len, ENC "/Slot 01", false);
	name = next_part(&p, end, &len);
	char *disk = entry("sys/block", name, len, NVME, true);

	struct sysfs_inventory inv;
	fuzz_assert(sysfs_scan(root, &inv, true) == 0);
	check(&inv);
	sysfs_inventory_free(&inv);

	char *path = at(ENC "/Slot 00/locate");
	int flag = sysfs_read_flag(path);
	fuzz_assert(flag >= -1 && flag <= 1);
	free(path);
	path = at(SDA "/size");
	fuzz_assert(sysfs_read_ll(path) >= -1);
	free(path);

	/* the id sanitiser on its own, on the raw input */
	char *text = xstrndup((const char *)data, size);
	sysfs_sanitize_id(text);
	fuzz_assert(!text[0] || id_ok(text));
	fuzz_assert(text[0] != '-' && text[0] != '.');
	free(text);

	unmake(slot);
	unmake(disk);
	return 0;
}
