// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook's ELF readers: a library's soname (update-ldcache's links) and NVIDIA's
 * forward-compatibility note (enable-cuda-compat). The image's files are hostile: each
 * header and table is read within the file and its bounds (tests/fuzz/fuzz_cdi_hook.c).
 */
#include <elf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/cdi-hook.h"

/* The ELF note NVIDIA puts in a forward-compatible libcuda, and what it reads of it. */
#define FWD_NOTE ".note.cuda.fwd_compatibility"
#define ELF_MAX_SECTIONS 4096u
#define NOTE_MAX (64u << 10)

static uint64_t get(const unsigned char *p, unsigned size, bool big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? i : size - 1 - i] << (8 * (size - 1 - i));
	return v;
}

static bool pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return off <= (uint64_t)INT64_MAX && pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/*
 * The JSON of FD's ELF note FWD_NOTE (owner "NVIDIA Corporation"), or NULL where it has
 * none: the section headers, the section names, the note's header and its description,
 * each read within the file and its bounds.
 */
char *read_fwd_note(int fd)
{
	unsigned char h[sizeof(Elf64_Ehdr)], sh[sizeof(Elf64_Shdr)], nh[12];
	uint64_t shoff, shentsize, shnum, shstrndx, str_off, str_size;
	bool big, is64;
	char *desc;

	if (!pread_all(fd, h, sizeof(Elf32_Ehdr), 0) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return NULL;
	is64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if (is64 && !pread_all(fd, h, sizeof(Elf64_Ehdr), 0))
		return NULL;
	shoff = is64 ? get(h + 40, 8, big) : get(h + 32, 4, big);
	shentsize = get(h + (is64 ? 58 : 46), 2, big);
	shnum = get(h + (is64 ? 60 : 48), 2, big);
	shstrndx = get(h + (is64 ? 62 : 50), 2, big);
	if (shnum == 0 || shnum > ELF_MAX_SECTIONS || shstrndx >= shnum ||
	    shentsize < (is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)))
		return NULL;
/* A field of the section header in sh: its offset and size in ELF64, then in ELF32. */
#define SH_FIELD(off64, off32) (is64 ? get(sh + (off64), 8, big) : get(sh + (off32), 4, big))
	if (!pread_all(fd, sh, is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr),
		       shoff + shstrndx * shentsize))
		return NULL;
	str_off = SH_FIELD(24, 16);
	str_size = SH_FIELD(32, 20);
	for (uint64_t i = 0; i < shnum; i++) {
		char name[sizeof(FWD_NOTE)];
		uint64_t name_off, off, size, align, namesz, descsz, desc_off;

		if (!pread_all(fd, sh, is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr),
			       shoff + i * shentsize))
			return NULL;
		if (get(sh + 4, 4, big) != SHT_NOTE)
			continue;
		name_off = get(sh, 4, big);
		if (name_off + sizeof(name) > str_size ||
		    !pread_all(fd, name, sizeof(name), str_off + name_off) ||
		    memcmp(name, FWD_NOTE, sizeof(name)) != 0)
			continue;
		off = SH_FIELD(24, 16);
		size = SH_FIELD(32, 20);
		align = SH_FIELD(48, 32);
		align = align ? align : 1;
		if (size < sizeof(nh) || size > NOTE_MAX || !pread_all(fd, nh, sizeof(nh), off))
			return NULL;
		namesz = get(nh, 4, big);
		descsz = get(nh + 4, 4, big);
		/* The owner's name, padded to the section's alignment (NVIDIA's reader does so). */
		desc_off = sizeof(nh) + ((namesz + align - 1) & ~(align - 1));
		if (namesz != sizeof("NVIDIA Corporation") || descsz == 0 ||
		    desc_off + descsz > size)
			return NULL;
		char owner[sizeof("NVIDIA Corporation")];

		if (!pread_all(fd, owner, sizeof(owner), off + sizeof(nh)) ||
		    memcmp(owner, "NVIDIA Corporation", sizeof(owner)) != 0)
			return NULL;
		desc = calloc(1, descsz + 1);
		if (!desc || !pread_all(fd, desc, descsz, off + desc_off)) {
			free(desc);
			return NULL;
		}
		return desc;
	}
#undef SH_FIELD
	return NULL;
}

/*
 * The ELF program header field at OFF64 (ELF64) or OFF32 (ELF32) of the header in P: its
 * offset, virtual address and size in the file.
 */
#define PH_FIELD(p, off64, off32) (is64 ? get((p) + (off64), 8, big) : get((p) + (off32), 4, big))

/* The file offset of the virtual address VADDR, through the PT_LOAD segment holding it. */
static bool vaddr_offset(int fd, const unsigned char *h, bool is64, bool big, uint64_t vaddr,
			 uint64_t *ret)
{
	uint64_t phoff = is64 ? get(h + 32, 8, big) : get(h + 28, 4, big);
	uint64_t phentsize = get(h + (is64 ? 54 : 42), 2, big),
		 phnum = get(h + (is64 ? 56 : 44), 2, big);
	unsigned char ph[sizeof(Elf64_Phdr)];

	for (uint64_t i = 0; i < phnum && i < ELF_MAX_SECTIONS; i++) {
		uint64_t off, addr, size;

		if (!pread_all(fd, ph, is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr),
			       phoff + i * phentsize))
			return false;
		if (get(ph, 4, big) != PT_LOAD)
			continue;
		off = PH_FIELD(ph, 8, 4);
		addr = PH_FIELD(ph, 16, 8);
		size = PH_FIELD(ph, 32, 16);
		if (vaddr >= addr && vaddr - addr < size) {
			*ret = off + (vaddr - addr);
			return true;
		}
	}
	return false;
}

/*
 * The soname (DT_SONAME) of the ELF shared object FD into RET (SIZE bytes), read where
 * ldconfig reads it (glibc's elf/readelflib.c, process_elf_file): the PT_DYNAMIC segment,
 * its string table found through DT_STRTAB's address. False where it has none, or one
 * that is not a plain file name: a soname with a '/' (or "." or "..") would put the link
 * somewhere else than beside the library.
 */
bool read_soname(int fd, char *ret, size_t size)
{
	unsigned char h[sizeof(Elf64_Ehdr)], ph[sizeof(Elf64_Phdr)], dyn[16];
	uint64_t phoff, phentsize, phnum, dyn_off = 0, dyn_size = 0, strtab = 0, strsz = 0;
	uint64_t soname = UINT64_MAX, str_off;
	bool big, is64, found = false;
	size_t ent;
	ssize_t got;

	if (!pread_all(fd, h, sizeof(Elf32_Ehdr), 0) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return false;
	is64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if ((is64 && !pread_all(fd, h, sizeof(Elf64_Ehdr), 0)) || get(h + 16, 2, big) != ET_DYN)
		return false;
	phoff = is64 ? get(h + 32, 8, big) : get(h + 28, 4, big);
	phentsize = get(h + (is64 ? 54 : 42), 2, big);
	phnum = get(h + (is64 ? 56 : 44), 2, big);
	if (phnum == 0 || phnum > ELF_MAX_SECTIONS ||
	    phentsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return false;
	for (uint64_t i = 0; i < phnum && !found; i++) {
		if (!pread_all(fd, ph, is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr),
			       phoff + i * phentsize))
			return false;
		if ((found = get(ph, 4, big) == PT_DYNAMIC)) {
			dyn_off = PH_FIELD(ph, 8, 4);
			dyn_size = PH_FIELD(ph, 32, 16);
		}
	}
	ent = is64 ? 16 : 8;
	for (uint64_t at = 0; found && at + ent <= dyn_size && at < NOTE_MAX; at += ent) {
		uint64_t tag, val;

		if (!pread_all(fd, dyn, ent, dyn_off + at))
			return false;
		tag = get(dyn, (unsigned)ent / 2, big);
		val = get(dyn + ent / 2, (unsigned)ent / 2, big);
		if (tag == DT_NULL)
			break;
		if (tag == DT_SONAME)
			soname = val;
		else if (tag == DT_STRTAB)
			strtab = val;
		else if (tag == DT_STRSZ)
			strsz = val;
	}
	if (soname == UINT64_MAX || soname >= strsz ||
	    !vaddr_offset(fd, h, is64, big, strtab, &str_off))
		return false;
	if (str_off > (uint64_t)INT64_MAX - soname)
		return false;
	memset(ret, 0, size);
	got = pread(fd, ret, size - 1, (off_t)(str_off + soname));
	/* Its end inside what was read and inside the string table. */
	return got > 0 && ret[0] && strlen(ret) < (size_t)got && strlen(ret) < strsz - soname &&
	       !strchr(ret, '/') && strcmp(ret, ".") != 0 && strcmp(ret, "..") != 0;
}
#undef PH_FIELD
