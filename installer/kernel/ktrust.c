// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/ktrust.h"
#include "util/fs.h"
#include "util/log.h"
#include "source/source.h"

#define SECURE_BOOT_VAR "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0d1fb5f3d7c"

DEFINE_POINTER_CLEANUP(BIO, BIO_free)
DEFINE_POINTER_CLEANUP(X509, X509_free)

void ktrust_parse_lockdown(const char *buf, char *out, size_t size)
{
	const char *open = strchr(buf, '['), *close = open ? strchr(open, ']') : NULL;

	if (!open || !close || close - open - 1 <= 0) {
		snprintf(out, size, "unknown");
		return;
	}
	snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
}

/* Whether the comma-separated LIST holds WORD. */
static bool list_has(const char *list, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list, *end = list + len; p < end;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t n = c ? (size_t)(c - p) : (size_t)(end - p);

		if (n == wl && strncmp(p, word, wl) == 0)
			return true;
		p += n + 1;
	}
	return false;
}

/* The value of kernel parameter NAME ("loadpin.exclude") in CMDLINE, or NULL; *LEN its length. */
static const char *cmdline_param(const char *cmdline, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	for (const char *p = cmdline; p && *p;) {
		p += strspn(p, " \t\n");
		if (strncmp(p, name, nl) == 0 && p[nl] == '=') {
			*len = strcspn(p + nl + 1, " \t\n");
			return p + nl + 1;
		}
		p += strcspn(p, " \t\n");
	}
	return NULL;
}

void ktrust_parse_loadpin(const char *lsm, const char *sysctl, const char *cmdline, char *out,
			  size_t size)
{
	const char *v;
	size_t len = 0;
	const char *state;

	v = cmdline ? cmdline_param(cmdline, "loadpin.exclude", &len) : NULL;
	if (v && list_has(v, len, "kernel-module"))
		state = "excluded";
	else if (sysctl)
		state = atoi(sysctl) ? "enforcing" : "permissive";
	else if (!lsm)
		state = "unknown";
	else if (!list_has(lsm, strcspn(lsm, "\n"), "loadpin"))
		state = "off";
	else if (cmdline && (((v = cmdline_param(cmdline, "loadpin.enforce", &len)) && *v == '0') ||
			     ((v = cmdline_param(cmdline, "loadpin.enabled", &len)) && *v == '0')))
		state = "permissive";
	else
		state = "enforcing";
	snprintf(out, size, "%s", state);
}

int ktrust_parse_key(const char *line, struct ktrust_key *ret)
{
	char type[32];
	const char *rest, *p;
	int off = 0;

	/* "ID FLAGS USAGE TIMEOUT PERM UID GID TYPE DESCRIPTION: SUMMARY"; TYPE is cut at 9. */
	if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %31s %n", type, &off) != 1 || off == 0 ||
	    strncmp(type, "asymmetri", 9) != 0)
		return 0;
	rest = line + off;
	/* An asymmetric key's description is "SUBJECT: KEYID"; then ": " and the summary. */
	for (p = strstr(rest, ": "); p; p = strstr(p + 2, ": ")) {
		size_t n = strspn(p + 2, "0123456789abcdefABCDEF");

		if (n >= 2 && (p[2 + n] == ':' || p[2 + n] == '\n' || p[2 + n] == '\0')) {
			snprintf(ret->subject, sizeof(ret->subject), "%.*s", (int)(p - rest), rest);
			snprintf(ret->key_id, sizeof(ret->key_id), "%.*s", (int)n, p + 2);
			for (char *c = ret->key_id; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			return 1;
		}
	}
	return 0;
}

static void probe_keys(int root_fd, struct ktrust *t)
{
	static const char *const rings[] = {".builtin_trusted_keys", ".secondary_trusted_keys",
					    ".machine", ".platform"};
	_cleanup_free_ char *keys = fs_read_in_root(root_fd, "/proc/keys", 1 << 20, NULL);
	size_t len = 0;
	long id;

	t->has_keys = keys != NULL;
	t->n_keys = 0;
	t->keyrings[0] = '\0';
	if (!keys)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(rings); i++) {
		if (ktrust_find_keyring(keys, rings[i], &id) == 0 && len < sizeof(t->keyrings))
			len += (size_t)snprintf(t->keyrings + len, sizeof(t->keyrings) - len,
						"%s%s", len ? "," : "", rings[i]);
	}
	for (const char *line = keys; line && *line && t->n_keys < KTRUST_MAX_KEYS;) {
		const char *nl = strchr(line, '\n');
		char one[512];

		snprintf(one, sizeof(one), "%.*s", nl ? (int)(nl - line) : (int)strlen(line), line);
		t->n_keys += (size_t)ktrust_parse_key(one, &t->keys[t->n_keys]);
		line = nl ? nl + 1 : NULL;
	}
}

static void probe_loadpin(int root_fd, struct ktrust *t)
{
	_cleanup_free_ char *lsm =
		fs_read_in_root(root_fd, "/sys/kernel/security/lsm", 1 << 20, NULL);
	_cleanup_free_ char *cmdline = fs_read_in_root(root_fd, "/proc/cmdline", 1 << 20, NULL);
	_cleanup_free_ char *sysctl =
		fs_read_in_root(root_fd, "/proc/sys/kernel/loadpin/enforce", 1 << 20, NULL);

	/* Kernels before 4.20 named the sysctl "enabled". */
	if (!sysctl)
		sysctl =
			fs_read_in_root(root_fd, "/proc/sys/kernel/loadpin/enabled", 1 << 20, NULL);
	ktrust_parse_loadpin(lsm, sysctl, cmdline, t->loadpin, sizeof(t->loadpin));
}

void ktrust_probe(int root_fd, struct ktrust *t)
{
	_cleanup_free_ char *enf = fs_read_in_root(
		root_fd, "/sys/module/module/parameters/sig_enforce", 1 << 20, NULL);
	_cleanup_free_ char *lock =
		fs_read_in_root(root_fd, "/sys/kernel/security/lockdown", 1 << 20, NULL);
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
	sb = fs_read_in_root(root_fd, SECURE_BOOT_VAR, 1 << 20, &sb_len);
	snprintf(t->secure_boot, sizeof(t->secure_boot), "%s",
		 !sb || sb_len < 5 ? "unknown"
		 : sb[4] == 1	   ? "enabled"
				   : "disabled");
	probe_loadpin(root_fd, t);
	probe_keys(root_fd, t);
}

bool ktrust_loadpin_enforces(const struct ktrust *t)
{
	return strcmp(t->loadpin, "enforcing") == 0;
}

int ktrust_has_cap_sys_module(void)
{
	_cleanup_free_ char *status = NULL;
	size_t len = 0;
	struct err e;
	const char *cap;
	_cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fs_read_fd(fd, 1 << 16, &status, &len, &e) < 0)
		return -1;
	cap = strstr(status, "\nCapEff:");
	if (!cap)
		return -1;
	/* CAP_SYS_MODULE is capability 16. */
	return (int)((strtoull(cap + strlen("\nCapEff:"), NULL, 16) >> 16) & 1);
}

/* KEY_ID without ':' and in lower case. */
static void norm_id(const char *key_id, char *out, size_t size)
{
	size_t n = 0;

	for (; key_id && *key_id && n + 1 < size; key_id++) {
		if (*key_id != ':')
			out[n++] = (char)tolower((unsigned char)*key_id);
	}
	out[n] = '\0';
}

const struct ktrust_key *ktrust_match(const struct ktrust *t, const char *key_id)
{
	char id[sizeof(t->keys[0].key_id)];

	norm_id(key_id, id, sizeof(id));
	for (size_t i = 0; id[0] && i < t->n_keys; i++) {
		if (strcmp(t->keys[i].key_id, id) == 0)
			return &t->keys[i];
	}
	return NULL;
}

const struct ktrust_key *ktrust_named(const struct ktrust *t, const char *signer)
{
	size_t sl = signer ? strlen(signer) : 0;

	for (size_t i = 0; sl && i < t->n_keys; i++) {
		const char *sub = t->keys[i].subject;
		size_t n = strlen(sub);

		/* The kernel names a key "O: CN" when the CN does not start with the O. */
		if (strcmp(sub, signer) == 0 ||
		    (n > sl + 2 && strcmp(sub + n - sl, signer) == 0 && sub[n - sl - 2] == ':'))
			return &t->keys[i];
	}
	return NULL;
}

const char *ktrust_verdict_name(enum ktrust_verdict v)
{
	return v == KTRUST_LOADS ? "loads" : v == KTRUST_REFUSED ? "refused" : "unknown";
}

static void predict_set(struct ktrust_prediction *p, enum ktrust_verdict v, const char *rule,
			const char *need, const char *fmt, ...) _printf_(5, 6);
static void predict_set(struct ktrust_prediction *p, enum ktrust_verdict v, const char *rule,
			const char *need, const char *fmt, ...)
{
	va_list ap;

	p->verdict = v;
	snprintf(p->rule, sizeof(p->rule), "%s", rule);
	snprintf(p->need, sizeof(p->need), "%s", need ? need : "");
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
}

/*
 * Under enforcement: whether the signer's key is among the kernel's, by id. /proc/keys shows
 * a key's subject key identifier, else its serial number (x509_key_preparse); a signature
 * names its key by subject key identifier (sign-file -k) or by issuer and serial number (the
 * default). So an id match is the key; with the signer's certificate at hand (pinned) its
 * kernel id settles it; a signature naming a serial, against a key of the same name shown by
 * its subject key identifier, cannot be told apart from /proc/keys alone.
 */
static void predict_signed(const struct ktrust *t, const struct ktrust_modules *m, const char *rule,
			   struct ktrust_prediction *p)
{
	const char *signer = m->signer && *m->signer ? m->signer : "?";
	const char *id = m->key_id && *m->key_id ? m->key_id : "?";
	const struct ktrust_key *k = ktrust_match(t, m->key_id), *named;
	bool settled = m->named_by_skid || (m->cert_kernel_id && *m->cert_kernel_id);
	char need[384];

	if (!k && m->cert_kernel_id && *m->cert_kernel_id)
		k = ktrust_match(t, m->cert_kernel_id);
	named = k ? NULL : ktrust_named(t, m->signer);
	snprintf(
		need, sizeof(need),
		"the kernel must trust '%s' (key %s): enroll its certificate (mokutil, or --kernel-keyring-cert), or use a package signed by a key the kernel holds",
		signer, id);
	if (k)
		predict_set(p, KTRUST_LOADS, "trusted key", NULL,
			    "signed by '%s' (key %s), which the kernel holds as '%s: %s' (%s)",
			    signer, id, k->subject, k->key_id,
			    t->keyrings[0] ? t->keyrings : "keyrings");
	else if (!t->has_keys)
		predict_set(
			p, KTRUST_UNKNOWN, rule, need,
			"the kernel enforces signatures (%s) and its keys cannot be read (no /proc/keys): signed by '%s' (key %s)",
			rule, signer, id);
	else if (named && !settled)
		predict_set(
			p, KTRUST_UNKNOWN, rule,
			"pin the signer's certificate (--module-cert) so that its key id can be compared with the kernel's keys",
			"the kernel enforces signatures (%s) and holds a key named '%s' (key %s), but a name is not a key: the modules name theirs by key %s, which may be its serial number, and /proc/keys shows that key by its subject key identifier",
			rule, named->subject, named->key_id, id);
	else if (named)
		predict_set(
			p, KTRUST_REFUSED, rule, need,
			"the kernel enforces signatures (%s) and none of its %zu key(s) is '%s' (key %s): its '%s: %s' is another key of that name",
			rule, t->n_keys, signer, id, named->subject, named->key_id);
	else
		predict_set(
			p, KTRUST_REFUSED, rule, need,
			"the kernel enforces signatures (%s) and none of its %zu key(s) is '%s' (key %s)",
			rule, t->n_keys, signer, id);
}

void ktrust_predict(const struct ktrust *t, const struct ktrust_modules *m,
		    struct ktrust_prediction *p)
{
	const char *rule = strcmp(t->sig_enforce, "yes") == 0 ? "sig_enforce" : "lockdown";

	if (ktrust_loadpin_enforces(t) && m->other_fs == 1) {
		predict_set(
			p, KTRUST_REFUSED, "loadpin",
			"boot with loadpin.exclude=kernel-module (modules then need a trusted signature), or write 0 to /proc/sys/kernel/loadpin/enforce where the kernel offers it",
			"LoadPin admits kernel files from the one file system it pinned (that of /lib/modules), and the modules are on another");
		return;
	}
	if (ktrust_enforces(t)) {
		if (!m->known)
			predict_set(
				p, KTRUST_UNKNOWN, rule,
				"modules signed by a key the kernel holds (see its keys: /proc/keys)",
				"the kernel enforces signatures (%s) and the package's signer is not known before it is unpacked",
				rule);
		else if (!m->is_signed)
			predict_set(
				p, KTRUST_REFUSED, rule,
				"modules signed by a key the kernel holds (see its keys: /proc/keys)",
				"the kernel enforces signatures (%s) and the modules are not signed",
				rule);
		else
			predict_signed(t, m, rule, p);
		return;
	}
	if (ktrust_loadpin_enforces(t) && m->other_fs < 0) {
		predict_set(p, KTRUST_UNKNOWN, "loadpin", NULL,
			    "LoadPin enforces and the modules' file system is not known");
		return;
	}
	if (strcmp(t->sig_enforce, "unknown") == 0 || strcmp(t->lockdown, "unknown") == 0)
		predict_set(p, KTRUST_LOADS, "none", NULL,
			    "no rule refuses them that could be read (sig_enforce %s, lockdown %s)",
			    t->sig_enforce, t->lockdown);
	else
		predict_set(p, KTRUST_LOADS, "none", NULL,
			    "the kernel loads unsigned modules (sig_enforce no, lockdown none)%s",
			    ktrust_loadpin_enforces(t)
				    ? "; LoadPin: the modules are on its file system"
				    : "");
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
	_cleanup_(BIO_freep) BIO *bio = NULL;
	_cleanup_(X509_freep) X509 *x = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;

	/* Read by the installer's one reader: a FIFO given there makes nobody wait. */
	if (fs_read_path(path, 1u << 20, &text, &len, e) < 0) {
		e->code = EXIT_USAGE;
		if (err_errnum(e) == EINVAL)
			err_hint(
				e,
				"pass the certificate file itself, not a FIFO, device or directory");
		return err_wrap(e, "kernel keyring certificate");
	}
	bio = BIO_new_mem_buf(text, (int)len);
	if (!bio)
		return err_openssl(e, EXIT_UNEXPECTED, "kernel keyring certificate '%s'", path);
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
	_cleanup_free_ char *keys = fs_read_in_root(root_fd, "/proc/keys", 1 << 20, NULL);
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
