// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook's update-ldcache (cdi-hook.c has its contract): the folders into the
 * container's ld configuration, the soname links of their libraries beside them, then the
 * static ldconfig shipped beside the hook for the cache, all in a child in the container.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/cdi-hook.h"

/* ---- update-ldcache's soname links ------------------------------------------ */

/*
 * ldconfig's order of two library names (glibc's elf/dl-cache.c, _dl_cache_libcmp): runs
 * of digits compared as numbers, a digit after a non-digit; > 0 when A is the newer.
 */
static int libcmp(const char *a, const char *b)
{
	while (*a) {
		bool da = isdigit((unsigned char)*a), db = isdigit((unsigned char)*b);

		if (da && db) {
			char *ea, *eb;
			unsigned long long na = strtoull(a, &ea, 10), nb = strtoull(b, &eb, 10);

			if (na != nb)
				return na < nb ? -1 : 1;
			a = ea;
			b = eb;
		} else if (da || db) {
			return da ? 1 : -1;
		} else if (*a != *b) {
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		} else {
			a++;
			b++;
		}
	}
	return *b ? -1 : 0;
}

struct soname_link {
	char soname[NAME_MAX + 1], file[NAME_MAX + 1];
};

/*
 * The libraries of the directory DFD (regular files named lib*.so* or ld-*.so*, as
 * ldconfig takes them, opened without following a link or waiting on a FIFO) whose soname
 * is not their name, into RET (at most MAX); of two with one soname, the newer (libcmp).
 * Returns how many.
 */
static size_t soname_list(int dfd, struct soname_link *ret, size_t max)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d))) {
		char soname[NAME_MAX + 1];
		struct stat st;
		size_t k;
		int fd;

		if ((strncmp(de->d_name, "lib", 3) != 0 && strncmp(de->d_name, "ld-", 3) != 0) ||
		    !strstr(de->d_name, ".so") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    !read_soname(fd, soname, sizeof(soname)) || strcmp(soname, de->d_name) == 0) {
			close(fd);
			continue;
		}
		close(fd);
		for (k = 0; k < n && strcmp(ret[k].soname, soname) != 0; k++)
			;
		if (k == n && n == max)
			continue;
		if (k < n && libcmp(de->d_name, ret[k].file) <= 0)
			continue;
		snprintf(ret[k].soname, sizeof(ret[k].soname), "%s", soname);
		snprintf(ret[k].file, sizeof(ret[k].file), "%s", de->d_name);
		if (k == n)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * In the chroot: the soname links of the libraries in FOLDER, beside them, as the ldconfig
 * of NVIDIA's hook makes them (it runs without -X: internal/ldconfig/ldconfig.go,
 * UpdateLDCache, and runLdconfig in cmd/nvidia-cdi-hook/update-ldcache/update-ldcache.go
 * before 1.18), and as the specs of toolkits before 1.18 rely on: they mount only the
 * *.so.VERSION files and ask create-symlinks for libcuda.so alone. Only in the folders the
 * spec names: the cache pass that follows keeps -X, so the image's own directories stay as
 * the image has them. A link of that name to the same file is left, another link replaced
 * (atomically), anything else left as it is (ldconfig's create_links); the link is a plain
 * name in FOLDER and its target a file of FOLDER, so neither leads anywhere else. One that
 * cannot be made (a read-only folder) is said, as ldconfig says it, and the rest go on.
 */
static void soname_links(const char *folder)
{
	static struct soname_link links[MAX_VALUES];
	int dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n = dfd >= 0 ? soname_list(dfd, links, MAX_VALUES) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *so = links[i].soname;
		char tmp[NAME_MAX + 32];
		struct stat st, lib;

		if (fstatat(dfd, so, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (!S_ISLNK(st.st_mode))
				continue;
			if (fstatat(dfd, so, &st, 0) == 0 &&
			    fstatat(dfd, links[i].file, &lib, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_dev == lib.st_dev && st.st_ino == lib.st_ino)
				continue;
		}
		snprintf(tmp, sizeof(tmp), ".%.*s.tmp-nvidia-cdi-hook", NAME_MAX - 24, so);
		(void)unlinkat(dfd, tmp, 0);
		if (symlinkat(links[i].file, dfd, tmp) < 0 || renameat(dfd, tmp, dfd, so) < 0) {
			fprintf(stderr,
				"nvidia-cdi-hook: cannot link %s/%s to %s in the container: %s\n",
				folder, so, links[i].file, strerror(errno));
			(void)unlinkat(dfd, tmp, 0);
		}
	}
	if (dfd >= 0)
		close(dfd);
}

/* ---- update-ldcache ------------------------------------------------------- */

/*
 * Whether the image's ld.so.conf includes ld.so.conf.d (0), or there is none (1), or not
 * (-1). What is not a regular file of at most CONF_MAX bytes is refused: ldconfig reads
 * it next, and would wait on a FIFO forever or read a device without end.
 */
static int top_conf_state(void)
{
	/* O_NONBLOCK: opening a FIFO does not wait for a writer. A link is the image's own. */
	int fd = open(TOP_CONF, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *text;
	int r = -1;

	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	if (fstat(fd, &st) < 0)
		die("stat %s in the container: %s", TOP_CONF, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die("the image's %s is not a regular file (mode %o): refusing to run ldconfig on it; the image must hold a regular file there, or none",
		    TOP_CONF, (unsigned)(st.st_mode & S_IFMT));
	if (st.st_size > (off_t)CONF_MAX)
		die("the image's %s holds %lld bytes, more than the %u an ld configuration may: refusing to run ldconfig on it",
		    TOP_CONF, (long long)st.st_size, CONF_MAX);
	text = read_all(fd, CONF_MAX);
	if (!text)
		die("read %s in the container: %s", TOP_CONF, strerror(errno ? errno : EFBIG));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, "include", 7) == 0 && strstr(line, CONF_DIR "/"))
			r = 0;
	}
	free(text);
	close(fd);
	return r;
}

/*
 * In the chroot: the folders that exist (NVIDIA's specs name every folder they mount into;
 * one missing is said and skipped, none at all is an error) into CONF_FILE, the soname
 * links of their libraries beside them, then ldconfig -X for the cache.
 */
static void ldcache_child(const struct opts *o, int ldconfig_fd)
{
	static char conf[MAX_VALUES * 64];
	char *args[MAX_VALUES + 3], name[] = "ldconfig", no_links[] = "-X";
	char *env[] = {NULL};
	size_t len = 0, n = 0, present = 0;
	sigset_t none;
	int top;

	args[n++] = name;
	args[n++] = no_links;
	for (size_t i = 0; i < o->folder.n; i++) {
		const char *f = o->folder.v[i];
		struct stat st;
		int w;

		if (stat(f, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr,
				"nvidia-cdi-hook: %s is not a directory in the container: not added to its ld cache\n",
				f);
			continue;
		}
		w = snprintf(conf + len, sizeof(conf) - len, "%s\n", f);
		if (w < 0 || (size_t)w >= sizeof(conf) - len)
			die("the folders do not fit in one ld configuration file");
		len += (size_t)w;
		present++;
	}
	if (!present)
		die("%s%s not in the container: the runtime did not make the CDI spec's mounts before this hook",
		    o->folder.v[0], o->folder.n > 1 ? " and the other folders are" : " is");
	for (size_t i = 0; i < o->folder.n; i++)
		soname_links(o->folder.v[i]);
	make_dirs(CONF_DIR, 0755);
	write_file(CONF_FILE, conf, 0644);
	top = top_conf_state();
	if (top == 1)
		write_file(TOP_CONF, "include " CONF_DIR "/*.conf\n", 0644);
	/* An ld.so.conf that does not read ld.so.conf.d: the folders on the command line. */
	for (size_t i = 0; top < 0 && i < o->folder.n; i++)
		args[n++] = (char *)o->folder.v[i];
	args[n] = NULL;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execveat(ldconfig_fd, "", args, env, AT_EMPTY_PATH);
	die("run ldconfig: %s", strerror(errno));
}

int update_ldcache(const struct opts *o)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	int ldconfig_fd;

	if (n < 0 || !(self[n] = '\0', slash = strrchr(self, '/')))
		die("where am I: %s", strerror(errno));
	strcpy(slash + 1, "ldconfig");
	ldconfig_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (ldconfig_fd < 0)
		die("%s: %s (it is shipped beside the hook)", self, strerror(errno));
	in_root(o, 1u << CAP_DAC_OVERRIDE, "ldconfig", ldcache_child, ldconfig_fd);
	return 0;
}
