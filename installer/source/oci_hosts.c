// SPDX-License-Identifier: Apache-2.0
/*
 * containerd's registry hosts configuration (docs/hosts.md), read as containerd reads it in
 * core/remotes/docker/config/hosts.go, so that the mirrors a node already pulls its images
 * through are the ones the driver repository is pulled through:
 *
 *  - the directory: hostPaths (config_unix.go) and HostDirFromRoot: DIR/HOST_PORT_ for a
 *    host with a port (hostDirectory), DIR/HOST[:PORT], DIR/_default, the first there;
 *  - in it, hosts.toml (loadHostDir), or, without one, Docker's certs.d layout
 *    (loadCertFiles): its *.crt the server's CA;
 *  - the hosts in the order of their first [host."..."] header (getSortedHosts), then the
 *    server (parseHostsFile), the server being HOST itself over https when the file names
 *    none (ConfigureHosts: registry-1.docker.io for docker.io, capabilities pull, resolve,
 *    push; the file's other root keys kept);
 *  - each entry as parseHostConfig reads it: "https://" put before a name that does not
 *    start with "http", the path cleaned, "/v2" its API root unless override_path; the
 *    capabilities pull, resolve, push (and referrers) when none are given, an unknown one
 *    an error; "ca" a path or an array of paths, relative to the host's directory; the
 *    [header] table's values strings or arrays of strings; unknown keys ignored.
 *
 * Where containerd logs a hosts.toml it cannot decode and goes on without it, this refuses
 * it (EXIT_USAGE, the file and line named): a node that silently skips its mirror pulls from
 * where the operator said not to. Refused too, with the fix: skip_verify = true (the
 * installer never turns verification off), client certificates (not supported), more than
 * one CA file for one host (libcurl takes one CA file), an Authorization header
 * (credentials go through --registry-auth, where libcurl keeps them from other hosts).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "source/oci_config.h"
#include "source/oci_names.h"
#include "source/oci_toml.h"
#include "util/fs.h"
#include "util/log.h"

#define HOSTS_HINT                                                                                 \
	"write hosts.toml as containerd documents it (https://github.com/containerd/containerd/blob/main/docs/hosts.md), or leave --registry-hosts (NVIDIA_REGISTRY_HOSTS) out"

/* One entry of the file: a [host."NAME"] table, or the root's keys for the server. */
struct host_cfg {
	char *name; /* the table's name; the root's: the server, NULL when none is given */
	unsigned line;
	bool has_caps, pull, resolve, push;
	char *ca;
	bool override_path;
	char **headers;
	size_t n_headers;
};

enum hosts_at { AT_ROOT, AT_HOST, AT_HEADER, AT_HOST_TABLE, AT_IGNORED };

struct hosts_doc {
	const char *path; /* the hosts.toml, for messages */
	const char *dir;  /* its directory, for relative paths */
	struct host_cfg root;
	struct host_cfg *hosts;
	size_t n;
	enum hosts_at at;
	struct host_cfg *cur; /* AT_HOST, AT_HEADER: whose */
	size_t cur_index;     /* cur's index in hosts, or SIZE_MAX for the root */
};

static void cfg_done(struct host_cfg *c)
{
	free(c->name);
	free(c->ca);
	for (size_t i = 0; i < c->n_headers; i++)
		free(c->headers[i]);
	free(c->headers);
}

void oci_endpoints_free(struct oci_endpoint *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++) {
		free(v[i].url);
		free(v[i].ca_file);
		for (size_t k = 0; k < v[i].n_headers; k++)
			free(v[i].headers[k]);
		free(v[i].headers);
	}
	free(v);
}

static int refuse(const struct hosts_doc *d, unsigned line, struct err *e, const char *fmt, ...)
	_printf_(4, 5);
static int refuse(const struct hosts_doc *d, unsigned line, struct err *e, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	err_set(e, EXIT_USAGE, "'%s' line %u: %s", d->path, line, what);
	err_hint(e, HOSTS_HINT);
	return -1;
}

static int nomem(const struct hosts_doc *d, struct err *e)
{
	return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "'%s'", d->path);
}

/* ---- the callbacks of the TOML reader ---- */

static struct host_cfg *cur_cfg(struct hosts_doc *d)
{
	return d->cur_index == SIZE_MAX ? &d->root : &d->hosts[d->cur_index];
}

/* The host NAME's entry, made at its first table (getSortedHosts' order). */
static int host_entry(struct hosts_doc *d, const char *name, unsigned line, struct err *e)
{
	struct host_cfg *v;

	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->hosts[i].name, name) == 0) {
			d->cur_index = i;
			return 0;
		}
	v = reallocarray(d->hosts, d->n + 1, sizeof(*v));
	if (!v)
		return nomem(d, e);
	d->hosts = v;
	v[d->n] = (struct host_cfg){.name = strdup(name), .line = line};
	if (!v[d->n].name)
		return nomem(d, e);
	d->cur_index = d->n++;
	return 0;
}

static int on_table(void *userdata, const struct toml_key *k, unsigned line, struct err *e)
{
	struct hosts_doc *d = userdata;

	d->cur_index = SIZE_MAX;
	d->at = AT_IGNORED; /* a table containerd has no field for: go-toml ignores it */
	if (strcmp(k->parts[0], "host") == 0) {
		if (k->n == 1) {
			d->at = AT_HOST_TABLE;
			return 0;
		}
		if (host_entry(d, k->parts[1], line, e) < 0)
			return -1;
		if (k->n == 2)
			d->at = AT_HOST;
		else if (strcasecmp(k->parts[2], "header") == 0 && k->n == 3)
			d->at = AT_HEADER;
		else if (strcasecmp(k->parts[2], "header") == 0)
			return refuse(
				d, line, e,
				"a table under [header] (a header's value is a string or an array of strings)");
		return 0;
	}
	if (strcasecmp(k->parts[0], "header") == 0) {
		if (k->n > 1)
			return refuse(
				d, line, e,
				"a table under [header] (a header's value is a string or an array of strings)");
		d->at = AT_HEADER;
	}
	return 0;
}

/* V as an array of strings (a string alone too when ONE_OK), or refused naming KEY. */
static int strings_of(const struct hosts_doc *d, const char *key, const struct toml_value *v,
		      bool one_ok, unsigned line, struct err *e)
{
	if (one_ok && v->type == TOML_STRING)
		return 0;
	if (v->type == TOML_ARRAY) {
		for (size_t i = 0; i < v->n; i++)
			if (v->items[i].type != TOML_STRING)
				return refuse(d, line, e, "\"%s\": an array of strings expected",
					      key);
		return 0;
	}
	return refuse(d, line, e, "\"%s\": %s expected", key,
		      one_ok ? "a string or an array of strings" : "an array of strings");
}

/* One key of a [header] table: "NAME: VALUE" lines into the entry's headers. */
static int header_value(struct hosts_doc *d, const char *name, const struct toml_value *v,
			unsigned line, struct err *e)
{
	struct host_cfg *c = cur_cfg(d);
	size_t n = v->type == TOML_ARRAY ? v->n : 1;
	char **h;

	if (strings_of(d, name, v, true, line, e) < 0)
		return -1;
	if (!oci_is_http_token(name))
		return refuse(d, line, e, "header '%s': not a header name (RFC 9110 token)", name);
	if (strcasecmp(name, "Authorization") == 0 || strcasecmp(name, "Proxy-Authorization") == 0)
		return refuse(
			d, line, e,
			"header '%s': credentials go in --registry-auth (a Docker config.json), which libcurl sends to this host only, never in a header",
			name);
	h = reallocarray(c->headers, c->n_headers + n, sizeof(*h));
	if (!h)
		return nomem(d, e);
	c->headers = h;
	for (size_t i = 0; i < n; i++) {
		const char *val = v->type == TOML_ARRAY ? v->items[i].s : v->s;

		if (strpbrk(val, "\r\n") || strchr(val, '\x7f'))
			return refuse(d, line, e,
				      "header '%s': a line break or control character in its value",
				      name);
		if (asprintf(&c->headers[c->n_headers], "%s: %s", name, val) < 0)
			return nomem(d, e);
		c->n_headers++;
	}
	return 0;
}

static int capabilities(struct hosts_doc *d, const struct toml_value *v, unsigned line,
			struct err *e)
{
	struct host_cfg *c = cur_cfg(d);

	if (strings_of(d, "capabilities", v, false, line, e) < 0)
		return -1;
	c->has_caps = v->n > 0; /* an empty list: containerd's default, all of them */
	for (size_t i = 0; i < v->n; i++) {
		const char *cap = v->items[i].s;

		if (strcasecmp(cap, "pull") == 0)
			c->pull = true;
		else if (strcasecmp(cap, "resolve") == 0)
			c->resolve = true;
		else if (strcasecmp(cap, "push") == 0)
			c->push = true;
		else if (strcasecmp(cap, "referrers") != 0) /* containerd 2's; nothing to us */
			return refuse(d, line, e,
				      "unknown capability '%s' (pull, resolve, push, referrers)",
				      cap);
	}
	return 0;
}

static int ca(struct hosts_doc *d, const struct toml_value *v, unsigned line, struct err *e)
{
	struct host_cfg *c = cur_cfg(d);
	const char *path = v->type == TOML_STRING ? v->s : v->n ? v->items[0].s : NULL;

	if (strings_of(d, "ca", v, true, line, e) < 0)
		return -1;
	if (v->type == TOML_ARRAY && v->n > 1)
		return refuse(
			d, line, e,
			"\"ca\": %zu files for one host; the installer takes one: put the certificates into one file (cat a.pem b.pem > ca.pem) and name it",
			v->n);
	free(c->ca);
	c->ca = NULL;
	if (!path)
		return 0;
	if (!*path)
		return refuse(d, line, e, "\"ca\": an empty path");
	if (path[0] == '/')
		c->ca = strdup(path);
	else if (asprintf(&c->ca, "%s/%s", d->dir, path) < 0)
		c->ca = NULL;
	return c->ca ? 0 : nomem(d, e);
}

static int bool_of(const struct hosts_doc *d, const char *key, const struct toml_value *v,
		   unsigned line, struct err *e)
{
	if (v->type != TOML_BOOL)
		return refuse(d, line, e, "\"%s\": true or false expected", key);
	return 0;
}

/* A key of the root or of a [host."..."] table. */
static int entry_key(struct hosts_doc *d, const char *key, const struct toml_value *v,
		     unsigned line, struct err *e)
{
	if (strcasecmp(key, "capabilities") == 0)
		return capabilities(d, v, line, e);
	if (strcasecmp(key, "ca") == 0)
		return ca(d, v, line, e);
	if (strcasecmp(key, "skip_verify") == 0) {
		if (bool_of(d, key, v, line, e) < 0)
			return -1;
		if (v->b)
			return refuse(
				d, line, e,
				"skip_verify = true: verification cannot be turned off here; name the registry's CA with \"ca\" instead");
		return 0;
	}
	if (strcasecmp(key, "override_path") == 0) {
		if (bool_of(d, key, v, line, e) < 0)
			return -1;
		cur_cfg(d)->override_path = v->b;
		return 0;
	}
	if (strcasecmp(key, "client") == 0)
		return refuse(d, line, e,
			      "\"client\": client certificates are not supported by the installer");
	if (strcasecmp(key, "header") == 0)
		return refuse(d, line, e, "\"header\": give it as a [header] table");
	if (strcasecmp(key, "dial_timeout") == 0 && v->type != TOML_STRING)
		return refuse(d, line, e, "\"dial_timeout\": a string expected");
	/* dial_timeout (the installer's time budget decides), and what containerd ignores */
	log_kv(LOG_DEBUG, "source", "hosts.toml: a key not used", "file", d->path, "key", key,
	       LOG_END);
	return 0;
}

static int on_key_value(void *userdata, const char *key, const struct toml_value *v, unsigned line,
			struct err *e)
{
	struct hosts_doc *d = userdata;

	switch (d->at) {
	case AT_ROOT:
		if (strcasecmp(key, "server") != 0)
			return entry_key(d, key, v, line, e);
		if (v->type != TOML_STRING)
			return refuse(d, line, e, "\"server\": a string expected");
		free(d->root.name);
		d->root.name = strdup(v->s);
		d->root.line = line;
		return d->root.name ? 0 : nomem(d, e);
	case AT_HOST:
		return entry_key(d, key, v, line, e);
	case AT_HEADER:
		return header_value(d, key, v, line, e);
	case AT_HOST_TABLE:
		return refuse(d, line, e, "a key of [host]: each host is a [host.\"URL\"] table");
	case AT_IGNORED:
		break;
	}
	return 0;
}

/* ---- the entries as endpoints ---- */

/* PATH cleaned as Go's path.Clean, into OUT (at least strlen(PATH) + 2 bytes). */
static void clean_path(const char *path, char *out)
{
	size_t len = 0;

	while (*path) {
		size_t n;

		while (*path == '/')
			path++;
		n = strcspn(path, "/");
		if (n == 0)
			break;
		if (n == 1 && path[0] == '.') {
		} else if (n == 2 && path[0] == '.' && path[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else {
			out[len++] = '/';
			memcpy(out + len, path, n);
			len += n;
		}
		path += n;
	}
	out[len] = '\0';
}

/* Whether the N bytes at S are HOST[:PORT], HOST a name, an IPv4 or a [IPv6] address. */
static bool is_authority(const char *s, size_t n)
{
	size_t h;

	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close || close == s + 1)
			return false;
		h = (size_t)(close - s) + 1;
		if (strspn(s + 1, "0123456789abcdefABCDEF:.") != h - 2)
			return false;
	} else {
		h = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_");
		if (h == 0 || h > n)
			return false;
	}
	if (h == n)
		return true;
	/* a port: 1 to 5 digits */
	return s[h] == ':' && n - h - 1 >= 1 && n - h - 1 <= 5 &&
	       strspn(s + h + 1, "0123456789") >= n - h - 1;
}

/*
 * NAME (a [host."NAME"] or the server) as parseHostConfig reads it, into *RET: the URL
 * without "/v2" at its end unless OVERRIDE_PATH, "" for a path of "/". Refused: a scheme
 * other than http and https, no host, userinfo, a query, a fragment, an escape.
 */
static int endpoint_url(const struct hosts_doc *d, const char *name, bool override_path,
			unsigned line, char **ret, struct err *e)
{
	_cleanup_free_ char *full = NULL, *path = NULL;
	const char *auth, *slash;
	size_t scheme_len, n;

	if (asprintf(&full, "%s%s", strncmp(name, "http", 4) == 0 ? "" : "https://", name) < 0)
		return nomem(d, e);
	auth = strstr(full, "://");
	scheme_len = auth ? (size_t)(auth - full) : 0;
	if (!auth || !((scheme_len == 4 && strncasecmp(full, "http", 4) == 0) ||
		       (scheme_len == 5 && strncasecmp(full, "https", 5) == 0)))
		return refuse(d, line, e, "'%s': not an http:// or https:// URL", name);
	auth += 3;
	slash = strchr(auth, '/');
	n = slash ? (size_t)(slash - auth) : strlen(auth);
	if (strpbrk(full, "@?#% \t") || !is_authority(auth, n))
		return refuse(
			d, line, e,
			"'%s': not a registry URL (scheme://host[:port][/path], no user, query or escape)",
			name);
	path = malloc(strlen(slash ? slash : "") + 2);
	if (!path)
		return nomem(d, e);
	clean_path(slash ? slash : "", path);
	n = strlen(path);
	if (!override_path && n >= 3 && strcmp(path + n - 3, "/v2") == 0)
		path[n - 3] = '\0';
	if (asprintf(ret, "%.*s://%.*s%s", (int)scheme_len, full,
		     (int)(slash ? (size_t)(slash - auth) : strlen(auth)), auth, path) < 0)
		return nomem(d, e);
	for (char *p = *ret; p < *ret + scheme_len; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	return 0;
}

/* C as an endpoint into *RET (its url given by the caller when UPSTREAM). */
static int endpoint_of(const struct hosts_doc *d, struct host_cfg *c, const char *upstream,
		       struct oci_endpoint *ret, struct err *e)
{
	struct oci_endpoint ep = {
		.pull = !c->has_caps || c->pull,
		.resolve = !c->has_caps || c->resolve,
		.push = !c->has_caps || c->push,
		.override_path = c->override_path,
	};

	if (upstream) {
		/* ConfigureHosts: path "/v2" and every capability, whatever the file said */
		ep.pull = ep.resolve = ep.push = true;
		ep.override_path = false;
		ep.url = strdup(upstream);
		if (!ep.url)
			return nomem(d, e);
	} else if (endpoint_url(d, c->name, c->override_path, c->line, &ep.url, e) < 0) {
		return -1;
	}
	ep.ca_file = TAKE_PTR(c->ca);
	ep.headers = TAKE_PTR(c->headers);
	ep.n_headers = c->n_headers;
	c->n_headers = 0;
	*ret = ep;
	return 0;
}

/* The upstream server of HOST, as ConfigureHosts makes it when no server is given. */
static char *upstream_of(const char *host)
{
	char *url = NULL;

	if (asprintf(&url, "https://%s",
		     strcmp(host, "docker.io") == 0 ? "registry-1.docker.io" : host) < 0)
		return NULL;
	return url;
}

static int endpoints_of(struct hosts_doc *d, const char *host, struct oci_endpoint **ret,
			size_t *ret_n, struct err *e)
{
	_cleanup_free_ char *upstream = d->root.name ? NULL : upstream_of(host);
	struct oci_endpoint *v = calloc(d->n + 1, sizeof(*v));
	size_t n = 0;

	if (!v || (!d->root.name && !upstream)) {
		free(v);
		return nomem(d, e);
	}
	for (; n < d->n; n++)
		if (endpoint_of(d, &d->hosts[n], NULL, &v[n], e) < 0)
			goto fail;
	if (endpoint_of(d, &d->root, upstream, &v[n], e) < 0)
		goto fail;
	*ret = v;
	*ret_n = n + 1;
	return 0;
fail:
	oci_endpoints_free(v, n);
	return -1;
}

/* ---- the directory ---- */

/* DIR's hosts.toml, parsed into D, or 0 with *ret_missing when it has none (or empty). */
static int read_hosts_toml(struct hosts_doc *d, bool *ret_missing, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct toml_calls calls = {.table = on_table, .key_value = on_key_value, .userdata = d};

	*ret_missing = false;
	if (fs_read_path(d->path, OCI_HOSTS_FILE_MAX, &buf, &len, e) < 0) {
		if (err_errnum(e) == ENOENT) {
			err_clear(e);
			*ret_missing = true;
			return 0;
		}
		if (err_errnum(e) == EFBIG)
			return err_set(e, EXIT_USAGE, "'%s': larger than %u bytes", d->path,
				       OCI_HOSTS_FILE_MAX);
		e->code = EXIT_USAGE;
		return err_wrap(e, "registry hosts");
	}
	if (len == 0) { /* loadHostDir: an empty hosts.toml is no hosts.toml */
		*ret_missing = true;
		return 0;
	}
	d->cur_index = SIZE_MAX;
	if (toml_read(buf, len, d->path, &calls, e) < 0) {
		err_hint(e, HOSTS_HINT);
		return -1;
	}
	return 0;
}

/* Docker's certs.d in DIR (loadCertFiles): its one *.crt into D's root, its CA. */
static int read_cert_files(struct hosts_doc *d, struct err *e)
{
	_cleanup_closedir_ DIR *dir = opendir(d->dir);
	struct dirent *de;

	if (!dir)
		return err_errno(e, EXIT_USAGE, errno, "registry hosts: open '%s'", d->dir);
	while ((errno = 0, de = readdir(dir))) {
		size_t n = strlen(de->d_name);

		if (de->d_type == DT_DIR)
			continue;
		if (n > 5 && strcmp(de->d_name + n - 5, ".cert") == 0)
			return err_set(
				e, EXIT_USAGE,
				"'%s/%s': client certificates are not supported by the installer",
				d->dir, de->d_name);
		if (n <= 4 || strcmp(de->d_name + n - 4, ".crt") != 0)
			continue;
		if (d->root.ca)
			return err_set(
				e, EXIT_USAGE,
				"'%s': more than one *.crt; the installer takes one CA file a host: put the certificates into one",
				d->dir);
		if (asprintf(&d->root.ca, "%s/%s", d->dir, de->d_name) < 0) {
			d->root.ca = NULL;
			return nomem(d, e);
		}
	}
	if (errno)
		return err_errno(e, EXIT_USAGE, errno, "registry hosts: read '%s'", d->dir);
	return 0;
}

/* containerd's host directory for HOST under ROOT into *RET, NULL when there is none. */
static int host_dir(const char *root, const char *host, char **ret, struct err *e)
{
	const char *colon = strrchr(host, ':');
	char *paths[3] = {NULL};
	size_t n = 0;
	int r = 0;

	*ret = NULL;
	if (colon && colon > host &&
	    asprintf(&paths[n++], "%s/%.*s_%s_", root, (int)(colon - host), host, colon + 1) < 0)
		paths[--n] = NULL, r = -1;
	if (r == 0 && asprintf(&paths[n++], "%s/%s", root, host) < 0)
		paths[--n] = NULL, r = -1;
	if (r == 0 && asprintf(&paths[n++], "%s/_default", root) < 0)
		paths[--n] = NULL, r = -1;
	if (r < 0)
		err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry hosts");
	for (size_t i = 0; r == 0 && i < n && !*ret; i++) {
		struct stat st;

		if (stat(paths[i], &st) == 0)
			*ret = TAKE_PTR(paths[i]);
		else if (errno != ENOENT)
			r = err_errno(e, EXIT_USAGE, errno, "registry hosts: '%s'", paths[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	return r;
}

static int load_dir(struct hosts_doc *d, const char *host, struct oci_endpoint **ret, size_t *ret_n,
		    struct err *e)
{
	bool missing = false;

	if (read_hosts_toml(d, &missing, e) < 0)
		return -1;
	if (missing) {
		if (read_cert_files(d, e) < 0)
			return -1;
		if (!d->root.ca) /* nothing there: the host as it is */
			return 0;
	}
	return endpoints_of(d, host, ret, ret_n, e);
}

int oci_hosts_load(const char *dir, const char *host, struct oci_endpoint **ret, size_t *ret_n,
		   struct err *e)
{
	_cleanup_free_ char *hdir = NULL, *path = NULL;
	struct hosts_doc d = {0};
	struct oci_endpoint *v = NULL;
	size_t n = 0;
	struct stat st;
	int r;

	errno = 0;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err_errno(e, EXIT_USAGE, errno ? errno : ENOTDIR, "registry hosts: '%s'", dir);
		err_hint(
			e,
			"--registry-hosts (NVIDIA_REGISTRY_HOSTS) names containerd's hosts directory (config_path), e.g. /etc/containerd/certs.d mounted from the host");
		return -1;
	}
	if (host_dir(dir, host, &hdir, e) < 0)
		return -1;
	if (!hdir) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	if (asprintf(&path, "%s/hosts.toml", hdir) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "registry hosts");
	d.path = path;
	d.dir = hdir;
	r = load_dir(&d, host, &v, &n, e);
	cfg_done(&d.root);
	for (size_t i = 0; i < d.n; i++)
		cfg_done(&d.hosts[i]);
	free(d.hosts);
	if (r < 0)
		return -1;
	*ret = v;
	*ret_n = n;
	return 0;
}
