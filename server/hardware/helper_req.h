/* SPDX-License-Identifier: ISC */
/* What the root helpers behind spindled's sockets share (spindle-ledctl-helper,
 * spindle-smart-helper): each is started by systemd once per connection (Accept=yes) with
 * the connection as stdin and stdout, reads one request line naming a whole disk, checks
 * it, and answers. They link nothing of spindled. */
#ifndef SPINDLE_HELPER_REQ_H
#define SPINDLE_HELPER_REQ_H

#include <stdbool.h>
#include <stddef.h>

#define HELPER_NAME_MAX 32 /* of a disk's name */

/* Sets the program name for the log lines and arms SIGALRM for the timeouts below (and
 * ignores SIGPIPE: a client gone is an answer not read, not a crash). */
void helper_init(const char *program);
/* The request: one line on stdin and then the end of it (the client shuts its side
 * down), without the newline (a CR before it is dropped). -1 when it is empty, too long,
 * holds a NUL, is followed by more, or does not come within timeout_s. All that was sent
 * (up to 4 KiB) is read either way: a socket closed with unread input resets the
 * connection, and the client would never read why it was refused. */
int helper_read_line(char *buf, size_t len, int timeout_s);
/* One line on stdout, printable ASCII only; logged on stderr (the journal) when code is
 * not 0. Returns code. */
int helper_reply(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether NAME is a disk that can sit in a slot: [a-z0-9]+, starting with a letter,
 * listed in SYS/block (whole devices only, no partitions), backed by a device
 * (SYS/block/NAME/device: loop, md, dm, zram, ram and nbd devices have none) and not
 * removable (optical drives, card readers). */
bool helper_slot_disk(const char *sys_root, const char *name);
/* "/dev/NAME" with NAME a slot disk: NAME, else NULL. */
const char *helper_dev_name(const char *sys_root, const char *dev);
/* Whether the SIGALRM of a timeout has come. */
bool helper_timed_out(void);

#endif
