/* SPDX-License-Identifier: ISC */
/* `zpool status` parsed (zpool.h). */
#include "zpool.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *next_line(const char *l)
{
	const char *nl = strchr(l, '\n');
	return nl ? nl + 1 : l + strlen(l);
}

/* The n-th (0-based) space-separated word of the line at l into buf, or "". */
static void word(const char *l, int n, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0;; i++) {
		l += strspn(l, " \t");
		size_t w = strcspn(l, " \t\n");
		if (!w)
			return;
		if (i == n) {
			if (w >= len)
				w = len - 1;
			memcpy(buf, l, w);
			buf[w] = '\0';
			return;
		}
		l += w;
	}
}

/* What follows the 5th word (name, state, read, write, cksum) of the line at l: zpool's
 * note on a device ("cannot open", "too many errors"), into buf. */
static void note_of(const char *l, char *buf, size_t len)
{
	for (int i = 0; i < 5; i++) {
		l += strspn(l, " \t");
		l += strcspn(l, " \t\n");
	}
	l += strspn(l, " \t");
	size_t n = strcspn(l, "\n");
	while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(buf, l, n);
	buf[n] = '\0';
}

/* A line of the config section: its depth (two spaces a level after the tab) and name. */
static bool vdev_line(const char *l, int *depth, char *name, size_t len)
{
	if (l[0] != '\t')
		return false;
	size_t sp = strspn(l + 1, " ");
	size_t n = strcspn(l + 1 + sp, " \t\n");
	if (!n)
		return false;
	*depth = (int)sp / 2;
	if (n >= len)
		n = len - 1;
	memcpy(name, l + 1 + sp, n);
	name[n] = '\0';
	return true;
}

static json_t *device_json(const char *l, const char *name)
{
	char state[64], note[256];
	word(l, 1, state, sizeof(state));
	note_of(l, note, sizeof(note));
	return json_pack("{s:o, s:o, s:o}", "name", utf8_json(name), "state", utf8_json(state),
	                 "note", utf8_json(note));
}

json_t *zpool_parse_vdevs(const char *text)
{
	static const struct {
		const char *heading, *cls;
	} classes[] = {{"logs", "log"},
	               {"cache", "cache"},
	               {"spares", "spare"},
	               {"special", "special"},
	               {"dedup", "dedup"}};
	const char *l = text;
	while (*l && strncmp(l, "config:", 7) != 0 && strncmp(l, " config:", 8) != 0)
		l = next_line(l);
	if (!*l)
		return NULL;
	l = next_line(l);
	while (*l && (*l == '\n' || strncmp(l, "\tNAME", 5) == 0))
		l = next_line(l);
	json_t *vdevs = json_array();
	json_t *group = NULL; /* the vdev whose devices follow */
	const char *cls = NULL;
	bool pool_seen = false;
	char name[512];
	int depth;
	for (; *l && vdev_line(l, &depth, name, sizeof(name)); l = next_line(l)) {
		int next_depth = -1;
		char next_name[512];
		if (!vdev_line(next_line(l), &next_depth, next_name, sizeof(next_name)))
			next_depth = -1;
		if (depth == 0) {
			group = NULL;
			if (!pool_seen) {
				pool_seen = true;
				continue;
			}
			cls = NULL;
			for (size_t i = 0; i < nitems(classes); i++)
				if (strcmp(name, classes[i].heading) == 0)
					cls = classes[i].cls;
			if (!cls)
				cls = "other";
			continue;
		}
		if (depth == 1) {
			json_t *v = json_object();
			if (next_depth > 1) { /* mirror-0, raidz2-1: the type before the number */
				char type[512];
				memcpy(type, name, sizeof(type));
				char *dash = strrchr(type, '-');
				if (dash)
					*dash = '\0';
				json_object_set_new(v, "type", utf8_json(type));
				json_object_set_new(v, "devices", json_array());
				group = v;
			} else {
				json_object_set_new(v, "type", utf8_json("disk"));
				json_object_set_new(v, "devices",
				                    json_pack("[o]", device_json(l, name)));
				group = NULL;
			}
			if (cls)
				json_object_set_new(v, "class", utf8_json(cls));
			json_array_append_new(vdevs, v);
			continue;
		}
		/* deeper: a device of the group (a replacing-0 or spare-1 inside it is passed) */
		if (group && next_depth <= depth)
			json_array_append_new(json_object_get(group, "devices"),
			                      device_json(l, name));
	}
	return vdevs;
}
