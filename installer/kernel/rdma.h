/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUDirect RDMA inside kernel/ (rdma.c; the face declares what other folders call): the
 * mode's name for the log line, and the decision kernel_prepare made, which the tests read.
 */
#pragma once

#include <stdio.h>

#include "kernel/kernel.h" /* the face: enum kernel_rdma, struct kernel_rdma_decision */
#include "kernel/kmods.h"
#include "kernel/ktrust.h"
#include "kernel/modsig.h"

/* nvidia-peermem's names: its file in drivers/, and the module the kernel shows. */
#define KERNEL_PEERMEM_FILE "nvidia-peermem"
#define KERNEL_PEERMEM_MODULE "nvidia_peermem"

/*
 * Decides MODE's path on the node P describes: off serves nothing; peermem loads
 * nvidia-peermem once ib_core is live with MOFED's peer-memory API (an error when no
 * ib_core is live or in the module tree, or when the package's nvidia-peermem is a stub
 * built without that API); dmabuf needs the open modules and, where a stack is live, its
 * ib_umem_dmabuf_get (an error when not); auto picks dma-buf where it serves, peermem where
 * the stack has MOFED's peer-memory API and the package's nvidia-peermem uses it, else
 * nothing, and says why. Never fails: a refusal is in *RET (code).
 */
void kernel_rdma_decide(enum kernel_rdma mode, const struct kernel_rdma_probe *p,
			struct kernel_rdma_decision *ret);

/*
 * Reads the probe under ROOT_FD for RELEASE; MODULE_TYPE is the driver's flavour when the
 * caller knows it (the package's, the installed manifest's), else NULL: the live nvidia
 * module's taint says. 0, or -1 with E (libkmod, or /proc/kallsyms with a stack live,
 * unreadable: never read as "no stack").
 */
_must_check_ int kernel_rdma_probe(int root_fd, const char *release, const char *module_type,
				   struct kernel_rdma_probe *ret, struct err *e);

/* The kallsyms reader behind the probe (exposed for fuzz_proc): which symbols F lists. */
void kernel_rdma_kallsyms(FILE *f, bool *peer_api, bool *dmabuf);

/* "off", "auto", "peermem", "dmabuf". */
const char *kernel_rdma_name(enum kernel_rdma m);

/* The RDMA decision kernel_prepare made (--rdma), or NULL before it. */
const struct kernel_rdma_decision *kernel_rdma(const struct kernel *kn);

/*
 * Whether the package's drivers/nvidia-peermem.ko (DRIVERS_FD) is the stub NVIDIA's build
 * makes without MOFED's peer-memory API (conftest.sh:3294-3318 finds no
 * ib_register_peer_memory_client; its init then returns -EINVAL, nvidia-peermem.c:679-681):
 * told by what the file imports. 0 with *RET, or -1 with E (no such file, not a module).
 */
_must_check_ int kernel_rdma_peermem_stub(struct kmods *k, int drivers_fd, bool *ret,
					  struct err *e);

/* nvidia-peermem's load, on its own after the driver's set (install) or by the agent. */
struct kernel_rdma_load {
	struct kmods *k;
	int drivers_fd;
	const struct modsig_certs *certs; /* NULL: no pinned certificate */
	const char *release;
	const struct ktrust *trust;
	const struct kernel_rdma_probe *probe; /* the node as read just before */
};

/*
 * Loads nvidia-peermem when ib_core is live with MOFED's peer-memory API and every module
 * it depends on is live (never a dependency from the module tree: the stack is openibd's
 * to load); otherwise WAITING says what it waits for. Its file is verified first. Returns
 * 1 loaded, 0 nothing done (WAITING, or live already), -1 with E.
 */
_must_check_ int kernel_rdma_load_peermem(const struct kernel_rdma_load *q, char *waiting,
					  size_t size, struct err *e);
