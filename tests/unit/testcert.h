/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A self-signed certificate for the unit tests that pin one (--module-cert, the agent's
 * reload): make_cert(PATH) writes it as PEM, made with libcrypto (no openssl program
 * needed). Failures stop the test (cmocka asserts); include after cmocka_prelude.h.
 */
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>

static inline void make_cert(const char *path)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *n;
	FILE *out;

	assert_non_null(k);
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 1), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), 0));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	assert_int_equal(X509_set_pubkey(x, k), 1);
	n = X509_get_subject_name(x);
	assert_int_equal(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
						    (const unsigned char *)"test", -1, -1, 0),
			 1);
	assert_int_equal(X509_set_issuer_name(x, n), 1);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	out = fopen(path, "w");
	assert_non_null(out);
	assert_int_equal(PEM_write_X509(out, x), 1);
	fclose(out);
	X509_free(x);
	EVP_PKEY_free(k);
}
