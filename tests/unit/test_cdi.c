// SPDX-License-Identifier: Apache-2.0
/*
 * The CDI spec against the CDI library's own rules: the minimum version
 * (cncf-tags/container-device-interface, specs-go/version.go, requiresV040 ...
 * requiresV110), kind names (pkg/parser/parser.go, validateVendorOrClassName),
 * and how we find another producer's spec of our kind.
 */
#include "cmocka_prelude.h"
#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>

#include "expose/cdi.h"
#include "stage/locate.h"

static void test_min_version(void **state)
{
	static const struct {
		const char *spec, *want;
	} cases[] = {
		/* Nothing newer than the earliest supported version. */
		{"{\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"all\",\"containerEdits\":"
		 "{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\"}]}}]}",
		 "0.3.0"},
		/* Empty collections are absent ones (Go's len()). */
		{"{\"kind\":\"a/"
		 "b\",\"annotations\":{},\"devices\":[{\"name\":\"x\",\"containerEdits\":"
		 "{\"additionalGids\":[],\"netDevices\":[]}}]}",
		 "0.3.0"},
		/* v0.4.0: a mount's type. */
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}],"
		 "\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/a\",\"containerPath\":\"/b\","
		 "\"type\":\"bind\"}]}}",
		 "0.4.0"},
		/* v0.5.0: a device name that starts with a digit ... */
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"0\",\"containerEdits\":{}}]}",
		 "0.5.0"},
		/* ... or a device node's hostPath, in a device's edits or the spec's. */
		{"{\"kind\":\"a/"
		 "b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"deviceNodes\":"
		 "[{\"path\":\"/dev/a\",\"hostPath\":\"/dev/b\"}]}}]}",
		 "0.5.0"},
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}],"
		 "\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/a\",\"hostPath\":\"/dev/"
		 "b\"}]}}",
		 "0.5.0"},
		/* v0.6.0: annotations, on the spec or a device, or a dot in the class. */
		{"{\"kind\":\"a/b\",\"annotations\":{\"k\":\"v\"},\"devices\":[{\"name\":\"0\","
		 "\"containerEdits\":{}}]}",
		 "0.6.0"},
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"annotations\":{\"k\":\"v\"},"
		 "\"containerEdits\":{}}]}",
		 "0.6.0"},
		{"{\"kind\":\"example.com/"
		 "gpu.shared\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}]}",
		 "0.6.0"},
		/* A dot in the vendor is no 0.6.0 feature. */
		{"{\"kind\":\"example.com/"
		 "gpu\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}]}",
		 "0.3.0"},
		/* v0.7.0: additional GIDs, an intelRdt. */
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":"
		 "{\"additionalGids\":[44]}}]}",
		 "0.7.0"},
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}],"
		 "\"containerEdits\":{\"intelRdt\":{\"closID\":\"c\"}}}",
		 "0.7.0"},
		/* v1.1.0: intelRdt's schemata or monitoring, net devices. */
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"intelRdt\":"
		 "{\"schemata\":[\"L3:0=f\"]}}}]}",
		 "1.1.0"},
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"intelRdt\":"
		 "{\"enableMonitoring\":true}}}]}",
		 "1.1.0"},
		{"{\"kind\":\"a/b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}],"
		 "\"containerEdits\":{\"netDevices\":[{\"hostInterfaceName\":\"e\",\"name\":\"n\"}]"
		 "}}",
		 "1.1.0"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *got = cdi_min_version_of(cases[i].spec);

		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: %s, want %s: %s", i, got, cases[i].want, cases[i].spec);
	}
}

static bool has(const char *text, const char *needle)
{
	return strstr(text, needle) != NULL;
}

static void test_render(void **state)
{
	struct cdi_input in = {.kind = CDI_KIND,
			       .install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia",
			       .hook_path = "/home/kubernetes/bin/nvidia/.helpers/nvidia-cdi-hook",
			       .gpus = {{.index = 0, .minor = 0, .uuid = "GPU-a"},
					{.index = 1, .minor = 1, .uuid = ""}},
			       .n_gpus = 2,
			       .shared_nodes = {"/dev/nvidiactl"},
			       .n_shared = 1};
	char *s;

	(void)state;
	/* Devices "0" and "1": what podman 4.3's CDI library (0.5.x) accepts, not 0.6.0. */
	s = cdi_render(&in);
	assert_non_null(s);
	assert_true(has(s, "\"cdiVersion\": \"0.5.0\""));
	assert_true(has(s, "\"hookName\": \"createContainer\""));
	assert_true(has(s, "\"update-ldcache\""));
	assert_true(has(s, "\"--folder\""));
	/* The hook's deadline for ldconfig (20 s) before the runtime's for the hook. */
	assert_true(has(s, "\"--timeout\","));
	assert_true(has(s, "\"20\"\n"));
	assert_true(has(s, "\"timeout\": 30"));
	assert_true(has(s, "\"/home/kubernetes/bin/nvidia/.helpers/nvidia-cdi-hook\""));
	assert_false(has(s, "LD_LIBRARY_PATH"));
	assert_false(has(s, "\"env\""));
	/* The version key leads the file, as every CDI producer writes it. */
	assert_true(strncmp(s, "{\n  \"cdiVersion\"", 16) == 0);
	free(s);

	/* No GPU seen (no NVML): only "all", and nothing newer than 0.3.0 is needed. */
	in.n_gpus = 0;
	in.hook_path = NULL;
	s = cdi_render(&in);
	assert_true(has(s, "\"cdiVersion\": \"0.3.0\""));
	assert_false(has(s, "hooks"));
	free(s);

	/* A kind of our own, with a dot in its class: 0.6.0. */
	in.kind = "example.com/gpu.driver";
	s = cdi_render(&in);
	assert_true(has(s, "\"cdiVersion\": \"0.6.0\""));
	assert_true(has(s, "\"kind\": \"example.com/gpu.driver\""));
	free(s);
}

/*
 * GDRCopy's and GPUDirect Storage's nodes are devices of their own ("gdrcopy", "gds"), asked
 * for beside a GPU, never in the edits every device gets (nvidia-container-toolkit gives
 * them only on NVIDIA_GDRCOPY/NVIDIA_GDS=enabled); none given, no such device.
 */
static void test_gpudirect_devices(void **state)
{
	struct cdi_input in = {.kind = CDI_KIND,
			       .install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia",
			       .gpus = {{.index = 0, .minor = 0, .uuid = "GPU-a"}},
			       .n_gpus = 1,
			       .shared_nodes = {"/dev/nvidiactl"},
			       .n_shared = 1,
			       .gdrcopy_nodes = {"/dev/gdrdrv"},
			       .n_gdrcopy = 1,
			       .gds_nodes = {"/dev/nvidia-fs0", "/dev/nvidia-fs1"},
			       .n_gds = 2};
	char *s = cdi_render(&in);
	json_object *o, *devs, *common;
	const char *found[2] = {NULL, NULL};

	(void)state;
	assert_non_null(s);
	o = json_tokener_parse(s);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "devices", &devs));
	for (size_t i = 0; i < json_object_array_length(devs); i++) {
		json_object *d = json_object_array_get_idx(devs, i), *name, *edits, *nodes;
		const char *text;

		assert_true(json_object_object_get_ex(d, "name", &name));
		assert_true(json_object_object_get_ex(d, "containerEdits", &edits));
		assert_true(json_object_object_get_ex(edits, "deviceNodes", &nodes));
		text = json_object_to_json_string(nodes);
		if (strcmp(json_object_get_string(name), "gdrcopy") == 0)
			found[0] = text;
		else if (strcmp(json_object_get_string(name), "gds") == 0)
			found[1] = text;
		else
			assert_false(has(text, "gdrdrv") || has(text, "nvidia-fs"));
	}
	assert_non_null(found[0]);
	assert_true(has(found[0], "\\/dev\\/gdrdrv") || has(found[0], "/dev/gdrdrv"));
	assert_non_null(found[1]);
	assert_true(has(found[1], "nvidia-fs1"));
	assert_true(json_object_object_get_ex(o, "containerEdits", &common));
	assert_false(has(json_object_to_json_string(common), "gdrdrv"));
	assert_false(has(json_object_to_json_string(common), "nvidia-fs"));
	json_object_put(o);
	free(s);

	in.n_gdrcopy = in.n_gds = 0;
	s = cdi_render(&in);
	assert_false(has(s, "\"gdrcopy\"") || has(s, "\"gds\""));
	free(s);
}

/*
 * Graphics' loader files restated from nvidia-container-toolkit
 * (internal/discover/graphics.go at d34b304): the EGL vendor and external platform
 * files and OptiX's nvoptix.bin mounted under /usr/share (87-93, containerRoot 98), the
 * Vulkan ICD and implicit layer files under /etc (120-122, containerRoot 137; its
 * RPM-only nvidia_icd.ARCH.json and icd.d/nvidia_layers.json are no driver's here). Each
 * is in our table, and the spec mounts each file the install dir has, and no other.
 */
static void test_graphics_files(void **state)
{
	static const char *const toolkit[][2] = {
		{"glvnd/egl_vendor.d/10_nvidia.json", "/usr/share"},
		{"egl/egl_external_platform.d/15_nvidia_gbm.json", "/usr/share"},
		{"egl/egl_external_platform.d/10_nvidia_wayland.json", "/usr/share"},
		{"egl/egl_external_platform.d/09_nvidia_wayland2.json", "/usr/share"},
		{"egl/egl_external_platform.d/20_nvidia_xcb.json", "/usr/share"},
		{"egl/egl_external_platform.d/20_nvidia_xlib.json", "/usr/share"},
		{"nvidia/nvoptix.bin", "/usr/share"},
		{"vulkan/icd.d/nvidia_icd.json", "/etc"},
		{"vulkan/implicit_layer.d/nvidia_layers.json", "/etc"},
	};
	/*
	 * What the toolkit mounts for graphics that we do not, with the reason (docs/design.md,
	 * "Video and graphics"): none may be in our table unnoticed.
	 */
	static const char *const omitted[][2] = {
		/* graphics.go:100-106: OpenCL's ICD, which no package input carries. */
		{"OpenCL/vendors/nvidia.icd", "no build-driver-package input has it"},
		/* graphics.go:94-95: an X server's configs (display), none on GKE's nodes. */
		{"X11/xorg.conf.d/10-nvidia.conf", "X server only"},
		{"X11/xorg.conf.d/nvidia-drm-outputclass.conf", "X server only"},
		/* graphics.go:245-253: a symlink hook to libnvidia-allocator, not packed. */
		{"gbm/nvidia-drm_gbm.so", "no link hook; no libnvidia-allocator"},
	};
	struct cdi_input in = {.kind = CDI_KIND,
			       .install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia"};
	size_t n = 0;
	char *s, want[512];

	(void)state;
	for (; cdi_graphics_files[n].package_path; n++) {
		for (size_t j = 0; j < ARRAY_SIZE(omitted); j++) {
			if (strstr(cdi_graphics_files[n].package_path, omitted[j][0]))
				fail_msg("%s is mounted; docs/design.md says it is not (%s)",
					 omitted[j][0], omitted[j][1]);
		}
	}
	assert_int_equal(n, sizeof(toolkit) / sizeof(toolkit[0]));
	/* The unpack checks the same files (regular, no link on the way): stage/locate.h. */
	for (size_t i = 0; i < n; i++)
		assert_string_equal(cdi_graphics_files[i].package_path, locate_loader_files[i]);
	assert_null(locate_loader_files[n]);
	in.config_files = (1u << n) - 1;
	s = cdi_render(&in);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		bool found = false;

		for (size_t j = 0; j < n && !found; j++) {
			snprintf(want, sizeof(want), "%s/%s", toolkit[i][1], toolkit[i][0]);
			found = strcmp(cdi_graphics_files[j].container_path, want) == 0 &&
				strcmp(cdi_graphics_files[j].package_path + strlen("share/"),
				       toolkit[i][0]) == 0;
		}
		assert_true(found);
		snprintf(want, sizeof(want), "\"/home/kubernetes/bin/nvidia/share/%s\"",
			 toolkit[i][0]);
		assert_true(has(s, want));
		snprintf(want, sizeof(want), "\"containerPath\": \"%s/%s\"", toolkit[i][1],
			 toolkit[i][0]);
		assert_true(has(s, want));
	}
	free(s);
	/* Only the ICD file in the install dir (bit 0): only it; none asked: none. */
	in.config_files = 1u;
	s = cdi_render(&in);
	assert_true(has(s, "\"/etc/vulkan/icd.d/nvidia_icd.json\""));
	assert_false(has(s, "egl_vendor.d"));
	free(s);
	in.config_files = 0;
	s = cdi_render(&in);
	assert_false(has(s, "/etc/vulkan"));
	free(s);
}

/*
 * Graphics' per-GPU DRM nodes, as nvidia-container-toolkit adds them
 * (internal/modifier/graphics.go:47-58; internal/discover/graphics.go:399-452 the
 * card* and renderD* nodes of /dev/dri; internal/info/drm/drm_devices.go:24-38, found
 * through /sys/bus/pci/devices/BUSID/drm, the bus id from the driver's information file):
 * the GPU with minor 1 at 0000:00:05.0 gets card1 and renderD129, not the other GPU's
 * nor controlD65 (no such kind), nor a name whose /dev/dri entry is no character device;
 * the spec's device for that GPU (by index, by UUID) and "all" carry them.
 */
static void test_drm_nodes(void **state)
{
	struct scratch_fixture *f = *state;
	struct cdi_gpu g = {.index = 1, .minor = 1, .uuid = "GPU-1"};
	struct cdi_input in = {.kind = CDI_KIND,
			       .install_dir = "/home/kubernetes/bin/nvidia",
			       .container_dir = "/usr/local/nvidia"};
	static const char *const gpus[][2] = {{"0000:00:04.0", "0"}, {"0000:00:05.0", "1"}};
	static const char *const nodes[] = {"card0", "renderD128", "card1", "renderD129",
					    "controlD65"};
	char rel[128], text[128], *s;

	for (size_t i = 0; i < ARRAY_SIZE(gpus); i++) {
		snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", gpus[i][0]);
		snprintf(text, sizeof(text), "Bus Location: \t %s\nDevice Minor: \t %s\n",
			 gpus[i][0], gpus[i][1]);
		assert_int_equal(scratch_write(f->fd, rel, text), 0);
		for (size_t j = 0; j < 2; j++) {
			snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/drm/%s", gpus[i][0],
				 nodes[2 * i + j]);
			assert_int_equal(scratch_mkdirs(f->fd, rel), 0);
		}
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", gpus[i][0]);
		snprintf(text, sizeof(text), "../../../devices/pci0000:00/%s", gpus[i][0]);
		assert_int_equal(scratch_mkdirs(f->fd, "sys/bus/pci/devices"), 0);
		assert_int_equal(symlinkat(text, f->fd, rel), 0);
	}
	assert_int_equal(
		scratch_mkdirs(f->fd, "sys/devices/pci0000:00/0000:00:05.0/drm/controlD65"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "dev/dri"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		snprintf(rel, sizeof(rel), "dev/dri/%s", nodes[i]);
		if (mknodat(f->fd, rel, S_IFCHR | 0666, makedev(226, (unsigned)i)) < 0)
			skip(); /* no CAP_MKNOD: the integration test covers it */
	}
	cdi_drm_nodes(f->fd, &g);
	assert_int_equal(g.n_drm, 2);
	assert_string_equal(g.drm[0], "/dev/dri/card1");
	assert_string_equal(g.drm[1], "/dev/dri/renderD129");
	/* renderD129 a regular file: not a node. */
	assert_int_equal(unlinkat(f->fd, "dev/dri/renderD129", 0), 0);
	assert_int_equal(scratch_write(f->fd, "dev/dri/renderD129", "x"), 0);
	cdi_drm_nodes(f->fd, &g);
	assert_int_equal(g.n_drm, 1);
	/* A minor the driver does not list: none. */
	g.minor = 7;
	cdi_drm_nodes(f->fd, &g);
	assert_int_equal(g.n_drm, 0);

	g.minor = 1;
	cdi_drm_nodes(f->fd, &g);
	in.gpus[0] = g;
	in.n_gpus = 1;
	s = cdi_render(&in);
	assert_non_null(s);
	/* Squeezed of white space, the device entries in order. */
	for (char *r = s, *w = s;; r++) {
		if (*r != ' ' && *r != '\n' && *r != '\t')
			*w++ = *r;
		if (!*r)
			break;
	}
	for (const char *const *dev = (const char *const[]){"1", "GPU-1", "all", NULL}; *dev;
	     dev++) {
		char want[256];

		snprintf(
			want, sizeof(want),
			"{\"name\":\"%s\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia1\"},{\"path\":\"/dev/dri/card1\"}]}}",
			*dev);
		if (!has(s, want))
			fail_msg("no '%s' in %s", want, s);
	}
	free(s);
}

static void test_kind(void **state)
{
	static const char *const good[] = {"nvidia.com/gpu", "a/b", "example.com/gpu-1",
					   "nvidia.com/gpu.shared", "a_b/c_d9"};
	static const char *const bad[] = {"nvidia.com",
					  "/gpu",
					  "nvidia.com/",
					  "1nvidia.com/gpu",
					  "nvidia.com/gpu-",
					  "nvidia.com/g u",
					  "nvidia.com/gpu/x",
					  "nvidia.com/-gpu",
					  ""};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (!cdi_kind_is_valid(good[i]))
			fail_msg("'%s' refused", good[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (cdi_kind_is_valid(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

static void test_spec_kind(void **state)
{
	static const struct {
		const char *text;
		bool yaml;
		const char *want; /* NULL: none */
	} cases[] = {
		{"{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\"}", false, "nvidia.com/gpu"},
		{"{\"kind\":7}", false, NULL},
		{"not json", false, NULL},
		/* What nvidia-ctk cdi generate writes. */
		{"---\ncdiVersion: 0.5.0\ncontainerEdits:\n  env:\n  - "
		 "NVIDIA_VISIBLE_DEVICES=void\n"
		 "devices:\n- name: \"0\"\nkind: nvidia.com/gpu\n",
		 true, "nvidia.com/gpu"},
		{"kind: \"nvidia.com/gpu\"\n", true, "nvidia.com/gpu"},
		{"kind: 'example.com/x'  # ours\n", true, "example.com/x"},
		{"kind:   nvidia.com/gpu   \r\n", true, "nvidia.com/gpu"},
		/* Indented: a nested key, not the spec's kind. */
		{"devices:\n  - kind: nvidia.com/gpu\n", true, NULL},
		{"kind:\n", true, NULL},
		{"kind:   # none\n", true, NULL},
	};
	char k[64];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r = cdi_spec_kind(cases[i].text, strlen(cases[i].text), cases[i].yaml, k,
				      sizeof(k));

		if (!cases[i].want && r == 0)
			fail_msg("case %zu: found '%s'", i, k);
		if (cases[i].want && (r != 0 || strcmp(k, cases[i].want) != 0))
			fail_msg("case %zu: %d '%s'", i, r, r == 0 ? k : "");
	}
}

/* Writes TEXT as REL under the fixture's root. */
static void put(struct scratch_fixture *f, const char *rel, const char *text)
{
	assert_int_equal(scratch_write(f->fd, rel, text), 0);
}

/* Our spec's place in CDI_DIR under the fixture's root, pointing at the install dir. */
static struct cdi_place place(struct scratch_fixture *f, const char *cdi_dir)
{
	return (struct cdi_place){
		.root_fd = f->fd, .cdi_dir = cdi_dir, .install_dir = "/home/kubernetes/bin/nvidia"};
}

static void test_find_other(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/var/run/cdi");
	char other[512];

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var/run/cdi"), 0);
	/* Ours, by name, and a legacy one of ours (mounts from our install dir): no conflict. */
	put(f, "var/run/cdi/" CDI_FILE, "{\"kind\":\"nvidia.com/gpu\"}");
	put(f, "var/run/cdi/nvidia.json",
	    "{\"kind\":\"nvidia.com/gpu\",\"containerEdits\":{\"mounts\":[{\"hostPath\":"
	    "\"/home/kubernetes/bin/nvidia/lib64\",\"containerPath\":\"/x\"}]}}");
	/* Another kind, and a file the CDI library does not read. */
	put(f, "etc/cdi/other.yaml", "kind: example.com/fpga\n");
	put(f, "etc/cdi/notes.txt", "kind: nvidia.com/gpu\n");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 0);

	/* nvidia-ctk's spec in /etc/cdi. */
	put(f, "etc/cdi/nvidia.yaml", "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\n");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/etc/cdi/nvidia.yaml");
	/* Our file's name in another directory than ours is no proof. */
	unlinkat(f->fd, "etc/cdi/nvidia.yaml", 0);
	put(f, "etc/cdi/" CDI_FILE, "{\"kind\":\"nvidia.com/gpu\"}");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/etc/cdi/" CDI_FILE);
	unlinkat(f->fd, "etc/cdi/" CDI_FILE, 0);
	put(f, "etc/cdi/nvidia.yaml", "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\n");
	/* Under a kind of our own there is no conflict. */
	assert_int_equal(cdi_find_other(&at, "example.com/gpu", other, sizeof(other)), 0);

	/* Set aside, it is read no more; uninstall puts it back. */
	struct err e;
	char left[512];
	assert_int_equal(scratch_mkdirs(f->fd, "home/kubernetes/bin/nvidia"), 0);
	assert_int_equal(cdi_set_aside(&at, "/etc/cdi/nvidia.yaml", &e), 0);
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 0);
	assert_int_equal(cdi_restore_set_aside(&at, left, sizeof(left), &e), 0);
	assert_string_equal(left, "");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);

	/* A nvidia.json that is not ours (mounts from elsewhere) is another producer's. */
	unlinkat(f->fd, "etc/cdi/nvidia.yaml", 0);
	put(f, "var/run/cdi/nvidia.json",
	    "{\"kind\":\"nvidia.com/gpu\",\"containerEdits\":{\"mounts\":[{\"hostPath\":"
	    "\"/usr/lib/x86_64-linux-gnu/libcuda.so.1\",\"containerPath\":\"/x\"}]}}");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/var/run/cdi/nvidia.json");
	/* ... and cdi_remove leaves it alone. */
	assert_int_equal(cdi_remove(&at, &e), 0);
	assert_int_equal(faccessat(f->fd, "var/run/cdi/nvidia.json", F_OK, 0), 0);
	assert_int_not_equal(faccessat(f->fd, "var/run/cdi/" CDI_FILE, F_OK, 0), 0);
}

/* Our spec at DIR/CDI_FILE (root-relative), mounting from the install dir as ours does. */
static void put_ours(struct scratch_fixture *f, const char *dir)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "%s/" CDI_FILE, dir);
	put(f, rel,
	    "{\"kind\":\"nvidia.com/gpu\",\"containerEdits\":{\"mounts\":[{\"hostPath\":"
	    "\"/home/kubernetes/bin/nvidia/lib64\",\"containerPath\":\"/usr/local/nvidia/lib64\"}]}}");
}

/*
 * Ours is told by what it resolves to. Seen red before the fix: --cdi-dir /run/cdi where
 * /var/run links to /run, and /var/run/cdi/ with its slash, found our own spec as
 * another producer's (the install then withdrew it every other run).
 */
static void test_ours_by_identity(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place run = place(f, "/run/cdi");
	const struct cdi_place var_run = place(f, "/var/run/cdi/");
	const struct cdi_place doubled = place(f, "/run//cdi/");
	const struct cdi_place etc = place(f, "/etc/cdi/");
	char other[512];

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "run/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var"), 0);
	/* Absolute, as on systemd hosts: it resolves inside the root. */
	assert_int_equal(symlinkat("/run", f->fd, "var/run"), 0);
	put_ours(f, "run/cdi");
	assert_int_equal(cdi_find_other(&run, CDI_KIND, other, sizeof(other)), 0);
	assert_int_equal(cdi_find_other(&var_run, CDI_KIND, other, sizeof(other)), 0);
	assert_int_equal(cdi_find_other(&doubled, CDI_KIND, other, sizeof(other)), 0);
	/* A link in /etc/cdi to our spec is ours too: the runtime reads one file twice. */
	assert_int_equal(symlinkat("/var/run/cdi/" CDI_FILE, f->fd, "etc/cdi/link.json"), 0);
	assert_int_equal(cdi_find_other(&run, CDI_KIND, other, sizeof(other)), 0);
	/* A copy of it is another file, and the runtime sees two producers. */
	unlinkat(f->fd, "etc/cdi/link.json", 0);
	put_ours(f, "etc/cdi");
	assert_int_equal(cdi_find_other(&run, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/etc/cdi/" CDI_FILE);
	/* Written with --cdi-dir /etc/cdi/, it is ours, and the one in /run is the other. */
	assert_int_equal(cdi_find_other(&etc, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/var/run/cdi/" CDI_FILE);
}

/*
 * Another producer's spec is found however it is stored, as the CDI library reads it
 * (a link followed); what is no regular file, or too big, is skipped without a wait.
 * Seen red before the fix: a spec in /etc/cdi that links elsewhere was skipped.
 */
static void test_other_through_links(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/var/run/cdi");
	char other[512], *big = malloc(CDI_SPEC_MAX + 64);

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var/run/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "opt/ctk"), 0);
	put_ours(f, "var/run/cdi");
	/* What makes a reader wait or never end, and what is too big, is nobody's spec. */
	assert_int_equal(mkfifoat(f->fd, "etc/cdi/fifo.json", 0644), 0);
	assert_int_equal(mkfifoat(f->fd, "opt/ctk/fifo", 0644), 0);
	assert_int_equal(symlinkat("/opt/ctk/fifo", f->fd, "etc/cdi/to-fifo.yaml"), 0);
	assert_int_equal(symlinkat("/opt/ctk", f->fd, "etc/cdi/dir.json"), 0);
	assert_int_equal(symlinkat("/nowhere.yaml", f->fd, "etc/cdi/dangling.yaml"), 0);
	assert_non_null(big);
	memset(big, ' ', CDI_SPEC_MAX + 63);
	big[CDI_SPEC_MAX + 63] = '\0';
	memcpy(big, "kind: nvidia.com/gpu\n", 21);
	put(f, "opt/ctk/big.yaml", big);
	free(big);
	assert_int_equal(symlinkat("/opt/ctk/big.yaml", f->fd, "etc/cdi/big.yaml"), 0);
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 0);

	/* nvidia-ctk's spec kept elsewhere and linked: found, by the name the runtime reads. */
	put(f, "opt/ctk/nvidia.yaml", "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\n");
	assert_int_equal(symlinkat("/opt/ctk/nvidia.yaml", f->fd, "var/run/cdi/nvidia.yaml"), 0);
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/var/run/cdi/nvidia.yaml");
	/* A relative link, in /etc/cdi. */
	unlinkat(f->fd, "var/run/cdi/nvidia.yaml", 0);
	assert_int_equal(symlinkat("../../opt/ctk/nvidia.yaml", f->fd, "etc/cdi/ctk.yaml"), 0);
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/etc/cdi/ctk.yaml");

	/* A spec directory that is itself a link is not read by the CDI library, nor here. */
	unlinkat(f->fd, "etc/cdi/ctk.yaml", 0);
	assert_int_equal(renameat(f->fd, "etc/cdi", f->fd, "opt/cdi"), 0);
	assert_int_equal(symlinkat("/opt/cdi", f->fd, "etc/cdi"), 0);
	assert_int_equal(symlinkat("/opt/ctk/nvidia.yaml", f->fd, "opt/cdi/ctk.yaml"), 0);
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 0);
}

static bool exists(struct scratch_fixture *f, const char *rel)
{
	struct stat st;

	return fstatat(f->fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * --cdi-replace sets aside only another producer's spec and records it; uninstall puts
 * back what the record names and nothing else. Seen red before the fix: with --cdi-dir
 * /run/cdi, our own spec was set aside, and put back at uninstall (naming a hook that
 * uninstall had just removed).
 */
static void test_set_aside_record(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/run/cdi");
	char other[512], left[512];
	struct err e;

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "run/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "home/kubernetes/bin/nvidia"), 0);
	assert_int_equal(symlinkat("/run", f->fd, "var/run"), 0);
	put_ours(f, "run/cdi");
	put(f, "etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n");
	/* An earlier version's: another producer's, and ours (it took ours for another's). */
	put(f, "etc/cdi/old.yaml" CDI_SET_ASIDE, "kind: nvidia.com/gpu\n");
	put_ours(f, "run/cdi/x");
	assert_int_equal(renameat(f->fd, "run/cdi/x/" CDI_FILE, f->fd,
				  "run/cdi/" CDI_FILE ".json" CDI_SET_ASIDE),
			 0);

	/* What --cdi-replace does: set aside every other, until none is found. */
	while (cdi_find_other(&at, CDI_KIND, other, sizeof(other)) == 1)
		assert_int_equal(cdi_set_aside(&at, other, &e), 0);
	assert_true(exists(f, "etc/cdi/nvidia.yaml" CDI_SET_ASIDE));
	assert_true(exists(f, "run/cdi/" CDI_FILE));
	assert_false(exists(f, "run/cdi/" CDI_FILE CDI_SET_ASIDE));
	assert_true(exists(f, "home/kubernetes/bin/nvidia/.cdi-set-aside.json"));

	/* Their producer writes its spec again, and it is set aside again: that one comes back. */
	put(f, "etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu # again\n");
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_int_equal(cdi_set_aside(&at, other, &e), 0);

	assert_int_equal(cdi_restore_set_aside(&at, left, sizeof(left), &e), 0);
	assert_true(exists(f, "etc/cdi/nvidia.yaml"));
	assert_false(exists(f, "etc/cdi/nvidia.yaml" CDI_SET_ASIDE));
	assert_int_equal(cdi_find_other(&at, CDI_KIND, other, sizeof(other)), 1);
	assert_string_equal(other, "/etc/cdi/nvidia.yaml");
	/* The earlier version's: theirs named, not put back; ours removed. */
	assert_string_equal(left, "/etc/cdi/old.yaml" CDI_SET_ASIDE);
	assert_true(exists(f, "etc/cdi/old.yaml" CDI_SET_ASIDE));
	assert_false(exists(f, "etc/cdi/old.yaml"));
	assert_false(exists(f, "run/cdi/" CDI_FILE ".json" CDI_SET_ASIDE));
	assert_false(exists(f, "home/kubernetes/bin/nvidia/.cdi-set-aside.json"));

	/* The file at a recorded set-aside name is another one now: it is not put back. */
	unlinkat(f->fd, "etc/cdi/old.yaml" CDI_SET_ASIDE, 0);
	assert_int_equal(cdi_set_aside(&at, "/etc/cdi/nvidia.yaml", &e), 0);
	put(f, "etc/cdi/copy", "kind: nvidia.com/gpu\n");
	assert_int_equal(
		renameat(f->fd, "etc/cdi/copy", f->fd, "etc/cdi/nvidia.yaml" CDI_SET_ASIDE), 0);
	assert_int_equal(cdi_restore_set_aside(&at, left, sizeof(left), &e), 0);
	assert_false(exists(f, "etc/cdi/nvidia.yaml"));
	assert_string_equal(left, "/etc/cdi/nvidia.yaml" CDI_SET_ASIDE);
}

/*
 * The rule for another producer's spec of our kind, as the install and the agent apply it:
 * theirs win and ours is withdrawn (once; after that nothing is left to withdraw), or,
 * with replace, every one of theirs is set aside and ours stays.
 */
static void test_settle(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/var/run/cdi");
	struct cdi_rule rule = {.kind = CDI_KIND};
	struct cdi_settled st;
	char kind[64];
	struct err e;

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var/run/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "home/kubernetes/bin/nvidia"), 0);
	assert_int_equal(cdi_our_kind(&at, kind, sizeof(kind)), -1);
	put_ours(f, "var/run/cdi");
	assert_int_equal(cdi_our_kind(&at, kind, sizeof(kind)), 0);
	assert_string_equal(kind, CDI_KIND);
	assert_int_equal(cdi_settle(&at, &rule, &st, &e), 1);
	assert_string_equal(st.theirs, "");
	assert_false(st.withdrew);
	assert_true(exists(f, "var/run/cdi/" CDI_FILE));

	put(f, "etc/cdi/nvidia.yaml", "kind: nvidia.com/gpu\n");
	assert_int_equal(cdi_settle(&at, &rule, &st, &e), 0);
	assert_string_equal(st.theirs, "/etc/cdi/nvidia.yaml");
	assert_true(st.withdrew);
	assert_false(exists(f, "var/run/cdi/" CDI_FILE));
	assert_int_equal(cdi_settle(&at, &rule, &st, &e), 0);
	assert_false(st.withdrew);
	assert_true(exists(f, "etc/cdi/nvidia.yaml"));

	put_ours(f, "var/run/cdi");
	put(f, "var/run/cdi/ctk.json", "{\"kind\":\"nvidia.com/gpu\"}");
	rule.replace = true;
	assert_int_equal(cdi_settle(&at, &rule, &st, &e), 1);
	assert_int_equal(st.n_set_aside, 2);
	assert_string_equal(st.theirs, "");
	assert_false(st.withdrew);
	assert_true(exists(f, "var/run/cdi/" CDI_FILE));
	assert_true(exists(f, "etc/cdi/nvidia.yaml" CDI_SET_ASIDE));
	assert_true(exists(f, "var/run/cdi/ctk.json" CDI_SET_ASIDE));
	assert_false(exists(f, "etc/cdi/nvidia.yaml"));
}

/*
 * Another producer's spec naming files under the install dir that are gone (NVIDIA's tools
 * write the resolved .versions/ID paths): found in JSON and YAML, the first missing path
 * named; paths that resolve, paths of other trees, a path that only starts like the
 * install dir, and our own spec are not stale.
 */
static void test_find_stale(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/var/run/cdi");
	struct cdi_stale st = {.spec = ""};

	assert_int_equal(scratch_mkdirs(f->fd, "etc/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "var/run/cdi"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "home/kubernetes/bin/nvidia/.versions/new/lib64"),
			 0);
	put(f, "home/kubernetes/bin/nvidia/.versions/new/lib64/libcuda.so.2", "x");
	put(f, "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json",
	    "{\"kind\":\"k8s.device-plugin.nvidia.com/gpu\",\"containerEdits\":{\"mounts\":["
	    "{\"hostPath\":\"/home/kubernetes/bin/nvidia/.versions/new/lib64/libcuda.so.2\","
	    "\"containerPath\":\"/x\"},{\"hostPath\":\"/usr/lib/libgone.so\"},"
	    "{\"hostPath\":\"/home/kubernetes/bin/nvidia-other/gone\"}]}}");
	/* Ours names a missing path too: ours is never another producer's stale spec. */
	put(f, "var/run/cdi/" CDI_FILE,
	    "{\"kind\":\"nvidia.com/gpu\",\"mounts\":[\"/home/kubernetes/bin/nvidia/gone\"]}");
	assert_int_equal(cdi_find_stale(&at, &st), 0);
	/* nvidia-ctk's YAML in /etc/cdi, after a switch removed .versions/old. */
	put(f, "etc/cdi/nvidia.yaml",
	    "kind: nvidia.com/gpu\ncontainerEdits:\n  mounts:\n  - hostPath: "
	    "/home/kubernetes/bin/nvidia/.versions/new/lib64/libcuda.so.2\n  - hostPath: "
	    "/home/kubernetes/bin/nvidia/.versions/old/lib64/libcuda.so.1\n    options: [ro]\n");
	assert_int_equal(cdi_find_stale(&at, &st), 1);
	assert_string_equal(st.spec, "/etc/cdi/nvidia.yaml");
	assert_string_equal(st.missing,
			    "/home/kubernetes/bin/nvidia/.versions/old/lib64/libcuda.so.1");
	/* Quoted in JSON, ended by the quote. */
	unlinkat(f->fd, "etc/cdi/nvidia.yaml", 0);
	put(f, "etc/cdi/nvidia.json",
	    "{\"hooks\":[{\"args\":[\"x\",\"--folder\",\"/home/kubernetes/bin/nvidia/.versions/"
	    "old/lib64\"]}]}");
	assert_int_equal(cdi_find_stale(&at, &st), 1);
	assert_string_equal(st.missing, "/home/kubernetes/bin/nvidia/.versions/old/lib64");
}

/* The spec names files of the install dir the place points at, or nothing is written. */
static void test_write_one_install_dir(void **state)
{
	struct scratch_fixture *f = *state;
	const struct cdi_place at = place(f, "/var/run/cdi");
	const struct cdi_input in = {.kind = CDI_KIND,
				     .install_dir = "/opt/other",
				     .container_dir = "/usr/local/nvidia"};
	struct err e;

	err_clear(&e);
	assert_int_equal(cdi_write(&at, &in, &e), -1);
	assert_int_equal(e.code, EXIT_UNEXPECTED);
	assert_non_null(strstr(e.msg, "/opt/other"));
	assert_int_not_equal(faccessat(f->fd, "var/run/cdi/" CDI_FILE, F_OK, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_min_version),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_graphics_files),
		scratch_unit_test(test_drm_nodes),
		cmocka_unit_test(test_gpudirect_devices),
		cmocka_unit_test(test_kind),
		cmocka_unit_test(test_spec_kind),
		scratch_unit_test(test_find_other),
		scratch_unit_test(test_ours_by_identity),
		scratch_unit_test(test_other_through_links),
		scratch_unit_test(test_set_aside_record),
		scratch_unit_test(test_find_stale),
		scratch_unit_test(test_settle),
		scratch_unit_test(test_write_one_install_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
