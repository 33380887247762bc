/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUDirect RDMA inside kernel/ (rdma.c; the face declares what other folders call): the
 * mode's name for the log line, and the decision kernel_prepare made, which the tests read.
 */
#pragma once

#include "kernel/kernel.h" /* the face: enum kernel_rdma, struct kernel_rdma_decision */

/* "off", "auto", "peermem", "dmabuf". */
const char *kernel_rdma_name(enum kernel_rdma m);

/* The RDMA decision kernel_prepare made (--rdma), or NULL before it. */
const struct kernel_rdma_decision *kernel_rdma(const struct kernel *kn);
