// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expose/cuda.h"
#include "util/cleanup.h"
#include "util/dlbind.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

/* The slice of the CUDA driver API we call, declared here: no CUDA header is needed. */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;

struct cuda_api {
	cu_result (*init)(unsigned);
	cu_result (*driver_version)(int *);
	cu_result (*count)(int *);
	cu_result (*get)(cu_device *, int);
	cu_result (*bus_id)(char *, int, cu_device);
	cu_result (*ctx_create)(cu_context *, unsigned, cu_device);
	cu_result (*ctx_destroy)(cu_context);
	cu_result (*error_name)(cu_result, const char **);
	cu_result (*error_string)(cu_result, const char **);
};

static int resolve(void *h, struct cuda_api *a, struct cuda_report *r)
{
	static const struct dlbind_sym syms[] = {
		{"cuInit", offsetof(struct cuda_api, init)},
		{"cuDriverGetVersion", offsetof(struct cuda_api, driver_version)},
		{"cuDeviceGetCount", offsetof(struct cuda_api, count)},
		{"cuDeviceGet", offsetof(struct cuda_api, get)},
		{"cuDeviceGetPCIBusId", offsetof(struct cuda_api, bus_id)},
		{"cuCtxCreate_v2", offsetof(struct cuda_api, ctx_create)},
		{"cuCtxDestroy_v2", offsetof(struct cuda_api, ctx_destroy)},
		{"cuGetErrorName", offsetof(struct cuda_api, error_name)},
		{"cuGetErrorString", offsetof(struct cuda_api, error_string)},
	};
	const char *missing = dlbind(h, syms, ARRAY_SIZE(syms), a);

	if (missing) {
		snprintf(r->call, sizeof(r->call), "dlsym");
		snprintf(r->error, sizeof(r->error), "libcuda.so.1 lacks %s", missing);
		return -1;
	}
	return 0;
}

/* Records a failed call: R->result, the call, and libcuda's own name and text for it. */
static int failed(const struct cuda_api *a, struct cuda_report *r, cu_result res, const char *call,
		  int device)
{
	const char *name = NULL, *text = NULL;

	r->result = res;
	r->failed_device = device;
	snprintf(r->call, sizeof(r->call), "%s", call);
	if (a->error_name(res, &name) != 0)
		name = NULL;
	if (a->error_string(res, &text) != 0)
		text = NULL;
	snprintf(r->error, sizeof(r->error), "%s%s%s", name ? name : "", name && text ? ": " : "",
		 text ? text : "");
	return -1;
}

static int ask_device(const struct cuda_api *a, struct cuda_report *r, int i)
{
	cu_context ctx;
	cu_device dev;
	cu_result res;

	if ((res = a->get(&dev, i)) != 0)
		return failed(a, r, res, "cuDeviceGet", i);
	if ((res = a->bus_id(r->bdf[i], (int)sizeof(r->bdf[i]), dev)) != 0)
		return failed(a, r, res, "cuDeviceGetPCIBusId", i);
	for (char *p = r->bdf[i]; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if ((res = a->ctx_create(&ctx, 0, dev)) != 0)
		return failed(a, r, res, "cuCtxCreate", i);
	if ((res = a->ctx_destroy(ctx)) != 0)
		return failed(a, r, res, "cuCtxDestroy", i);
	return 0;
}

/* The child's work: everything CUDA, written into R (R->visible says which devices). */
static void ask(const char *lib, struct cuda_report *r)
{
	struct cuda_api a;
	cu_result res;
	void *h;

	/* The devices the report names, whatever the container was given. */
	if (r->visible[0])
		setenv("CUDA_VISIBLE_DEVICES", r->visible, 1);
	else
		unsetenv("CUDA_VISIBLE_DEVICES");
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		r->result = -1;
		snprintf(r->call, sizeof(r->call), "dlopen");
		snprintf(r->error, sizeof(r->error), "%s", dlerror());
		return;
	}
	if (resolve(h, &a, r) < 0) {
		r->result = -1;
		return;
	}
	if ((res = a.init(0)) != 0) {
		failed(&a, r, res, "cuInit", -1);
		return;
	}
	if ((res = a.driver_version(&r->driver_version)) != 0) {
		failed(&a, r, res, "cuDriverGetVersion", -1);
		return;
	}
	if ((res = a.count(&r->n_devices)) != 0) {
		failed(&a, r, res, "cuDeviceGetCount", -1);
		return;
	}
	for (int i = 0; i < r->n_devices && i < CUDA_MAX_GPUS; i++) {
		if (ask_device(&a, r, i) < 0)
			return;
	}
}

/*
 * Reads the child's report from FD within DEADLINE (now_ns() ms). 1 on time, 0 late or
 * stopped by SIGTERM or SIGINT (interrupt_ends_waits(): poll is never restarted, and one
 * kept blocked by the agent's loop is seen at the next slice).
 */
static int read_report(int fd, int64_t deadline, struct cuda_report *r, size_t *got)
{
	while (*got < sizeof(*r)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - (int64_t)(now_ns() / 1000000);
		ssize_t n;
		int pr;

		if (left <= 0 || interrupt_ends_waits())
			return 0;
		pr = poll(&p, 1, (int)(left > 100 ? 100 : left));
		if (pr < 0 && errno != EINTR)
			return 1;
		if (pr <= 0)
			continue;
		n = read(fd, (char *)r + *got, sizeof(*r) - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1; /* the child is gone: judged by its status */
		*got += (size_t)n;
	}
	return 1;
}

/* One child asking CUDA: its pid, the read end of its pipe, when it must have answered. */
struct probe {
	pid_t pid;
	int fd;
	int64_t deadline_ms;
};

/* Starts a child asking what ASK says (its visible, what and expect). Returns 0 or -1. */
static int probe_start(const char *lib, const struct cuda_report *ask_r, unsigned timeout_s,
		       struct probe *p, struct err *e)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cuda: pipe");
	p->pid = fork();
	if (p->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return err_errno(e, EXIT_UNEXPECTED, errno, "cuda: fork");
	}
	if (p->pid == 0) {
		struct cuda_report r = *ask_r;

		close(fds[0]);
		ask(lib, &r);
		_exit(write(fds[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(fds[1]);
	p->fd = fds[0];
	p->deadline_ms = (int64_t)(now_ns() / 1000000) + (int64_t)timeout_s * 1000;
	return 0;
}

/* A child no longer waited for: killed and reaped. */
static void probe_abandon(struct probe *p)
{
	kill(p->pid, SIGKILL);
	while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
		;
	close(p->fd);
}

/*
 * Waits for P's answer into REPORT (which holds what was asked: the child's copy of it comes
 * back). Returns 0, or -1 when the child did not answer in TIMEOUT_S or died.
 */
static int probe_finish(struct probe *p, unsigned timeout_s, struct cuda_report *report,
			struct err *e)
{
	char what[sizeof(report->what) + 8] = "";
	int status = 0, on_time;
	size_t got = 0;

	if (report->what[0])
		snprintf(what, sizeof(what), " of %s", report->what);
	on_time = read_report(p->fd, p->deadline_ms, report, &got);
	if (!on_time)
		kill(p->pid, SIGKILL);
	while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	close(p->fd);
	if (!on_time && interrupt_ends_waits() &&
	    interrupt_check(e, "the end of the CUDA check") < 0)
		return -1;
	if (!on_time) {
		err_set(e, EXIT_DRIVER_CHECK, "the CUDA check%s did not answer within %u s", what,
			timeout_s);
		err_hint(e, "a GPU or libcuda hangs: check dmesg for NVRM and Xid messages");
		return -1;
	}
	if (got != sizeof(*report) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			err_set(e, EXIT_DRIVER_CHECK,
				"the CUDA check%s died of signal %d in libcuda", what,
				WTERMSIG(status));
		else
			err_set(e, EXIT_DRIVER_CHECK, "the CUDA check%s ended without an answer",
				what);
		err_hint(
			e,
			"the installed libcuda.so.1 and the loaded kernel module must be one driver version");
		return -1;
	}
	return 0;
}

int cuda_probe(const char *lib, const char *visible, unsigned timeout_s, struct cuda_report *report,
	       struct err *e)
{
	struct probe p;

	memset(report, 0, sizeof(*report));
	report->failed_device = -1;
	if (visible && str_fmt(report->visible, sizeof(report->visible), "%s", visible) < 0)
		return err_set(e, EXIT_UNEXPECTED, "cuda: CUDA_VISIBLE_DEVICES too long");
	if (probe_start(lib, report, timeout_s, &p, e) < 0)
		return -1;
	return probe_finish(&p, timeout_s, report, e);
}

void cuda_plan_node(const struct nvml_report *nv, struct cuda_plan *ret)
{
	bool mig_on = false;
	size_t len = 0;

	memset(ret, 0, sizeof(*ret));
	for (unsigned i = 0; i < nv->n_gpus; i++)
		mig_on |= nv->gpus[i].mig_mode == 1;
	for (unsigned i = 0; i < nv->n_gpus; i++) {
		bool has_migs = false;

		if (nv->gpus[i].mig_mode != 1) {
			ret->whole++;
			/* Beside a GPU in MIG mode, unset would enumerate a MIG device too. */
			if (mig_on && len < sizeof(ret->whole_visible))
				len += (size_t)snprintf(ret->whole_visible + len,
							sizeof(ret->whole_visible) - len, "%s%s",
							len ? "," : "", nv->gpus[i].uuid);
			continue;
		}
		for (unsigned k = 0; k < nv->n_migs && !has_migs; k++)
			has_migs = nv->migs[k].gpu == i;
		ret->idle += !has_migs;
	}
	ret->migs = nv->n_migs;
	ret->n = (ret->whole > 0) + ret->migs;
}

void cuda_plan_ask(const struct nvml_report *nv, const struct cuda_plan *p, unsigned k,
		   struct cuda_report *ret)
{
	const struct part_mig *m;

	memset(ret, 0, sizeof(*ret));
	ret->failed_device = -1;
	if (p->whole > 0 && k == 0) {
		memcpy(ret->visible, p->whole_visible, sizeof(ret->visible));
		ret->expect = (int)p->whole;
		return;
	}
	m = &nv->migs[k - (p->whole > 0)];
	snprintf(ret->visible, sizeof(ret->visible), "%s", m->uuid);
	snprintf(ret->what, sizeof(ret->what),
		 "MIG device %.60s (GPU %u, %.31s, GPU instance %u, compute instance %u)", m->uuid,
		 m->gpu, m->profile, m->gi, m->ci);
	ret->expect = 1;
}

int cuda_probe_node(const char *lib, const struct nvml_report *nv, unsigned timeout_s,
		    struct cuda_plan *ret, struct cuda_report *ret_last, struct err *e)
{
	struct probe run[CUDA_PROBES_AT_ONCE];
	struct cuda_report got[CUDA_PROBES_AT_ONCE];

	cuda_plan_node(nv, ret);
	memset(ret_last, 0, sizeof(*ret_last));
	ret_last->failed_device = -1;
	/* A few at a time, each within its own time; the first that fails ends the check. */
	for (unsigned k = 0; k < ret->n; k += CUDA_PROBES_AT_ONCE) {
		unsigned n = ret->n - k < CUDA_PROBES_AT_ONCE ? ret->n - k : CUDA_PROBES_AT_ONCE;

		for (unsigned i = 0; i < n; i++) {
			cuda_plan_ask(nv, ret, k + i, &got[i]);
			if (probe_start(lib, &got[i], timeout_s, &run[i], e) < 0) {
				while (i > 0)
					probe_abandon(&run[--i]);
				return -1;
			}
		}
		for (unsigned i = 0; i < n; i++) {
			bool bad;

			if (probe_finish(&run[i], timeout_s, &got[i], e) < 0) {
				while (++i < n)
					probe_abandon(&run[i]);
				return -1;
			}
			*ret_last = got[i];
			bad = got[i].result != 0 || got[i].n_devices != got[i].expect;
			if (bad) {
				while (++i < n)
					probe_abandon(&run[i]);
				return 0;
			}
		}
	}
	return 0;
}

static int not_ready_802(const struct cuda_report *r, const char *fabric, struct err *e)
{
	if (fabric) {
		err_set(e, EXIT_DRIVER_CHECK,
			"CUDA is not ready (%s returned 802, %s): this node has %s and its NVLink fabric is not trained",
			r->call, r->error[0] ? r->error : "system not yet initialized", fabric);
		err_hint(
			e,
			"Fabric Manager (nv-fabricmanager) of the driver's own version must run and finish training the fabric (on NVLink 5, after NVLSM); see its log");
		return -1;
	}
	err_set(e, EXIT_DRIVER_CHECK, "CUDA is not ready (%s returned 802, %s)", r->call,
		r->error[0] ? r->error : "system not yet initialized");
	err_hint(
		e,
		"this node shows no NVSwitch (none on the PCI bus, no NVLink 5 management port): check dmesg for NVRM errors");
	return -1;
}

/* A call failed: named with the device (an ordinal, or the MIG device asked). */
static int call_failed(const struct cuda_report *r, struct err *e)
{
	const char *text = r->error[0] ? r->error : "no text";

	if (r->what[0])
		err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed on %s: %s (%d)", r->call, r->what,
			text, r->result);
	else if (r->failed_device >= 0 && r->failed_device < CUDA_MAX_GPUS &&
		 r->bdf[r->failed_device][0])
		err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed on device %d (%s): %s (%d)", r->call,
			r->failed_device, r->bdf[r->failed_device], text, r->result);
	else if (r->failed_device >= 0)
		err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed on device %d: %s (%d)", r->call,
			r->failed_device, text, r->result);
	else
		err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed: %s (%d)", r->call, text, r->result);
	err_hint(
		e,
		"the kernel module and libcuda.so.1 must be one version and the GPUs healthy; check dmesg for NVRM and Xid messages");
	return -1;
}

int cuda_check(const struct cuda_report *r, const char *fabric, struct err *e)
{
	if (r->result == CUDA_SYSTEM_NOT_READY)
		return not_ready_802(r, fabric, e);
	if (r->result != 0)
		return call_failed(r, e);
	if (r->n_devices == r->expect)
		return 0;
	if (r->what[0])
		err_set(e, EXIT_DRIVER_CHECK, "CUDA sees %d device(s), not 1, asked for %s",
			r->n_devices, r->what);
	else if (r->visible[0])
		err_set(e, EXIT_DRIVER_CHECK,
			"CUDA sees %d of the %d GPU(s) outside MIG mode (CUDA_VISIBLE_DEVICES=%s)",
			r->n_devices, r->expect, r->visible);
	else
		err_set(e, EXIT_DRIVER_CHECK,
			"CUDA sees %d GPU(s), but %d NVIDIA GPU(s) are on the PCI bus",
			r->n_devices, r->expect);
	err_hint(
		e,
		"a GPU CUDA cannot use though NVML sees it (one the driver does not support, or a reset pending): check nvidia-smi and dmesg");
	return -1;
}
