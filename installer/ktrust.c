// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kmods.h"
#include "ktrust.h"
#include "util/fs.h"
#include "util/log.h"
#include "verify.h"

#define SECURE_BOOT_VAR "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0d1fb5f3d7c"

DEFINE_POINTER_CLEANUP(BIO, BIO_free)
DEFINE_POINTER_CLEANUP(X509, X509_free)

/* Reads a small file under the root; NULL when it cannot be read. */
static char *read_small(int root_fd, const char *path, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	char *buf = NULL;
	size_t len = 0;
	struct err e;

	fd = fs_open_in_root(root_fd, path, O_RDONLY, 0, 0, &e);
	if (fd < 0 || fs_read_fd(fd, 1 << 20, &buf, &len, &e) < 0)
		return NULL;
	if (ret_len)
		*ret_len = len;
	return buf;
}

void ktrust_parse_lockdown(const char *buf, char *out, size_t size)
{
	const char *open = strchr(buf, '['), *close = open ? strchr(open, ']') : NULL;

	if (!open || !close || close - open - 1 <= 0) {
		snprintf(out, size, "unknown");
		return;
	}
	snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
}

void ktrust_probe(int root_fd, struct ktrust *t)
{
	_cleanup_free_ char *enf =
		read_small(root_fd, "/sys/module/module/parameters/sig_enforce", NULL);
	_cleanup_free_ char *lock = read_small(root_fd, "/sys/kernel/security/lockdown", NULL);
	_cleanup_free_ char *sb = NULL;
	size_t sb_len = 0;

	snprintf(t->sig_enforce, sizeof(t->sig_enforce), "%s",
		 !enf		 ? "unknown"
		 : enf[0] == 'Y' ? "yes"
				 : "no");
	if (lock)
		ktrust_parse_lockdown(lock, t->lockdown, sizeof(t->lockdown));
	else
		snprintf(t->lockdown, sizeof(t->lockdown), "unknown");
	/* efivarfs: 4 bytes of attributes, then the variable's one byte. */
	sb = read_small(root_fd, SECURE_BOOT_VAR, &sb_len);
	snprintf(t->secure_boot, sizeof(t->secure_boot), "%s",
		 !sb || sb_len < 5 ? "unknown"
		 : sb[4] == 1	   ? "enabled"
				   : "disabled");
}

bool ktrust_enforces(const struct ktrust *t)
{
	return strcmp(t->sig_enforce, "yes") == 0 || strcmp(t->lockdown, "integrity") == 0 ||
	       strcmp(t->lockdown, "confidentiality") == 0;
}

int ktrust_find_keyring(const char *proc_keys, const char *name, long *ret_id)
{
	const char *line = proc_keys;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char id[32], type[32], desc[128];

		/* "ID FLAGS USAGE TIMEOUT PERM UID GID TYPE DESCRIPTION: SUMMARY" */
		if (sscanf(line, "%31s %*s %*s %*s %*s %*s %*s %31s %127[^:\n]", id, type, desc) ==
			    3 &&
		    strcmp(type, "keyring") == 0 && strcmp(desc, name) == 0) {
			char *end;
			long v = strtol(id, &end, 16);

			if (*end == '\0' && v > 0) {
				*ret_id = v;
				return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

static int cert_der(const char *path, unsigned char **ret, int *ret_len, struct err *e)
{
	_cleanup_(BIO_freep) BIO *bio = BIO_new_file(path, "rb");
	_cleanup_(X509_freep) X509 *x = NULL;

	if (!bio)
		return err_openssl(e, EXIT_USAGE, "kernel keyring certificate '%s'", path);
	ERR_clear_error();
	x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	if (x) {
		/* The keyring takes one certificate: a second one, or damage, is not ignored. */
		X509 *more = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		bool at_end = !more && verify_pem_at_end();

		X509_free(more);
		ERR_clear_error();
		if (!at_end) {
			err_set(e, EXIT_USAGE,
				"kernel keyring certificate '%s' holds more than one certificate, or a damaged block after the first",
				path);
			err_hint(
				e,
				"pass a file with exactly the one certificate the kernel is to trust");
			return -1;
		}
	} else {
		(void)BIO_reset(bio);
		x = d2i_X509_bio(bio, NULL);
	}
	ERR_clear_error();
	if (!x)
		return err_set(
			e, EXIT_USAGE,
			"kernel keyring certificate '%s': not a PEM or DER X.509 certificate",
			path);
	*ret = NULL;
	*ret_len = i2d_X509(x, ret);
	if (*ret_len <= 0)
		return err_openssl(e, EXIT_UNEXPECTED, "kernel keyring certificate '%s'", path);
	return 0;
}

int ktrust_check_cert(const char *path, struct err *e)
{
	unsigned char *der = NULL;
	int len = 0;

	if (cert_der(path, &der, &len, e) < 0)
		return -1;
	OPENSSL_free(der);
	return 0;
}

static int add_key_failed(struct err *e, int errnum, const char *path)
{
	err_errno(e, EXIT_KERNEL_REFUSED, errnum,
		  "the kernel refused certificate '%s' for .secondary_trusted_keys", path);
	switch (errnum) {
	case ENOKEY:
		err_hint(
			e,
			"that keyring admits only certificates signed by a key the kernel already trusts (built-in or MOK): enroll yours with mokutil and reboot");
		break;
	case EKEYREJECTED:
		err_hint(
			e,
			"the certificate's signature did not verify against the trusted keys; check that a trusted CA signed it");
		break;
	case EPERM:
	case EACCES:
		err_hint(e, "adding keys needs CAP_SYS_ADMIN: run the installer privileged");
		break;
	default:
		err_hint(e, "check the kernel log (dmesg) for the reason");
	}
	return -1;
}

int ktrust_add_cert(int root_fd, const char *path, struct err *e)
{
	_cleanup_free_ char *keys = read_small(root_fd, "/proc/keys", NULL);
	unsigned char *der = NULL;
	long keyring = 0, serial;
	int len = 0;

	if (!keys || ktrust_find_keyring(keys, ".secondary_trusted_keys", &keyring) < 0) {
		err_set(e, EXIT_KERNEL_REFUSED,
			"kernel keyring .secondary_trusted_keys not found in /proc/keys");
		err_hint(
			e,
			"the kernel needs CONFIG_SECONDARY_TRUSTED_KEYRING; or drop --kernel-keyring-cert and enroll the certificate with mokutil");
		return -1;
	}
	if (cert_der(path, &der, &len, e) < 0)
		return -1;
	serial = syscall(SYS_add_key, "asymmetric", NULL, der, (size_t)len, keyring);
	OPENSSL_free(der);
	if (serial < 0)
		return add_key_failed(e, errno, path);
	log_kv(LOG_INFO, "kernel", "certificate added to .secondary_trusted_keys", "file", path,
	       U64("key", serial), LOG_END);
	return 0;
}
