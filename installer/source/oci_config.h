/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a registry client reads of the node's configuration before it asks a registry
 * anything: the credentials of Docker config.json files and of kubernetes.io/dockerconfigjson
 * Secrets (matched to a host as the kubelet's keyring does), containerd's hosts.toml
 * mirrors, and the GCE metadata server's token. Internal to source/ (oci.c calls it).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "source/source.h"

struct fetcher;

/*
 * The largest auth file read: a Kubernetes Secret holds at most 1 MiB
 * (https://kubernetes.io/docs/concepts/configuration/secret/#restriction-data-size), and a
 * Docker config.json of many registries stays far below.
 */
#define OCI_AUTH_FILE_MAX (1u << 20)

struct oci_cred {
	char *username;
	char *password;
	char *identity_token;
}; /* any may be NULL */
/* Frees C's strings, wiped first, and sets them NULL; C itself is the caller's. */
void oci_cred_done(struct oci_cred *c);

struct oci_auth_files; /* parsed Docker config.json files, in the order given */
/*
 * Parses each PATH (missing default path: skipped; a missing named path: EXIT_USAGE).
 * "auths": {KEY: {"auth": base64(user:pass)} | {"username","password"} | {"identitytoken"}};
 * "credHelpers"/"credsStore" are noted but not run (logged once: "not used, ...").
 * A file over OCI_AUTH_FILE_MAX, not JSON, or with an entry that is not what the kubelet
 * reads (a field not a string, an "auth" that is not base64 of USER:PASS) is EXIT_USAGE
 * naming the file and the key, never a secret. Returns 0 and *ret (never NULL on success,
 * possibly empty), or -1 with e set.
 */
_must_check_ int oci_auth_files_load(char *const *paths, size_t n, bool default_path,
				     struct oci_auth_files **ret, struct err *e);
void oci_auth_files_free(struct oci_auth_files *f);
DEFINE_POINTER_CLEANUP(struct oci_auth_files, oci_auth_files_free)
/*
 * Credentials for HOST[:PORT] and repository NAME by the kubelet's keyring matching
 * (pkg/credentialprovider/keyring.go: scheme stripped, host glob per label, port exact, path
 * prefix, longest match first; "https://index.docker.io/v1/" = docker.io): 1 and *ret,
 * 0 when none, -1 on ENOMEM (*ret all NULL then). The first match with credentials is the
 * one: the kubelet would try the others after it, a registry client here tries one. *ret's
 * strings are the caller's, freed with oci_cred_done.
 */
int oci_auth_lookup(const struct oci_auth_files *f, const char *host, const char *name,
		    struct oci_cred *ret);

/* The largest hosts.toml read; containerd's are a few hundred bytes. */
#define OCI_HOSTS_FILE_MAX (64u << 10)

struct oci_endpoint {
	/*
	 * scheme://host[:port][/prefix], no trailing '/'. The API root is URL "/v2" unless
	 * override_path, in which case it is URL itself (containerd's parseHostConfig: a path
	 * written with "/v2" at its end has it cut here, so that URL "/v2" is that path).
	 */
	char *url;
	bool pull, resolve, push;
	char *ca_file;	  /* absolute (a relative "ca" is under the host's directory), or NULL */
	bool skip_verify; /* always false: skip_verify = true is refused */
	bool override_path;
	/* Added to SPEC48 §5: the [header] table's "Name: value" lines, in the file's order. */
	char **headers;
	size_t n_headers;
};
/*
 * containerd's hosts.toml for HOST under DIR (DIR/HOST[:PORT]/hosts.toml; a missing file:
 * 0 and n = 0). Hosts in file order, then the server last. skip_verify: refused (EXIT_USAGE,
 * "verification cannot be turned off here").
 *
 * The directory is containerd's: DIR/HOST_PORT_ (for a HOST with a port), DIR/HOST[:PORT],
 * then DIR/_default, the first there (core/remotes/docker/config/config_unix.go, hostPaths).
 * One without hosts.toml is read as Docker's certs.d: its one *.crt the server's CA. With no
 * "server", the server is HOST itself over https (registry-1.docker.io for docker.io), as
 * containerd's ConfigureHosts makes it, with the capabilities pull, resolve and push.
 * Refused (EXIT_USAGE, naming the file and line): text outside oci_toml.c's TOML, an unknown
 * capability, a value of the wrong type, client certificates, more than one CA file for one
 * host, an Authorization header. Returns 0, *ret and *ret_n, or -1 with e set.
 */
_must_check_ int oci_hosts_load(const char *dir, const char *host, struct oci_endpoint **ret,
				size_t *ret_n, struct err *e);
void oci_endpoints_free(struct oci_endpoint *v, size_t n);

/* The largest answer of the metadata server's token endpoint read (one is ~300 bytes). */
#define OCI_GCE_TOKEN_MAX (64u << 10)

/*
 * The GCE metadata server's token for the default service account: GET
 * http://$GCE_METADATA_HOST|metadata.google.internal/computeMetadata/v1/instance/
 * service-accounts/default/token, header Metadata-Flavor: Google; 0 and *ret (username
 * "oauth2accesstoken", password the access_token), 1 when no metadata server answers,
 * -1 with e set (garbage, refused). Uses FETCHER (source/fetch.h) for the request.
 *
 * "No metadata server": no answer at all (no such host, refused, timed out), or 404 (an
 * instance without a service account). Refused (EXIT_UNREACHABLE, naming the URL, never the
 * token): another HTTP error, an answer that is not one JSON object with "access_token" a
 * b64token (RFC 6750 section 2.1), "token_type" "Bearer" and "expires_in" a positive
 * integer. A GCE_METADATA_HOST that is not HOST[:PORT]: EXIT_USAGE.
 */
_must_check_ int oci_gce_token(struct fetcher *f, struct oci_cred *ret, struct err *e);
/* Whether HOST is Artifact Registry or Container Registry (*-docker.pkg.dev, *.gcr.io, gcr.io). */
bool oci_host_is_gcp(const char *host);
