/* SPDX-License-Identifier: ISC */
/* /api/system/v1: what this box runs, and a liveness probe. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/crypto.h>

#include "api.h"
#include "base/util.h"

static int64_t started_at;

/* What the appliance's version answer names that does not change while we run, read once
 * at start under --proc-root and --sys-root (so tests can fake the machine). */
static struct {
	int64_t boot, installed, updated;
	char asn[64], csn[128], product[256], fw_vendor[128], fw_version[128], fw_release[64];
	char part[128], release[65], machine[65];
} sys;

/* Boot time from /proc/stat's btime; 0 when unreadable. */
static int64_t boot_time(const char *proc_root)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/proc/stat", proc_root);
	char *text = util_read_file(path, NULL); /* (a FIFO there reads as empty) */
	int64_t btime = 0;
	for (const char *l = text; l && *l; l += strcspn(l, "\n"), l += *l == '\n') {
		long long v;
		if (sscanf(l, "btime %lld", &v) == 1) {
			btime = v;
			break;
		}
	}
	free(text);
	return btime;
}

/* The first line of root/rel, trimmed, or "" (DMI files are root-only on some systems). */
static void read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	char *text = util_read_file(path, NULL); /* (a FIFO there reads as empty) */
	snprintf(buf, len, "%s", text ? text : "");
	free(text);
	size_t n = strcspn(buf, "\r\n");
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

/* /etc/machine-id (32 hex digits) in the appliance's asn form, a dashed UUID. */
static void machine_asn(const char *root, char *buf, size_t len)
{
	char id[64];
	read_line(root, "etc/machine-id", id, sizeof(id));
	if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32) {
		snprintf(buf, len, "%.*s", (int)len - 1, id);
		return;
	}
	snprintf(buf, len, "%.8s-%.4s-%.4s-%.4s-%.12s", id, id + 8, id + 12, id + 16, id + 20);
}

static int64_t mtime_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (int64_t)st.st_mtime : 0;
}

void system_started(const char *proc_root, const char *sys_root, const char *state_dir)
{
	started_at = util_now();
	proc_root = proc_root ? proc_root : "/";
	sys_root = sys_root ? sys_root : "/";
	sys.boot = boot_time(proc_root);
	machine_asn(sys_root, sys.asn, sizeof(sys.asn));
	read_line(sys_root, "sys/class/dmi/id/product_serial", sys.csn, sizeof(sys.csn));
	char vendor[128], name[128];
	read_line(sys_root, "sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	read_line(sys_root, "sys/class/dmi/id/product_name", name, sizeof(name));
	/* "Sun Netra X4270 M3": the vendor once, then the model. */
	if (vendor[0] && strncasecmp(name, vendor, strlen(vendor)) != 0)
		snprintf(sys.product, sizeof(sys.product), "%s %s", vendor, name);
	else
		snprintf(sys.product, sizeof(sys.product), "%s", name);
	read_line(sys_root, "sys/class/dmi/id/bios_vendor", sys.fw_vendor, sizeof(sys.fw_vendor));
	read_line(sys_root, "sys/class/dmi/id/bios_version", sys.fw_version,
	          sizeof(sys.fw_version));
	read_line(sys_root, "sys/class/dmi/id/bios_date", sys.fw_release, sizeof(sys.fw_release));
	read_line(sys_root, "sys/class/dmi/id/product_sku", sys.part, sizeof(sys.part));
	struct utsname u;
	if (uname(&u) == 0) {
		snprintf(sys.release, sizeof(sys.release), "%s", u.release);
		snprintf(sys.machine, sizeof(sys.machine), "%s", u.machine);
	}
	/* installed: when this box's Spindle was first set up (its JWT key is made at the first
	 * start and kept); updated: when the running binary was put in place, its inode's
	 * change time (a package keeps its files' modification times from the build; the
	 * change time is the install's). */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/jwt.key", state_dir ? state_dir : ".");
	sys.installed = mtime_of(path);
	struct stat exe;
	sys.updated = stat("/proc/self/exe", &exe) == 0 ? (int64_t)exe.st_ctime : started_at;
	if (!sys.installed)
		sys.installed = sys.updated;
}

/* The appliance's time format, "20130528T16:25:44" (UTC here). */
static const char *appliance_time(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(buf, len, "%Y%m%dT%H:%M:%S", &tm) == 0)
		buf[0] = '\0';
	return buf;
}

/* The format of a real appliance's install_time, update_time and boot_time:
 * "Thu Nov 15 2018 23:10:39 GMT+0000 (UTC)" (JavaScript's Date.toString() of UTC). */
static const char *appliance_date(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (t <= 0 || !gmtime_r(&tt, &tm) ||
	    strftime(buf, len, "%a %b %d %Y %H:%M:%S GMT+0000 (UTC)", &tm) == 0)
		buf[0] = '\0';
	return buf;
}

const char *system_asn(void)
{
	return sys.asn;
}

const char *system_nodename(void)
{
	static char host[256];
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	return host;
}

static int64_t daemon_uptime(void)
{
	return util_now() - started_at;
}

void system_health(struct request *r)
{
	reply_json(r, 200,
	           json_pack("{s:{s:s, s:I}}", "health", "status", "ok", "daemon_uptime_s",
	                     (json_int_t)daemon_uptime()));
}

/* The phone polls this: the answer changes once a second at most (uptime), so it is
 * built once a second and served as bytes in between. */
/* The box's time zone as the IANA name: TZ when set (":Europe/Berlin" or "Europe/Berlin"),
 * else where /etc/localtime leads in the zoneinfo tree, else /etc/timezone; "" when none
 * says (the C library then keeps UTC). */
static void box_timezone(char *buf, size_t len)
{
	buf[0] = '\0';
	const char *tz = getenv("TZ");
	if (tz && *tz) {
		snprintf(buf, len, "%s", tz + (*tz == ':'));
		return;
	}
	char link[PATH_MAX];
	ssize_t n = readlink("/etc/localtime", link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		const char *z = strstr(link, "zoneinfo/");
		if (z) {
			snprintf(buf, len, "%s", z + strlen("zoneinfo/"));
			return;
		}
	}
	FILE *fp = fopen("/etc/timezone", "re");
	if (fp) {
		if (fgets(buf, (int)len, fp))
			buf[strcspn(buf, "\n")] = '\0';
		else
			buf[0] = '\0';
		fclose(fp);
	}
}

void system_version(struct request *r)
{
	static char os[200], host[256], http_version[64];
	static char *body;
	static size_t body_len;
	static int64_t body_at = -1, host_read_at;
	int64_t now = util_now();

	if (now != body_at) {
		if (!http_version[0])
			snprintf(http_version, sizeof(http_version), "libevent/%s",
			         event_get_version());
		if (!os[0]) {
			struct utsname u;
			if (uname(&u) == 0)
				snprintf(os, sizeof(os), "%s %s %s", u.sysname, u.release,
				         u.machine);
			else
				snprintf(os, sizeof(os), "Linux");
		}
		if (now - host_read_at >= 60) { /* a renamed host shows within a minute */
			if (gethostname(host, sizeof(host) - 1) < 0)
				host[0] = '\0';
			host_read_at = now;
		}
		int64_t bt = sys.boot;
		char boot[32], start[32], a_boot[32], a_inst[32], a_upd[32];
		char d_boot[48], d_inst[48], d_upd[48], osv[64], urn[80], bios[400];
		snprintf(osv, sizeof(osv), "spindle@%s", PACKAGE_VERSION);
		snprintf(urn, sizeof(urn), "%s%s", sys.asn[0] ? "urn:uuid:" : "", sys.asn);
		snprintf(bios, sizeof(bios), "%s%s%s%s%s", sys.fw_vendor,
		         sys.fw_vendor[0] && sys.fw_version[0] ? " " : "", sys.fw_version,
		         sys.fw_release[0] && (sys.fw_vendor[0] || sys.fw_version[0]) ? " " : "",
		         sys.fw_release);
		/* A real appliance's keys (OS8.8) first. Where Spindle's meaning differs, its value
		 * has a name of its own: the hardware is "product", Spindle "mkt_product"; the
		 * boot time in ISO 8601 is "boot_time_iso". */
		json_t *j = json_pack(
		    "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
		    "s:s, "
		    "s:s, s:s, s:s, s:s, s:s}",
		    "href", "/api/system/v1/version", "nodename", host, "product", sys.product,
		    "mkt_product", "Spindle", "version", PACKAGE_VERSION, "ak_version", osv,
		    "ak_release", PACKAGE_VERSION, "os_version", osv, "install_time",
		    appliance_date(sys.installed, d_inst, sizeof(d_inst)), "update_time",
		    appliance_date(sys.updated, d_upd, sizeof(d_upd)), "boot_time",
		    appliance_date(bt, d_boot, sizeof(d_boot)), "asn", sys.asn, "csn", sys.csn,
		    "part", sys.part, "urn", urn, "navname", "Spindle", "navagent", "spindled",
		    "http", http_version, "ssl", OpenSSL_version(OPENSSL_VERSION), "bios_version",
		    bios, "sp_version", "-");
		char zone[128];
		box_timezone(zone, sizeof(zone));
		struct tm lt;
		time_t tnow = (time_t)now;
		long gmtoff = localtime_r(&tnow, &lt) ? lt.tm_gmtoff : 0;
		json_t *own = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:I, s:s, s:I}", "build",
		                        SPINDLE_BUILD, "os", os, "hostname", host, "boot_time_iso",
		                        util_iso8601(bt, boot, sizeof(boot)), "uptime_s",
		                        (json_int_t)(bt ? now - bt : 0), "start_time",
		                        util_iso8601(started_at, start, sizeof(start)),
		                        "daemon_uptime_s", (json_int_t)(now - started_at),
		                        "timezone", zone, "utc_offset_s", (json_int_t)gmtoff);
		json_object_update(j, own);
		json_decref(own);
		/* The guide's example keys (OS8.x "Get Version"): older names of the same facts. */
		json_t *g = json_pack(
		    "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, "
		    "s:s, "
		    "s:s, s:s, s:s}",
		    "hw_asn", sys.asn, "hw_csn", sys.csn, "hw_product", sys.product, "fw_vendor",
		    sys.fw_vendor, "fw_version", sys.fw_version, "fw_release", sys.fw_release,
		    "sp_version", "-", "os_nodename", host, "os_version", osv, "os_release",
		    sys.release, "os_machine", sys.machine, "os_isa", sys.machine, "os_platform",
		    sys.machine, "os_boot", appliance_time(bt, a_boot, sizeof(a_boot)),
		    "ak_product", "Spindle", "installed",
		    appliance_time(sys.installed, a_inst, sizeof(a_inst)), "updated",
		    appliance_time(sys.updated, a_upd, sizeof(a_upd)), "http_version", http_version,
		    "ssl_version", OpenSSL_version(OPENSSL_VERSION));
		json_object_update_missing(j, g);
		json_decref(g);
		j = json_pack("{s:o}", "version", j);
		free(body);
		body = json_dumps(j, JSON_COMPACT);
		json_decref(j);
		body_len = body ? strlen(body) : 0;
		body_at = now;
	}
	if (!body) {
		reply_error(r, ERR_INTERNAL, "version: out of memory");
		return;
	}
	reply_header(r, "Cache-Control", "no-store");
	reply_raw(r, 200, "application/json", body, body_len);
}
