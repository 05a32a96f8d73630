/* SPDX-License-Identifier: ISC */
/* The HTTPS context and its first-start self-signed certificate. */
#include "tls.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#define TLS_GROUPS "X25519:P-256:P-384"
#define TLS12_CIPHERS                                                                              \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                               \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                               \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

static void log_ssl_error(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256];
	ERR_error_string_n(e, buf, sizeof(buf));
	log_err("%s: %s", what, e ? buf : "unknown error");
}

static int add_ext(X509 *cert, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
	X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return -1;
	int r = X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return r == 1 ? 0 : -1;
}

static int write_pem(const char *path, int mode, int (*fn)(BIO *, void *), void *obj)
{
	BIO *mem = BIO_new(BIO_s_mem());
	if (!mem || !fn(mem, obj)) {
		BIO_free(mem);
		return -1;
	}
	char *data;
	long len = BIO_get_mem_data(mem, &data);
	int r = util_write_file_atomic(path, data, (size_t)len, (mode_t)mode);
	BIO_free(mem);
	return r;
}

static int pem_key(BIO *b, void *k)
{
	return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
}

static int pem_cert(BIO *b, void *c)
{
	return PEM_write_bio_X509(b, c);
}

static int make_self_signed(const char *certpath, const char *keypath)
{
	int ret = -1;
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *cert = X509_new();
	char host[256] = "localhost", san[600];
	if (!key || !cert)
		goto out;
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	unsigned char serial[16];
	if (util_random(serial, sizeof(serial)) < 0)
		goto out;
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert))) {
		BN_free(bn);
		goto out;
	}
	BN_free(bn);
	X509_set_version(cert, 2);
	X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(cert), 10L * 365 * 24 * 3600);
	X509_NAME *name = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Spindle", -1,
	                           -1, 0);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host, -1, -1,
	                           0);
	X509_set_issuer_name(cert, name);
	X509_set_pubkey(cert, key);
	snprintf(san, sizeof(san), "DNS:%s,DNS:localhost,IP:127.0.0.1,IP:::1", host);
	if (add_ext(cert, NID_subject_alt_name, san) < 0 ||
	    add_ext(cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(cert, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(cert, NID_ext_key_usage, "serverAuth") < 0)
		goto out;
	if (!X509_sign(cert, key, EVP_sha256()))
		goto out;
	/* The key first: a certificate without its key would be useless at next start. */
	if (write_pem(keypath, 0600, pem_key, key) < 0 ||
	    write_pem(certpath, 0644, pem_cert, cert) < 0) {
		log_err("cannot write %s: %s", keypath, strerror(errno));
		goto out;
	}
	log_info("made a self-signed certificate for %s in %s", host, certpath);
	ret = 0;
out:
	if (ret < 0)
		log_ssl_error("cannot make a self-signed certificate");
	X509_free(cert);
	EVP_PKEY_free(key);
	return ret;
}

SSL_CTX *tls_ctx_new(const char *dir)
{
	char certpath[PATH_MAX], keypath[PATH_MAX];
	snprintf(certpath, sizeof(certpath), "%s/cert.pem", dir);
	snprintf(keypath, sizeof(keypath), "%s/key.pem", dir);
	if (util_mkdirs(dir, 0700) < 0) {
		log_err("cannot create %s: %s", dir, strerror(errno));
		return NULL;
	}
	bool have_cert = access(certpath, F_OK) == 0, have_key = access(keypath, F_OK) == 0;
	if (!have_cert && !have_key && make_self_signed(certpath, keypath) < 0)
		return NULL;
	if (have_cert != have_key) {
		log_err(
		    "%s holds only one of cert.pem and key.pem; restore the other or remove both",
		    dir);
		return NULL;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		log_ssl_error("SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* Key exchange on X25519, P-256 or P-384 only (nginx's modern profile): OpenSSL's own
	 * list also takes ffdhe2048 to ffdhe8192 in TLS 1.3, and one ffdhe8192 handshake costs
	 * the loop ~115 ms of CPU for a ClientHello a client can replay for nothing (X25519:
	 * ~1 ms). TLS 1.2: ECDHE with AEAD suites only (no CBC: LUCKY13, "obsolete" to
	 * scanners; no static RSA or DHE), ECDSA for the self-signed key, RSA for a site's. */
	if (SSL_CTX_set1_groups_list(ctx, TLS_GROUPS) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1) {
		log_ssl_error("setting TLS groups and ciphers");
		SSL_CTX_free(ctx);
		return NULL;
	}
	/* Resumption through session tickets (TLS 1.2 and 1.3, on by default): the client keeps
	 * the session, so a server-side cache would only hold memory for every handshake. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_use_certificate_chain_file(ctx, certpath) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, keypath, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		log_ssl_error(certpath);
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}
