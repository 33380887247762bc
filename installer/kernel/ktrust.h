/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the running kernel trusts: module signature enforcement, lockdown,
 * Secure Boot, LoadPin and the keys of its trusted keyrings, read under the
 * host root before anything changes; a prediction of whether a module will
 * load; and adding a certificate to the kernel's .secondary_trusted_keys
 * keyring (--kernel-keyring-cert).
 */
#pragma once

#include <stdbool.h>

#include "kernel/kernel.h" /* the face: what other folders call of this module */
#include "util/err.h"

/*
 * The LoadPin state from the text of /sys/kernel/security/lsm (NULL: unreadable), of
 * /proc/sys/kernel/loadpin/enforce or .../enabled (NULL: absent, as where the pinned
 * file system is read-only) and of /proc/cmdline (NULL: unreadable), into OUT.
 */
void ktrust_parse_loadpin(const char *lsm, const char *sysctl, const char *cmdline, char *out,
			  size_t size);

/*
 * Parses one line of /proc/keys: 1 and *ret filled for an asymmetric key, 0 for any
 * other line.
 */
int ktrust_parse_key(const char *line, struct ktrust_key *ret);

/*
 * The kernel key matching a module's signer: by KEY_ID (hex, any case, ':' allowed: the
 * signer's subject key id or serial) against the keys' ids, else by SIGNER against
 * their subjects (a self-signed signing certificate's issuer is its subject). NULL when
 * none matches.
 */
const struct ktrust_key *ktrust_match(const struct ktrust *t, const char *signer,
				      const char *key_id);

/* Whether LoadPin refuses kernel files from any file system but the one it pinned. */
bool ktrust_loadpin_enforces(const struct ktrust *t);

/* Whether this process holds CAP_SYS_MODULE (/proc/self/status): 1, 0, or -1 unknown. */
int ktrust_has_cap_sys_module(void);

/* What is known of the modules to load, for ktrust_predict. */
struct ktrust_modules {
	bool known;	/* the files were read; else signer and signature are unknown */
	bool is_signed; /* of the first module (nvidia.ko) */
	const char *signer;
	const char *key_id;
	int other_fs; /* 1: not on the file system of /lib/modules/RELEASE; 0: on it; -1: unknown */
};

/* Predicts whether the kernel will take modules M, by the rules in T. */
void ktrust_predict(const struct ktrust *t, const struct ktrust_modules *m,
		    struct ktrust_prediction *ret);

/* Whether the kernel refuses modules it cannot verify (sig_enforce, or lockdown). */
bool ktrust_enforces(const struct ktrust *t);

/* Parses /sys/kernel/security/lockdown ("none [integrity] confidentiality"). */
void ktrust_parse_lockdown(const char *buf, char *out, size_t size);

/* Finds the id of keyring NAME in /proc/keys text. Returns 0, or -1 when absent. */
int ktrust_find_keyring(const char *proc_keys, const char *name, long *ret_id);

/* Checks that PATH holds a certificate (PEM or DER). Returns 0, or -1 with EXIT_USAGE. */
_must_check_ int ktrust_check_cert(const char *path, struct err *e);

/*
 * Adds the certificate in PATH (PEM or DER) to .secondary_trusted_keys, found
 * in ROOT/proc/keys. Returns 0, or -1: EXIT_USAGE for an unreadable file,
 * EXIT_KERNEL_REFUSED (6) when the kernel refuses it, with the reason.
 */
_must_check_ int ktrust_add_cert(int root_fd, const char *path, struct err *e);
