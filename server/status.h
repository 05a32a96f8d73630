/* Small counters other modules publish for the dashboard and /metrics. */
#ifndef SPINDLE_STATUS_H
#define SPINDLE_STATUS_H

/* server/leds.c: locator LEDs that are lit now (system and disks). */
unsigned leds_lit_count(void);
/* server/jobs.c: benchmark jobs running and waiting. */
void jobs_counts(unsigned *running, unsigned *queued);

#endif
