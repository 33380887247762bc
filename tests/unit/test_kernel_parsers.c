// SPDX-License-Identifier: Apache-2.0
/* The parsers of the kernel stage: /proc/driver/nvidia, /proc/devices, /proc/keys, lockdown. */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/devnodes.h"
#include "kernel/kmods.h"
#include "kernel/ktrust.h"
#include "util/fs.h"

static void test_params(void **state)
{
	struct nv_params p;

	(void)state;
	devnodes_parse_params("ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\n"
			      "DeviceFileUID: 0\nDeviceFileGID: 44\nDeviceFileMode: 432\n",
			      &p);
	assert_true(p.modify);
	assert_int_equal(p.uid, 0);
	assert_int_equal(p.gid, 44);
	assert_int_equal(p.mode, 0660);
	devnodes_parse_params("ModifyDeviceFiles: 0\n", &p);
	assert_false(p.modify);
	assert_int_equal(p.mode, 0666); /* the driver's default */
	devnodes_parse_params("", &p);
	assert_true(p.modify);
	devnodes_parse_params("DeviceFileMode: x\nDeviceFileModeX: 1\n", &p);
	assert_int_equal(p.mode, 0666);
}

static void test_devices(void **state)
{
	static const char devices[] = "Character devices:\n  1 mem\n195 nvidia\n236 nvidia-caps\n"
				      "511 nvidia-uvm\n\nBlock devices:\n  8 sd\n259 nvidia-uvm\n";

	(void)state;
	assert_int_equal(devnodes_parse_major(devices, "nvidia-uvm"), 511);
	assert_int_equal(devnodes_parse_major(devices, "nvidia"), 195);
	assert_int_equal(devnodes_parse_major(devices, "nvidia-caps"), 236);
	assert_int_equal(devnodes_parse_major(devices, "nvidia-nvlink"), -1);
	assert_int_equal(devnodes_parse_major(devices, "sd"), -1); /* block, not char */
	assert_int_equal(devnodes_parse_major("", "nvidia"), -1);
	assert_int_equal(devnodes_parse_minor("Model: \t\t NVIDIA H100\nIRQ:   \t\t 35\n"
					      "Device Minor: \t 3\nGPU Excluded:\t No\n"),
			 3);
	assert_int_equal(devnodes_parse_minor("Model: x\n"), -1);
	assert_int_equal(devnodes_parse_minor("Device Minor: \t\n"), -1);
}

static void test_keys_and_lockdown(void **state)
{
	static const char keys[] =
		"0a0b0c0d I------     1 perm 1f0b0000     0     0 keyring   .builtin_trusted_keys: "
		"1\n"
		"1e2b3c4d I------     1 perm 1f0b0000     0     0 keyring   "
		".secondary_trusted_keys: 2\n"
		"2f000001 I--Q---     1 perm 1f3f0000     0 65534 keyring   _uid.0: empty\n";
	char out[32];
	long id = 0;

	(void)state;
	assert_int_equal(ktrust_find_keyring(keys, ".secondary_trusted_keys", &id), 0);
	assert_int_equal(id, 0x1e2b3c4d);
	assert_int_equal(ktrust_find_keyring(keys, ".platform", &id), -1);
	assert_int_equal(ktrust_find_keyring("", ".secondary_trusted_keys", &id), -1);
	assert_int_equal(
		ktrust_find_keyring("zz I-- 1 perm 1 0 0 keyring .secondary_trusted_keys: 1\n",
				    ".secondary_trusted_keys", &id),
		-1);

	ktrust_parse_lockdown("none [integrity] confidentiality\n", out, sizeof(out));
	assert_string_equal(out, "integrity");
	ktrust_parse_lockdown("[none] integrity confidentiality\n", out, sizeof(out));
	assert_string_equal(out, "none");
	ktrust_parse_lockdown("garbage", out, sizeof(out));
	assert_string_equal(out, "unknown");
	ktrust_parse_lockdown("[]", out, sizeof(out));
	assert_string_equal(out, "unknown");
}

/* /proc/keys lines of asymmetric keys: the kernel's description, "SUBJECT: KEYID". */
static void test_proc_keys_lines(void **state)
{
	struct ktrust_key k;

	(void)state;
	assert_int_equal(
		ktrust_parse_key("3a1f2b0c I------     1 perm 1f010000     0     0 asymmetri "
				 "Debian Secure Boot CA: 6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1: "
				 "X509.rsa bb419ea1 []",
				 &k),
		1);
	assert_string_equal(k.subject, "Debian Secure Boot CA");
	assert_string_equal(k.key_id, "6ccece7e4c6c0d1f6149f3dd27dfcc5cbb419ea1");
	/* "O: CN" names; an upper-case id is kept in lower case. */
	assert_int_equal(ktrust_parse_key("00000011 I------     1 perm 1f010000     0     0 "
					  "asymmetri Canonical Ltd.: Kernel Module Signing: "
					  "88A4E7E0: X509.rsa 88a4e7e0 []\n",
					  &k),
			 1);
	assert_string_equal(k.subject, "Canonical Ltd.: Kernel Module Signing");
	assert_string_equal(k.key_id, "88a4e7e0");
	/* Keyrings, other types, truncated and empty lines are not keys. */
	assert_int_equal(ktrust_parse_key("0a0b0c0d I------     1 perm 1f0b0000     0     0 keyring"
					  "   .builtin_trusted_keys: 1",
					  &k),
			 0);
	assert_int_equal(ktrust_parse_key("0a0b0c0d I------     1 perm 1f0b0000     0     0 user "
					  "   foo: bar: 12",
					  &k),
			 0);
	assert_int_equal(ktrust_parse_key("0a0b0c0d I------ 1 perm 1f0b0000 0 0 asymmetri "
					  "no key id here: X509.rsa",
					  &k),
			 0);
	assert_int_equal(ktrust_parse_key("0a0b0c0d I------", &k), 0);
	assert_int_equal(ktrust_parse_key("", &k), 0);
}

static void test_loadpin_files(void **state)
{
	char out[16];

	(void)state;
	/* The sysctl decides where it exists. */
	ktrust_parse_loadpin("lockdown,capability,loadpin\n", "1\n", "", out, sizeof(out));
	assert_string_equal(out, "enforcing");
	ktrust_parse_loadpin("lockdown,capability,loadpin\n", "0\n", "", out, sizeof(out));
	assert_string_equal(out, "permissive");
	/* No sysctl (a read-only pinned file system): the LSM list and the command line. */
	ktrust_parse_loadpin("capability,loadpin,yama", NULL, "ro root=/dev/dm-0", out,
			     sizeof(out));
	assert_string_equal(out, "enforcing");
	ktrust_parse_loadpin("capability,loadpin", NULL, "loadpin.enforce=0", out, sizeof(out));
	assert_string_equal(out, "permissive");
	ktrust_parse_loadpin("capability,loadpinx,yama", NULL, "", out, sizeof(out));
	assert_string_equal(out, "off");
	ktrust_parse_loadpin(NULL, NULL, NULL, out, sizeof(out));
	assert_string_equal(out, "unknown");
	/* Kernel modules exempt on the command line, whatever the sysctl says. */
	ktrust_parse_loadpin("loadpin", "1", "quiet loadpin.exclude=kexec-image,kernel-module", out,
			     sizeof(out));
	assert_string_equal(out, "excluded");
	ktrust_parse_loadpin("loadpin", "1", "loadpin.exclude=kernel-modules", out, sizeof(out));
	assert_string_equal(out, "enforcing");
}

static void test_predict(void **state)
{
	struct ktrust t = {.sig_enforce = "yes",
			   .lockdown = "none",
			   .loadpin = "off",
			   .has_keys = true,
			   .n_keys = 1};
	struct ktrust_modules m = {.known = true,
				   .is_signed = true,
				   .signer = "Test modkey",
				   .key_id = "AB:CD:EF",
				   .other_fs = 1};
	struct ktrust_prediction p;

	(void)state;
	snprintf(t.keys[0].subject, sizeof(t.keys[0].subject), "Other");
	snprintf(t.keys[0].key_id, sizeof(t.keys[0].key_id), "abcdef");
	/* By key id, whatever its spelling. */
	assert_non_null(ktrust_match(&t, "AB:CD:EF"));
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_LOADS);
	assert_string_equal(p.need, "");
	/* Another key: refused, the key named. */
	m.key_id = "01:02";
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_REFUSED);
	assert_string_equal(p.rule, "sig_enforce");
	assert_non_null(strstr(p.need, "'Test modkey' (key 01:02)"));
	/* By name: a key "O: CN" whose CN is the signer; never matched as the key. */
	snprintf(t.keys[0].subject, sizeof(t.keys[0].subject), "Test Org: Test modkey");
	assert_non_null(ktrust_named(&t, "Test modkey"));
	assert_null(ktrust_named(&t, "modkey"));
	assert_null(ktrust_match(&t, "01:02"));
	/* Same name, another id, the signature naming a serial: the name settles nothing. */
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_UNKNOWN);
	assert_non_null(strstr(p.why, "holds a key named 'Test Org: Test modkey' (key abcdef), "
				      "but a name is not a key"));
	assert_non_null(strstr(p.need, "--module-cert"));
	/* The signature names its subject key identifier: another key of the same name. */
	m.named_by_skid = true;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_REFUSED);
	assert_non_null(
		strstr(p.why, "its 'Test Org: Test modkey: abcdef' is another key of that"));
	/* The pinned certificate's own id: the kernel's key, or not. */
	m.named_by_skid = false;
	m.cert_kernel_id = "AB:CD:EF";
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_LOADS);
	m.cert_kernel_id = "AB:CD:EE";
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_REFUSED);
	m.cert_kernel_id = NULL;
	/* Unsigned under lockdown; unknown signer; no keys to read. */
	snprintf(t.sig_enforce, sizeof(t.sig_enforce), "no");
	snprintf(t.lockdown, sizeof(t.lockdown), "integrity");
	m.is_signed = false;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_REFUSED);
	assert_string_equal(p.rule, "lockdown");
	m.known = false;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_UNKNOWN);
	m.known = true;
	m.is_signed = true;
	t.has_keys = false;
	t.n_keys = 0;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_UNKNOWN);
	/* LoadPin on another file system outranks a trusted signature; on its own, loads. */
	t.has_keys = true;
	t.n_keys = 1;
	snprintf(t.loadpin, sizeof(t.loadpin), "enforcing");
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_REFUSED);
	assert_string_equal(p.rule, "loadpin");
	m.other_fs = 0;
	snprintf(t.lockdown, sizeof(t.lockdown), "none");
	m.is_signed = false;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_LOADS);
	m.other_fs = -1;
	ktrust_predict(&t, &m, &p);
	assert_int_equal(p.verdict, KTRUST_UNKNOWN);
}

static void test_module_args(void **state)
{
	char m[64], kv[64];
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(kmods_parse_arg("nvidia-drm.modeset=1", m, sizeof(m), kv, sizeof(kv), &e),
			 0);
	assert_string_equal(m, "nvidia_drm");
	assert_string_equal(kv, "modeset=1");
	assert_int_equal(kmods_parse_arg("nvidia.NVreg_RegistryDwords=a=1;b=2", m, sizeof(m), kv,
					 sizeof(kv), &e),
			 0);
	assert_string_equal(kv, "NVreg_RegistryDwords=a=1;b=2");
	static const char *const bad[] = {"nvidia",	   "nvidia.x",	    ".x=1",
					  "nvidia.=1",	   "nvidia.x=",	    "nvidia.a-b=1",
					  "nvidia.x=a b",  "a=b.c",	    "nvidia.x=\"1\"",
					  "nvidia.x=\xff", "nvidia.x=\x01", "nvidi\xc3.x=1",
					  "nv idia.x=1",   "nv/x.y=1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (kmods_parse_arg(bad[i], m, sizeof(m), kv, sizeof(kv), &e) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_int_equal(e.code, EXIT_USAGE);
	}
	char name[] = "nvidia-uvm";
	kmods_normalise_name(name);
	assert_string_equal(name, "nvidia_uvm");
}

/* Kernel log records, one per read as /dev/kmsg gives them: a SEQPACKET socket keeps them apart. */
static void test_driver_log(void **state)
{
	static const char *const records[] = {
		"6,1001,5000,-;nvidia: module license 'NVIDIA' taints kernel.\n",
		"6,1002,5001,-;NVRM: The NVIDIA GPU 0000:00:04.0 (PCI ID: 10de:1db6)\n",
		"6,1003,5002,-;NVRM: installed in this system is not supported by the\n",
		"4,1004,5003,c;NVRM:  NVIDIA 535.261.03 driver release.\n SUBSYSTEM=pci\n",
		"6,1005,5004,-;usb 1-1: NVRM: not at the start, still the driver's words\n",
		"3,1006,5005,-;nvidia: probe of 0000:00:04.0 failed with error -1\n",
		/* Written to /dev/kmsg from user space (LOG_USER), or none: not the driver's. */
		"12,1007,5006,-;NVRM: the user's words\n",
		"NVRM: a line without a record's prefix\n",
	};
	char buf[512], tiny[24];
	int sv[2];

	(void)state;
	kmods_driver_log(-1, buf, sizeof(buf));
	assert_string_equal(buf, "");

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		assert_true(write(sv[1], records[i], strlen(records[i])) > 0);
	kmods_driver_log(sv[0], buf, sizeof(buf));
	assert_string_equal(buf,
			    "The NVIDIA GPU 0000:00:04.0 (PCI ID: 10de:1db6) installed in this "
			    "system is not supported by the NVIDIA 535.261.03 driver release. "
			    "not at the start, still the driver's words");

	/* A small buffer truncates, terminated. */
	for (size_t i = 1; i < 3; i++)
		assert_true(write(sv[1], records[i], strlen(records[i])) > 0);
	kmods_driver_log(sv[0], tiny, sizeof(tiny));
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	assert_memory_equal(tiny, "The NVIDIA GPU 0000:00:", sizeof(tiny) - 1);

	/* Nothing logged since: empty. */
	kmods_driver_log(sv[0], buf, sizeof(buf));
	assert_string_equal(buf, "");
	close(sv[0]);
	close(sv[1]);
}

/* mkfile ROOT_FD PATH TEXT: a file under the test root, with its directories. */
static void mkfile(int root_fd, const char *path, const char *text)
{
	char dir[256];
	struct err e;
	int fd;

	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	fd = fs_dir_in_root(root_fd, dir, true, &e);
	assert_true(fd >= 0);
	close(fd);
	fd = fs_open_in_root(root_fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, 0, &e);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

/*
 * A set live at the version to install: built from file names without reading them
 * (these .ko files are empty), in the order given; and a module of it that is gone by
 * the time the set is loaded is refused, not inserted unread and unverified.
 */
static void test_live_set(void **state)
{
	struct scratch_fixture *f = *state;
	char n1[] = "nvidia", n2[] = "nvidia-uvm", *names[] = {n1, n2};
	struct ktrust trust = {.sig_enforce = "no", .lockdown = "none", .loadpin = "off"};
	struct kmods_set_request q;
	struct kmods_set set;
	struct kmods *k = NULL;
	struct err e;
	int root_fd = f->fd, drivers_fd;

	err_clear(&e);
	mkfile(root_fd, "/drivers/nvidia.ko", "");
	mkfile(root_fd, "/drivers/nvidia-uvm.ko", "");
	mkfile(root_fd, "/sys/module/nvidia/initstate", "live\n");
	assert_int_equal(kmods_new(root_fd, "6.1.0-57-amd64", &k, &e), 0);
	assert_false(kmods_all_live(k, names, 2));
	mkfile(root_fd, "/sys/module/nvidia_uvm/initstate", "live\n");
	assert_true(kmods_all_live(k, names, 2));

	drivers_fd = fs_dir_in_root(root_fd, "/drivers", false, &e);
	assert_true(drivers_fd >= 0);
	q = (struct kmods_set_request){.drivers_fd = drivers_fd, .names = names, .n_names = 2};
	assert_int_equal(kmods_set_build(k, &q, &set, &e), 0);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.e[0].name, "nvidia");
	assert_string_equal(set.e[1].name, "nvidia_uvm");
	assert_string_equal(set.e[1].info.name, "nvidia_uvm");
	/* Reading them is what fails: they are not modules. */
	q.modinfo = true;
	assert_int_equal(kmods_set_build(k, &q, &set, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);

	err_clear(&e);
	q.modinfo = false;
	assert_int_equal(kmods_set_build(k, &q, &set, &e), 0);
	set.e[0].was_live = set.e[1].was_live = true;
	/* Both still live: nothing to load. */
	assert_int_equal(kmods_load_set(k, &set, &trust, &e), 0);
	assert_int_equal(unlinkat(root_fd, "sys/module/nvidia_uvm/initstate", 0), 0);
	assert_int_equal(kmods_load_set(k, &set, &trust, &e), -1);
	assert_non_null(strstr(e.msg, "module nvidia_uvm was unloaded while this run"));

	close(drivers_fd);
	kmods_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_keys_and_lockdown),
		cmocka_unit_test(test_proc_keys_lines),
		cmocka_unit_test(test_loadpin_files),
		cmocka_unit_test(test_predict),
		cmocka_unit_test(test_module_args),
		cmocka_unit_test(test_driver_log),
		scratch_unit_test(test_live_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
