// SPDX-License-Identifier: Apache-2.0
#include "cmocka_prelude.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "scratch.h"
#include "source/fetch.h"
#include "source/oci_config.h"
#include "util/log.h"

/* ---- Docker config.json ---- */

/* Writes TEXT to REL under F; returns its path in BUF. */
static const char *put(struct scratch_fixture *f, const char *rel, const char *text, char *buf,
		       size_t size)
{
	FILE *fp = fopen(scratch_path(f, rel, buf, size), "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	return buf;
}

/* Loads TEXT as one auth file; returns the files (NULL when refused, with E set). */
static struct oci_auth_files *load_text(struct scratch_fixture *f, const char *text, struct err *e)
{
	char path[256];
	char *paths[1] = {(char *)put(f, "config.json", text, path, sizeof(path))};
	struct oci_auth_files *a = NULL;

	err_clear(e);
	if (oci_auth_files_load(paths, 1, false, &a, e) < 0) {
		assert_null(a);
		return NULL;
	}
	assert_non_null(a);
	return a;
}

/* Asserts that HOST and NAME get USER and PASS (USER NULL: no credentials at all). */
static void expect(const struct oci_auth_files *a, const char *host, const char *name,
		   const char *user, const char *pass)
{
	struct oci_cred c = {0};
	int r = oci_auth_lookup(a, host, name, &c);

	if (!user) {
		assert_int_equal(r, 0);
		assert_null(c.username);
		return;
	}
	assert_int_equal(r, 1);
	assert_string_equal(c.username, user);
	if (pass)
		assert_string_equal(c.password, pass);
	else
		assert_null(c.password);
	oci_cred_done(&c);
	assert_null(c.username);
}

/* base64 of "alice:s3cret:x" ("auth"), "bob:pw" */
#define AUTH_ALICE "YWxpY2U6czNjcmV0Ong="
#define AUTH_BOB "Ym9iOnB3"

static void test_auth_fields(void **state)
{
	struct scratch_fixture *f = *state;
	struct err e;
	struct oci_auth_files *a = load_text(
		f,
		"{\"auths\": {"
		"\"a.example\": {\"auth\": \"" AUTH_ALICE "\", \"email\": \"x@y\"},"
		"\"b.example\": {\"username\": \"u\", \"password\": \"p\"},"
		"\"c.example\": {\"auth\": \"" AUTH_BOB
		"\", \"username\": \"u\", \"password\": \"p\"},"
		"\"d.example\": {\"Username\": \"U\", \"PASSWORD\": \"P\"},"
		"\"e.example\": {\"identitytoken\": \"tok\"},"
		"\"f.example\": {\"auth\": \"\", \"username\": \"u2\", \"password\": null},"
		"\"g.example\": {},"
		"\"n.example\": {\"username\": \"u3\", \"USERNAME\": null, \"password\": \"p\"}"
		"}, \"credsStore\": \"desktop\", \"credHelpers\": {\"x\": \"y\"}}\n",
		&e);
	struct oci_cred c = {0};

	assert_non_null(a);
	/* the password keeps every ':' after the first */
	expect(a, "a.example", "r", "alice", "s3cret:x");
	expect(a, "b.example", "r", "u", "p");
	/* "auth" wins over the fields (config.go's UnmarshalJSON) */
	expect(a, "c.example", "r", "bob", "pw");
	/* names without regard to case, as Go's encoding/json */
	expect(a, "d.example", "r", "U", "P");
	expect(a, "f.example", "r", "u2", NULL);
	/* a null after a value leaves it, as Go's decoder leaves a field */
	expect(a, "n.example", "r", "u3", "p");
	assert_int_equal(oci_auth_lookup(a, "e.example", "r", &c), 1);
	assert_null(c.username);
	assert_string_equal(c.identity_token, "tok");
	oci_cred_done(&c);
	/* an entry with nothing in it (beside a credsStore) gives nothing */
	expect(a, "g.example", "r", NULL, NULL);
	expect(a, "h.example", "r", NULL, NULL);
	oci_auth_files_free(a);
}

static void test_keys(void **state)
{
	struct scratch_fixture *f = *state;
	struct err e;
	struct oci_auth_files *a = load_text(
		f,
		"{\"auths\": {"
		"\"https://plain.example\": {\"auth\": \"" AUTH_BOB "\"},"
		"\"http://other.example/v2/\": {\"username\": \"v2\", \"password\": \"p\"},"
		"\"reg.example:5000\": {\"username\": \"port\", \"password\": \"p\"},"
		"\"reg.example\": {\"username\": \"noport\", \"password\": \"p\"},"
		"\"*.glob.example\": {\"username\": \"glob\", \"password\": \"p\"},"
		"\"[a-c]x.class.example\": {\"username\": \"class\", \"password\": \"p\"},"
		"\"[^a-c]x.class.example\": {\"username\": \"neg\", \"password\": \"p\"},"
		"\"bad[.class.example\": {\"username\": \"bad\", \"password\": \"p\"},"
		"\"quay.example\": {\"username\": \"host\", \"password\": \"p\"},"
		"\"quay.example/team\": {\"username\": \"team\", \"password\": \"p\"},"
		"\"https://quay.example/v1/team/sub\": {\"username\": \"sub\", \"password\": \"p\"},"
		"\"https://index.docker.io/v1/\": {\"username\": \"hub\", \"password\": \"p\"},"
		"\"user@at.example\": {\"username\": \"at\", \"password\": \"p\"},"
		"\"colon.example:abc\": {\"username\": \"x\", \"password\": \"p\"}"
		"}}",
		&e);

	assert_non_null(a);
	expect(a, "plain.example", "r", "bob", "pw");
	expect(a, "other.example", "r", "v2", "p");
	/* the port must match, both ways */
	expect(a, "reg.example:5000", "r", "port", "p");
	expect(a, "reg.example", "r", "noport", "p");
	expect(a, "reg.example:5001", "r", NULL, NULL);
	/* one glob per label, the same number of labels */
	expect(a, "x.glob.example", "r", "glob", "p");
	expect(a, "glob.example", "r", NULL, NULL);
	expect(a, "y.x.glob.example", "r", NULL, NULL);
	expect(a, "x.glob.example:443", "r", NULL, NULL);
	expect(a, "bx.class.example", "r", "class", "p");
	expect(a, "dx.class.example", "r", "neg", "p");
	expect(a, "bad[.class.example", "r", NULL, NULL);
	/* the path a prefix of the repository's, the longest first */
	expect(a, "quay.example", "team/sub/r", "sub", "p");
	expect(a, "quay.example", "team/r", "team", "p");
	expect(a, "quay.example", "other/r", "host", "p");
	/* a string prefix, as the kubelet's strings.HasPrefix */
	expect(a, "quay.example", "teammate/r", "team", "p");
	/* the default registry under both its names, and nowhere else */
	expect(a, "docker.io", "library/x", "hub", "p");
	expect(a, "index.docker.io", "library/x", "hub", "p");
	expect(a, "registry-1.docker.io", "library/x", NULL, NULL);
	/* keys the kubelet could not parse are ignored */
	expect(a, "at.example", "r", NULL, NULL);
	expect(a, "colon.example", "r", NULL, NULL);
	oci_auth_files_free(a);
	expect(NULL, "plain.example", "r", NULL, NULL);
}

static void test_files_order(void **state)
{
	struct scratch_fixture *f = *state;
	char p1[256], p2[256], p3[256];
	char *paths[3] = {
		(char *)put(f, "one.json",
			    "{\"auths\": {\"reg.example\": {\"username\": \"one\", \"password\": "
			    "\"p\"}}}",
			    p1, sizeof(p1)),
		(char *)put(f, "two.json",
			    "{\"auths\": {\"reg.example\": {\"username\": \"two\", \"password\": "
			    "\"p\"}, \"reg.example/deep\": {\"username\": \"deep\", \"password\": "
			    "\"p\"}}}",
			    p2, sizeof(p2)),
		(char *)scratch_path(f, "missing.json", p3, sizeof(p3)),
	};
	struct oci_auth_files *a = NULL;
	struct err e;

	err_clear(&e);
	/* one key in two files: the first file's; a more specific key wins across files */
	assert_int_equal(oci_auth_files_load(paths, 2, false, &a, &e), 0);
	expect(a, "reg.example", "r", "one", "p");
	expect(a, "reg.example", "deep/r", "deep", "p");
	oci_auth_files_free(a);
	a = NULL;
	/* the default path may be missing; a path given may not */
	assert_int_equal(oci_auth_files_load(paths + 2, 1, true, &a, &e), 0);
	expect(a, "reg.example", "r", NULL, NULL);
	oci_auth_files_free(a);
	a = NULL;
	assert_int_equal(oci_auth_files_load(paths + 2, 1, false, &a, &e), -1);
	assert_null(a);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "missing.json"));
	assert_non_null(strstr(e.msg, "registry auth"));
	oci_auth_files_free(NULL);
}

/* TEXT refused with EXIT_USAGE, the message naming WANT and never the secret NOT. */
static void refused(struct scratch_fixture *f, const char *text, const char *want,
		    const char * not )
{
	struct err e;

	assert_null(load_text(f, text, &e));
	assert_int_equal(e.code, EXIT_USAGE);
	if (!strstr(e.msg, want))
		fail_msg("'%s' does not name '%s'", e.msg, want);
	assert_non_null(strstr(e.msg, "config.json"));
	if (not &&(strstr(e.msg, not ) || strstr(e.hint, not )))
		fail_msg("'%s' shows the secret", e.msg);
}

static void test_refused(void **state)
{
	struct scratch_fixture *f = *state;
	char path[256];
	char *big = malloc(OCI_AUTH_FILE_MAX + 2);
	char *paths[1] = {path};
	struct oci_auth_files *a = NULL;
	struct err e;

	refused(f, "{\"auths\": {", "not JSON at byte", NULL);
	refused(f, "{\"auths\": {}} x", "not JSON", NULL);
	refused(f, "[1]", "not a JSON object", NULL);
	refused(f, "{\"auths\": []}", "\"auths\" is not a JSON object", NULL);
	refused(f, "{\"auths\": {\"k.example\": 1}}", "auths 'k.example': not a JSON object", NULL);
	refused(f, "{\"auths\": {\"k.example\": {\"username\": 7}}}",
		"auths 'k.example': \"username\" is not a string", NULL);
	/* not base64: a character out of the alphabet, unpadded, padding inside, too much */
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9i!nB3\"}}}",
		"auths 'k.example': \"auth\" is not base64", "Ym9i");
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9iOnB3YQ\"}}}",
		"\"auth\" is not base64 (", "Ym9iOnB3YQ");
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9=iOnB3\"}}}", "is not base64",
		NULL);
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9iOnB3=\"}}}", "is not base64",
		NULL);
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9iOg==Ym9i\"}}}", "is not base64",
		NULL);
	/* base64 of "bobpw" (no ':'), of "b\0:pw" */
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9icHc=\"}}}",
		"auths 'k.example': \"auth\" is not base64 of USER:PASSWORD", "bobpw");
	refused(f, "{\"auths\": {\"k.example\": {\"auth\": \"YgA6cHc=\"}}}", "NUL byte", NULL);
	/* a file larger than a Secret holds */
	assert_non_null(big);
	memset(big, ' ', OCI_AUTH_FILE_MAX + 1);
	memcpy(big, "{}", 2);
	big[OCI_AUTH_FILE_MAX + 1] = '\0';
	put(f, "config.json", big, path, sizeof(path));
	free(big);
	err_clear(&e);
	assert_int_equal(oci_auth_files_load(paths, 1, true, &a, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "larger than 1048576 bytes"));
	/* the decoder takes what Go's does: line breaks anywhere, "==" padding */
	a = load_text(f, "{\"auths\": {\"k.example\": {\"auth\": \"Ym9i\\r\\nOg==\"}}}", &e);
	assert_non_null(a);
	expect(a, "k.example", "r", "bob", NULL);
	oci_auth_files_free(a);
}

/* ---- containerd's hosts.toml ---- */

/* Makes directory REL under F and writes TEXT to REL/hosts.toml (TEXT NULL: none). */
static void put_hosts(struct scratch_fixture *f, const char *rel, const char *text)
{
	char path[256], file[300];

	assert_int_equal(scratch_mkdirs(f->fd, rel), 0);
	if (text) {
		snprintf(file, sizeof(file), "%s/hosts.toml", rel);
		put(f, file, text, path, sizeof(path));
	}
}

/* Loads the hosts of HOST under F's root into *RET; returns their number, or -1. */
static long hosts_of(struct scratch_fixture *f, const char *host, struct oci_endpoint **ret,
		     struct err *e)
{
	size_t n = 99;

	err_clear(e);
	*ret = NULL;
	if (oci_hosts_load(f->root, host, ret, &n, e) < 0)
		return -1;
	return (long)n;
}

static void expect_ep(const struct oci_endpoint *ep, const char *url, const char *caps,
		      bool override_path)
{
	char got[8] = "";

	assert_string_equal(ep->url, url);
	snprintf(got, sizeof(got), "%s%s%s", ep->pull ? "p" : "", ep->resolve ? "r" : "",
		 ep->push ? "P" : "");
	assert_string_equal(got, caps);
	assert_int_equal(ep->override_path, override_path);
	assert_false(ep->skip_verify);
}

static void test_hosts_file(void **state)
{
	struct scratch_fixture *f = *state;
	struct oci_endpoint *v = NULL;
	char ca[256];
	struct err e;

	put_hosts(f, "reg.example:5000",
		  "# a mirror first, then the registry itself\r\n"
		  "server = \"https://reg.example:5000\"\n"
		  "capabilities = [\"pull\", \"resolve\"]\n"
		  "unknown = 3 # ignored, as containerd ignores it\n"
		  "\n"
		  "[host.\"https://second.example/v2\".header]\n"
		  "  x-one = \"caf\\u00e9\"\n"
		  "  X-Two = ['a\\b', \"c\"]\n"
		  "[host.\"https://first.example:8443/sub/../pre/v2/\"]\n"
		  "  capabilities = [\n"
		  "    \"PULL\", # any case\n"
		  "    \"referrers\",\n"
		  "  ]\n"
		  "  ca = \"mirror.pem\"\n"
		  "  skip_verify = false\n"
		  "  dial_timeout = \"1s\"\n"
		  "[host.\"https://second.example/v2\"]\n"
		  "  override_path = true\n"
		  "  ca = [\"/abs/ca.pem\"]\n"
		  "[host.'http://plain.example']\n"
		  "[other.table]\n"
		  "  anything = true\n");
	assert_int_equal(hosts_of(f, "reg.example:5000", &v, &e), 4);
	/* in the order of their first table, the server last */
	expect_ep(&v[0], "https://second.example/v2", "prP", true);
	assert_string_equal(v[0].ca_file, "/abs/ca.pem");
	assert_int_equal(v[0].n_headers, 3);
	assert_string_equal(v[0].headers[0], "x-one: caf\xc3\xa9");
	assert_string_equal(v[0].headers[1], "X-Two: a\\b");
	assert_string_equal(v[0].headers[2], "X-Two: c");
	expect_ep(&v[1], "https://first.example:8443/pre", "p", false);
	assert_string_equal(v[1].ca_file,
			    scratch_path(f, "reg.example:5000/mirror.pem", ca, sizeof(ca)));
	expect_ep(&v[2], "http://plain.example", "prP", false);
	assert_null(v[2].ca_file);
	assert_int_equal(v[2].n_headers, 0);
	expect_ep(&v[3], "https://reg.example:5000", "pr", false);
	oci_endpoints_free(v, 4);
}

static void test_hosts_dirs(void **state)
{
	struct scratch_fixture *f = *state;
	struct oci_endpoint *v = NULL;
	char path[256];
	struct err e;

	/* no directory for the host: nothing, the host as it is */
	assert_int_equal(hosts_of(f, "none.example", &v, &e), 0);
	assert_null(v);
	/* HOST_PORT_ before HOST:PORT; _default for any other */
	put_hosts(f, "reg.example_5000_", "server = \"under.example\"\n");
	put_hosts(f, "reg.example:5000", "server = \"colon.example\"\n");
	put_hosts(f, "_default", "[host.\"https://mirror.example\"]\ncapabilities = [\"pull\"]\n");
	assert_int_equal(hosts_of(f, "reg.example:5000", &v, &e), 1);
	expect_ep(&v[0], "https://under.example", "prP", false);
	oci_endpoints_free(v, 1);
	/* no server: the host itself over https, every capability */
	assert_int_equal(hosts_of(f, "other.example", &v, &e), 2);
	expect_ep(&v[0], "https://mirror.example", "p", false);
	expect_ep(&v[1], "https://other.example", "prP", false);
	oci_endpoints_free(v, 2);
	/* ... whatever the file's root says of capabilities (ConfigureHosts sets them all) */
	put_hosts(f, "caps.example", "capabilities = [\"pull\"]\n");
	assert_int_equal(hosts_of(f, "caps.example", &v, &e), 1);
	expect_ep(&v[0], "https://caps.example", "prP", false);
	oci_endpoints_free(v, 1);
	assert_int_equal(hosts_of(f, "docker.io", &v, &e), 2);
	expect_ep(&v[1], "https://registry-1.docker.io", "prP", false);
	oci_endpoints_free(v, 2);
	/* Docker's certs.d: a directory without hosts.toml, its one *.crt the server's CA */
	put_hosts(f, "certs.example", NULL);
	put(f, "certs.example/ca.crt", "x", path, sizeof(path));
	assert_int_equal(hosts_of(f, "certs.example", &v, &e), 1);
	expect_ep(&v[0], "https://certs.example", "prP", false);
	assert_string_equal(v[0].ca_file, path);
	oci_endpoints_free(v, 1);
	put(f, "certs.example/two.crt", "x", path, sizeof(path));
	assert_int_equal(hosts_of(f, "certs.example", &v, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "more than one *.crt"));
	put_hosts(f, "client.example", NULL);
	put(f, "client.example/me.cert", "x", path, sizeof(path));
	assert_int_equal(hosts_of(f, "client.example", &v, &e), -1);
	assert_non_null(strstr(e.msg, "client certificates are not supported"));
	/* an empty directory, an empty hosts.toml: the host as it is */
	put_hosts(f, "empty.example", "");
	assert_int_equal(hosts_of(f, "empty.example", &v, &e), 0);
	/* a directory that is not there is refused, not taken for one without mirrors */
	err_clear(&e);
	assert_int_equal(oci_hosts_load("/nonexistent-ndi", "x.example", &v, &(size_t){0}, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "/nonexistent-ndi"));
}

/* TEXT as reg.example's hosts.toml is refused, the message naming WANT. */
static void hosts_refused(struct scratch_fixture *f, const char *text, const char *want)
{
	struct oci_endpoint *v = NULL;
	struct err e;

	put_hosts(f, "reg.example", text);
	if (hosts_of(f, "reg.example", &v, &e) != -1)
		fail_msg("accepted: %s", text);
	assert_null(v);
	assert_int_equal(e.code, EXIT_USAGE);
	if (!strstr(e.msg, want))
		fail_msg("'%s' does not name '%s'", e.msg, want);
	assert_non_null(strstr(e.msg, "reg.example/hosts.toml"));
}

static void test_hosts_refused(void **state)
{
	struct scratch_fixture *f = *state;

	/* what TOML refuses */
	hosts_refused(f, "server = \"https://x\n", "line 1: an unterminated string");
	hosts_refused(f, "\n\nserver = 'x", "line 3: an unterminated string");
	hosts_refused(f, "[host.\"a\"]\n[host.\"a\"]\n", "line 2: a table defined twice");
	hosts_refused(f, "server = \"a\"\nserver = \"b\"\n", "line 2: a key defined twice");
	hosts_refused(f, "[host.\"a\".header]\nx = \"1\"\n[host.\"a\"]\nheader = \"y\"\n",
		      "line 4: a key defined twice");
	hosts_refused(f, "server = \"a\\q\"\n", "a bad escape");
	hosts_refused(f, "server = \"a\\u0000\"\n", "NUL");
	hosts_refused(f, "server = \"a\tb\x01\"\n", "a control character");
	hosts_refused(f, "server = \"\xff\"\n", "not UTF-8 at byte 10");
	hosts_refused(f, "server = \"a\" \"b\"\n", "after the value");
	hosts_refused(f, "capabilities = [\"pull\"\n", "an unterminated array");
	hosts_refused(f, "[host.\"a\"\n", "an unterminated table header");
	hosts_refused(f, "server\n", "'=' expected");
	hosts_refused(f, "server = \n", "a value expected");
	/* what TOML has beyond the subset */
	hosts_refused(f, "server = \"\"\"x\"\"\"\n", "a multi-line string");
	hosts_refused(f, "[[host]]\n", "an array of tables");
	hosts_refused(f, "host.\"a\".capabilities = [\"pull\"]\n", "a dotted key");
	hosts_refused(f, "[host.\"a\"]\nheader = {x = \"y\"}\n", "an inline table");
	hosts_refused(f, "x = 1.5\n", "a value this reader does not take");
	hosts_refused(f, "x = 2026-01-01\n", "a value this reader does not take");
	/* what containerd refuses, or this installer */
	hosts_refused(f, "capabilities = [\"pull\", \"fetch\"]\n", "unknown capability 'fetch'");
	hosts_refused(f, "capabilities = \"pull\"\n", "\"capabilities\": an array of strings");
	hosts_refused(f, "ca = 1\n", "\"ca\": a string or an array of strings");
	hosts_refused(f, "[host.\"a\"]\nskip_verify = true\n",
		      "line 2: skip_verify = true: verification cannot be turned off here");
	hosts_refused(f, "skip_verify = \"no\"\n", "\"skip_verify\": true or false");
	hosts_refused(f, "ca = [\"a.pem\", \"b.pem\"]\n", "2 files for one host");
	hosts_refused(f, "client = \"me.pem\"\n", "client certificates are not supported");
	hosts_refused(f, "[header]\nAuthorization = \"Bearer x\"\n", "credentials go in");
	hosts_refused(f, "[header]\n\"a b\" = \"x\"\n", "not a header name");
	hosts_refused(f, "[header]\nx = \"a\\nb\"\n", "a line break");
	hosts_refused(f, "[header.sub]\n", "a table under [header]");
	hosts_refused(f, "[host]\nx = 1\n", "a key of [host]");
	hosts_refused(f, "server = \"httpx://x\"\n", "not an http:// or https:// URL");
	hosts_refused(f, "server = \"ftp://x\"\n", "not a registry URL");
	hosts_refused(f, "server = \"x:port\"\n", "not a registry URL");
	hosts_refused(f, "server = \"https://u:p@x\"\n", "not a registry URL");
	hosts_refused(f, "[host.\"https://x/?q\"]\n", "not a registry URL");
}

/* ---- the GCE metadata server's token, from tests/tools/gce-metadata.py ---- */

struct gce {
	struct scratch_fixture f;
	pid_t pid;
	char mode[200], log[200], host[64];
};

static int gce_up(void **state)
{
	struct gce *g = calloc(1, sizeof(*g));
	char port_file[200], port[16] = "";

	assert_non_null(g);
	assert_int_equal(scratch_init(&g->f, "gce"), 0);
	snprintf(port_file, sizeof(port_file), "%s/port", g->f.root);
	snprintf(g->mode, sizeof(g->mode), "%s/mode", g->f.root);
	snprintf(g->log, sizeof(g->log), "%s/requests.log", g->f.root);
	g->pid = fork();
	assert_true(g->pid >= 0);
	if (g->pid == 0) {
		execlp("python3", "python3", "tests/tools/gce-metadata.py", "--port-file",
		       port_file, "--mode-file", g->mode, "--log", g->log, (char *)NULL);
		_exit(127);
	}
	/* the port file appears, whole, once the server listens (serverutil.serve): waited for
	 * up to 60 s of a loaded machine */
	for (int i = 0; i < 1200 && !port[0]; i++) {
		FILE *fp = fopen(port_file, "r");

		if (fp) {
			if (!fgets(port, sizeof(port), fp))
				port[0] = '\0';
			fclose(fp);
		}
		if (!port[0])
			nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
	}
	assert_true(port[0]);
	snprintf(g->host, sizeof(g->host), "127.0.0.1:%s", port);
	setenv("GCE_METADATA_HOST", g->host, 1);
	*state = g;
	return 0;
}

static int gce_down(void **state)
{
	struct gce *g = *state;

	kill(g->pid, SIGKILL);
	waitpid(g->pid, NULL, 0);
	scratch_fini(&g->f);
	free(g);
	unsetenv("GCE_METADATA_HOST");
	return 0;
}

/* oci_gce_token with the stand-in answering MODE. */
static int ask_gce(struct gce *g, const char *mode, struct oci_cred *c, struct err *e)
{
	struct fetch_opts o = {.timeout_s = 30};
	struct fetcher *f = NULL;
	FILE *fp = fopen(g->mode, "w");
	int r;

	assert_non_null(fp);
	fputs(mode, fp);
	assert_int_equal(fclose(fp), 0);
	err_clear(e);
	assert_int_equal(fetcher_new(&o, &f, e), 0);
	r = oci_gce_token(f, c, e);
	fetcher_free(f);
	return r;
}

static void test_gce_token(void **state)
{
	struct gce *g = *state;
	struct oci_cred c = {0};
	char line[512] = "";
	struct err e;
	FILE *fp;

	assert_int_equal(ask_gce(g, "token", &c, &e), 0);
	assert_string_equal(c.username, "oauth2accesstoken");
	assert_string_equal(c.password, "ya29.stand-in_token-0123456789");
	assert_null(c.identity_token);
	oci_cred_done(&c);
	/* the request carried the header the real server insists on */
	fp = fopen(g->log, "r");
	assert_non_null(fp);
	assert_non_null(fgets(line, sizeof(line), fp));
	fclose(fp);
	assert_non_null(strstr(line, "\"flavor\": \"Google\""));
	assert_non_null(
		strstr(line, "/computeMetadata/v1/instance/service-accounts/default/token"));
	/* a proxy the pod's environment names is not asked: the server is the node's own */
	setenv("http_proxy", "http://127.0.0.1:1", 1);
	setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
	assert_int_equal(ask_gce(g, "token", &c, &e), 0);
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	assert_string_equal(c.password, "ya29.stand-in_token-0123456789");
	oci_cred_done(&c);
	/* an instance without a service account: no token, not an error */
	assert_int_equal(ask_gce(g, "none", &c, &e), 1);
	assert_null(c.username);
}

/* MODE refused with CODE, the message naming WANT, never the token. */
static void gce_refused(struct gce *g, const char *mode, int code, const char *want)
{
	struct oci_cred c = {0};
	struct err e;

	assert_int_equal(ask_gce(g, mode, &c, &e), -1);
	assert_null(c.username);
	assert_int_equal(e.code, code);
	if (!strstr(e.msg, want))
		fail_msg("'%s' does not name '%s'", e.msg, want);
	assert_null(strstr(e.msg, "ya29"));
}

static void test_gce_refused(void **state)
{
	struct gce *g = *state;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	struct oci_cred c = {0};
	char host[64];
	struct err e;
	int fd;

	gce_refused(g, "garbage", EXIT_UNREACHABLE, "the answer is not a token: not JSON");
	gce_refused(g, "basic", EXIT_UNREACHABLE, "\"token_type\" is not \"Bearer\"");
	gce_refused(g, "spaces", EXIT_UNREACHABLE, "b64token");
	gce_refused(g, "error", EXIT_UNREACHABLE, "HTTP 500");
	gce_refused(g, "garbage", EXIT_UNREACHABLE, g->host); /* the server named */
	/* no metadata server: a port nothing listens on */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	snprintf(host, sizeof(host), "127.0.0.1:%u", ntohs(sa.sin_port));
	setenv("GCE_METADATA_HOST", host, 1);
	assert_int_equal(ask_gce(g, "token", &c, &e), 1);
	setenv("GCE_METADATA_HOST", "127.0.0.1/evil?x", 1);
	assert_int_equal(ask_gce(g, "token", &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "GCE_METADATA_HOST"));
	setenv("GCE_METADATA_HOST", g->host, 1);
}

static void test_host_is_gcp(void **state)
{
	(void)state;
	assert_true(oci_host_is_gcp("gcr.io"));
	assert_true(oci_host_is_gcp("eu.gcr.io"));
	assert_true(oci_host_is_gcp("us-central1-docker.pkg.dev"));
	assert_true(oci_host_is_gcp("EUROPE-docker.PKG.dev"));
	assert_false(oci_host_is_gcp("evil.example/gcr.io"));
	assert_false(oci_host_is_gcp("a.b.gcr.io"));
	assert_false(oci_host_is_gcp("gcr.io.evil.example"));
	assert_false(oci_host_is_gcp("notgcr.io"));
	assert_false(oci_host_is_gcp("docker.pkg.dev"));
	assert_false(oci_host_is_gcp("-docker.pkg.dev"));
	assert_false(oci_host_is_gcp("x.y-docker.pkg.dev"));
	assert_false(oci_host_is_gcp("gcr.io:443"));
	assert_false(oci_host_is_gcp("quay.io"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		scratch_unit_test(test_auth_fields),
		scratch_unit_test(test_keys),
		scratch_unit_test(test_files_order),
		scratch_unit_test(test_refused),
		scratch_unit_test(test_hosts_file),
		scratch_unit_test(test_hosts_dirs),
		scratch_unit_test(test_hosts_refused),
		cmocka_unit_test_setup_teardown(test_gce_token, gce_up, gce_down),
		cmocka_unit_test_setup_teardown(test_gce_refused, gce_up, gce_down),
		cmocka_unit_test(test_host_is_gcp),
	};

	log_setup(LOG_FORMAT_TEXT, LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
