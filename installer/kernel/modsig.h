/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel module signatures, checked the way the 6.1 kernel checks them, so
 * that a module the kernel would refuse is refused before it gets there:
 *
 *   [module][PKCS#7 DER][12-byte struct module_signature]["~Module signature appended~\n"]
 *
 * struct module_signature: algo, hash, id_type (2 = PKCS#7), signer_len,
 * key_id_len, 3 pad bytes, big-endian sig_len; all but id_type and sig_len
 * are zero. The signed bytes are the module without the three tails. The
 * CMS SignedData must carry detached id-data content and no signed
 * attributes; its signer is named by issuer and serial or, with sign-file -k,
 * by subject key identifier.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define MODSIG_MAGIC "~Module signature appended~\n"
#define MODSIG_MAGIC_LEN (sizeof(MODSIG_MAGIC) - 1)
#define MODSIG_INFO_LEN 12
#define MODSIG_TAIL_LEN (MODSIG_MAGIC_LEN + MODSIG_INFO_LEN)
#define MODSIG_MAX_SIG (64u * 1024)

struct modsig_layout {
	uint64_t signed_len; /* bytes covered by the signature */
	uint64_t sig_off;    /* where the PKCS#7 blob starts */
	uint32_t sig_len;
};

/*
 * Parses the end of a module of FILE_LEN bytes; TAIL holds its last
 * TAIL_LEN = min(FILE_LEN, MODSIG_TAIL_LEN) bytes. Returns 0 (signed, *ret
 * filled), 1 (no signature appended), or -1 with EXIT_VERIFY and the reason
 * the kernel would give (corrupt length, not PKCS#7, non-zero fields).
 */
_must_check_ int modsig_parse_tail(const uint8_t *tail, size_t tail_len, uint64_t file_len,
				   struct modsig_layout *ret, struct err *e);

/* The certificates modules must be signed with (--module-cert). */
struct modsig_certs;

/*
 * Loads certificates from PATHS: PEM (one or more per file) or DER. Returns 0,
 * or -1 with EXIT_USAGE naming the file.
 */
_must_check_ int modsig_certs_load(char *const *paths, size_t n, struct modsig_certs **ret,
				   struct err *e);
void modsig_certs_free(struct modsig_certs *c);
DEFINE_POINTER_CLEANUP(struct modsig_certs, modsig_certs_free)
size_t modsig_certs_count(const struct modsig_certs *c);

struct modsig_result {
	bool is_signed;
	bool verified;	    /* the signature verifies with a pinned certificate */
	char signer[256];   /* the matching certificate's subject, else the issuer named */
	char key_id[160];   /* subject key id, or serial number, as hex pairs */
	char hash_algo[32]; /* "sha256" */
	/* SHA-256 of the matching pinned certificate's DER, lower-case hex; "" if none */
	char cert_sha256[65];
	char reason[512]; /* why not verified; "" when verified */
};

/*
 * Examines the module open as FD: parses the signature and, with CERTS (may
 * be NULL or empty), verifies it. A module that is unsigned, malformed or
 * signed by another key is a result, not an error: *ret says why. Returns 0,
 * or -1 with e set on I/O trouble.
 */
_must_check_ int modsig_check_fd(int fd, const struct modsig_certs *certs,
				 struct modsig_result *ret, struct err *e);
