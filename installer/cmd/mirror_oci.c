// SPDX-License-Identifier: Apache-2.0
/*
 * The repository as an OCI artifact (docs/repository-format.md, "In an OCI registry"): its
 * manifest, and mirror --to oci-layout:PATH[:TAG], an OCI image layout directory as the
 * image-layout spec defines it (https://github.com/opencontainers/image-spec/blob/v1.1.0/
 * image-layout.md: the `oci-layout` file, `index.json`, `blobs/sha256/HEX`), the format
 * skopeo's `oci:` transport and `oras --oci-layout` read. The tag is the index.json entry's
 * `org.opencontainers.image.ref.name` annotation (image-spec annotations.md); the entries of
 * other tags are kept, and index.json is replaced by rename, the one switch a reader sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mirror_dest.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"

#define REF_NAME "org.opencontainers.image.ref.name"
#define LAYOUT_VERSION "1.0.0"
/* A manifest read back is at most this long (SPEC48 §2's OCI_MANIFEST_MAX). */
#define LAYOUT_MANIFEST_MAX (4u << 20)
#define LAYOUT_INDEX_MAX (4u << 20)

int mirror_sha256_hex(const void *buf, size_t len, char out[65])
{
	_cleanup_(sha256_freep) struct sha256 *sha = sha256_new();

	if (!sha || sha256_update(sha, buf, len) < 0 || sha256_final_hex(sha, out) < 0)
		return -1;
	return 0;
}

const char *mirror_package_media_type(const char *path)
{
	static const struct {
		const char *suffix, *type;
	} types[] = {
		{".tar.zst", "application/vnd.nvidia.driver-installer.package.v1.tar+zstd"},
		{".tar.xz", "application/vnd.nvidia.driver-installer.package.v1.tar+xz"},
		{".tar.gz", "application/vnd.nvidia.driver-installer.package.v1.tar+gzip"},
	};
	size_t len = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		size_t sl = strlen(types[i].suffix);

		if (len > sl && strcmp(path + len - sl, types[i].suffix) == 0)
			return types[i].type;
	}
	return "application/vnd.nvidia.driver-installer.package.v1.tar";
}

/* A descriptor: MEDIA_TYPE, sha256:HEX, SIZE and, when TITLE, its title annotation. */
static json_object *descriptor(const char *media_type, const char *hex, uint64_t size,
			       const char *title)
{
	json_object *o = json_object_new_object(), *a;
	char digest[80];

	snprintf(digest, sizeof(digest), "sha256:%s", hex);
	json_object_object_add(o, "mediaType", json_object_new_string(media_type));
	json_object_object_add(o, "digest", json_object_new_string(digest));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)size));
	if (title) {
		a = json_object_new_object();
		json_object_object_add(a, "org.opencontainers.image.title",
				       json_object_new_string(title));
		json_object_object_add(o, "annotations", a);
	}
	return o;
}

/* The packages' layers: CARRIED in order, each digest once (the first path its title). */
static void package_layers(json_object *layers, const struct mirror_carried *carried)
{
	for (size_t i = 0; i < carried->n; i++) {
		const struct repo_package *pkg = carried->v[i];
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(carried->v[j]->sha256, pkg->sha256) == 0;
		if (!seen)
			json_object_array_add(layers,
					      descriptor(mirror_package_media_type(pkg->path),
							 pkg->sha256, pkg->size, pkg->path));
	}
}

int mirror_manifest(const struct source *src, const struct mirror_carried *carried, char **ret,
		    size_t *ret_len, struct err *e)
{
	_cleanup_(json_object_putp) json_object *m = json_object_new_object();
	json_object *layers = json_object_new_array(), *a;
	char idx_hex[65], sig_hex[65];
	const char *text;

	if (mirror_sha256_hex(src->index_json, src->index_len, idx_hex) < 0 ||
	    mirror_sha256_hex(src->index_sig, src->sig_len, sig_hex) < 0 || !m || !layers) {
		json_object_put(layers);
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror: manifest");
	}
	json_object_object_add(m, "schemaVersion", json_object_new_int(2));
	json_object_object_add(m, "mediaType", json_object_new_string(MIRROR_MT_MANIFEST));
	json_object_object_add(m, "artifactType", json_object_new_string(MIRROR_MT_ARTIFACT));
	json_object_object_add(m, "config",
			       descriptor(MIRROR_MT_EMPTY, MIRROR_EMPTY_SHA256, 2, NULL));
	json_object_array_add(layers,
			      descriptor(MIRROR_MT_INDEX, idx_hex, src->index_len, "index.json"));
	json_object_array_add(layers,
			      descriptor(MIRROR_MT_SIG, sig_hex, src->sig_len, "index.json.sig"));
	package_layers(layers, carried);
	json_object_object_add(m, "layers", layers);
	if (src->idx->has_generated) {
		a = json_object_new_object();
		json_object_object_add(a, "org.opencontainers.image.created",
				       json_object_new_string(src->idx->generated));
		json_object_object_add(m, "annotations", a);
	}
	text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE);
	*ret = text ? strdup(text) : NULL;
	if (!*ret)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror: manifest");
	*ret_len = strlen(*ret);
	return 0;
}

/* ---- the layout ---- */

/* The layout's blobs/sha256, made when missing. */
static int blobs_dir(struct mirror_dest *d, struct err *e)
{
	int fd = fs_dir_in_root(d->dir_fd, "blobs/sha256", true, e);

	return fd < 0 ? err_wrap(e, "mirror: '%s'", d->c->mirror_to) : fd;
}

/* Reads blob HEX of the layout whole, at most MAX bytes, checked against its name. */
static int read_blob(struct mirror_dest *d, const char *hex, size_t max, char **ret,
		     size_t *ret_len, struct err *e)
{
	char path[96], got[65];

	snprintf(path, sizeof(path), "blobs/sha256/%s", hex);
	if (fs_read_at(d->dir_fd, path, max, ret, ret_len, e) < 0)
		return -1;
	if (mirror_sha256_hex(*ret, *ret_len, got) < 0 || strcmp(got, hex) != 0) {
		free(*ret);
		*ret = NULL;
		return err_set(e, EXIT_VERIFY, "'%s': its bytes do not hash to its name", path);
	}
	return 0;
}

/* "sha256:HEX" of descriptor O, or NULL. */
static const char *descriptor_hex(json_object *o)
{
	json_object *dg;
	const char *s;

	if (!json_object_object_get_ex(o, "digest", &dg) ||
	    !json_object_is_type(dg, json_type_string))
		return NULL;
	s = json_object_get_string(dg);
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s + 7) != 64 ||
	    strspn(s + 7, "0123456789abcdef") != 64)
		return NULL;
	return s + 7;
}

static bool has_string(json_object *o, const char *key, const char *want)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

/* The layout's index.json parsed, or NULL when it has none (0) or on error (-1). */
static int read_layout_index(struct mirror_dest *d, json_object **ret, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	*ret = NULL;
	if (faccessat(d->dir_fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	if (fs_read_at(d->dir_fd, "index.json", LAYOUT_INDEX_MAX, &buf, &len, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	*ret = json_tokener_parse(buf);
	if (!*ret || !json_object_is_type(*ret, json_type_object)) {
		json_object_put(*ret);
		*ret = NULL;
		err_set(e, EXIT_USAGE, "mirror: '%s': its index.json is not a JSON object",
			d->c->mirror_to);
		err_hint(e, "give --to an OCI image layout, or a new directory");
		return -1;
	}
	return 0;
}

/* The manifest descriptor INDEX lists for TAG, or NULL. */
static json_object *tagged(json_object *index, const char *tag)
{
	json_object *ms, *a;

	if (!json_object_object_get_ex(index, "manifests", &ms) ||
	    !json_object_is_type(ms, json_type_array))
		return NULL;
	for (size_t i = json_object_array_length(ms); i-- > 0;) {
		json_object *m = json_object_array_get_idx(ms, i);

		if (json_object_object_get_ex(m, "annotations", &a) && has_string(a, REF_NAME, tag))
			return m;
	}
	return NULL;
}

/* The digest (hex) of MANIFEST's first layer of MEDIA_TYPE, or "" (no blob has that name). */
static const char *layer_hex(json_object *manifest, const char *media_type)
{
	json_object *layers;

	if (json_object_object_get_ex(manifest, "layers", &layers) &&
	    json_object_is_type(layers, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(layers); i++) {
			json_object *l = json_object_array_get_idx(layers, i);

			if (has_string(l, "mediaType", media_type) && descriptor_hex(l))
				return descriptor_hex(l);
		}
	}
	return "";
}

/*
 * The index TAG names now. Whatever stands there that is not a repository of ours (another
 * artifact, a damaged blob) is held as an index that does not verify: empty.
 */
static int layout_held(struct mirror_dest *d, struct mirror_held *ret, struct err *e)
{
	_cleanup_(json_object_putp) json_object *index = NULL, *manifest = NULL;
	_cleanup_free_ char *mbuf = NULL;
	json_object *desc;
	size_t mlen = 0;
	struct err ie;

	*ret = (struct mirror_held){0};
	if (read_layout_index(d, &index, e) < 0)
		return -1;
	desc = index ? tagged(index, d->tag) : NULL;
	if (!desc)
		return 0;
	if (!descriptor_hex(desc) ||
	    read_blob(d, descriptor_hex(desc), LAYOUT_MANIFEST_MAX, &mbuf, &mlen, &ie) < 0 ||
	    !(manifest = json_tokener_parse(mbuf)) ||
	    read_blob(d, layer_hex(manifest, MIRROR_MT_INDEX), REPO_INDEX_MAX, &ret->json,
		      &ret->len, &ie) < 0 ||
	    read_blob(d, layer_hex(manifest, MIRROR_MT_SIG), VERIFY_SIG_MAX, &ret->sig,
		      &ret->sig_len, &ie) < 0) {
		mirror_held_done(ret);
		ret->json = strdup("");
		return ret->json ? 0 : err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	}
	return 0;
}

static int layout_have(struct mirror_dest *d, const struct repo_package *pkg, struct err *e)
{
	char path[96];
	struct err ie;
	_cleanup_close_ int fd = -1;

	(void)e;
	snprintf(path, sizeof(path), "blobs/sha256/%s", pkg->sha256);
	fd = fs_open_regular_at(d->dir_fd, path, O_NOFOLLOW, &ie);
	return fd >= 0 && mirror_is_package(fd, pkg);
}

/* PKG into blobs/sha256/HEX.part, verified, then renamed to its digest. */
static int layout_copy(struct mirror_dest *d, struct source *src, const struct repo_package *pkg,
		       uint64_t *net, struct err *e)
{
	_cleanup_close_ int bfd = blobs_dir(d, e), fd = -1;
	char part[80];
	uint64_t got = 0;

	if (bfd < 0)
		return -1;
	snprintf(part, sizeof(part), "%s.part", pkg->sha256);
	fd = mirror_open_part(bfd, part, e);
	if (fd < 0 || source_download(src, pkg, fd, NULL, &got, e) < 0)
		return -1;
	*net += got;
	if (fsync(fd) < 0 || renameat(bfd, part, bfd, pkg->sha256) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: publish blob '%s'",
				 pkg->sha256);
	return 0;
}

/* BUF as a blob of the layout (kept when one of that digest is there); its HEX out. */
static int put_blob(struct mirror_dest *d, int bfd, const void *buf, size_t len, char hex[65],
		    struct err *e)
{
	_cleanup_free_ char *have = NULL;
	size_t have_len = 0;
	struct err ie;

	if (mirror_sha256_hex(buf, len, hex) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	if (read_blob(d, hex, len, &have, &have_len, &ie) == 0)
		return 0;
	if (fs_write_atomic_at(bfd, hex, buf, len, 0644, e) < 0)
		return err_wrap(e, "mirror: '%s': blob", d->c->mirror_to);
	return 0;
}

/* INDEX (may be NULL) with TAG's entries replaced by DESC. */
static json_object *retagged(json_object *index, const char *tag, json_object *desc)
{
	json_object *out = json_object_new_object(), *ms = json_object_new_array(), *old, *a;

	json_object_object_add(out, "schemaVersion", json_object_new_int(2));
	json_object_object_add(out, "mediaType", json_object_new_string(MIRROR_MT_INDEX_OCI));
	if (index && json_object_object_get_ex(index, "manifests", &old) &&
	    json_object_is_type(old, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(old); i++) {
			json_object *m = json_object_array_get_idx(old, i);

			if (!(json_object_object_get_ex(m, "annotations", &a) &&
			      has_string(a, REF_NAME, tag)))
				json_object_array_add(ms, json_object_get(m));
		}
	}
	json_object_array_add(ms, desc);
	json_object_object_add(out, "manifests", ms);
	if (index && json_object_object_get_ex(index, "annotations", &a))
		json_object_object_add(out, "annotations", json_object_get(a));
	return out;
}

/* index.json naming MANIFEST (HEX, LEN) under the tag, by rename. */
static int put_layout_index(struct mirror_dest *d, const char *hex, size_t len, struct err *e)
{
	_cleanup_(json_object_putp) json_object *index = NULL, *out = NULL;
	json_object *desc = descriptor(MIRROR_MT_MANIFEST, hex, len, NULL), *a;
	_cleanup_free_ char *have = NULL;
	size_t have_len = 0;
	const char *text;
	struct err ie;

	if (read_layout_index(d, &index, e) < 0) {
		json_object_put(desc);
		return -1;
	}
	json_object_object_add(desc, "artifactType", json_object_new_string(MIRROR_MT_ARTIFACT));
	a = json_object_new_object();
	json_object_object_add(a, REF_NAME, json_object_new_string(d->tag));
	json_object_object_add(desc, "annotations", a);
	out = retagged(index, d->tag, desc);
	text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	/* A re-run that changes nothing leaves the file as it was. */
	if (fs_read_at(d->dir_fd, "index.json", LAYOUT_INDEX_MAX, &have, &have_len, &ie) == 0 &&
	    have_len == strlen(text) && memcmp(have, text, have_len) == 0)
		return 0;
	if (fs_write_atomic_at(d->dir_fd, "index.json", text, strlen(text), 0644, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	return 0;
}

/* The blobs (config, index, signature, manifest), the oci-layout file, index.json last. */
static int layout_publish(struct mirror_dest *d, const struct source *src,
			  const struct mirror_carried *carried, struct err *e)
{
	static const char layout[] = "{\"imageLayoutVersion\":\"" LAYOUT_VERSION "\"}";
	_cleanup_close_ int bfd = blobs_dir(d, e);
	_cleanup_free_ char *manifest = NULL;
	char hex[65];
	size_t len = 0;

	if (bfd < 0 || put_blob(d, bfd, MIRROR_EMPTY_BLOB, strlen(MIRROR_EMPTY_BLOB), hex, e) < 0 ||
	    put_blob(d, bfd, src->index_json, src->index_len, hex, e) < 0 ||
	    put_blob(d, bfd, src->index_sig, src->sig_len, hex, e) < 0 ||
	    mirror_manifest(src, carried, &manifest, &len, e) < 0 ||
	    put_blob(d, bfd, manifest, len, hex, e) < 0)
		return -1;
	if (faccessat(d->dir_fd, "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    fs_write_atomic_at(d->dir_fd, "oci-layout", layout, strlen(layout), 0644, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	return put_layout_index(d, hex, len, e);
}

static void layout_close(struct mirror_dest *d)
{
	if (d->dir_fd >= 0)
		close(d->dir_fd);
	d->dir_fd = -1;
	free(d->tag);
	d->tag = NULL;
}

static const struct mirror_dest_ops layout_ops = {
	.kind = "OCI image layout",
	.held = layout_held,
	.have = layout_have,
	.copy = layout_copy,
	.publish = layout_publish,
	.close = layout_close,
};

/*
 * A directory that is a layout already (its oci-layout file of version 1.0.0), or an empty
 * or new one: anything else is another program's directory, not to be written into.
 */
static int check_layout(const struct config *c, int fd, struct err *e)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_(json_object_putp) json_object *o = NULL;
	_cleanup_(closedirp) DIR *dir = NULL;
	size_t len = 0;
	struct dirent *de;
	struct err ie;

	if (fs_read_at(fd, "oci-layout", 4096, &buf, &len, &ie) == 0) {
		o = json_tokener_parse(buf);
		if (o && has_string(o, "imageLayoutVersion", LAYOUT_VERSION))
			return 0;
		return err_set(
			e, EXIT_USAGE,
			"mirror: '%s': its oci-layout file is not of image layout version %s",
			c->mirror_to, LAYOUT_VERSION);
	}
	dir = fdopendir(dup(fd));
	while (dir && (de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		err_set(e, EXIT_USAGE,
			"mirror: '%s' is a directory that is not an OCI image layout (it has no oci-layout file)",
			c->mirror_to);
		err_hint(e, "give oci-layout: a new or empty directory, or an OCI image layout");
		return -1;
	}
	return 0;
}

/* A tag by the distribution spec's grammar: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. */
static bool tag_is_valid(const char *t)
{
	size_t n = strlen(t);

	return n >= 1 && n <= 128 && t[0] != '.' && t[0] != '-' &&
	       strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* oci-layout:PATH[:TAG]: the tag after the last ':' that follows the last '/'. */
int mirror_layout_open(const struct config *c, const char *ref, struct mirror_dest *ret,
		       struct err *e)
{
	const char *path = ref + strlen("oci-layout:"), *slash = strrchr(path, '/');
	const char *colon = strrchr(slash ? slash : path, ':');
	_cleanup_free_ char *dir = strndup(path, colon ? (size_t)(colon - path) : strlen(path));
	_cleanup_free_ char *tag = strdup(colon ? colon + 1 : "latest");
	_cleanup_close_ int base = -1, fd = -1;

	if (!dir || !tag)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	if (!*dir)
		return err_set(e, EXIT_USAGE,
			       "mirror: --to '%s': no directory after oci-layout:", ref);
	if (!tag_is_valid(tag))
		return err_set(
			e, EXIT_USAGE,
			"mirror: --to '%s': the tag '%s' is not 1 to 128 of [A-Za-z0-9_.-] (not starting with '.' or '-')",
			ref, tag);
	base = open(dir[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror");
	fd = fs_dir_in_root(base, dir, true, e);
	if (fd < 0)
		return err_wrap(e, "mirror: --to");
	if (check_layout(c, fd, e) < 0)
		return -1;
	*ret = (struct mirror_dest){
		.ops = &layout_ops, .c = c, .dir_fd = TAKE_FD(fd), .tag = TAKE_PTR(tag)};
	return 0;
}
