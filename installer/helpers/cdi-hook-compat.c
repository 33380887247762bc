// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook's enable-cuda-compat (cdi-hook.c has its contract): the image's
 * forward-compatible libcuda first in its ld configuration when NVIDIA's rule says it serves.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/cdi-hook.h"

/* ---- enable-cuda-compat --------------------------------------------------- */

/* A version "A.B.C" (fewer parts read as 0) into V; false when it is none. */
static bool parse_version(const char *s, unsigned long v[3])
{
	char *end;

	v[0] = v[1] = v[2] = 0;
	for (int i = 0; s && i < 3; i++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v[i] = strtoul(s, &end, 10);
		if (*end == '\0')
			return true;
		if (*end != '.')
			return false;
		s = end + 1;
	}
	return s && *s == '\0';
}

static int compare_versions(const unsigned long a[3], const unsigned long b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/*
 * NVIDIA's rule (cudacompat.go, useCompatLibraries; cuda-elf-header.go, UseCompat): with the
 * note, the compat library serves when the host driver's major version is among its
 * "Driver" list and it is newer than the host driver, or, without a host driver version,
 * when its "CUDA Version" is newer than the host's; without the note, only with a host
 * driver version and no host CUDA version, and when its major version is the higher.
 */
static bool use_compat(int fd, const char *compat_version, const char *host_driver,
		       const char *host_cuda)
{
	unsigned long compat[3], host[3], cuda[3], note_cuda[3];
	bool have_compat = parse_version(compat_version, compat);
	bool have_host = host_driver && *host_driver && parse_version(host_driver, host);
	bool have_cuda = host_cuda && *host_cuda && parse_version(host_cuda, cuda);
	char *text = read_fwd_note(fd);
	json_object *note = text ? json_tokener_parse(text) : NULL, *drivers;
	bool r = false;

	free(text);
	if (note) {
		const char *cv = string_at(note, "CUDA Version", NULL);

		if (!have_compat || !have_host) {
			r = have_cuda && cv && parse_version(cv, note_cuda) &&
			    compare_versions(note_cuda, cuda) > 0;
		} else if (json_object_object_get_ex(note, "Driver", &drivers) &&
			   json_object_is_type(drivers, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(drivers); i++) {
				json_object *d = json_object_array_get_idx(drivers, i);

				if (json_object_is_type(d, json_type_int) &&
				    (unsigned long)json_object_get_int64(d) == host[0])
					r = compare_versions(compat, host) > 0;
			}
		}
		json_object_put(note);
		return r;
	}
	if (host_cuda && *host_cuda)
		return false;
	return have_compat && have_host && host[0] < compat[0];
}

void compat_child(const struct opts *o, int unused)
{
	const char *dir = o->compat_root ? o->compat_root : "/usr/local/cuda/compat";
	char found[NAME_MAX + 1] = "", conf[PATH_MAX + 2];
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;
	int fd;

	(void)unused;
	if (!d)
		return; /* no compat libraries in this image */
	while ((de = readdir(d))) {
		const char *v = de->d_name + strlen("libcuda.so.");
		struct stat st;

		/* libcuda.so.*.*: a version with a dot, a regular file. */
		if (strncmp(de->d_name, "libcuda.so.", 11) != 0 || !strchr(v, '.') ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (++n == 1)
			snprintf(found, sizeof(found), "%s", de->d_name);
	}
	if (n != 1) {
		if (n > 1)
			fprintf(stderr,
				"nvidia-cdi-hook: %u libcuda.so.*.* in %s, expected one: compat libraries not used\n",
				n, dir);
		closedir(d);
		return;
	}
	fd = openat(dirfd(d), found, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die("open %s/%s in the container: %s", dir, found, strerror(errno));
	if (!use_compat(fd, found + strlen("libcuda.so."), o->host_driver, o->host_cuda)) {
		close(fd);
		closedir(d);
		return;
	}
	close(fd);
	closedir(d);
	make_dirs(CONF_DIR, 0755);
	snprintf(conf, sizeof(conf), "%s\n", dir);
	write_file(COMPAT_CONF_FILE, conf, 0644);
}
