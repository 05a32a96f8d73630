/* SPDX-License-Identifier: ISC */
/* Devices: a browser kept signed in ("keep me signed in on this device").
 *
 * At a password login the browser may send the public half of an ECDSA P-256 key pair it
 * made with WebCrypto as not extractable: the private key never leaves that browser's
 * storage, and no script can read it out, so the credential is bound to the device. To log
 * in later it asks for a challenge (auth_device_challenge) and signs
 * "spindle-device-login\n<device id>\n<challenge>" with it; no password is stored anywhere.
 *
 * A challenge is stateless until used: its expiry, a serial number and 8 random bytes,
 * MACed under a key made at start-up. Each device remembers the serials of the last
 * DEVICE_USED_MAX challenges it logged in with, and refuses those and any older than the
 * ones it forgot, until they have all expired: a challenge logs in a device once, two
 * tabs that asked for one each log in in either order, and what that costs is one record
 * per device that logged in lately, whoever else logs in. A device lasts
 * AUTH_DEVICE_IDLE_DAYS after its last login, and at most AUTH_DEVICE_MAX_DAYS after it
 * was made; the sessions it opens are ordinary login sessions named after it, which end
 * with it. A device goes with its user, with a password reset, when deleted, and when its
 * own browser logs out. Device logins that fail are throttled as password logins are;
 * those that succeed, per device (AUTH_DEVICE_LOGIN_LIMIT). Its key must be an
 * uncompressed P-256 point that OpenSSL's public key check passes: the point at infinity
 * would verify a "signature" made with no key at all. Runs on the loop thread: an ECDSA
 * verification costs ~0.1 ms. */
#include "auth_int.h"
#include "audit.h"
#include "base/log.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>

#define CHAL_RAW    40 /* expiry (8) | serial (8) | random (8) | MAC (16), big-endian */
#define CHAL_SERIAL 8  /* where the serial starts */
#define CHAL_RANDOM 16 /* where the random bytes start */
#define CHAL_MAC    24 /* where the MAC starts */
#define CHAL_TEXT   54 /* base64url of 40 bytes */
#define SIG_LEN     64 /* P-256 r | s, as WebCrypto signs (IEEE P1363) */
#define SIG_PREFIX  "spindle-device-login\n"
#define POINT_LEN   65 /* 0x04 | X | Y: an uncompressed P-256 point */

/* Challenges a device remembers using: past that many the oldest goes, and every
 * challenge as old is refused (only a device that logs in far more often than a browser
 * does gets there). */
#define DEVICE_USED_MAX 16

/* What a device's logins leave behind (auth.challenges, by device id), while it matters. */
struct device_use {
	uint64_t used[DEVICE_USED_MAX]; /* serials of challenges it logged in with */
	unsigned nused;
	uint64_t floor;         /* those up to this serial are refused: the newest it forgot */
	int64_t chal_expires;   /* the latest end of the challenges it logged in with */
	struct throttle logins; /* its logins, counted as the throttle counts failures */
};

/* ---- keys and signatures */

/* Whether k's point, as its SubjectPublicKeyInfo xpk encodes it, is a P-256 public key
 * as WebCrypto exports one: uncompressed (65 bytes: not the point at infinity, whose
 * encoding is the one byte 0, nor compressed or hybrid), on the curve and of its order
 * (EVP_PKEY_public_check). */
static bool device_point_ok(const X509_PUBKEY *xpk, EVP_PKEY *k)
{
	const unsigned char *pt = NULL;
	int ptlen = 0;
	if (X509_PUBKEY_get0_param(NULL, &pt, &ptlen, NULL, xpk) != 1 || ptlen != POINT_LEN ||
	    pt[0] != 0x04)
		return false;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
	bool ok = ctx && EVP_PKEY_public_check(ctx) == 1;
	EVP_PKEY_CTX_free(ctx);
	return ok;
}

/* The key of b64 (base64url of a DER SubjectPublicKeyInfo), if it is an EC P-256 one. */
static EVP_PKEY *device_key(const char *b64, struct fault *f)
{
	unsigned char der[DB_DEVICE_KEY_MAX];
	size_t len = b64 ? strlen(b64) : 0;
	ssize_t n = len <= DB_DEVICE_KEY_MAX ? util_b64url_decode(b64, len, der, sizeof(der)) : -1;
	if (n <= 0) {
		fault_set(f, ERR_INVALID_ARG,
		          "device.public_key: must be base64url (no padding) of a DER "
		          "SubjectPublicKeyInfo, at most %d characters",
		          DB_DEVICE_KEY_MAX);
		return NULL;
	}
	const unsigned char *p = der;
	X509_PUBKEY *xpk = d2i_X509_PUBKEY(NULL, &p, (long)n);
	EVP_PKEY *k = xpk && p == der + n ? X509_PUBKEY_get(xpk) : NULL;
	char group[64] = "";
	size_t glen = 0;
	if (!k || !EVP_PKEY_is_a(k, "EC") ||
	    !EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
	                                    &glen) ||
	    strcmp(group, "prime256v1") != 0) {
		EVP_PKEY_free(k);
		X509_PUBKEY_free(xpk);
		fault_set(f, ERR_INVALID_ARG,
		          "device.public_key: must be an ECDSA P-256 public key (WebCrypto "
		          "exportKey('spki') of a key made with namedCurve P-256)");
		return NULL;
	}
	bool ok = device_point_ok(xpk, k);
	X509_PUBKEY_free(xpk);
	if (!ok) {
		EVP_PKEY_free(k);
		fault_set(f, ERR_INVALID_ARG,
		          "device.public_key: must be an uncompressed P-256 point (0x04 | X | Y, "
		          "65 bytes) on the curve, not the point at infinity, as WebCrypto "
		          "exportKey('spki') gives");
		return NULL;
	}
	return k;
}

/* Whether sig (r | s, 32 bytes each) signs msg under k with ECDSA and SHA-256. */
static bool device_verify(EVP_PKEY *k, const char *msg, const unsigned char sig[SIG_LEN])
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, SIG_LEN / 2, NULL),
	       *s = BN_bin2bn(sig + SIG_LEN / 2, SIG_LEN / 2, NULL);
	unsigned char *der = NULL;
	int dlen = -1;
	if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
		r = s = NULL; /* es owns them */
		dlen = i2d_ECDSA_SIG(es, &der);
	}
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	EVP_MD_CTX *ctx = dlen > 0 ? EVP_MD_CTX_new() : NULL;
	bool ok =
	    ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestVerify(ctx, der, (size_t)dlen, (const unsigned char *)msg, strlen(msg)) == 1;
	EVP_MD_CTX_free(ctx);
	OPENSSL_free(der);
	return ok;
}

/* ---- challenges */

static bool chal_mac(const unsigned char raw[CHAL_RAW], unsigned char out[16])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (!HMAC(EVP_sha256(), auth.chal_key, sizeof(auth.chal_key), raw, CHAL_MAC, mac, &len))
		return false;
	memcpy(out, mac, 16);
	return true;
}

int auth_device_challenge(json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	unsigned char raw[CHAL_RAW];
	int64_t expires = util_now() + AUTH_CHALLENGE_S;
	uint64_t serial = ++auth.chal_serial;
	for (int i = 0; i < 8; i++) {
		raw[i] = (unsigned char)((uint64_t)expires >> (56 - 8 * i));
		raw[CHAL_SERIAL + i] = (unsigned char)(serial >> (56 - 8 * i));
	}
	if (util_random(raw + CHAL_RANDOM, CHAL_MAC - CHAL_RANDOM) < 0 ||
	    !chal_mac(raw, raw + CHAL_MAC))
		return fault_set(f, ERR_INTERNAL, "no randomness");
	char text[CHAL_TEXT + 1], when[32];
	util_b64url(raw, sizeof(raw), text);
	*out = json_pack("{s:{s:s, s:s}}", "challenge", "value", text, "expires",
	                 util_iso8601(expires, when, sizeof(when)));
	return 0;
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* 0 when text is a challenge this process made, unexpired, and not used by the device
 * (use: what its logins left, or NULL); else -1 with why. *expires is its end, *serial
 * its serial. */
static int chal_check(const char *text, const struct device_use *use, int64_t now, int64_t *expires,
                      uint64_t *serial, const char **why)
{
	unsigned char raw[CHAL_RAW], mac[16];
	if (!text || strlen(text) != CHAL_TEXT ||
	    util_b64url_decode(text, CHAL_TEXT, raw, sizeof(raw)) != CHAL_RAW) {
		*why = "challenge: not one of this server's (ask POST /api/access/v1/challenge)";
		return -1;
	}
	if (!chal_mac(raw, mac) || CRYPTO_memcmp(mac, raw + CHAL_MAC, sizeof(mac)) != 0) {
		*why = "challenge: not one of this server's, or from before it restarted (ask "
		       "POST /api/access/v1/challenge)";
		return -1;
	}
	*expires = (int64_t)be64(raw);
	*serial = be64(raw + CHAL_SERIAL);
	if (*expires < now) {
		*why = "challenge: expired (a challenge lasts 2 minutes; ask for another)";
		return -1;
	}
	/* One device's use is no concern of another's: each signs its own id. */
	for (unsigned i = 0; use && i < use->nused; i++)
		if (use->used[i] == *serial) {
			*why =
			    "challenge: already used (each logs in a device once; ask for another)";
			return -1;
		}
	if (use && *serial <= use->floor) {
		*why = "challenge: older than those this device logged in with lately (ask for "
		       "another)";
		return -1;
	}
	return 0;
}

/* The device logged in with the challenge numbered serial, ending at expires. */
static void use_note(struct device_use *use, uint64_t serial, int64_t expires)
{
	if (use->nused < DEVICE_USED_MAX) {
		use->used[use->nused++] = serial;
	} else {
		unsigned old = 0;
		for (unsigned i = 1; i < use->nused; i++)
			if (use->used[i] < use->used[old])
				old = i;
		if (use->used[old] > use->floor)
			use->floor = use->used[old];
		use->used[old] = serial;
	}
	if (expires > use->chal_expires)
		use->chal_expires = expires;
}

static bool use_prune_cb(void *val, void *ctx)
{
	struct device_use *u = val;
	int64_t now = *(const int64_t *)ctx;
	if (u->chal_expires >= now || !throttle_quiet(&u->logins, AUTH_DEVICE_LOGIN_WINDOW, now))
		return false;
	free(u);
	return true;
}

void devices_prune(int64_t now)
{
	hmap_filter(&auth.challenges, use_prune_cb, &now);
}

/* A device that goes forgets its logins. */
static void use_forget(const char *id)
{
	free(hmap_del(&auth.challenges, id, strlen(id)));
}

/* ---- the devices */

json_t *device_public(const struct db_device *d)
{
	char created[32], used[32], expires[32];
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "id", d->id, "name", d->name,
	                 "user", d->user, "address", d->address, "ctime",
	                 util_iso8601(d->created, created, sizeof(created)), "last_used",
	                 util_iso8601(d->last_used, used, sizeof(used)), "expires",
	                 util_iso8601(d->expires, expires, sizeof(expires)));
}

static int64_t device_end(int64_t created, int64_t now)
{
	int64_t idle = now + (int64_t)AUTH_DEVICE_IDLE_DAYS * 86400;
	int64_t max = created + (int64_t)AUTH_DEVICE_MAX_DAYS * 86400;
	return idle < max ? idle : max;
}

int device_request_check(const struct auth_device_req *req, struct fault *f)
{
	const char *name = req->name;
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > DB_NAME_MAX)
		return fault_set(f, ERR_INVALID_ARG,
		                 "device.name: 1 to %d bytes naming the browser (e.g. \"Chrome on "
		                 "Android\")",
		                 DB_NAME_MAX);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return fault_set(f, ERR_INVALID_ARG, "device.name: no control characters");
	EVP_PKEY *k = device_key(req->public_key, f);
	if (!k)
		return -1;
	EVP_PKEY_free(k);
	return 0;
}

int device_create(const char *user, const struct auth_device_req *req, const char *peer,
                  int64_t now, struct db_device *out, struct fault *f)
{
	struct db_device *list = NULL;
	size_t n = 0;
	if (db_device_list(auth.db, user, &list, &n) < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	/* Too many (a browser that never logs out, but forgets): the least recently used goes. */
	if (n >= AUTH_DEVICES_PER_USER) {
		size_t old = 0;
		for (size_t i = 1; i < n; i++)
			if (list[i].last_used < list[old].last_used)
				old = i;
		device_delete_row(&list[old], NULL, "replaced: too many devices");
	}
	free(list);
	memset(out, 0, sizeof(*out));
	unsigned char rnd[16];
	if (util_random(rnd, sizeof(rnd)) < 0)
		return fault_set(f, ERR_INTERNAL, "no randomness");
	util_hex(rnd, sizeof(rnd), out->id);
	snprintf(out->user, sizeof(out->user), "%s", user);
	snprintf(out->name, sizeof(out->name), "%s", req->name);
	snprintf(out->public_key, sizeof(out->public_key), "%s", req->public_key);
	snprintf(out->address, sizeof(out->address), "%s", peer ? peer : "");
	out->created = out->last_used = now;
	out->expires = device_end(now, now);
	int rc = db_device_insert(auth.db, out);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "user '%s' not found", user);
	if (rc != 0)
		return fault_store(f, db_full(auth.db), "device");
	return 0;
}

void device_delete_row(const struct db_device *d, const char *except_jti, const char *why)
{
	if (db_device_delete(auth.db, d->id) < 0)
		log_warn("auth: could not delete device %.8s of %s", d->id, d->user);
	use_forget(d->id);
	int n = sessions_end_named(d->user, d->id, except_jti);
	log_info("auth: device %.8s '%s' of %s ends (%s); %d session(s) with it", d->id, d->name,
	         d->user, why, n);
}

void devices_revoke_user(const char *user, const char *except_jti)
{
	struct db_device *list = NULL;
	size_t n = 0;
	if (db_device_list(auth.db, user, &list, &n) < 0) {
		log_warn("auth: could not read the devices of %s to end them", user);
		return;
	}
	for (size_t i = 0; i < n; i++)
		device_delete_row(&list[i], except_jti, "the user's sessions were revoked");
	free(list);
}

int auth_device_list(const char *user, json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	if (auth_user_exists(user, f) < 0)
		return -1;
	struct db_device *list = NULL;
	size_t n = 0;
	if (db_device_list(auth.db, user, &list, &n) < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	int64_t now = util_now();
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		if (list[i].expires >= now)
			json_array_append_new(a, device_public(&list[i]));
	free(list);
	*out = json_pack("{s:o}", "devices", a);
	return 0;
}

int auth_device_delete(const char *user, const char *id, const struct identity *actor,
                       const char *peer, struct fault *f)
{
	if (auth_manage_check(user, actor, peer, "device.delete", f) < 0)
		return -1;
	struct db_device d;
	int rc = auth_id_valid(id) ? db_device_get(auth.db, id, &d) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0 || strcmp(d.user, user) != 0)
		return fault_set(f, ERR_NOT_FOUND, "device '%.64s' not found", id ? id : "");
	/* The row first: a device deleted must not log in again after a restart. */
	if (db_device_delete(auth.db, d.id) < 0)
		return fault_store(f, db_full(auth.db), "device");
	use_forget(d.id);
	audit_log(actor ? actor->user : "", peer, "device.delete", user, true, "device '%s' (%.8s)",
	          d.name, d.id);
	int n = sessions_end_named(d.user, d.id, NULL);
	log_info("auth: device %.8s '%s' of %s deleted; %d session(s) with it", d.id, d.name,
	         d.user, n);
	return 0;
}

/* ---- logging in with one */

void auth_device_login(const char *id, const char *challenge, const char *signature,
                       const char *peer, auth_login_done cb, void *arg)
{
	struct fault f;
	if (!auth.ready) {
		fault_set(&f, ERR_BUSY, "authentication is not ready");
		cb(arg, NULL, &f);
		return;
	}
	peer = peer ? peer : "";
	struct db_device d;
	int rc = auth_id_valid(id) ? db_device_get(auth.db, id, &d) : DB_NOTFOUND;
	if (rc < 0) {
		fault_set(&f, ERR_INTERNAL, "database error");
		cb(arg, NULL, &f);
		return;
	}
	int64_t now = util_now(), cexp = 0;
	uint64_t serial = 0;
	struct device_use *use = rc == 0 ? hmap_get(&auth.challenges, d.id, strlen(d.id)) : NULL;
	/* A device that logged in too often lately waits, as a locked guesser does: its own
	 * logins, and no one else's, spend its allowance. */
	int wait = use ? throttle_until(&use->logins, AUTH_DEVICE_LOGIN_LIMIT,
	                                AUTH_DEVICE_LOGIN_WINDOW, now)
	               : 0;
	if (wait) {
		fault_set(&f, ERR_TOO_MANY,
		          "device_id: this device logged in too often lately; retry later");
		f.retry_after = wait; /* (after fault_set, which clears it) */
		cb(arg, NULL, &f);
		return;
	}
	/* Throttled under its user's name, as a password guess for that user would be; an
	 * unknown device under the one name "device:", as unknown users are alike. */
	const char *who = rc == 0 ? d.user : "device:";
	if (auth_password_attempt(who, peer, &f) < 0) {
		cb(arg, NULL, &f);
		return;
	}
	const char *why = NULL;
	unsigned char sig[SIG_LEN];
	size_t slen = signature ? strlen(signature) : 0;
	EVP_PKEY *k = NULL;
	struct fault kf;
	if (rc != 0 || d.expires < now)
		why = "device_id: not a device of this server, or it was revoked or expired (log "
		      "in with the password)";
	else if (chal_check(challenge, use, now, &cexp, &serial, &why) < 0)
		; /* why says */
	else if (slen > 100 || util_b64url_decode(signature, slen, sig, sizeof(sig)) != SIG_LEN)
		why = "signature: must be base64url (no padding) of the 64-byte P-256 signature "
		      "(r | s)";
	else if (!(k = device_key(d.public_key, &kf)))
		why = "device_id: its stored key is unusable (log in with the password)";
	else {
		char msg[sizeof(SIG_PREFIX) + 33 + CHAL_TEXT + 1];
		snprintf(msg, sizeof(msg), SIG_PREFIX "%s\n%s", d.id, challenge);
		if (!device_verify(k, msg, sig))
			why = "signature: does not verify with the device's key";
	}
	EVP_PKEY_free(k);
	const struct user_info *ui = NULL;
	if (!why && (auth_user_info(d.user, &ui) != 0 || !ui->exists))
		why = "device_id: its user is gone";
	int locked = auth_password_result(who, peer, why == NULL);
	if (why) {
		audit_log(rc == 0 ? d.user : "", peer, "login", rc == 0 ? d.user : "", false,
		          "device %.8s: %s%s", id && auth_id_valid(id) ? id : "(none)", why,
		          locked ? "; locked" : "");
		fault_set(&f, ERR_UNAUTHORIZED, "%s", why);
		cb(arg, NULL, &f);
		return;
	}
	/* One record per device that logged in lately (a guesser never gets here): the
	 * challenge it used, and its logins counted. */
	if (!use) {
		use = xcalloc(1, sizeof(*use));
		hmap_put(&auth.challenges, d.id, strlen(d.id), use);
	}
	use_note(use, serial, cexp);
	int lock =
	    throttle_count(&use->logins, AUTH_DEVICE_LOGIN_LIMIT, AUTH_DEVICE_LOGIN_WINDOW, now);
	if (lock)
		log_warn("auth: device %.8s of %s logs in too often: its logins wait %d s", d.id,
		         d.user, lock);
	if (db_device_use(auth.db, d.id, now, device_end(d.created, now)) < 0)
		log_warn("auth: could not note the use of device %.8s", d.id);

	char *token = NULL;
	struct session *s = session_login(d.user, d.id, peer, now, &token, &f);
	if (!s) {
		cb(arg, NULL, &f);
		return;
	}
	audit_log(d.user, peer, "login", d.user, true, "device '%s' (%.8s), session %.8s", d.name,
	          d.id, s->s.jti);
	struct auth_login_result res;
	memset(&res, 0, sizeof(res));
	res.token = token;
	res.expires = session_ends(s, ui);
	memcpy(res.user, d.user, sizeof(res.user));
	res.perms = ui->perms;
	d.last_used = now;
	d.expires = device_end(d.created, now);
	res.device = device_public(&d);
	cb(arg, &res, NULL);
	json_decref(res.device);
	OPENSSL_cleanse(token, strlen(token));
	free(token);
}
