/* SPDX-License-Identifier: ISC */
/* Disk health from smartctl's JSON (server/hardware/smart.c, smart_parse): each drive of
 * tests/api/fixtures/smart/ read into its health, why, and counters; the helper's error
 * line, an answer that is not JSON, a disk asleep with and without an earlier reading, a
 * device smartctl cannot open, and a temperature at its limit. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "hardware/smart.h"

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", SMART_FIXTURES, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static struct smart_info parse(const char *fixture, const struct smart_info *prev)
{
	struct smart_info s;
	size_t len = 0;
	char *doc = slurp(fixture, &len);
	if (!doc)
		diag("cannot read %s/%s", SMART_FIXTURES, fixture);
	smart_parse(doc ? doc : "", len, 1800000000, prev, &s);
	free(doc);
	return s;
}

static struct smart_info parse_text(const char *text, const struct smart_info *prev)
{
	struct smart_info s;
	smart_parse(text, strlen(text), 1800000100, prev, &s);
	return s;
}

int main(void)
{
	struct smart_info ssd = parse("sata_ssd_ok.json", NULL);
	is_str(smart_health_name(ssd.health), "ok", "a healthy SATA SSD is ok (%s)", ssd.why);
	ok(strcmp(ssd.protocol, "ATA") == 0 && ssd.temperature_c == 31 &&
	       ssd.power_on_hours == 12011 && ssd.read_at == 1800000000,
	   "its protocol, temperature, hours and when it was read");
	ok(ssd.reallocated == 0 && ssd.pending == SMART_NONE && ssd.crc_errors == 2 &&
	       ssd.overall_passed == 1,
	   "its counters: none reallocated, no pending one reported, 2 CRC errors (a cable)");

	struct smart_info hdd = parse("hdd_pending.json", NULL);
	is_str(smart_health_name(hdd.health), "warning", "an HDD with pending sectors: warning");
	is_str(hdd.why, "8 sectors pending reallocation; 2 sectors uncorrectable offline",
	       "why, in the drive's own counts");
	ok(hdd.temperature_limit_c == 60 && hdd.power_on_hours == 46210,
	   "its SCT temperature limit and hours");

	struct smart_info sas = parse("sas_grown_defects.json", NULL);
	is_str(smart_health_name(sas.health), "warning", "a SAS drive with grown defects: warning");
	is_str(sas.why, "12 grown defects", "why");
	ok(strcmp(sas.protocol, "SCSI") == 0 && sas.temperature_limit_c == 60 &&
	       sas.uncorrected_read == 0 && sas.uncorrected_write == 0 &&
	       sas.reallocated == SMART_NONE,
	   "its trip temperature and error counters, no ATA counters");

	struct smart_info nvme = parse("nvme_critical_warning.json", NULL);
	is_str(smart_health_name(nvme.health), "failing", "an NVMe critical warning: failing");
	is_str(nvme.why,
	       "the drive's own health check failed; NVMe critical warning 0x04: reliability "
	       "degraded by media or internal errors; 3 media and data integrity errors; 104 % of "
	       "its rated endurance used",
	       "why: every cause");
	ok(nvme.critical_warning == 4 && nvme.percentage_used == 104 &&
	       nvme.available_spare == 87 && nvme.available_spare_threshold == 10,
	   "its NVMe health log");

	struct smart_info asleep = parse("hdd_standby.json", NULL);
	ok(asleep.health == SMART_UNKNOWN && asleep.asleep && asleep.read_at == 0 &&
	       strstr(asleep.why, "spun down"),
	   "asleep before any reading: unknown, not woken (%s)", asleep.why);
	struct smart_info kept = parse("hdd_standby.json", &hdd);
	ok(kept.health == SMART_WARNING && kept.asleep && kept.pending == 8 &&
	       kept.read_at == hdd.read_at,
	   "asleep after a reading: that reading stays, marked asleep");

	struct smart_info gone = parse("open_failed.json", NULL);
	is_str(gone.why,
	       "smartctl cannot read it: Smartctl open device: /dev/sdx failed: No such device",
	       "a device that does not open: smartctl's message");
	ok(gone.health == SMART_UNKNOWN, "and unknown");

	struct smart_info line = parse_text("error smartctl /dev/sde gave no answer within 30 s "
	                                    "and was killed\n",
	                                    &ssd);
	ok(line.health == SMART_UNKNOWN && line.temperature_c == 31 && !line.asleep &&
	       strcmp(line.why, "smartctl /dev/sde gave no answer within 30 s and was killed") == 0,
	   "the helper's error: unknown, why, the last values kept");
	struct smart_info junk = parse_text("smartctl 7.3: Read Device Identity failed\n}{", NULL);
	ok(junk.health == SMART_UNKNOWN && strstr(junk.why, "not JSON"), "not JSON: %s", junk.why);
	struct smart_info none = parse_text("{\"json_format_version\":[1,0]}", NULL);
	ok(none.health == SMART_UNKNOWN && strstr(none.why, "no exit status"), "no exit status: %s",
	   none.why);

	/* the SAS drive at its trip temperature, with no defects */
	size_t len;
	char *doc = slurp("sas_grown_defects.json", &len);
	char *t = doc ? strstr(doc, "\"current\": 35") : NULL;
	char *g = doc ? strstr(doc, "\"scsi_grown_defect_list\": 12") : NULL;
	if (ok(t && g, "the SAS drive's temperature and defects are where the test edits them")) {
		memcpy(t, "\"current\": 61", 13);
		memcpy(g, "\"scsi_grown_defect_list\":  0", 28);
		struct smart_info hot;
		smart_parse(doc, len, 1800000000, NULL, &hot);
		is_str(hot.why, "61 °C, at or above its limit of 60 °C",
		       "a drive at its trip temperature");
		ok(hot.health == SMART_WARNING, "is a warning");
	}
	free(doc);
	return done_testing();
}
