// SPDX-License-Identifier: Apache-2.0
/*
 * mirror --to oci://HOST/NAME[:TAG]: the repository pushed to a registry as the artifact
 * source/oci_write.c's manifest describes, through source/'s push (oci_push_*). A package is
 * downloaded into an unnamed temporary file and verified there (source_download) before
 * a byte of it is sent; a blob the registry has is not sent again; the manifest is PUT by
 * tag last, the one switch a reader sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmd/mirror_dest.h"
#include "cmd/session.h"
#include "util/log.h"

static struct oci_push *pusher(struct mirror_dest *d)
{
	return d->priv;
}

static int push_held(struct mirror_dest *d, struct mirror_held *ret, struct err *e)
{
	*ret = (struct mirror_held){0};
	return oci_push_held(pusher(d), &ret->json, &ret->len, &ret->sig, &ret->sig_len, e);
}

static int push_have(struct mirror_dest *d, const struct repo_package *pkg, struct err *e)
{
	return oci_push_has_blob(pusher(d), pkg->sha256, pkg->size, e);
}

/*
 * An unnamed file for a package on its way, in $TMPDIR or /var/tmp (a disk, where /tmp may
 * be memory): gone with the process whatever happens.
 */
static int temp_file(struct err *e)
{
	const char *dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd >= 0 ? fd
			       : err_errno(e, EXIT_UNEXPECTED, errno,
					   "mirror: a temporary file in '%s' (TMPDIR)", dir);
	/* A file system without O_TMPFILE: a named one, unlinked at once. */
	snprintf(path, sizeof(path), "%s/nvidia-mirror-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: a temporary file in '%s'",
				 dir);
	unlink(path);
	return fd;
}

static int push_copy(struct mirror_dest *d, struct source *src, const struct repo_package *pkg,
		     uint64_t *net, struct err *e)
{
	_cleanup_close_ int fd = temp_file(e);
	uint64_t got = 0;
	void *map;
	int r;

	if (fd < 0 || source_download(src, pkg, fd, NULL, &got, e) < 0)
		return -1;
	*net += got;
	/* Verified as it was written; sent from the mapping, so a resend starts at byte 0. */
	map = pkg->size ? mmap(NULL, (size_t)pkg->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	if (map == MAP_FAILED)
		return err_errno(e, EXIT_UNEXPECTED, errno, "mirror: map '%s'", pkg->path);
	r = oci_push_blob(pusher(d), pkg->sha256, map, pkg->size, e);
	if (map)
		munmap(map, (size_t)pkg->size);
	return r < 0 ? err_wrap(e, "mirror: '%s'", pkg->path) : 0;
}

/* BUF as a blob, unless the registry has it. */
static int put_blob(struct mirror_dest *d, const void *buf, size_t len, struct err *e)
{
	char hex[65];
	int have;

	if (sha256_hex_of(buf, len, hex) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "mirror");
	have = oci_push_has_blob(pusher(d), hex, len, e);
	if (have < 0 || (!have && oci_push_blob(pusher(d), hex, buf, len, e) < 0))
		return -1;
	return 0;
}

static int push_publish(struct mirror_dest *d, const struct source *src,
			const struct mirror_carried *carried, struct err *e)
{
	_cleanup_free_ char *manifest = NULL;
	char digest[65];
	size_t len = 0;

	if (put_blob(d, OCI_EMPTY_BLOB, strlen(OCI_EMPTY_BLOB), e) < 0 ||
	    put_blob(d, src->index_json, src->index_len, e) < 0 ||
	    put_blob(d, src->index_sig, src->sig_len, e) < 0 ||
	    oci_artifact_manifest(src, carried->v, carried->n, &manifest, &len, e) < 0 ||
	    oci_push_manifest(pusher(d), manifest, len, digest, e) < 0)
		return err_wrap(e, "mirror: '%s'", d->c->mirror_to);
	log_kv(LOG_INFO, "mirror", "manifest pushed", "to", d->c->mirror_to, "tag",
	       oci_push_tag(pusher(d)), "digest", digest, LOG_END);
	return 0;
}

static void push_close(struct mirror_dest *d)
{
	oci_push_free(d->priv);
	d->priv = NULL;
}

static const struct mirror_dest_ops push_ops = {
	.kind = "registry",
	.held = push_held,
	.have = push_have,
	.copy = push_copy,
	.publish = push_publish,
	.close = push_close,
};

int mirror_push_open(const struct config *c, const char *ref, struct mirror_dest *ret,
		     struct err *e)
{
	struct source_opts so = session_source_opts(c);
	struct oci_push *p = NULL;

	if (oci_push_new(&so, ref, &p, e) < 0)
		return -1;
	*ret = (struct mirror_dest){.ops = &push_ops, .c = c, .dir_fd = -1, .priv = p};
	return 0;
}
