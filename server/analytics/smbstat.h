/* SPDX-License-Identifier: ISC */
/* The SMB operations Samba's file server counts, as `smbstatus --profile` prints them: its
 * SMB1 calls (smb.ops) and its SMB2 calls, every dialect from 2.0.2 to 3.1.1 (smb2.ops),
 * each by type of operation. smbd keeps them only when smb.conf sets "smbd profiling level
 * = count" (or "on"); without it smbstatus prints no counters and the box is taken for one
 * that serves no SMB.
 *
 * While an SMB dataset is collected (smbstat_want), each tick runs smbstatus as a child
 * of the loop (cmdpoll.h): a round's counts less the round before's, over the seconds
 * between them, are the rates the next tick takes. While none is, a round every
 * SMBSTAT_PROBE_SECONDS only tells whether the box serves SMB (smbstat_served), and none
 * runs where smbstatus is not installed. smbstatus runs only as root: where spindled does
 * not, it asks the root helper behind a socket (spindle-smbstatus.socket runs smbstatus
 * --profile for each connection) while that socket is there. Loop thread only. */
#ifndef SPINDLE_SMBSTAT_H
#define SPINDLE_SMBSTAT_H

#include <stdbool.h>
#include <stddef.h>

#define SMBSTAT_PROBE_SECONDS 60

enum smb_version { SMB_V1, SMB_V2, SMB_VERSIONS };

struct event_base;

/* socket: the helper's (NULL: none). */
void smbstat_init(struct event_base *base, const char *socket);
void smbstat_shutdown(void);
/* A dataset needs the rates, or none does any more. */
void smbstat_want(bool on);
/* Once a tick (the collector's): the newest round's rates become what smbstat_get gives,
 * and a round (or, while not wanted and due, a probe) starts if none is under way; false
 * when there are no rates. */
bool smbstat_take(void);
/* Operations per second by type, indexed as smbstat_op names them. */
const double *smbstat_get(void);
/* Whether smbstatus can be run: its helper's socket is there, or it is on PATH. */
bool smbstat_available(void);
/* smbstatus has given counters since the start. */
bool smbstat_served(void);

/* The types of operation: n of them; the i-th's version and name as Samba names it less
 * its prefix ("readX" for SMBreadX, "read" for smb2_read). NULL past the last. */
size_t smbstat_nops(void);
const char *smbstat_op(size_t i, enum smb_version *version);

/* What `smbstatus --profile` printed: each "NAME_count: N" of an SMB1 or SMB2 call added
 * into counts (smbstat_nops() of them); the rest (system calls, timings, bytes) passed
 * over. -1 with why when it printed no call counts. */
int smbstat_parse(const char *text, double *counts, char *why, size_t len);

#endif
