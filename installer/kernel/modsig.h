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

#include <stddef.h>
#include <stdint.h>

#include "kernel/kernel.h" /* the face: what other folders call of this module */
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

size_t modsig_certs_count(const struct modsig_certs *c);

/*
 * The key id the kernel shows (/proc/keys, "SUBJECT: ID") for the pinned certificate whose
 * DER SHA-256 is SHA256 (lower-case hex): its subject key identifier, else its serial
 * number, as hex pairs into OUT. Returns 1, or 0 when no pinned certificate has that digest.
 */
int modsig_certs_kernel_id(const struct modsig_certs *c, const char *sha256, char *out,
			   size_t size);
