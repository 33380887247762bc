// SPDX-License-Identifier: Apache-2.0
/*
 * Verification against the driver: the installed libnvidia-ml.so.1, loaded
 * with dlopen, must initialise, report the installed version and see every
 * GPU on the PCI bus. What it reports (names, UUIDs, memory, compute
 * capability, CUDA version) feeds the CDI spec and the node labels.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expose/expose.h"
#include "expose/partition.h"
#include "util/dlbind.h"
#include "util/log.h"

/* The slice of NVML's ABI we use, declared here: no NVML header is needed to build. */
typedef int nvml_ret;
typedef void *nvml_device;
struct nvml_memory {
	unsigned long long total, free, used;
};
/* nvmlGpuFabricInfo_t as 535's nvml.h lays it out (28 bytes). */
struct nvml_fabric_info {
	char cluster_uuid[16];
	nvml_ret status;
	unsigned partition_id;
	unsigned char state;
};

struct nvml_api {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*error_string)(nvml_ret);
	nvml_ret (*driver_version)(char *, unsigned);
	nvml_ret (*cuda_version)(int *);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*by_index)(unsigned, nvml_device *);
	nvml_ret (*name)(nvml_device, char *, unsigned);
	nvml_ret (*uuid)(nvml_device, char *, unsigned);
	nvml_ret (*minor)(nvml_device, unsigned *);
	nvml_ret (*memory)(nvml_device, struct nvml_memory *);
	nvml_ret (*compute)(nvml_device, int *, int *);
	/* Optional: NULL in a library older than R525. */
	nvml_ret (*fabric)(nvml_device, struct nvml_fabric_info *);
	/* MIG's calls; NULL in a library without them. */
	struct part_api *mig;
};

const char *nvml_fabric_state_name(int state)
{
	switch (state) {
	case NVML_FABRIC_NOT_SUPPORTED:
		return "not supported";
	case NVML_FABRIC_NOT_STARTED:
		return "not started";
	case NVML_FABRIC_IN_PROGRESS:
		return "in progress";
	case NVML_FABRIC_COMPLETED:
		return "completed";
	default:
		return "unknown";
	}
}

static int resolve(void *h, struct nvml_api *a, struct err *e)
{
	static const struct dlbind_sym syms[] = {
		{"nvmlInit_v2", offsetof(struct nvml_api, init)},
		{"nvmlShutdown", offsetof(struct nvml_api, shutdown)},
		{"nvmlErrorString", offsetof(struct nvml_api, error_string)},
		{"nvmlSystemGetDriverVersion", offsetof(struct nvml_api, driver_version)},
		{"nvmlSystemGetCudaDriverVersion_v2", offsetof(struct nvml_api, cuda_version)},
		{"nvmlDeviceGetCount_v2", offsetof(struct nvml_api, count)},
		{"nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml_api, by_index)},
		{"nvmlDeviceGetName", offsetof(struct nvml_api, name)},
		{"nvmlDeviceGetUUID", offsetof(struct nvml_api, uuid)},
		{"nvmlDeviceGetMinorNumber", offsetof(struct nvml_api, minor)},
		{"nvmlDeviceGetMemoryInfo", offsetof(struct nvml_api, memory)},
		{"nvmlDeviceGetCudaComputeCapability", offsetof(struct nvml_api, compute)},
	};
	const char *missing = dlbind(h, syms, ARRAY_SIZE(syms), a);

	if (missing)
		return err_set(e, EXIT_DRIVER_CHECK, "libnvidia-ml.so.1 lacks %s", missing);
	*(void **)&a->fabric = dlsym(h, "nvmlDeviceGetGpuFabricInfo");
	a->mig = partition_bind(h);
	return 0;
}

static int failed(const struct nvml_api *a, nvml_ret r, const char *what, struct err *e)
{
	return err_set(e, EXIT_DRIVER_CHECK, "NVML %s failed: %s (%d)", what, a->error_string(r),
		       r);
}

static int query_gpu(const struct nvml_api *a, unsigned i, struct nvml_report *rep, struct err *e)
{
	struct nvml_gpu *g = &rep->gpus[i];
	struct part_gpu mig = {.migs = rep->migs + rep->n_migs, .max = NVML_MAX_MIGS - rep->n_migs};
	struct nvml_memory mem;
	nvml_device d;
	nvml_ret r;

	if ((r = a->by_index(i, &d)) != 0)
		return failed(a, r, "nvmlDeviceGetHandleByIndex", e);
	if ((r = a->name(d, g->name, sizeof(g->name))) != 0 ||
	    (r = a->uuid(d, g->uuid, sizeof(g->uuid))) != 0 || (r = a->minor(d, &g->minor)) != 0 ||
	    (r = a->memory(d, &mem)) != 0 || (r = a->compute(d, &g->cc_major, &g->cc_minor)) != 0)
		return failed(a, r, "device query", e);
	g->memory_mib = mem.total >> 20;
	mig.total_bytes = mem.total;
	g->fabric_state = NVML_FABRIC_UNKNOWN;
	g->fabric_status = 0;
	if (a->fabric) {
		struct nvml_fabric_info f;

		memset(&f, 0, sizeof(f));
		/*
		 * A GPU without a fabric answers NVML_ERROR_NOT_SUPPORTED: no fabric to wait for.
		 */
		if (a->fabric(d, &f) == 0 && f.state <= NVML_FABRIC_COMPLETED) {
			g->fabric_state = f.state;
			g->fabric_status = f.status;
		} else {
			g->fabric_state = NVML_FABRIC_NOT_SUPPORTED;
		}
	}
	partition_query_gpu(a->mig, d, i, &mig);
	g->mig_mode = mig.mode;
	g->mig_pending = mig.pending;
	rep->n_migs += mig.n;
	return 0;
}

static int query(const struct nvml_api *a, struct nvml_report *rep, struct err *e)
{
	nvml_ret r;

	if ((r = a->driver_version(rep->driver_version, sizeof(rep->driver_version))) != 0)
		return failed(a, r, "nvmlSystemGetDriverVersion", e);
	if ((r = a->cuda_version(&rep->cuda_version)) != 0)
		return failed(a, r, "nvmlSystemGetCudaDriverVersion", e);
	if ((r = a->count(&rep->n_gpus)) != 0)
		return failed(a, r, "nvmlDeviceGetCount", e);
	if (rep->n_gpus > NVML_MAX_GPUS)
		rep->n_gpus = NVML_MAX_GPUS;
	for (unsigned i = 0; i < rep->n_gpus; i++) {
		if (query_gpu(a, i, rep, e) < 0)
			return -1;
	}
	return 0;
}

int nvml_query(const char *lib, struct nvml_report *rep, struct err *e)
{
	struct nvml_api a;
	void *h;
	nvml_ret r;
	int rc;

	memset(rep, 0, sizeof(*rep));
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err_set(e, EXIT_DRIVER_CHECK, "cannot load %s: %s", lib, dlerror());
		err_hint(
			e,
			"the package's lib64/ must hold libnvidia-ml.so.1 built for this architecture");
		return -1;
	}
	memset(&a, 0, sizeof(a));
	if (resolve(h, &a, e) < 0) {
		free(a.mig);
		dlclose(h);
		return -1;
	}
	if ((r = a.init()) != 0) {
		failed(&a, r, "initialisation", e);
		err_hint(
			e,
			"the kernel module and the user-space libraries must be the same version and /dev/nvidiactl must exist; see dmesg");
		free(a.mig);
		dlclose(h);
		return -1;
	}
	rc = query(&a, rep, e);
	a.shutdown();
	free(a.mig);
	dlclose(h);
	return rc;
}

int nvml_check(const struct nvml_report *r, const char *version, size_t pci_gpus, struct err *e)
{
	if (strcmp(r->driver_version, version) != 0) {
		err_set(e, EXIT_DRIVER_CHECK,
			"NVML reports driver %s, but %s is installed: the loaded kernel module is another version",
			r->driver_version, version);
		err_hint(e, "drain the node and re-run, or reboot, so that the %s modules load",
			 version);
		return -1;
	}
	if (r->n_gpus != pci_gpus) {
		err_set(e, EXIT_DRIVER_CHECK,
			"NVML sees %u GPU(s), but %zu NVIDIA GPU(s) are on the PCI bus", r->n_gpus,
			pci_gpus);
		err_hint(
			e,
			"a GPU the driver does not initialise: check dmesg for NVRM errors, and that this driver version supports every GPU");
		return -1;
	}
	return 0;
}
