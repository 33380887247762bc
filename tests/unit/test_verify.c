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

#include "source/verify.h"

/* verify_index_signature over the string DATA. */
static int check_sig(const struct keyset *ks, const char *data, const void *sig, size_t sig_len,
		     char fpr[17], struct err *e)
{
	return verify_index_signature(
		ks,
		&(struct verify_signed){
			.data = data, .len = strlen(data), .sig = sig, .sig_len = sig_len},
		fpr, e);
}

/* The running test's scratch directory (its fixture's root). */
static const char *dir;

/* Makes a key of TYPE ("EC" or "RSA"), writes its public half to NAME, signs DATA. */
static void make_key(const char *type, const char *name, const char *data, unsigned char *sig,
		     size_t *sig_len)
{
	EVP_PKEY *k = strcmp(type, "EC") == 0 ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
					      : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char path[128];
	FILE *f;

	assert_non_null(k);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_PUBKEY(f, k), 1);
	fclose(f);
	assert_int_equal(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k), 1);
	assert_int_equal(
		EVP_DigestSign(ctx, sig, sig_len, (const unsigned char *)data, strlen(data)), 1);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
}

/* The fingerprint as defined: 8 bytes of SHA-256 over i2d_PUBKEY of the key in PATH. */
static void expected_fingerprint(const char *path, char out[17])
{
	unsigned char *der = NULL, md[32];
	unsigned int mdlen = 0;
	FILE *f = fopen(path, "r");
	EVP_PKEY *k;
	int len;

	assert_non_null(f);
	k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(k);
	len = i2d_PUBKEY(k, &der);
	assert_true(len > 0);
	assert_int_equal(EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(), NULL), 1);
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	OPENSSL_free(der);
	EVP_PKEY_free(k);
}

/* A self-signed certificate for the key whose public half is in KEY_PATH... of KEY. */
static void write_cert(const char *path, const char *pub_path)
{
	EVP_PKEY *pub, *signer = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	FILE *f = fopen(pub_path, "r");

	assert_non_null(f);
	pub = PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	assert_non_null(pub);
	assert_int_equal(X509_set_version(x, 2), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	assert_int_equal(X509_set_pubkey(x, pub), 1);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"repo", -1, -1, 0);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(x)), 1);
	assert_true(X509_sign(x, signer, EVP_sha256()) > 0);
	f = fopen(path, "w");
	assert_non_null(f);
	/* A block of another kind first: skipped. */
	fputs("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n", f);
	assert_int_equal(PEM_write_X509(f, x), 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(pub);
	EVP_PKEY_free(signer);
}

static void test_key_files(void **state)
{
	const char *data = "{\"format\":1,\"drivers\":[]}";
	unsigned char sig[256];
	size_t sig_len = sizeof(sig);
	char pub[128], cert[128], junk[128], want[17], fpr[17];
	char *paths[1];
	struct keyset *ks = NULL;
	struct err e;
	FILE *f;

	dir = ((struct scratch_fixture *)*state)->root;
	err_clear(&e);
	make_key("EC", "ec.pem", data, sig, &sig_len);
	snprintf(pub, sizeof(pub), "%s/ec.pem", dir);
	snprintf(cert, sizeof(cert), "%s/ec.crt", dir);
	snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
	expected_fingerprint(pub, want);

	/*
	 * The public key, and a certificate of the same key (after a block of another kind):
	 * the signature verifies, under the defined fingerprint.
	 */
	write_cert(cert, pub);
	for (int i = 0; i < 2; i++) {
		paths[0] = i == 0 ? pub : cert;
		assert_int_equal(verify_keys_load(paths, 1, "/nonexistent", &ks, &e), 0);
		assert_int_equal(check_sig(ks, data, sig, sig_len, fpr, &e), 0);
		assert_string_equal(fpr, want);
		verify_keys_free(ks);
	}

	/* Neither. */
	f = fopen(junk, "w");
	assert_non_null(f);
	fputs("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n", f);
	fclose(f);
	paths[0] = junk;
	assert_int_equal(verify_keys_load(paths, 1, "/nonexistent", &ks, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "not a PEM public key or certificate"));
}

static void test_signatures(void **state)
{
	const char *data = "{\"format\":1,\"drivers\":[]}";
	unsigned char sig_ec[256], sig_rsa[512];
	size_t ec_len = sizeof(sig_ec), rsa_len = sizeof(sig_rsa);
	char p1[128], p2[128], fpr[17];
	char *paths[2] = {p1, p2};
	struct keyset *ks = NULL;
	struct err e;

	dir = ((struct scratch_fixture *)*state)->root;
	err_clear(&e);
	make_key("EC", "ec.pem", data, sig_ec, &ec_len);
	make_key("RSA", "rsa.pem", data, sig_rsa, &rsa_len);
	snprintf(p1, sizeof(p1), "%s/ec.pem", dir);
	snprintf(p2, sizeof(p2), "%s/rsa.pem", dir);

	/* Only the EC key trusted. */
	assert_int_equal(verify_keys_load(paths, 1, "/nonexistent", &ks, &e), 0);
	assert_int_equal(check_sig(ks, data, sig_ec, ec_len, fpr, &e), 0);
	assert_int_equal(strlen(fpr), 16);
	assert_int_equal(check_sig(ks, data, sig_rsa, rsa_len, fpr, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	/* One changed byte of content or signature. */
	assert_int_equal(verify_index_signature(
				 ks,
				 &(struct verify_signed){.data = "{\"format\":2,\"drivers\":[]}",
							 .len = strlen(data),
							 .sig = sig_ec,
							 .sig_len = ec_len},
				 fpr, &e),
			 -1);
	sig_ec[10] ^= 1;
	assert_int_equal(check_sig(ks, data, sig_ec, ec_len, fpr, &e), -1);
	assert_int_equal(check_sig(ks, data, sig_ec, 0, fpr, &e), -1);
	verify_keys_free(ks);

	/* A directory of keys: both trusted, RSA verifies. */
	assert_int_equal(verify_keys_load(NULL, 0, dir, &ks, &e), 0);
	assert_int_equal(verify_keys_count(ks), 2);
	assert_int_equal(check_sig(ks, data, sig_rsa, rsa_len, fpr, &e), 0);
	verify_keys_free(ks);

	/* No key at all is a configuration error. */
	assert_int_equal(verify_keys_load(NULL, 0, "/nonexistent", &ks, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.hint, "--repo-key"));
}

/* Appends the file SRC to the file DST. */
static void append_file(const char *dst, const char *src)
{
	FILE *in = fopen(src, "r"), *out = fopen(dst, "a");
	char buf[4096];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
}

static void expect_refused(const char *path, const char *needle)
{
	char *paths[1] = {(char *)path};
	struct keyset *ks = NULL;
	struct err e;

	err_clear(&e);
	if (verify_keys_load(paths, 1, "/nonexistent", &ks, &e) == 0) {
		verify_keys_free(ks);
		fail_msg("accepted %s", path);
	}
	assert_int_equal(e.code, EXIT_USAGE);
	if (!strstr(e.msg, needle))
		fail_msg("message '%s' lacks '%s'", e.msg, needle);
	assert_non_null(e.hint);
}

/* A file of several keys trusts every one of them, or is refused whole: never half-read. */
static void test_key_bundle(void **state)
{
	const char *data = "{\"format\":1,\"drivers\":[]}";
	unsigned char sig_ec[256], sig_rsa[512], sig_ec2[256];
	size_t ec_len = sizeof(sig_ec), rsa_len = sizeof(sig_rsa), ec2_len = sizeof(sig_ec2);
	char ec[128], rsa[128], ec2[128], cert[128], bundle[128], bad[128], fpr[17];
	char *paths[1] = {bundle};
	struct keyset *ks = NULL;
	struct err e;
	FILE *f;

	dir = ((struct scratch_fixture *)*state)->root;
	err_clear(&e);
	make_key("EC", "ec.pem", data, sig_ec, &ec_len);
	make_key("RSA", "rsa.pem", data, sig_rsa, &rsa_len);
	make_key("EC", "ec2.pem", data, sig_ec2, &ec2_len);
	snprintf(ec, sizeof(ec), "%s/ec.pem", dir);
	snprintf(rsa, sizeof(rsa), "%s/rsa.pem", dir);
	snprintf(ec2, sizeof(ec2), "%s/ec2.pem", dir);
	snprintf(cert, sizeof(cert), "%s/ec2.crt", dir);
	snprintf(bundle, sizeof(bundle), "%s/bundle.pem", dir);
	snprintf(bad, sizeof(bad), "%s/bad.pem", dir);
	write_cert(cert, ec2);

	/* The old key, the new one (a rotation), and a certificate: all three trusted. */
	append_file(bundle, ec);
	append_file(bundle, rsa);
	append_file(bundle, cert);
	assert_int_equal(verify_keys_load(paths, 1, "/nonexistent", &ks, &e), 0);
	assert_int_equal(verify_keys_count(ks), 3);
	assert_int_equal(check_sig(ks, data, sig_ec, ec_len, fpr, &e), 0);
	assert_int_equal(check_sig(ks, data, sig_rsa, rsa_len, fpr, &e), 0);
	assert_int_equal(check_sig(ks, data, sig_ec2, ec2_len, fpr, &e), 0);
	verify_keys_free(ks);

	/* A key after one that does not parse, or a block cut short: refused, not half-read. */
	append_file(bad, ec);
	f = fopen(bad, "a");
	assert_non_null(f);
	fputs("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC "
	      "KEY-----\n",
	      f);
	fclose(f);
	append_file(bad, rsa);
	expect_refused(bad, "block 2 (PUBLIC KEY) does not parse");
	unlink(bad);
	append_file(bad, ec);
	f = fopen(bad, "a");
	assert_non_null(f);
	fputs("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n", f);
	fclose(f);
	expect_refused(bad, "after block 1: a PEM block is cut short or corrupt");
	unlink(bad);
	/* A private key has no business on a node. */
	append_file(bad, rsa);
	f = fopen(bad, "a");
	assert_non_null(f);
	fputs("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", f);
	fclose(f);
	expect_refused(bad, "block 2 is a PRIVATE KEY");
}

static void test_sha256(void **state)
{
	struct sha256 *s = sha256_new();
	char out[65];

	(void)state;
	assert_int_equal(sha256_update(s, "abc", 3), 0);
	assert_int_equal(sha256_final_hex(s, out), 0);
	assert_string_equal(out,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(sha256_reset(s), 0);
	assert_int_equal(sha256_final_hex(s, out), 0);
	assert_string_equal(out,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_free(s);
	sha256_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_key_files),
		scratch_unit_test(test_signatures),
		scratch_unit_test(test_key_bundle),
		cmocka_unit_test(test_sha256),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
