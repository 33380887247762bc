// SPDX-License-Identifier: Apache-2.0
/*
 * oci:// and oci-layout: mirrors for the source stage (oci_pull.h). A mirror's manifest
 * is read first (HEAD, then GET with the OCI Accept: distribution 2.8 answers 404 for an
 * OCI manifest asked without it), its bytes checked against the digest the registry
 * names, then the blobs it lists, each checked against its descriptor. Nothing of the
 * manifest is trusted beyond that: the index it leads to is verified as any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/cache.h"
#include "source/oci.h"
#include "source/oci_config.h"
#include "source/oci_pull.h"
#include "util/log.h"

struct oci_mirror {
	const char *base; /* its entry of the mirror list (oci_pull.list's) */
	bool is_layout;
	struct oci_ref ref; /* oci:// */
	/*
	 * The HOST[:PORT] whose credentials it is given: the reference's for the registry
	 * itself (hosts.toml's server stands for it), a mirror's own otherwise: a mirror is
	 * another operator's host, and the registry's credentials are not sent there.
	 */
	char host[OCI_NAME_MAX + 1];
	char *layout_url;	   /* oci-layout: file:// URL of the directory */
	char tag[OCI_TAG_MAX + 1]; /* oci-layout: its tag */
	char *endpoint;		   /* https://HOST, or a hosts.toml host's URL */
	bool override_path;	   /* hosts.toml: ENDPOINT is the API root */
	char *ca_file;		   /* hosts.toml: the host's CA, or NULL */
	char **headers;		   /* hosts.toml: its [header] lines, NULL-ended, or NULL */
	struct oci_client *client; /* made on first use */
	/* the manifest read from it in this run, its bytes and digest */
	struct oci_manifest *manifest;
	char *manifest_bytes;
	size_t manifest_len;
	char digest[OCI_DIGEST_SIZE];
};

struct oci_pull {
	struct oci_mirror *m;
	size_t n;
	char **list; /* the mirror list, oci:// entries expanded by hosts.toml */
	size_t n_list;
	struct oci_auth_files *auth;
	struct cache *cache; /* where the manifest digest is kept, or NULL */
	enum source_gce gce; /* --registry-gce-metadata */
	bool gce_asked;	     /* the metadata server was asked (once a run) */
	bool has_gce;	     /* and answered with GCE_CRED */
	struct oci_cred gce_cred;
};

int source_gce_parse(const char *s, enum source_gce *ret)
{
	static const char *const names[] = {
		[SOURCE_GCE_AUTO] = "auto", [SOURCE_GCE_YES] = "yes", [SOURCE_GCE_NO] = "no"};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (strcmp(s, names[i]) == 0) {
			*ret = (enum source_gce)i;
			return 0;
		}
	}
	return -1;
}

int source_repo_check(const char *url, struct err *e)
{
	struct oci_ref ref;
	char tag[OCI_TAG_MAX + 1];
	_cleanup_free_ char *path = NULL;

	if (oci_is_registry(url))
		return oci_ref_parse(url, &ref, e);
	if (oci_is_layout(url))
		return oci_layout_parse(url, &path, tag, e);
	return 0;
}

/* file://PATH, percent-encoded; a relative PATH from the working directory. */
static char *layout_url(const char *path)
{
	_cleanup_free_ char *abs = NULL;
	struct strbuf b = {0};
	const char *p = path;

	if (path[0] != '/') {
		char *cwd = getcwd(NULL, 0);

		if (!cwd || asprintf(&abs, "%s/%s", cwd, path) < 0) {
			free(cwd);
			return NULL;
		}
		free(cwd);
		p = abs;
	}
	if (strbuf_append(&b, "file://", 7, SIZE_MAX) < 0)
		return NULL;
	for (; *p; p++) {
		char hex[4];
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("/-._~", *p);

		snprintf(hex, sizeof(hex), plain ? "%c" : "%%%02X", (unsigned char)*p);
		if (strbuf_append(&b, hex, strlen(hex), SIZE_MAX) < 0) {
			free(b.buf);
			return NULL;
		}
	}
	return b.buf;
}

/* Appends a copy of BASE to P's list; the copy, or NULL on ENOMEM. */
static char *list_add(struct oci_pull *p, const char *base)
{
	char **v = realloc(p->list, (p->n_list + 2) * sizeof(*v));

	if (!v)
		return NULL;
	p->list = v;
	if (!(v[p->n_list] = strdup(base)))
		return NULL;
	v[++p->n_list] = NULL;
	return v[p->n_list - 1];
}

/* A new mirror of P for list entry BASE (added to the list), zeroed; NULL on ENOMEM. */
static struct oci_mirror *mirror_add(struct oci_pull *p, const char *base)
{
	struct oci_mirror *v = realloc(p->m, (p->n + 1) * sizeof(*v));
	const char *b;

	if (!v)
		return NULL;
	p->m = v;
	if (!(b = list_add(p, base)))
		return NULL;
	memset(&v[p->n], 0, sizeof(*v));
	v[p->n].base = b;
	return &v[p->n++];
}

static int layout_init(struct oci_pull *p, const char *base, struct err *e)
{
	_cleanup_free_ char *path = NULL;
	char tag[OCI_TAG_MAX + 1];
	struct oci_mirror *m;

	if (oci_layout_parse(base, &path, tag, e) < 0)
		return err_wrap(e, "--repo");
	if (!(m = mirror_add(p, base)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
	m->is_layout = true;
	snprintf(m->tag, sizeof(m->tag), "%s", tag);
	if (!(m->layout_url = layout_url(path)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
	return 0;
}

/* A mirror for registry REF at endpoint EP (NULL: REF's own host over HTTPS). */
/* URL's HOST[:PORT] into BUF. */
static void url_host(const char *url, char *buf, size_t size)
{
	const char *h = strstr(url, "://"), *end;

	h = h ? h + 3 : url;
	end = h + strcspn(h, "/");
	snprintf(buf, size, "%.*s", (int)(end - h), h);
}

static int endpoint_add(struct oci_pull *p, const char *base, const struct oci_ref *ref,
			const struct oci_endpoint *ep, bool is_server, struct err *e)
{
	_cleanup_free_ char *own = NULL, *name = NULL;
	struct oci_mirror *m;
	bool failed = false;

	if (asprintf(&own, "https://%s", ref->host) < 0)
		own = NULL;
	if (own && ep && strcmp(ep->url, own) != 0 &&
	    asprintf(&name, "%s via %s", base, ep->url) < 0)
		name = NULL;
	if (!own || (ep && strcmp(ep->url, own) != 0 && !name) ||
	    !(m = mirror_add(p, name ? name : base)))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	m->ref = *ref;
	if (ep && !is_server)
		url_host(ep->url, m->host, sizeof(m->host));
	else
		snprintf(m->host, sizeof(m->host), "%s", ref->host);
	m->endpoint = ep ? strdup(ep->url) : TAKE_PTR(own);
	failed = !m->endpoint;
	if (ep) {
		m->override_path = ep->override_path;
		if (ep->ca_file && !(m->ca_file = strdup(ep->ca_file)))
			failed = true;
		if (ep->n_headers && (m->headers = calloc(ep->n_headers + 1, sizeof(char *))))
			for (size_t i = 0; i < ep->n_headers; i++)
				failed |= !(m->headers[i] = strdup(ep->headers[i]));
		failed |= ep->n_headers && !m->headers;
	}
	return failed ? err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry") : 0;
}

/*
 * An oci:// entry: one mirror, or with --registry-hosts the hosts its hosts.toml lists
 * with the pull capability, in the file's order, then its server (containerd's order:
 * core/remotes/docker/config/hosts.go, ConfigureHosts).
 */
static int registry_init(struct oci_pull *p, const char *base, const char *hosts_dir, struct err *e)
{
	struct oci_endpoint *eps = NULL;
	struct oci_ref ref;
	size_t n = 0, added = 0;
	int r = 0;

	if (oci_ref_parse(base, &ref, e) < 0)
		return err_wrap(e, "--repo");
	if (hosts_dir && oci_hosts_load(hosts_dir, ref.host, &eps, &n, e) < 0)
		return err_wrap(e, "--registry-hosts");
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!eps[i].pull)
			continue;
		/* oci_hosts_load gives the server last. */
		r = endpoint_add(p, base, &ref, &eps[i], i == n - 1, e);
		added++;
	}
	if (r == 0 && added == 0)
		r = endpoint_add(p, base, &ref, NULL, true, e);
	if (r == 0 && n > 0)
		log_kv(LOG_INFO, "registry", "hosts.toml: the registry's hosts, in order", "repo",
		       base, U64("hosts", added), LOG_END);
	oci_endpoints_free(eps, n);
	return r;
}

static int auth_load(struct oci_pull *p, const struct source_registry *r, struct err *e)
{
	static char *const default_path[] = {(char *)SOURCE_REGISTRY_AUTH_DEFAULT};
	bool dflt = !r || r->n_auth_files == 0;

	return oci_auth_files_load(dflt ? default_path : r->auth_files, dflt ? 1 : r->n_auth_files,
				   dflt, &p->auth, e);
}

int oci_pull_new(const struct oci_pull_opts *o, struct oci_pull **ret, struct err *e)
{
	struct oci_pull *p;
	bool any_oci = false, any_registry = false;

	*ret = NULL;
	for (size_t i = 0; i < o->n_mirrors; i++) {
		any_oci |= oci_is_registry(o->mirrors[i]) || oci_is_layout(o->mirrors[i]);
		any_registry |= oci_is_registry(o->mirrors[i]);
	}
	if (!any_oci)
		return 0;
	if (!(p = calloc(1, sizeof(*p))))
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	p->cache = o->cache;
	p->gce = o->registry ? o->registry->gce : SOURCE_GCE_AUTO;
	for (size_t i = 0; i < o->n_mirrors; i++) {
		const char *b = o->mirrors[i];
		int r = 0;

		if (oci_is_registry(b))
			r = registry_init(p, b, o->registry ? o->registry->hosts_dir : NULL, e);
		else if (oci_is_layout(b))
			r = layout_init(p, b, e);
		else if (!list_add(p, b))
			r = err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		if (r < 0)
			goto fail;
	}
	if (any_registry && auth_load(p, o->registry, e) < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	oci_pull_free(p);
	return -1;
}

char *const *oci_pull_mirrors(const struct oci_pull *p, size_t *ret_n)
{
	*ret_n = p->n_list;
	return p->list;
}

static void mirror_forget_manifest(struct oci_mirror *m)
{
	oci_manifest_free(m->manifest);
	free(m->manifest_bytes);
	m->manifest = NULL;
	m->manifest_bytes = NULL;
	m->manifest_len = 0;
	m->digest[0] = '\0';
}

void oci_pull_free(struct oci_pull *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		mirror_forget_manifest(&p->m[i]);
		oci_client_free(p->m[i].client);
		free(p->m[i].layout_url);
		free(p->m[i].endpoint);
		free(p->m[i].ca_file);
		for (size_t k = 0; p->m[i].headers && p->m[i].headers[k]; k++)
			free(p->m[i].headers[k]);
		free(p->m[i].headers);
	}
	for (size_t i = 0; i < p->n_list; i++)
		free(p->list[i]);
	free(p->list);
	free(p->m);
	oci_auth_files_free(p->auth);
	oci_cred_done(&p->gce_cred);
	free(p);
}

static struct oci_mirror *mirror_of(struct oci_pull *p, const char *base)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (p->m[i].base == base || strcmp(p->m[i].base, base) == 0)
			return &p->m[i];
	return NULL;
}

/*
 * The GCE metadata server's token for a Google registry HOST (--registry-gce-metadata),
 * asked once a run: 1 with *RET (borrowed), 0 when there is none to use, -1 with e set.
 */
static int gce_cred(struct oci_pull *p, struct fetcher *f, const char *host,
		    const struct oci_cred **ret, struct err *e)
{
	int r;

	if (p->gce == SOURCE_GCE_NO || !oci_host_is_gcp(host))
		return 0;
	if (!p->gce_asked) {
		p->gce_asked = true;
		if ((r = oci_gce_token(f, &p->gce_cred, e)) < 0)
			return err_wrap(e, "registry '%s': --registry-gce-metadata", host);
		p->has_gce = r == 0;
		if (r == 1 && p->gce == SOURCE_GCE_YES)
			return err_set(
				e, EXIT_UNREACHABLE,
				"registry '%s': --registry-gce-metadata yes, but no GCE metadata server answered",
				host);
		log_kv(LOG_INFO, "registry",
		       p->has_gce ? "credentials from the GCE metadata server's token"
				  : "no GCE metadata server: asking anonymously",
		       "host", host, LOG_END);
	}
	*ret = &p->gce_cred;
	return p->has_gce;
}

/*
 * M's client, made with the credentials the auth files give its host and name, else (for
 * Google's registries) the GCE metadata server's token.
 */
static int mirror_client(struct oci_pull *p, struct oci_mirror *m, struct fetcher *f, struct err *e)
{
	struct oci_cred cred = {0};
	const struct oci_cred *use = &cred, *gce = NULL;
	int r, found = 0;

	if (m->client)
		return 0;
	if (p->auth && (found = oci_auth_lookup(p->auth, m->host, m->ref.name, &cred)) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
	if (found == 0 && (r = gce_cred(p, f, m->host, &gce, e)) != 0) {
		if (r < 0)
			return -1;
		use = gce;
	}
	r = oci_client_new(&(struct oci_client_opts){.endpoint = m->endpoint,
						     .override_path = m->override_path,
						     .ca_file = m->ca_file,
						     .headers = (const char *const *)m->headers,
						     .host = m->host,
						     .name = m->ref.name,
						     .actions = "pull",
						     .username = use->username,
						     .password = use->password,
						     .identity_token = use->identity_token},
			   &m->client, e);
	log_kv(LOG_DEBUG, "registry", "client", "host", m->host, "name", m->ref.name, "credentials",
	       found ? "auth file" : (use != &cred ? "GCE metadata server" : "none"), LOG_END);
	oci_cred_done(&cred);
	return r;
}

/* The digest of M's manifest as the registry names it: by a HEAD. */
static enum fetch_result manifest_head(struct oci_mirror *m, struct fetcher *f,
				       char ret[OCI_DIGEST_SIZE], struct err *e)
{
	_cleanup_free_ char *path = NULL;
	struct oci_response a = {0};
	enum fetch_result r;

	if (asprintf(&path, "manifests/%s", oci_ref_manifest(&m->ref)) < 0) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	r = oci_send(
		m->client, f,
		&(struct oci_request){.method = "HEAD", .path = path, .accept = OCI_MT_MANIFEST},
		&a, e);
	oci_response_done(&a);
	if (r != FETCH_OK)
		return r;
	if (a.hdr.digest[0] && !oci_digest_is_valid(a.hdr.digest)) {
		err_set(e, EXIT_VERIFY,
			"registry '%s': the manifest's Docker-Content-Digest '%.80s' is not a sha256 digest",
			m->host, a.hdr.digest);
		return FETCH_PERMANENT;
	}
	if (m->ref.digest[0] && a.hdr.digest[0] && strcmp(a.hdr.digest, m->ref.digest) != 0) {
		err_set(e, EXIT_VERIFY,
			"registry '%s': asked for manifest %s, it names %s (Docker-Content-Digest)",
			m->host, m->ref.digest, a.hdr.digest);
		return FETCH_PERMANENT;
	}
	/* Both are valid digests (or the header empty): they fit. */
	memcpy(ret, m->ref.digest[0] ? m->ref.digest : a.hdr.digest, OCI_DIGEST_SIZE - 1);
	ret[OCI_DIGEST_SIZE - 1] = '\0';
	return FETCH_OK;
}

/* BUF is manifest DIGEST (from WHERE): parsed into M, which keeps the bytes. */
static enum fetch_result manifest_take(struct oci_mirror *m, char **buf, size_t len,
				       const char *digest, const char *where, struct err *e)
{
	struct oci_manifest *man = NULL;
	char own[OCI_DIGEST_SIZE] = "sha256:";
	int same;

	/*
	 * A registry that names no digest for a tag (the distribution spec does not require
	 * Docker-Content-Digest): the bytes' own. The manifest is not trusted either way.
	 */
	if (!digest[0]) {
		if (sha256_hex_of(*buf, len, own + 7) < 0) {
			err_openssl(e, EXIT_UNEXPECTED, "sha256");
			return FETCH_PERMANENT;
		}
		log_kv(LOG_DEBUG, "registry", "no digest named: the manifest's own", "mirror",
		       m->base, "digest", own, LOG_END);
		digest = own;
	}
	same = oci_sha256_is(*buf, len, digest + 7);
	if (same < 0) {
		err_openssl(e, EXIT_UNEXPECTED, "sha256");
		return FETCH_PERMANENT;
	}
	if (!same) {
		err_set(e, EXIT_VERIFY,
			"%s: the manifest's bytes do not hash to %s, the digest the registry names",
			where, digest);
		return FETCH_PERMANENT;
	}
	if (oci_manifest_parse(*buf, len, &man, e) < 0) {
		err_wrap(e, "%s", where);
		return FETCH_PERMANENT;
	}
	mirror_forget_manifest(m);
	m->manifest = man;
	m->manifest_bytes = TAKE_PTR(*buf);
	m->manifest_len = len;
	snprintf(m->digest, sizeof(m->digest), "%s", digest);
	return FETCH_OK;
}

/* GET of M's manifest; DIGEST the HEAD's (or the reference's). */
static enum fetch_result manifest_get(struct oci_mirror *m, struct fetcher *f, const char *digest,
				      struct err *e)
{
	_cleanup_free_ char *path = NULL;
	struct oci_response a = {0};
	const char *want = digest;
	enum fetch_result r;

	if (asprintf(&path, "manifests/%s", digest[0] ? digest : oci_ref_manifest(&m->ref)) < 0) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	r = oci_send(m->client, f,
		     &(struct oci_request){
			     .path = path, .accept = OCI_MT_MANIFEST, .max = OCI_MANIFEST_MAX},
		     &a, e);
	if (r != FETCH_OK) {
		if (e->code == EXIT_VERIFY)
			err_wrap(e, "registry '%s': manifest %s", m->host, m->base);
		return r;
	}
	if (a.hdr.digest[0] && digest[0] && strcmp(a.hdr.digest, digest) != 0) {
		err_set(e, EXIT_VERIFY,
			"registry '%s': asked for manifest %s, the answer names %.80s (Docker-Content-Digest)",
			m->host, digest, a.hdr.digest);
		oci_response_done(&a);
		return FETCH_PERMANENT;
	}
	if (!want[0])
		want = a.hdr.digest;
	if (want[0] && !oci_digest_is_valid(want)) {
		err_set(e, EXIT_VERIFY,
			"registry '%s': the manifest's Docker-Content-Digest '%.80s' is not sha256:HEX",
			m->host, want);
		oci_response_done(&a);
		return FETCH_PERMANENT;
	}
	r = manifest_take(m, &a.body, a.len, want, m->base, e);
	oci_response_done(&a);
	return r;
}

/* The cached manifest, when it is DIGEST and was read from M: 1 and M's manifest set. */
static int manifest_cached(struct oci_mirror *m, const struct cache_manifest_kept *k,
			   const char *digest)
{
	struct err ignored;
	char *buf = k->buf;

	err_clear(&ignored);
	if (!k->buf || strcmp(k->digest, digest) != 0)
		return 0;
	if (manifest_take(m, &buf, k->len, digest, "cached manifest", &ignored) != FETCH_OK) {
		log_msg(LOG_WARN, "registry", "%s", ignored.msg);
		return 0;
	}
	return 1;
}

/* M's manifest for this run: read once (the cached bytes when the HEAD names them). */
static enum fetch_result registry_manifest(struct oci_pull *p, struct oci_mirror *m,
					   struct fetcher *f, struct cache *cache, bool *ret_cached,
					   struct err *e)
{
	struct cache_manifest_kept k = {0};
	char digest[OCI_DIGEST_SIZE];
	enum fetch_result r;
	bool kept;

	*ret_cached = false;
	if (m->manifest)
		return FETCH_OK;
	kept = cache && cache_manifest_get(cache, m->base, &k) == 1;
	if (mirror_client(p, m, f, e) < 0) {
		free(k.buf);
		return FETCH_PERMANENT;
	}
	/* How the registry asked to be answered last time: the HEAD is its one request. */
	if (kept)
		oci_client_auth_prime(m->client, k.auth);
	r = manifest_head(m, f, digest, e);
	if (r == FETCH_OK && digest[0] && kept && manifest_cached(m, &k, digest)) {
		k.buf = NULL; /* taken */
		*ret_cached = true;
	} else if (r == FETCH_OK) {
		r = manifest_get(m, f, digest, e);
		/* A registry that named no digest: the bytes may still be the cached index's. */
		*ret_cached = r == FETCH_OK && kept && strcmp(m->digest, k.digest) == 0;
	}
	free(k.buf);
	return r;
}

/* An oci-layout: mirror's manifest: index.json's entry for the tag, then its blob. */
static enum fetch_result layout_manifest(struct oci_mirror *m, struct fetcher *f, struct err *e)
{
	_cleanup_free_ char *idx_url = fetch_url_join(m->layout_url, "index.json");
	_cleanup_free_ char *buf = NULL, *blob_url = NULL, *where = NULL;
	char digest[OCI_DIGEST_SIZE];
	size_t len = 0;
	bool missing;
	enum fetch_result r;

	if (m->manifest)
		return FETCH_OK;
	if (!idx_url) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
		return FETCH_PERMANENT;
	}
	if ((r = fetch_to_memory(f, idx_url, OCI_MANIFEST_MAX, &buf, &len, e)) != FETCH_OK)
		return r;
	if (oci_layout_find(buf, len, m->tag, digest, &missing, e) < 0) {
		err_wrap(e, "'%s'", m->base);
		return missing ? FETCH_MISSING : FETCH_PERMANENT;
	}
	free(TAKE_PTR(buf));
	if (asprintf(&blob_url, "%s/blobs/sha256/%s", m->layout_url, digest + 7) < 0 ||
	    asprintf(&where, "'%s': manifest %s", m->base, digest) < 0) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
		return FETCH_PERMANENT;
	}
	if ((r = fetch_to_memory(f, blob_url, OCI_MANIFEST_MAX, &buf, &len, e)) != FETCH_OK)
		return r == FETCH_MISSING ? FETCH_PERMANENT : r;
	return manifest_take(m, &buf, len, digest, where, e);
}

/* Blob L (the file WHAT) of M into memory, checked against L's size and digest. */
static enum fetch_result blob_read(struct oci_mirror *m, struct fetcher *f,
				   const struct oci_layer *l, const char *what,
				   struct oci_response *ret, struct err *e)
{
	_cleanup_free_ char *url = NULL;
	struct oci_response a = {0};
	enum fetch_result r;
	int same;

	if (m->is_layout) {
		if (asprintf(&url, "%s/blobs/sha256/%s", m->layout_url, l->sha256) < 0)
			url = NULL;
	} else if (asprintf(&url, "blobs/sha256:%s", l->sha256) < 0) {
		url = NULL;
	}
	if (!url) {
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry");
		return FETCH_PERMANENT;
	}
	/* One byte more than the descriptor says: a longer blob is seen, not cut. */
	if (m->is_layout)
		r = fetch_to_memory(f, url, (size_t)l->size + 1, &a.body, &a.len, e);
	else
		r = oci_send(m->client, f, &(struct oci_request){.path = url, .max = l->size + 1},
			     &a, e);
	if (r != FETCH_OK)
		return r == FETCH_MISSING ? FETCH_PERMANENT : r;
	same = a.len == l->size ? oci_sha256_is(a.body, a.len, l->sha256) : 0;
	if (same != 1) {
		err_set(e, EXIT_VERIFY,
			"'%s': the %s blob sha256:%.12s... has %zu bytes that do not hash to its digest (the manifest says %llu bytes)",
			m->base, what, l->sha256, a.len, (unsigned long long)l->size);
		oci_response_done(&a);
		return FETCH_PERMANENT;
	}
	*ret = a;
	return FETCH_OK;
}

/* The index and signature the manifest names, from the cache when it holds those bytes. */
static bool index_from_cache(struct oci_pull *p, struct oci_mirror *m, struct oci_index_read *r)
{
	const struct oci_manifest *man = m->manifest;
	struct err ignored;

	err_clear(&ignored);
	if (p->cache &&
	    cache_load_index(p->cache, &r->json, &r->json_len, &r->sig, &r->sig_len, &ignored) ==
		    0 &&
	    r->json_len == man->index.size && r->sig_len == man->sig.size &&
	    oci_sha256_is(r->json, r->json_len, man->index.sha256) == 1 &&
	    oci_sha256_is(r->sig, r->sig_len, man->sig.sha256) == 1)
		return true;
	free(r->json);
	free(r->sig);
	r->json = r->sig = NULL;
	return false;
}

enum fetch_result oci_pull_index(struct oci_pull *p, struct fetcher *f, const char *base,
				 struct oci_index_read *r, struct err *e)
{
	struct oci_mirror *m = mirror_of(p, base);
	struct oci_response b = {0};
	enum fetch_result res;
	bool cached = false;

	if (!m) {
		err_set(e, EXIT_UNEXPECTED, "'%s' is not an OCI mirror", base);
		return FETCH_PERMANENT;
	}
	/* Each index attempt asks again: a tag moves between rounds. */
	mirror_forget_manifest(m);
	res = m->is_layout ? layout_manifest(m, f, e)
			   : registry_manifest(p, m, f, p->cache, &cached, e);
	if (res != FETCH_OK)
		return res;
	if (cached && index_from_cache(p, m, r)) {
		r->from_cache = true;
		log_kv(LOG_INFO, "registry",
		       "the manifest is the cached index's: no blob asked for", "mirror", base,
		       "digest", m->digest, LOG_END);
		return FETCH_OK;
	}
	if ((res = blob_read(m, f, &m->manifest->index, "index.json", &b, e)) != FETCH_OK)
		return res;
	r->json = b.body;
	r->json_len = b.len;
	memset(&b, 0, sizeof(b));
	if ((res = blob_read(m, f, &m->manifest->sig, "index.json.sig", &b, e)) != FETCH_OK) {
		free(r->json);
		r->json = NULL;
		return res;
	}
	r->sig = b.body;
	r->sig_len = b.len;
	return FETCH_OK;
}

int oci_pull_store(struct oci_pull *p, const char *base, struct cache *cache, struct err *e)
{
	struct oci_mirror *m = mirror_of(p, base);
	char auth[1536] = "";

	if (!m || m->is_layout || !m->manifest_bytes)
		return cache_manifest_put(cache, &(struct cache_manifest){0}, e);
	if (m->client)
		oci_client_auth_get(m->client, auth, sizeof(auth));
	return cache_manifest_put(cache,
				  &(struct cache_manifest){.ref = m->base,
							   .digest = m->digest,
							   .auth = auth,
							   .buf = m->manifest_bytes,
							   .len = m->manifest_len},
				  e);
}

/* M's manifest's layer for PKG: FETCH_OK and *RET, FETCH_MISSING, or FETCH_PERMANENT. */
static enum fetch_result package_layer(struct oci_pull *p, struct oci_mirror *m, struct fetcher *f,
				       const struct repo_package *pkg, const struct oci_layer **ret,
				       struct err *e)
{
	bool cached;
	enum fetch_result r = m->is_layout ? layout_manifest(m, f, e)
					   : registry_manifest(p, m, f, p->cache, &cached, e);
	int listed;

	if (r != FETCH_OK)
		return r;
	listed = oci_manifest_package(m->manifest, pkg, ret, e);
	if (listed < 0) {
		err_wrap(e, "'%s'", m->base);
		return FETCH_PERMANENT;
	}
	if (listed == 0) {
		err_set(e, EXIT_UNREACHABLE,
			"'%s': not carried by this mirror: its manifest does not list package '%s' (sha256:%.12s...)",
			m->base, pkg->path, pkg->sha256);
		return FETCH_MISSING;
	}
	return FETCH_OK;
}

enum fetch_result oci_pull_package(struct oci_pull *p, struct fetcher *f, const char *base,
				   const struct repo_package *pkg, struct fetch_file *ff,
				   struct err *e)
{
	struct oci_mirror *m = mirror_of(p, base);
	const struct oci_layer *l;
	_cleanup_free_ char *url = NULL;
	enum fetch_result r;

	if (!m) {
		err_set(e, EXIT_UNEXPECTED, "'%s' is not an OCI mirror", base);
		return FETCH_PERMANENT;
	}
	if ((r = package_layer(p, m, f, pkg, &l, e)) != FETCH_OK)
		return r;
	if (m->is_layout) {
		if (asprintf(&url, "%s/blobs/sha256/%s", m->layout_url, l->sha256) < 0) {
			err_errno(e, EXIT_UNEXPECTED, ENOMEM, "oci-layout");
			return FETCH_PERMANENT;
		}
		r = fetch_to_file(f, base, url, ff, e);
	} else {
		r = oci_blob_to_file(m->client, f, base, ff, e);
	}
	if (r != FETCH_MISSING)
		return r;
	/*
	 * The manifest lists the package, yet its blob is not there: not a partial mirror
	 * (whose manifest would not list it) but a repository that contradicts itself, e.g.
	 * a blob removed by garbage collection, or a manifest naming a blob that only another
	 * repository holds. The next mirror is asked; this one is not "missing" it.
	 */
	err_wrap(
		e,
		"'%s': its manifest lists package '%s' (sha256:%.12s...) but the %s has no such blob",
		base, pkg->path, pkg->sha256, m->is_layout ? "layout" : "repository");
	err_hint(
		e,
		"the repository contradicts its own manifest (a blob removed, or one only another repository holds): push it again with 'nvidia-driver-installer mirror --to %s', or ask the registry's operator",
		base);
	return FETCH_PERMANENT;
}

enum fetch_result oci_pull_probe(struct oci_pull *p, struct fetcher *f, const char *base,
				 const struct repo_package *pkg, struct err *e)
{
	struct oci_mirror *m = mirror_of(p, base);
	const struct oci_layer *l;

	if (!m) {
		err_set(e, EXIT_UNEXPECTED, "'%s' is not an OCI mirror", base);
		return FETCH_PERMANENT;
	}
	return package_layer(p, m, f, pkg, &l, e);
}
