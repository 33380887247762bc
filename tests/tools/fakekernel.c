// SPDX-License-Identifier: Apache-2.0
/*
 * A fake kernel for hosts that cannot load modules (LD_PRELOAD).
 *
 * Intercepts init_module(), delete_module() and syscall() (libkmod calls
 * finit_module and our code calls add_key through it) and keeps the state a
 * real kernel would show under $FAKE_KERNEL_ROOT, the test's host root:
 *
 *   sys/module/NAME/{initstate,refcnt,version,taint,holders/,parameters/}
 *   proc/modules, proc/devices, proc/keys
 *   (nvidia.ko of branch 550 or later also registers nvidia-caps-imex-channels, IMEX's
 *   channels, at a dynamic major: IMEX_MAJOR here)
 *   proc/driver/nvidia/{version,params,gpus/BDF/information,capabilities/mig/}
 *   proc/driver/nvidia-nvswitch/devices/BDF/information (an NVSwitch on the PCI bus)
 *
 * As with the real nvidia.ko, its string parameter NVreg_RegistryDwords is not in
 * sysfs and params shows it quoted ("RegistryDwords: \"\"" when not given).
 *
 * Modules are ELF files whose .modinfo gives name, depends, version and license; a
 * dependency that is not loaded fails as the kernel does (ENOENT, "Unknown
 * symbol"). As the kernel does, a module whose license is not GPL-compatible ("NVIDIA",
 * or none) shows P in sys/module/NAME/taint (O for out-of-tree is always there): the
 * open nvidia.ko ("Dual MIT/GPL") shows "O", the proprietary one "PO". Errors are
 * injected with $FAKE_KERNEL_FAIL, a comma-separated list of "NAME:ERRNO",
 * "NAME@VERSION:ERRNO" or "NAME@VERSION~FLAVOUR:ERRNO" (insertion; FLAVOUR "open" for a
 * GPL-compatible license, else "proprietary"), "NAME.PARAM=VALUE:ERRNO" (an insertion
 * given that parameter value, as the kernel refuses a value a module cannot parse with
 * EINVAL; the same module loads with other values), "rm:NAME:ERRNO" (removal) and
 * "add_key:ERRNO", with ERRNO a name such as EKEYREJECTED.
 *
 * An insertion waits while $FAKE_KERNEL_ROOT/.fake-hold-insert is a FIFO, until the test
 * writes it (hold_insert): a slow module init, for as long as a test needs.
 *
 * LoadPin, as the kernel's LSM behaves, when the file $FAKE_KERNEL_ROOT/.fake-loadpin
 * exists: "always" refuses every insertion with EPERM; "pin" pins the file system of the
 * first module inserted from a file (writing "pin DEV" back) and refuses modules from any
 * other with EPERM; "pin DEV" starts pinned to device number DEV (stat -c %d). An
 * insertion from memory (init_module) is refused, as LoadPin refuses data without a
 * file. Enforcement follows proc/sys/kernel/loadpin/enforce ("0" admits everything),
 * which the fake kernel writes ("1") with sys/kernel/security/lsm listing loadpin
 * when they are absent.
 *
 * NVIDIA's real libnvidia-ml talks to a real driver through /dev/nvidiactl, which
 * a fake kernel cannot give it. With $FAKE_KERNEL_NVML set to a library (the
 * NVML stand-in of tests/standin, which answers from the state above), a dlopen
 * of any libnvidia-ml.so.1 gets that library instead, and with $FAKE_KERNEL_CUDA
 * (the CUDA stand-in) any libcuda.so.1: the benchmark installs the real package and
 * still runs the installer's NVML and CUDA checks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The interposed entry points. */
int init_module(void *image, unsigned long len, const char *args);
int finit_module(int fd, const char *args, int flags);
int delete_module(const char *name, unsigned int flags);
long syscall(long nr, ...);
void *dlopen(const char *file, int mode);

#define UVM_MAJOR 511
#define CAPS_MAJOR 236
#define NVSWITCH_MAJOR 508
/* A major of the kernel's dynamic range, 234 to 254 (fs/char_dev.c, find_dynamic_major). */
#define IMEX_MAJOR 237

struct modinfo {
	char name[64];
	char depends[256];
	char version[64];
	char license[64];
};

static const char *root(void)
{
	const char *r = getenv("FAKE_KERNEL_ROOT");

	return r && *r ? r : "/nonexistent-fake-kernel-root";
}

static void pathf(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t size, const char *fmt, ...)
{
	int n = snprintf(out, size, "%s/", root());
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out + n, size - (size_t)n, fmt, ap);
	va_end(ap);
}

static void mkdirs(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

static void put(const char *path, const char *text)
{
	char dir[4096];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int get_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void put_int(const char *path, int v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d\n", v);
	put(path, buf);
}

static bool is_loaded(const char *name)
{
	char p[4096];

	pathf(p, sizeof(p), "sys/module/%s/initstate", name);
	return access(p, F_OK) == 0;
}

static void normalise(char *s)
{
	for (; *s; s++)
		if (*s == '-')
			*s = '_';
}

/* The injected errno for KEY ("nvidia", "rm:nvidia", "add_key"), or 0. */
static int injected(const char *key)
{
	static const struct {
		const char *name;
		int err;
	} names[] = {
		{"EKEYREJECTED", EKEYREJECTED},
		{"EPERM", EPERM},
		{"ENOKEY", ENOKEY},
		{"ENOEXEC", ENOEXEC},
		{"EINVAL", EINVAL},
		{"ENODEV", ENODEV},
		{"EBUSY", EBUSY},
		{"ENOENT", ENOENT},
		{"EEXIST", EEXIST},
		{"EAGAIN", EAGAIN},
		{"EACCES", EACCES},
		{"ENOMEM", ENOMEM},
	};
	const char *spec = getenv("FAKE_KERNEL_FAIL");
	char buf[1024], *tok, *save = NULL;

	if (!spec)
		return 0;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':');

		if (!colon)
			continue;
		*colon = '\0';
		normalise(tok);
		if (strcmp(tok, key) != 0)
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(names[i].name, colon + 1) == 0)
				return names[i].err;
		return EINVAL;
	}
	return 0;
}

/*
 * LoadPin: 0 when the file open as FD (-1: a module from memory) may be loaded, else
 * EPERM. See the head of this file.
 */
static int loadpin_check(int fd)
{
	char flag[4096], p[4096], mode[64] = "";
	unsigned long long pinned = 0;
	struct stat st;
	int n = 0;
	FILE *f;

	pathf(flag, sizeof(flag), ".fake-loadpin");
	f = fopen(flag, "r");
	if (!f)
		return 0;
	n = fscanf(f, "%63s %llu", mode, &pinned);
	fclose(f);
	pathf(p, sizeof(p), "proc/sys/kernel/loadpin/enforce");
	if (access(p, F_OK) == 0 && get_int(p) == 0)
		return 0;
	if (strcmp(mode, "always") == 0 || fd < 0)
		return EPERM;
	if (fstat(fd, &st) < 0)
		return EPERM;
	if (n < 2) {
		/* The first file loaded pins its file system. */
		f = fopen(flag, "w");
		if (f) {
			fprintf(f, "pin %llu\n", (unsigned long long)st.st_dev);
			fclose(f);
		}
		return 0;
	}
	return (unsigned long long)st.st_dev == pinned ? 0 : EPERM;
}

/* Writes the files a LoadPin kernel shows, where the test has not written them. */
__attribute__((constructor)) static void loadpin_expose(void)
{
	char flag[4096], p[4096];

	if (!getenv("FAKE_KERNEL_ROOT"))
		return;
	pathf(flag, sizeof(flag), ".fake-loadpin");
	if (access(flag, F_OK) != 0)
		return;
	pathf(p, sizeof(p), "proc/sys/kernel/loadpin/enforce");
	if (access(p, F_OK) != 0) {
		pathf(p, sizeof(p), "proc/sys/kernel/loadpin");
		mkdirs(p);
		pathf(p, sizeof(p), "proc/sys/kernel/loadpin/enforce");
		put(p, "1\n");
	}
	pathf(p, sizeof(p), "sys/kernel/security/lsm");
	if (access(p, F_OK) != 0) {
		pathf(p, sizeof(p), "sys/kernel/security");
		mkdirs(p);
		pathf(p, sizeof(p), "sys/kernel/security/lsm");
		put(p, "lockdown,capability,loadpin,integrity\n");
	}
}

/* Reads .modinfo from an ELF64 image. 0, or -1 when the image is not a module. */
static int parse_modinfo(const unsigned char *img, size_t len, struct modinfo *mi)
{
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Shdr *sh, *strtab;

	memset(mi, 0, sizeof(*mi));
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0 ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > len || eh->e_shstrndx >= eh->e_shnum)
		return -1;
	sh = (const void *)(img + eh->e_shoff);
	strtab = &sh[eh->e_shstrndx];
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *p, *end;

		if (strtab->sh_offset + sh[i].sh_name >= len ||
		    strcmp((const char *)img + strtab->sh_offset + sh[i].sh_name, ".modinfo") !=
			    0 ||
		    sh[i].sh_offset + sh[i].sh_size > len)
			continue;
		p = (const char *)img + sh[i].sh_offset;
		end = p + sh[i].sh_size;
		for (; p < end; p += strnlen(p, (size_t)(end - p)) + 1) {
			if (strncmp(p, "name=", 5) == 0)
				snprintf(mi->name, sizeof(mi->name), "%s", p + 5);
			else if (strncmp(p, "depends=", 8) == 0)
				snprintf(mi->depends, sizeof(mi->depends), "%s", p + 8);
			else if (strncmp(p, "version=", 8) == 0)
				snprintf(mi->version, sizeof(mi->version), "%s", p + 8);
			else if (strncmp(p, "license=", 8) == 0)
				snprintf(mi->license, sizeof(mi->license), "%s", p + 8);
		}
		return mi->name[0] ? 0 : -1;
	}
	return -1;
}

/*
 * /proc/modules from sys/module: "name size refcnt holders, Live addr". Names and holders
 * in alphabetical order, so that what the installer prints from it does not depend on the
 * order the scratch directory's file system lists entries in (the golden files).
 */
static void write_proc_modules(void)
{
	char p[4096], out[16384] = "";
	size_t len = 0;
	struct dirent **mods = NULL;
	int n;

	pathf(p, sizeof(p), "sys/module");
	n = scandir(p, &mods, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *name = mods[i]->d_name;
		char holders[1024] = "", hp[4096];
		struct dirent **hs = NULL;
		int nh;

		if (name[0] == '.' || !is_loaded(name))
			continue;
		pathf(hp, sizeof(hp), "sys/module/%s/holders", name);
		nh = scandir(hp, &hs, NULL, alphasort);
		for (int j = 0; j < nh; j++) {
			if (hs[j]->d_name[0] != '.') {
				strncat(holders, hs[j]->d_name,
					sizeof(holders) - strlen(holders) - 2);
				strcat(holders, ",");
			}
			free(hs[j]);
		}
		free(hs);
		pathf(hp, sizeof(hp), "sys/module/%s/refcnt", name);
		len += (size_t)snprintf(out + len, sizeof(out) - len,
					"%s 16384 %d %s Live 0x0000000000000000\n", name,
					get_int(hp), holders[0] ? holders : "-");
	}
	for (int i = 0; i < n; i++)
		free(mods[i]);
	free(mods);
	pathf(p, sizeof(p), "proc/modules");
	put(p, out);
}

static void devices_set(const char *name, int major, bool add)
{
	char p[4096], line[128], out[8192] = "Character devices:\n";
	FILE *f;

	pathf(p, sizeof(p), "proc/devices");
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char n[64];
		int m;

		if (sscanf(line, "%d %63s", &m, n) == 2 && strcmp(n, name) != 0)
			strncat(out, line, sizeof(out) - strlen(out) - 1);
	}
	if (f)
		fclose(f);
	if (add) {
		snprintf(line, sizeof(line), "%d %s\n", major, name);
		strncat(out, line, sizeof(out) - strlen(out) - 1);
	}
	put(p, out);
}

/* What the real nvidia.ko shows: version, params, one information file per GPU. */
static void nvidia_appears(const struct modinfo *mi, const char *args)
{
	char p[4096], text[1024], mode[16] = "438", gid[16] = "0", reg[256] = "";
	const char *m = args ? strstr(args, "NVreg_DeviceFileMode=") : NULL;
	const char *g = args ? strstr(args, "NVreg_DeviceFileGID=") : NULL;
	const char *r = args ? strstr(args, "NVreg_RegistryDwords=") : NULL;
	struct dirent *de;
	int minor = 0;
	DIR *d;

	if (m)
		sscanf(m + strlen("NVreg_DeviceFileMode="), "%15[0-9]", mode);
	if (g)
		sscanf(g + strlen("NVreg_DeviceFileGID="), "%15[0-9]", gid);
	if (r)
		sscanf(r + strlen("NVreg_RegistryDwords="), "%255[^ ]", reg);
	pathf(p, sizeof(p), "proc/driver/nvidia/version");
	snprintf(text, sizeof(text),
		 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  (fake kernel)\n"
		 "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
		 mi->version);
	put(p, text);
	pathf(p, sizeof(p), "proc/driver/nvidia/params");
	snprintf(text, sizeof(text),
		 "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: %d\nDeviceFileUID: 0\n"
		 "DeviceFileGID: %s\nDeviceFileMode: %s\nRegistryDwords: \"%s\"\n",
		 args && strstr(args, "NVreg_ModifyDeviceFiles=0") ? 0 : 1, gid, mode, reg);
	put(p, text);
	for (const char *cap = "config"; cap; cap = strcmp(cap, "config") == 0 ? "monitor" : NULL) {
		pathf(p, sizeof(p), "proc/driver/nvidia/capabilities/mig/%s", cap);
		snprintf(text, sizeof(text),
			 "DeviceFileMinor: %d\nDeviceFileMode: %d\nDeviceFileModify: 1\n",
			 strcmp(cap, "config") == 0 ? 1 : 2,
			 strcmp(cap, "config") == 0 ? 256 : 292);
		put(p, text);
	}
	devices_set("nvidia", 195, true);
	devices_set("nvidia-caps", CAPS_MAJOR, true);
	/* IMEX's channels: NVIDIA's driver registers them from branch 550 (not in 535). */
	if (atoi(mi->version) >= 550)
		devices_set("nvidia-caps-imex-channels", IMEX_MAJOR, true);
	/* nvidia.ko's NVSwitch part registers its region at load, switches or not. */
	devices_set("nvidia-nvswitch", NVSWITCH_MAJOR, true);
	pathf(p, sizeof(p), "proc/driver/nvidia-nvswitch/permissions");
	put(p, "DeviceFileMode: 438\n");
	pathf(p, sizeof(p), "sys/bus/pci/devices");
	d = opendir(p);
	while (d && (de = readdir(d))) {
		char vp[4096];
		int vendor = 0, cls = 0;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		pathf(vp, sizeof(vp), "sys/bus/pci/devices/%s/vendor", de->d_name);
		if ((f = fopen(vp, "r"))) {
			if (fscanf(f, "%x", &vendor) != 1)
				vendor = 0;
			fclose(f);
		}
		pathf(vp, sizeof(vp), "sys/bus/pci/devices/%s/class", de->d_name);
		if ((f = fopen(vp, "r"))) {
			if (fscanf(f, "%x", &cls) != 1)
				cls = 0;
			fclose(f);
		}
		if (vendor == 0x10de && (cls >> 8) == 0x680) {
			/* An NVSwitch: nvidia.ko's nvswitch part lists it, its information
			 * file as 535's procfs_nvswitch.c writes it (no minor there). */
			pathf(p, sizeof(p), "proc/driver/nvidia-nvswitch/devices/%s/information",
			      de->d_name);
			put(p, "BIOS Version: N/A\n");
			continue;
		}
		if (vendor != 0x10de || ((cls >> 8) != 0x300 && (cls >> 8) != 0x302))
			continue;
		pathf(p, sizeof(p), "proc/driver/nvidia/gpus/%s/information", de->d_name);
		snprintf(text, sizeof(text),
			 "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 35\n"
			 "GPU UUID: \t GPU-00000000-0000-0000-0000-%012d\nVideo BIOS: \t "
			 "96.00.74.00.01\n"
			 "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
			 "Bus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n",
			 minor, de->d_name, minor);
		put(p, text);
		minor++;
	}
	if (d)
		closedir(d);
}

static void rm_rf(const char *path)
{
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char sub[4096];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rm_rf(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

/* The kernel's license_is_gpl_compatible(). */
static bool gpl_compatible(const char *license)
{
	static const char *const ok[] = {
		"GPL",		"GPL v2",	"GPL and additional rights",
		"Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (strcmp(license, ok[i]) == 0)
			return true;
	}
	return false;
}

static void module_appears(const struct modinfo *mi, const char *args)
{
	char p[4096], deps[256], *tok, *save = NULL;

	pathf(p, sizeof(p), "sys/module/%s/holders", mi->name);
	mkdirs(p);
	pathf(p, sizeof(p), "sys/module/%s/refcnt", mi->name);
	put_int(p, 0);
	pathf(p, sizeof(p), "sys/module/%s/taint", mi->name);
	put(p, gpl_compatible(mi->license) ? "O\n" : "PO\n");
	if (mi->version[0]) {
		char v[80];

		snprintf(v, sizeof(v), "%s\n", mi->version);
		pathf(p, sizeof(p), "sys/module/%s/version", mi->name);
		put(p, v);
	}
	if (args) {
		char a[1024];

		snprintf(a, sizeof(a), "%s", args);
		for (tok = strtok_r(a, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(tok, '='), v[600];

			if (!eq)
				continue;
			*eq = '\0';
			/* nvidia's string (charp) parameters are not in sysfs: /proc shows them. */
			if (strcmp(mi->name, "nvidia") == 0 &&
			    strcmp(tok, "NVreg_RegistryDwords") == 0)
				continue;
			snprintf(v, sizeof(v), "%s\n", eq + 1);
			pathf(p, sizeof(p), "sys/module/%s/parameters/%s", mi->name, tok);
			put(p, v);
		}
	}
	snprintf(deps, sizeof(deps), "%s", mi->depends);
	for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char target[300];

		pathf(p, sizeof(p), "sys/module/%s/refcnt", tok);
		put_int(p, get_int(p) + 1);
		pathf(p, sizeof(p), "sys/module/%s/holders/%s", tok, mi->name);
		snprintf(target, sizeof(target), "../../%s", mi->name);
		symlink(target, p);
	}
	if (strcmp(mi->name, "nvidia") == 0)
		nvidia_appears(mi, args);
	if (strcmp(mi->name, "nvidia_uvm") == 0)
		devices_set("nvidia-uvm", UVM_MAJOR, true);
	/* Last: initstate is what says the module is live. */
	pathf(p, sizeof(p), "sys/module/%s/initstate", mi->name);
	put(p, "live\n");
	write_proc_modules();
}

/* The errno injected for a parameter value of module NAME in ARGS ("NAME.PARAM=VALUE"), or 0. */
static int param_refused(const char *name, const char *args)
{
	char a[1024], key[1200], *tok, *save = NULL;
	int err;

	if (!args)
		return 0;
	snprintf(a, sizeof(a), "%s", args);
	for (tok = strtok_r(a, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		snprintf(key, sizeof(key), "%s.%s", name, tok);
		normalise(key);
		if ((err = injected(key)))
			return err;
	}
	return 0;
}

/*
 * A module whose init takes its time (nvidia.ko boots the GSP firmware for seconds): while
 * $FAKE_KERNEL_ROOT/.fake-hold-insert is a FIFO, an insertion waits on it until the test
 * opens it for writing and closes it, then removes it and goes on. A test so holds an
 * installer inside an insertion for as long as it needs and lets it go on an event; its
 * writer's open returns once the insertion has reached the FIFO.
 */
static void hold_insert(void)
{
	char p[4096], buf[64];
	struct stat st;
	int fd;

	pathf(p, sizeof(p), ".fake-hold-insert");
	if (stat(p, &st) < 0 || !S_ISFIFO(st.st_mode))
		return;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	unlink(p);
}

static int fake_load(const unsigned char *img, size_t len, const char *args)
{
	char deps[256], key[160], fkey[192], *tok, *save = NULL;
	struct modinfo mi;
	int err;

	hold_insert();
	if (parse_modinfo(img, len, &mi) < 0)
		return errno = ENOEXEC, -1;
	normalise(mi.name);
	snprintf(key, sizeof(key), "%s@%s", mi.name, mi.version);
	snprintf(fkey, sizeof(fkey), "%s~%s", key,
		 gpl_compatible(mi.license) ? "open" : "proprietary");
	if ((err = injected(mi.name)) || (err = injected(key)) || (err = injected(fkey)) ||
	    (err = param_refused(mi.name, args)))
		return errno = err, -1;
	if (is_loaded(mi.name))
		return errno = EEXIST, -1;
	snprintf(deps, sizeof(deps), "%s", mi.depends);
	for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		/* modpost writes file names ("nvidia-modeset"); modules go by "nvidia_modeset". */
		normalise(tok);
		if (!is_loaded(tok))
			return errno = ENOENT, -1; /* "Unknown symbol in module" */
	}
	module_appears(&mi, args);
	return 0;
}

/*
 * The kernel reads a module into its own memory. The fake maps it and touches only the
 * pages of the ELF headers and .modinfo, so the installer's memory use is what it
 * would be on a node.
 */
static int fake_finit(int fd, const char *args)
{
	struct stat st;
	void *img;
	int r;

	if (fstat(fd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return errno = ENOEXEC, -1;
	if ((r = loadpin_check(fd)))
		return errno = r, -1;
	img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (img == MAP_FAILED)
		return -1;
	r = fake_load(img, (size_t)st.st_size, args);
	munmap(img, (size_t)st.st_size);
	return r;
}

static int fake_delete(const char *name_in, unsigned flags)
{
	char name[64], p[4096], key[80], deps_path[4096];
	struct dirent *de;
	int err;
	DIR *d;

	(void)flags;
	snprintf(name, sizeof(name), "%s", name_in);
	normalise(name);
	snprintf(key, sizeof(key), "rm:%s", name);
	if ((err = injected(key)))
		return errno = err, -1;
	if (!is_loaded(name))
		return errno = ENOENT, -1;
	pathf(p, sizeof(p), "sys/module/%s/refcnt", name);
	if (get_int(p) > 0)
		return errno = EWOULDBLOCK, -1;
	/* Drop the references this module held on its dependencies. */
	pathf(deps_path, sizeof(deps_path), "sys/module");
	d = opendir(deps_path);
	while (d && (de = readdir(d))) {
		char hp[4096];

		if (de->d_name[0] == '.')
			continue;
		pathf(hp, sizeof(hp), "sys/module/%s/holders/%s", de->d_name, name);
		if (unlink(hp) == 0) {
			pathf(hp, sizeof(hp), "sys/module/%s/refcnt", de->d_name);
			put_int(hp, get_int(hp) - 1);
		}
	}
	if (d)
		closedir(d);
	pathf(p, sizeof(p), "sys/module/%s", name);
	rm_rf(p);
	if (strcmp(name, "nvidia") == 0) {
		pathf(p, sizeof(p), "proc/driver/nvidia");
		rm_rf(p);
		pathf(p, sizeof(p), "proc/driver/nvidia-nvswitch");
		rm_rf(p);
		devices_set("nvidia", 0, false);
		devices_set("nvidia-caps", 0, false);
		devices_set("nvidia-caps-imex-channels", 0, false);
		devices_set("nvidia-nvswitch", 0, false);
	}
	if (strcmp(name, "nvidia_uvm") == 0)
		devices_set("nvidia-uvm", 0, false);
	write_proc_modules();
	return 0;
}

static long fake_add_key(const char *type, const char *desc, const void *payload, size_t plen,
			 long keyring)
{
	static long serial = 0x1000;
	char p[4096], line[256];
	int err = injected("add_key");
	FILE *f;

	(void)payload;
	if (err)
		return errno = err, -1;
	if (!type || strcmp(type, "asymmetric") != 0 || plen == 0)
		return errno = EINVAL, -1;
	pathf(p, sizeof(p), "proc/keys");
	f = fopen(p, "a");
	if (f) {
		snprintf(line, sizeof(line),
			 "%08lx I------     1 perm 1f030000     0     0 asymmetri %s: X509.rsa "
			 "(added to %lx)\n",
			 ++serial, desc ? desc : "fake", keyring);
		fputs(line, f);
		fclose(f);
	}
	return serial;
}

int init_module(void *image, unsigned long len, const char *args)
{
	int r = loadpin_check(-1);

	if (r)
		return errno = r, -1;
	return fake_load(image, len, args);
}

int finit_module(int fd, const char *args, int flags)
{
	(void)flags;
	return fake_finit(fd, args);
}

int delete_module(const char *name, unsigned int flags)
{
	return fake_delete(name, flags);
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_finit_module:
		return fake_finit((int)a[0], (const char *)a[1]);
	case SYS_init_module:
		if (loadpin_check(-1))
			return errno = EPERM, -1;
		return fake_load((const void *)a[0], (size_t)a[1], (const char *)a[2]);
	case SYS_delete_module:
		return fake_delete((const char *)a[0], (unsigned)a[1]);
	case SYS_add_key:
		return fake_add_key((const char *)a[0], (const char *)a[1], (const void *)a[2],
				    (size_t)a[3], a[4]);
	default:
		if (!real)
			real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
		return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}

void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	const char *nvml = getenv("FAKE_KERNEL_NVML"), *cuda = getenv("FAKE_KERNEL_CUDA"), *base;

	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	base = file ? strrchr(file, '/') : NULL;
	if (nvml && *nvml && base && strcmp(base + 1, "libnvidia-ml.so.1") == 0)
		file = nvml;
	else if (cuda && *cuda && base && strcmp(base + 1, "libcuda.so.1") == 0)
		file = cuda;
	return real(file, mode);
}
