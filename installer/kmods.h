/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel modules with libkmod: what a .ko file is (modinfo), whether the
 * running kernel can take it (vermagic, signature), and inserting and
 * removing the driver's set in dependency order. The host's module tree is
 * ROOT/lib/modules/RELEASE; the kernel's live state is read from ROOT/proc
 * and ROOT/sys. No insmod or modprobe process is ever run.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "modsig.h"
#include "util/err.h"

/* Exit codes of the kernel stage (docs/exit-codes.md). */
#define EXIT_KERNEL_REFUSED 6 /* the kernel refused, or cannot accept, the module */
#define EXIT_IN_USE 7	      /* the loaded driver is in use */

#define KMODS_NAME_MAX 64

struct kmods_info {
	char name[KMODS_NAME_MAX]; /* "nvidia_uvm": modinfo's name, '-' as '_' */
	char version[64];
	char vermagic[256];
	char depends[512]; /* comma-separated module names */
};

struct kmods_report {
	char file[256];
	bool has_info;
	struct kmods_info info;
	struct modsig_result sig;
	bool vermagic_ok;
	bool ok;	   /* signature (when required) and vermagic pass */
	int code;	   /* when !ok: EXIT_VERIFY or EXIT_KERNEL_REFUSED */
	char verdict[640]; /* "ok", or why not */
};

struct kmods;

/*
 * Opens libkmod for RELEASE with the host's module tree under root_fd (which
 * may be missing: modules from files still work, in-tree lookups do not).
 * Returns 0 or -1.
 */
int kmods_new(int root_fd, const char *release, struct kmods **ret, struct err *e);
void kmods_free(struct kmods *k);
DEFINE_POINTER_CLEANUP(struct kmods, kmods_free)

/* Normalises a module name in place: '-' becomes '_', as the kernel does. */
void kmods_normalise_name(char *name);

/* Reads a module file's .modinfo. Returns 0, or -1 (EXIT_VERIFY: not a module). */
int kmods_modinfo(struct kmods *k, const char *path, struct kmods_info *ret, struct err *e);

/*
 * Everything the kernel would check before it runs the module at PATH:
 * modinfo, vermagic against RELEASE, and the signature against CERTS (only
 * required when CERTS holds any). Returns 0 with the verdict in *ret, or -1
 * on I/O trouble.
 */
int kmods_inspect(struct kmods *k, const char *path, const struct modsig_certs *certs,
		  const char *release, struct kmods_report *ret, struct err *e);
