// SPDX-License-Identifier: Apache-2.0
/*
 * GPUDirect RDMA: which path serves it (--rdma), and nvidia-peermem loaded again when the
 * node's RDMA stack comes back. Why each rule is what it is, with the sources it follows:
 * docs/design.md, "GPUDirect RDMA".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "kernel/kmods.h"
#include "kernel/modsig.h"
#include "kernel/rdma.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/str.h"

/* The RDMA core: in-tree (drivers/infiniband/core) or MOFED/DOCA-OFED's, same name. */
#define RDMA_CORE "ib_core"
/*
 * MOFED's peer-memory API, which nvidia-peermem registers with; without it NVIDIA's
 * nvidia-peermem's init returns -EINVAL (open-gpu-kernel-modules
 * kernel-open/nvidia-peermem/nvidia-peermem.c:641-681, conftest.sh:3297-3318).
 */
#define PEER_API_SYMBOL "ib_register_peer_memory_client"
/* The kernel that imports dma-buf as RDMA memory (ib_umem_dmabuf_get): Linux 5.12. */
#define DMABUF_MAJOR 5
#define DMABUF_MINOR 12

static const char *const mode_names[] = {"off", "auto", "peermem", "dmabuf"};
static const char *const path_names[] = {"none", "peermem", "dmabuf"};

int kernel_rdma_parse(const char *s, enum kernel_rdma *ret)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(mode_names); i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*ret = (enum kernel_rdma)i;
			return 0;
		}
	return -1;
}

const char *kernel_rdma_name(enum kernel_rdma m)
{
	return (size_t)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

const char *kernel_rdma_path_name(enum kernel_rdma_path p)
{
	return (size_t)p < ARRAY_SIZE(path_names) ? path_names[p] : "?";
}

/* Whether RELEASE ("6.1.0-57-amd64") is MAJOR.MINOR or later; false when unreadable. */
static bool release_at_least(const char *release, unsigned major, unsigned minor)
{
	unsigned a, b;

	if (sscanf(release, "%u.%u", &a, &b) != 2)
		return false;
	return a > major || (a == major && b >= minor);
}

/* Why dma-buf cannot serve on P, into BUF; "" when it can. */
static void dmabuf_blocker(const struct kernel_rdma_probe *p, char *buf, size_t size)
{
	buf[0] = '\0';
	if (strcmp(p->module_type, "open") != 0)
		str_fmt_cut(buf, size,
			    "dma-buf needs NVIDIA's open kernel modules (the driver is %s)",
			    p->module_type[0] ? p->module_type : "of an unknown flavour");
	else if (!release_at_least(p->release, DMABUF_MAJOR, DMABUF_MINOR))
		str_fmt_cut(buf, size, "dma-buf needs Linux %u.%u or later (the kernel is %s)",
			    DMABUF_MAJOR, DMABUF_MINOR, p->release);
}

static void decide_peermem(const struct kernel_rdma_probe *p, struct kernel_rdma_decision *r)
{
	if (!p->stack_in_tree) {
		r->code = EXIT_KERNEL_REFUSED;
		str_fmt_cut(
			r->why, sizeof(r->why),
			"--rdma peermem: no RDMA stack: %s is neither loaded nor in /lib/modules/%s",
			RDMA_CORE, p->release);
		str_fmt_cut(
			r->fix, sizeof(r->fix),
			"install the node's RDMA stack (DOCA-OFED, or the kernel's rdma modules) before the driver, or use --rdma auto");
		return;
	}
	r->path = RDMA_PATH_PEERMEM;
	str_fmt_cut(r->why, sizeof(r->why), "nvidia-peermem over %s (%s%s)", RDMA_CORE,
		    p->stack_live ? "loaded" : "to load from the host's module tree",
		    p->peer_api ? ", with MOFED's peer-memory API" : "");
}

static void decide_auto(const struct kernel_rdma_probe *p, struct kernel_rdma_decision *r)
{
	char no_dmabuf[192];

	if (!p->stack_live) {
		str_fmt_cut(r->why, sizeof(r->why),
			    "RDMA is not served: no RDMA stack is loaded (%s is not live)",
			    RDMA_CORE);
		return;
	}
	dmabuf_blocker(p, no_dmabuf, sizeof(no_dmabuf));
	if (!no_dmabuf[0]) {
		r->path = RDMA_PATH_DMABUF;
		str_fmt_cut(r->why, sizeof(r->why),
			    "dma-buf: open kernel modules on Linux %s, %s loaded", p->release,
			    RDMA_CORE);
	} else if (p->peer_api) {
		r->path = RDMA_PATH_PEERMEM;
		str_fmt_cut(r->why, sizeof(r->why),
			    "nvidia-peermem over MOFED's peer-memory API: %s", no_dmabuf);
	} else {
		str_fmt_cut(
			r->why, sizeof(r->why),
			"RDMA is not served: %s; nvidia-peermem needs MOFED's peer-memory API (%s), which the loaded %s lacks",
			no_dmabuf, PEER_API_SYMBOL, RDMA_CORE);
	}
}

void kernel_rdma_decide(enum kernel_rdma mode, const struct kernel_rdma_probe *p,
			struct kernel_rdma_decision *ret)
{
	char no_dmabuf[192];

	memset(ret, 0, sizeof(*ret));
	switch (mode) {
	case KERNEL_RDMA_OFF:
		str_fmt_cut(ret->why, sizeof(ret->why), "--rdma off");
		break;
	case KERNEL_RDMA_PEERMEM:
		decide_peermem(p, ret);
		break;
	case KERNEL_RDMA_DMABUF:
		dmabuf_blocker(p, no_dmabuf, sizeof(no_dmabuf));
		if (no_dmabuf[0]) {
			ret->code = EXIT_KERNEL_REFUSED;
			str_fmt_cut(ret->why, sizeof(ret->why), "--rdma dmabuf: %s", no_dmabuf);
			str_fmt_cut(
				ret->fix, sizeof(ret->fix),
				"use --kernel-module-type open on Linux %u.%u or later, or --rdma peermem",
				DMABUF_MAJOR, DMABUF_MINOR);
			break;
		}
		ret->path = RDMA_PATH_DMABUF;
		str_fmt_cut(ret->why, sizeof(ret->why),
			    "dma-buf: open kernel modules on Linux %s%s", p->release,
			    p->stack_live ? "" : " (no RDMA stack loaded yet: served once it is)");
		break;
	case KERNEL_RDMA_AUTO:
		decide_auto(p, ret);
		break;
	}
}

/* Whether the kernel exports SYMBOL (ROOT/proc/kallsyms: names show without privilege). */
static bool kernel_exports(int root_fd, const char *symbol)
{
	_cleanup_close_ int fd = openat(root_fd, "proc/kallsyms", O_RDONLY | O_CLOEXEC);
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0, n = strlen(symbol);

	if (fd < 0 || !(f = fdopen(fd, "r")))
		return false;
	fd = -1;
	while (getline(&line, &cap, f) > 0) {
		/* "ffffffffc0a01230 T ib_register_peer_memory_client\t[ib_core]" */
		const char *name = strchr(line, ' ');

		if (name && (name = strchr(name + 1, ' ')) && strncmp(name + 1, symbol, n) == 0 &&
		    strchr("\t\n", name[1 + n]))
			return true;
	}
	return false;
}

void kernel_rdma_probe(int root_fd, const char *release, const char *module_type,
		       struct kernel_rdma_probe *ret)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	enum kmods_state st;
	struct err e;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->release, sizeof(ret->release), "%s", release);
	if (kmods_new(root_fd, release, &k, &e) < 0)
		return;
	st = kmods_get_state(k, RDMA_CORE);
	ret->stack_live = st == KMODS_LIVE || st == KMODS_BUILTIN;
	ret->stack_in_tree = ret->stack_live || kmods_has_intree(k, RDMA_CORE);
	ret->peermem_live = kmods_get_state(k, "nvidia_peermem") == KMODS_LIVE;
	ret->peer_api = ret->stack_live && kernel_exports(root_fd, PEER_API_SYMBOL);
	if (module_type && module_type[0])
		snprintf(ret->module_type, sizeof(ret->module_type), "%s", module_type);
	else if (kmods_loaded_module_type(k, "nvidia", ret->module_type, sizeof(ret->module_type)) <
		 0)
		ret->module_type[0] = '\0';
}

/* The first module of DEPENDS ("nvidia,ib_core") other than nvidia that is not live. */
static bool stack_missing(struct kmods *k, const char *depends, char *buf, size_t size)
{
	char deps[512], *tok, *save = NULL;

	snprintf(deps, sizeof(deps), "%s", depends);
	for (tok = strtok_r(deps, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum kmods_state st;

		kmods_normalise_name(tok);
		st = kmods_get_state(k, tok);
		if (strcmp(tok, "nvidia") != 0 && st != KMODS_LIVE && st != KMODS_BUILTIN) {
			snprintf(buf, size, "%s", tok);
			return true;
		}
	}
	return false;
}

/* nvidia-peermem's file in RQ's drivers/, checked as the kernel will check it, into SET. */
static int peermem_set(struct kmods *k, const struct kernel_rdma_reload *rq, const char *release,
		       struct kmods_set *set, struct err *e)
{
	static char name[] = "nvidia-peermem";
	char *const names[] = {name};
	_cleanup_(modsig_certs_freep) struct modsig_certs *certs = NULL;
	struct kmods_report r;

	if (kmods_set_build(k,
			    &(struct kmods_set_request){.drivers_fd = rq->drivers_fd,
							.names = names,
							.n_names = 1,
							.modinfo = true},
			    set, e) < 0)
		return -1;
	if (rq->n_module_certs &&
	    modsig_certs_load(rq->module_certs, rq->n_module_certs, &certs, e) < 0)
		return -1;
	if (kmods_inspect(k, set->e[0].path, certs, release, &r, e) < 0)
		return -1;
	if (!r.ok)
		return err_set(e, r.code, "module nvidia_peermem: %s", r.verdict);
	return 0;
}

int kernel_rdma_reload(const struct kernel_rdma_reload *rq, struct kernel_rdma_decision *ret,
		       char *waiting, size_t size, struct err *e)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	struct kernel_rdma_probe p;
	struct kmods_set set;
	struct ktrust trust;
	const char *release = rq->release;
	char version[64], missing[KMODS_NAME_MAX];
	int n;

	waiting[0] = '\0';
	kernel_rdma_probe(rq->root_fd, release, NULL, &p);
	kernel_rdma_decide(rq->mode, &p, ret);
	/* Never while the stack is gone: its loader (openibd) loads it, not us. */
	if (rq->mode == KERNEL_RDMA_PEERMEM && !p.stack_live) {
		snprintf(waiting, size, "the RDMA stack is gone (%s is not live)", RDMA_CORE);
		return 0;
	}
	if (ret->path != RDMA_PATH_PEERMEM || p.peermem_live)
		return 0;
	if (kmods_new(rq->root_fd, release, &k, e) < 0)
		return -1;
	if (kmods_loaded_version(k, "nvidia", version, sizeof(version)) < 0 ||
	    strcmp(version, rq->version) != 0) {
		snprintf(waiting, size, "nvidia %s is not live", rq->version);
		return 0;
	}
	if (peermem_set(k, rq, release, &set, e) < 0)
		return err_wrap(e, "rdma");
	if (stack_missing(k, set.e[0].info.depends, missing, sizeof(missing))) {
		snprintf(waiting, size, "nvidia-peermem's dependency %s is not live", missing);
		return 0;
	}
	ktrust_probe(rq->root_fd, &trust);
	n = kmods_load_set(k, &set, &trust, e);
	if (n < 0)
		return err_wrap(e, "rdma");
	return n > 0;
}
