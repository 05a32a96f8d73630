/* SPDX-License-Identifier: ISC */
/* server/analytics/iohist.c keeps the helper's counts only for the disks the collector
 * counts: a device the helper names and the collector does not is dropped, a disk that
 * leaves the collector's list is forgotten (its counts with it), and one that comes back
 * counts again. */
#include <string.h>

#include "tap.h"
#include "analytics/iohist.h"

static int feed(const char *line)
{
	char why[256] = "";
	int rc = iohist_feed_line(line, why, sizeof(why));
	if (rc != 0)
		diag("'%s': %s", line, why);
	return rc;
}

static uint64_t reads_in(const char *name, unsigned bucket)
{
	const struct iohist_disk *d = iohist_get(name);
	return d ? iohist_counts(d, IOHIST_LATENCY, 0)[bucket] : 0;
}

int main(void)
{
	struct disk_sample two[2], one[1];
	memset(two, 0, sizeof(two));
	memset(one, 0, sizeof(one));
	strcpy(two[0].name, "sda");
	strcpy(two[1].name, "nvme0n1");
	strcpy(one[0].name, "nvme0n1");

	iohist_init(NULL, NULL);
	ok(feed("spindle-iolat 1 latency=106 size=18 offset=64") == 0, "the hello");
	ok(feed("ok 1") == 0 && feed("T 1000 1000") == 0, "ok, a second's start");
	ok(feed("D sda r L 3:5") == 0, "a line before the collector said which disks it counts");
	iohist_take(two, 2);
	ok(!iohist_get("sda"), "is dropped: no disk is known yet");

	ok(feed("E") == 0 && feed("T 2000 1000") == 0, "the next second");
	ok(feed("D sda r L 3:5") == 0 && feed("D nvme0n1 r L 4:2") == 0, "the two disks' lines");
	ok(feed("D sdz r L 3:9") == 0 && feed("D x123 r L 1:1") == 0,
	   "devices the collector does not count are no fault of the helper's");
	iohist_take(two, 2);
	ok(reads_in("sda", 3) == 5 && reads_in("nvme0n1", 4) == 2, "the known disks count");
	ok(!iohist_get("sdz") && !iohist_get("x123"), "the others are not kept");

	ok(feed("E") == 0 && feed("T 3000 1000") == 0, "the next second");
	ok(feed("D sda r L 3:7") == 0, "sda's line");
	iohist_take(one, 1);
	ok(!iohist_get("sda"), "sda left the collector's disks: its second is dropped with it");
	ok(!iohist_get("nvme0n1"), "nvme0n1 had no completions");

	ok(feed("E") == 0 && feed("T 4000 1000") == 0, "the next second");
	ok(feed("D sda r L 3:1") == 0 && feed("D nvme0n1 r L 4:3") == 0, "both again");
	iohist_take(two, 2);
	ok(!iohist_get("sda"), "sda's line came while it was not counted");
	ok(reads_in("nvme0n1", 4) == 3, "nvme0n1's second alone");

	ok(feed("E") == 0 && feed("T 5000 1000") == 0, "the next second");
	ok(feed("D sda r L 3:4") == 0, "sda is back");
	iohist_take(two, 2);
	ok(reads_in("sda", 3) == 4, "and counts from nothing");
	ok(!iohist_get("nvme0n1"), "the second taken before is gone");

	iohist_take(NULL, 0);
	ok(!iohist_get("sda") && !iohist_get("nvme0n1"), "no disks: nothing kept");
	iohist_shutdown();
	return done_testing();
}
