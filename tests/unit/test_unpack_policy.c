// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "stage/unpack.h"
#include "stage/unpack_policy.h"

static int check(const char *name, char *out)
{
	struct err e;

	err_clear(&e);
	return unpack_check_path(name, out, PATH_MAX, &e);
}

static void test_paths_accepted(void **state)
{
	char out[PATH_MAX];

	(void)state;
	assert_int_equal(check("lib64/libcuda.so.1", out), 0);
	assert_string_equal(out, "lib64/libcuda.so.1");
	assert_int_equal(check("./kernel/nvidia.ko", out), 0);
	assert_string_equal(out, "kernel/nvidia.ko");
	assert_int_equal(check("firmware/nvidia/550.90.07/", out), 0);
	assert_string_equal(out, "firmware/nvidia/550.90.07");
	assert_int_equal(check("bin", out), 0);
	assert_int_equal(check("share/nvidia/..hidden", out), 0);
	/* The archive's own root carries nothing. */
	assert_int_equal(check("./", out), 1);
	assert_int_equal(check(".", out), 1);
}

static void test_paths_refused(void **state)
{
	static const char *const bad[] = {
		"/lib64/x",	  "../lib64/x", "lib64/../../x", "lib64/../bin/x", "lib64//x",
		"lib64/./x",	  "etc/passwd", "libs/x",	 "lib64x/y",	   "lib64/a\nb",
		"lib64/\x1b[31m", "..",		"kernel/..",	 "./../bin/x",	   "",
	};
	char out[PATH_MAX], longname[PATH_MAX + 8];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = check(bad[i], out);

		if (bad[i][0] == '\0') {
			assert_int_equal(r, 1);
			continue;
		}
		if (r != -1)
			fail_msg("'%s' was accepted", bad[i]);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	memcpy(longname, "lib64/", 6);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(check(longname, out), -1);
	memset(longname + 6, 'a', 300);
	longname[306] = '\0';
	assert_int_equal(check(longname, out), -1); /* component > NAME_MAX */
}

static int link_ok(const char *name, const char *target)
{
	struct err e;

	err_clear(&e);
	return unpack_check_symlink(name, target, &e);
}

static void test_symlinks(void **state)
{
	(void)state;
	assert_int_equal(link_ok("lib64/libcuda.so", "libcuda.so.1"), 0);
	assert_int_equal(link_ok("lib64/libcuda.so.1", "./libcuda.so.550"), 0);
	assert_int_equal(link_ok("bin/tool", "../lib64/tool"), 0);
	assert_int_equal(link_ok("firmware/nvidia/current", "550.90.07"), 0);
	assert_int_equal(link_ok("firmware/nvidia/x/y", "../../../bin/z"), 0);
	assert_int_equal(link_ok("bin/up", ".."), 0); /* the package root: inside */

	assert_int_equal(link_ok("bin/up", "../.."), -1);
	assert_int_equal(link_ok("lib64/l", "/etc/passwd"), -1);
	assert_int_equal(link_ok("lib64/l", ""), -1);
	assert_int_equal(link_ok("lib64/l", "a/../.."), -1);
	assert_int_equal(link_ok("lib64/l", "a/.."), -1);
	assert_int_equal(link_ok("lib64/a/b/c", "../../../../x"), -1);
	assert_int_equal(link_ok("lib64/l", "x\ny"), -1);
}

/* The bound on unverified bytes: the signed unpacked_size, else a ratio of the size. */
static void test_limits(void **state)
{
	struct unpack_limit l;

	(void)state;
	l = unpack_limit_for(100 << 20, 0);
	assert_int_equal(l.bytes, 1600ull << 20);
	assert_non_null(strstr(l.why, "16 times its signed size"));
	/* Tiny packages: at least 1 MiB (tar alone pads to 10 KiB). */
	assert_int_equal(unpack_limit_for(200, 0).bytes, UNPACK_MIN_LIMIT);
	/* A signed unpacked_size wins, above the ratio or below it. */
	l = unpack_limit_for(100 << 20, 3000ull << 20);
	assert_int_equal(l.bytes, 3000ull << 20);
	assert_string_equal(l.why, "its signed unpacked_size");
	assert_int_equal(unpack_limit_for(100 << 20, 12345).bytes, 12345);
	assert_int_equal(unpack_limit_for(200, 5000).bytes, 5000);
	/* Never past the ceiling, nor overflowing. */
	l = unpack_limit_for(1ull << 40, 0);
	assert_int_equal(l.bytes, UNPACK_MAX_TOTAL_SIZE);
	assert_string_equal(l.why, "the 16 GiB ceiling");
	assert_int_equal(unpack_limit_for(1, 1ull << 40).bytes, UNPACK_MAX_TOTAL_SIZE);
	assert_int_equal(unpack_limit_for(UINT64_MAX, 0).bytes, UNPACK_MAX_TOTAL_SIZE);
}

/* Names and link targets are UTF-8, judged the same from every archive format. */
static void test_utf8_and_long_targets(void **state)
{
	static const char *const good[] = {"share/doc/caf\xc3\xa9.txt",
					   "share/\xe6\x97\xa5\xe6\x9c\xac",
					   "share/\xf0\x9f\x98\x80"};
	static const char *const bad[] = {
		"share/caf\xe9.txt",	  /* Latin-1 */
		"share/\xc0\xaf",	  /* overlong '/' */
		"share/\xed\xa0\x80",	  /* a surrogate */
		"share/\xf4\x90\x80\x80", /* past U+10FFFF */
		"share/\xe6\x97",	  /* cut short */
	};
	char out[PATH_MAX], *target;
	struct err e;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		err_clear(&e);
		if (unpack_check_path(good[i], out, sizeof(out), &e) != 0)
			fail_msg("'%s' refused: %s", good[i], e.msg);
		assert_int_equal(unpack_check_symlink("share/l", good[i] + 6, &e), 0);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err_clear(&e);
		assert_int_equal(unpack_check_path(bad[i], out, sizeof(out), &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
		assert_non_null(strstr(e.msg, "is not UTF-8"));
		err_clear(&e);
		assert_int_equal(unpack_check_symlink("share/l", bad[i] + 6, &e), -1);
		assert_int_equal(e.code, EXIT_VERIFY);
	}
	/* A target the kernel cannot store (PATH_MAX with its NUL) is a policy refusal. */
	target = malloc(PATH_MAX + 1);
	assert_non_null(target);
	memset(target, 'a', PATH_MAX);
	target[PATH_MAX] = '\0';
	err_clear(&e);
	assert_int_equal(unpack_check_symlink("share/l", target, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "has a target too long"));
	target[PATH_MAX - 1] = '\0';
	err_clear(&e);
	assert_int_equal(unpack_check_symlink("share/l", target, &e), 0);
	free(target);
}

static int xattr_ok(const char *path, bool is_file, const char *name, const char *value, size_t len,
		    const char *want)
{
	struct err e;
	int r;

	err_clear(&e);
	r = unpack_check_xattr(path, is_file, name, value, len, &e);
	if (r < 0) {
		assert_int_equal(e.code, EXIT_VERIFY);
		/* The refusal names the member, and the attribute where that is the fault. */
		assert_non_null(strstr(e.msg, path));
		if (want && !strstr(e.msg, want))
			fail_msg("'%s' on '%s': '%s' lacks '%s'", name, path, e.msg, want);
	}
	return r;
}

/* Only security.ima, only on files under firmware/ and kernel/, of an IMA type and size. */
static void test_xattr_policy(void **state)
{
	static const char sig[] = "\x03\x02\x04\x01\x02\x03\x04\x00\x02\xab\xcd";
	char big[UNPACK_IMA_MAX + 1];

	(void)state;
	assert_int_equal(xattr_ok("firmware/nvidia/535/gsp_ga10x.bin", true, "security.ima", sig,
				  sizeof(sig) - 1, NULL),
			 0);
	assert_int_equal(xattr_ok("kernel/nvidia.ko", true, "security.ima", "\x04\x04xx", 4, NULL),
			 0);
	assert_int_equal(xattr_ok("kernel/nvidia.ko", true, "security.ima", "\x01x", 2, NULL), 0);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", "\x06x", 2, NULL), 0);

	assert_int_equal(xattr_ok("firmware/f", true, "user.foo", "x", 1, "'user.foo'"), -1);
	assert_int_equal(xattr_ok("bin/nvidia-smi", true, "security.capability", "\x01\x00\x00\x02",
				  4, "'security.capability'"),
			 -1);
	assert_int_equal(xattr_ok("kernel/nvidia.ko", true, "trusted.overlay.opaque", "y", 1,
				  "'trusted.overlay.opaque'"),
			 -1);
	assert_int_equal(
		xattr_ok("firmware/f", true, "security.selinux", "x", 1, "'security.selinux'"), -1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima.x", sig, 3, "security.ima.x"),
			 -1);
	/* security.ima where it has no business. */
	assert_int_equal(xattr_ok("bin/nvidia-smi", true, "security.ima", sig, sizeof(sig) - 1,
				  "only on files under firmware/ and kernel/"),
			 -1);
	assert_int_equal(xattr_ok("lib64/libcuda.so.1", true, "security.ima", sig, sizeof(sig) - 1,
				  "security.ima"),
			 -1);
	assert_int_equal(xattr_ok("firmwarex/f", true, "security.ima", sig, sizeof(sig) - 1, NULL),
			 -1);
	assert_int_equal(xattr_ok("firmware", false, "security.ima", sig, sizeof(sig) - 1, NULL),
			 -1);
	assert_int_equal(xattr_ok("firmware/nvidia/current", false, "security.ima", sig,
				  sizeof(sig) - 1, NULL),
			 -1);
	/* Sizes and types. */
	memset(big, 3, sizeof(big));
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", big, UNPACK_IMA_MAX, NULL),
			 0);
	assert_int_equal(
		xattr_ok("firmware/f", true, "security.ima", big, UNPACK_IMA_MAX + 1, "1025 bytes"),
		-1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", sig, 1, "1 bytes"), -1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", "", 0, "0 bytes"), -1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", "\x30\x82", 2, "type 48"),
			 -1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", "\x02x", 2, "type 2"), -1);
	assert_int_equal(xattr_ok("firmware/f", true, "security.ima", "\x05x", 2, "type 5"), -1);
}

static bool enforced_len(const char *cmdline, const char *policy, size_t len,
			 const char *unreadable, const char *want)
{
	struct unpack_ima_policy p = {.text = policy, .len = len, .unreadable = unreadable};
	char why[192];
	bool r = unpack_ima_enforced(cmdline, &p, why, sizeof(why));

	if (!strstr(why, want))
		fail_msg("cmdline '%s': reason '%s' lacks '%s'", cmdline, why, want);
	return r;
}

static bool enforced(const char *cmdline, const char *policy, const char *want)
{
	return enforced_len(cmdline, policy, policy ? strlen(policy) : 0, NULL, want);
}

/* When the host enforces IMA appraisal of firmware and modules, from what it shows. */
static void test_ima_enforced(void **state)
{
	(void)state;
	/* The policy, when readable, says it. */
	assert_true(enforced(
		"ro quiet",
		"measure func=BPRM_CHECK\nappraise func=FIRMWARE_CHECK appraise_type=imasig\n",
		"'appraise func=FIRMWARE_CHECK appraise_type=imasig'"));
	assert_true(enforced("", "appraise func=MODULE_CHECK appraise_type=imasig\n",
			     "func=MODULE_CHECK"));
	assert_true(enforced("", "dont_appraise fsmagic=0x9fa0\nappraise fowner=0 \n",
			     "'appraise fowner=0 '"));
	assert_false(enforced("", "appraise func=KEXEC_KERNEL_CHECK appraise_type=imasig\n",
			      "appraises neither"));
	assert_false(enforced("", "dont_appraise fsmagic=0x9fa0\nmeasure func=FILE_CHECK\n",
			      "appraises neither"));
	assert_false(enforced("", "", "appraises neither"));
	/* A readable policy overrides the command line's named policies (it lists them). */
	assert_false(enforced("ima_policy=tcb", "measure func=BPRM_CHECK\n", "appraises neither"));
	/* log, fix, off: nothing is refused, whatever the rules. */
	assert_false(
		enforced("ima_appraise=log", "appraise func=FIRMWARE_CHECK\n", "ima_appraise=log"));
	assert_false(
		enforced("ima_policy=appraise_tcb ima_appraise=fix", NULL, "ima_appraise=fix"));
	assert_false(enforced("ima_appraise=off ima_policy=secure_boot", NULL, "ima_appraise=off"));
	/* Without the policy: the command line's. */
	assert_true(enforced("ro ima_policy=tcb|appraise_tcb quiet", NULL,
			     "ima_policy=tcb|appraise_tcb"));
	assert_true(enforced("ima_policy=secure_boot\n", NULL, "ima_policy=secure_boot"));
	assert_true(enforced("ima_appraise_tcb", NULL, "ima_appraise_tcb"));
	assert_true(enforced("ima_appraise=enforce", NULL, "ima_appraise=enforce"));
	assert_true(enforced("ima_appraise=enforce ima_policy=tcb", NULL, "ima_appraise=enforce"));
	assert_false(enforced("ima_policy=tcb", NULL, "neither"));
	assert_false(enforced("ima_policy=appraise_tcbx my_ima_appraise=enforce", NULL, "neither"));
	assert_false(enforced("", NULL, "neither"));
	/* What follows "--" is for init, not the kernel. */
	assert_false(enforced("ro -- ima_policy=appraise_tcb", NULL, "neither"));
}

/* A policy with bytes the kernel never writes, or one that cannot be read whole. */
static void test_ima_hostile_policy(void **state)
{
	static const char nul[] = "measure func=BPRM_CHECK\0\nappraise func=MODULE_CHECK\n";
	static const char nul_in_line[] = "measure\0appraise func=FIRMWARE_CHECK";

	(void)state;
	/* A NUL before the appraise rule hides nothing after it. */
	assert_true(enforced_len("", nul, sizeof(nul) - 1, NULL, "'appraise func=MODULE_CHECK'"));
	assert_true(enforced_len("", nul_in_line, sizeof(nul_in_line) - 1, NULL,
				 "'appraise func=FIRMWARE_CHECK'"));
	/* A rule cut short at the end of the bytes is read up to there, not past. */
	assert_false(
		enforced_len("", "appraise func=MODULE_CHECKX", 14, NULL, "appraises neither"));
	assert_false(enforced_len("", "\0\0\0", 3, NULL, "appraises neither"));
	/* Unreadable is not "does not appraise"; log, fix and off still refuse nothing. */
	assert_true(enforced_len("", NULL, 0, "not a regular file", "cannot be read whole (not a"));
	assert_true(enforced_len("ima_policy=tcb", NULL, 0, "larger than 1048576 bytes",
				 "cannot be read whole (larger"));
	assert_false(enforced_len("ima_appraise=log", NULL, 0, "larger", "ima_appraise=log"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_accepted),
		cmocka_unit_test(test_paths_refused),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_utf8_and_long_targets),
		cmocka_unit_test(test_xattr_policy),
		cmocka_unit_test(test_ima_enforced),
		cmocka_unit_test(test_ima_hostile_policy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
