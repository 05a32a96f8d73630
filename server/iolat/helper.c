/* SPDX-License-Identifier: ISC */
/* spindle-iolat: holds the block I/O histograms' BPF program (iolat.bpf.c) for spindled,
 * which must not hold CAP_BPF and CAP_PERFMON itself (they let a program read any kernel
 * memory). spindle-iolat.socket starts it once per connection (Accept=yes), the connection
 * as stdin and stdout; it runs while spindled stays connected, which spindled does only
 * while a dataset needs it. The program is loaded when it starts and gone when it exits.
 *
 * It reads nothing from the client but the end of the connection. It writes lines:
 *   spindle-iolat VERSION latency=N size=N offset=N   first: the protocol and the buckets
 *   ok DEVICES                                        the program is attached
 *   error REASON                                      it could not be; the helper exits
 * then, every second, at the half second of the wall clock:
 *   T UNIX_MS INTERVAL_MS                             a second begins
 *   D NAME r|w [L i:n ...] [S i:n ...] [O i:n ...] [U n]
 *                                                     a device and direction's completions
 *                                                     in the interval: the non-empty latency,
 *                                                     size and offset buckets (iolat.h), and
 *                                                     those the kernel gave no start time
 *   E                                                 the second is complete
 * A device without completions in the interval has no line. The devices are every block
 * device under /sys/block, looked at again every 10 s; spindled keeps those it counts.
 *
 * After attaching it gives up every capability: reading the maps needs only their file
 * descriptors. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iolat.h"
#include "iolat.skel.h"

#define SYS_BLOCK      "/sys/block"
#define NAME_MAX_LEN   32
#define RESCAN_SECONDS 10
#define MIN_SLOTS      64
#define SPARE_SLOTS    32

struct dev {
	char name[NAME_MAX_LEN];
	__u32 devt;
	__u64 sectors;
	int slot; /* -1: none */
	bool seen;
	bool mapped; /* devs holds it, with map_sectors */
	__u64 map_sectors;
	struct iolat_hist prev[IOLAT_DIRS]; /* the counts summed over CPUs at the last read */
};

static struct {
	struct iolat *skel;
	int devs_fd, hists_fd;
	int ncpus;
	struct iolat_hist *percpu; /* a value for every possible CPU */
	struct dev *dev;
	size_t ndev, cap;
	bool *slot_used;
	int nslots;
} h;

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int fail(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say("error %s", msg);
	fprintf(stderr, "spindle-iolat: %s\n", msg);
	return 1;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static bool read_line(const char *dir, const char *name, const char *file, char *out, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool ok = fgets(out, (int)len, f) != NULL;
	fclose(f);
	return ok;
}

/* A name the line protocol can carry as it is: the kernel's names are all such. */
static bool plain_name(const char *s)
{
	if (!*s || strlen(s) >= NAME_MAX_LEN)
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '-' && *s != '_' && *s != '.' && *s != ':')
			return false;
	return true;
}

static struct dev *dev_find(const char *name)
{
	for (size_t i = 0; i < h.ndev; i++)
		if (strcmp(h.dev[i].name, name) == 0)
			return &h.dev[i];
	return NULL;
}

/* Every block device now, with its dev_t and capacity; the new get no slot yet. */
static int scan(void)
{
	DIR *d = opendir(SYS_BLOCK);
	if (!d)
		return -1;
	for (size_t i = 0; i < h.ndev; i++)
		h.dev[i].seen = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !plain_name(e->d_name))
			continue;
		char line[64];
		unsigned maj, min;
		unsigned long long sectors = 0;
		if (!read_line(SYS_BLOCK, e->d_name, "dev", line, sizeof(line)) ||
		    sscanf(line, "%u:%u", &maj, &min) != 2)
			continue;
		if (read_line(SYS_BLOCK, e->d_name, "size", line, sizeof(line)))
			sectors = strtoull(line, NULL, 10);
		struct dev *v = dev_find(e->d_name);
		if (v && v->devt != IOLAT_DEV(maj, min))
			v->seen = false, v = NULL; /* the name went to another device */
		if (!v) {
			if (h.ndev == h.cap) {
				h.cap = h.cap ? h.cap * 2 : 64;
				h.dev = realloc(h.dev, h.cap * sizeof(*h.dev));
				if (!h.dev)
					abort();
			}
			v = &h.dev[h.ndev++];
			memset(v, 0, sizeof(*v));
			snprintf(v->name, sizeof(v->name), "%s", e->d_name);
			v->devt = IOLAT_DEV(maj, min);
			v->slot = -1;
		}
		v->sectors = sectors;
		v->seen = true;
	}
	closedir(d);
	return 0;
}

/* The map follows the scan: gone devices leave it (their slot is free again), new ones
 * get a slot with its counts zeroed, a resized one its new capacity. -1 when the slots are
 * all taken (the helper exits; spindled's next connection sizes them anew). */
static int sync_devs(void)
{
	size_t keep = 0;
	for (size_t i = 0; i < h.ndev; i++) {
		struct dev *v = &h.dev[i];
		if (!v->seen) {
			if (v->slot >= 0) {
				bpf_map_delete_elem(h.devs_fd, &v->devt);
				h.slot_used[v->slot] = false;
			}
			continue;
		}
		h.dev[keep++] = *v;
	}
	h.ndev = keep;
	for (size_t i = 0; i < h.ndev; i++) {
		struct dev *v = &h.dev[i];
		if (v->slot < 0) {
			int s = 0;
			while (s < h.nslots && h.slot_used[s])
				s++;
			if (s == h.nslots)
				return -1;
			memset(h.percpu, 0, sizeof(*h.percpu) * (size_t)h.ncpus);
			for (__u32 dir = 0; dir < IOLAT_DIRS; dir++) {
				__u32 key = (__u32)s * IOLAT_DIRS + dir;
				if (bpf_map_update_elem(h.hists_fd, &key, h.percpu, BPF_ANY) < 0)
					return -1;
			}
			memset(v->prev, 0, sizeof(v->prev));
			v->slot = s;
			h.slot_used[s] = true;
		}
		if (v->mapped && v->map_sectors == v->sectors)
			continue;
		struct iolat_dev val = {.slot = (__u32)v->slot, .sectors = v->sectors};
		if (bpf_map_update_elem(h.devs_fd, &v->devt, &val, BPF_ANY) < 0)
			return -1;
		v->mapped = true;
		v->map_sectors = v->sectors;
	}
	return 0;
}

static void drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (syscall(SYS_capset, &hdr, data) < 0)
		fprintf(stderr, "spindle-iolat: cannot give up capabilities: %s\n",
		        strerror(errno));
}

static int load(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return fail(
		    "the kernel has no BTF (/sys/kernel/btf/vmlinux): the program cannot be "
		    "fitted to it");
	if (scan() < 0)
		return fail("cannot read %s: %s", SYS_BLOCK, strerror(errno));
	h.nslots = (int)((h.ndev + SPARE_SLOTS + MIN_SLOTS - 1) / MIN_SLOTS * MIN_SLOTS);
	h.slot_used = calloc((size_t)h.nslots, sizeof(*h.slot_used));
	h.ncpus = libbpf_num_possible_cpus();
	if (h.ncpus <= 0 || !h.slot_used)
		return fail("cannot count the CPUs");
	h.percpu = calloc((size_t)h.ncpus, sizeof(*h.percpu));
	if (!h.percpu)
		return fail("out of memory");

	h.skel = iolat__open();
	if (!h.skel)
		return fail("cannot open the BPF object: %s", strerror(errno));
	bpf_map__set_max_entries(h.skel->maps.devs, (__u32)h.nslots);
	bpf_map__set_max_entries(h.skel->maps.hists, (__u32)h.nslots * IOLAT_DIRS);
	int err = iolat__load(h.skel);
	if (err)
		return fail("the kernel refused the BPF program (%s)%s", strerror(-err),
		            -err == EPERM ? ": spindle-iolat needs CAP_BPF and CAP_PERFMON" : "");
	h.devs_fd = bpf_map__fd(h.skel->maps.devs);
	h.hists_fd = bpf_map__fd(h.skel->maps.hists);
	if (sync_devs() < 0)
		return fail("cannot fill the device map: %s", strerror(errno));
	err = iolat__attach(h.skel);
	if (err)
		return fail("cannot attach to block_rq_complete (%s)", strerror(-err));
	drop_capabilities();
	say("ok %zu", h.ndev);
	return 0;
}

static void put_buckets(char tag, const __u32 *cur, const __u32 *prev, int n)
{
	bool first = true;
	for (int i = 0; i < n; i++) {
		__u32 d = cur[i] - prev[i];
		if (!d)
			continue;
		if (first)
			printf(" %c", tag);
		first = false;
		printf(" %d:%" PRIu32, i, d);
	}
}

/* One second: each device and direction's counts summed over the CPUs, less the last. */
static void report(int64_t unix_ms, int64_t interval_ms)
{
	printf("T %" PRId64 " %" PRId64 "\n", unix_ms, interval_ms);
	for (size_t i = 0; i < h.ndev; i++) {
		struct dev *v = &h.dev[i];
		if (v->slot < 0)
			continue;
		for (__u32 dir = 0; dir < IOLAT_DIRS; dir++) {
			__u32 key = (__u32)v->slot * IOLAT_DIRS + dir;
			if (bpf_map_lookup_elem(h.hists_fd, &key, h.percpu) < 0)
				continue;
			struct iolat_hist cur = h.percpu[0];
			for (int c = 1; c < h.ncpus; c++) {
				const __u32 *src = (const __u32 *)&h.percpu[c];
				__u32 *dst = (__u32 *)&cur;
				for (size_t w = 0; w < sizeof(cur) / sizeof(__u32); w++)
					dst[w] += src[w];
			}
			struct iolat_hist *p = &v->prev[dir];
			if (memcmp(&cur, p, sizeof(cur)) == 0)
				continue;
			printf("D %s %c", v->name, dir ? 'w' : 'r');
			put_buckets('L', cur.lat, p->lat, IOLAT_LAT_BUCKETS);
			put_buckets('S', cur.size, p->size, IOLAT_SIZE_BUCKETS);
			put_buckets('O', cur.off, p->off, IOLAT_OFF_BUCKETS);
			if (cur.untimed != p->untimed)
				printf(" U %" PRIu32, cur.untimed - p->untimed);
			putchar('\n');
			*p = cur;
		}
	}
	puts("E");
}

static int64_t now_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until the client goes (stdin ends or stdout fails): a report at every half second. */
static int serve(void)
{
	int64_t last = now_ms(CLOCK_MONOTONIC), next_scan = last + RESCAN_SECONDS * 1000;
	for (;;) {
		int64_t wall = now_ms(CLOCK_REALTIME);
		int64_t due = (wall + 500) / 1000 * 1000 + 500; /* the next x.500 */
		if (due - wall < 100)
			due += 1000; /* just after one: the interval is a whole second */
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int wait = (int)(due - wall);
		int rc = poll(&p, 1, wait);
		if (rc < 0 && errno != EINTR)
			return 1;
		if (rc > 0) {
			char buf[512];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n <= 0)
				return 0; /* the client went */
			continue;         /* it said something: nothing is asked of it */
		}
		if (now_ms(CLOCK_REALTIME) < due)
			continue;
		int64_t mono = now_ms(CLOCK_MONOTONIC);
		if (mono >= next_scan) {
			next_scan = mono + RESCAN_SECONDS * 1000;
			if (scan() == 0 && sync_devs() < 0)
				return fail("more block devices than the %d slots sized at start; "
				            "reconnect to size them anew",
				            h.nslots);
		}
		report(due, mono - last);
		last = mono;
		if (fflush(stdout) != 0 || ferror(stdout))
			return 0;
	}
}

static void usage(FILE *to)
{
	fprintf(
	    to,
	    "Usage: spindle-iolat\n"
	    "Block I/O latency, size and offset histograms by eBPF, for spindled: started by\n"
	    "spindle-iolat.socket with the connection as stdin and stdout. Needs CAP_BPF and\n"
	    "CAP_PERFMON (or CAP_SYS_ADMIN) and the kernel's BTF; gives up every capability once\n"
	    "the program is attached.\n"
	    "  --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	libbpf_set_print(libbpf_log);
	say("spindle-iolat %d latency=%d size=%d offset=%d", IOLAT_PROTO_VERSION, IOLAT_LAT_BUCKETS,
	    IOLAT_SIZE_BUCKETS, IOLAT_OFF_BUCKETS);
	if (load())
		return 1;
	int rc = serve();
	iolat__destroy(h.skel);
	return rc;
}
