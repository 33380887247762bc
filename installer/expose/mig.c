// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include "expose/mig.h"
#include "host/host.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/str.h"

/*
 * Each model's GPU-instance profiles: name, the id `nvidia-smi mig -lgip` shows (NVML's
 * nvmlGpuInstanceProfileInfo_t.id) and how many instances a GPU holds, from NVIDIA's MIG
 * user guide ("Supported MIG Profiles": the A100, H100, H200 and B200 tables; its "Getting
 * Started" lists the ids 19, 20, 15, 14, 9, 5, 0 of an A100 40GB, and an H100 80GB's
 * `nvidia-smi mig -lgip` the same), as GKE's partitioner has them for the sizes it
 * creates (container-engine-accelerators, partition_gpu/partition_gpu.go,
 * partitionSizeToProfileID and partitionSizeMaxCount), plus the guide's "+me" profiles
 * (one per GPU, with the media engines), which GKE does not create. The ids of H200, B200
 * and GB200 follow the same shapes; the guide shows no `-lgip` of those, so the installer
 * takes the ids from NVML on the node, not from here (partition.c): this table is what
 * doctor explains a request with. By PCI id (pci.ids: 20b0 A100 SXM4 40GB, 20b2 A100 SXM4
 * 80GB, 2330 H100 SXM5 80GB, 2335 H200 SXM 141GB, 2901 B200, 2941 HGX GB200).
 */
static const struct mig_size a100_40[] = {
	{"1g.5gb", 19, 7}, {"1g.5gb+me", 20, 1}, {"1g.10gb", 15, 4}, {"2g.10gb", 14, 3},
	{"3g.20gb", 9, 2}, {"4g.20gb", 5, 1},	 {"7g.40gb", 0, 1},
};
static const struct mig_size a100_80[] = {
	{"1g.10gb", 19, 7}, {"1g.10gb+me", 20, 1}, {"1g.20gb", 15, 4}, {"2g.20gb", 14, 3},
	{"3g.40gb", 9, 2},  {"4g.40gb", 5, 1},	   {"7g.80gb", 0, 1},
};
static const struct mig_size h100_80[] = {
	{"1g.10gb", 19, 7}, {"1g.10gb+me", 20, 1}, {"1g.20gb", 15, 4}, {"2g.20gb", 14, 3},
	{"3g.40gb", 9, 2},  {"4g.40gb", 5, 1},	   {"7g.80gb", 0, 1},
};
static const struct mig_size h200[] = {
	{"1g.18gb", 19, 7}, {"1g.18gb+me", 20, 1}, {"1g.35gb", 15, 4}, {"2g.35gb", 14, 3},
	{"3g.71gb", 9, 2},  {"4g.71gb", 5, 1},	   {"7g.141gb", 0, 1},
};
static const struct mig_size b200[] = {
	{"1g.23gb", 19, 7}, {"1g.23gb+me", 20, 1}, {"1g.45gb", 15, 4}, {"2g.45gb", 14, 3},
	{"3g.90gb", 9, 2},  {"4g.90gb", 5, 1},	   {"7g.180gb", 0, 1},
};
static const struct mig_size gb200[] = {
	{"1g.23gb", 19, 7}, {"1g.23gb+me", 20, 1}, {"1g.47gb", 15, 4}, {"2g.47gb", 14, 3},
	{"3g.93gb", 9, 2},  {"4g.93gb", 5, 1},	   {"7g.186gb", 0, 1},
};

static const struct mig_model models[] = {
	{"A100 40GB", "nvidia-tesla-a100", {0x20b0}, a100_40, ARRAY_SIZE(a100_40)},
	{"A100 80GB", "nvidia-a100-80gb", {0x20b2}, a100_80, ARRAY_SIZE(a100_80)},
	{"H100 80GB", "nvidia-h100-80gb", {0x2330}, h100_80, ARRAY_SIZE(h100_80)},
	{"H200 141GB", "nvidia-h200-141gb", {0x2335}, h200, ARRAY_SIZE(h200)},
	{"B200", "nvidia-b200", {0x2901}, b200, ARRAY_SIZE(b200)},
	{"GB200", "nvidia-gb200", {0x2941}, gb200, ARRAY_SIZE(gb200)},
};

const struct mig_model *mig_model_of(uint16_t vendor, uint16_t device)
{
	if (vendor != 0x10de)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(models); i++)
		for (size_t j = 0; j < ARRAY_SIZE(models[i].devices) && models[i].devices[j]; j++)
			if (models[i].devices[j] == device)
				return &models[i];
	return NULL;
}

const char *mig_sharing_name(enum mig_sharing s)
{
	switch (s) {
	case MIG_SHARING_TIME:
		return "time-sharing";
	case MIG_SHARING_MPS:
		return "mps";
	case MIG_SHARING_NONE:
		break;
	}
	return "none";
}

/* O's member KEY, matched without regard to case as Go's encoding/json does; NULL if none. */
static json_object *member(json_object *o, const char *key)
{
	json_object_object_foreach(o, k, v)
	{
		if (strcasecmp(k, key) == 0)
			return v;
	}
	return NULL;
}

/* An integer member (0 when absent). Returns 0, or -1 for another type. */
static int int_member(json_object *o, const char *key, long long *ret, struct err *e)
{
	json_object *v = member(o, key);

	*ret = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return err_set(e, EXIT_USAGE, "%s: %s is not an integer", MIG_GKE_CONFIG, key);
	*ret = json_object_get_int64(v);
	return 0;
}

/* GPUSharingConfig, and the deprecated MaxTimeSharedClientsPerGPU (manager.go). */
static int parse_sharing(json_object *o, struct mig_request *r, struct err *e)
{
	json_object *sc = member(o, "GPUSharingConfig"), *st;
	long long old, max = 0;
	const char *s = "";

	if (int_member(o, "MaxTimeSharedClientsPerGPU", &old, e) < 0)
		return -1;
	if (sc && !json_object_is_type(sc, json_type_object))
		return err_set(e, EXIT_USAGE, "%s: GPUSharingConfig is not an object",
			       MIG_GKE_CONFIG);
	st = sc ? member(sc, "GPUSharingStrategy") : NULL;
	if (st && !json_object_is_type(st, json_type_string))
		return err_set(e, EXIT_USAGE, "%s: GPUSharingStrategy is not a string",
			       MIG_GKE_CONFIG);
	if (st)
		s = json_object_get_string(st);
	if (sc && int_member(sc, "MaxSharedClientsPerGPU", &max, e) < 0)
		return -1;
	if (old > 0) {
		s = "time-sharing";
		max = old;
	}
	if (strcmp(s, "time-sharing") == 0 || strcmp(s, "mps") == 0) {
		if (max <= 0 || max > 1024)
			return err_set(
				e, EXIT_USAGE,
				"%s: GPU sharing '%s' needs MaxSharedClientsPerGPU between 1 and 1024",
				MIG_GKE_CONFIG, s);
		r->sharing = s[0] == 't' ? MIG_SHARING_TIME : MIG_SHARING_MPS;
		r->max_shared_clients = (unsigned)max;
		return 0;
	}
	if (s[0])
		return err_set(e, EXIT_USAGE,
			       "%s: unknown GPUSharingStrategy '%s' (time-sharing or mps)",
			       MIG_GKE_CONFIG, s);
	if (max > 0)
		return err_set(e, EXIT_USAGE,
			       "%s: MaxSharedClientsPerGPU without a GPUSharingStrategy",
			       MIG_GKE_CONFIG);
	return 0;
}

int mig_parse_gke_config(const char *json, size_t len, struct mig_request *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	struct mig_request r = {.partition_size = ""};
	json_object *size;

	if (strlen(json) != len || !(o = json_tokener_parse(json)) ||
	    !json_object_is_type(o, json_type_object))
		return err_set(e, EXIT_USAGE, "%s is not a JSON object", MIG_GKE_CONFIG);
	size = member(o, "GPUPartitionSize");
	if (size && !json_object_is_type(size, json_type_string))
		return err_set(e, EXIT_USAGE, "%s: GPUPartitionSize is not a string",
			       MIG_GKE_CONFIG);
	if (size && str_fmt(r.partition_size, sizeof(r.partition_size), "%s",
			    json_object_get_string(size)) < 0)
		return err_set(e, EXIT_USAGE, "%s: GPUPartitionSize is too long", MIG_GKE_CONFIG);
	if (parse_sharing(o, &r, e) < 0)
		return -1;
	*ret = r;
	return 0;
}

int mig_read_gke_config(int root_fd, struct mig_request *ret, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (fs_read_file_in_root(root_fd, MIG_GKE_CONFIG, 64 << 10, &buf, &len, e) < 0)
		return err_errnum(e) == ENOENT ? (err_clear(e), 1) : -1;
	return mig_parse_gke_config(buf, len, ret, e);
}

int mig_size_for_gpu(const struct mig_request *req, uint16_t vendor, uint16_t device,
		     const struct mig_size **ret, struct err *e)
{
	const struct mig_model *m;
	char have[256] = "";
	size_t len = 0;

	*ret = NULL;
	if (!req->partition_size[0])
		return 0;
	m = mig_model_of(vendor, device);
	if (!m)
		return err_set(
			e, EXIT_USAGE,
			"GPU %04x:%04x has no MIG partition sizes known here (A100, H100, H200, B200, GB200 do)",
			vendor, device);
	for (size_t i = 0; i < m->n_sizes; i++) {
		if (strcmp(m->sizes[i].name, req->partition_size) == 0) {
			*ret = &m->sizes[i];
			return 0;
		}
		len += (size_t)snprintf(have + len, len < sizeof(have) ? sizeof(have) - len : 0,
					"%s%s", i ? ", " : "", m->sizes[i].name);
	}
	return err_set(e, EXIT_USAGE, "the %s (%s) has no MIG partition size %s; it has %s",
		       m->name, m->gke_type, req->partition_size, have);
}

int mig_mps_dir(int root_fd, const char *dir, struct err *e)
{
	char canon[PATH_MAX];

	if (hostpath_resolve(root_fd, dir, canon, sizeof(canon), e) < 0)
		return -1;
	if (strcmp(canon, dir) != 0)
		return err_set(e, EXIT_USAGE, "'%s' resolves to '%s', not a directory of MPS's own",
			       dir, canon);
	return fs_own_dir_in_root(root_fd, dir, 0755, true, e);
}
