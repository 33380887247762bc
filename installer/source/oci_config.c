// SPDX-License-Identifier: Apache-2.0
/*
 * Registry credentials from Docker config.json files and kubernetes.io/dockerconfigjson
 * Secrets, read and matched to a registry as the kubelet does, so that the Secret a pod
 * pulls its image with answers for the driver repository in the same registry:
 *
 *  - an entry's fields as kubernetes/kubernetes pkg/credentialprovider/config.go's
 *    DockerConfigEntry.UnmarshalJSON reads them: "username", "password", and "auth",
 *    base64 (Go's base64.StdEncoding) of USER:PASSWORD, which wins over the two
 *    (decodeDockerConfigFieldAuth); field names matched without regard to case, as Go's
 *    encoding/json matches them; anything else in an entry ("email") ignored. Docker's
 *    "identitytoken" (docker/cli cli/config/types/authconfig.go) is kept besides.
 *  - the keys as pkg/credentialprovider/keyring.go's BasicDockerKeyring.Add indexes them
 *    (http:// or https:// stripped, a path of "/v1/..." or "/v2/..." cut to what follows,
 *    "host/" the host) and Lookup matches them: every file's keys in one index sorted in
 *    reverse byte order, so that "quay.io/coreos" is tried before "quay.io", each matched
 *    by URLsMatch (the port exact, the same number of host labels, each label a
 *    filepath.Match glob, the key's path a prefix of the repository's), and, when none
 *    matches, "index.docker.io" (what "https://index.docker.io/v1/" becomes) for docker.io
 *    (isDefaultRegistryMatch).
 *
 * A key the kubelet could not parse is ignored, with a warning, as the kubelet ignores it
 * (keyring.go: "Entry %q in dockercfg invalid"); an entry whose fields it could not decode
 * fails the whole Secret there (json.Unmarshal's error), and the file here. No secret is
 * ever written to a log or an error: the messages name the file, the key and the field.
 *
 * Last, the credentials a GKE node has without any file: its service account's token from
 * the GCE metadata server (oci_gce_token), for Google's registries (oci_host_is_gcp).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/fetch.h"
#include "source/oci_config.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/fs.h"

DEFINE_POINTER_CLEANUP(json_tokener, json_tokener_free)

/* The default registry's key, as keyring.go's defaultRegistryHost. */
#define DOCKER_HUB_KEY "index.docker.io"

struct auth_entry {
	char *key;   /* HOST[:PORT][/PATH], as keyring.go indexes it */
	size_t file; /* which file, then which entry of it: ties keep the order given */
	size_t seq;
	struct oci_cred cred;
};

struct oci_auth_files {
	struct auth_entry *v;
	size_t n, cap;
};

void oci_cred_done(struct oci_cred *c)
{
	if (!c)
		return;
	str_free_wiped(c->username);
	str_free_wiped(c->password);
	str_free_wiped(c->identity_token);
	*c = (struct oci_cred){0};
}

void oci_auth_files_free(struct oci_auth_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].key);
		oci_cred_done(&f->v[i].cred);
	}
	free(f->v);
	free(f);
}

/* ---- Go's base64.StdEncoding, as decodeDockerConfigFieldAuth decodes "auth" ---- */

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decodes S as Go's base64.StdEncoding.DecodeString does: padded to a multiple of four,
 * '=' only as the last one or two of the last quantum, '\r' and '\n' skipped anywhere,
 * the unused bits of the last quantum not checked. Returns the malloc'd, NUL-terminated
 * bytes and their length, or NULL: errno EINVAL for text that is not that, ENOMEM.
 */
static char *b64_decode(const char *s, size_t *ret_len)
{
	size_t n = strlen(s), len = 0, q = 0, pad = 0;
	uint32_t acc = 0;
	char *out = malloc(n / 4 * 3 + 3);

	if (!out)
		return NULL;
	for (; *s; s++) {
		int v;

		if (*s == '\r' || *s == '\n')
			continue;
		if (*s == '=' && q >= 2) {
			pad++, q++;
		} else if (pad || (v = b64_value(*s)) < 0) {
			goto bad; /* data after padding, or not of the alphabet */
		} else {
			acc = acc << 6 | (uint32_t)v;
			q++;
		}
		if (q < 4)
			continue;
		acc <<= 6 * pad;
		out[len++] = (char)(acc >> 16);
		if (pad < 2)
			out[len++] = (char)(acc >> 8 & 0xff);
		if (pad < 1)
			out[len++] = (char)(acc & 0xff);
		if (pad && s[1] && strspn(s + 1, "\r\n") != strlen(s + 1))
			goto bad; /* a quantum after the padded one */
		acc = 0, q = 0;
		if (pad)
			break;
	}
	if (q != 0)
		goto bad; /* not a multiple of four, or one '=' short */
	out[len] = '\0';
	*ret_len = len;
	return out;
bad:
	explicit_bzero(out, n / 4 * 3 + 3);
	free(out);
	errno = EINVAL;
	return NULL;
}

/* ---- loading ---- */

static char *dup_nonempty(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* Where a file's errors are made: the file, and the key being read. */
struct auth_ctx {
	const char *path;
	const char *key;
	size_t file;
	struct oci_auth_files *f;
	bool *noted_helpers;
};

static int bad_entry(const struct auth_ctx *c, struct err *e, const char *what)
{
	err_set(e, EXIT_USAGE, "registry auth '%s': auths '%s': %s", c->path, c->key, what);
	err_hint(
		e,
		"correct the entry (a Secret: kubectl create secret docker-registry makes it right), or remove the file from --registry-auth");
	return -1;
}

/*
 * The string field NAME of ENTRY (any case, as Go matches it; of several, the last, as Go
 * keeps it), NULL when absent.
 */
static int entry_string(const struct auth_ctx *c, json_object *entry, const char *name,
			const char **ret, struct err *e)
{
	*ret = NULL;
	json_object_object_foreach(entry, k, v)
	{
		char what[96];

		if (strcasecmp(k, name) != 0)
			continue;
		if (!v)
			continue; /* null: Go leaves the field as it was */
		if (!json_object_is_type(v, json_type_string)) {
			snprintf(what, sizeof(what), "\"%s\" is not a string", name);
			return bad_entry(c, e, what);
		}
		*ret = json_object_get_string(v);
	}
	return 0;
}

/* "auth" decoded into C's username and password (config.go's decodeDockerConfigFieldAuth). */
static int decode_auth(const struct auth_ctx *c, const char *auth, struct oci_cred *cred,
		       struct err *e)
{
	size_t len = 0;
	char *plain = b64_decode(auth, &len), *colon;
	int r = 0;

	if (!plain && errno == ENOMEM)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
	if (!plain)
		return bad_entry(c, e, "\"auth\" is not base64 (RFC 4648, padded)");
	colon = strchr(plain, ':');
	if (strlen(plain) != len)
		r = bad_entry(c, e, "\"auth\" decodes to a NUL byte");
	else if (!colon)
		r = bad_entry(c, e, "\"auth\" is not base64 of USER:PASSWORD (no ':')");
	if (r == 0) {
		*colon = '\0';
		str_free_wiped(cred->username);
		str_free_wiped(cred->password);
		cred->username = dup_nonempty(plain);
		cred->password = dup_nonempty(colon + 1);
		if ((*plain && !cred->username) || (colon[1] && !cred->password))
			r = err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
	}
	explicit_bzero(plain, len);
	free(plain);
	return r;
}

/* ENTRY's credentials into *RET (all NULL when it has none). */
static int entry_cred(const struct auth_ctx *c, json_object *entry, struct oci_cred *ret,
		      struct err *e)
{
	const char *user, *pass, *auth, *token, *email;
	struct oci_cred cred = {0};

	if (!json_object_is_type(entry, json_type_object))
		return bad_entry(c, e, "not a JSON object");
	if (entry_string(c, entry, "username", &user, e) < 0 ||
	    entry_string(c, entry, "password", &pass, e) < 0 ||
	    entry_string(c, entry, "auth", &auth, e) < 0 ||
	    entry_string(c, entry, "identitytoken", &token, e) < 0 ||
	    entry_string(c, entry, "email", &email, e) < 0)
		return -1;
	cred.username = dup_nonempty(user);
	cred.password = dup_nonempty(pass);
	cred.identity_token = dup_nonempty(token);
	if ((user && *user && !cred.username) || (pass && *pass && !cred.password) ||
	    (token && *token && !cred.identity_token)) {
		oci_cred_done(&cred);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
	}
	if (auth && *auth && decode_auth(c, auth, &cred, e) < 0) {
		oci_cred_done(&cred);
		return -1;
	}
	*ret = cred;
	return 0;
}

/*
 * KEY as keyring.go's Add indexes it, into a malloc'd string, or NULL: errno EINVAL for a
 * key url.Parse would refuse or read otherwise than this does (userinfo, a query, escapes,
 * a port not all digits, no host), ENOMEM.
 */
static char *index_key(const char *key)
{
	const char *rest = key, *slash;
	size_t host_len, colon;
	char *out;

	if (strncmp(rest, "https://", 8) == 0)
		rest += 8;
	else if (strncmp(rest, "http://", 7) == 0)
		rest += 7;
	if (!*rest || strpbrk(rest, "@?#%\\ \t\r\n")) {
		errno = EINVAL;
		return NULL;
	}
	slash = strchr(rest, '/');
	host_len = slash ? (size_t)(slash - rest) : strlen(rest);
	colon = strcspn(rest, ":");
	if (host_len == 0 || colon == 0 ||
	    (colon < host_len && rest[0] != '[' &&
	     strspn(rest + colon + 1, "0123456789") != host_len - colon - 1)) {
		errno = EINVAL;
		return NULL;
	}
	/* "/v1/..." and "/v2/..." stand for what follows; "/" alone is the host. */
	if (slash && (strncmp(slash, "/v1/", 4) == 0 || strncmp(slash, "/v2/", 4) == 0))
		slash += 3;
	if (slash && strcmp(slash, "/") == 0)
		slash = NULL;
	if (asprintf(&out, "%.*s%s", (int)host_len, rest, slash ? slash : "") < 0)
		return NULL;
	return out;
}

static int add_entry(const struct auth_ctx *c, char *key, struct oci_cred *cred, struct err *e)
{
	struct oci_auth_files *f = c->f;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;
		struct auth_entry *v = reallocarray(f->v, cap, sizeof(*v));

		if (!v)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n] = (struct auth_entry){.key = key, .file = c->file, .seq = f->n, .cred = *cred};
	*cred = (struct oci_cred){0};
	f->n++;
	return 0;
}

/* One "auths" member: its key indexed, its credentials, into C's files. */
static int load_entry(struct auth_ctx *c, const char *key, json_object *entry, struct err *e)
{
	struct oci_cred cred = {0};
	char *ikey;

	c->key = key;
	if (entry_cred(c, entry, &cred, e) < 0)
		return -1;
	if (!cred.username && !cred.password && !cred.identity_token) {
		/* docker login's placeholder beside a credsStore: nothing to send */
		log_kv(LOG_DEBUG, "source", "registry auth: an entry without credentials", "file",
		       c->path, "key", key, LOG_END);
		return 0;
	}
	ikey = index_key(key);
	if (!ikey && errno == ENOMEM) {
		oci_cred_done(&cred);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
	}
	if (!ikey) {
		/* A key with userinfo ("https://user:pass@host") is named from its host on. */
		const char *at = strchr(key, '@'), *shown = at ? at + 1 : key;

		log_kv(LOG_WARN, "source",
		       "registry auth: a key that is not a registry [scheme://]HOST[:PORT][/PATH], ignored as the kubelet ignores it",
		       "file", c->path, "key", shown, LOG_END);
		oci_cred_done(&cred);
		return 0;
	}
	if (add_entry(c, ikey, &cred, e) < 0) {
		free(ikey);
		oci_cred_done(&cred);
		return -1;
	}
	return 0;
}

static int load_root(struct auth_ctx *c, json_object *root, struct err *e)
{
	json_object *auths = NULL;

	if (!json_object_is_type(root, json_type_object))
		return err_set(e, EXIT_USAGE, "registry auth '%s': not a JSON object", c->path);
	json_object_object_foreach(root, k, v)
	{
		if (strcasecmp(k, "auths") == 0) {
			auths = v;
		} else if ((strcasecmp(k, "credsStore") == 0 ||
			    strcasecmp(k, "credHelpers") == 0) &&
			   !*c->noted_helpers) {
			*c->noted_helpers = true;
			log_kv(LOG_INFO, "source",
			       "registry auth: credsStore and credHelpers not used, the installer runs no credential helper; its credentials are those of \"auths\"",
			       "file", c->path, LOG_END);
		}
	}
	if (!auths)
		return 0;
	if (!json_object_is_type(auths, json_type_object))
		return err_set(e, EXIT_USAGE, "registry auth '%s': \"auths\" is not a JSON object",
			       c->path);
	json_object_object_foreach(auths, key, entry)
	{
		if (load_entry(c, key, entry, e) < 0)
			return -1;
	}
	return 0;
}

/* BUF, LEN bytes of PATH, parsed strictly: one JSON value, white space after it. */
static int parse_file(struct auth_ctx *c, const char *buf, size_t len, struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(64);
	_cleanup_(json_object_putp) json_object *root = NULL;
	size_t end;

	if (!tok)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth '%s'", c->path);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success)
		return err_set(e, EXIT_USAGE, "registry auth '%s': not JSON at byte %zu: %s",
			       c->path, json_tokener_get_parse_end(tok),
			       json_tokener_error_desc(json_tokener_get_error(tok)));
	end = json_tokener_get_parse_end(tok);
	if (strspn(buf + end, " \t\r\n") != len - end)
		return err_set(e, EXIT_USAGE,
			       "registry auth '%s': not JSON: bytes after the document at byte %zu",
			       c->path, end);
	return load_root(c, root, e);
}

static int load_file(struct auth_ctx *c, bool default_path, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	if (fs_read_path(c->path, OCI_AUTH_FILE_MAX, &buf, &len, e) < 0) {
		if (default_path && err_errnum(e) == ENOENT) {
			err_clear(e);
			return 0;
		}
		e->code = EXIT_USAGE;
		if (err_errnum(e) == EFBIG)
			err_set(e, EXIT_USAGE,
				"registry auth '%s': larger than %u bytes, more than a Kubernetes Secret holds",
				c->path, OCI_AUTH_FILE_MAX);
		else
			err_wrap(e, "registry auth");
		err_hint(
			e,
			"--registry-auth (NVIDIA_REGISTRY_AUTH) names a Docker config.json or a mounted Secret's .dockerconfigjson");
		return -1;
	}
	r = parse_file(c, buf, len, e);
	explicit_bzero(buf, len);
	if (r < 0)
		err_hint(
			e,
			"--registry-auth (NVIDIA_REGISTRY_AUTH) names a Docker config.json or a mounted Secret's .dockerconfigjson");
	return r;
}

/* keyring.go's order: keys in reverse byte order; one key's entries as given. */
static int entry_cmp(const void *a, const void *b)
{
	const struct auth_entry *x = a, *y = b;
	int c = strcmp(y->key, x->key);

	if (c)
		return c;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int oci_auth_files_load(char *const *paths, size_t n, bool default_path,
			struct oci_auth_files **ret, struct err *e)
{
	_cleanup_(oci_auth_files_freep) struct oci_auth_files *f = calloc(1, sizeof(*f));
	bool noted_helpers = false;

	if (!f)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry auth");
	for (size_t i = 0; i < n; i++) {
		struct auth_ctx c = {
			.path = paths[i], .file = i, .f = f, .noted_helpers = &noted_helpers};

		if (load_file(&c, default_path, e) < 0)
			return -1;
	}
	if (f->n > 1)
		qsort(f->v, f->n, sizeof(*f->v), entry_cmp);
	*ret = TAKE_PTR(f);
	return 0;
}

/* ---- matching: keyring.go's URLsMatch ---- */

/* A class's character at *P as Go's getEsc reads it: '\\' escapes; '-', ']' or the end bad. */
static bool glob_esc(const char **p, char *ret)
{
	const char *s = *p;

	if (!*s || *s == '-' || *s == ']')
		return false;
	if (*s == '\\' && !*++s)
		return false;
	*ret = *s++;
	*p = s;
	return *s != '\0'; /* a class must go on to its ']' */
}

/*
 * One element of a filepath.Match pattern at *P against the character C: 1 when it
 * matches (and *P past it), 0 when not, -1 for a pattern Go refuses (ErrBadPattern, which
 * the kubelet takes as no match). Bytes, not runes: host names are ASCII.
 */
static int glob_one(const char **p, char c)
{
	const char *s = *p;
	bool neg, hit = false;
	size_t ranges = 0;

	if (*s == '?' || (*s != '[' && *s != '\\')) {
		*p = s + 1;
		return *s == '?' || *s == c;
	}
	if (*s == '\\') {
		if (!s[1])
			return -1;
		*p = s + 2;
		return s[1] == c;
	}
	neg = *++s == '^';
	s += neg;
	while (!(*s == ']' && ranges > 0)) {
		char lo, hi;

		if (!glob_esc(&s, &lo))
			return -1;
		hi = lo;
		if (*s == '-') {
			s++;
			if (!glob_esc(&s, &hi))
				return -1;
		}
		hit |= lo <= c && c <= hi;
		ranges++;
	}
	*p = s + 1;
	return hit != neg;
}

/* Whether LABEL matches the glob PAT as Go's filepath.Match (a bad pattern: no). */
static bool glob_match(const char *pat, const char *label)
{
	const char *star_p = NULL, *star_s = NULL;

	while (*label) {
		int r;

		if (*pat == '*') {
			while (*pat == '*')
				pat++;
			star_p = pat, star_s = label;
			continue;
		}
		r = *pat ? glob_one(&pat, *label) : 0;
		if (r < 0)
			return false;
		if (r) {
			label++;
			continue;
		}
		if (!star_p)
			return false;
		pat = star_p;
		label = ++star_s;
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

/* A URL's host split as net.SplitHostPort splits it, its port "" when it has none. */
struct hostport {
	char host[256];
	char port[16];
};

static bool split_host_port(const char *s, size_t len, struct hostport *ret)
{
	const char *colon = memrchr(s, ':', len);
	size_t hl = len;

	ret->port[0] = '\0';
	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (close && (size_t)(close - s) + 1 < len && close[1] == ':') {
			colon = close + 1;
			hl = (size_t)(colon - s);
		} else {
			colon = NULL;
		}
	} else if (colon && memchr(s, ':', (size_t)(colon - s))) {
		colon = NULL; /* too many colons: SplitHostPort fails, the host stays whole */
	} else if (colon) {
		hl = (size_t)(colon - s);
	}
	if (colon && len - hl - 1 >= sizeof(ret->port))
		return false;
	if (hl >= sizeof(ret->host))
		return false;
	if (colon)
		snprintf(ret->port, sizeof(ret->port), "%.*s", (int)(len - hl - 1), colon + 1);
	snprintf(ret->host, sizeof(ret->host), "%.*s", (int)hl, s);
	return true;
}

static size_t count_labels(const char *h)
{
	size_t n = 1;

	for (; *h; h++)
		n += *h == '.';
	return n;
}

/* Whether the index key KEY matches HOST[:PORT] and repository path /NAME (URLsMatch). */
static bool key_matches(const char *key, const struct hostport *target, const char *name)
{
	const char *kpath = strchr(key, '/');
	size_t klen = kpath ? (size_t)(kpath - key) : strlen(key);
	struct hostport k;
	char th[sizeof(target->host)];
	char *g = k.host, *t = th;

	if (!split_host_port(key, klen, &k) || strcmp(k.port, target->port) != 0 ||
	    count_labels(k.host) != count_labels(target->host))
		return false;
	/* the key's path, when it has one, a prefix of the repository's, "/NAME" */
	if (kpath && strncmp(kpath + 1, name, strlen(kpath + 1)) != 0)
		return false;
	memcpy(th, target->host, sizeof(th));
	for (;;) { /* label by label, as strings.Split(host, ".") */
		char *gd = strchr(g, '.'), *td = strchr(t, '.');

		if (gd)
			*gd = '\0';
		if (td)
			*td = '\0';
		if (!glob_match(g, t))
			return false;
		if (!gd || !td)
			return !gd && !td;
		g = gd + 1;
		t = td + 1;
	}
}

static int copy_cred(const struct oci_cred *from, struct oci_cred *ret)
{
	struct oci_cred c = {
		.username = from->username ? strdup(from->username) : NULL,
		.password = from->password ? strdup(from->password) : NULL,
		.identity_token = from->identity_token ? strdup(from->identity_token) : NULL,
	};

	if ((from->username && !c.username) || (from->password && !c.password) ||
	    (from->identity_token && !c.identity_token)) {
		oci_cred_done(&c);
		return -1;
	}
	*ret = c;
	return 1;
}

int oci_auth_lookup(const struct oci_auth_files *f, const char *host, const char *name,
		    struct oci_cred *ret)
{
	struct hostport target;

	*ret = (struct oci_cred){0};
	if (!f || !split_host_port(host, strlen(host), &target))
		return 0;
	for (size_t i = 0; i < f->n; i++)
		if (key_matches(f->v[i].key, &target, name))
			return copy_cred(&f->v[i].cred, ret);
	/*
	 * isDefaultRegistryMatch: docker.io's images take index.docker.io's credentials. The
	 * kubelet also sends there an image whose first part has no '.' or ':' (a Docker Hub
	 * user); an oci:// reference always names its registry, so only the two names do.
	 */
	if (strcmp(host, "docker.io") == 0 || strcmp(host, DOCKER_HUB_KEY) == 0)
		for (size_t i = 0; i < f->n; i++)
			if (strcmp(f->v[i].key, DOCKER_HUB_KEY) == 0)
				return copy_cred(&f->v[i].cred, ret);
	return 0;
}

/* ---- the GCE metadata server's token ---- */

/*
 * Where Google's client libraries ask: GCE_METADATA_HOST when set (HOST[:PORT]; Go's
 * cloud.google.com/go/compute/metadata, metadataHostEnv; google-auth's
 * google/auth/compute_engine/_metadata.py, _GCE_METADATA_HOST), else metadata.google.internal
 * (google-auth's default; Go's is the same server's address, 169.254.169.254). The path and
 * the header: https://cloud.google.com/compute/docs/access/authenticate-workloads#applications
 */
#define GCE_METADATA_HOST_DEFAULT "metadata.google.internal"
#define GCE_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define GCE_USERNAME "oauth2accesstoken"

/* Whether S is HOST[:PORT], nothing more: a name or an address, a port of digits. */
static bool is_host_port(const char *s)
{
	size_t h =
		s[0] == '['
			? strcspn(s, "]") + 1
			: strspn(s,
				 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");

	if (h == 0 || (s[0] == '[' && s[h - 1] != ']'))
		return false;
	if (s[h] == '\0')
		return true;
	return s[h] == ':' && s[h + 1] && strspn(s + h + 1, "0123456789") == strlen(s + h + 1) &&
	       strlen(s + h + 1) <= 5;
}

/* Whether S is an RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static bool is_b64token(const char *s)
{
	size_t n =
		strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/");

	return n > 0 && strspn(s + n, "=") == strlen(s + n);
}

/* The token endpoint's answer BUF (LEN bytes) into *RET, or -1 naming URL. */
static int gce_answer(const char *url, const char *buf, size_t len, struct oci_cred *ret,
		      struct err *e)
{
	_cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new_ex(16);
	_cleanup_(json_object_putp) json_object *root = NULL;
	json_object *token = NULL, *type = NULL, *expires = NULL;
	const char *why = NULL;

	if (!tok)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "'%s'", url);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    strspn(buf + json_tokener_get_parse_end(tok), " \t\r\n") !=
		    len - json_tokener_get_parse_end(tok))
		why = "not JSON";
	else if (!json_object_is_type(root, json_type_object))
		why = "not a JSON object";
	else if (!json_object_object_get_ex(root, "access_token", &token) ||
		 !json_object_is_type(token, json_type_string) ||
		 !is_b64token(json_object_get_string(token)))
		why = "no \"access_token\" of token characters (RFC 6750 b64token)";
	else if (!json_object_object_get_ex(root, "token_type", &type) ||
		 !json_object_is_type(type, json_type_string) ||
		 strcasecmp(json_object_get_string(type), "Bearer") != 0)
		why = "\"token_type\" is not \"Bearer\"";
	else if (!json_object_object_get_ex(root, "expires_in", &expires) ||
		 !json_object_is_type(expires, json_type_int) ||
		 json_object_get_int64(expires) <= 0)
		why = "\"expires_in\" is not a positive integer";
	if (why) {
		err_set(e, EXIT_UNREACHABLE,
			"GCE metadata server '%s': the answer is not a token: %s", url, why);
		err_hint(
			e,
			"the node's metadata server is not answering as GCE's does; give the registry's credentials with --registry-auth, or turn this off with --registry-gce-metadata=no");
		return -1;
	}
	ret->username = strdup(GCE_USERNAME);
	ret->password = strdup(json_object_get_string(token));
	ret->identity_token = NULL;
	if (!ret->username || !ret->password) {
		oci_cred_done(ret);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "'%s'", url);
	}
	return 0;
}

int oci_gce_token(struct fetcher *f, struct oci_cred *ret, struct err *e)
{
	static const char *const headers[] = {"Metadata-Flavor: Google", NULL};
	const char *host = getenv("GCE_METADATA_HOST");
	struct fetch_http_answer a = {0};
	/*
	 * Straight to the metadata server, never through a proxy the pod's environment
	 * names: it is a link-local service of the node (Go's metadata client, too, builds its
	 * transport without a proxy: cloud.google.com/go/compute/metadata, newDefaultHTTPClient).
	 */
	struct fetch_http h = {.headers = headers, .answer = &a, .no_proxy = true};
	_cleanup_free_ char *url = NULL, *buf = NULL;
	struct oci_cred cred = {0};
	enum fetch_result r;
	size_t len = 0;

	if (!host || !*host)
		host = GCE_METADATA_HOST_DEFAULT;
	if (!is_host_port(host))
		return err_set(e, EXIT_USAGE, "GCE_METADATA_HOST '%s': not HOST[:PORT]", host);
	if (asprintf(&url, "http://%s" GCE_TOKEN_PATH, host) < 0) {
		url = NULL;
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "GCE metadata server");
	}
	fetch_http_set(f, &h);
	r = fetch_to_memory(f, url, OCI_GCE_TOKEN_MAX, &buf, &len, e);
	fetch_http_set(f, NULL);
	if (r != FETCH_OK && ((a.status == 0 && r == FETCH_TRANSIENT) || a.status == 404)) {
		log_kv(LOG_DEBUG, "source",
		       a.status ? "GCE metadata server: no service account"
				: "GCE metadata server: no answer",
		       "url", url, "reason", e->msg, LOG_END);
		err_clear(e);
		return 1;
	}
	if (r != FETCH_OK)
		return err_wrap(e, "GCE metadata server");
	if (gce_answer(url, buf, len, &cred, e) < 0) {
		explicit_bzero(buf, len);
		return -1;
	}
	explicit_bzero(buf, len);
	*ret = cred;
	return 0;
}

/* Whether HOST is one label (no dot) followed by SUFFIX, without regard to case. */
static bool one_label_before(const char *host, const char *suffix)
{
	size_t n = strlen(host), k = strlen(suffix);

	return n > k && strcasecmp(host + n - k, suffix) == 0 && !memchr(host, '.', n - k);
}

bool oci_host_is_gcp(const char *host)
{
	return strcasecmp(host, "gcr.io") == 0 || one_label_before(host, ".gcr.io") ||
	       one_label_before(host, "-docker.pkg.dev");
}
