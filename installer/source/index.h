/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The repository index as the installer holds it (docs/repository-format.md): drivers,
 * their packages and module flavours, and what a driver judged for a host is. Types
 * only, shared by the parser and selection (repo.h) and the flavours (repo_kmt.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpu; /* host/host.h */

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
