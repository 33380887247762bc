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
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"
#include "kernel/kmods.h"
#include "kernel/modsig.h"
#include "kernel/rdma.h"
#include "util/cleanup.h"
#include "util/fs.h"
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
/*
 * The RDMA stack's import of dma-buf as RDMA memory (Linux 5.12's ib_umem_dmabuf_get,
 * drivers/infiniband/core/umem_dmabuf.c): read from the kernel, not guessed from its
 * release, since vendors backport it and MOFED's stack brings its own.
 */
#define DMABUF_SYMBOL "ib_umem_dmabuf_get"

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

/* Why dma-buf cannot serve on P, into BUF; "" when it can. */
static void dmabuf_blocker(const struct kernel_rdma_probe *p, char *buf, size_t size)
{
	buf[0] = '\0';
	if (strcmp(p->module_type, "open") != 0)
		str_fmt_cut(buf, size,
			    "dma-buf needs NVIDIA's open kernel modules (the driver is %s)",
			    p->module_type[0] ? p->module_type : "of an unknown flavour");
	else if (p->stack_live && !p->dmabuf_import)
		str_fmt_cut(
			buf, size,
			"dma-buf needs an RDMA stack that imports it (the kernel %s exports no %s)",
			p->release, DMABUF_SYMBOL);
}

/* The package's nvidia-peermem is the stub NVIDIA's build makes without the API. */
#define STUB_WHY                                                                                   \
	"the package's nvidia-peermem was built without MOFED's peer-memory API (it imports "      \
	"no " PEER_API_SYMBOL ": NVIDIA's then fails its init with -EINVAL)"
#define STUB_FIX                                                                                   \
	"build the package against MOFED's ofa_kernel tree (" DOC_DIR "/building-packages.md, "    \
	"\"GPUDirect RDMA and nvidia-peermem\"), or use --rdma dmabuf with the open kernel modules"

static void decide_peermem(const struct kernel_rdma_probe *p, struct kernel_rdma_decision *r)
{
	if (p->peermem_stub) {
		r->code = EXIT_KERNEL_REFUSED;
		str_fmt_cut(r->why, sizeof(r->why), "--rdma peermem: %s", STUB_WHY);
		str_fmt_cut(r->fix, sizeof(r->fix), "%s", STUB_FIX);
		return;
	}
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
	if (p->stack_live && p->peer_api)
		str_fmt_cut(r->why, sizeof(r->why),
			    "nvidia-peermem over %s with MOFED's peer-memory API", RDMA_CORE);
	else
		str_fmt_cut(
			r->why, sizeof(r->why),
			"nvidia-peermem waits for %s with MOFED's peer-memory API (%s): the node agent loads it then",
			RDMA_CORE, p->stack_live ? "loaded without it" : "not loaded");
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
			    "dma-buf: open kernel modules, %s loaded and importing dma-buf (%s)",
			    RDMA_CORE, DMABUF_SYMBOL);
	} else if (p->peer_api && p->peermem_stub) {
		str_fmt_cut(r->why, sizeof(r->why), "RDMA is not served: %s; %s", no_dmabuf,
			    STUB_WHY);
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
				"use --kernel-module-type open with an RDMA stack that exports %s (Linux 5.12 or later, or DOCA-OFED), or --rdma peermem",
				DMABUF_SYMBOL);
			break;
		}
		ret->path = RDMA_PATH_DMABUF;
		str_fmt_cut(
			ret->why, sizeof(ret->why), "dma-buf: open kernel modules%s",
			p->stack_live
				? ", the RDMA stack imports dma-buf"
				: " (no RDMA stack loaded yet: served once one importing dma-buf is)");
		break;
	case KERNEL_RDMA_AUTO:
		decide_auto(p, ret);
		break;
	}
}

/*
 * Which of the symbols the probe asks about ROOT/proc/kallsyms lists (names show without
 * privilege; fuzzed by fuzz_proc through kernel_rdma_kallsyms): a line is
 * "ffffffffc0a01230 T ib_register_peer_memory_client\t[ib_core]".
 */
void kernel_rdma_kallsyms(FILE *f, bool *peer_api, bool *dmabuf)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	*peer_api = *dmabuf = false;
	while (getline(&line, &cap, f) > 0) {
		const char *name = strchr(line, ' ');
		size_t n;

		if (!name || !(name = strchr(name + 1, ' ')))
			continue;
		n = strcspn(++name, "\t\n");
		if (n == strlen(PEER_API_SYMBOL) && strncmp(name, PEER_API_SYMBOL, n) == 0)
			*peer_api = true;
		else if (n == strlen(DMABUF_SYMBOL) && strncmp(name, DMABUF_SYMBOL, n) == 0)
			*dmabuf = true;
	}
}

static int read_kallsyms(int root_fd, struct kernel_rdma_probe *p, struct err *e)
{
	_cleanup_close_ int fd =
		fs_open_in_root(root_fd, "/proc/kallsyms", O_RDONLY | O_CLOEXEC, 0, 0, e);
	_cleanup_fclose_ FILE *f = NULL;

	if (fd < 0) {
		err_hint(e, "mount the host's /proc in the installer's pod (hostPID, or /proc)");
		return err_wrap(e, "rdma: the kernel's symbols");
	}
	if (!(f = fdopen(fd, "r")))
		return err_errno(e, EXIT_UNEXPECTED, errno, "rdma: /proc/kallsyms");
	fd = -1;
	kernel_rdma_kallsyms(f, &p->peer_api, &p->dmabuf_import);
	return 0;
}

int kernel_rdma_probe(int root_fd, const char *release, const char *module_type,
		      struct kernel_rdma_probe *ret, struct err *e)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	enum kmods_state st;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->release, sizeof(ret->release), "%s", release);
	if (kmods_new(root_fd, release, &k, e) < 0)
		return err_wrap(e, "rdma");
	st = kmods_get_state(k, RDMA_CORE);
	ret->stack_live = st == KMODS_LIVE || st == KMODS_BUILTIN;
	ret->stack_in_tree = ret->stack_live || kmods_has_intree(k, RDMA_CORE);
	ret->peermem_live = kmods_get_state(k, KERNEL_PEERMEM_MODULE) == KMODS_LIVE;
	if (ret->stack_live && read_kallsyms(root_fd, ret, e) < 0)
		return -1;
	/* The driver's flavour: the package's or the installed manifest's; the live module's
	 * taint only where neither says (a driver loaded by hand, an older manifest). */
	if (module_type && module_type[0])
		snprintf(ret->module_type, sizeof(ret->module_type), "%s", module_type);
	else if (kmods_loaded_module_type(k, "nvidia", ret->module_type, sizeof(ret->module_type)) <
		 0)
		ret->module_type[0] = '\0';
	return 0;
}

int kernel_rdma_plan(const struct kernel_rdma_plan_request *q, struct kernel_rdma_probe *p,
		     struct kernel_rdma_decision *ret, struct err *e)
{
	memset(p, 0, sizeof(*p));
	if (q->mode != KERNEL_RDMA_OFF) {
		if (kernel_rdma_probe(q->root_fd, q->release, q->module_type, p, e) < 0)
			return -1;
		if (q->k && q->drivers_fd >= 0) {
			struct err pe;

			err_clear(&pe);
			if (kernel_rdma_peermem_stub(q->k, q->drivers_fd, &p->peermem_stub, &pe) <
			    0) {
				if (q->mode == KERNEL_RDMA_PEERMEM) {
					err_set(e, pe.code ? pe.code : EXIT_VERIFY,
						"--rdma peermem: %s", pe.msg);
					err_hint(
						e,
						"use a package built with nvidia-peermem, or --rdma auto");
					return -1;
				}
				p->peermem_stub = true; /* none to load: auto cannot pick it */
			}
		}
	}
	kernel_rdma_decide(q->mode, p, ret);
	return 0;
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

/* drivers/nvidia-peermem.ko of DRIVERS_FD as a set of one, its modinfo read. */
static int peermem_file(struct kmods *k, int drivers_fd, struct kmods_set *set, struct err *e)
{
	char name[] = KERNEL_PEERMEM_FILE;
	char *const names[] = {name};

	return kmods_set_build(
		k,
		&(struct kmods_set_request){
			.drivers_fd = drivers_fd, .names = names, .n_names = 1, .modinfo = true},
		set, e);
}

int kernel_rdma_peermem_stub(struct kmods *k, int drivers_fd, bool *ret, struct err *e)
{
	struct kmods_set set;
	int r;

	if (peermem_file(k, drivers_fd, &set, e) < 0)
		return -1;
	r = kmods_imports(k, set.e[0].path, PEER_API_SYMBOL, e);
	if (r < 0)
		return -1;
	*ret = r == 0;
	return 0;
}

int kernel_rdma_load_peermem(const struct kernel_rdma_load *q, char *waiting, size_t size,
			     struct err *e)
{
	struct kmods_set set;
	struct kmods_report r;
	char missing[KMODS_NAME_MAX];
	int n;

	waiting[0] = '\0';
	if (q->probe->peermem_live)
		return 0;
	/* Never the stack itself: its loader (openibd) loads it, with MOFED's API, not us. */
	if (!q->probe->stack_live || !q->probe->peer_api) {
		snprintf(waiting, size, "%s with MOFED's peer-memory API is not live (%s)",
			 RDMA_CORE,
			 q->probe->stack_live ? "the loaded one lacks it" : "none loaded");
		return 0;
	}
	if (peermem_file(q->k, q->drivers_fd, &set, e) < 0 ||
	    kmods_inspect(q->k, set.e[0].path, q->certs, q->release, &r, e) < 0)
		return err_wrap(e, "rdma");
	if (!r.ok) {
		err_set(e, r.code, "rdma: module nvidia_peermem: %s", r.verdict);
		err_hint(
			e,
			r.code == EXIT_KERNEL_REFUSED
				? "install a package built for kernel %s"
				: "sign nvidia-peermem.ko with the key of --module-cert, or pin the certificate that signed it (kernel %s)",
			q->release);
		return -1;
	}
	log_kv(LOG_INFO, "kernel", q->certs ? "module signature verified" : "module checked",
	       "module", KERNEL_PEERMEM_MODULE, "version", r.info.version, "signer",
	       r.sig.is_signed ? r.sig.signer : "unsigned", LOG_END);
	if (stack_missing(q->k, set.e[0].info.depends, missing, sizeof(missing))) {
		snprintf(waiting, size, "nvidia-peermem's dependency %s is not live", missing);
		return 0;
	}
	n = kmods_load_set(q->k, &set, q->trust, e);
	if (n < 0)
		return err_wrap(e, "rdma");
	return n > 0;
}

uint64_t kernel_rdma_stack_instance(int root_fd)
{
	struct stat st;

	if (fstatat(root_fd, "sys/module/" RDMA_CORE "/initstate", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	return (uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 40);
}

uint64_t kernel_rdma_peermem_file_id(int drivers_fd)
{
	struct stat st;

	if (fstatat(drivers_fd, KERNEL_PEERMEM_FILE ".ko", &st, 0) < 0)
		return 0;
	return (uint64_t)st.st_ino ^ ((uint64_t)st.st_mtim.tv_sec << 20) ^
	       (uint64_t)st.st_mtim.tv_nsec;
}

/*
 * Where MOFED's driver container runs (ROOT/run/mellanox/drivers exists), its stack is
 * ready once it wrote .driver-ready (gpu-driver-container ubuntu22.04/nvidia-driver:921-926
 * waits for the same file): until then openibd may still be stopping or starting it.
 */
static bool mofed_settling(int root_fd)
{
	struct stat st;

	return fstatat(root_fd, "run/mellanox/drivers", &st, 0) == 0 &&
	       fstatat(root_fd, "run/mellanox/drivers/.driver-ready", &st, 0) < 0;
}

int kernel_rdma_reload(const struct kernel_rdma_reload *rq, struct kernel_rdma_decision *ret,
		       char *waiting, size_t size, struct err *e)
{
	_cleanup_(kmods_freep) struct kmods *k = NULL;
	_cleanup_(modsig_certs_freep) struct modsig_certs *certs = NULL;
	struct kernel_rdma_probe p;
	struct ktrust trust;
	const char *release = rq->release;
	char version[64];

	waiting[0] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (rq->mode == KERNEL_RDMA_OFF)
		return 0;
	if (kmods_new(rq->root_fd, release, &k, e) < 0 ||
	    kernel_rdma_plan(&(struct kernel_rdma_plan_request){.mode = rq->mode,
								.root_fd = rq->root_fd,
								.release = release,
								.module_type = rq->module_type,
								.k = k,
								.drivers_fd = rq->drivers_fd},
			     &p, ret, e) < 0)
		return err_wrap(e, "rdma");
	/* Never while the stack is gone: its loader (openibd) loads it, not us. */
	if (rq->mode == KERNEL_RDMA_PEERMEM && !p.stack_live && !p.peermem_stub) {
		snprintf(waiting, size, "the RDMA stack is gone (%s is not live)", RDMA_CORE);
		return 0;
	}
	/* A stub package: nothing will ever load; said once by the agent, not a failure. */
	if (ret->code) {
		snprintf(waiting, size, "%s; fix: %s", ret->why, ret->fix);
		return 0;
	}
	if (ret->path != RDMA_PATH_PEERMEM || p.peermem_live)
		return 0;
	if (kmods_loaded_version(k, "nvidia", version, sizeof(version)) < 0 ||
	    strcmp(version, rq->version) != 0) {
		snprintf(waiting, size, "nvidia %s is not live", rq->version);
		return 0;
	}
	if (mofed_settling(rq->root_fd)) {
		snprintf(
			waiting, size,
			"MOFED's driver container has not made its stack ready (no /run/mellanox/drivers/.driver-ready)");
		return 0;
	}
	if (rq->hold) {
		snprintf(waiting, size, "%s", rq->hold);
		return 0;
	}
	if (rq->n_module_certs &&
	    modsig_certs_load(rq->module_certs, rq->n_module_certs, &certs, e) < 0)
		return err_wrap(e, "rdma");
	ktrust_probe(rq->root_fd, &trust);
	return kernel_rdma_load_peermem(&(struct kernel_rdma_load){.k = k,
								   .drivers_fd = rq->drivers_fd,
								   .certs = certs,
								   .release = release,
								   .trust = &trust,
								   .probe = &p},
					waiting, size, e);
}
