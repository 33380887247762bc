/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module files for the unit tests' scratch host roots: make_ko writes a relocatable object
 * with the .modinfo a kernel module carries, built with cc, and the host they are put on
 * (test_kernel, test_rdma).
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include "scratch.h"

/*
 * ROOT/drivers/NAME.ko (its source ROOT/NAME.c): .modinfo version=VERSION, license=LICENSE,
 * depends=DEPENDS, name=NAME ('-' as '_'), vermagic=VERMAGIC and the usual flags; IMPORT,
 * when not NULL, a symbol it leaves undefined (what the kernel resolves at load). 0 or -1.
 */
static inline int make_ko(const char *root, const char *name, const char *version,
			  const char *license, const char *depends, const char *vermagic,
			  const char *import)
{
	char src[512], ko[512], cmd[1400], mod[64];
	FILE *c;

	snprintf(mod, sizeof(mod), "%s", name);
	for (char *p = mod; *p; p++)
		if (*p == '-')
			*p = '_';
	snprintf(src, sizeof(src), "%s/%s.c", root, name);
	snprintf(ko, sizeof(ko), "%s/drivers/%s.ko", root, name);
	c = fopen(src, "w");
	if (!c)
		return -1;
	fprintf(c,
		"static const char mi[] __attribute__((section(\".modinfo\"), used, aligned(1))) = "
		"\"version=%s\\0license=%s\\0depends=%s\\0name=%s\\0vermagic=%s SMP "
		"preempt mod_unload modversions \";\n",
		version, license, depends, mod, vermagic);
	if (import)
		fprintf(c, "extern void %s(void);\nvoid *use_it(void) { return (void *)%s; }\n",
			import, import);
	fclose(c);
	snprintf(cmd, sizeof(cmd), "cc -c -o '%s' '%s'", ko, src);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * F's root as a host for module tests: ROOT/lib/modules/RELEASE, ROOT/drivers for make_ko,
 * and module signatures not enforced (sig_enforce N). 0 or -1.
 */
static inline int make_ko_host(struct scratch_fixture *f, const char *release)
{
	char moddir[256];

	snprintf(moddir, sizeof(moddir), "lib/modules/%s", release);
	if (scratch_mkdirs(f->fd, moddir) < 0 || scratch_mkdirs(f->fd, "drivers") < 0)
		return -1;
	return scratch_write(f->fd, "sys/module/module/parameters/sig_enforce", "N\n");
}
