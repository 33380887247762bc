// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/modsig.h"
#include "source/source.h"
#include "util/fs.h"
#include "util/str.h"

#define PKEY_ID_PKCS7 2

DEFINE_POINTER_CLEANUP(CMS_ContentInfo, CMS_ContentInfo_free)
DEFINE_POINTER_CLEANUP(BIO, BIO_free)

struct modsig_certs {
	STACK_OF(X509) * certs;
};

/* ---- the trailer ---------------------------------------------------------- */

int modsig_parse_tail(const uint8_t *tail, size_t tail_len, uint64_t file_len,
		      struct modsig_layout *ret, struct err *e)
{
	const uint8_t *info;
	uint32_t sig_len;

	if (tail_len < MODSIG_TAIL_LEN || file_len < MODSIG_TAIL_LEN ||
	    memcmp(tail + tail_len - MODSIG_MAGIC_LEN, MODSIG_MAGIC, MODSIG_MAGIC_LEN) != 0)
		return 1;
	info = tail + tail_len - MODSIG_TAIL_LEN;
	sig_len = (uint32_t)info[8] << 24 | (uint32_t)info[9] << 16 | (uint32_t)info[10] << 8 |
		  info[11];
	/* The kernel's mod_check_sig(), in its order. */
	if ((uint64_t)sig_len >= file_len - MODSIG_TAIL_LEN)
		return err_set(e, EXIT_VERIFY,
			       "corrupt signature length %u for a module of %llu bytes", sig_len,
			       (unsigned long long)file_len);
	if (info[2] != PKEY_ID_PKCS7)
		return err_set(e, EXIT_VERIFY, "signature is not PKCS#7 (id_type %u)", info[2]);
	for (int i = 0; i < 8; i++) {
		if (i != 2 && info[i] != 0)
			return err_set(e, EXIT_VERIFY,
				       "PKCS#7 signature info has unexpected non-zero fields");
	}
	if (sig_len > MODSIG_MAX_SIG)
		return err_set(e, EXIT_VERIFY, "signature of %u bytes is implausibly large",
			       sig_len);
	ret->sig_len = sig_len;
	ret->sig_off = file_len - MODSIG_TAIL_LEN - sig_len;
	ret->signed_len = ret->sig_off;
	return 0;
}

/* ---- certificates ----------------------------------------------------------- */

/* Certificate files are small: a bundle of a few hundred certificates fits. */
#define MODSIG_CERT_FILE_MAX (4u << 20)

static int certs_add_file(struct modsig_certs *c, const char *path, struct err *e)
{
	_cleanup_(BIO_freep) BIO *bio = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	X509 *x;
	int n = 0;

	/* Read by the installer's one reader: a FIFO given there makes nobody wait. */
	if (fs_read_path(path, MODSIG_CERT_FILE_MAX, &text, &len, e) < 0) {
		e->code = EXIT_USAGE;
		if (err_errnum(e) == EINVAL)
			err_hint(
				e,
				"pass the certificate file itself, not a FIFO, device or directory");
		return err_wrap(e, "module certificate");
	}
	bio = BIO_new_mem_buf(text, (int)len);
	if (!bio)
		return err_openssl(e, EXIT_UNEXPECTED, "module certificate '%s'", path);
	ERR_clear_error();
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
		if (!sk_X509_push(c->certs, x)) {
			X509_free(x);
			return err_openssl(e, EXIT_UNEXPECTED, "module certificate '%s'", path);
		}
		n++;
	}
	/* Every certificate of the file, or none: never those before a damaged block. */
	if (n > 0 && !verify_pem_at_end()) {
		err_openssl(
			e, EXIT_USAGE,
			"module certificate '%s': after certificate %d: a PEM block does not parse or is cut short",
			path, n);
		err_hint(e, "copy the certificate file again whole, or remove the damaged block");
		return -1;
	}
	ERR_clear_error();
	if (n == 0) {
		(void)BIO_reset(bio);
		x = d2i_X509_bio(bio, NULL);
		if (!x || !sk_X509_push(c->certs, x)) {
			X509_free(x);
			err_openssl(e, EXIT_USAGE,
				    "module certificate '%s': not a PEM or DER X.509 certificate",
				    path);
			err_hint(
				e,
				"pass the certificate that signs the modules (sign-file's x509 argument), not the private key");
			return -1;
		}
	}
	return 0;
}

int modsig_certs_load(char *const *paths, size_t n, struct modsig_certs **ret, struct err *e)
{
	struct modsig_certs *c = calloc(1, sizeof(*c));

	if (!c || !(c->certs = sk_X509_new_null())) {
		free(c);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "module certificates");
	}
	for (size_t i = 0; i < n; i++) {
		if (certs_add_file(c, paths[i], e) < 0) {
			modsig_certs_free(c);
			return -1;
		}
	}
	*ret = c;
	return 0;
}

void modsig_certs_free(struct modsig_certs *c)
{
	if (!c)
		return;
	sk_X509_pop_free(c->certs, X509_free);
	free(c);
}

size_t modsig_certs_count(const struct modsig_certs *c)
{
	return c ? (size_t)sk_X509_num(c->certs) : 0;
}

/* The id the kernel gives CERT's key (x509_key_preparse): its subject key id, else serial. */
static void kernel_id_of(X509 *cert, char *out, size_t size);

int modsig_certs_kernel_id(const struct modsig_certs *c, const char *sha256, char *out, size_t size)
{
	for (int i = 0; c && sha256 && i < sk_X509_num(c->certs); i++) {
		X509 *x = sk_X509_value(c->certs, i);
		unsigned char md[32];
		unsigned int md_len = 0;
		char hex[65] = "";

		if (X509_digest(x, EVP_sha256(), md, &md_len) != 1 || md_len != sizeof(md))
			continue;
		for (unsigned int j = 0; j < md_len; j++)
			snprintf(hex + 2 * j, sizeof(hex) - 2 * j, "%02x", md[j]);
		if (strcmp(hex, sha256) == 0) {
			kernel_id_of(x, out, size);
			return 1;
		}
	}
	return 0;
}

/* ---- a BIO over a byte range of a file, so that 60 MB modules stream -------- */

struct range {
	int fd;
	uint64_t off, end;
};

static int range_read(BIO *b, char *buf, int len)
{
	struct range *r = BIO_get_data(b);
	ssize_t n;

	if (r->off >= r->end)
		return 0;
	if ((uint64_t)len > r->end - r->off)
		len = (int)(r->end - r->off);
	do {
		n = pread(r->fd, buf, (size_t)len, (off_t)r->off);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	r->off += (uint64_t)n;
	return (int)n;
}

static long range_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct range *r = BIO_get_data(b);

	(void)num, (void)ptr;
	switch (cmd) {
	case BIO_CTRL_EOF:
		return r->off >= r->end;
	case BIO_CTRL_PENDING:
		return 0;
	case BIO_CTRL_FLUSH:
		return 1;
	default:
		return 0;
	}
}

static BIO_METHOD *range_method(void)
{
	static BIO_METHOD *m;

	if (!m) {
		m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "module range");
		if (m && (!BIO_meth_set_read(m, range_read) || !BIO_meth_set_ctrl(m, range_ctrl))) {
			BIO_meth_free(m);
			m = NULL;
		}
	}
	return m;
}

/* ---- the signature ---------------------------------------------------------- */

static void hex_pairs(const unsigned char *p, int n, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n && len + 4 < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%02X", i ? ":" : "", p[i]);
}

/*
 * Linux's crypto/asymmetric_keys/x509_public_key.c, x509_key_preparse(), describes a key
 * as "SUBJECT: " and the hex of cert->raw_skid when the certificate has one, else of
 * cert->raw_serial: that is the id /proc/keys shows.
 */
static void kernel_id_of(X509 *cert, char *out, size_t size)
{
	const ASN1_OCTET_STRING *skid = X509_get0_subject_key_id(cert);
	const ASN1_INTEGER *serial = X509_get0_serialNumber(cert);

	out[0] = '\0';
	if (skid)
		hex_pairs(ASN1_STRING_get0_data(skid), ASN1_STRING_length(skid), out, size);
	else if (serial)
		hex_pairs(ASN1_STRING_get0_data(serial), ASN1_STRING_length(serial), out, size);
}

static void x509_name_str(const X509_NAME *name, char *out, size_t size)
{
	int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	const ASN1_STRING *s;

	out[0] = '\0';
	if (idx >= 0 && (s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)))) {
		snprintf(out, size, "%.*s", ASN1_STRING_length(s),
			 (const char *)ASN1_STRING_get0_data(s));
		return;
	}
	X509_NAME_oneline(name, out, (int)size);
}

/* Fills signer, key id and hash from the first SignerInfo; returns the matching pinned cert. */
static X509 *describe_signer(CMS_SignerInfo *si, const struct modsig_certs *certs,
			     struct modsig_result *r)
{
	ASN1_OCTET_STRING *keyid = NULL;
	X509_NAME *issuer = NULL;
	ASN1_INTEGER *serial = NULL;
	X509_ALGOR *dig = NULL;
	X509 *match = NULL;

	CMS_SignerInfo_get0_algs(si, NULL, NULL, &dig, NULL);
	if (dig)
		snprintf(r->hash_algo, sizeof(r->hash_algo), "%s",
			 OBJ_nid2ln(OBJ_obj2nid(dig->algorithm)));
	for (int i = 0; certs && i < sk_X509_num(certs->certs) && !match; i++) {
		if (CMS_SignerInfo_cert_cmp(si, sk_X509_value(certs->certs, i)) == 0)
			match = sk_X509_value(certs->certs, i);
	}
	if (CMS_SignerInfo_get0_signer_id(si, &keyid, &issuer, &serial) == 1) {
		r->named_by_skid = keyid != NULL;
		if (keyid)
			hex_pairs(ASN1_STRING_get0_data(keyid), ASN1_STRING_length(keyid),
				  r->key_id, sizeof(r->key_id));
		else if (serial)
			hex_pairs(ASN1_STRING_get0_data(serial), ASN1_STRING_length(serial),
				  r->key_id, sizeof(r->key_id));
		if (issuer)
			x509_name_str(issuer, r->signer, sizeof(r->signer));
	}
	if (match) {
		unsigned char md[32];
		unsigned int md_len = 0;

		x509_name_str(X509_get_subject_name(match), r->signer, sizeof(r->signer));
		kernel_id_of(match, r->cert_kernel_id, sizeof(r->cert_kernel_id));
		if (X509_digest(match, EVP_sha256(), md, &md_len) == 1)
			for (unsigned int i = 0; i < md_len && i < sizeof(md); i++)
				snprintf(r->cert_sha256 + 2 * i, sizeof(r->cert_sha256) - 2 * i,
					 "%02x", md[i]);
	} else if (!r->signer[0])
		snprintf(r->signer, sizeof(r->signer), "unknown (named by subject key id only)");
	return match;
}

static int reject(struct modsig_result *r, const char *why)
{
	snprintf(r->reason, sizeof(r->reason), "%s", why);
	return -1;
}

/* Rejects what the kernel's PKCS#7 parser rejects for modules. 0 or -1 with r->reason. */
static int check_structure(CMS_ContentInfo *cms, struct modsig_result *r)
{
	STACK_OF(CMS_SignerInfo) * sis;

	if (OBJ_obj2nid(CMS_get0_type(cms)) != NID_pkcs7_signed)
		return reject(r, "the PKCS#7 message is not SignedData");
	if (OBJ_obj2nid(CMS_get0_eContentType(cms)) != NID_pkcs7_data)
		return reject(r, "the PKCS#7 content is not id-data (the kernel rejects it)");
	if (!CMS_is_detached(cms))
		return reject(
			r,
			"the PKCS#7 message embeds its content; modules need a detached signature");
	sis = CMS_get0_SignerInfos(cms);
	if (!sis || sk_CMS_SignerInfo_num(sis) == 0)
		return reject(r, "the PKCS#7 message has no signer");
	for (int i = 0; i < sk_CMS_SignerInfo_num(sis); i++) {
		if (CMS_signed_get_attr_count(sk_CMS_SignerInfo_value(sis, i)) > 0)
			return reject(
				r,
				"the signature has signed attributes, which the kernel rejects (sign with sign-file, or openssl cms -noattr)");
	}
	return 0;
}

static int read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int verify_cms(int fd, const struct modsig_layout *l, CMS_ContentInfo *cms,
		      const struct modsig_certs *certs, struct modsig_result *r)
{
	struct range rg = {.fd = fd, .off = 0, .end = l->signed_len};
	_cleanup_(BIO_freep) BIO *content = NULL;
	BIO_METHOD *m = range_method();

	if (!m || !(content = BIO_new(m)))
		return reject(r, "out of memory");
	BIO_set_data(content, &rg);
	BIO_set_init(content, 1);
	if (CMS_verify(cms, certs->certs, NULL, content, NULL,
		       CMS_BINARY | CMS_NOINTERN | CMS_NO_SIGNER_CERT_VERIFY) != 1) {
		unsigned long l_err = ERR_peek_error();

		snprintf(r->reason, sizeof(r->reason),
			 "the signature does not match the module's contents (%s)",
			 l_err ? ERR_reason_error_string(l_err) : "verification failed");
		ERR_clear_error();
		return -1;
	}
	return 0;
}

int modsig_check_fd(int fd, const struct modsig_certs *certs, struct modsig_result *ret,
		    struct err *e)
{
	uint8_t tail[MODSIG_TAIL_LEN];
	_cleanup_free_ uint8_t *sig = NULL;
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	struct modsig_layout l;
	struct stat st;
	size_t tail_len;
	const unsigned char *p;
	struct err pe;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (fstat(fd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat module");
	tail_len = (uint64_t)st.st_size < sizeof(tail) ? (size_t)st.st_size : sizeof(tail);
	if ((r = read_exact(fd, tail, tail_len, (uint64_t)st.st_size - tail_len)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "read module");
	err_clear(&pe);
	r = modsig_parse_tail(tail, tail_len, (uint64_t)st.st_size, &l, &pe);
	if (r == 1) {
		snprintf(ret->reason, sizeof(ret->reason), "the module is not signed");
		return 0;
	}
	ret->is_signed = true;
	if (r < 0) {
		str_fmt_cut(ret->reason, sizeof(ret->reason), "%s", pe.msg);
		return 0;
	}
	if (!(sig = malloc(l.sig_len)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "module signature");
	if ((r = read_exact(fd, sig, l.sig_len, l.sig_off)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, -r, "read module signature");
	p = sig;
	cms = d2i_CMS_ContentInfo(NULL, &p, l.sig_len);
	if (!cms || p != sig + l.sig_len) {
		ERR_clear_error();
		snprintf(ret->reason, sizeof(ret->reason),
			 "the signature is not a well-formed PKCS#7 message");
		return 0;
	}
	if (check_structure(cms, ret) < 0)
		return 0;
	if (!describe_signer(sk_CMS_SignerInfo_value(CMS_get0_SignerInfos(cms), 0), certs, ret)) {
		snprintf(ret->reason, sizeof(ret->reason),
			 modsig_certs_count(certs)
				 ? "signed by '%s' (key %s), which is not a pinned certificate"
				 : "signed by '%s' (key %s); no --module-cert to verify it with",
			 ret->signer, ret->key_id[0] ? ret->key_id : "?");
		return 0;
	}
	if (verify_cms(fd, &l, cms, certs, ret) == 0)
		ret->verified = true;
	return 0;
}
