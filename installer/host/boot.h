/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host/boot.c's parsers, for its unit tests: GRUB's environment block and grub.cfg's
 * menu, Boot Loader Specification entries, and how a default names an entry.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "host/host.h" /* the face: what other folders call of this module */

#define BOOT_MAX_ENTRIES 128

struct boot_entry {
	char title[160];
	char id[160]; /* grub: --id / $menuentry_id_option; BLS: file name less .conf */
	char release[HOST_RELEASE_MAX + 1]; /* the kernel it boots, or "" */
	char sort_key[64];		    /* BLS sort-key, or "" */
	int parent;			    /* grub: the submenu it is in, or -1 */
	bool is_submenu;
};

struct boot_menu {
	struct boot_entry e[BOOT_MAX_ENTRIES];
	size_t n;
	char default_entry[256]; /* grub.cfg's `set default=`, other than "${next_entry}" */
	bool blscfg;		 /* grub.cfg takes its entries from BLS files (blscfg) */
};

/* NAME's value in a GRUB environment block (grubenv): 1 and OUT when set and not empty. */
int boot_grubenv_get(const char *text, const char *name, char *out, size_t size);

/* grub.cfg's menu entries, submenus and default, as grub-mkconfig writes them. */
void boot_parse_grub_cfg(const char *text, struct boot_menu *ret);

/* One BLS entry file NAME ("X.conf") of TEXT: 0 and *ret, or -1 when it names no kernel. */
int boot_parse_bls(const char *name, const char *text, struct boot_entry *ret);

/* BLS entries in the order a boot menu shows them (the spec's "Sorting"), CMP the versions'. */
void boot_sort_bls(struct boot_entry *e, size_t n, int (*cmp)(const char *, const char *));

/*
 * The entry DEF names among M's: "N" (the Nth at the top), "A>B" (B within submenu A),
 * a title or an id at each step. Its index, or -1.
 */
int boot_menu_find(const struct boot_menu *m, const char *def);
