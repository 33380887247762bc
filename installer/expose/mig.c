// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "expose/mig.h"
#include "host/host.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/jtext.h"
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

/*
 * gpu_config.json as GKE's device plugin decodes it: Go's encoding/json into its GPUConfig
 * (container-engine-accelerators, pkg/gpu/nvidia/manager.go). Go's decoder
 * (src/encoding/json/decode.go, decodeState.object) takes the members in the order of the
 * text and stores each in the field its key names, exactly or under case folding
 * (fields.byExactName, else fields.byFoldedName[foldName(key)]): a later key for a field
 * overwrites an earlier one, whatever its case. null leaves a string, number or struct as it
 * is (decodeState.literalStore), and an object for a struct field is decoded into the struct
 * already there, field by field. json-c keeps one value per key, a later duplicate's at the
 * first one's place, so the members are walked here in the text's order, by JSON's grammar
 * (RFC 8259, which Go's scanner follows: no single quotes, comments or NaN, which json-c
 * takes; util/jtext.h), and only each value read is handed to json-c.
 */
#define GO_JSON_DEPTH_MAX 64 /* brackets open at once inside the outermost object */

/* One member as the text has it: the key decoded, the value's text. */
struct go_member {
	const char *key;
	size_t key_len;
	const char *value, *value_end;
};

typedef int (*go_member_fn)(const struct go_member *m, void *arg, struct err *e);

/* The text P..END parsed by json-c (a value the walk found well-formed); NULL on ENOMEM. */
static json_object *parse_text(const char *p, const char *end)
{
	_cleanup_free_ char *s = strndup(p, (size_t)(end - p));

	return s ? json_tokener_parse(s) : NULL;
}

/*
 * Calls FN for each member of the object at P, up to END, in the order of the text,
 * duplicates and all. Returns 0, -1 (EXIT_USAGE) where the text is not JSON as Go reads it,
 * or FN's -1.
 */
static int each_member(const char *p, const char *end, go_member_fn fn, void *arg, struct err *e)
{
	struct jtext_member jm;
	struct jtext_walk w;
	const char *after;
	int r;

	/* The whole text first: Go's decoder checks it all before it stores a field. */
	p = jtext_ws(p, end);
	if (p >= end || *p != '{' || !(after = jtext_value(p, end, GO_JSON_DEPTH_MAX + 1)) ||
	    jtext_ws(after, end) != end || jtext_walk_start(&w, p, end) < 0)
		return err_set(e, EXIT_USAGE, "%s is not a JSON object", MIG_GKE_CONFIG);
	while ((r = jtext_walk_member(&w, GO_JSON_DEPTH_MAX, &jm)) > 0) {
		_cleanup_(json_object_putp) json_object *k = NULL;
		struct go_member m;

		k = parse_text(jm.key.p, jm.key.end);
		if (!k || !json_object_is_type(k, json_type_string))
			return err_set(e, EXIT_UNEXPECTED, "%s: a key cannot be read",
				       MIG_GKE_CONFIG);
		m.key = json_object_get_string(k);
		m.key_len = (size_t)json_object_get_string_len(k);
		m.value = jm.value.p;
		m.value_end = jm.value.end;
		if (fn(&m, arg, e) < 0)
			return -1;
	}
	return r < 0 ? err_set(e, EXIT_USAGE, "%s is not a JSON object", MIG_GKE_CONFIG) : 0;
}

/*
 * Whether KEY names the field NAME (ASCII letters) as Go's decoder matches it: ASCII letters
 * in either case, and the two runes outside ASCII whose case folding is an ASCII letter,
 * U+017F (long s) for S and U+212A (Kelvin sign) for K (src/encoding/json/fold.go:
 * foldName, and equalFoldRight before Go 1.21).
 */
static bool go_key_is(const struct go_member *m, const char *name)
{
	const unsigned char *k = (const unsigned char *)m->key, *end = k + m->key_len;

	for (; *name; name++) {
		char up = (char)toupper((unsigned char)*name);

		if (k < end && *k < 0x80 && toupper(*k) == up) {
			k++;
		} else if (up == 'S' && end - k >= 2 && k[0] == 0xc5 && k[1] == 0xbf) {
			k += 2;
		} else if (up == 'K' && end - k >= 3 && k[0] == 0xe2 && k[1] == 0x84 &&
			   k[2] == 0xaa) {
			k += 3;
		} else {
			return false;
		}
	}
	return k == end;
}

static bool is_null(const struct go_member *m)
{
	return m->value_end - m->value == 4 && memcmp(m->value, "null", 4) == 0;
}

/* A string field NAME into BUF (SIZE), as Go stores it: null changes nothing. */
static int go_string(const struct go_member *m, const char *name, char *buf, size_t size,
		     struct err *e)
{
	_cleanup_(json_object_putp) json_object *v = NULL;

	if (is_null(m))
		return 0;
	if (*m->value != '"')
		return err_set(e, EXIT_USAGE, "%s: %s is not a string", MIG_GKE_CONFIG, name);
	v = parse_text(m->value, m->value_end);
	if (!v)
		return err_set(e, EXIT_UNEXPECTED, "%s: %s cannot be read", MIG_GKE_CONFIG, name);
	if (str_fmt(buf, size, "%s", json_object_get_string(v)) < 0)
		return err_set(e, EXIT_USAGE, "%s: %s is too long", MIG_GKE_CONFIG, name);
	return 0;
}

/* An int field NAME into *RET, as Go stores it (strconv.ParseInt of the number's text). */
static int go_int(const struct go_member *m, const char *name, long long *ret, struct err *e)
{
	char text[32], *stop;
	size_t n = (size_t)(m->value_end - m->value);
	long long v;

	if (is_null(m))
		return 0;
	if (n >= sizeof(text) || strcspn(m->value, ".eE\"tfn{[") < n)
		return err_set(e, EXIT_USAGE, "%s: %s is not an integer", MIG_GKE_CONFIG, name);
	memcpy(text, m->value, n);
	text[n] = '\0';
	errno = 0;
	v = strtoll(text, &stop, 10);
	if (errno || *stop)
		return err_set(e, EXIT_USAGE, "%s: %s is not an integer", MIG_GKE_CONFIG, name);
	*ret = v;
	return 0;
}

/* What gpu_config.json says, as Go's GPUConfig holds it once decoded. */
struct gke_config {
	char partition_size[MIG_SIZE_MAX];
	long long max_time_shared; /* MaxTimeSharedClientsPerGPU, deprecated */
	char strategy[64];	   /* GPUSharingConfig.GPUSharingStrategy */
	long long max_shared;	   /* GPUSharingConfig.MaxSharedClientsPerGPU */
};

static int sharing_member(const struct go_member *m, void *arg, struct err *e)
{
	struct gke_config *c = arg;

	if (go_key_is(m, "GPUSharingStrategy"))
		return go_string(m, "GPUSharingStrategy", c->strategy, sizeof(c->strategy), e);
	if (go_key_is(m, "MaxSharedClientsPerGPU"))
		return go_int(m, "MaxSharedClientsPerGPU", &c->max_shared, e);
	return 0;
}

static int config_member(const struct go_member *m, void *arg, struct err *e)
{
	struct gke_config *c = arg;

	if (go_key_is(m, "GPUPartitionSize"))
		return go_string(m, "GPUPartitionSize", c->partition_size,
				 sizeof(c->partition_size), e);
	if (go_key_is(m, "MaxTimeSharedClientsPerGPU"))
		return go_int(m, "MaxTimeSharedClientsPerGPU", &c->max_time_shared, e);
	if (!go_key_is(m, "GPUSharingConfig") || is_null(m))
		return 0;
	if (*m->value != '{')
		return err_set(e, EXIT_USAGE, "%s: GPUSharingConfig is not an object",
			       MIG_GKE_CONFIG);
	return each_member(m->value, m->value_end, sharing_member, c, e);
}

/* GKE's judgement of what was decoded (manager.go: the sharing strategy and its clients). */
static int gke_validate(const struct gke_config *c, struct mig_request *r, struct err *e)
{
	const char *s = c->strategy;
	long long max = c->max_shared;

	/* The deprecated MaxTimeSharedClientsPerGPU, above 0, is time-sharing over the rest. */
	if (c->max_time_shared > 0) {
		s = "time-sharing";
		max = c->max_time_shared;
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
	struct gke_config c;
	struct mig_request r = {.partition_size = ""};

	memset(&c, 0, sizeof(c));
	if (strlen(json) != len)
		return err_set(e, EXIT_USAGE, "%s is not a JSON object", MIG_GKE_CONFIG);
	if (each_member(json, json + len, config_member, &c, e) < 0)
		return -1;
	memcpy(r.partition_size, c.partition_size, sizeof(r.partition_size));
	if (gke_validate(&c, &r, e) < 0)
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
