/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor's check list, shared by the files its checks live in (cmd/doctor.c, the GPU
 * partitions and sharing checks in cmd/doctor_partitions.c, the newest installed kernel's
 * in cmd/doctor_boot.c, IMEX's in cmd/doctor_imex.c, NVLink 5 telemetry's in
 * cmd/doctor_nvsdm.c, GPUDirect RDMA's in cmd/doctor_rdma.c; the list itself in
 * cmd/doctor_checks.c): a line is a verdict, what was found and, when it is not ok, the fix.
 */
#pragma once

#include <stddef.h>

#include "util/cleanup.h"

struct config;
struct host_boot;
struct nodestate;

#define MAX_CHECKS 48

enum verdict { V_OK, V_WARN, V_FAIL, V_SKIP };

struct check {
	enum verdict v;
	char name[32];
	char detail[512];
	char fix[384];
};

struct doctor {
	struct check checks[MAX_CHECKS];
	size_t n;
};

/* Sets check C anew: a later check can change what an earlier line concludes. */
void doctor_set(struct check *c, enum verdict v, const char *name, const char *fix, const char *fmt,
		...) _printf_(5, 6);

/* Adds a line to D (past MAX_CHECKS, nothing); FIX is dropped for ok and skip. */
void doctor_add(struct doctor *d, enum verdict v, const char *name, const char *fix,
		const char *fmt, ...) _printf_(5, 6);

/*
 * The installed version's directory SUB ("bin", "lib64") in C's install dir, opened, for a
 * check that asks what the version carries; -1 where nothing is installed there or it
 * cannot be opened (the check then says it is missing).
 */
int doctor_installed_subdir(int root_fd, const struct config *c, const struct nodestate *s,
			    const char *sub);

/*
 * The GPU partitions line: the layout asked for (GKE's gpu_config.json or --mig-layout),
 * what each GPU has and whether NVML shows it in place; a pool's sharing. No line when no
 * layout and no sharing is asked for.
 */
void doctor_check_partitions(struct doctor *d, int root_fd, const struct config *c,
			     const struct nodestate *s);

/*
 * The IMEX line (cmd/doctor_imex.c): ok when no GPU of S needs IMEX; for a GB200 or GB300,
 * whether the installed version has nvidia-imex and nvidia-imex-ctl, the loaded driver
 * the chrdev nvidia-caps-imex-channels and, with c->imex_channel0, the host its channel0.
 */
void doctor_check_imex(struct doctor *d, int root_fd, const struct config *c,
		       const struct nodestate *s);

/*
 * The NVLink 5 telemetry line (cmd/doctor_nvsdm.c): none on a node without NVLink 5
 * management ports; there, whether the installed version's lib64/ has libnvsdm.so.1, which
 * DCGM loads for the switches' metrics: a warning when not, never a failure.
 */
void doctor_check_nvsdm(struct doctor *d, int root_fd, const struct config *c,
			const struct nodestate *s);

/*
 * The GPUDirect RDMA line (cmd/doctor_rdma.c), with --rdma other than off: the path that
 * serves RDMA (nvidia-peermem loaded, or dma-buf: open modules on Linux 5.12+), or why none.
 */
void doctor_check_rdma(struct doctor *d, int root_fd, const struct config *c,
		       const struct nodestate *s);

/*
 * The newest installed kernel B->newest, later than the boot loader default's B->next and
 * not the running one, that the repository has no package for (WHY, repo_select's): a
 * warning, as a kernel update or grub-mkconfig can make it the default.
 */
void doctor_check_newest_kernel(struct doctor *d, const struct nodestate *s,
				const struct host_boot *b, const char *why);
