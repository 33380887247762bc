// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage/libexec.h"
#include "util/fs.h"
#include "stage/wrap.h"

/* More program headers than any program has (a real nvidia-smi: 13) are not read. */
#define MAX_PHDR_TABLE (64u << 10)
/* More programs than any driver's bin/ holds (a real one: 5). */
#define MAX_PROGRAMS 256

static uint64_t get(const unsigned char *p, unsigned size, bool big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? i : size - 1 - i] << (8 * (size - 1 - i));
	return v;
}

int wrap_elf_has_interp(int fd, struct err *e)
{
	unsigned char h[sizeof(Elf64_Ehdr)];
	_cleanup_free_ unsigned char *table = NULL;
	uint64_t phoff, entsize, num, size;
	struct stat st;
	ssize_t n;
	bool big, is64;

	if (fstat(fd, &st) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat");
	n = pread(fd, h, sizeof(h), 0);
	if (n < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "read");
	if ((size_t)n < sizeof(Elf32_Ehdr) || memcmp(h, ELFMAG, SELFMAG) != 0 ||
	    (h[EI_CLASS] != ELFCLASS32 && h[EI_CLASS] != ELFCLASS64) ||
	    (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB))
		return 0;
	is64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if (is64 && (size_t)n < sizeof(Elf64_Ehdr))
		return 0;
	/* e_type: a program is ET_EXEC, or ET_DYN (PIE; a library has no PT_INTERP). */
	if (get(h + 16, 2, big) != ET_EXEC && get(h + 16, 2, big) != ET_DYN)
		return 0;
	phoff = is64 ? get(h + 32, 8, big) : get(h + 28, 4, big);
	entsize = get(h + (is64 ? 54 : 42), 2, big);
	num = get(h + (is64 ? 56 : 44), 2, big);
	/* PN_XNUM (the count in section 0) is for core files, not programs. */
	if (num == 0 || num == PN_XNUM ||
	    entsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return 0;
	size = num * entsize;
	if (size > MAX_PHDR_TABLE || phoff > (uint64_t)st.st_size ||
	    size > (uint64_t)st.st_size - phoff)
		return 0;
	table = malloc(size);
	if (!table)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "read");
	n = pread(fd, table, size, (off_t)phoff);
	if (n < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "read");
	if ((uint64_t)n != size)
		return 0;
	/* p_type leads both layouts. */
	for (uint64_t i = 0; i < num; i++)
		if (get(table + i * entsize, 4, big) == PT_INTERP)
			return 1;
	return 0;
}

/* Whether bin/NAME (BIN_FD) is a program to wrap. Returns 1, 0 or -1. */
static int is_candidate(int bin_fd, const char *name, struct err *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (fstatat(bin_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "stat 'bin/%s'", name);
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		return 0;
	fd = openat(bin_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open 'bin/%s'", name);
	r = wrap_elf_has_interp(fd, e);
	return r < 0 ? err_wrap(e, "'bin/%s'", name) : r;
}

/*
 * The names in bin/ to wrap, collected before any changes (readdir would see them);
 * *N counts those in NAMES, on failure too.
 */
static int collect(int bin_fd, char **names, size_t *n, struct err *e)
{
	_cleanup_closedir_ DIR *dir = fs_opendir_at(bin_fd, ".", e);
	struct dirent *de;
	int r;

	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, WRAP_REAL_DIR) == 0)
			return err_set(e, EXIT_VERIFY,
				       "package has 'bin/" WRAP_REAL_DIR
				       "', a name the installer keeps for the driver's programs");
		r = is_candidate(bin_fd, de->d_name, e);
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		if (*n == MAX_PROGRAMS)
			return err_set(e, EXIT_VERIFY, "package has more than %u programs in bin/",
				       MAX_PROGRAMS);
		if (!(names[*n] = strdup(de->d_name)))
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "bin/");
		(*n)++;
	}
	return 0;
}

static int wrap_all(int bin_fd, char **names, size_t n, struct err *e)
{
	_cleanup_free_ char *launcher = NULL;
	_cleanup_close_ int real_fd = -1;
	size_t len;

	if (libexec_read(HELPER_LAUNCHER, &launcher, &len, e) < 0)
		return -1;
	if (mkdirat(bin_fd, WRAP_REAL_DIR, 0755) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "create 'bin/" WRAP_REAL_DIR "'");
	real_fd = openat(bin_fd, WRAP_REAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (real_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open 'bin/" WRAP_REAL_DIR "'");
	for (size_t i = 0; i < n; i++) {
		if (renameat(bin_fd, names[i], real_fd, names[i]) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno,
					 "move 'bin/%s' to 'bin/" WRAP_REAL_DIR "/'", names[i]);
		/* The staged tree is synced whole before publication (fs_sync_tree). */
		if (fs_replace_at(bin_fd, names[i], launcher, len, 0755, e) < 0)
			return err_wrap(e, "launcher for 'bin/%s'", names[i]);
	}
	return 0;
}

int wrap_programs(int sfd, struct err *e)
{
	_cleanup_close_ int bin_fd =
		openat(sfd, "bin", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *names[MAX_PROGRAMS];
	size_t n = 0;
	int r;

	if (bin_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "open 'bin'");
	r = collect(bin_fd, names, &n, e);
	if (r == 0 && n > 0)
		r = wrap_all(bin_fd, names, n, e);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	return r < 0 ? -1 : (int)n;
}
