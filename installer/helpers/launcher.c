// SPDX-License-Identifier: Apache-2.0
/*
 * The launcher: what bin/NAME is in a published version when the driver's
 * NAME is a dynamically linked program (installer/stage/wrap.h). NVIDIA's programs
 * have no RUNPATH and find libnvidia-ml.so.1 and the rest by name, so where
 * nothing names the driver's lib64 (GKE's device plugin mounts the install dir
 * at /usr/local/nvidia and sets no LD_LIBRARY_PATH; the Operator's validator
 * runs nvidia-smi from the driver root) they fail. The launcher runs the
 * untouched program, moved to bin/.real/NAME, with the lib64 beside its bin/
 * first on LD_LIBRARY_PATH:
 *
 *   DIR     the directory of this file as the kernel resolved it (/proc/self/exe;
 *           without /proc, AT_EXECFN made absolute with realpath), so links to it
 *           and to its directory lead to the version it belongs to
 *   exec    DIR/.real/BASENAME, same argv (argv[0] unchanged), same environment
 *           but LD_LIBRARY_PATH = DIR's parent + "/lib64", then ":" and the
 *           caller's value when that is set and not empty
 *
 * It is static (the host, the driver root and the container each have their
 * own libc, or none) and changes nothing else. Exit status: that of the program;
 * 127 when DIR/.real/BASENAME is missing, 126 when it cannot be run, with one
 * line on stderr naming the path. Missing is what a container sees where a CDI spec
 * mounted this file alone (NVIDIA's generated specs mount single programs): the
 * message points at the whole bin/, or at usr/bin/NAME, the program itself
 * (installer/stage/locate.h), never at the installer, which cannot help there.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define REAL_DIR ".real"

/*
 * This file's absolute path, links resolved, into SELF. Returns 0, ENAMETOOLONG when the
 * path does not fit in SIZE (the kernel's readlink of /proc/self/exe fills or refuses the
 * buffer; realpath refuses it too), or ENOENT when neither /proc nor AT_EXECFN tells.
 */
static int find_self(char *self, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", self, size);
	int proc_err = n < 0 ? errno : ENAMETOOLONG;
	const char *fn;

	if (n >= 0 && (size_t)n < size) {
		self[n] = '\0';
		return 0;
	}
	/* No /proc (a chroot into a host root, as the Operator's validator does). */
	fn = (const char *)getauxval(AT_EXECFN);
	if (fn && strchr(fn, '/') && realpath(fn, self))
		return 0;
	if (proc_err == ENAMETOOLONG || (fn && strchr(fn, '/') && errno == ENAMETOOLONG))
		return ENAMETOOLONG;
	return ENOENT;
}

static int too_long(const char *name)
{
	fprintf(stderr,
		"%s: its own path is longer than the %d bytes a path may have (PATH_MAX): reach the driver's install dir by a shorter path\n",
		name, PATH_MAX - 1);
	return 126;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], real[PATH_MAX], lib[PATH_MAX];
	/* A copy made setuid (or given file capabilities) does not pass its caller's path on. */
	const char *old = secure_getenv("LD_LIBRARY_PATH"), *base, *name;
	char *slash, *parent, *value;
	size_t len;
	int r;

	(void)argc;
	name = argv[0] && argv[0][0] ? argv[0] : "launcher";
	r = find_self(self, sizeof(self));
	if (r == ENAMETOOLONG)
		return too_long(name);
	if (r != 0 || !(slash = strrchr(self, '/'))) {
		fprintf(stderr, "%s: cannot find its own path (/proc/self/exe): mount /proc\n",
			name);
		return 127;
	}
	*slash = '\0';
	base = slash + 1;
	parent = strrchr(self, '/');
	/* Cut short, either would name another file: never run or point at that. */
	if (snprintf(real, sizeof(real), "%s/" REAL_DIR "/%s", self, base) >= (int)sizeof(real) ||
	    snprintf(lib, sizeof(lib), "%.*s/lib64", (int)(parent ? parent - self : 0), self) >=
		    (int)sizeof(lib))
		return too_long(name);
	len = strlen(lib) + (old && *old ? strlen(old) + 1 : 0) + 1;
	value = malloc(len);
	if (!value) {
		fprintf(stderr, "%s: out of memory\n", name);
		return 127;
	}
	snprintf(value, len, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
	if (setenv("LD_LIBRARY_PATH", value, 1) < 0) {
		fprintf(stderr, "%s: cannot set LD_LIBRARY_PATH: %s\n", name, strerror(errno));
		return 127;
	}
	execv(real, argv);
	if (errno == ENOENT || errno == ENOTDIR) {
		fprintf(stderr,
			"%s: %s is missing: this is the driver's launcher, which runs the program kept in .real/ beside it; mount the install dir's bin/ whole, or the program itself from its usr/bin/\n",
			name, real);
		return 127;
	}
	fprintf(stderr, "%s: cannot run %s: %s\n", name, real, strerror(errno));
	return 126;
}
