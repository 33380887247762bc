// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"
#include "scratch.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/nvlink.h"
#include "host/probe.h"
#include "util/fs.h"

static void test_os_release(void **state)
{
	static const char text[] = "# comment\n"
				   "NAME=\"Container-Optimized OS\"\n"
				   "ID=cos\n"
				   "  VERSION_ID='117'\n"
				   "BUILD_ID=\"17800.66.78\" # trailing\n"
				   "PRETTY_NAME=\"COS \\\"117\\\" \\$x\"\n"
				   "not an assignment\n"
				   "HOME_URL=https://cloud.google.com/\n";
	struct host h = {0};
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(host_parse_os_release(text, &h, &e), 0);
	assert_string_equal(h.os_id, "cos");
	assert_string_equal(h.os_version_id, "117");
	assert_string_equal(h.os_build_id, "17800.66.78");
	assert_string_equal(h.os_pretty, "COS \"117\" $x");
	host_done(&h);

	/* A rebuild: of its own ID and of those ID_LIKE names, whole words only. */
	assert_int_equal(
		host_parse_os_release("ID=rocky\nID_LIKE=\"rhel centos  fedora\"\n", &h, &e), 0);
	assert_true(host_os_is(&h, "rocky"));
	assert_true(host_os_is(&h, "rhel"));
	assert_true(host_os_is(&h, "fedora"));
	assert_false(host_os_is(&h, "rh"));
	assert_false(host_os_is(&h, "centos fedora"));
	assert_false(host_os_is(&h, ""));
	host_done(&h);

	/* No ID: "linux", as os-release(5) says. */
	assert_int_equal(host_parse_os_release("NAME=x\n", &h, &e), 0);
	assert_string_equal(h.os_id, "linux");
	assert_null(h.os_build_id);
	host_done(&h);

	assert_int_equal(host_parse_os_release("ID=\"ubuntu\nVERSION_ID=22.04\n", &h, &e), -1);
	assert_non_null(strstr(e.msg, "unterminated quote"));
	host_done(&h);
	assert_int_equal(host_parse_os_release("", &h, &e), 0);
	host_done(&h);
	/* A malformed line in a field we do not read is not ours to refuse. */
	assert_int_equal(host_parse_os_release("ANSI_COLOR=\"0;31\nID=cos\nHOME_URL='x\n", &h, &e),
			 0);
	assert_string_equal(h.os_id, "cos");
	host_done(&h);
}

static void test_pci_hex(void **state)
{
	uint32_t v = 0;

	(void)state;
	assert_int_equal(host_parse_pci_hex("0x10de\n", 4, &v), 0);
	assert_int_equal(v, 0x10de);
	assert_int_equal(host_parse_pci_hex("0x030200\n", 6, &v), 0);
	assert_int_equal(v, 0x030200);
	assert_int_equal(host_parse_pci_hex("0X2330", 4, &v), 0);
	assert_int_equal(v, 0x2330);
	assert_int_equal(host_parse_pci_hex("10de\n", 4, &v), -1);
	assert_int_equal(host_parse_pci_hex("0x\n", 4, &v), -1);
	assert_int_equal(host_parse_pci_hex("0x10de0\n", 4, &v), -1);
	assert_int_equal(host_parse_pci_hex("0x10de\n\n", 4, &v), -1);
	assert_int_equal(host_parse_pci_hex("0x10dg\n", 4, &v), -1);
	assert_int_equal(host_parse_pci_hex("", 4, &v), -1);

	assert_true(host_is_nvidia_gpu(0x10de, 0x030000));
	assert_true(host_is_nvidia_gpu(0x10de, 0x030200));
	assert_false(host_is_nvidia_gpu(0x10de, 0x040300)); /* HDMI audio */
	assert_false(host_is_nvidia_gpu(0x10de, 0x0c0330)); /* USB */
	assert_false(host_is_nvidia_gpu(0x1002, 0x030000)); /* another vendor */

	assert_true(host_is_nvidia_nvswitch(0x10de, 0x068000));	 /* HGX H100's 22a3 */
	assert_false(host_is_nvidia_nvswitch(0x10de, 0x030200)); /* a GPU */
	assert_false(host_is_nvidia_nvswitch(0x10de, 0x060400)); /* a PCI-to-PCI bridge */
	assert_false(host_is_nvidia_nvswitch(0x8086, 0x068000)); /* another vendor's */
	assert_false(host_is_nvidia_gpu(0x10de, 0x068000));
}

static void test_pci_id(void **state)
{
	static const char *const bad[] = {"",		"10de",	      "10de:",	     "10de:233",
					  "10de:23300", "10de-2330",  "0x10de:2330", "10de:23g0",
					  " 10de:2330", "10de:2330\n"};
	uint16_t v = 1, d = 2;

	(void)state;
	assert_int_equal(host_parse_pci_id("10de:2330", &v, &d), 0);
	assert_int_equal(v, 0x10de);
	assert_int_equal(d, 0x2330);
	assert_int_equal(host_parse_pci_id("10DE:20B0", &v, &d), 0);
	assert_int_equal(d, 0x20b0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 1;
		d = 2;
		if (host_parse_pci_id(bad[i], &v, &d) == 0)
			fail_msg("'%s' parsed", bad[i]);
		assert_int_equal(v, 1); /* untouched on failure */
		assert_int_equal(d, 2);
	}
}

/* A node image described by coverage's options, as repo_select reads a probed host. */
static void test_describe(void **state)
{
	char *gpus[] = {(char *)"10de:2330", (char *)"10de:20b0"};
	char *badgpu[] = {(char *)"10de:2330", (char *)"nvidia"};
	char long_name[80];
	struct host h;
	struct err e;

	(void)state;
	err_clear(&e);
	assert_int_equal(host_describe(&(struct host_image){.os = "cos",
							    .os_build = "17800.66.78",
							    .kernel = "6.1.0-57-amd64",
							    .arch = "arm64",
							    .gpu_ids = gpus,
							    .n_gpus = 2},
				       &h, &e),
			 0);
	assert_string_equal(h.os_id, "cos");
	assert_string_equal(h.os_build_id, "17800.66.78");
	assert_string_equal(h.kernel, "6.1.0-57-amd64");
	assert_string_equal(h.arch, "arm64");
	assert_int_equal(h.n_gpus, 2);
	assert_int_equal(h.gpus[1].device, 0x20b0);
	assert_string_equal(h.gpus[1].bdf, "--gpu #2");
	host_done(&h);

	assert_int_equal(
		host_describe(&(struct host_image){.os = "ubuntu", .kernel = "k", .arch = "x86_64"},
			      &h, &e),
		0);
	assert_null(h.os_build_id);
	assert_int_equal(h.n_gpus, 0);
	host_done(&h);

	assert_int_equal(host_describe(&(struct host_image){.os = "cos",
							    .kernel = "k",
							    .arch = "x86_64",
							    .gpu_ids = badgpu,
							    .n_gpus = 2},
				       &h, &e),
			 -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--gpu 'nvidia' is not a PCI id"));
	assert_null(h.os_id); /* nothing held on failure */
	err_clear(&e);
	assert_int_equal(
		host_describe(&(struct host_image){.os = "cos", .kernel = "../k", .arch = "x86_64"},
			      &h, &e),
		-1);
	assert_non_null(strstr(e.msg, "--kernel '../k'"));
	err_clear(&e);
	assert_int_equal(
		host_describe(&(struct host_image){.os = "", .kernel = "k", .arch = "x86_64"}, &h,
			      &e),
		-1);
	assert_non_null(strstr(e.msg, "--os ''"));
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	err_clear(&e);
	assert_int_equal(
		host_describe(
			&(struct host_image){.os = "cos", .kernel = long_name, .arch = "x86_64"},
			&h, &e),
		-1);
	assert_int_equal(e.code, EXIT_USAGE);
}

static void test_relevant_modules(void **state)
{
	(void)state;
	assert_true(host_module_is_relevant("nvidia"));
	assert_true(host_module_is_relevant("nvidia_uvm"));
	assert_true(host_module_is_relevant("nvidia_drm"));
	assert_true(host_module_is_relevant("nouveau"));
	assert_true(host_module_is_relevant("nova_core"));
	assert_true(host_module_is_relevant("nvidiafb"));
	assert_false(host_module_is_relevant("drm"));
	assert_false(host_module_is_relevant("nvme"));
	assert_false(host_module_is_relevant("i915"));
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void add_dev(const char *root, const char *bdf, const char *vendor, const char *device,
		    const char *cls)
{
	char dev[512], link[512], target[512];

	snprintf(dev, sizeof(dev), "%s/sys/devices/pci0000:00/%s", root, bdf);
	assert_int_equal(mkdir(dev, 0755), 0);
	put(dev, "vendor", vendor);
	put(dev, "device", device);
	put(dev, "class", cls);
	snprintf(link, sizeof(link), "%s/sys/bus/pci/devices/%s", root, bdf);
	/* An absolute link, resolved inside the root. */
	snprintf(target, sizeof(target), "/sys/devices/pci0000:00/%s", bdf);
	assert_int_equal(symlink(target, link), 0);
}

static void test_probe(void **state)
{
	struct scratch_fixture *f = *state;
	const char *root = f->root;
	int fd = f->fd;
	char cmd[600];
	struct host h;
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_mkdirs(fd, "etc"), 0);
	assert_int_equal(scratch_mkdirs(fd, "sys/bus/pci/devices"), 0);
	assert_int_equal(scratch_mkdirs(fd, "sys/devices/pci0000:00"), 0);
	put(root, "etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n");
	add_dev(root, "0000:00:05.0", "0x10de\n", "0x20b0\n", "0x030200\n");
	add_dev(root, "0000:00:04.0", "0x10de\n", "0x2330\n", "0x030000\n");
	add_dev(root, "0000:00:04.1", "0x10de\n", "0x22a3\n", "0x040300\n");
	add_dev(root, "0000:00:01.0", "0x8086\n", "0x7000\n", "0x060100\n");

	assert_int_equal(host_probe(fd, "6.1.0-57-amd64", &h, &e), 0);
	assert_string_equal(h.kernel, "6.1.0-57-amd64");
	assert_string_equal(h.os_id, "ubuntu");
	assert_int_equal(h.n_gpus, 2);
	assert_string_equal(h.gpus[0].bdf, "0000:00:04.0"); /* sorted */
	assert_int_equal(h.gpus[0].device, 0x2330);
	assert_int_equal(h.gpus[1].device, 0x20b0);
	host_done(&h);

	/* A malformed attribute is an error that names the device. */
	snprintf(cmd, sizeof(cmd), "%s/sys/devices/pci0000:00/0000:00:05.0", root);
	put(cmd, "class", "display\n");
	assert_int_equal(host_probe(fd, NULL, &h, &e), -1);
	assert_non_null(strstr(e.msg, "0000:00:05.0"));

	/* No os-release: a configuration error with a hint. */
	snprintf(cmd, sizeof(cmd), "%s/etc/os-release", root);
	unlink(cmd);
	assert_int_equal(host_probe(fd, NULL, &h, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.hint, "--root"));
}

static void test_gid_guid(void **state)
{
	uint64_t g = 1;

	(void)state;
	assert_int_equal(host_parse_gid_guid("fe80:0000:0000:0000:0002:c903:0031:7b01\n", &g), 0);
	assert_true(g == 0x0002c90300317b01ull);
	assert_int_equal(host_parse_gid_guid("FE80:0000:0000:0000:B8CE:F603:00A1:23C4", &g), 0);
	assert_true(g == 0xb8cef60300a123c4ull);
	/* Seven groups, five digits, a stray character, text after the newline. */
	assert_int_equal(host_parse_gid_guid("fe80:0000:0000:0000:0002:c903:0031", &g), -1);
	assert_int_equal(host_parse_gid_guid("fe80:0000:0000:0000:0002:c903:0031:7b011", &g), -1);
	assert_int_equal(host_parse_gid_guid("fe80:0000:0000:0000:0002:c903:0031:7b0x", &g), -1);
	assert_int_equal(host_parse_gid_guid("fe80-0000:0000:0000:0002:c903:0031:7b01", &g), -1);
	assert_int_equal(host_parse_gid_guid("fe80:0000:0000:0000:0002:c903:0031:7b01\nx", &g), -1);
	assert_int_equal(host_parse_gid_guid("", &g), -1);
}

static void test_vpd(void **state)
{
	/* A VPD's vendor field "V3", as ConnectX's carry theirs: binary around the text. */
	static const char mgmt[] = "\x82\x10"
				   "Board Id\x90\x20V3\x0bSMDL=SW_MNG\x78\x00";
	static const char nic[] = "\x82\x10"
				  "Board Id\x90\x20V3\x0bMODL=CX750A\x78\x00";

	(void)state;
	assert_true(host_vpd_is_nvlink_mgmt(mgmt, sizeof(mgmt) - 1));
	assert_false(host_vpd_is_nvlink_mgmt(nic, sizeof(nic) - 1));
	/* Cut before the field ends: not a match. */
	assert_false(host_vpd_is_nvlink_mgmt(mgmt, 20));
	assert_false(host_vpd_is_nvlink_mgmt(NULL, 0));
}

/* An InfiniBand function IBDEV of VENDOR, with VPD text and a port 1 GID (NULL: none). */
static void add_ib(const char *root, const char *ibdev, const char *vendor, const char *vpd,
		   const char *gid)
{
	char dir[512], path[600];

	snprintf(dir, sizeof(dir), "%s/sys/devices/pci0000:00/%s", root, ibdev);
	assert_int_equal(mkdir(dir, 0755), 0);
	put(dir, "vendor", vendor);
	put(dir, "vpd", vpd);
	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/%s", root, ibdev);
	snprintf(path, sizeof(path), "%s/ports/1/gids", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/ports", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ports/1", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ports/1/gids", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	if (gid)
		put(path, "0", gid);
	snprintf(path, sizeof(path), "%s/device", dir);
	snprintf(dir, sizeof(dir), "/sys/devices/pci0000:00/%s", ibdev);
	assert_int_equal(symlink(dir, path), 0);
}

static void test_nvlink_scan(void **state)
{
	struct scratch_fixture *f = *state;
	const char *root = f->root;
	struct host h;
	char buf[96];

	memset(&h, 0, sizeof(h));
	/* No InfiniBand: nothing, and no fabric to name. */
	host_scan_nvlink(f->fd, &h.nvlink);
	assert_int_equal(h.nvlink.n_ports, 0);
	assert_false(h.nvlink.ib_umad);
	assert_null(host_fabric(&h, buf, sizeof(buf)));

	assert_int_equal(scratch_mkdirs(f->fd, "sys/class/infiniband"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "sys/devices/pci0000:00"), 0);
	/* Two management functions (listed out of order), a plain ConnectX-7, one of another
	 * vendor whose VPD says the same (not read), and a management one without a GID. */
	add_ib(root, "mlx5_3", "0x15b3\n", "V3SMDL=SW_MNG",
	       "fe80:0000:0000:0000:0002:c903:0000:0003\n");
	add_ib(root, "mlx5_1", "0x15b3\n", "V3SMDL=SW_MNG",
	       "fe80:0000:0000:0000:0002:c903:0000:0001\n");
	add_ib(root, "mlx5_0", "0x15b3\n", "V3MODL=CX750A",
	       "fe80:0000:0000:0000:0002:c903:0000:0010\n");
	add_ib(root, "other_0", "0x8086\n", "V3SMDL=SW_MNG",
	       "fe80:0000:0000:0000:0000:0000:0000:0020\n");
	add_ib(root, "mlx5_4", "0x15b3\n", "V3SMDL=SW_MNG", NULL);
	host_scan_nvlink(f->fd, &h.nvlink);
	assert_int_equal(h.nvlink.n_ports, 2);
	assert_string_equal(h.nvlink.ports[0].ibdev, "mlx5_1");
	assert_int_equal(h.nvlink.ports[0].port, 1);
	assert_string_equal(h.nvlink.ports[0].guid_text, "0x0002c90300000001");
	assert_string_equal(h.nvlink.ports[1].ibdev, "mlx5_3");
	assert_false(h.nvlink.ib_umad);
	assert_string_equal(host_fabric(&h, buf, sizeof(buf)),
			    "NVLink 5 NVSwitches behind 2 management port(s)");
	assert_int_equal(scratch_mkdirs(f->fd, "sys/class/infiniband_mad"), 0);
	host_scan_nvlink(f->fd, &h.nvlink);
	assert_true(h.nvlink.ib_umad);
	/* NVSwitches on the PCI bus are named as such. */
	h.n_nvswitches = 4;
	assert_string_equal(host_fabric(&h, buf, sizeof(buf)), "4 NVSwitch(es)");
}

/* The GPUs of multi-node NVLink domains, by NVIDIA's ids only (host/nvlink.c). */
static void test_imex_gpus(void **state)
{
	struct gpu gpus[3] = {{.vendor = 0x10de, .device = 0x2330},
			      {.vendor = 0x10de, .device = 0x31c2},
			      {.vendor = 0x10de, .device = 0x2941}};
	struct host h = {.gpus = gpus, .n_gpus = 1};
	const struct host_imex_gpu *row = NULL;

	(void)state;
	assert_string_equal(host_imex_gpu(0x10de, 0x2941)->name, "GB200");
	assert_string_equal(host_imex_gpu(0x10de, 0x2941)->min_version, "570.123.01");
	assert_string_equal(host_imex_gpu(0x10de, 0x31c2)->name, "GB300");
	assert_string_equal(host_imex_gpu(0x10de, 0x31c2)->min_version, "580.82.07");
	assert_null(host_imex_gpu(0x10de, 0x2901)); /* B200: NVLink inside the node */
	assert_null(host_imex_gpu(0x10de, 0x2330));
	assert_null(host_imex_gpu(0x1234, 0x2941));
	assert_null(host_imex_first(&h, &row));
	assert_null(row);
	h.n_gpus = 3;
	assert_ptr_equal(host_imex_first(&h, &row), &gpus[1]);
	assert_string_equal(row->name, "GB300");
}

/*
 * host_imex_lack: the full version judged first, numeric by part as host_imex_gate judges
 * it (older than the GPU's first release in NVIDIA's list not driven, even with the
 * programs: 570.86.16, the branch's first, lists no GB200; 570.123.01 does), then the
 * package's programs. The fix names the row's version, 570.158.01 at the least.
 */
static void test_imex_lack(void **state)
{
	static const char *const gb200_not[] = {"535.261.03", "565.57.01", "570.86.16",
						"570.86.15",  "570.123",   "570.9.99"};
	static const char *const gb200_ok[] = {"570.123.01", "570.124.06", "570.133.20",
					       "570.172.08", "575.57.08",  "1000.1"};
	const struct host_imex_gpu *gb200 = host_imex_gpu(0x10de, 0x2941);
	const struct host_imex_gpu *gb300 = host_imex_gpu(0x10de, 0x31c2);
	char buf[160];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(gb200_not); i++)
		assert_int_equal(host_imex_lack(gb200_not[i], true, gb200, buf, sizeof(buf)),
				 HOST_IMEX_NOT_DRIVEN);
	for (size_t i = 0; i < ARRAY_SIZE(gb200_ok); i++) {
		assert_int_equal(host_imex_lack(gb200_ok[i], true, gb200, buf, sizeof(buf)),
				 HOST_IMEX_SERVED);
		assert_string_equal(buf, "");
	}
	assert_int_equal(host_imex_lack("535.261.03", true, gb200, buf, sizeof(buf)),
			 HOST_IMEX_NOT_DRIVEN);
	assert_string_equal(
		buf, "driver 535.261.03 does not drive the GB200 (570.123.01 or later does)");
	assert_int_equal(host_imex_lack("570.86.16", true, gb200, buf, sizeof(buf)),
			 HOST_IMEX_NOT_DRIVEN);
	assert_string_equal(buf,
			    "driver 570.86.16 does not drive the GB200 (570.123.01 or later does)");
	/* Not driven comes first: a package without the programs says the version. */
	assert_int_equal(host_imex_lack("570.86.16", false, gb200, buf, sizeof(buf)),
			 HOST_IMEX_NOT_DRIVEN);
	assert_int_equal(host_imex_lack("575.57.08", true, gb300, buf, sizeof(buf)),
			 HOST_IMEX_NOT_DRIVEN);
	assert_string_equal(buf,
			    "driver 575.57.08 does not drive the GB300 (580.82.07 or later does)");
	assert_int_equal(host_imex_lack("580.76.05", true, gb300, buf, sizeof(buf)),
			 HOST_IMEX_NOT_DRIVEN);
	assert_int_equal(host_imex_lack("580.82.07", true, gb300, buf, sizeof(buf)),
			 HOST_IMEX_SERVED);
	assert_int_equal(host_imex_lack("570.133.20", false, gb200, buf, sizeof(buf)),
			 HOST_IMEX_NO_PROGRAMS);
	assert_string_equal(buf, "it carries no nvidia-imex and nvidia-imex-ctl");
	assert_string_equal(host_imex_fix_version(gb200), "570.158.01");
	assert_string_equal(host_imex_fix_version(gb300), "580.82.07");
}

/*
 * host_imex_gate: NVIDIA's DRA driver's default gate IMEXDaemonsWithDNSNames needs
 * 570.158.01 or later (numeric parts: 570.86.16 and 570.153.02 are older, 570.158.01,
 * 570.172.08 and 580.82.07 are not).
 */
static void test_imex_gate(void **state)
{
	static const char *const older[] = {"570.86.16", "570.124.06", "570.133.20", "570.153.02",
					    "570.158"};
	static const char *const new_enough[] = {"570.158.01", "570.158.02", "570.172.08",
						 "575.57.08",  "580.82.07",  "1000.1"};
	char buf[256], fix[128];

	(void)state;
	for (size_t i = 0; i < sizeof(older) / sizeof(older[0]); i++)
		assert_true(host_imex_gate(older[i], buf, sizeof(buf), fix, sizeof(fix)));
	for (size_t i = 0; i < sizeof(new_enough) / sizeof(new_enough[0]); i++) {
		assert_false(host_imex_gate(new_enough[i], buf, sizeof(buf), fix, sizeof(fix)));
		assert_string_equal(buf, "");
		assert_string_equal(fix, "");
	}
	assert_true(host_imex_gate("570.86.16", buf, sizeof(buf), fix, sizeof(fix)));
	assert_string_equal(
		buf,
		"driver 570.86.16 is older than 570.158.01, which NVIDIA's DRA driver needs for its default feature gate IMEXDaemonsWithDNSNames: its ComputeDomain kubelet plugin refuses to start");
	assert_string_equal(
		fix,
		"install 570.158.01 or later, or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false");
}

/*
 * host_nvsdm_wanted: an x86_64 host wants libnvsdm for its NVLink 5 switches by its
 * management ports or an HGX B200; aarch64 never (no arm64 libnvsdm); GB200 (switch trays
 * apart) and H100 (NVLink 4, NSCQ) do not.
 */
static void test_nvsdm_wanted(void **state)
{
	struct gpu gpus[2] = {{.vendor = 0x10de, .device = 0x2330},
			      {.vendor = 0x10de, .device = 0x2901}};
	struct host h = {.gpus = gpus, .n_gpus = 1};
	char buf[96];

	(void)state;
	strcpy(h.arch, "x86_64");
	assert_false(host_nvsdm_wanted(&h, buf, sizeof(buf)));
	assert_string_equal(buf, "");
	gpus[0].device = 0x2941;
	assert_false(host_nvsdm_wanted(&h, buf, sizeof(buf)));
	h.n_gpus = 2;
	assert_true(host_nvsdm_wanted(&h, buf, sizeof(buf)));
	assert_string_equal(buf, "GPU 10de:2901 (B200)");
	h.n_gpus = 0;
	h.nvlink.n_ports = 2;
	assert_true(host_nvsdm_wanted(&h, buf, sizeof(buf)));
	assert_string_equal(buf, "2 NVLink 5 management port(s)");
	strcpy(h.arch, "aarch64");
	h.n_gpus = 2;
	assert_false(host_nvsdm_wanted(&h, buf, sizeof(buf)));
	assert_string_equal(buf, "");
}

/*
 * host_nvsdm_fix: below HOST_NVSDM_FIRST_BRANCH a newer driver (build-driver-package
 * --nvsdm refuses the branch), from it the package built again with --nvsdm.
 */
static void test_nvsdm_fix(void **state)
{
	static const char newer[] =
		"install a driver of branch 560 or later built with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)";
	static const char rebuild[] =
		"build the driver's package with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)";
	static const struct {
		unsigned long branch;
		const char *want;
	} cases[] = {{535, newer}, {559, newer}, {560, rebuild}, {575, rebuild}};
	char buf[192];

	(void)state;
	assert_int_equal(HOST_NVSDM_FIRST_BRANCH, 560);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		host_nvsdm_fix(cases[i].branch, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_os_release),	 cmocka_unit_test(test_pci_hex),
		cmocka_unit_test(test_pci_id),		 cmocka_unit_test(test_describe),
		cmocka_unit_test(test_relevant_modules), scratch_unit_test(test_probe),
		cmocka_unit_test(test_gid_guid),	 cmocka_unit_test(test_vpd),
		scratch_unit_test(test_nvlink_scan),	 cmocka_unit_test(test_imex_gpus),
		cmocka_unit_test(test_imex_lack),	 cmocka_unit_test(test_imex_gate),
		cmocka_unit_test(test_nvsdm_wanted),	 cmocka_unit_test(test_nvsdm_fix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
