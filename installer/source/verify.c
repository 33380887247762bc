// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs.h"
#include "util/log.h"
#include "source/verify.h"

DEFINE_POINTER_CLEANUP(EVP_MD_CTX, EVP_MD_CTX_free)
DEFINE_POINTER_CLEANUP(X509, X509_free)
DEFINE_POINTER_CLEANUP(BIO, BIO_free)

struct keyset {
	EVP_PKEY **keys;
	char (*fpr)[17];
	char **origin;
	size_t n;
};

struct sha256 {
	EVP_MD_CTX *ctx;
};

static void hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/*
 * The first 8 bytes of SHA-256 over the DER SubjectPublicKeyInfo: stable and printable.
 * From the parsed X509_PUBKEY, which re-encodes its own fields: i2d_PUBKEY on the
 * EVP_PKEY would set up OpenSSL 3's encoder framework, half a millisecond of a re-run.
 */
static int key_fingerprint(X509_PUBKEY *spki, char out[17])
{
	unsigned char *der = NULL, md[32];
	unsigned int mdlen = 0;
	int len = i2d_X509_PUBKEY(spki, &der);

	if (len <= 0)
		return -1;
	if (!EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(), NULL)) {
		OPENSSL_free(der);
		return -1;
	}
	OPENSSL_free(der);
	hex(md, 8, out);
	return 0;
}

/*
 * The key of one PEM block, a public key or a certificate's, and its fingerprint: 0, or -1
 * for another kind of block or one that does not parse. The certificate's own
 * X509_PUBKEY is used in place (X509_PUBKEY_dup in OpenSSL 3.0 gets the BIT STRING's
 * unused-bits byte wrong, which would change the fingerprint).
 */
static int pem_block_key(const char *name, const unsigned char *der, long len, EVP_PKEY **ret,
			 char fpr[17])
{
	const unsigned char *p = der;
	_cleanup_(X509_freep) X509 *cert = NULL;
	X509_PUBKEY *spki = NULL, *owned = NULL;
	EVP_PKEY *k = NULL;

	if (strcmp(name, PEM_STRING_PUBLIC) == 0)
		spki = owned = d2i_X509_PUBKEY(NULL, &p, len);
	else if (strcmp(name, PEM_STRING_X509) == 0 || strcmp(name, PEM_STRING_X509_OLD) == 0)
		spki = (cert = d2i_X509(NULL, &p, len)) ? X509_get_X509_PUBKEY(cert) : NULL;
	if (spki && (k = X509_PUBKEY_get(spki)) && key_fingerprint(spki, fpr) < 0) {
		EVP_PKEY_free(k);
		k = NULL;
	}
	X509_PUBKEY_free(owned);
	*ret = k;
	return k ? 0 : -1;
}

static int keyset_push(struct keyset *ks, const char *path, EVP_PKEY *k, const char fpr[17],
		       struct err *e)
{
	size_t n = ks->n + 1;
	void *p;

	if (!(p = reallocarray(ks->keys, n, sizeof(*ks->keys))))
		goto oom;
	ks->keys = p;
	if (!(p = reallocarray(ks->fpr, n, sizeof(*ks->fpr))))
		goto oom;
	ks->fpr = p;
	if (!(p = reallocarray(ks->origin, n, sizeof(*ks->origin))))
		goto oom;
	ks->origin = p;
	if (!(ks->origin[ks->n] = strdup(path)))
		goto oom;
	memcpy(ks->fpr[ks->n], fpr, 17);
	ks->keys[ks->n] = k;
	ks->n = n;
	log_kv(LOG_DEBUG, "verify", "trusted repository key", "path", path, "fingerprint",
	       ks->fpr[n - 1], LOG_END);
	return 0;
oom:
	EVP_PKEY_free(k);
	return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "repository keys");
}

/* A PEM block as PEM_read_bio hands it out, and its place in its file. */
struct pem_block {
	char *name; /* "PUBLIC KEY", "CERTIFICATE", ... */
	unsigned char *der;
	long len;
	unsigned number; /* 1: the file's first block */
};

/*
 * Block B of PATH: a public key or a certificate is trusted; a private key, a key in
 * another form, or one that does not parse refuses the file; other blocks (EC PARAMETERS)
 * are skipped.
 */
static int keyset_add_block(struct keyset *ks, const char *path, const struct pem_block *b,
			    struct err *e)
{
	const char *name = b->name;
	unsigned number = b->number;
	bool is_key = strcmp(name, PEM_STRING_PUBLIC) == 0 || strcmp(name, PEM_STRING_X509) == 0 ||
		      strcmp(name, PEM_STRING_X509_OLD) == 0;
	EVP_PKEY *k = NULL;
	char fpr[17];

	if (strstr(name, "PRIVATE KEY")) {
		err_set(e, EXIT_USAGE, "repository key '%s': block %u is a %s", path, number, name);
		err_hint(e, "pin only the public half: 'openssl pkey -in key.pem -pubout'");
		return -1;
	}
	if (!is_key && !strstr(name, "PUBLIC KEY") && !strstr(name, "CERTIFICATE"))
		return 0;
	if (!is_key || pem_block_key(name, b->der, b->len, &k, fpr) < 0) {
		err_openssl(e, EXIT_USAGE, "repository key '%s': block %u (%s) does not parse",
			    path, number, name);
		err_hint(
			e,
			"every key in the file must be a PEM public key ('openssl pkey -pubout') or certificate; fix or remove that block");
		return -1;
	}
	return keyset_push(ks, path, k, fpr, e);
}

bool verify_pem_at_end(void)
{
	unsigned long l = ERR_peek_last_error();

	return ERR_GET_LIB(l) == ERR_LIB_PEM && ERR_GET_REASON(l) == PEM_R_NO_START_LINE;
}

/* Key files are small: a bundle of a few hundred keys and certificates fits. */
#define VERIFY_KEY_FILE_MAX (4u << 20)

/*
 * Trusts every public key and certificate in PATH: all of them, or, when any block is
 * damaged, none (the caller drops the keyset).
 */
static int keyset_add(struct keyset *ks, const char *path, struct err *e)
{
	_cleanup_(BIO_freep) BIO *bio = NULL;
	_cleanup_free_ char *text = NULL;
	size_t first = ks->n, text_len = 0;
	unsigned number = 0;
	struct err re;

	/* Read by the installer's one reader: a FIFO given there makes nobody wait. */
	if (fs_read_path(path, VERIFY_KEY_FILE_MAX, &text, &text_len, &re) < 0) {
		if (err_errnum(&re) == EINVAL) {
			err_set(e, EXIT_USAGE,
				"repository key '%s' is not a regular file (a FIFO, a device or a directory)",
				path);
			err_hint(e, "pass the PEM file of the repository's public key itself");
			return -1;
		}
		return err_errno(e, EXIT_USAGE, err_errnum(&re) ? err_errnum(&re) : EFBIG,
				 "repository key '%s'", path);
	}
	bio = BIO_new_mem_buf(text, (int)text_len);
	if (!bio)
		return err_openssl(e, EXIT_UNEXPECTED, "repository key '%s'", path);
	for (;;) {
		struct pem_block b = {.name = NULL};
		char *header = NULL;
		int r;

		ERR_clear_error();
		if (!PEM_read_bio(bio, &b.name, &header, &b.der, &b.len)) {
			if (verify_pem_at_end())
				break;
			err_openssl(
				e, EXIT_USAGE,
				"repository key '%s': after block %u: a PEM block is cut short or corrupt",
				path, number);
			err_hint(
				e,
				"copy the key file again whole; each block runs from -----BEGIN to -----END");
			return -1;
		}
		b.number = ++number;
		r = keyset_add_block(ks, path, &b, e);
		OPENSSL_free(b.name);
		OPENSSL_free(header);
		OPENSSL_free(b.der);
		if (r < 0)
			return -1;
	}
	ERR_clear_error();
	if (ks->n == first) {
		err_set(e, EXIT_USAGE, "repository key '%s': not a PEM public key or certificate",
			path);
		err_hint(e, "export the public half with 'openssl pkey -in key.pem -pubout'");
		return -1;
	}
	return 0;
}

static int pem_filter(const struct dirent *de)
{
	size_t n = strlen(de->d_name);

	return de->d_name[0] != '.' && n > 4 && strcmp(de->d_name + n - 4, ".pem") == 0;
}

static int keyset_add_dir(struct keyset *ks, const char *dir, struct err *e)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, pem_filter, alphasort), r = 0;

	if (n < 0 && errno != ENOENT)
		return err_errno(e, EXIT_USAGE, errno, "repository keys directory '%s'", dir);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;

		if (r == 0 && asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0)
			r = err_errno(e, EXIT_UNEXPECTED, ENOMEM, "repository keys");
		if (r == 0)
			r = keyset_add(ks, path, e);
		free(names[i]);
	}
	free(names);
	return r;
}

int verify_keys_load(char *const *paths, size_t n, const char *dir, struct keyset **ret,
		     struct err *e)
{
	_cleanup_(verify_keys_freep) struct keyset *ks = calloc(1, sizeof(*ks));

	if (!ks)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "repository keys");
	for (size_t i = 0; i < n; i++) {
		if (keyset_add(ks, paths[i], e) < 0)
			return -1;
	}
	if (n == 0 && keyset_add_dir(ks, dir, e) < 0)
		return -1;
	if (ks->n == 0) {
		err_set(e, EXIT_USAGE, "no trusted repository key: none given and no *.pem in '%s'",
			dir);
		err_hint(
			e,
			"pass --repo-key FILE (NVIDIA_DRIVER_REPO_KEY) with the public key that signs index.json");
		return -1;
	}
	*ret = TAKE_PTR(ks);
	return 0;
}

void verify_keys_free(struct keyset *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->n; i++) {
		EVP_PKEY_free(ks->keys[i]);
		free(ks->origin[i]);
	}
	free(ks->keys);
	free(ks->fpr);
	free(ks->origin);
	free(ks);
}

size_t verify_keys_count(const struct keyset *ks)
{
	return ks->n;
}

const char *verify_keys_fingerprint(const struct keyset *ks, size_t i)
{
	return ks->fpr[i];
}

static int verify_one(EVP_PKEY *k, const void *data, size_t len, const void *sig, size_t sig_len)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k) != 1)
		return -1;
	return EVP_DigestVerify(ctx, sig, sig_len, data, len) == 1 ? 0 : -1;
}

int verify_index_signature(const struct keyset *ks, const struct verify_signed *s, char ret_fpr[17],
			   struct err *e)
{
	for (size_t i = 0; i < ks->n; i++) {
		if (verify_one(ks->keys[i], s->data, s->len, s->sig, s->sig_len) == 0) {
			ERR_clear_error();
			memcpy(ret_fpr, ks->fpr[i], 17);
			return 0;
		}
	}
	ERR_clear_error();
	err_set(e, EXIT_VERIFY,
		"index.json signature does not verify with any of the %zu trusted key(s)", ks->n);
	err_hint(
		e,
		"re-sign index.json with 'openssl dgst -sha256 -sign', or trust the signer's public key with --repo-key");
	return -1;
}

struct sha256 *sha256_new(void)
{
	struct sha256 *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = EVP_MD_CTX_new();
	if (!s->ctx || sha256_reset(s) < 0) {
		sha256_free(s);
		return NULL;
	}
	return s;
}

void sha256_free(struct sha256 *s)
{
	if (!s)
		return;
	EVP_MD_CTX_free(s->ctx);
	free(s);
}

int sha256_reset(struct sha256 *s)
{
	return EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

int sha256_update(struct sha256 *s, const void *data, size_t len)
{
	return EVP_DigestUpdate(s->ctx, data, len) == 1 ? 0 : -1;
}

int sha256_final_hex(struct sha256 *s, char out[65])
{
	unsigned char md[32];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(s->ctx, md, &n) != 1 || n != 32)
		return -1;
	hex(md, 32, out);
	return 0;
}

int sha256_hex_of(const void *buf, size_t len, char out[65])
{
	_cleanup_(sha256_freep) struct sha256 *s = sha256_new();

	return !s || sha256_update(s, buf, len) < 0 || sha256_final_hex(s, out) < 0 ? -1 : 0;
}
