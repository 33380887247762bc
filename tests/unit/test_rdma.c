// SPDX-License-Identifier: Apache-2.0
/*
 * GPUDirect RDMA (installer/kernel/rdma.c): the decision of each --rdma mode on each kind
 * of node, what the probe reads of a scratch host root (ib_core live, MOFED's peer-memory
 * API in /proc/kallsyms, the driver's flavour by its taint), kernel_prepare adding
 * nvidia-peermem or refusing, and the agent's reload up to the kernel: it waits while the
 * stack is gone, and verifies the file before anything is inserted. The insertion itself,
 * after ib_core, is proven on a real kernel (tests/vm, scenario rdma).
 */
#include "cmocka_prelude.h"
#include "scratch.h"
#include "testcert.h"
#include "testko.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/rdma.h"
#include "kernel/kernel.h"
#include "kernel/rdma.h"

#define RELEASE "6.1.0-57-amd64"
#define VERSION "550.90.07"

/* ---- the decision ------------------------------------------------------------ */

static struct kernel_rdma_decision decide(enum kernel_rdma m, bool live, bool tree, bool api,
					  const char *type, const char *release)
{
	/* A live stack imports dma-buf here (ib_umem_dmabuf_get); test_dmabuf asks otherwise. */
	struct kernel_rdma_probe p = {
		.stack_live = live, .stack_in_tree = tree, .peer_api = api, .dmabuf_import = live};
	struct kernel_rdma_decision d;

	snprintf(p.module_type, sizeof(p.module_type), "%s", type);
	snprintf(p.release, sizeof(p.release), "%s", release);
	kernel_rdma_decide(m, &p, &d);
	return d;
}

static void test_parse(void **state)
{
	enum kernel_rdma m = KERNEL_RDMA_OFF;

	(void)state;
	assert_int_equal(kernel_rdma_parse("peermem", &m), 0);
	assert_int_equal(m, KERNEL_RDMA_PEERMEM);
	assert_int_equal(kernel_rdma_parse("dmabuf", &m), 0);
	assert_int_equal(m, KERNEL_RDMA_DMABUF);
	assert_int_equal(kernel_rdma_parse("auto", &m), 0);
	assert_int_equal(m, KERNEL_RDMA_AUTO);
	assert_int_equal(kernel_rdma_parse("off", &m), 0);
	assert_int_equal(m, KERNEL_RDMA_OFF);
	assert_int_equal(kernel_rdma_parse("dma-buf", &m), -1);
	assert_int_equal(kernel_rdma_parse(NULL, &m), -1);
	assert_string_equal(kernel_rdma_path_name(RDMA_PATH_DMABUF), "dmabuf");
}

static void test_off(void **state)
{
	struct kernel_rdma_decision d = decide(KERNEL_RDMA_OFF, true, true, true, "open", RELEASE);

	(void)state;
	assert_int_equal(d.path, RDMA_PATH_NONE);
	assert_int_equal(d.code, 0);
}

static void test_peermem(void **state)
{
	struct kernel_rdma_decision d;

	(void)state;
	/* The stack loaded, or in the host's tree for the load to bring in first. */
	d = decide(KERNEL_RDMA_PEERMEM, true, true, false, "proprietary", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_PEERMEM);
	assert_int_equal(d.code, 0);
	/* Not live, or live without MOFED's API: it waits for the agent, never loads it. */
	d = decide(KERNEL_RDMA_PEERMEM, false, true, false, "open", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_PEERMEM);
	assert_non_null(strstr(d.why, "waits for ib_core with MOFED's peer-memory API (not"));
	d = decide(KERNEL_RDMA_PEERMEM, true, true, false, "open", RELEASE);
	assert_non_null(strstr(d.why, "waits"));
	d = decide(KERNEL_RDMA_PEERMEM, true, true, true, "open", RELEASE);
	assert_null(strstr(d.why, "waits"));
	/* No stack anywhere: a refusal, with its cause and fix. */
	d = decide(KERNEL_RDMA_PEERMEM, false, false, false, "open", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_NONE);
	assert_int_equal(d.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(d.why, "no RDMA stack"));
	assert_non_null(strstr(d.fix, "--rdma auto"));
	/* The package's nvidia-peermem a stub without the peer-memory API: refused, whatever
	 * the node, with the build's fix. */
	{
		struct kernel_rdma_probe p = {.stack_live = true,
					      .stack_in_tree = true,
					      .peer_api = true,
					      .peermem_stub = true};

		kernel_rdma_decide(KERNEL_RDMA_PEERMEM, &p, &d);
		assert_int_equal(d.code, EXIT_KERNEL_REFUSED);
		assert_non_null(strstr(d.why, "without MOFED's peer-memory API"));
		assert_non_null(strstr(d.fix, "ofa_kernel"));
		/* auto: not served, said why, no error. */
		snprintf(p.module_type, sizeof(p.module_type), "proprietary");
		kernel_rdma_decide(KERNEL_RDMA_AUTO, &p, &d);
		assert_int_equal(d.code, 0);
		assert_int_equal(d.path, RDMA_PATH_NONE);
		assert_non_null(strstr(d.why, "without MOFED's peer-memory API"));
	}
}

static void test_dmabuf(void **state)
{
	struct kernel_rdma_decision d;

	(void)state;
	d = decide(KERNEL_RDMA_DMABUF, true, true, false, "open", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_DMABUF);
	assert_int_equal(d.code, 0);
	/* Served once a stack loads: dma-buf needs nothing of ours. */
	d = decide(KERNEL_RDMA_DMABUF, false, false, false, "open", "5.12.0");
	assert_int_equal(d.path, RDMA_PATH_DMABUF);
	assert_non_null(strstr(d.why, "no RDMA stack loaded yet"));
	d = decide(KERNEL_RDMA_DMABUF, true, true, true, "proprietary", RELEASE);
	assert_int_equal(d.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(d.why, "open kernel modules"));
	assert_non_null(strstr(d.fix, "--kernel-module-type open"));
	d = decide(KERNEL_RDMA_DMABUF, true, true, true, "", RELEASE);
	assert_int_equal(d.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(d.why, "unknown flavour"));
	/* Decided by what the live stack exports, not by the release: a 5.4 kernel with a
	 * backport serves, a 6.1 whose stack lacks it does not. */
	{
		struct kernel_rdma_probe p = {.stack_live = true, .stack_in_tree = true};

		snprintf(p.module_type, sizeof(p.module_type), "open");
		snprintf(p.release, sizeof(p.release), "%s", RELEASE);
		kernel_rdma_decide(KERNEL_RDMA_DMABUF, &p, &d);
		assert_int_equal(d.code, EXIT_KERNEL_REFUSED);
		assert_non_null(strstr(d.why, "exports no ib_umem_dmabuf_get"));
		assert_non_null(strstr(d.fix, "--rdma peermem"));
		p.dmabuf_import = true;
		snprintf(p.release, sizeof(p.release), "5.4.0-150-generic");
		kernel_rdma_decide(KERNEL_RDMA_DMABUF, &p, &d);
		assert_int_equal(d.code, 0);
		assert_int_equal(d.path, RDMA_PATH_DMABUF);
	}
}

static void test_auto(void **state)
{
	struct kernel_rdma_decision d;

	(void)state;
	/* No stack loaded: nothing served, said why, never an error. */
	d = decide(KERNEL_RDMA_AUTO, false, true, false, "open", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_NONE);
	assert_int_equal(d.code, 0);
	assert_non_null(strstr(d.why, "no RDMA stack is loaded"));
	/* dma-buf first wherever it serves, even with MOFED's API there. */
	d = decide(KERNEL_RDMA_AUTO, true, true, true, "open", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_DMABUF);
	/* peermem where only it serves: MOFED's peer-memory API. */
	d = decide(KERNEL_RDMA_AUTO, true, true, true, "proprietary", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_PEERMEM);
	assert_non_null(strstr(d.why, "open kernel modules"));
	{
		/* A stack that does not import dma-buf, with MOFED's API: peermem. */
		struct kernel_rdma_probe p = {
			.stack_live = true, .stack_in_tree = true, .peer_api = true};

		snprintf(p.module_type, sizeof(p.module_type), "open");
		kernel_rdma_decide(KERNEL_RDMA_AUTO, &p, &d);
		assert_int_equal(d.path, RDMA_PATH_PEERMEM);
		assert_non_null(strstr(d.why, "ib_umem_dmabuf_get"));
	}
	/* The in-tree stack has no peer-memory API: NVIDIA's nvidia-peermem would not load. */
	d = decide(KERNEL_RDMA_AUTO, true, true, false, "proprietary", RELEASE);
	assert_int_equal(d.path, RDMA_PATH_NONE);
	assert_int_equal(d.code, 0);
	assert_non_null(strstr(d.why, "ib_register_peer_memory_client"));
}

/* ---- the probe, kernel_prepare and the reload on a scratch host ------------------ */

/*
 * drivers/NAME.ko: a relocatable object whose modinfo names its version, deps and vermagic;
 * IMPORT, when not NULL, a symbol it leaves undefined (what the kernel resolves at load).
 */
static int make_module_imports(struct scratch_fixture *f, const char *name, const char *depends,
			       const char *import)
{
	return make_ko(f->root, name, VERSION, "GPL", depends, RELEASE, import);
}

static int make_module(struct scratch_fixture *f, const char *name, const char *depends)
{
	/* nvidia-peermem built with MOFED's peer-memory API imports it, as NVIDIA's does. */
	return make_module_imports(
		f, name, depends,
		strcmp(name, "nvidia-peermem") == 0 ? "ib_register_peer_memory_client" : NULL);
}

static int setup(void **state)
{
	struct scratch_fixture *f;

	if (scratch_setup(state) < 0)
		return -1;
	f = *state;
	if (make_ko_host(f, RELEASE) < 0 ||
	    scratch_write(
		    f->fd, "proc/kallsyms",
		    "ffffffff81000000 T _stext\n0000000000000000 T ib_register_client\t[ib_core]\n") <
		    0 ||
	    make_module(f, "nvidia", "") < 0 ||
	    make_module(f, "nvidia-peermem", "nvidia,ib_core") < 0)
		return -1;
	return 0;
}

/* A module live in the scratch kernel; TAINT "P" for a proprietary one. */
static void load(struct scratch_fixture *f, const char *name, const char *version,
		 const char *taint)
{
	char p[256];

	snprintf(p, sizeof(p), "sys/module/%s/initstate", name);
	assert_int_equal(scratch_write(f->fd, p, "live\n"), 0);
	snprintf(p, sizeof(p), "sys/module/%s/refcnt", name);
	assert_int_equal(scratch_write(f->fd, p, "0\n"), 0);
	snprintf(p, sizeof(p), "sys/module/%s/holders", name);
	assert_int_equal(scratch_mkdirs(f->fd, p), 0);
	snprintf(p, sizeof(p), "sys/module/%s/taint", name);
	assert_int_equal(scratch_write(f->fd, p, taint), 0);
	if (version) {
		snprintf(p, sizeof(p), "sys/module/%s/version", name);
		assert_int_equal(scratch_write(f->fd, p, version), 0);
	}
}

static void test_probe(void **state)
{
	struct scratch_fixture *f = *state;
	struct kernel_rdma_probe p;
	struct err e;

	assert_int_equal(kernel_rdma_probe(f->fd, RELEASE, NULL, &p, &e), 0);
	assert_false(p.stack_live);
	assert_false(p.stack_in_tree); /* no modules.dep here */
	assert_false(p.peer_api);
	assert_string_equal(p.module_type, ""); /* nothing loaded: not known */
	load(f, "ib_core", NULL, "\n");
	load(f, "nvidia", VERSION, "PO\n");
	assert_int_equal(kernel_rdma_probe(f->fd, RELEASE, NULL, &p, &e), 0);
	assert_true(p.stack_live);
	assert_true(p.stack_in_tree);
	/* ib_register_client is the in-tree core's; only the peer-memory API counts. */
	assert_false(p.peer_api);
	assert_false(p.dmabuf_import);
	assert_string_equal(p.module_type, "proprietary");
	assert_int_equal(
		scratch_write(f->fd, "proc/kallsyms",
			      "0000000000000000 T ib_register_peer_memory_client_x\t[x]\n"
			      "0000000000000000 T ib_register_peer_memory_client\t[ib_core]\n"
			      "0000000000000000 T ib_umem_dmabuf_get\t[ib_uverbs]\n"),
		0);
	/* The package's (or the manifest's) flavour, when given, is the one to load. */
	assert_int_equal(kernel_rdma_probe(f->fd, RELEASE, "open", &p, &e), 0);
	assert_true(p.peer_api);
	assert_true(p.dmabuf_import);
	assert_string_equal(p.module_type, "open");
	assert_int_equal(scratch_write(f->fd, "proc/kallsyms",
				       "0000000000000000 T ib_register_peer_memory_client_x\t[x]\n"
				       "0000000000000000 T ib_umem_dmabuf_get_pages\t[ib_uverbs]\n"
				       "0000000000000000 T"),
			 0);
	assert_int_equal(kernel_rdma_probe(f->fd, RELEASE, NULL, &p, &e), 0);
	assert_false(p.peer_api);
	assert_false(p.dmabuf_import);
	/* The kernel's symbols unreadable with a stack live: an error, not "no API". */
	assert_int_equal(unlinkat(f->fd, "proc/kallsyms", 0), 0);
	assert_int_equal(kernel_rdma_probe(f->fd, RELEASE, NULL, &p, &e), -1);
	assert_non_null(strstr(e.msg, "kallsyms"));
	assert_non_null(strstr(e.hint, "/proc"));
}

static char m_nvidia[] = "nvidia";
static char *const one[] = {m_nvidia};

static int prepare(struct scratch_fixture *f, enum kernel_rdma mode, struct kernel **kn,
		   struct err *e)
{
	_cleanup_close_ int drivers = openat(f->fd, "drivers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct kernel_opts o = {.modules = one, .n_modules = 1, .rdma = mode};

	err_clear(e);
	return kernel_prepare(
		&(struct kernel_request){
			.opts = &o,
			.root_fd = f->fd,
			.drivers_fd = drivers,
			.driver = {.version = VERSION, .kernel = RELEASE, .module_type = "open"}},
		kn, e);
}

static void test_prepare_peermem(void **state)
{
	struct scratch_fixture *f = *state;
	_cleanup_(kernel_freep) struct kernel *kn = NULL, *kn2 = NULL, *kn3 = NULL;
	struct err e;

	/* No ib_core anywhere: refused before anything changes, cause and fix in one line. */
	assert_int_equal(prepare(f, KERNEL_RDMA_PEERMEM, &kn, &e), -1);
	assert_int_equal(e.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(e.msg, "no RDMA stack"));
	assert_non_null(strstr(e.hint, "--rdma auto"));
	/* auto on the same node: nothing served, no error. */
	assert_int_equal(prepare(f, KERNEL_RDMA_AUTO, &kn, &e), 0);
	assert_int_equal(kernel_rdma(kn)->path, RDMA_PATH_NONE);
	assert_non_null(strstr(kernel_rdma(kn)->why, "no RDMA stack"));
	/* The stack loaded: the package must hold nvidia-peermem (loaded after the set). */
	load(f, "ib_core", NULL, "\n");
	assert_int_equal(prepare(f, KERNEL_RDMA_PEERMEM, &kn2, &e), 0);
	assert_int_equal(kernel_rdma(kn2)->path, RDMA_PATH_PEERMEM);
	assert_int_equal(unlinkat(f->fd, "drivers/nvidia-peermem.ko", 0), 0);
	assert_int_equal(prepare(f, KERNEL_RDMA_PEERMEM, &kn3, &e), -1);
	assert_non_null(strstr(e.msg, "nvidia-peermem"));
	/* A stub nvidia-peermem (no peer-memory API imported): refused, the build's fix. */
	assert_int_equal(make_module_imports(f, "nvidia-peermem", "nvidia,ib_core", NULL), 0);
	assert_int_equal(prepare(f, KERNEL_RDMA_PEERMEM, &kn3, &e), -1);
	assert_int_equal(e.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(e.msg, "without MOFED's peer-memory API"));
	assert_non_null(strstr(e.hint, "ofa_kernel"));
	/* dmabuf: refused while the live stack exports no ib_umem_dmabuf_get; with it, the
	 * open flavour is served and nothing is added. */
	assert_int_equal(prepare(f, KERNEL_RDMA_DMABUF, &kn3, &e), -1);
	assert_int_equal(e.code, EXIT_KERNEL_REFUSED);
	assert_non_null(strstr(e.msg, "ib_umem_dmabuf_get"));
	assert_int_equal(scratch_write(f->fd, "proc/kallsyms",
				       "0000000000000000 T ib_umem_dmabuf_get\t[ib_uverbs]\n"),
			 0);
	assert_int_equal(prepare(f, KERNEL_RDMA_DMABUF, &kn3, &e), 0);
	assert_int_equal(kernel_rdma(kn3)->path, RDMA_PATH_DMABUF);
}

static const char *hold_next;

static int reload(struct scratch_fixture *f, enum kernel_rdma mode, char *const *certs,
		  size_t n_certs, char *waiting, struct err *e)
{
	_cleanup_close_ int drivers = openat(f->fd, "drivers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct kernel_rdma_decision d;

	err_clear(e);
	return kernel_rdma_reload(&(struct kernel_rdma_reload){.mode = mode,
							       .root_fd = f->fd,
							       .release = RELEASE,
							       .drivers_fd = drivers,
							       .version = VERSION,
							       .module_certs = certs,
							       .n_module_certs = n_certs,
							       .hold = hold_next},
				  &d, waiting, 256, e);
}

/* MOFED's ib_core in the scratch kernel: its peer-memory API in /proc/kallsyms. */
static void peer_api(struct scratch_fixture *f)
{
	assert_int_equal(
		scratch_write(f->fd, "proc/kallsyms",
			      "0000000000000000 T ib_register_peer_memory_client\t[ib_core]\n"),
		0);
}

static void test_reload_waits(void **state)
{
	struct scratch_fixture *f = *state;
	char waiting[256];
	struct err e;

	/* The driver not loaded at the installed version: nothing. */
	load(f, "ib_core", NULL, "\n");
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "nvidia " VERSION " is not live"));
	load(f, "nvidia", "535.261.03", "\n");
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "is not live"));
	/* The stack gone (openibd restarting it): never loaded then, neither it nor ours. */
	load(f, "nvidia", VERSION, "\n");
	assert_int_equal(scratch_write(f->fd, "sys/module/ib_core/initstate", "going\n"), 0);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "RDMA stack is gone"));
	/* auto: without a stack the path is none, nothing to wait for. */
	assert_int_equal(reload(f, KERNEL_RDMA_AUTO, NULL, 0, waiting, &e), 0);
	assert_string_equal(waiting, "");
	/* Back, but the in-tree core, without MOFED's peer-memory API: NVIDIA's nvidia-peermem
	 * would fail its init, so it waits for openibd's stack. */
	load(f, "ib_core", NULL, "\n");
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "peer-memory API is not live (the loaded one lacks it)"));
	peer_api(f);
	/* Back with it, but a module peermem needs besides it (MOFED's) is not: waiting. */
	assert_int_equal(make_module(f, "nvidia-peermem", "nvidia,ib_core,ib_peer_mem"), 0);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "ib_peer_mem is not live"));
	/* nvidia_peermem live already: nothing to do. */
	load(f, "nvidia_peermem", VERSION, "\n");
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_string_equal(waiting, "");
	/* off: nothing, ever. */
	assert_int_equal(reload(f, KERNEL_RDMA_OFF, NULL, 0, waiting, &e), 0);
	/* A stub package (built without the API): never loaded, said with the fix, no error. */
	assert_int_equal(scratch_write(f->fd, "sys/module/nvidia_peermem/initstate", "going\n"), 0);
	assert_int_equal(make_module_imports(f, "nvidia-peermem", "nvidia,ib_core", NULL), 0);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, NULL, 0, waiting, &e), 0);
	assert_non_null(strstr(waiting, "built without MOFED's peer-memory API"));
	assert_non_null(strstr(waiting, "ofa_kernel"));
}

static void test_reload_verifies(void **state)
{
	struct scratch_fixture *f = *state;
	char cert[512], waiting[256];
	char *certs[1] = {cert};
	struct err e;

	/* Everything due, but the file carries no signature of the pinned certificate:
	 * refused before the kernel sees it. */
	snprintf(cert, sizeof(cert), "%s/mod.crt", f->root);
	make_cert(cert);
	load(f, "ib_core", NULL, "\n");
	load(f, "nvidia", VERSION, "\n");
	peer_api(f);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, certs, 1, waiting, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	assert_non_null(strstr(e.msg, "nvidia_peermem"));
	assert_non_null(strstr(e.hint, "--module-cert"));
}

/* The agent's debounce and back-off (agent_rdma_hold), and what the reload holds for. */
static void test_reload_holds(void **state)
{
	struct scratch_fixture *f = *state;
	struct agent_rdma r;
	char cert[512], waiting[256];
	char *certs[1] = {cert};
	uint64_t first, second;
	struct err e;
	int drivers;

	agent_rdma_init(&r);
	/* No stack: held, and no instance. */
	assert_int_equal(kernel_rdma_stack_instance(f->fd), 0);
	assert_non_null(agent_rdma_hold(&r, 0, 7));
	/* A stack seen once: held; the same one at the next look: due. */
	load(f, "ib_core", NULL, "\n");
	first = kernel_rdma_stack_instance(f->fd);
	assert_true(first != 0);
	assert_non_null(strstr(agent_rdma_hold(&r, first, 7), "new at this look"));
	assert_null(agent_rdma_hold(&r, first, 7));
	/* openibd restarted it between two looks: a new instance, held again. */
	/* (kernfs numbers a new directory anew; here the old file stays, so no inode reuse) */
	assert_int_equal(
		renameat(f->fd, "sys/module/ib_core/initstate", f->fd, "sys/module/ib_core.old"),
		0);
	load(f, "ib_core", NULL, "\n");
	second = kernel_rdma_stack_instance(f->fd);
	assert_true(second != first);
	assert_non_null(agent_rdma_hold(&r, second, 7));
	assert_null(agent_rdma_hold(&r, second, 7));
	/* After a kernel refusal: held while the stack and the file are the same. */
	r.refused = true;
	r.refused_instance = second;
	r.refused_file = 7;
	assert_non_null(strstr(agent_rdma_hold(&r, second, 7), "refused"));
	assert_null(agent_rdma_hold(&r, second, 8)); /* a new file: tried again */
	assert_false(r.refused);

	/* The reload: everything due, but held, or MOFED's container not ready: nothing. */
	load(f, "nvidia", VERSION, "\n");
	peer_api(f);
	snprintf(cert, sizeof(cert), "%s/mod.crt", f->root);
	make_cert(cert);
	hold_next = "held for the test";
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, certs, 1, waiting, &e), 0);
	assert_string_equal(waiting, "held for the test");
	hold_next = NULL;
	assert_int_equal(scratch_mkdirs(f->fd, "run/mellanox/drivers"), 0);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, certs, 1, waiting, &e), 0);
	assert_non_null(strstr(waiting, ".driver-ready"));
	/* Ready: on to the file's check (unsigned here: refused before the kernel). */
	assert_int_equal(scratch_write(f->fd, "run/mellanox/drivers/.driver-ready", ""), 0);
	assert_int_equal(reload(f, KERNEL_RDMA_PEERMEM, certs, 1, waiting, &e), -1);
	assert_int_equal(e.code, EXIT_VERIFY);
	drivers = openat(f->fd, "drivers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(kernel_rdma_peermem_file_id(drivers) != 0);
	close(drivers);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_peermem),
		cmocka_unit_test(test_dmabuf),
		cmocka_unit_test(test_auto),
		cmocka_unit_test_setup_teardown(test_probe, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_prepare_peermem, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_reload_waits, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_reload_verifies, setup, scratch_teardown),
		cmocka_unit_test_setup_teardown(test_reload_holds, setup, scratch_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
