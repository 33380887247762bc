/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUDirect RDMA inside kernel/ (rdma.c; the face declares what other folders call): the
 * mode's name for the log line, and the decision kernel_prepare made, which the tests read.
 */
#pragma once

#include "kernel/kernel.h" /* the face: enum kernel_rdma, struct kernel_rdma_decision */
#include "kernel/kmods.h"
#include "kernel/ktrust.h"
#include "kernel/modsig.h"

/* nvidia-peermem's names: its file in drivers/, and the module the kernel shows. */
#define KERNEL_PEERMEM_FILE "nvidia-peermem"
#define KERNEL_PEERMEM_MODULE "nvidia_peermem"

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
