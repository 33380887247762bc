/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trust: the repository index is accepted only with a detached signature
 * (`openssl dgst -sha256 -sign`) by one of the pinned public keys, and every
 * package only with the SHA-256 and size the signed index gives.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "source/source.h"

/* The fingerprint (16 hex digits) of key I, I < verify_keys_count(KS). */
const char *verify_keys_fingerprint(const struct keyset *ks, size_t i);

int sha256_reset(struct sha256 *s);
