/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The repository index (docs/repository-format.md): parsing the signed
 * index.json and choosing the driver and package for a host.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "util/err.h"

#define REPO_FORMAT 1
#define REPO_INDEX_MAX (16u << 20) /* bytes of index.json we accept */
#define REPO_PACKAGE_MAX (1ull << 40)
/* The longest "max_age" an index may ask for: a day. */
#define REPO_MAX_AGE_LIMIT 86400
/* The longest "repository" identity, and the identity anti-rollback keys records by. */
#define REPO_ID_MAX 128
#define REPO_IDENTITY_SIZE (sizeof("repository:") + REPO_ID_MAX)

/* A package's kernel module flavour ("module_type"; docs/repository-format.md). */
enum repo_module_type {
	REPO_MT_UNSTATED = 0, /* no "module_type": every index before the field */
	REPO_MT_PROPRIETARY,
	REPO_MT_OPEN,
};
#define REPO_MT_COUNT 3

/*
 * The first branch where NVIDIA's own installer installs the open modules by default
 * wherever the GPUs support them (docs/configuration.md, --kernel-module-type).
 */
#define REPO_OPEN_DEFAULT_BRANCH 560

/* The node's --kernel-module-type. */
enum repo_kmt_policy {
	REPO_KMT_AUTO = 0,
	REPO_KMT_OPEN,
	REPO_KMT_PROPRIETARY,
};

/* A list of PCI ids (vendor << 16 | device); KNOWN false: the index does not give it. */
struct repo_pci_list {
	bool known;
	uint32_t *ids;
	size_t n;
};

/* "gpu_names": a GPU's name, for messages only. */
struct repo_gpu_name {
	uint32_t id;
	char *name;
};

struct repo_package {
	enum repo_module_type module_type;
	char *kernel;	/* exact uname -r */
	char *arch;	/* uname -m; "amd64"/"arm64" are normalised */
	char *os;	/* os-release ID, or NULL for any */
	char *os_build; /* os-release BUILD_ID, or NULL for any */
	char *path;	/* relative to the repository base URL */
	char sha256[65];
	uint64_t size;
	uint64_t unpacked_size; /* "unpacked_size": the uncompressed tar's bytes; 0 if absent */
	/* "signer": the certificate that signs the package's modules (information only) */
	bool has_signer;
	char signer_subject[256];
	char signer_key_id[160]; /* hex pairs, as verify-module shows it */
	char signer_sha256[65];	 /* of the certificate's DER, lower-case hex */
};

struct repo_driver {
	char *version;
	char **tags;
	size_t n_tags;
	bool has_pci_ids;
	uint32_t *pci_ids; /* vendor << 16 | device */
	size_t n_pci_ids;
	/* "module_types": the GPUs each flavour supports ([REPO_MT_UNSTATED] is unused). */
	struct repo_pci_list module_types[REPO_MT_COUNT];
	struct repo_gpu_name *gpu_names;
	size_t n_gpu_names;
	struct repo_package *pkgs;
	size_t n_pkgs;
};

struct repo_index {
	int format;
	/* "generated": when the index was made, in microseconds since the epoch (UTC). */
	bool has_generated;
	int64_t generated_us;
	char generated[40]; /* as written */
	/* "max_age": seconds a node may reuse this index without asking a mirror; 0 if absent. */
	unsigned max_age_s;
	/* "repository": the identity the repository signs into its index, or NULL. */
	char *repository;
	struct repo_driver *drivers; /* sorted, newest version first */
	size_t n_drivers;
};

/* Why a driver cannot be installed on a host. */
enum repo_verdict {
	REPO_OK,
	REPO_NO_PACKAGE,      /* nothing for this kernel, arch, OS and build */
	REPO_GPU_UNSUPPORTED, /* supported_pci_ids lacks a GPU of the host */
	REPO_MODULE_TYPE      /* no module flavour of the driver suits the host and the policy */
};

struct repo_choice {
	const struct repo_driver *driver;
	const struct repo_package *pkg;
};

#define REPO_REASON_MAX 384

/*
 * Which module flavour of a driver a host takes (repo_kmt_decide). OK: TYPE is the
 * flavour; else REASON is the sentence a user reads. EXCLUDED[t] says why flavour t,
 * offered for the host, was not taken ("" when it was, or was not offered).
 */
struct repo_kmt_decision {
	bool ok;
	enum repo_module_type type;
	char reason[REPO_REASON_MAX];
	char excluded[REPO_MT_COUNT][REPO_REASON_MAX];
};

/* A driver judged for a host (repo_driver_judge). */
struct repo_judgement {
	enum repo_verdict verdict;
	const struct repo_package *pkg; /* REPO_OK: the package to install */
	const struct gpu *gpu;		/* REPO_GPU_UNSUPPORTED: the first unsupported GPU */
	struct repo_kmt_decision kmt;	/* REPO_MODULE_TYPE: kmt.reason; REPO_OK: kmt.excluded */
};

/* "open", "proprietary", or NULL for REPO_MT_UNSTATED. */
const char *repo_module_type_name(enum repo_module_type t);

/* Parses "auto", "open" or "proprietary". Returns 0, or -1 for anything else. */
int repo_kmt_policy_parse(const char *s, enum repo_kmt_policy *ret);

/* The name "gpu_names" gives GPU ID (vendor << 16 | device) in D, or NULL. */
const char *repo_gpu_name(const struct repo_driver *d, uint32_t id);

/*
 * The module flavour decision, a pure function of the host's GPUs (GPUS, N_GPUS: vendor
 * << 16 | device), the driver entry D and POLICY. AVAIL has bit (1u << t) set for each
 * flavour t that has a package for the host; KERNEL names the host's kernel in messages.
 * Only REPO_MT_OPEN and REPO_MT_PROPRIETARY are decided between. Fills *RET.
 */
void repo_kmt_decide(const struct repo_driver *d, const uint32_t *gpus, size_t n_gpus,
		     enum repo_kmt_policy policy, unsigned avail, const char *kernel,
		     struct repo_kmt_decision *ret);

/*
 * Parses an RFC 3339 time in UTC, "2026-11-30T04:13:03Z" with optional fractional
 * seconds (up to microseconds kept), into microseconds since the epoch. 0, or -1 when
 * it is not exactly that form or not a real date.
 */
int repo_parse_time(const char *s, int64_t *ret_us);

/*
 * Parses index.json. Every field the format defines is validated; unknown
 * fields are ignored. Returns 0 and a new index in *ret, or -1 with e set
 * (code EXIT_VERIFY: a signed but malformed index is as bad as a forged one).
 */
_must_check_ int repo_index_parse(const char *buf, size_t len, struct repo_index **ret,
				  struct err *e);
void repo_index_free(struct repo_index *idx);
DEFINE_POINTER_CLEANUP(struct repo_index, repo_index_free)

/*
 * The identity anti-rollback keeps its record under (docs/repository-format.md): for an
 * index that names its repository, "repository:ID"; else FPR, the fingerprint of the key
 * that signed it. Writes it to BUF (REPO_IDENTITY_SIZE bytes).
 */
void repo_index_identity(const struct repo_index *idx, const char *fpr, char *buf, size_t size);

/*
 * Anti-rollback: IDX may replace an index of the same identity that was generated SEEN_US
 * (SEEN as it was written) and is held by HOLDER ("this node accepted before", "the
 * mirror holds"). Returns 0 when IDX is not older; -1 with EXIT_VERIFY and the fix when
 * it is older or has no "generated" time. The caller decides about an override.
 */
_must_check_ int repo_check_not_older(const struct repo_index *idx, const char *ident,
				      int64_t seen_us, const char *seen, const char *holder,
				      struct err *e);

/* Whether DRIVER carries TAG. */
bool repo_driver_has_tag(const struct repo_driver *d, const char *tag);

/*
 * Judges DRIVER for HOST under POLICY (--kernel-module-type) and fills *RET. On
 * REPO_OK ret->pkg is the package to install: of the flavour repo_kmt_decide takes
 * when the driver states flavours for the host, the most specific (first listed of
 * equals) of it. Returns ret->verdict.
 */
enum repo_verdict repo_driver_judge(const struct repo_driver *d, const struct host *h,
				    enum repo_kmt_policy policy, struct repo_judgement *ret);

/*
 * Resolves REQUEST ("default", "latest", "550" or "550.90.07") for HOST under
 * POLICY. Returns 0 and fills *ret, or -1 with EXIT_NO_MATCH (or EXIT_USAGE for a
 * malformed request) and a message naming what is missing.
 */
_must_check_ int repo_select(const struct repo_index *idx, const struct host *h,
			     const char *request, enum repo_kmt_policy policy,
			     struct repo_choice *ret, struct err *e);

/* The driver "default" and "latest" resolve to on HOST under POLICY, or NULL. */
const struct repo_driver *repo_resolve_tag(const struct repo_index *idx, const struct host *h,
					   enum repo_kmt_policy policy, const char *request);

/*
 * Whether DRIVER of IDX answers REQUEST: "latest" every driver, "default" the drivers
 * tagged so; a version that IDX lists (numerically equal: "550.90.7" is "550.90.07")
 * means that driver alone; any other version is a prefix ("550", "550.90").
 */
bool repo_driver_wanted(const struct repo_index *idx, const struct repo_driver *d,
			const char *request);

/* Whether REQUEST is a valid --driver-version value. */
bool repo_request_is_valid(const char *request);
