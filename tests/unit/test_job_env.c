/* SPDX-License-Identifier: ISC */
/* The parsers of a job's environment (job_env.h): the mount holding a path (escapes, the
 * longest mount point, the target's device first), /proc/cpuinfo, the ARC's c_max, what
 * `zfs get -Hp` and `zpool status -P` print, and a loop device's stack on a synthetic /sys. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tap.h"
#include "bench/job_env.h"
#include "base/util.h"

static char *dumps(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT);
}

static void is_json(const json_t *got, const char *want, const char *name)
{
	json_t *w = json_loads(want, 0, NULL);
	int same = got && w && json_equal(got, w);
	ok(same, "%s", name);
	if (!same) {
		char *g = got ? dumps(got) : NULL;
		diag("got  %s", g ? g : "(null)");
		diag("want %s", want);
		free(g);
	}
	json_decref(w);
}

static void test_mounts(void)
{
	struct stat st;
	stat("/", &st);
	struct job_env_mount m;
	const char *mounts = "/dev/sda1 / ext4 rw,relatime 0 0\n"
	                     "proc /proc proc rw 0 0\n"
	                     "/dev/md0p1 /srv/my\\040bench xfs rw,noatime,attr2 0 0\n"
	                     "/dev/sdb1 /srv/my xfs rw 0 0\n";
	ok(job_env_find_mount(mounts, "/srv/my bench/job-1", st.st_dev, &m) == 0, "found");
	/* no mount point but "/" is on this device: the longest above the path wins */
	is_str(m.point, "/", "the one on the target's device first");
	ok(job_env_find_mount(mounts, "/srv/my bench/job-1", makedev(4095, 4095), &m) == 0,
	   "found on another device");
	is_str(m.point, "/srv/my bench", "the longest mount point, unescaped");
	is_str(m.source, "/dev/md0p1", "its source");
	is_str(m.type, "xfs", "its type");
	is_str(m.options, "rw,noatime,attr2", "its options");
	ok(job_env_find_mount(mounts, "/srv/mybench/x", makedev(4095, 4095), &m) == 0 &&
	       strcmp(m.point, "/") == 0,
	   "a mount point is a whole component");
	ok(job_env_find_mount("proc /proc proc rw 0 0\n", "/srv/x", st.st_dev, &m) < 0,
	   "none holds it");
	ok(job_env_find_mount("garbage\n\n", "/srv/x", st.st_dev, &m) < 0, "not a mounts file");
}

static void test_cpuinfo(void)
{
	json_t *o = json_object();
	ok(job_env_parse_cpuinfo("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n\n"
	                         "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6338\n",
	                         o) == 0,
	   "cpuinfo");
	is_json(o, "{\"cpu_model\": \"Intel(R) Xeon(R) Gold 6338\", \"cpus\": 2}", "model, count");
	json_decref(o);
	o = json_object();
	ok(job_env_parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n", o) == 0, "no model");
	is_json(o, "{\"cpus\": 1}", "the count alone (an ARM box names no model)");
	json_decref(o);
	o = json_object();
	ok(job_env_parse_cpuinfo("nothing here\n", o) < 0, "neither");
	json_decref(o);
}

static void test_arc(void)
{
	is_int(job_env_parse_arc_c_max("13 1 0x01 123 456 789 1011\n"
	                               "name                            type data\n"
	                               "c                               4    100\n"
	                               "c_min                           4    200\n"
	                               "c_max                           4    8589934592\n"),
	       8589934592LL, "c_max, not c or c_min");
	is_int(job_env_parse_arc_c_max("c 4 100\n"), -1, "no c_max");
}

static void test_zfs_get(void)
{
	json_t *z = json_object();
	is_int(job_env_parse_zfs_get("recordsize\t131072\nprimarycache\tmetadata\n"
	                             "secondarycache\t-\nrecord\t1\nused\t12345\n"
	                             "compression\tzstd-3\nlogbias\tthroughput\n",
	                             z),
	       4, "four properties taken");
	is_json(z,
	        "{\"recordsize\": 131072, \"primarycache\": \"metadata\", \"compression\": "
	        "\"zstd-3\", \"logbias\": \"throughput\"}",
	        "recordsize a number, '-' and what was not asked for left out");
	is_int(job_env_parse_zfs_get("recordsize\t128K\n", z), 0, "-p was not given: no number");
	json_decref(z);
}

static void test_zpool_status(void)
{
	json_t *v = job_env_parse_zpool_status(
	    "  pool: big\n state: DEGRADED\nconfig:\n\n"
	    "\tNAME                          STATE     READ WRITE CKSUM\n"
	    "\tbig                           DEGRADED     0     0     0\n"
	    "\t  raidz2-0                    DEGRADED     0     0     0\n"
	    "\t    /dev/sdc                  ONLINE       0     0     0\n"
	    "\t    replacing-1               DEGRADED     0     0     0\n"
	    "\t      /dev/sdd                OFFLINE      0     0     0\n"
	    "\t      /dev/sde                ONLINE       0     0     0\n"
	    "\t    /dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1  ONLINE  0 0 0\n"
	    "\t  /dev/nvme2n1                ONLINE       0     0     0\n"
	    "\tspecial\n"
	    "\t  mirror-2                    ONLINE       0     0     0\n"
	    "\t    /dev/nvme0n1              ONLINE       0     0     0\n"
	    "\t    /dev/nvme1n1              ONLINE       0     0     0\n"
	    "\tcache\n"
	    "\t  /dev/sdf                    ONLINE       0     0     0\n"
	    "\tspares\n"
	    "\t  /dev/sdg                    AVAIL\n"
	    "\n"
	    "errors: No known data errors\n");
	is_json(v,
	        "[{\"type\": \"raidz2\", \"devices\": [\"sdc\", \"sdd\", \"sde\", "
	        "\"wwn-0x5000c500a1b2c3d4-part1\"]},"
	        " {\"type\": \"disk\", \"devices\": [\"nvme2n1\"]},"
	        " {\"type\": \"mirror\", \"devices\": [\"nvme0n1\", \"nvme1n1\"], \"class\": "
	        "\"special\"},"
	        " {\"type\": \"disk\", \"devices\": [\"sdf\"], \"class\": \"cache\"},"
	        " {\"type\": \"disk\", \"devices\": [\"sdg\"], \"class\": \"spare\"}]",
	        "raidz2 with a replacing leg, a single disk, special, cache, spare");
	json_decref(v);
	ok(job_env_parse_zpool_status("cannot open 'x': no such pool\n") == NULL, "no config");
}

static char root[] = "/tmp/test_job_env.XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	util_mkdirs(path, 0755);
	*slash = '/';
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void test_devices(void)
{
	if (!mkdtemp(root)) {
		ok(0, "mkdtemp");
		return;
	}
	put("sys/devices/virtual/block/loop3/size", "2048\n");
	put("sys/devices/virtual/block/loop3/loop/backing_file", "/var/tmp/disk image.img\n");
	put("sys/devices/virtual/block/loop3/queue/scheduler", "[none] mq-deadline\n");
	put("sys/devices/virtual/block/loop3/queue/rotational", "1\n");
	char dir[512], link[600];
	snprintf(dir, sizeof(dir), "%s/sys/dev/block", root);
	util_mkdirs(dir, 0755);
	snprintf(link, sizeof(link), "%s/7:3", dir);
	ok(symlink("../../devices/virtual/block/loop3", link) == 0, "a fake /sys");
	char why[256] = "";
	json_t *d = job_env_devices(root, makedev(7, 3), why, sizeof(why));
	is_json(d,
	        "[{\"name\": \"loop3\", \"kind\": \"loop\", \"size_bytes\": 1048576,"
	        " \"backing_file\": \"/var/tmp/disk image.img\", \"scheduler\": \"none\","
	        " \"rotational\": true, \"below\": []}]",
	        "a loop device and its backing file");
	json_decref(d);
	ok(job_env_devices(root, makedev(8, 1), why, sizeof(why)) == NULL &&
	       strstr(why, "no block device behind the target (device 8:1"),
	   "no block device: why says so");
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("cannot remove %s", root);
}

static void test_worker(void)
{
	char *t = job_env_set_worker("{\"system\": {\"kernel\": \"6.1\"}}", "spindle-worker 1.2");
	json_t *j = json_loads(t, 0, NULL);
	is_json(j,
	        "{\"system\": {\"kernel\": \"6.1\", \"worker_version\": \"spindle-worker 1.2\"}}",
	        "the worker's version joins the system");
	json_decref(j);
	free(t);
	ok(job_env_set_worker(NULL, "w") == NULL, "no environment: nothing");
	ok(job_env_set_worker("[]", "w") == NULL, "not an object: nothing");
	ok(job_env_set_worker("{}", NULL) == NULL, "no worker: nothing");
}

int main(void)
{
	test_mounts();
	test_cpuinfo();
	test_arc();
	test_zfs_get();
	test_zpool_status();
	test_devices();
	test_worker();
	return done_testing();
}
