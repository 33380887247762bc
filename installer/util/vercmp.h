/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Version order as a distribution's package manager has it, for kernel release strings
 * ("6.1.0-58-amd64", "5.14.0-427.13.1.el9_4.x86_64"): which of two installed kernels is
 * the newer, as the distribution's own tools would sort them.
 */
#pragma once

/*
 * dpkg's order (Debian Policy 5.6.12, "Version"; dpkg --compare-versions): an optional
 * numeric epoch before ':', then the upstream part, then the revision after the last '-',
 * each compared in turns of a non-digit run (letters before other characters, '~' before
 * all, even the end) and a numeric run. <0, 0 or >0 as A sorts before, with or after B.
 */
int vercmp_dpkg(const char *a, const char *b);

/*
 * rpm's order (rpmvercmp: rpm's docs/manual/dependencies.md and "Version comparison"):
 * alphanumeric segments, other characters only separate; a numeric segment is newer than
 * an alphabetic one; '~' sorts before anything, '^' after the end but before any other
 * segment. <0, 0 or >0.
 */
int vercmp_rpm(const char *a, const char *b);
