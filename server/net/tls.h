/* SPDX-License-Identifier: ISC */
/* TLS for the HTTPS listener: a self-signed EC P-256 certificate made at first start. */
#ifndef SPINDLE_TLS_H
#define SPINDLE_TLS_H

#include <openssl/ssl.h>

/* Loads DIR/cert.pem and DIR/key.pem, creating them (key 0600) when both are missing.
 * TLS 1.2 or newer only. NULL with the reason logged. */
SSL_CTX *tls_ctx_new(const char *dir);

#endif
