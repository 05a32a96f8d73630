/* Configuration: every setting is both a command-line flag (--state-dir) and an INI key
 * (state_dir), parsed once at start-up and handed down read-only. */
#ifndef SPINDLE_CONFIG_H
#define SPINDLE_CONFIG_H

#include <stdbool.h>
#include <stdio.h>
#include "log.h"

struct config {
	char *config_file;
	char *state_dir;
	char *listen;      /* HTTPS, ADDR:PORT */
	char *http_listen; /* plain HTTP, NULL when off */
	bool allow_insecure_http;
	char *webroot;
	enum log_level log_level;
	bool foreground;
	long long kdf_iterations;
	long long max_body;
	long long max_header;
	long long max_connections;
	long long timeout_s;
	long long session_timeout_min;
	long long session_max_hours;
	long long helper_threads;
};

enum config_result { CONFIG_OK, CONFIG_EXIT_OK, CONFIG_ERROR };

/* Fills cfg from defaults, the config file, then the flags. On CONFIG_ERROR a one-line
 * message has been printed to stderr (exit 2); CONFIG_EXIT_OK after --help/--version. */
enum config_result config_load(struct config *cfg, int argc, char **argv);
void config_free(struct config *cfg);
void config_usage(FILE *out);

/* Splits "ADDR:PORT" / "[v6]:PORT" into host and port; -1 if malformed. */
int config_split_addr(const char *s, char *host, size_t hostlen, unsigned *port);
bool config_addr_is_loopback(const char *host);

#endif
