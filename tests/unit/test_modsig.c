// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"
#include "scratch.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/ktrust.h"
#include "kernel/modsig.h"

/* The last 40 bytes of a module: info struct, then the magic. */
static void make_tail(uint8_t *t, uint8_t id_type, uint32_t sig_len, uint8_t junk_at)
{
	memset(t, 0, MODSIG_INFO_LEN);
	t[2] = id_type;
	t[8] = (uint8_t)(sig_len >> 24);
	t[9] = (uint8_t)(sig_len >> 16);
	t[10] = (uint8_t)(sig_len >> 8);
	t[11] = (uint8_t)sig_len;
	if (junk_at < 8)
		t[junk_at] = 1;
	memcpy(t + MODSIG_INFO_LEN, MODSIG_MAGIC, MODSIG_MAGIC_LEN);
}

static void test_tail(void **state)
{
	uint8_t t[MODSIG_TAIL_LEN];
	struct modsig_layout l;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(MODSIG_TAIL_LEN, 40);
	make_tail(t, 2, 700, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), 0);
	assert_int_equal(l.sig_len, 700);
	assert_int_equal(l.sig_off, 10000 - 40 - 700);
	assert_int_equal(l.signed_len, l.sig_off);

	/* The kernel's checks, in its order. */
	make_tail(t, 2, 10000 - 40, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
	assert_non_null(strstr(e.msg, "corrupt signature length"));
	make_tail(t, 2, 10000 - 41, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 100000, &l, &e), 0);
	make_tail(t, 1, 700, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
	assert_non_null(strstr(e.msg, "not PKCS#7"));
	for (uint8_t i = 0; i < 8; i++) {
		if (i == 2)
			continue;
		make_tail(t, 2, 700, i);
		assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), -1);
		assert_non_null(strstr(e.msg, "non-zero"));
	}
	make_tail(t, 2, 0xffffffffu, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 1ull << 40, &l, &e), -1);
	assert_non_null(strstr(e.msg, "implausibly large"));

	/* No magic, or too short to hold one: unsigned, not an error. */
	make_tail(t, 2, 700, 99);
	t[MODSIG_TAIL_LEN - 2] = 'X';
	assert_int_equal(modsig_parse_tail(t, sizeof(t), 10000, &l, &e), 1);
	assert_int_equal(modsig_parse_tail(t, 10, 10, &l, &e), 1);
	assert_int_equal(modsig_parse_tail(t, 0, 0, &l, &e), 1);
	/* Exactly the tail and nothing before it: the length check catches it. */
	make_tail(t, 2, 0, 99);
	assert_int_equal(modsig_parse_tail(t, sizeof(t), sizeof(t), &l, &e), -1);
}

static void test_certs(void **state)
{
	struct modsig_certs *c = NULL;
	char *bad[] = {(char *)"/nonexistent.pem"};
	char *notcert[] = {(char *)"/etc/hostname"};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(modsig_certs_load(NULL, 0, &c, &e), 0);
	assert_int_equal(modsig_certs_count(c), 0);
	modsig_certs_free(c);
	assert_int_equal(modsig_certs_load(bad, 1, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_int_equal(modsig_certs_load(notcert, 1, &c, &e), -1);
	assert_non_null(strstr(e.msg, "not a PEM or DER X.509 certificate"));
	modsig_certs_free(NULL);
}

/* Appends a fresh self-signed certificate (CN=NAME) to PATH, or TEXT when NAME is NULL. */
static void append_cert(const char *path, const char *name, const char *text)
{
	FILE *f = fopen(path, "a");
	EVP_PKEY *k;
	X509 *x;

	assert_non_null(f);
	if (!name) {
		fputs(text, f);
		fclose(f);
		return;
	}
	k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	x = X509_new();
	assert_non_null(k);
	assert_int_equal(X509_set_version(x, 2), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	assert_int_equal(X509_set_pubkey(x, k), 1);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)name, -1, -1, 0);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(x)), 1);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* A certificate file is read whole or refused whole: never only the certificates before damage. */
static void test_cert_bundles(void **state)
{
	static const char damaged[] = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END "
				      "CERTIFICATE-----\n";
	static const char cut[] = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n";
	struct scratch_fixture *f = *state;
	char path[128];
	char *paths[1] = {path};
	struct modsig_certs *c = NULL;
	struct err e;

	err_clear(&e);
	scratch_path(f, "certs.pem", path, sizeof(path));

	/* Two certificates: both trusted for modules; one too many for the kernel keyring. */
	append_cert(path, "one", NULL);
	append_cert(path, "two", NULL);
	assert_int_equal(modsig_certs_load(paths, 1, &c, &e), 0);
	assert_int_equal(modsig_certs_count(c), 2);
	modsig_certs_free(c);
	c = NULL;
	assert_int_equal(ktrust_check_cert(path, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "holds more than one certificate"));
	unlink(path);

	/* A damaged block between two good ones, or a block cut short: refused. */
	append_cert(path, "one", NULL);
	append_cert(path, NULL, damaged);
	append_cert(path, "two", NULL);
	err_clear(&e);
	assert_int_equal(modsig_certs_load(paths, 1, &c, &e), -1);
	assert_null(c);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "after certificate 1: a PEM block does not parse"));
	err_clear(&e);
	assert_int_equal(ktrust_check_cert(path, &e), -1);
	unlink(path);
	append_cert(path, "one", NULL);
	append_cert(path, NULL, cut);
	err_clear(&e);
	assert_int_equal(modsig_certs_load(paths, 1, &c, &e), -1);
	assert_non_null(strstr(e.msg, "after certificate 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_certs),
		scratch_unit_test(test_cert_bundles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
