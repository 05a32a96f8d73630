/* SPDX-License-Identifier: ISC */
/* The network configuration in the appliance's shape (network.h): /sys/class/net, the
 * kernel's addresses by netlink, and /proc/net's routes, read on a helper thread. */
#define _GNU_SOURCE
#include "network.h"
#include "base/log.h"
#include "base/util.h"
#include "base/workq.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

static struct {
	struct workq *wq;
	char *sys_root, *proc_root;
	bool live; /* --sys-root is "/": the kernel's addresses belong to these links */
	bool in_flight, stopping;
	json_t *latest;
	int64_t read_at_ms;
	char why[256];           /* why the last reading had no addresses, "" */
	struct waitlist waiters; /* requests for a fresh reading */
} net;

/* ---- reading: the helper thread's part, no loop state */

/* dir/name into out; false when it does not fit. */
static bool join(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);
	return n >= 0 && (size_t)n < len;
}

/* The first line of <dir>/<name>, trimmed, into buf; false when unreadable. A FIFO or a
 * file that errors (speed of a link that is down: EINVAL) reads as nothing. */
static bool read_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	char *text = join(path, sizeof(path), dir, name) ? util_read_file(path, NULL) : NULL;
	if (!text)
		return false;
	snprintf(buf, len, "%s", text);
	free(text);
	buf[strcspn(buf, "\r\n")] = '\0';
	return true;
}

static long long attr_ll(const char *dir, const char *name, long long dflt)
{
	char buf[64];
	long long v;
	if (!read_attr(dir, name, buf, sizeof(buf)) || sscanf(buf, "%lli", &v) != 1)
		return dflt;
	return v;
}

static bool has(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	return join(path, sizeof(path), dir, name) && lstat(path, &st) == 0;
}

/* The name a symlink in dir points to (its last component): "bond0" of master. */
static bool link_name(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n =
	    join(path, sizeof(path), dir, name) ? readlink(path, target, sizeof(target) - 1) : -1;
	if (n <= 0)
		return false;
	target[n] = '\0';
	const char *slash = strrchr(target, '/'), *last = slash ? slash + 1 : target;
	size_t w = strlen(last);
	if (w >= len)
		return false;
	memcpy(buf, last, w + 1);
	return true;
}

/* The appliance writes a MAC as Solaris does, each octet without its leading zero:
 * "0:21:28:a1:d9:68". */
static void solaris_mac(const char *mac, char *out, size_t len)
{
	unsigned o[6];
	if (sscanf(mac, "%x:%x:%x:%x:%x:%x", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]) != 6) {
		snprintf(out, len, "%s", mac);
		return;
	}
	snprintf(out, len, "%x:%x:%x:%x:%x:%x", o[0], o[1], o[2], o[3], o[4], o[5]);
}

/* A DEVTYPE of a link's uevent ("vlan", "bond", "bridge", "wlan"), or "". */
static void devtype(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	char *text = join(path, sizeof(path), dir, "uevent") ? util_read_file(path, NULL) : NULL;
	buf[0] = '\0';
	for (const char *l = text; l && *l; l += strcspn(l, "\n"), l += *l == '\n')
		if (strncmp(l, "DEVTYPE=", 8) == 0) {
			snprintf(buf, len, "%.*s", (int)strcspn(l + 8, "\n"), l + 8);
			break;
		}
	free(text);
}

struct link {
	char name[IF_NAMESIZE + 16];
	char dir[PATH_MAX];
	char kind[16]; /* devtype: vlan, bond, bridge, ... */
	char master[IF_NAMESIZE + 16];
	bool physical, loopback;
};

static int link_cmp(const void *a, const void *b)
{
	return strcmp(((const struct link *)a)->name, ((const struct link *)b)->name);
}

static struct link *read_links(const char *sys_root, size_t *n)
{
	char base[PATH_MAX];
	snprintf(base, sizeof(base), "%s/sys/class/net", sys_root);
	*n = 0;
	DIR *d = opendir(base);
	if (!d)
		return NULL;
	size_t cap = 0;
	struct link *l = NULL;
	struct dirent *e;
	while ((e = readdir(d)) && *n < NETWORK_MAX_LINKS) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= IF_NAMESIZE + 16)
			continue;
		l = util_grow(l, &cap, *n, sizeof(*l));
		struct link *k = &l[*n];
		memset(k, 0, sizeof(*k));
		snprintf(k->name, sizeof(k->name), "%s", e->d_name);
		if (!join(k->dir, sizeof(k->dir), base, e->d_name) || !has(k->dir, "type"))
			continue; /* bonding_masters and the like: files, not links */
		devtype(k->dir, k->kind, sizeof(k->kind));
		if (has(k->dir, "bonding"))
			snprintf(k->kind, sizeof(k->kind), "bond");
		else if (has(k->dir, "bridge"))
			snprintf(k->kind, sizeof(k->kind), "bridge");
		link_name(k->dir, "master", k->master, sizeof(k->master));
		k->loopback = attr_ll(k->dir, "type", 0) == 772; /* ARPHRD_LOOPBACK */
		k->physical = has(k->dir, "device") && !k->kind[0] && !k->loopback;
		(*n)++;
	}
	closedir(d);
	qsort(l, *n, sizeof(*l), link_cmp);
	return l;
}

static const char *media_of(long long type)
{
	switch (type) {
	case 1:
		return "Ethernet";
	case 32:
		return "Infiniband";
	case 772:
		return "Loopback";
	default:
		return "Other";
	}
}

/* "1000 Mbit/s", or "0 Mbit/s" when the kernel knows no speed (a link that is down). */
static json_t *speed_json(const struct link *k)
{
	long long mbit = attr_ll(k->dir, "speed", 0);
	char buf[48];
	snprintf(buf, sizeof(buf), "%lld Mbit/s", mbit > 0 ? mbit : 0);
	return json_string(buf);
}

static json_t *device_json(const struct link *k)
{
	char mac[64] = "", perm[64] = "", duplex[32] = "", oper[32] = "", a[64];
	read_attr(k->dir, "address", mac, sizeof(mac));
	/* a bond's slave shows the bond's MAC: its own is kept as perm_hwaddr */
	if (!read_attr(k->dir, "bonding_slave/perm_hwaddr", perm, sizeof(perm)))
		snprintf(perm, sizeof(perm), "%s", mac);
	read_attr(k->dir, "duplex", duplex, sizeof(duplex));
	read_attr(k->dir, "operstate", oper, sizeof(oper));
	char dup[48];
	snprintf(dup, sizeof(dup), "%s-duplex", duplex[0] ? duplex : "unknown");
	solaris_mac(perm, a, sizeof(a));
	bool up = attr_ll(k->dir, "carrier", 0) == 1;
	return json_pack("{s:s, s:b, s:b, s:s, s:o, s:s, s:s, s:s, s:I, s:s}", "device", k->name,
	                 "active", up && strcmp(oper, "up") == 0, "up", up, "duplex", dup, "speed",
	                 speed_json(k), "media", media_of(attr_ll(k->dir, "type", 0)),
	                 "factory_mac", a, "mac", mac, "mtu", (json_int_t)attr_ll(k->dir, "mtu", 0),
	                 "operstate", oper);
}

/* A bond's links: bonding/slaves, "eth0 eth1". */
static json_t *bond_links(const struct link *k)
{
	char slaves[1024] = "";
	read_attr(k->dir, "bonding/slaves", slaves, sizeof(slaves));
	json_t *a = json_array();
	char *save = NULL;
	for (char *s = strtok_r(slaves, " ", &save); s; s = strtok_r(NULL, " ", &save))
		json_array_append_new(a, json_string(s));
	return a;
}

/* The links below k: its lower_* symlinks (a VLAN's device). */
static json_t *lower_links(const struct link *k)
{
	json_t *a = json_array();
	DIR *d = opendir(k->dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strncmp(e->d_name, "lower_", 6) == 0)
			json_array_append_new(a, json_string(e->d_name + 6));
	if (d)
		closedir(d);
	return a;
}

/* A VLAN's id: /proc/net/vlan/<name> ("... VID: 100 ..."), else the name's ".100". */
static long long vlan_id(const struct link *k, const char *proc_root)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/proc/net/vlan/%s", proc_root, k->name);
	char *text = util_read_file(path, NULL);
	const char *vid = text ? strstr(text, "VID:") : NULL;
	long long id = vid ? strtoll(vid + 4, NULL, 10) : -1;
	free(text);
	if (id < 0) {
		const char *dot = strrchr(k->name, '.');
		id = dot ? strtoll(dot + 1, NULL, 10) : 0;
	}
	return id;
}

static json_t *datalink_json(const struct link *k, const char *proc_root)
{
	char mac[64] = "", a[64];
	read_attr(k->dir, "address", mac, sizeof(mac));
	solaris_mac(mac, a, sizeof(a));
	long long mtu = attr_ll(k->dir, "mtu", 0);
	const char *cls = k->physical                    ? "device"
	                  : strcmp(k->kind, "bond") == 0 ? "aggregation"
	                  : strcmp(k->kind, "vlan") == 0 ? "vlan"
	                                                 : "vnic";
	json_t *links = k->physical                    ? json_pack("[s]", k->name)
	                : strcmp(k->kind, "bond") == 0 ? bond_links(k)
	                                               : lower_links(k);
	json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:I, s:b}", "datalink", k->name, "class",
	                      cls, "label", k->name, "links", links, "mac", a, "mtu",
	                      (json_int_t)mtu, "jumbo", mtu > 1500);
	if (k->physical) {
		json_object_set_new(o, "speed", json_string("auto"));
		json_object_set_new(o, "duplex", json_string("auto"));
	} else if (strcmp(cls, "vlan") == 0) {
		json_object_set_new(o, "id", json_integer(vlan_id(k, proc_root)));
	} else if (strcmp(cls, "aggregation") == 0) {
		char mode[64] = "", policy[64] = "";
		read_attr(k->dir, "bonding/mode", mode, sizeof(mode));
		read_attr(k->dir, "bonding/xmit_hash_policy", policy, sizeof(policy));
		mode[strcspn(mode, " ")] = '\0';
		policy[strcspn(policy, " ")] = '\0';
		json_object_set_new(o, "mode", json_string(mode));
		json_object_set_new(o, "policy", json_string(policy));
	} else if (k->kind[0]) {
		json_object_set_new(o, "kind", json_string(k->kind));
	}
	return o;
}

/* ---- addresses: netlink RTM_GETADDR, {name: [{"family", "addr", "prefix", "static"}]} */

static void add_address(json_t *by_name, const struct ifaddrmsg *ifa, const void *addr,
                        const char *label)
{
	char name[IF_NAMESIZE + 1] = "", text[INET6_ADDRSTRLEN + 8];
	if (label)
		snprintf(name, sizeof(name), "%s", label);
	else if (!if_indextoname((unsigned)ifa->ifa_index, name))
		return;
	if (ifa->ifa_family == AF_INET6 && label)
		name[strcspn(name, ":")] = '\0';
	if (!inet_ntop(ifa->ifa_family, addr, text, sizeof(text)))
		return;
	name[strcspn(name, ":")] = '\0'; /* eth0:1, an alias, is eth0's */
	json_t *list = json_object_get(by_name, name);
	if (!list) {
		list = json_array();
		json_object_set_new(by_name, name, list);
	}
	json_array_append_new(list, json_pack("{s:i, s:s, s:i, s:b, s:b}", "family",
	                                      ifa->ifa_family == AF_INET ? 4 : 6, "addr", text,
	                                      "prefix", ifa->ifa_prefixlen, "static",
	                                      (ifa->ifa_flags & IFA_F_PERMANENT) != 0, "link_local",
	                                      ifa->ifa_scope == RT_SCOPE_LINK));
}

/* why: what failed, "" when the dump was read whole. */
static json_t *read_addresses(char *why, size_t whylen)
{
	json_t *by_name = json_object();
	why[0] = '\0';
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		snprintf(why, whylen, "netlink socket: %s", strerror(errno));
		return by_name;
	}
	struct timeval tv = {2, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {.nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg)),
	                .nlmsg_type = RTM_GETADDR,
	                .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
	                .nlmsg_seq = 1},
	         .ifa = {.ifa_family = AF_UNSPEC}};
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		snprintf(why, whylen, "netlink request: %s", strerror(errno));
		close(fd);
		return by_name;
	}
	static char buf[32768];
	bool done = false;
	while (!done) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			snprintf(why, whylen, "netlink answer: %s",
			         n < 0 ? strerror(errno) : "cut short");
			break;
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nh);
				snprintf(why, whylen, "netlink: %s", strerror(-e->error));
			}
			if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (nh->nlmsg_type != RTM_NEWADDR)
				continue;
			struct ifaddrmsg *ifa = NLMSG_DATA(nh);
			const void *addr = NULL, *local = NULL;
			const char *label = NULL;
			int len = (int)IFA_PAYLOAD(nh);
			for (struct rtattr *a = IFA_RTA(ifa); RTA_OK(a, len);
			     a = RTA_NEXT(a, len)) {
				if (a->rta_type == IFA_ADDRESS)
					addr = RTA_DATA(a);
				else if (a->rta_type == IFA_LOCAL)
					local = RTA_DATA(a);
				else if (a->rta_type == IFA_LABEL)
					label = RTA_DATA(a);
			}
			/* IPv4's own address is IFA_LOCAL (IFA_ADDRESS is the peer's on a
			 * point-to-point link) */
			if (local || addr)
				add_address(by_name, ifa, local ? local : addr, label);
		}
	}
	close(fd);
	return by_name;
}

static json_t *interface_json(const struct link *k, json_t *addrs)
{
	char oper[32] = "";
	read_attr(k->dir, "operstate", oper, sizeof(oper));
	long long flags = attr_ll(k->dir, "flags", 0);
	json_t *cur = json_array(), *v4 = json_array(), *v6 = json_array();
	json_t *v4s = json_array(), *v6s = json_array();
	bool dhcp4 = false, dhcp6 = false;
	size_t i;
	json_t *a;
	json_array_foreach(addrs, i, a)
	{
		char text[INET6_ADDRSTRLEN + 8];
		bool six = json_integer_value(json_object_get(a, "family")) == 6;
		bool st = json_is_true(json_object_get(a, "static"));
		snprintf(text, sizeof(text), "%s/%lld",
		         json_string_value(json_object_get(a, "addr")),
		         (long long)json_integer_value(json_object_get(a, "prefix")));
		json_array_append_new(cur, json_string(text));
		if (six && json_is_true(json_object_get(a, "link_local")))
			continue; /* the appliance lists configured addresses, not fe80:: */
		json_array_append_new(six ? v6 : v4, json_string(text));
		json_array_append_new(six ? v6s : v4s, json_string(text));
		if (!st)
			*(six ? &dhcp6 : &dhcp4) = true; /* a lease's address, not a static one */
	}
	json_decref(v4s);
	json_decref(v6s);
	bool admin = (flags & IFF_UP) != 0;
	const char *state = !admin ? "disabled" : strcmp(oper, "down") == 0 ? "down" : "up";
	return json_pack("{s:s, s:s, s:s, s:[s], s:s, s:b, s:b, s:o, s:o, s:b, s:o, s:b, s:[], "
	                 "s:[]}",
	                 "interface", k->name, "class", "ip", "label", k->name, "links", k->name,
	                 "state", state, "enable", admin, "admin", true, "curaddrs", cur, "v4addrs",
	                 v4, "v4dhcp", dhcp4, "v6addrs", v6, "v6dhcp", dhcp6, "v4directnets",
	                 "v6directnets");
}

/* ---- routes */

static int prefix_len(uint32_t mask_be)
{
	return __builtin_popcount(mask_be);
}

static void read_routes4(json_t *routes, const char *proc_root)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/proc/net/route", proc_root);
	char *text = util_read_file(path, NULL);
	char *save = NULL;
	bool header = true;
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char dev[IF_NAMESIZE + 16];
		unsigned dst, gw, flags, mask;
		int metric, refcnt, use;
		if (header) {
			header = false;
			continue;
		}
		if (sscanf(l, "%31s %x %x %x %d %d %d %x", dev, &dst, &gw, &flags, &refcnt, &use,
		           &metric, &mask) != 8)
			continue;
		if (flags & 0x0200) /* RTF_REJECT */
			continue;
		char d[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
		struct in_addr da = {dst}, ga = {gw};
		inet_ntop(AF_INET, &da, d, sizeof(d));
		inet_ntop(AF_INET, &ga, g, sizeof(g));
		bool via = (flags & 0x0002) != 0; /* RTF_GATEWAY */
		json_array_append_new(
		    routes,
		    json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:i}", "destination", d,
		              "family", "IPv4", "gateway", via ? g : "0.0.0.0", "interface", dev,
		              "mask", prefix_len(mask), "type", via ? "static" : "system", "status",
		              (flags & 0x0001) ? "active" : "inactive", "metric", metric));
	}
	free(text);
}

/* 32 hex digits of /proc/net/ipv6_route as an address. */
static bool hex6(const char *hex, char *out, size_t len)
{
	unsigned char b[16];
	for (int i = 0; i < 16; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		b[i] = (unsigned char)v;
	}
	return inet_ntop(AF_INET6, b, out, (socklen_t)len) != NULL;
}

static void read_routes6(json_t *routes, const char *proc_root)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/proc/net/ipv6_route", proc_root);
	char *text = util_read_file(path, NULL);
	char *save = NULL;
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		char dst[33], src[33], gw[33], dev[IF_NAMESIZE + 16];
		unsigned dlen, slen, metric, refcnt, use, flags;
		if (sscanf(l, "%32s %x %32s %x %32s %x %x %x %x %31s", dst, &dlen, src, &slen, gw,
		           &metric, &refcnt, &use, &flags, dev) != 10)
			continue;
		char d[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];
		if (!hex6(dst, d, sizeof(d)) || !hex6(gw, g, sizeof(g)))
			continue;
		/* the loopback's, the box's own addresses' (RTF_LOCAL), rejections, multicast and
		 * link-local ones are the kernel's own */
		if (strcmp(dev, "lo") == 0 || (flags & 0x80000000u) || (flags & 0x0200) ||
		    strncmp(dst, "ff", 2) == 0 || strncmp(dst, "fe80", 4) == 0)
			continue;
		bool via = (flags & 0x0002) != 0;
		json_array_append_new(
		    routes,
		    json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:i}", "destination", d,
		              "family", "IPv6", "gateway", via ? g : "::", "interface", dev, "mask",
		              (int)dlen, "type", via ? "static" : "system", "status",
		              (flags & 0x0001) ? "active" : "inactive", "metric", (int)metric));
	}
	free(text);
}

json_t *network_read(const char *sys_root, const char *proc_root, bool live, char *why,
                     size_t whylen)
{
	size_t n;
	struct link *l = read_links(sys_root, &n);
	why[0] = '\0';
	json_t *addrs = live ? read_addresses(why, whylen) : json_object();
	json_t *dev = json_array(), *dl = json_array(), *ifs = json_array(), *routes = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct link *k = &l[i];
		if (k->physical)
			json_array_append_new(dev, device_json(k));
		if (k->loopback)
			continue;
		json_array_append_new(dl, datalink_json(k, proc_root));
		/* a bond's or a bridge's port carries no address of its own */
		json_t *a = json_object_get(addrs, k->name);
		bool up = (attr_ll(k->dir, "flags", 0) & IFF_UP) != 0;
		if (!k->master[0] && (up || json_array_size(a)))
			json_array_append_new(ifs, interface_json(k, a));
	}
	free(l);
	json_decref(addrs);
	read_routes4(routes, proc_root);
	read_routes6(routes, proc_root);
	size_t i;
	json_t *r;
	json_array_foreach(routes, i, r)
	{
		char id[32];
		snprintf(id, sizeof(id), "route-%03zu", i);
		json_object_set_new(r, "route", json_string(id));
	}
	return json_pack("{s:o, s:o, s:o, s:o}", "devices", dev, "datalinks", dl, "interfaces", ifs,
	                 "routes", routes);
}

/* ---- the loop's part */

struct reading {
	json_t *doc;
	char why[256];
};

static void read_work(void *arg)
{
	struct reading *rd = arg;
	rd->doc = network_read(net.sys_root, net.proc_root, net.live, rd->why, sizeof(rd->why));
}

static void read_done(void *arg)
{
	struct reading *rd = arg;
	json_decref(net.latest);
	net.latest = rd->doc;
	/* said once, and again when it changes: a unit that forbids AF_NETLINK shows here */
	if (strcmp(rd->why, net.why) != 0 && rd->why[0])
		log_warn(
		    "network: the kernel's addresses cannot be read (%s): interfaces show none",
		    rd->why);
	snprintf(net.why, sizeof(net.why), "%s", rd->why);
	free(rd);
	net.read_at_ms = util_now_ms();
	net.in_flight = false;
	waitlist_run(&net.waiters);
}

void network_when_ready(void (*cb)(void *arg), void *arg)
{
	int64_t age = util_now_ms() - net.read_at_ms;
	if (net.stopping || (net.latest && age >= 0 && age < NETWORK_TTL_S * 1000)) {
		cb(arg);
		return;
	}
	waitlist_add(&net.waiters, cb, arg);
	if (net.in_flight)
		return;
	struct reading *rd = xcalloc(1, sizeof(*rd));
	net.in_flight = true;
	if (workq_submit(net.wq, read_work, read_done, rd) < 0) {
		read_work(rd); /* (a queue without a limit does not refuse) */
		read_done(rd);
	}
}

json_t *network_list(const char *kind)
{
	json_t *a = json_object_get(net.latest, kind);
	return a ? json_deep_copy(a) : NULL;
}

json_t *network_get(const char *kind, const char *name)
{
	const char *key = strcmp(kind, "devices") == 0      ? "device"
	                  : strcmp(kind, "datalinks") == 0  ? "datalink"
	                  : strcmp(kind, "interfaces") == 0 ? "interface"
	                                                    : "route";
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(net.latest, kind), i, o)
	{
		const char *v = json_string_value(json_object_get(o, key));
		if (v && strcmp(v, name) == 0)
			return json_deep_copy(o);
	}
	return NULL;
}

int network_init(struct event_base *base, const char *sys_root, const char *proc_root)
{
	size_t n = strlen(sys_root);
	while (n > 0 && sys_root[n - 1] == '/')
		n--;
	net.sys_root = xstrndup(sys_root, n);
	net.live = n == 0;
	n = strlen(proc_root);
	while (n > 0 && proc_root[n - 1] == '/')
		n--;
	net.proc_root = xstrndup(proc_root, n);
	net.stopping = false;
	net.wq = workq_new(base, 1);
	if (!net.wq)
		return -1;
	workq_set_limit(net.wq, 0);
	return 0;
}

void network_shutdown(void)
{
	net.stopping = true;
	if (net.wq)
		workq_free(net.wq); /* a reading in flight is done, its waiters answered */
	net.wq = NULL;
	json_decref(net.latest);
	free(net.sys_root);
	free(net.proc_root);
	free(net.waiters.e);
	memset(&net, 0, sizeof(net));
	net.stopping = true; /* a request answered later (by a child's exit) is answered at once */
}
