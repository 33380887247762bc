/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The repository's manifest in a registry and an OCI image layout's index.json, as the
 * installer reads them (oci_manifest.c; docs/repository-format.md, "In an OCI registry").
 * Internal to source/; oci.h includes it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/oci_names.h"

/* ---- the repository's manifest (SPEC: one image manifest per tag) ---- */

#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_IMAGE_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_EMPTY "application/vnd.oci.empty.v1+json"
#define OCI_EMPTY_DIGEST "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
#define OCI_ARTIFACT_TYPE "application/vnd.nvidia.driver-installer.repository.v1"
#define OCI_MT_INDEX "application/vnd.nvidia.driver-installer.index.v1+json"
#define OCI_MT_SIGNATURE "application/vnd.nvidia.driver-installer.index.signature.v1"
#define OCI_MT_PACKAGE "application/vnd.nvidia.driver-installer.package.v1.tar"
#define OCI_ANNOTATION_TITLE "org.opencontainers.image.title"
#define OCI_ANNOTATION_CREATED "org.opencontainers.image.created"
#define OCI_ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"
/*
 * The most manifest bytes read: distribution's own limit (registry/handlers/manifests.go,
 * maxManifestBodySize = 4 << 20, from v2.8.2 on) and the image spec's advice.
 */
#define OCI_MANIFEST_MAX (4u << 20)

/* One layer of the manifest: a file of the repository's HTTP layout. */
struct oci_layer {
	char sha256[65]; /* the hex of its digest */
	uint64_t size;
	char *title; /* org.opencontainers.image.title: its path in the HTTP layout, or NULL */
};

struct oci_manifest {
	struct oci_layer index, sig; /* layers 1 and 2 */
	struct oci_layer *pkgs;	     /* the packages this registry carries */
	size_t n_pkgs;
};

/*
 * The package media type for a package path (by its suffix .tar.zst, .tar.xz, .tar.gz;
 * anything else the plain tar type), into BUF.
 */
void oci_package_media_type(const char *path, char *buf, size_t size);

/*
 * Parses and checks manifest bytes (their digest already checked by the caller) by
 * SPEC48 section 2's reader rules. Returns 0 and *RET, or -1 with EXIT_VERIFY naming the
 * rule broken.
 */
_must_check_ int oci_manifest_parse(const char *buf, size_t len, struct oci_manifest **ret,
				    struct err *e);
void oci_manifest_free(struct oci_manifest *m);
DEFINE_POINTER_CLEANUP(struct oci_manifest, oci_manifest_free)

/*
 * The layer of M for package PKG: 1 and *RET when M lists its digest with the size the
 * index gives; 0 when M does not list it (this registry does not carry it); -1 with
 * EXIT_VERIFY when M lists it, or its path, with another size or digest.
 */
int oci_manifest_package(const struct oci_manifest *m, const struct repo_package *pkg,
			 const struct oci_layer **ret, struct err *e);

/*
 * An OCI image layout's index.json: the digest of the manifest tagged TAG (its
 * org.opencontainers.image.ref.name annotation) into RET. Returns 0; -1 with EXIT_VERIFY
 * when the index is not one, or FETCH_MISSING-worthy EXIT_UNREACHABLE when no manifest
 * carries the tag (then *RET_MISSING is true).
 */
_must_check_ int oci_layout_find(const char *buf, size_t len, const char *tag,
				 char ret[OCI_DIGEST_SIZE], bool *ret_missing, struct err *e);

/* Whether BUF's SHA-256 is the hex SHA256. -1 on an OpenSSL failure. */
int oci_sha256_is(const void *buf, size_t len, const char *sha256);
