/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trust: the repository index is accepted only with a detached signature
 * (`openssl dgst -sha256 -sign`) by one of the pinned public keys, and every
 * package only with the SHA-256 and size the signed index gives.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define VERIFY_KEYS_DIR "/etc/nvidia-driver-installer/keys"
#define VERIFY_SIG_MAX (64u * 1024)

struct keyset;

/*
 * Loads the PEM files PATHS (public keys or X.509 certificates). With N == 0
 * loads every *.pem of DIR instead. Returns 0 and a new keyset, or -1
 * (EXIT_USAGE: a key the operator named is unreadable, or there is none).
 */
_must_check_ int verify_keys_load(char *const *paths, size_t n, const char *dir,
				  struct keyset **ret, struct err *e);
void verify_keys_free(struct keyset *ks);
DEFINE_POINTER_CLEANUP(struct keyset, verify_keys_free)
size_t verify_keys_count(const struct keyset *ks);
/* The fingerprint (16 hex digits) of key I, I < verify_keys_count(KS). */
const char *verify_keys_fingerprint(const struct keyset *ks, size_t i);

/*
 * After a PEM read failed: whether it failed because no block is left (true), rather than
 * on a damaged or cut-off block. Leaves OpenSSL's error queue as it is.
 */
bool verify_pem_at_end(void);

/* Bytes and their detached signature. */
struct verify_signed {
	const void *data;
	size_t len;
	const void *sig;
	size_t sig_len;
};

/*
 * Checks S's signature over S's data with SHA-256 against each key. Returns 0 and
 * writes the matching key's fingerprint (16 hex digits) to ret_fpr, or -1 with
 * EXIT_VERIFY.
 */
_must_check_ int verify_index_signature(const struct keyset *ks, const struct verify_signed *s,
					char ret_fpr[17], struct err *e);

/* Streaming SHA-256. */
struct sha256;
struct sha256 *sha256_new(void);
void sha256_free(struct sha256 *s);
DEFINE_POINTER_CLEANUP(struct sha256, sha256_free)
int sha256_reset(struct sha256 *s);
int sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes 64 lowercase hex digits and a NUL. The context must be reset before reuse. */
int sha256_final_hex(struct sha256 *s, char out[65]);
