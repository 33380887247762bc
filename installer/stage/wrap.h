/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's programs, made to find the driver's libraries wherever they run
 * (docs/design.md, "The launcher in bin/"). NVIDIA's nvidia-smi and the other
 * tools have no RUNPATH and load libnvidia-ml.so.1 by name: where nothing names
 * the install dir's lib64 (GKE's device plugin mounts it at /usr/local/nvidia
 * with no LD_LIBRARY_PATH), they fail. Their files stay as NVIDIA built them: at
 * publication each dynamically linked program bin/NAME moves to bin/.real/NAME
 * and the installer's static launcher (installer/helpers/launcher.c) takes its
 * place, which runs it with the lib64 beside bin/ first on LD_LIBRARY_PATH.
 * bin/.real is inside bin/ because CDI mounts bin/ and lib64/ alone.
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

#define WRAP_REAL_DIR ".real"

/*
 * Whether the file open at FD is a dynamically linked ELF program: an executable or
 * position-independent ELF file (32 or 64 bits, either byte order) with a PT_INTERP
 * program header. Reads the ELF header and the program headers only, within the file.
 * Returns 1 when it is; 0 for anything else (a script, a static program, a library
 * without an interpreter, a truncated or malformed ELF file); -1 when FD cannot be read.
 */
_must_check_ int wrap_elf_has_interp(int fd, struct err *e) __attribute__((warn_unused_result));

/*
 * In the staged tree SFD: each regular file of bin/ with an execute bit that
 * wrap_elf_has_interp() takes moves to bin/.real/NAME, and the launcher (read from the
 * installer's libexec, mode 0755) takes its place; scripts, static programs, links and
 * the rest stay. A package that has a bin/.real of its own is refused (EXIT_VERIFY).
 * Returns how many programs were wrapped, or -1.
 */
_must_check_ int wrap_programs(int sfd, struct err *e) __attribute__((warn_unused_result));
