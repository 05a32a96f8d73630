/* SPDX-License-Identifier: ISC */
/* The kernel's uevents (server/hardware/uevent.c): which messages, as the kernel sends
 * them, make the inventory look again, and that nothing else does. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "hardware/uevent.h"
#include "base/util.h"

/* A message as the kernel sends it: "ACTION@DEVPATH" then KEY=VALUE, each ended by NUL. */
static bool parse(const char *msg, size_t len, struct uevent *ev)
{
	static char buf[4096];
	memcpy(buf, msg, len);
	return uevent_parse(buf, len, ev);
}

#define PARSE(lit, ev) parse(lit, sizeof(lit), ev)

static void test_kept(void)
{
	struct uevent ev;
	ok(PARSE("add@/devices/pci0000:00/0000:00:04.0/virtio2/block/vdb\0ACTION=add\0"
	         "DEVPATH=/devices/pci0000:00/0000:00:04.0/virtio2/block/vdb\0SUBSYSTEM=block\0"
	         "MAJOR=252\0MINOR=16\0DEVNAME=vdb\0DEVTYPE=disk\0DISKSEQ=5\0SEQNUM=2345",
	         &ev),
	   "a disk added");
	is_str(ev.action, "add", "its action");
	is_str(ev.devpath, "/devices/pci0000:00/0000:00:04.0/virtio2/block/vdb", "its path");
	is_str(ev.subsystem, "block", "its subsystem");
	is_str(ev.devtype, "disk", "its type");
	ok(PARSE("remove@/devices/pci0000:00/0000:00:10.0/host6/port-6:0/end_device-6:0/"
	         "target6:0:0/6:0:0:0\0ACTION=remove\0DEVPATH=/devices/pci0000:00/0000:00:10.0/"
	         "host6/port-6:0/end_device-6:0/target6:0:0/6:0:0:0\0SUBSYSTEM=scsi\0"
	         "DEVTYPE=scsi_device\0MODALIAS=scsi:t-0x00\0SEQNUM=2346",
	         &ev) &&
	       strcmp(ev.action, "remove") == 0,
	   "a SCSI device gone");
	ok(PARSE("add@/devices/pci0000:00/0000:00:10.0/host6/port-6:0/end_device-6:0/"
	         "target6:0:13/6:0:13:0/enclosure/6:0:13:0\0ACTION=add\0DEVPATH=/devices/"
	         "pci0000:00/0000:00:10.0/host6/port-6:0/end_device-6:0/target6:0:13/6:0:13:0/"
	         "enclosure/6:0:13:0\0SUBSYSTEM=enclosure\0SEQNUM=2347",
	         &ev),
	   "an enclosure (no DEVTYPE)");
	is_str(ev.devtype, "", "an absent DEVTYPE reads empty");
	ok(PARSE("add@/devices/pci0000:00/0000:00:05.0/nvme/nvme0\0ACTION=add\0"
	         "DEVPATH=/devices/pci0000:00/0000:00:05.0/nvme/nvme0\0SUBSYSTEM=nvme\0"
	         "MAJOR=240\0MINOR=0\0DEVNAME=nvme0\0NVME_TRTYPE=pcie\0SEQNUM=2348",
	         &ev),
	   "an NVMe controller");
	/* The kernel ends the last string with NUL too; one that does not is ended here, a
	 * byte short, never read past. */
	const char unended[] = "change@/devices/virtual/x/block/sdz\0ACTION=change\0"
	                       "DEVPATH=/devices/virtual/x/block/sdz\0SUBSYSTEM=block\0"
	                       "DEVTYPE=disk\0SEQNUM=123";
	static char buf[sizeof(unended)];
	memcpy(buf, unended, sizeof(unended) - 1);
	bool kept = uevent_parse(buf, sizeof(unended) - 1, &ev);
	ok(kept && strcmp(buf + sizeof(unended) - 11, "SEQNUM=12") == 0,
	   "an unended last string is cut a byte short");
}

static void test_left_out(void)
{
	struct uevent ev;
	ok(!PARSE("add@/devices/virtual/block/sdb/sdb1\0ACTION=add\0DEVPATH=/devices/virtual/"
	          "block/sdb/sdb1\0SUBSYSTEM=block\0DEVTYPE=partition\0PARTN=1\0SEQNUM=1",
	          &ev),
	   "a partition");
	ok(!PARSE("add@/devices/pci0000:00/0000:00:10.0/host6\0ACTION=add\0DEVPATH=/devices/"
	          "pci0000:00/0000:00:10.0/host6\0SUBSYSTEM=scsi\0DEVTYPE=scsi_host\0SEQNUM=2",
	          &ev),
	   "a SCSI host");
	ok(!PARSE("add@/devices/virtual/net/veth0\0ACTION=add\0DEVPATH=/devices/virtual/net/"
	          "veth0\0SUBSYSTEM=net\0INTERFACE=veth0\0IFINDEX=9\0SEQNUM=3",
	          &ev),
	   "a network link");
	ok(!PARSE("add@/devices/virtual/block/sdb\0ACTION=add\0DEVPATH=/devices/virtual/block/"
	          "sdb\0DEVTYPE=disk\0SEQNUM=4",
	          &ev),
	   "no SUBSYSTEM");
	ok(!PARSE("add@/x\0DEVPATH=/x\0SUBSYSTEM=block\0DEVTYPE=disk", &ev), "no ACTION");
	/* udevd's own messages start "libudev" and a binary header: not the kernel's */
	ok(!PARSE("libudev\0\xfe\xed\xca\xfe\x28\0\0\0", &ev), "udevd's message");
	ok(!PARSE("", &ev), "an empty message");
	ok(!parse("x", 0, &ev), "nothing at all");
}

int main(void)
{
	test_kept();
	test_left_out();
	return done_testing();
}
