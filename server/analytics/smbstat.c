/* SPDX-License-Identifier: ISC */
/* The reader of `smbstatus --profile` (smbstat.h). */
#define _GNU_SOURCE
#include "smbstat.h"
#include "cmdpoll.h"
#include "base/child.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUND_TIMEOUT_MS 5000 /* smbstatus reads a few tdb files: it waits on a lock at most */

/* The calls smbd 4.x counts (source3/include/smbprofile.h), in its order. */
static const char *const smb1_ops[] = {
    "mkdir",      "rmdir",    "open",      "create",     "close",     "flush",    "unlink",
    "mv",         "getatr",   "setatr",    "read",       "write",     "lock",     "unlock",
    "ctemp",      "mknew",    "checkpath", "exit",       "lseek",     "lockread", "writeunlock",
    "readbraw",   "readBmpx", "readBs",    "writebraw",  "writeBmpx", "writeBs",  "writec",
    "setattrE",   "getattrE", "lockingX",  "trans",      "transs",    "ioctl",    "ioctls",
    "copy",       "move",     "echo",      "writeclose", "openX",     "readX",    "writeX",
    "trans2",     "transs2",  "findclose", "findnclose", "tcon",      "tdis",     "negprot",
    "sesssetupX", "ulogoffX", "tconX",     "dskattr",    "search",    "ffirst",   "funique",
    "fclose",     "nttrans",  "nttranss",  "ntcreateX",  "ntcancel",  "ntrename", "splopen",
    "splwr",      "splclose", "splretq",   "sends",      "sendb",     "fwdname",  "cancelf",
    "getmac",     "sendstrt", "sendend",   "sendtxt",    "invalid"};
static const char *const smb2_ops[] = {"negprot", "sesssetup", "logoff",  "tcon",      "tdis",
                                       "create",  "close",     "flush",   "read",      "write",
                                       "lock",    "ioctl",     "cancel",  "keepalive", "find",
                                       "notify",  "getinfo",   "setinfo", "break"};

#define NSMB1 nitems(smb1_ops)
#define NOPS  (nitems(smb1_ops) + nitems(smb2_ops))

size_t smbstat_nops(void)
{
	return NOPS;
}

const char *smbstat_op(size_t i, enum smb_version *version)
{
	if (i >= NOPS)
		return NULL;
	if (version)
		*version = i < NSMB1 ? SMB_V1 : SMB_V2;
	return i < NSMB1 ? smb1_ops[i] : smb2_ops[i - NSMB1];
}

static int op_index(const char *const *ops, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(ops[i]) == len && memcmp(ops[i], name, len) == 0)
			return (int)i;
	return -1;
}

int smbstat_parse(const char *text, double *counts, char *why, size_t len)
{
	bool any = false;
	for (const char *l = text; *l;) {
		const char *eol = strchr(l, '\n');
		size_t n = eol ? (size_t)(eol - l) : strlen(l);
		const char *colon = memchr(l, ':', n);
		static const char suffix[] = "_count";
		size_t sl = sizeof(suffix) - 1;
		if (colon && (size_t)(colon - l) > sl && memcmp(colon - sl, suffix, sl) == 0) {
			const char *name = l, *name_end = colon - sl;
			int idx = -1;
			if (strncmp(name, "smb2_", 5) == 0)
				idx = op_index(smb2_ops, nitems(smb2_ops), name + 5,
				               (size_t)(name_end - name - 5));
			else if (strncmp(name, "SMB", 3) == 0)
				idx = op_index(smb1_ops, NSMB1, name + 3,
				               (size_t)(name_end - name - 3));
			if (idx >= 0) {
				char *end;
				errno = 0;
				unsigned long long v = strtoull(colon + 1, &end, 10);
				while (end < l + n && (*end == ' ' || *end == '\t'))
					end++;
				if (errno || end == colon + 1 || end != l + n) {
					snprintf(why, len,
					         "smbstatus --profile: not a count: '%.*s'",
					         (int)(n > 80 ? 80 : n), l);
					return -1;
				}
				counts[(name[0] == 's' ? NSMB1 : 0) + (size_t)idx] += (double)v;
				any = true;
			}
		}
		l = eol ? eol + 1 : l + n;
	}
	if (!any) {
		snprintf(
		    why, len,
		    "smbstatus --profile printed no SMB call counts (smb.conf's \"smbd profiling "
		    "level\" is off, or smbd does not run): '%.*s'",
		    (int)strcspn(text, "\n") > 80 ? 80 : (int)strcspn(text, "\n"), text);
		return -1;
	}
	return 0;
}

/* --- rounds */

static char *const argv_profile[] = {"smbstatus", "--profile", NULL};

static int parse_step(int step, const char *out, double *reading, char *why, size_t len)
{
	(void)step;
	return smbstat_parse(out, reading, why, len);
}

static const struct cmdpoll_spec spec = {
    .what = "smbstat",
    .argv = {argv_profile, NULL},
    .step_name = {"smbstatus --profile", NULL},
    .n = NOPS,
    .timeout_ms = ROUND_TIMEOUT_MS,
    .parse = parse_step,
};

static struct {
	struct cmdpoll *rounds;
	bool served;
	unsigned ticks_to_probe; /* while not wanted: ticks until the next probe */
} smb;

void smbstat_init(struct event_base *base, const char *socket)
{
	smb.rounds = cmdpoll_new(base, &spec);
	cmdpoll_set_socket(smb.rounds, 0, socket);
	smb.ticks_to_probe = 0; /* the first tick probes */
}

void smbstat_shutdown(void)
{
	cmdpoll_free(smb.rounds);
	smb.rounds = NULL;
}

bool smbstat_available(void)
{
	return (smb.rounds && cmdpoll_helper_there(smb.rounds, 0)) || child_on_path("smbstatus");
}

void smbstat_want(bool on)
{
	if (smb.rounds)
		cmdpoll_want(smb.rounds, on);
}

bool smbstat_take(void)
{
	if (!smb.rounds)
		return false;
	bool answered = cmdpoll_ever_answered(smb.rounds);
	if (answered && !smb.served)
		log_info("smbstat: smbstatus --profile gives Samba's counters: the box serves SMB");
	smb.served = answered;
	if (cmdpoll_wanted(smb.rounds))
		return cmdpoll_take(smb.rounds);
	if (smb.ticks_to_probe > 0) {
		smb.ticks_to_probe--;
		return false;
	}
	smb.ticks_to_probe = SMBSTAT_PROBE_SECONDS - 1;
	if (smbstat_available())
		cmdpoll_probe(smb.rounds);
	return false;
}

const double *smbstat_get(void)
{
	return smb.rounds ? cmdpoll_get(smb.rounds) : NULL;
}

bool smbstat_served(void)
{
	return smb.served;
}
