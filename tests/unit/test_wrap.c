// SPDX-License-Identifier: Apache-2.0
/*
 * Which of the driver's files get the launcher: the ELF PT_INTERP reader
 * (installer/stage/wrap.h).
 */
#include "cmocka_prelude.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stage/wrap.h"

static int verdict_fd(int fd)
{
	struct err e;
	int r = wrap_elf_has_interp(fd, &e);

	close(fd);
	return r;
}

static int verdict_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	return verdict_fd(fd);
}

/* An in-memory file holding LEN bytes of BUF. */
static int memfile(const void *buf, size_t len)
{
	int fd = memfd_create("elf", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	return fd;
}

/* The first LEN bytes of PATH, as a file of their own. */
static int prefix_of(const char *path, size_t len)
{
	char *buf = malloc(len);
	int fd = open(path, O_RDONLY | O_CLOEXEC), out;

	assert_true(buf && fd >= 0);
	assert_int_equal(read(fd, buf, len), (ssize_t)len);
	close(fd);
	out = memfile(buf, len);
	free(buf);
	return out;
}

static void put(unsigned char *p, unsigned size, uint64_t v, bool big)
{
	for (unsigned i = 0; i < size; i++)
		p[big ? size - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

struct shape {
	bool is64, big;
	uint16_t type;
	uint16_t entsize; /* 0: the class's own */
	uint64_t phoff;	  /* 0: right after the header */
	unsigned n;
	uint32_t ph[4];
};

/* A header and program header table of SHAPE, as a file. */
static int crafted(const struct shape *s)
{
	unsigned char b[512] = {0};
	unsigned eh = s->is64 ? 64 : 52, es = s->entsize ? s->entsize : (s->is64 ? 56 : 32);
	uint64_t phoff = s->phoff ? s->phoff : eh;

	memcpy(b, ELFMAG, SELFMAG);
	b[EI_CLASS] = s->is64 ? ELFCLASS64 : ELFCLASS32;
	b[EI_DATA] = s->big ? ELFDATA2MSB : ELFDATA2LSB;
	b[EI_VERSION] = EV_CURRENT;
	put(b + 16, 2, s->type, s->big);
	put(b + 18, 2, s->big ? EM_PPC : EM_386, s->big);
	put(b + (s->is64 ? 32 : 28), s->is64 ? 8 : 4, phoff, s->big);
	put(b + (s->is64 ? 52 : 40), 2, eh, s->big);
	put(b + (s->is64 ? 54 : 42), 2, es, s->big);
	put(b + (s->is64 ? 56 : 44), 2, s->n, s->big);
	/* Entries past the four given are zeros (PT_NULL), as many as the header claims. */
	for (unsigned i = 0; i < s->n && i < ARRAY_SIZE(s->ph) && eh + (i + 1) * es <= sizeof(b);
	     i++)
		put(b + eh + i * es, 4, s->ph[i], s->big);
	return memfile(b, eh + s->n * es <= sizeof(b) ? eh + s->n * es : sizeof(b));
}

static void test_real_files(void **state)
{
	(void)state;
	/* Debian's /bin/sh (dash) is a PIE with an interpreter; its ldconfig is static-pie. */
	assert_int_equal(verdict_path("/bin/sh"), 1);
	assert_int_equal(verdict_path("/sbin/ldconfig"), 0);
}

static void test_not_elf(void **state)
{
	static const char script[] = "#!/bin/sh\necho 'Driver Version: 600.0'\n";

	(void)state;
	assert_int_equal(verdict_fd(memfile(script, sizeof(script) - 1)), 0);
	assert_int_equal(verdict_fd(memfile("", 0)), 0);
	assert_int_equal(verdict_fd(memfile(ELFMAG, SELFMAG)), 0);
}

static void test_truncated(void **state)
{
	(void)state;
	/* The header cut short, then the program headers missing. */
	assert_int_equal(verdict_fd(prefix_of("/bin/sh", 40)), 0);
	assert_int_equal(verdict_fd(prefix_of("/bin/sh", 64)), 0);
	assert_int_equal(verdict_fd(prefix_of("/bin/sh", 64 + 56 * 2)), 0);
}

static void test_classes_and_byte_orders(void **state)
{
	(void)state;
	for (int big = 0; big <= 1; big++) {
		for (int is64 = 0; is64 <= 1; is64++) {
			struct shape dyn = {.is64 = is64,
					    .big = big,
					    .type = ET_EXEC,
					    .n = 3,
					    .ph = {PT_PHDR, PT_LOAD, PT_INTERP}};
			struct shape pie = dyn, fixed = dyn, lib = dyn;

			pie.type = ET_DYN;
			fixed.ph[2] = PT_DYNAMIC;
			lib.type = ET_DYN;
			lib.ph[2] = PT_GNU_STACK;
			assert_int_equal(verdict_fd(crafted(&dyn)), 1);
			assert_int_equal(verdict_fd(crafted(&pie)), 1);
			assert_int_equal(verdict_fd(crafted(&fixed)), 0);
			assert_int_equal(verdict_fd(crafted(&lib)), 0);
		}
	}
}

static void test_malformed(void **state)
{
	struct shape rel = {.type = ET_REL, .n = 1, .ph = {PT_INTERP}};
	struct shape core = {.type = ET_CORE, .n = 1, .ph = {PT_INTERP}};
	struct shape small = {.type = ET_EXEC, .entsize = 16, .n = 2, .ph = {PT_INTERP}};
	struct shape beyond = {.is64 = true, .type = ET_EXEC, .phoff = UINT64_MAX - 8, .n = 1};
	struct shape past_end = {.type = ET_EXEC, .n = 20, .ph = {PT_INTERP}};
	struct shape xnum = {.type = ET_EXEC, .n = PN_XNUM, .ph = {PT_INTERP}};
	unsigned char bad_class[64] = {0};

	(void)state;
	assert_int_equal(verdict_fd(crafted(&rel)), 0);
	assert_int_equal(verdict_fd(crafted(&core)), 0);
	assert_int_equal(verdict_fd(crafted(&small)), 0);
	assert_int_equal(verdict_fd(crafted(&beyond)), 0);
	assert_int_equal(verdict_fd(crafted(&past_end)), 0);
	assert_int_equal(verdict_fd(crafted(&xnum)), 0);
	memcpy(bad_class, ELFMAG, SELFMAG);
	bad_class[EI_CLASS] = 3;
	bad_class[EI_DATA] = ELFDATA2LSB;
	assert_int_equal(verdict_fd(memfile(bad_class, sizeof(bad_class))), 0);
}

static void test_unreadable(void **state)
{
	struct err e;
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	assert_int_equal(wrap_elf_has_interp(fd, &e), -1);
	assert_int_equal(e.code, EXIT_UNEXPECTED);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_files), cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),  cmocka_unit_test(test_classes_and_byte_orders),
		cmocka_unit_test(test_malformed),  cmocka_unit_test(test_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
