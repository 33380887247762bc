/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the running kernel trusts: module signature enforcement, lockdown and
 * Secure Boot, read under the host root; and adding a certificate to the
 * kernel's .secondary_trusted_keys keyring (--kernel-keyring-cert).
 */
#pragma once

#include <stdbool.h>

#include "util/err.h"

struct ktrust {
	char sig_enforce[16]; /* "yes", "no" or "unknown" */
	char lockdown[32];    /* "none", "integrity", "confidentiality" or "unknown" */
	char secure_boot[16]; /* "enabled", "disabled" or "unknown" (no EFI variables) */
};

/* Reads the state from ROOT/sys. Never fails: what cannot be read is "unknown". */
void ktrust_probe(int root_fd, struct ktrust *ret);

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
