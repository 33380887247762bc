// SPDX-License-Identifier: Apache-2.0
/*
 * mirror --to oci-layout:PATH[:TAG]: the repository as the OCI artifact of
 * docs/repository-format.md ("In an OCI registry"; its manifest and the layout's index.json
 * are source/oci_write.c's), in an OCI image layout directory as the image-layout spec
 * defines it (https://github.com/opencontainers/image-spec/blob/v1.1.0/
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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/mirror_dest.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"

#define LAYOUT_VERSION "1.0.0"
/* The most bytes of a layout's index.json or of a manifest read back (SPEC48 §2's 4 MiB). */
#define LAYOUT_INDEX_MAX (4u << 20)
#define OCI_MANIFEST_READ_MAX (4u << 20)

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
	if (sha256_hex_of(*ret, *ret_len, got) < 0 || strcmp(got, hex) != 0) {
		free(*ret);
		*ret = NULL;
		return err_set(e, EXIT_VERIFY, "'%s': its bytes do not hash to its name", path);
	}
	return 0;
}

static bool has_string(json_object *o, const char *key, const char *want)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) &&
	       strcmp(json_object_get_string(v), want) == 0;
}

/* The layout's index.json: 0 and its bytes (NULL when it has none), or -1. */
static int read_layout_index(struct mirror_dest *d, char **ret, size_t *ret_len, struct err *e)
{
	*ret = NULL;
	*ret_len = 0;
	if (faccessat(d->dir_fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	if (fs_read_at(d->dir_fd, "index.json", LAYOUT_INDEX_MAX, ret, ret_len, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	return 0;
}

/*
 * The index TAG names now. Whatever stands there that is not a repository of ours (another
 * artifact, a damaged blob) is held as an index that does not verify: empty.
 */
static int layout_held(struct mirror_dest *d, struct mirror_held *ret, struct err *e)
{
	_cleanup_free_ char *index = NULL, *mbuf = NULL;
	char hex[65], idx_hex[65], sig_hex[65];
	size_t len = 0, mlen = 0;
	struct err ie;
	int r;

	*ret = (struct mirror_held){0};
	if (read_layout_index(d, &index, &len, e) < 0)
		return -1;
	r = index ? oci_layout_tagged(index, len, d->tag, hex, &ie) : 0;
	if (r == 0)
		return 0;
	if (r < 0 || read_blob(d, hex, OCI_MANIFEST_READ_MAX, &mbuf, &mlen, &ie) < 0 ||
	    oci_artifact_index_layers(mbuf, mlen, idx_hex, sig_hex, &ie) < 0 ||
	    read_blob(d, idx_hex, REPO_INDEX_MAX, &ret->json, &ret->len, &ie) < 0 ||
	    read_blob(d, sig_hex, VERIFY_SIG_MAX, &ret->sig, &ret->sig_len, &ie) < 0) {
		log_kv(LOG_DEBUG, "mirror", "what the tag names is not a repository", "to",
		       d->c->mirror_to, "reason", ie.msg, LOG_END);
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

	if (sha256_hex_of(buf, len, hex) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	if (read_blob(d, hex, len, &have, &have_len, &ie) == 0)
		return 0;
	if (fs_write_atomic_at(bfd, hex, buf, len, 0644, e) < 0)
		return err_wrap(e, "mirror: '%s': blob", d->c->mirror_to);
	return 0;
}

/* index.json naming the manifest sha256:HEX (LEN bytes) under the tag, by rename. */
static int put_layout_index(struct mirror_dest *d, const char *hex, size_t len, struct err *e)
{
	_cleanup_free_ char *old = NULL, *text = NULL;
	size_t old_len = 0, text_len;

	if (read_layout_index(d, &old, &old_len, e) < 0 ||
	    oci_layout_retag(old, d->tag, hex, len, &text, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	text_len = strlen(text);
	/* A re-run that changes nothing leaves the file as it was. */
	if (old && old_len == text_len && memcmp(old, text, text_len) == 0)
		return 0;
	if (fs_write_atomic_at(d->dir_fd, "index.json", text, text_len, 0644, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	return 0;
}

/* The blobs (config, index, signature, manifest), the oci-layout file, index.json last. */
static int layout_publish(struct mirror_dest *d, const struct source *src,
			  const struct mirror_carried *carried, struct err *e)
{
	_cleanup_close_ int bfd = blobs_dir(d, e);
	_cleanup_free_ char *manifest = NULL;
	char hex[65];
	size_t len = 0;

	if (bfd < 0 || put_blob(d, bfd, OCI_EMPTY_BLOB, strlen(OCI_EMPTY_BLOB), hex, e) < 0 ||
	    put_blob(d, bfd, src->index_json, src->index_len, hex, e) < 0 ||
	    put_blob(d, bfd, src->index_sig, src->sig_len, hex, e) < 0 ||
	    oci_artifact_manifest(src, carried->v, carried->n, &manifest, &len, e) < 0 ||
	    put_blob(d, bfd, manifest, len, hex, e) < 0)
		return -1;
	if (faccessat(d->dir_fd, "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) < 0 &&
	    fs_write_atomic_at(d->dir_fd, "oci-layout", OCI_LAYOUT_FILE, strlen(OCI_LAYOUT_FILE),
			       0644, e) < 0)
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

/* oci-layout:PATH[:TAG], made when missing, or a layout already. */
int mirror_layout_open(const struct config *c, const char *ref, struct mirror_dest *ret,
		       struct err *e)
{
	_cleanup_free_ char *dir = NULL, *tag = NULL;
	_cleanup_close_ int base = -1, fd = -1;

	if (oci_layout_dest(ref, &dir, &tag, e) < 0)
		return err_wrap(e, "mirror: --to");
	base = open(dir[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror");
	fd = fs_dir_in_root(base, dir, true, e);
	if (fd < 0)
		return err_wrap(e, "mirror: --to");
	/*
	 * One mirror at a time writes a layout: index.json is read, retagged and replaced, and
	 * two at once would lose a tag. The lock is the directory's own, gone with the fd.
	 */
	if (flock(fd, LOCK_EX) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: lock '%s'", dir);
	if (check_layout(c, fd, e) < 0)
		return -1;
	*ret = (struct mirror_dest){
		.ops = &layout_ops, .c = c, .dir_fd = TAKE_FD(fd), .tag = TAKE_PTR(tag)};
	return 0;
}
