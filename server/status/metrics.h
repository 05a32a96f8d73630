/* SPDX-License-Identifier: ISC */
/* GET /metrics: the collector's raw counters and gauges, and the daemon's own, in the
 * Prometheus text exposition format (version 0.0.4), every name prefixed spindle_. */
#ifndef SPINDLE_METRICS_H
#define SPINDLE_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* allow: who may scrape without a token (--metrics-allow: "CIDR[,CIDR...]" or "none").
 * -1 with the reason logged. */
int metrics_init(const char *allow);
void metrics_shutdown(void);
/* Is the peer address (numeric, as evhttp reports it) in the allow-list? */
bool metrics_peer_allowed(const char *peer);
/* The exposition now: the sample part is rebuilt once per sample, the daemon's gauges on
 * every call. Valid until the next call. */
const char *metrics_text(size_t *len);

#endif
