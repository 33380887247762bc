// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "host/nvlink.h"
#include "host/probe.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/str.h"

/* Unquotes an os-release value in place: '...' literal, "..." with \ escapes. */
static int os_release_unquote(char *v, char **ret)
{
	char *out = v, *p = v;

	while (*p) {
		if (*p == '\'') {
			char *end = strchr(++p, '\'');
			if (!end)
				return -1;
			memmove(out, p, (size_t)(end - p));
			out += end - p;
			p = end + 1;
		} else if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0')
					return -1;
				if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
					p++;
				*out++ = *p;
			}
			p++;
		} else if (*p == '\\' && p[1]) {
			*out++ = p[1];
			p += 2;
		} else if (isspace((unsigned char)*p)) {
			break; /* unquoted whitespace ends the value, as in sh */
		} else {
			*out++ = *p++;
		}
	}
	*out = '\0';
	*ret = v;
	return 0;
}

static int os_release_set(char **field, const char *value)
{
	char *v = strdup(value);

	if (!v)
		return -ENOMEM;
	free(*field);
	*field = v;
	return 0;
}

int host_parse_os_release(const char *buf, struct host *h, struct err *e)
{
	_cleanup_free_ char *copy = strdup(buf);
	char *line, *save = NULL;
	int lineno = 0;

	if (!copy)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "os-release");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *key, *eq, *value;
		char **field = NULL;

		lineno++;
		while (isspace((unsigned char)*line))
			line++;
		if (*line == '#' || *line == '\0')
			continue;
		eq = strchr(line, '=');
		if (!eq)
			continue; /* not an assignment; os-release(5) says to ignore it */
		*eq = '\0';
		key = line;
		if (strcmp(key, "ID") == 0)
			field = &h->os_id;
		else if (strcmp(key, "VERSION_ID") == 0)
			field = &h->os_version_id;
		else if (strcmp(key, "BUILD_ID") == 0)
			field = &h->os_build_id;
		else if (strcmp(key, "PRETTY_NAME") == 0)
			field = &h->os_pretty;
		else if (strcmp(key, "ID_LIKE") == 0)
			field = &h->os_like;
		if (!field)
			continue; /* a field we do not read: however written, not ours */
		if (os_release_unquote(eq + 1, &value) < 0)
			return err_set(e, EXIT_USAGE,
				       "os-release line %d: unterminated quote in %s", lineno, key);
		if (os_release_set(field, value) < 0)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "os-release");
	}
	if (!h->os_id && os_release_set(&h->os_id, "linux") < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "os-release");
	return 0;
}

int host_parse_pci_hex(const char *buf, unsigned max_digits, uint32_t *ret)
{
	uint32_t v = 0;
	unsigned n = 0;

	if (buf[0] != '0' || (buf[1] != 'x' && buf[1] != 'X'))
		return -1;
	for (buf += 2; isxdigit((unsigned char)*buf); buf++) {
		if (++n > max_digits)
			return -1;
		v = v << 4 | (uint32_t)(isdigit((unsigned char)*buf)
						? *buf - '0'
						: (tolower((unsigned char)*buf) - 'a' + 10));
	}
	if (n == 0 || (*buf != '\0' && strcmp(buf, "\n") != 0))
		return -1;
	*ret = v;
	return 0;
}

int host_parse_pci_id(const char *s, uint16_t *ret_vendor, uint16_t *ret_device)
{
	uint32_t v = 0;

	if (strlen(s) != 9 || s[4] != ':')
		return -1;
	for (int i = 0; i < 9; i++) {
		if (i == 4)
			continue;
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		v = v << 4 | (uint32_t)(isdigit((unsigned char)s[i])
						? s[i] - '0'
						: (tolower((unsigned char)s[i]) - 'a' + 10));
	}
	*ret_vendor = (uint16_t)(v >> 16);
	*ret_device = (uint16_t)(v & 0xffff);
	return 0;
}

int host_is_nvidia_gpu(uint16_t vendor, uint32_t pci_class)
{
	uint32_t cls = pci_class >> 8;

	return vendor == PCI_VENDOR_NVIDIA && (cls == 0x0300 || cls == 0x0302);
}

int host_is_nvidia_nvswitch(uint16_t vendor, uint32_t pci_class)
{
	return vendor == PCI_VENDOR_NVIDIA && pci_class >> 8 == 0x0680;
}

bool host_module_is_relevant(const char *name)
{
	static const char *const conflicts[] = {"nouveau", "nova_core", "nova_drm", "nvidiafb"};

	if (strncmp(name, "nvidia", 6) == 0 && strcmp(name, "nvidiafb") != 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(conflicts); i++) {
		if (strcmp(name, conflicts[i]) == 0)
			return true;
	}
	return false;
}

static void module_version(int root_fd, const char *name, char *out, size_t size)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	struct err e;

	out[0] = '\0';
	if (asprintf(&path, "/sys/module/%s/version", name) < 0)
		return;
	if (fs_read_file_in_root(root_fd, path, 256, &buf, NULL, &e) < 0)
		return;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(out, size, "%s", buf);
}

int host_scan_modules(int root_fd, struct host *h, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;

	if (fs_read_file_in_root(root_fd, "/proc/modules", 4 << 20, &buf, NULL, e) < 0) {
		if (err_errnum(e) == EFBIG)
			return err_wrap(e, "host");
		log_msg(LOG_DEBUG, "host", "no list of loaded modules: %s", e->msg);
		err_clear(e);
		h->modules_known = false;
		return 0;
	}
	h->modules_known = true;
	/* "name size refcount holders state address", one module a line. */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];

		if (sscanf(line, "%63s", name) != 1 || !host_module_is_relevant(name) ||
		    h->n_modules == HOST_MAX_MODULES)
			continue;
		snprintf(h->modules[h->n_modules].name, sizeof(h->modules[0].name), "%s", name);
		module_version(root_fd, name, h->modules[h->n_modules].version,
			       sizeof(h->modules[0].version));
		h->n_modules++;
	}
	return 0;
}

static int read_pci_attr(int root_fd, const char *bdf, const char *attr, unsigned digits,
			 uint32_t *ret, struct err *e)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;

	if (asprintf(&path, "/sys/bus/pci/devices/%s/%s", bdf, attr) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pci");
	if (fs_read_file_in_root(root_fd, path, 64, &buf, NULL, e) < 0) {
		/* Removed while we looked (hot unplug, a VF going away): not there. */
		if (err_errnum(e) == ENOENT || err_errnum(e) == ENODEV) {
			log_msg(LOG_DEBUG, "host", "PCI function %s vanished during the scan: %s",
				bdf, e->msg);
			err_clear(e);
			return 1;
		}
		return err_wrap(e, "pci device %s", bdf);
	}
	if (host_parse_pci_hex(buf, digits, ret) < 0)
		return err_set(e, EXIT_UNEXPECTED, "pci device %s: %s: not a hex number: '%.20s'",
			       bdf, attr, buf);
	return 0;
}

static int gpu_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gpu *)a)->bdf, ((const struct gpu *)b)->bdf);
}

/*
 * Function BDF as an NVIDIA GPU: 0 when it is one, 2 when it is an NVSwitch, 1 when
 * neither (or gone), -1 on error.
 */
static int read_gpu(int root_fd, const char *bdf, struct gpu *ret, struct err *e)
{
	uint32_t vendor, device, cls;
	int r;

	if ((r = read_pci_attr(root_fd, bdf, "vendor", 4, &vendor, e)) != 0)
		return r;
	if (vendor != PCI_VENDOR_NVIDIA)
		return 1;
	if ((r = read_pci_attr(root_fd, bdf, "class", 6, &cls, e)) != 0 ||
	    (r = read_pci_attr(root_fd, bdf, "device", 4, &device, e)) != 0)
		return r;
	if (host_is_nvidia_nvswitch((uint16_t)vendor, cls))
		return 2;
	if (!host_is_nvidia_gpu((uint16_t)vendor, cls))
		return 1; /* the GPU's audio or USB functions */
	if (str_fmt(ret->bdf, sizeof(ret->bdf), "%s", bdf) < 0)
		return 1; /* no PCI address is that long: not a device we can name */
	ret->vendor = (uint16_t)vendor;
	ret->device = (uint16_t)device;
	ret->pci_class = cls;
	return 0;
}

int host_scan_pci(int root_fd, struct host *h, struct err *e)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd;

	fd = fs_dir_in_root(root_fd, "/sys/bus/pci/devices", false, e);
	if (fd < 0) {
		log_msg(LOG_DEBUG, "host", "no PCI bus in sysfs: %s", e->msg);
		err_clear(e);
		return 0;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_errno(e, EXIT_UNEXPECTED, errno, "read /sys/bus/pci/devices");
	}
	while ((de = readdir(d))) {
		struct gpu gpu, *g;
		int r;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(h->gpus->bdf))
			continue; /* not a PCI address */
		r = read_gpu(root_fd, de->d_name, &gpu, e);
		if (r < 0)
			return -1;
		if (r == 2)
			h->n_nvswitches++;
		if (r > 0)
			continue;
		g = reallocarray(h->gpus, h->n_gpus + 1, sizeof(*g));
		if (!g)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "pci");
		h->gpus = g;
		h->gpus[h->n_gpus++] = gpu;
	}
	if (h->n_gpus > 1)
		qsort(h->gpus, h->n_gpus, sizeof(*h->gpus), gpu_cmp);
	return 0;
}

static int host_read_os_release(int root_fd, struct host *h, struct err *e)
{
	static const char *const paths[] = {"/etc/os-release", "/usr/lib/os-release"};
	_cleanup_free_ char *buf = NULL;
	size_t len;

	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		if (fs_read_file_in_root(root_fd, paths[i], 64 * 1024, &buf, &len, e) < 0) {
			/* Not there (or not ours to read): the next candidate. */
			if (err_errnum(e) != EINVAL && err_errnum(e) != EFBIG)
				continue;
			e->code = EXIT_USAGE;
			err_hint(e, "put the distribution's os-release file back at %s", paths[i]);
			return err_wrap(e, "host");
		}
		err_clear(e); /* an earlier candidate may have failed */
		if (memchr(buf, '\0', len))
			return err_set(e, EXIT_USAGE, "%s: contains NUL bytes", paths[i]);
		return host_parse_os_release(buf, h, e) < 0 ? err_wrap(e, "%s", paths[i]) : 0;
	}
	err_wrap(e, "host os-release");
	e->code = EXIT_USAGE;
	err_hint(e, "mount the host's root file system at --root (ROOT_MOUNT_DIR)");
	return -1;
}

_Static_assert(sizeof(((struct utsname *)0)->release) == HOST_RELEASE_MAX + 1,
	       "HOST_RELEASE_MAX is uname's");

int host_probe(int root_fd, const char *kernel, struct host *h, struct err *e)
{
	struct utsname u;

	memset(h, 0, sizeof(*h));
	if (uname(&u) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "uname");
	if (!kernel || !*kernel)
		kernel = u.release;
	/* Paths and messages are built around it: one longer than uname's is refused, not cut. */
	if (strlen(kernel) > HOST_RELEASE_MAX ||
	    str_fmt(h->kernel, sizeof(h->kernel), "%s", kernel) < 0)
		return err_set(
			e, EXIT_USAGE,
			"--kernel-release (NVIDIA_KERNEL_RELEASE) '%.32s...' is %zu bytes long; a kernel release has at most %d (uname -r)",
			kernel, strlen(kernel), HOST_RELEASE_MAX);
	if (str_fmt(h->arch, sizeof(h->arch), "%s", u.machine) < 0)
		return err_set(e, EXIT_UNEXPECTED, "uname: machine '%s' is longer than %zu bytes",
			       u.machine, sizeof(h->arch) - 1);
	if (host_read_os_release(root_fd, h, e) < 0 || host_scan_pci(root_fd, h, e) < 0 ||
	    host_scan_modules(root_fd, h, e) < 0) {
		host_done(h);
		return -1;
	}
	host_scan_nvlink(root_fd, &h->nvlink);
	selinux_probe(root_fd, &h->selinux);
	return 0;
}

/* VALUE of --NAME: not empty, no '/', within uname's length. */
static int describe_name(const char *name, const char *value, struct err *e)
{
	if (!*value || strchr(value, '/') || strlen(value) > HOST_RELEASE_MAX)
		return err_set(e, EXIT_USAGE,
			       "--%s '%.64s' is not a name of 1 to %d bytes without '/'", name,
			       value, HOST_RELEASE_MAX);
	return 0;
}

int host_describe(const struct host_image *img, struct host *h, struct err *e)
{
	const char *os = img->os, *build = img->os_build, *kernel = img->kernel, *arch = img->arch;
	char *const *gpu_ids = img->gpu_ids;
	size_t n_gpus = img->n_gpus;

	memset(h, 0, sizeof(*h));
	if (describe_name("os", os, e) < 0 || (build && describe_name("os-build", build, e) < 0) ||
	    describe_name("kernel", kernel, e) < 0 || describe_name("arch", arch, e) < 0)
		return -1;
	snprintf(h->kernel, sizeof(h->kernel), "%s", kernel);
	snprintf(h->arch, sizeof(h->arch), "%s", arch);
	h->os_id = strdup(os);
	h->os_build_id = build ? strdup(build) : NULL;
	h->gpus = calloc(n_gpus ? n_gpus : 1, sizeof(*h->gpus));
	if (!h->os_id || (build && !h->os_build_id) || !h->gpus) {
		host_done(h);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "host");
	}
	for (size_t i = 0; i < n_gpus; i++) {
		struct gpu *g = &h->gpus[i];

		if (host_parse_pci_id(gpu_ids[i], &g->vendor, &g->device) < 0) {
			err_set(e, EXIT_USAGE, "--gpu '%.32s' is not a PCI id like 10de:2330",
				gpu_ids[i]);
			host_done(h);
			return -1;
		}
		snprintf(g->bdf, sizeof(g->bdf), "--gpu #%zu", i + 1);
		g->pci_class = 0x030200;
		h->n_gpus = i + 1;
	}
	return 0;
}

bool host_os_is(const struct host *h, const char *id)
{
	size_t n = strlen(id);

	if (h->os_id && strcmp(h->os_id, id) == 0)
		return true;
	for (const char *p = h->os_like; p && *p;) {
		size_t w;

		p += strspn(p, " \t");
		w = strcspn(p, " \t");
		if (w == n && n && strncmp(p, id, n) == 0)
			return true;
		p += w;
	}
	return false;
}

void host_done(struct host *h)
{
	free(h->os_id);
	free(h->os_version_id);
	free(h->os_build_id);
	free(h->os_pretty);
	free(h->os_like);
	free(h->gpus);
	memset(h, 0, sizeof(*h));
}

const char *host_fabric(const struct host *h, char *buf, size_t size)
{
	if (h->n_nvswitches > 0)
		snprintf(buf, size, "%zu NVSwitch(es)", h->n_nvswitches);
	else if (h->nvlink.n_ports > 0)
		snprintf(buf, size, "NVLink 5 NVSwitches behind %zu management port(s)",
			 h->nvlink.n_ports);
	else
		return NULL;
	return buf;
}
