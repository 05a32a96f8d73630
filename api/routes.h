/* SPDX-License-Identifier: ISC */
/* Every route of the API, in one table (api/routes.c). */
#ifndef SPINDLE_API_ROUTES_H
#define SPINDLE_API_ROUTES_H

#include <stddef.h>
#include "net/router.h"

extern const struct route api_routes[];
extern const size_t api_routes_count;

#endif
