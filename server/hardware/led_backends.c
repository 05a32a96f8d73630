/* SPDX-License-Identifier: ISC */
/* The one table of LED backends (leds_int.h), as api/routes.c is the one table of routes:
 * each kind is defined in the file of its kind; the virtual one, which the record alone
 * holds, is here. */
#include "leds_int.h"

/* An LED that only the record holds: nothing to set, so it is set. */
static void virtual_set(struct op *op)
{
	op->now = op->on;
	op->done(op, 0, NULL);
}

const struct led_backend_ops led_virtual = {"virtual", virtual_set, false, false};

const struct led_backend_ops *const led_backends[LED_NBACKENDS] = {
    [LED_VIRTUAL] = &led_virtual, [LED_SES] = &led_ses,   [LED_LEDS] = &led_leds,
    [LED_LEDCTL] = &led_ledctl,   [LED_IPMI] = &led_ipmi,
};
