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

#include "devnodes.h"
#include "kmods.h"
#include "ktrust.h"
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
	static const char *const bad[] = {"nvidia",	  "nvidia.x",  ".x=1",
					  "nvidia.=1",	  "nvidia.x=", "nvidia.a-b=1",
					  "nvidia.x=a b", "a=b.c",     "nvidia.x=\"1\""};
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
	assert_int_equal(kmods_set_build(k, drivers_fd, names, 2, NULL, 0, false, &set, &e), 0);
	assert_int_equal(set.n, 2);
	assert_string_equal(set.e[0].name, "nvidia");
	assert_string_equal(set.e[1].name, "nvidia_uvm");
	assert_string_equal(set.e[1].info.name, "nvidia_uvm");
	/* Reading them is what fails: they are not modules. */
	assert_int_equal(kmods_set_build(k, drivers_fd, names, 2, NULL, 0, true, &set, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);

	err_clear(&e);
	assert_int_equal(kmods_set_build(k, drivers_fd, names, 2, NULL, 0, false, &set, &e), 0);
	set.e[0].was_live = set.e[1].was_live = true;
	/* Both still live: nothing to load. */
	assert_int_equal(kmods_load_set(k, &set, false, "none", &e), 0);
	assert_int_equal(unlinkat(root_fd, "sys/module/nvidia_uvm/initstate", 0), 0);
	assert_int_equal(kmods_load_set(k, &set, false, "none", &e), -1);
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
		cmocka_unit_test(test_module_args),
		cmocka_unit_test(test_driver_log),
		scratch_unit_test(test_live_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
