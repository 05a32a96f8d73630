/* SPDX-License-Identifier: ISC */
/* The filesystems and pools of capacity.h, refreshed on a helper thread of our own (a
 * statvfs stuck on a dying disk must not hold up logins on the shared helpers). */
#define _GNU_SOURCE
#include "capacity.h"
#include "base/log.h"
#include "base/util.h"
#include "base/workq.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <event2/event.h>

static struct {
	struct event *timer;
	struct workq *wq;
	char *mounts[2]; /* <proc-root>/proc/self/mounts, <proc-root>/proc/mounts */
	char *zfs_dir;   /* <proc-root>/proc/spl/kstat/zfs */
	bool in_flight;
	struct capacity *latest;
} cap;

/* Pseudo and virtual filesystems (no data of their own), and those whose statvfs goes over
 * the network or to a user-space daemon and may hang: never listed. */
static const char *const skipped_types[] = {
    "proc",       "sysfs",     "tmpfs",     "devtmpfs",    "devpts",     "overlay", "squashfs",
    "autofs",     "mqueue",    "debugfs",   "tracefs",     "securityfs", "pstore",  "bpf",
    "configfs",   "fusectl",   "hugetlbfs", "binfmt_misc", "nsfs",       "ramfs",   "efivarfs",
    "rpc_pipefs", "selinuxfs", "nfsd",      "rootfs",      "cgroup",     "cgroup2", "fuse",
    "nfs",        "nfs4",      "cifs",      "smb3",        "smbfs",      "ncpfs",   "ceph",
    "glusterfs",  "9p",        "afs",       "lustre",      "devfs",      "usbfs",   "iso9660",
};

bool capacity_type_listed(const char *type)
{
	if (!*type || strncmp(type, "fuse.", 5) == 0) /* fuse.sshfs and the like */
		return false;
	for (size_t i = 0; i < nitems(skipped_types); i++)
		if (strcmp(type, skipped_types[i]) == 0)
			return false;
	return true;
}

/* The kernel writes a space, tab, newline and backslash of a mount's fields as \040,
 * \011, \012 and \134. In place. */
void capacity_unescape(char *s)
{
	char *out = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

static void capacity_free(struct capacity *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nfs; i++) {
		free(c->fs[i].name);
		free(c->fs[i].type);
	}
	for (size_t i = 0; i < c->npools; i++) {
		free(c->pools[i].name);
		free(c->pools[i].state);
	}
	free(c->fs);
	free(c->pools);
	free(c);
}

/* ---- the helper thread's part: no logging, no loop state */

static bool seen(char **sources, size_t n, const char *src)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(sources[i], src) == 0)
			return true;
	return false;
}

static void read_filesystems(struct capacity *c)
{
	char *text = util_read_file(cap.mounts[0], NULL);
	if (!text)
		text = util_read_file(cap.mounts[1], NULL);
	if (!text)
		return;
	char *sources[CAPACITY_MAX_FS];
	size_t nsources = 0;
	c->fs = xcalloc(CAPACITY_MAX_FS, sizeof(*c->fs));
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && c->nfs < CAPACITY_MAX_FS;
	     line = strtok_r(NULL, "\n", &save)) {
		char *fsave = NULL;
		char *src = strtok_r(line, " \t", &fsave);
		char *dir = strtok_r(NULL, " \t", &fsave);
		char *type = strtok_r(NULL, " \t", &fsave);
		if (!src || !dir || !type || !capacity_type_listed(type))
			continue;
		capacity_unescape(src);
		capacity_unescape(dir);
		if (seen(sources, nsources, src)) /* a bind mount of a device listed already */
			continue;
		/* Mount points only: a bind-mounted file (a container's /etc/hosts) is none. */
		struct stat st;
		struct statvfs sv;
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || statvfs(dir, &sv) < 0 ||
		    sv.f_blocks == 0)
			continue;
		struct capacity_fs *f = &c->fs[c->nfs++];
		f->name = xstrdup(dir);
		f->type = xstrdup(type);
		f->size = (uint64_t)sv.f_blocks * sv.f_frsize;
		f->used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
		f->avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		sources[nsources++] = src;
	}
	free(text);
}

static int pool_cmp(const void *a, const void *b)
{
	return strcmp(((const struct capacity_pool *)a)->name,
	              ((const struct capacity_pool *)b)->name);
}

/* Each directory of the ZFS kstats that has a state file is a pool (arcstats and the other
 * module-wide kstats are files). */
static void read_pools(struct capacity *c)
{
	DIR *d = opendir(cap.zfs_dir);
	if (!d)
		return;
	c->pools = xcalloc(CAPACITY_MAX_POOLS, sizeof(*c->pools));
	struct dirent *e;
	while ((e = readdir(d)) && c->npools < CAPACITY_MAX_POOLS) {
		if (e->d_name[0] == '.')
			continue;
		char *path = xasprintf("%s/%s/state", cap.zfs_dir, e->d_name);
		char *state = util_read_file(path, NULL);
		free(path);
		if (!state)
			continue;
		state[strcspn(state, "\r\n")] = '\0';
		struct capacity_pool *p = &c->pools[c->npools++];
		p->name = xstrdup(e->d_name);
		p->state = state;
	}
	closedir(d);
	qsort(c->pools, c->npools, sizeof(*c->pools), pool_cmp);
}

static void refresh_work(void *arg)
{
	struct capacity *c = arg;
	read_filesystems(c);
	read_pools(c);
}

/* ---- the loop's part */

static void refresh_done(void *arg)
{
	capacity_free(cap.latest);
	cap.latest = arg;
	cap.in_flight = false;
}

static void refresh(evutil_socket_t fd, short what, void *arg)
{
	if (cap.in_flight)
		return; /* the last one is still at work: maybe a statvfs that hangs */
	struct capacity *c = xcalloc(1, sizeof(*c));
	cap.in_flight = true;
	if (workq_submit(cap.wq, refresh_work, refresh_done, c) < 0) {
		cap.in_flight = false;
		capacity_free(c);
	}
}

const struct capacity *capacity_latest(void)
{
	return cap.latest;
}

int capacity_init(struct event_base *base, const char *proc_root)
{
	size_t n = strlen(proc_root);
	while (n > 0 && proc_root[n - 1] == '/')
		n--;
	cap.mounts[0] = xasprintf("%.*s/proc/self/mounts", (int)n, proc_root);
	cap.mounts[1] = xasprintf("%.*s/proc/mounts", (int)n, proc_root);
	cap.zfs_dir = xasprintf("%.*s/proc/spl/kstat/zfs", (int)n, proc_root);
	cap.wq = workq_new(base, 1);
	if (!cap.wq)
		return -1;
	cap.timer = event_new(base, -1, EV_PERSIST, refresh, NULL);
	struct timeval tv = {CAPACITY_PERIOD_S, 0};
	if (!cap.timer || event_add(cap.timer, &tv) < 0)
		return -1;
	refresh(-1, 0, NULL);
	return 0;
}

void capacity_shutdown(void)
{
	if (cap.timer)
		event_free(cap.timer);
	if (cap.wq)
		workq_free(cap.wq); /* runs a refresh's done callback still due */
	capacity_free(cap.latest);
	for (int i = 0; i < 2; i++)
		free(cap.mounts[i]);
	free(cap.zfs_dir);
	memset(&cap, 0, sizeof(cap));
}
