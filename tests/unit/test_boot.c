// SPDX-License-Identifier: Apache-2.0
/*
 * host/boot.c's parsers: GRUB's environment block, grub.cfg's menu (submenus, ids,
 * titles, the default), BLS entries and their menu order.
 */
#include "cmocka_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "host/boot.h"
#include "util/vercmp.h"

static void test_grubenv(void **state)
{
	static const char env[] = "# GRUB Environment Block\nsaved_entry=1>2\nnext_entry=\n"
				  "boot_success=0\n##########";
	char v[64];

	(void)state;
	assert_int_equal(boot_grubenv_get(env, "saved_entry", v, sizeof(v)), 1);
	assert_string_equal(v, "1>2");
	/* Emptied after its one boot (00_header's save_env next_entry): not set. */
	assert_int_equal(boot_grubenv_get(env, "next_entry", v, sizeof(v)), 0);
	assert_int_equal(boot_grubenv_get(env, "entry", v, sizeof(v)), 0);
}

static const char cfg[] =
	"function load_video {\n  insmod all_video\n}\n"
	"if [ \"${next_entry}\" ] ; then\n   set default=\"${next_entry}\"\nelse\n"
	"   set default=\"${saved_entry}\"\nfi\n"
	"menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple' {\n"
	"\tlinux\t/boot/vmlinuz-6.1.0-58-amd64 root=UUID=x ro quiet\n}\n"
	"submenu 'Advanced options' $menuentry_id_option 'gnulinux-advanced' {\n"
	"\tmenuentry 'With Linux 6.1.0-58-amd64' --id 'a58' {\n"
	"\t\tif [ x$feature_all_video_module = xy ]; then\n\t\t\tinsmod all_video\n\t\tfi\n"
	"\t\tlinux16 /vmlinuz-6.1.0-58-amd64 root=UUID=x\n\t}\n"
	"\tmenuentry \"With Linux 6.1.0-57-amd64\" --id=a57 {\n"
	"\t\tlinuxefi /boot/vmlinuz-6.1.0-57-amd64\n\t}\n}\n"
	"menuentry 'UEFI Firmware Settings' $menuentry_id_option 'uefi-firmware' {\n"
	"\tfwsetup\n}\n";

static void test_grub_cfg(void **state)
{
	struct boot_menu *m = calloc(1, sizeof(*m));
	int i;

	(void)state;
	assert_non_null(m);
	boot_parse_grub_cfg(cfg, m);
	assert_int_equal(m->n, 5);
	assert_string_equal(m->default_entry, "${saved_entry}");
	assert_false(m->blscfg);
	assert_string_equal(m->e[0].release, "6.1.0-58-amd64");
	assert_int_equal(m->e[2].parent, 1);
	assert_string_equal(m->e[3].id, "a57");
	assert_int_equal(m->e[4].parent, -1); /* the submenu closed */
	/* By index, id and title, step by step; a submenu itself boots nothing. */
	assert_int_equal(boot_menu_find(m, "0"), 0);
	assert_int_equal(boot_menu_find(m, "1>1"), 3);
	assert_int_equal(boot_menu_find(m, "gnulinux-advanced>a58"), 2);
	assert_string_equal(m->e[2].release, "6.1.0-58-amd64");
	i = boot_menu_find(m, "Advanced options>With Linux 6.1.0-57-amd64");
	assert_int_equal(i, 3);
	assert_string_equal(m->e[i].release, "6.1.0-57-amd64");
	assert_int_equal(boot_menu_find(m, "1"), -1);
	assert_int_equal(boot_menu_find(m, "a58"), -1); /* not at the top */
	assert_int_equal(boot_menu_find(m, "1>7"), -1);
	assert_int_equal(boot_menu_find(m, "2"), 4);
	assert_string_equal(m->e[4].release, "");
	boot_parse_grub_cfg("set default=\"${saved_entry}\"\ninsmod blscfg\nblscfg\n", m);
	assert_true(m->blscfg);
	assert_int_equal(m->n, 0);
	free(m);
}

static void test_bls(void **state)
{
	struct boot_entry e[3];

	(void)state;
	assert_int_equal(
		boot_parse_bls("m-5.14.0-427.el9.x86_64.conf",
			       "title RHEL (5.14.0-427.el9.x86_64)\nversion "
			       "5.14.0-427.el9.x86_64\nlinux /vmlinuz-5.14.0-427.el9.x86_64\n",
			       &e[0]),
		0);
	assert_string_equal(e[0].id, "m-5.14.0-427.el9.x86_64");
	assert_string_equal(e[0].title, "RHEL (5.14.0-427.el9.x86_64)");
	/* No version: the image's name says the kernel. */
	assert_int_equal(boot_parse_bls("m-b.conf",
					"title B\nlinux /vmlinuz-5.14.0-503.el9.x86_64\n", &e[1]),
			 0);
	assert_string_equal(e[1].release, "5.14.0-503.el9.x86_64");
	assert_int_equal(boot_parse_bls("x.conf", "title EFI shell\nefi /shell.efi\n", &e[2]), -1);
	assert_int_equal(boot_parse_bls("m-c.conf",
					"title C\nsort-key zz\nversion 5.14.0-70.el9.x86_64\n",
					&e[2]),
			 0);
	/* A sort-key first, then the newest version first. */
	boot_sort_bls(e, 3, vercmp_rpm);
	assert_string_equal(e[0].id, "m-c");
	assert_string_equal(e[1].release, "5.14.0-503.el9.x86_64");
	assert_string_equal(e[2].release, "5.14.0-427.el9.x86_64");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grubenv),
		cmocka_unit_test(test_grub_cfg),
		cmocka_unit_test(test_bls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
