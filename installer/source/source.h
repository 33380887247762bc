/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The face of source/, the only header of it that other folders include.
 *
 * Where the driver comes from: the signed index, fetched from the first
 * mirror that serves one that verifies (or, when none answers, the last
 * verified copy in the node's cache), and the package, downloaded into the
 * cache and checked against the index. With them: the index as the installer
 * holds it and the choice of a driver for a host, signatures and digests,
 * version numbers, the node's cache and the fleet list. What only source/
 * uses is in its internal headers (cache.h, fetch.h, repo.h, repo_kmt.h,
 * verify.h, version.h).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"
#include "util/cleanup.h"
#include "util/err.h"
#include "util/str.h"

/*
 * ---- the repository index as the installer holds it (docs/repository-format.md) ----
 *
 * Drivers, their packages and module flavours, and what a driver judged for a host is;
 * parsing the signed index.json and choosing the driver and package for a host
 * (source/repo.h); the module flavours (source/repo_kmt.h).
 */

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
struct repo_named_gpu {
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
	/* "imex": the package carries nvidia-imex and nvidia-imex-ctl; false when absent */
	bool imex;
	/* "nvsdm": the package carries lib64/libnvsdm.so.1, which DCGM loads for NVLink 5 */
	bool nvsdm;
	/* "gpudirect": REPO_GPUDIRECT_* of the modules it carries; 0 when absent */
	unsigned gpudirect;
	/* "capabilities": REPO_CAP_* the package serves; compute and utility when absent */
	unsigned capabilities;
};

/* packages[].gpudirect's names: kernel/gdrdrv.ko (GDRCopy), kernel/nvidia-fs.ko (GDS). */
#define REPO_GPUDIRECT_GDRCOPY 1u
#define REPO_GPUDIRECT_GDS 2u

struct repo_driver {
	char *version;
	char **tags;
	size_t n_tags;
	bool has_pci_ids;
	uint32_t *pci_ids; /* vendor << 16 | device */
	size_t n_pci_ids;
	/* "module_types": the GPUs each flavour supports ([REPO_MT_UNSTATED] is unused). */
	struct repo_pci_list module_types[REPO_MT_COUNT];
	struct repo_named_gpu *gpu_names;
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

/* What a host would need the repository to add (repo_wanted). */
struct repo_want {
	const struct repo_driver *driver;  /* the driver REQUEST resolves to */
	enum repo_module_type module_type; /* the flavour: REPO_MT_OPEN or REPO_MT_PROPRIETARY */
};

/*
 * Whether repo_select's refusal of REQUEST for HOST under POLICY is that the driver it
 * resolves to has no package for the host's kernel, architecture, OS and build (the
 * refusal a new package would lift, not a missing version, an unsupported GPU or a
 * flavour refused): then 1 and *RET, the driver whose package a repository would have to
 * add (the one the refusal names) and the flavour the host needs; else 0 (RET untouched).
 */
int repo_wanted(const struct repo_index *idx, const struct host *h, const char *request,
		enum repo_kmt_policy policy, struct repo_want *ret);

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

/* "open", "proprietary", or NULL for REPO_MT_UNSTATED. */
const char *repo_module_type_name(enum repo_module_type t);

/*
 * NVIDIA's driver capabilities (the NVIDIA_DRIVER_CAPABILITIES words), as a package serves
 * them (the index's packages[].capabilities) and a node asks for them
 * (--driver-capabilities). docs/design.md, "Video and graphics".
 */
enum {
	REPO_CAP_COMPUTE = 1u << 0,
	REPO_CAP_UTILITY = 1u << 1,
	REPO_CAP_VIDEO = 1u << 2,
	REPO_CAP_GRAPHICS = 1u << 3,
	REPO_CAP_DEFAULT = REPO_CAP_COMPUTE | REPO_CAP_UTILITY,
	REPO_CAP_ALL = REPO_CAP_DEFAULT | REPO_CAP_VIDEO | REPO_CAP_GRAPHICS,
};

/*
 * Parses a comma list of compute, utility, video, graphics, or all (white space around
 * words allowed) into REPO_CAP_* bits. Returns 0 with *RET set (compute and utility always
 * among them: every package serves them), or -1 for an empty list or another word.
 */
int repo_caps_parse(const char *text, unsigned *ret);

/* CAPS as "compute,utility,video" into BUF (SIZE bytes). Returns BUF. */
#define REPO_CAPS_TEXT_SIZE 40 /* "compute,utility,video,graphics" and its NUL */
const char *repo_caps_text(unsigned caps, char *buf, size_t size);

/* Parses "auto", "open" or "proprietary". Returns 0, or -1 for anything else. */
int repo_kmt_policy_parse(const char *s, enum repo_kmt_policy *ret);

/*
 * What the module flavour decision is a pure function of: the driver entry, the host's
 * GPUs (vendor << 16 | device), the setting, the flavours that have a package for the host
 * (AVAIL: bit 1u << t for each flavour t) and the host's kernel, named in messages.
 */
struct repo_kmt_request {
	const struct repo_driver *driver;
	const uint32_t *gpus;
	size_t n_gpus;
	enum repo_kmt_policy policy;
	unsigned avail;
	const char *kernel;
};

/*
 * The module flavour decision for Q. Only REPO_MT_OPEN and REPO_MT_PROPRIETARY are decided
 * between. Fills *RET.
 */
void repo_kmt_decide(const struct repo_kmt_request *q, struct repo_kmt_decision *ret);

/* ---- what the index offers: list-versions, coverage, mirror and the messages ---- */

/* Names borrowed from an index (valid while it is): V[0..N). */
struct repo_names {
	const char **v;
	size_t n;
};
void repo_names_done(struct repo_names *n);

/* How many names a message shows before "and N more". */
#define REPO_NAMES_SHOWN 8

/*
 * Adds to RET the distinct kernels of IDX's packages, in index order: of the drivers
 * REQUEST wants (NULL: all), for HOST's architecture, OS and build whatever its kernel
 * (HOST NULL: every package). Returns 0, or -1 on ENOMEM (RET keeps what was added).
 */
int repo_kernels(const struct repo_index *idx, const struct host *h, const char *request,
		 struct repo_names *ret);

/*
 * Adds to RET the versions, newest first, that have a package fitting HOST (kernel,
 * architecture, OS and build; GPUs are not judged). 0, or -1 on ENOMEM.
 */
int repo_versions_for_host(const struct repo_index *idx, const struct host *h,
			   struct repo_names *ret);

/* Whether any package of IDX is for KERNEL. */
bool repo_has_kernel(const struct repo_index *idx, const char *kernel);

/* "a, b, c and 4 more" (at most REPO_NAMES_SHOWN shown), or "none", into BUF. */
void repo_names_join(const struct repo_names *n, char *buf, size_t size);

/* ---- trust: signatures and digests (source/verify.h) ---- */

#define VERIFY_KEYS_DIR "/etc/nvidia-driver-installer/keys"
#define VERIFY_SIG_MAX (64u * 1024)

struct keyset;

/*
 * Loads the PEM files PATHS (public keys or X.509 certificates). With N == 0
 * loads every *.pem of DIR instead. Returns 0 and a new keyset, or -1
 * (EXIT_USAGE: a key the operator named is unreadable, or there is none).
 */
_must_check_ int verify_keys_load(char *const *paths, size_t n, const char *dir,
				  struct keyset **ret, struct err *e);
void verify_keys_free(struct keyset *ks);
DEFINE_POINTER_CLEANUP(struct keyset, verify_keys_free)
size_t verify_keys_count(const struct keyset *ks);

/*
 * After a PEM read failed: whether it failed because no block is left (true), rather than
 * on a damaged or cut-off block. Leaves OpenSSL's error queue as it is.
 */
bool verify_pem_at_end(void);

/* Bytes and their detached signature. */
struct verify_signed {
	const void *data;
	size_t len;
	const void *sig;
	size_t sig_len;
};

/*
 * Checks S's signature over S's data with SHA-256 against each key. Returns 0 and
 * writes the matching key's fingerprint (16 hex digits) to ret_fpr, or -1 with
 * EXIT_VERIFY.
 */
_must_check_ int verify_index_signature(const struct keyset *ks, const struct verify_signed *s,
					char ret_fpr[17], struct err *e);

/* Streaming SHA-256. */
struct sha256;
struct sha256 *sha256_new(void);
void sha256_free(struct sha256 *s);
DEFINE_POINTER_CLEANUP(struct sha256, sha256_free)
int sha256_update(struct sha256 *s, const void *data, size_t len);
/* Writes 64 lowercase hex digits and a NUL. The context must be reset before reuse. */
int sha256_final_hex(struct sha256 *s, char out[65]);
/* The SHA-256 of the LEN bytes at BUF, in hex, into OUT: 0, or -1 (ENOMEM, OpenSSL). */
int sha256_hex_of(const void *buf, size_t len, char out[65]);

/*
 * ---- versions (source/version.h) ----
 *
 * Driver versions are dotted decimal numbers ("550.90.07", "535.261.03").
 * They compare numerically component by component; "07" equals "7".
 */

/* Whether S is 1 to VERSION_MAX_COMPONENTS dot-separated runs of 1 to 9 digits. */
bool version_is_valid(const char *s);

/*
 * Orders two valid versions: negative, zero or positive. When one is a prefix
 * of the other the longer one is greater ("550" < "550.90").
 */
int version_compare(const char *a, const char *b);

/*
 * ---- the node's cache (source/cache.h) ----
 *
 * The node-local cache under --cache-dir: packages by SHA-256 (complete
 * "<sha>.pkg", in progress "<sha>.part" kept for resume), the last index
 * that verified, so that a node can reinstall while the repository is
 * unreachable, and per repository (or signing key) the newest index
 * "generated" time accepted, so that a replayed older index cannot roll a
 * node back.
 */

struct cache;

/* Opens the cache directory under root_fd; CREATE makes it. Returns 0, 1 when absent, or -1. */
_must_check_ int cache_open(int root_fd, const char *dir, bool create, struct cache **ret,
			    struct err *e);
void cache_free(struct cache *c);
DEFINE_POINTER_CLEANUP(struct cache, cache_free)

/* Opens the complete package SHA256 for reading; -1 when absent (no error). */
int cache_package_open(struct cache *c, const char *sha256);
/* Opens (creating) the partial download for SHA256, read-write. Returns an fd or -1. */
_must_check_ int cache_partial_open(struct cache *c, const char *sha256, struct err *e);
/*
 * Promotes a fully verified partial download to a complete entry (rename). Not synced:
 * a cached package is hashed again whenever it is used.
 */
_must_check_ int cache_commit(struct cache *c, const char *sha256, struct err *e);
/* Removes the entry SHA256 (a copy that failed verification). */
void cache_drop(struct cache *c, const char *sha256);
/* Removes complete entries and partial downloads other than KEEP. */
_must_check_ int cache_prune(struct cache *c, const char *keep_sha256, struct err *e);

/*
 * The record of the last run that asked the mirrors and used the cached index instead
 * (cache_fallback_put): its text, 0 with a malloc'd *RET_JSON, 1 when there is none, or -1.
 */
_must_check_ int cache_fallback_get(struct cache *c, char **ret_json, struct err *e);

/*
 * ---- the fleet list ----
 *
 * A fleet file (docs/building-packages.md, "A fleet"): one row per node image the operator
 * runs, each with the driver versions and module flavours it must be served. coverage
 * --fleet answers for every row; scripts/build-fleet builds what the repository lacks
 * from the same file.
 */

#define FLEET_MAX_BYTES (4u << 20)
#define FLEET_MAX_ROWS 4096

struct fleet_row {
	char *name;	      /* "name", or NULL */
	char *os;	      /* os-release ID */
	char *os_build;	      /* os-release BUILD_ID, or NULL */
	char *kernel;	      /* uname -r */
	char *arch;	      /* uname -m; "x86_64" when the row says none */
	struct strv versions; /* "driver_versions": versions, branches or tags; at least one */
	struct strv flavours; /* "flavours": "proprietary", "open", "auto"; {"auto"} if none */
	struct strv gpus;     /* "gpus": "10de:2330" */
	char *module_signer;  /* "module_signer": the only signer the pool's kernel trusts */
	/* module_signer read: a key id (lower-case hex, no ':') or a certificate's SHA-256 */
	char signer_key_id[160];
	char signer_sha256[65];
};

struct fleet {
	struct fleet_row *rows;
	size_t n_rows;
};

/*
 * Parses a fleet file's text (strict JSON, format 1). Returns 0 and *ret, or -1 with
 * EXIT_USAGE naming the row and key: unknown keys are refused (a misspelt key would
 * otherwise ask a question nobody meant), as are missing and empty values.
 */
_must_check_ int fleet_parse(const char *buf, size_t len, struct fleet **ret, struct err *e);
void fleet_free(struct fleet *f);
DEFINE_POINTER_CLEANUP(struct fleet, fleet_free)

/*
 * Whether PKG's modules are signed by the one signer ROW's kernel trusts: its
 * "module_signer" (a key id or sha256:HEX) against the index's packages[].signer key_id
 * or sha256, never a subject (a name is not a key). True for a row without one.
 */
bool fleet_signer_matches(const struct fleet_row *row, const struct repo_package *pkg);
/* A row as the answer names it: its "name", or "OS[ build B] kernel R (ARCH)". */
void fleet_row_label(const struct fleet_row *r, char *buf, size_t size);

/* ---- the source stage: the index and the package from the mirrors ---- */

/* Transfers (source/fetch.h): timeouts, retries, the speed floor, more CAs. */
struct fetch_opts {
	unsigned timeout_s;	  /* total budget for every transfer and wait of this run */
	unsigned retries;	  /* rounds over the mirrors after the first */
	unsigned low_speed_bytes; /* a transfer slower than this many bytes/s ... */
	unsigned low_speed_s;	  /* ... for this long is abandoned (and retried) */
	const char *ca_file;	  /* CA certificates trusted besides the system's, or NULL */
};

struct tail;
struct oci_pull;

/* source_opts.index_max_age_s unset: the index's own "max_age" decides. */
#define SOURCE_MAX_AGE_REPO UINT_MAX

/* --registry-gce-metadata: credentials from the GCE metadata server for Google's registries. */
enum source_gce {
	SOURCE_GCE_AUTO = 0, /* for *.pkg.dev and gcr.io hosts, when the server answers */
	SOURCE_GCE_YES,
	SOURCE_GCE_NO,
};

/* How oci:// repositories are reached (docs/configuration.md, --registry-*). */
struct source_registry {
	char *const *auth_files; /* Docker config.json files, in order (--registry-auth) */
	size_t n_auth_files;
	const char *hosts_dir; /* containerd's hosts.toml directory, or NULL */
	enum source_gce gce;
};

/* Where the Secret both DaemonSets mount is read when no --registry-auth is given. */
#define SOURCE_REGISTRY_AUTH_DEFAULT "/etc/nvidia-driver-installer/registry-auth/.dockerconfigjson"

/* Parses "auto", "yes" or "no". Returns 0, or -1 for anything else. */
int source_gce_parse(const char *s, enum source_gce *ret);

/*
 * Whether a --repo value is well formed where source/ reads it: an oci:// reference by the
 * distribution spec's grammar, an oci-layout:PATH[:TAG]; any other URL is 0 here. Returns
 * 0, or -1 with EXIT_USAGE naming what is wrong.
 */
int source_repo_check(const char *url, struct err *e);

/* What the source stage reads of the configuration. The strings are the caller's. */
struct source_opts {
	char *const *mirrors; /* repository URLs, in the order they are asked */
	size_t n_mirrors;
	char *const *keys; /* public keys the index may be signed with (more in VERIFY_KEYS_DIR) */
	size_t n_keys;
	struct fetch_opts fetch;  /* transfers: timeouts, retries, the speed floor, more CAs */
	bool allow_rollback;	  /* accept an index older than one this node accepted */
	unsigned index_max_age_s; /* reuse a cached index this young; SOURCE_MAX_AGE_REPO */
	struct source_registry registry; /* oci:// repositories: credentials, hosts, GCE */
};

/* Why the index is the node's cached copy although the mirrors were asked. */
enum source_fallback {
	SOURCE_FALLBACK_NONE = 0,
	SOURCE_FALLBACK_UNREACHABLE, /* no mirror answered: an outage */
	/*
	 * Mirrors answered, but none with an index that verifies and is current: a captive
	 * portal, a proxy's error page, a key not pinned yet, a mirror behind this node.
	 */
	SOURCE_FALLBACK_UNVERIFIED,
	/*
	 * Every mirror answered that it has no index.json (HTTP 403/404/410, no such file://
	 * path): a wrong URL, likely a typo in --repo, not an outage.
	 */
	SOURCE_FALLBACK_NOT_FOUND,
};

/*
 * "unreachable", "unverified", "not_found" (the names of status --json and the metric),
 * or NULL.
 */
const char *source_fallback_name(enum source_fallback f);

struct source {
	struct repo_index *idx;
	char *const *mirrors;
	size_t n_mirrors;
	size_t mirror;	 /* the one that served the index */
	bool from_cache; /* the index is the cached copy: no mirror served a usable one */
	enum source_fallback fallback; /* from_cache: why */
	char fallback_reason[ERR_MSG_MAX +
			     ERR_HINT_MAX]; /* from_cache: the mirrors' causes, and the fix */
	struct err
		fallback_err; /* from_cache: the mirrors' error, as it would have ended the run */
	bool fresh;	      /* the index is the cached copy, still fresh: no mirror asked */
	int64_t age_s;	      /* fresh: seconds since it was fetched */
	unsigned max_age_s;   /* fresh: how old it may be */
	char fingerprint[17]; /* the key that signed the index */
	struct fetch_opts fetch_opts;
	struct fetcher *fetcher; /* made on first use: a fresh index needs no network */
	struct keyset *keys;
	char *index_json, *index_sig; /* the verified bytes, as served */
	size_t index_len, sig_len;
	struct oci_pull *oci; /* the oci:// and oci-layout: mirrors' state, or NULL */
};

enum {
	SOURCE_STORE = 1 << 0, /* keep the fetched index in the cache, and its time */
	/*
	 * Use the cached index without asking a mirror while it is fresh: fetched from these
	 * same mirrors less than max_age seconds ago (--index-max-age, else the index's own
	 * "max_age"). It is verified, and checked against rollback, like a fetched one.
	 */
	SOURCE_REUSE = 1 << 1,
};

/*
 * Loads the trusted keys and gets a verified index. CACHE (may be NULL) is the fallback
 * when no mirror answers, and serves SOURCE_REUSE; FLAGS are SOURCE_*. Returns 0, or -1
 * with e set.
 */
_must_check_ int source_open(const struct source_opts *o, struct cache *cache, unsigned flags,
			     struct source *ret, struct err *e);
void source_done(struct source *s);

/*
 * Whether S's index names no repository while several keys are trusted: anti-rollback then
 * judges it by the newest record of all those keys (docs/repository-format.md), which holds
 * only while they all sign this one repository. Logged by source_open, checked by doctor.
 */
bool source_keys_share_record(const struct source *s);
#define SOURCE_KEYS_SHARE_RECORD                                                                   \
	"the index names no repository and several keys are trusted: anti-rollback judges it by the newest index any of them signed, so they must all sign this one repository"
#define SOURCE_KEYS_SHARE_FIX                                                                      \
	"name the repository in its index ('make-repo sign --repository ID'), then each index is judged by its own repository's record"

/*
 * For E, a request that S's index cannot serve (repo_select's no match): when that index is
 * the node's cached copy, the cause is the mirrors' failure, not the older copy's lack. E
 * becomes the mirrors' error (its exit code and fix), saying that the cached index, the
 * fallback, cannot serve the request and why. Returns -1; E is unchanged when the index came
 * from a mirror or is the fresh copy.
 */
int source_fallback_failed(const struct source *s, struct err *e);

/*
 * Downloads PKG into FD (a partial file, resumed), from the mirror that served
 * the index first, checking size and digest. TAIL (may be NULL) follows the
 * file's length for a concurrent reader. Returns 0 and the bytes fetched in
 * *ret_net_bytes, or -1.
 */
_must_check_ int source_download(struct source *s, const struct repo_package *pkg, int fd,
				 struct tail *tail, uint64_t *ret_net_bytes, struct err *e);

/*
 * Whether a mirror carries PKG (a partial mirror keeps the full signed index but not every
 * package): a HEAD request, or a stat for file://, to each mirror in turn from the one
 * that served the index, once, without retries. Returns 1 and the mirror's index in
 * *RET_MIRROR; 0 when every mirror answered that it does not; -1 with e set when it is not
 * known (a mirror did not answer, or the index came from the node's cache).
 */
_must_check_ int source_probe_package(struct source *s, const struct repo_package *pkg,
				      size_t *ret_mirror, struct err *e);

/*
 * ---- the repository as an OCI artifact, as mirror writes it (source/oci_write.c) ----
 *
 * docs/repository-format.md, "In an OCI registry": the manifest mirror pushes to a registry
 * or writes into an OCI image layout, and the layout's index.json.
 */

/* OCI 1.1's empty blob, the manifest's config; an image layout's oci-layout file. */
#define OCI_EMPTY_BLOB "{}"
#define OCI_LAYOUT_FILE "{\"imageLayoutVersion\":\"1.0.0\"}"

/*
 * The manifest of SRC's verified index and signature with the packages PKGS[0..N) (in the
 * index's order; a digest listed twice is one layer, titled by its first path), as JSON
 * text: 0 and the malloc'd bytes, or -1 (ENOMEM).
 */
_must_check_ int oci_artifact_manifest(const struct source *src,
				       const struct repo_package *const *pkgs, size_t n, char **ret,
				       size_t *ret_len, struct err *e);

/*
 * The index's and the signature's digests (hex) of a repository's manifest BUF, checked
 * by the reader's rules: 0, or -1 (EXIT_VERIFY: not a repository's manifest).
 */
_must_check_ int oci_artifact_index_layers(const char *buf, size_t len, char ret_index[65],
					   char ret_sig[65], struct err *e);

/*
 * "oci-layout:PATH[:TAG]" (the tag after the last ':' that follows the last '/', "latest"
 * when none): 0 and the malloc'd path and tag, or -1 with EXIT_USAGE naming what is wrong.
 */
_must_check_ int oci_layout_dest(const char *s, char **ret_path, char **ret_tag, struct err *e);

/*
 * The manifest an image layout's index.json BUF tags TAG: 1 and its digest's hex, 0 when
 * none is tagged so, -1 (EXIT_VERIFY) when BUF is not a layout's index.
 */
int oci_layout_tagged(const char *buf, size_t len, const char *tag, char ret_hex[65],
		      struct err *e);

/*
 * A layout's index.json: OLD's (NULL: none) with TAG's entries replaced by one for the
 * manifest sha256:HEX of LEN bytes; other entries and annotations kept. 0 and the malloc'd
 * text, or -1 (EXIT_USAGE: OLD is not JSON).
 */
_must_check_ int oci_layout_retag(const char *old, const char *tag, const char *hex, size_t len,
				  char **ret, struct err *e);

/*
 * ---- mirror --to oci://: a repository pushed to a registry (source/oci_push.c) ----
 *
 * The registry client of the oci:// source, asked for repository:NAME:pull,push, and the
 * distribution API's push: HEAD of a blob, the monolithic POST-then-PUT upload, the
 * manifest PUT by tag. Each call retries within O's time budget, as a download does.
 */

struct oci_push;

/*
 * A push to REF ("oci://HOST[:PORT]/NAME[:TAG]", over https://) with O's transfers and the
 * host's credentials from O's registry auth files. Nothing is asked yet. Returns 0 and
 * *RET, or -1: EXIT_USAGE for a bad reference (a digest in place of a tag too) or auth file.
 */
_must_check_ int oci_push_new(const struct source_opts *o, const char *ref, struct oci_push **ret,
			      struct err *e);
void oci_push_free(struct oci_push *p);
DEFINE_POINTER_CLEANUP(struct oci_push, oci_push_free)
/* The tag pushed ("latest" when REF names none). */
const char *oci_push_tag(const struct oci_push *p);

/*
 * The index and its signature the tag holds now, each checked against its digest: 0 and
 * the malloc'd bytes; *RET_JSON NULL when the tag is not there, "" when what it names is
 * not a repository's manifest (SPEC48 §2's reader rules). -1 when the registry does not
 * answer or refuses the credentials (EXIT_UNREACHABLE), or serves other bytes (EXIT_VERIFY).
 */
_must_check_ int oci_push_held(struct oci_push *p, char **ret_json, size_t *ret_len, char **ret_sig,
			       size_t *ret_sig_len, struct err *e);

/* Whether the registry has blob sha256:SHA256 of SIZE bytes: 1, 0, or -1 with e set. */
_must_check_ int oci_push_has_blob(struct oci_push *p, const char *sha256, uint64_t size,
				   struct err *e);

/*
 * Uploads BUF (SIZE bytes, whose SHA-256 the caller has checked is SHA256) as a blob. 0, or
 * -1 (EXIT_VERIFY when the registry stored it under another digest).
 */
_must_check_ int oci_push_blob(struct oci_push *p, const char *sha256, const void *buf,
			       uint64_t size, struct err *e);

/*
 * PUTs manifest BUF under the tag: the one switch a reader sees. 0 and its digest's hex in
 * RET_SHA256, or -1 (EXIT_VERIFY when the registry stored it under another digest).
 */
_must_check_ int oci_push_manifest(struct oci_push *p, const char *buf, size_t len,
				   char ret_sha256[65], struct err *e);
