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
#include "util/log.h"

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

/* The child's work: everything CUDA, written into R. */
static void ask(const char *lib, struct cuda_report *r)
{
	struct cuda_api a;
	cu_result res;
	void *h;

	/* Every GPU of the node is asked about, whatever the container was given. */
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

/* Reads the child's report from FD within DEADLINE (now_ns() ms). 1 on time, 0 late. */
static int read_report(int fd, int64_t deadline, struct cuda_report *r, size_t *got)
{
	while (*got < sizeof(*r)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - (int64_t)(now_ns() / 1000000);
		ssize_t n;
		int pr;

		if (left <= 0)
			return 0;
		pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
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

int cuda_probe(const char *lib, unsigned timeout_s, struct cuda_report *report, struct err *e)
{
	_cleanup_close_ int rd = -1;
	int fds[2], status = 0, on_time;
	size_t got = 0;
	pid_t pid;

	memset(report, 0, sizeof(*report));
	report->failed_device = -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "cuda: pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return err_errno(e, EXIT_UNEXPECTED, errno, "cuda: fork");
	}
	if (pid == 0) {
		struct cuda_report r = *report;

		close(fds[0]);
		ask(lib, &r);
		_exit(write(fds[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(fds[1]);
	rd = fds[0];
	on_time = read_report(rd, (int64_t)(now_ns() / 1000000) + (int64_t)timeout_s * 1000, report,
			      &got);
	if (!on_time)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!on_time) {
		err_set(e, EXIT_DRIVER_CHECK, "the CUDA check did not answer within %u s",
			timeout_s);
		err_hint(e, "a GPU or libcuda hangs: check dmesg for NVRM and Xid messages");
		return -1;
	}
	if (got != sizeof(*report) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			err_set(e, EXIT_DRIVER_CHECK, "the CUDA check died of signal %d in libcuda",
				WTERMSIG(status));
		else
			err_set(e, EXIT_DRIVER_CHECK, "the CUDA check ended without an answer");
		err_hint(
			e,
			"the installed libcuda.so.1 and the loaded kernel module must be one driver version");
		return -1;
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

int cuda_check(const struct cuda_report *r, size_t pci_gpus, const char *fabric, struct err *e)
{
	if (r->result == CUDA_SYSTEM_NOT_READY)
		return not_ready_802(r, fabric, e);
	if (r->result != 0) {
		if (r->failed_device >= 0)
			err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed on device %d: %s (%d)",
				r->call, r->failed_device, r->error[0] ? r->error : "no text",
				r->result);
		else
			err_set(e, EXIT_DRIVER_CHECK, "CUDA %s failed: %s (%d)", r->call,
				r->error[0] ? r->error : "no text", r->result);
		err_hint(
			e,
			"the kernel module and libcuda.so.1 must be one version and the GPUs healthy; check dmesg for NVRM and Xid messages");
		return -1;
	}
	if ((size_t)r->n_devices != pci_gpus) {
		err_set(e, EXIT_DRIVER_CHECK,
			"CUDA sees %d GPU(s), but %zu NVIDIA GPU(s) are on the PCI bus",
			r->n_devices, pci_gpus);
		err_hint(
			e,
			"a GPU CUDA cannot use (MIG mode with no instance, or a GPU the driver does not support): check nvidia-smi and dmesg");
		return -1;
	}
	return 0;
}
