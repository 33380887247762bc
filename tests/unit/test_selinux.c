// SPDX-License-Identifier: Apache-2.0
/*
 * installer/host/selinux.h: SELinux's state as the host's selinuxfs says it, the context we
 * publish with, labelling a tree without following its links, the census doctor reads;
 * and installer/stage/publish.h: a staged version labelled before it can be made current.
 * Labels are written as security.selinux, which a file system keeps for root also where
 * SELinux is not loaded (this machine's): the kernel's own answers are the VM's.
 */
#include "cmocka_prelude.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "host/selinux.h"
#include "stage/publish.h"
#include "scratch.h"

#define CTX "system_u:object_r:container_file_t:s0"
#define MCTX "system_u:object_r:modules_object_t:s0"

/* Sets F's REL's label (not followed) to CONTEXT, its NUL included, as libselinux does. */
static int set_label(const struct scratch_fixture *f, const char *rel, const char *context)
{
	char path[512];

	return lsetxattr(scratch_path(f, rel, path, sizeof(path)), "security.selinux", context,
			 strlen(context) + 1, 0);
}

/* The label of F's REL, not followed, or "-" when it has none. */
static const char *label(const struct scratch_fixture *f, const char *rel)
{
	static char buf[SELINUX_CONTEXT_MAX];
	char path[512];
	ssize_t n;

	n = lgetxattr(scratch_path(f, rel, path, sizeof(path)), "security.selinux", buf,
		      sizeof(buf) - 1);
	if (n < 0)
		return "-";
	buf[n] = '\0';
	return buf;
}

static void test_parsers(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(selinux_parse_flag("1\n", 2), 1);
	assert_int_equal(selinux_parse_flag("0", 1), 0);
	assert_int_equal(selinux_parse_flag("", 0), -EINVAL);
	assert_int_equal(selinux_parse_flag("2\n", 2), -EINVAL);
	assert_int_equal(selinux_parse_flag("10", 2), -EINVAL);
	assert_string_equal(selinux_context_of("container_file_t", true, buf, sizeof(buf)), CTX);
	assert_string_equal(selinux_context_of("container_file_t", false, buf, sizeof(buf)),
			    "system_u:object_r:container_file_t");
	assert_null(selinux_context_of("container_file_t", true, buf, 20));
	assert_string_equal(selinux_mode_name(SELINUX_ENFORCING), "enforcing");
	assert_string_equal(selinux_mode_name(SELINUX_PERMISSIVE), "permissive");
	assert_string_equal(selinux_mode_name(SELINUX_DISABLED), "disabled");
}

/* The state from selinuxfs under the host root; the policy asked through its context file. */
static void test_probe(void **state)
{
	struct scratch_fixture *f = *state;
	struct selinux s;
	char buf[128];
	int fd;
	ssize_t n;

	selinux_probe(f->fd, &s);
	assert_int_equal(s.mode, SELINUX_DISABLED);
	assert_null(selinux_label(&s));
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/enforce", "garbage"), 0);
	selinux_probe(f->fd, &s);
	assert_int_equal(s.mode, SELINUX_DISABLED);
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/enforce", "1"), 0);
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/mls", "1"), 0);
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/context", ""), 0);
	selinux_probe(f->fd, &s);
	assert_int_equal(s.mode, SELINUX_ENFORCING);
	assert_true(s.mls);
	assert_true(s.checked);
	assert_string_equal(selinux_label(&s), CTX);
	assert_string_equal(s.modules_context, MCTX);
	/*
	 * What the kernel is asked, last the modules' context:
	 * with its NUL, as libselinux writes it.
	 */
	fd = openat(f->fd, "sys/fs/selinux/context", O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_true(n >= (ssize_t)sizeof(MCTX));
	assert_memory_equal(buf, MCTX, sizeof(MCTX));
	/* Permissive, without levels; a context file that cannot be written cannot say. */
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/enforce", "0\n"), 0);
	assert_int_equal(scratch_write(f->fd, "sys/fs/selinux/mls", "0\n"), 0);
	assert_int_equal(unlinkat(f->fd, "sys/fs/selinux/context", 0), 0);
	selinux_probe(f->fd, &s);
	assert_int_equal(s.mode, SELINUX_PERMISSIVE);
	assert_false(s.mls);
	assert_false(s.checked);
	assert_string_equal(selinux_label(&s), "system_u:object_r:container_file_t");
}

/*
 * A tree labelled whole, its links as links: a link that leads out of it (to a file of the
 * host) is labelled itself, its target not. Idempotent: a second pass changes nothing.
 */
static void test_label_tree(void **state)
{
	struct scratch_fixture *f = *state;
	struct selinux_mislabel m;
	char out[512];
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_write(f->fd, "host/etc/shadow", "x"), 0);
	assert_int_equal(scratch_write(f->fd, "tree/lib64/libcuda.so.1", "elf"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "tree/bin"), 0);
	assert_int_equal(symlinkat(scratch_path(f, "host/etc/shadow", out, sizeof(out)), f->fd,
				   "tree/bin/escape"),
			 0);
	assert_int_equal(symlinkat("../host", f->fd, "tree/up"), 0);
	assert_int_equal(selinux_label_at(f->fd, "tree", CTX, true, NULL, &e), 6);
	assert_string_equal(label(f, "tree"), CTX);
	assert_string_equal(label(f, "tree/lib64/libcuda.so.1"), CTX);
	assert_string_equal(label(f, "tree/bin/escape"), CTX);
	assert_string_equal(label(f, "tree/up"), CTX);
	assert_string_equal(label(f, "host/etc/shadow"), "-");
	assert_string_equal(label(f, "host"), "-");
	assert_int_equal(selinux_label_at(f->fd, "tree", CTX, true, NULL, &e), 0);
	/* The user and role do not decide access: a chcon -t label is left as it is. */
	assert_int_equal(set_label(f, "tree/bin", "unconfined_u:object_r:container_file_t:s0"), 0);
	assert_int_equal(selinux_label_at(f->fd, "tree", CTX, true, NULL, &e), 0);
	/* Another level (one container's categories, :Z) or type is counted and put back. */
	assert_int_equal(set_label(f, "tree/lib64", "system_u:object_r:container_file_t:s0:c1,c2"),
			 0);
	assert_int_equal(set_label(f, "tree/up", "system_u:object_r:user_home_t:s0"), 0);
	assert_int_equal(selinux_find_mislabelled(f->fd, "tree", CTX, 100, NULL, &m), 0);
	assert_int_equal(m.count, 2);
	assert_int_equal(m.total, 6);
	assert_non_null(strstr(m.first, "tree/"));
	assert_int_equal(selinux_find_mislabelled(f->fd, "tree", CTX, 3, NULL, &m), 0);
	assert_int_equal(m.total, 3);
	assert_int_equal(selinux_label_at(f->fd, "tree/up", CTX, false, NULL, &e), 1);
	assert_int_equal(selinux_label_at(f->fd, "tree", CTX, true, NULL, &e), 1);
	assert_int_equal(selinux_find_mislabelled(f->fd, "tree", CTX, 100, NULL, &m), 0);
	assert_int_equal(m.count, 0);
	assert_string_equal(label(f, "host/etc/shadow"), "-");
}

/*
 * Hard links: a label is the inode's, so a name in the tree labels every other. Those whose
 * every name is in the tree counted (bin/ and usr/bin/) are labelled; one to a file of the
 * host (/etc/shadow) is not, nor the host's file; a FIFO is never the installer's. A subtree
 * labelled alone counts its own links, unless given the whole tree's. The census counts
 * them apart.
 */
static void test_label_links(void **state)
{
	struct scratch_fixture *f = *state;
	_cleanup_(selinux_links_freep) struct selinux_links *links = NULL;
	struct selinux_mislabel m;
	char a[512], b[512];
	struct err e;

	err_clear(&e);
	assert_int_equal(scratch_write(f->fd, "host/etc/shadow", "root:*:"), 0);
	assert_int_equal(set_label(f, "host/etc/shadow", "system_u:object_r:shadow_t:s0"), 0);
	assert_int_equal(scratch_write(f->fd, "tree/bin/nvidia-smi", "elf"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "tree/usr/bin"), 0);
	assert_int_equal(scratch_mkdirs(f->fd, "tree/lib64"), 0);
	assert_int_equal(link(scratch_path(f, "tree/bin/nvidia-smi", a, sizeof(a)),
			      scratch_path(f, "tree/usr/bin/nvidia-smi", b, sizeof(b))),
			 0);
	assert_int_equal(link(scratch_path(f, "host/etc/shadow", a, sizeof(a)),
			      scratch_path(f, "tree/lib64/libshadow.so.1", b, sizeof(b))),
			 0);
	assert_int_equal(mkfifoat(f->fd, "tree/lib64/fifo", 0600), 0);
	/* A subtree alone: usr/bin/nvidia-smi's other name is outside it. */
	assert_int_equal(selinux_label_at(f->fd, "tree/usr", CTX, true, NULL, &e), 2);
	assert_string_equal(label(f, "tree/usr/bin/nvidia-smi"), "-");
	/* The whole tree's links, given to each part's pass (as publish_label does). */
	assert_int_equal(selinux_links_new(f->fd, "tree", &links, &e), 0);
	assert_int_equal(selinux_label_at(f->fd, "tree/usr", CTX, true, links, &e), 1);
	assert_string_equal(label(f, "tree/usr/bin/nvidia-smi"), CTX);
	assert_string_equal(label(f, "tree/bin/nvidia-smi"), CTX);
	assert_int_equal(selinux_label_at(f->fd, "tree/lib64", CTX, true, links, &e), 1);
	assert_string_equal(label(f, "tree/lib64"), CTX);
	assert_string_equal(label(f, "tree/lib64/libshadow.so.1"), "system_u:object_r:shadow_t:s0");
	assert_string_equal(label(f, "host/etc/shadow"), "system_u:object_r:shadow_t:s0");
	assert_string_equal(label(f, "tree/lib64/fifo"), "-");
	assert_int_equal(links->skipped, 2);
	assert_non_null(strstr(links->first_skipped, "tree/lib64/"));
	/* The whole tree, its own links counted. */
	assert_int_equal(selinux_label_at(f->fd, "tree", CTX, true, NULL, &e), 2);
	assert_string_equal(label(f, "host/etc/shadow"), "system_u:object_r:shadow_t:s0");
	/* The census: nothing mislabelled, the link to the host's file and the FIFO apart. */
	assert_int_equal(selinux_find_mislabelled(f->fd, "tree", CTX, 100, NULL, &m), 0);
	assert_int_equal(m.count, 0);
	assert_int_equal(m.foreign, 2);
	assert_non_null(strstr(m.first_foreign, "tree/lib64/"));
	/* A third name outside, after the count: seen on the entry itself. */
	assert_int_equal(set_label(f, "tree/bin/nvidia-smi", "system_u:object_r:bin_t:s0"), 0);
	assert_int_equal(link(scratch_path(f, "tree/bin/nvidia-smi", a, sizeof(a)),
			      scratch_path(f, "host/nvidia-smi", b, sizeof(b))),
			 0);
	assert_int_equal(selinux_label_at(f->fd, "tree/bin", CTX, true, links, &e), 0);
	assert_string_equal(label(f, "host/nvidia-smi"), "system_u:object_r:bin_t:s0");
}

/*
 * A staged version carries its labels when it lands in .versions/, before any switch: the
 * container label, and the modules' on drivers/ (the package's kernel/); then the install
 * dir's own entries, and the census doctor reads.
 */
static void test_staged_labelled(void **state)
{
	struct scratch_fixture *f = *state;
	_cleanup_(publish_freep) struct installdir *d = NULL;
	struct manifest m = {.driver_version = (char *)"535.261.03",
			     .kernel_release = (char *)"6.1.0-57-amd64",
			     .package_sha256 = (char *)"6efac67935731234567890abcdef",
			     .package_path = (char *)"nvidia.tar.zst",
			     .repository = (char *)"file:///repo",
			     .requested_version = (char *)"default",
			     .installed_at = (char *)"2026-12-03T00:00:00Z",
			     .os_id = (char *)"rhel",
			     .arch = (char *)"x86_64"};
	struct selinux se = {.mode = SELINUX_ENFORCING, .context = CTX, .modules_context = MCTX};
	char staging[NAME_MAX + 1], id[NAME_MAX + 1], rel[NAME_MAX + 64];
	struct selinux_mislabel census;
	struct stat st;
	struct err e;
	int sfd;

	err_clear(&e);
	assert_int_equal(scratch_mkdirs(f->fd, "idir"), 0);
	assert_int_equal(publish_open(f->fd, "/idir", false, &d, &e), 0);
	sfd = publish_staging(d, staging, sizeof(staging), &e);
	assert_true(sfd >= 0);
	snprintf(rel, sizeof(rel), "idir/%s/lib64/libcuda.so.535.261.03", staging);
	assert_int_equal(scratch_write(f->fd, rel, "elf"), 0);
	snprintf(rel, sizeof(rel), "idir/%s/kernel/nvidia.ko", staging);
	assert_int_equal(scratch_write(f->fd, rel, "elf"), 0);
	assert_int_equal(publish_stage(d,
				       &(struct publish_request){.staging = staging,
								 .staging_fd = sfd,
								 .manifest = &m,
								 .selinux = &se},
				       id, sizeof(id), &e),
			 0);
	close(sfd);
	assert_int_equal(fstatat(f->fd, "idir/.current", &st, AT_SYMLINK_NOFOLLOW), -1);
	snprintf(rel, sizeof(rel), "idir/.versions/%s/lib64/libcuda.so.535.261.03", id);
	assert_string_equal(label(f, rel), CTX);
	snprintf(rel, sizeof(rel), "idir/.versions/%s/drivers", id);
	assert_string_equal(label(f, rel), MCTX);
	snprintf(rel, sizeof(rel), "idir/.versions/%s/drivers/nvidia.ko", id);
	assert_string_equal(label(f, rel), MCTX);
	snprintf(rel, sizeof(rel), "idir/.versions/%s/lib64", id);
	assert_int_equal(selinux_find_mislabelled(f->fd, rel, CTX, 1000, NULL, &census), 0);
	assert_int_equal(census.count, 0);
	/* The install dir's own entries are publish_label's, at the switch's run. */
	assert_string_equal(label(f, "idir"), "-");
	assert_int_equal(publish_find_mislabelled(d, &se, &census), 0);
	assert_int_equal(census.count, 2); /* idir, .versions */
	assert_int_equal(publish_label(d, &se, &e), 0);
	assert_string_equal(label(f, "idir"), CTX);
	assert_string_equal(label(f, "idir/.versions"), CTX);
	assert_int_equal(publish_find_mislabelled(d, &se, &census), 0);
	assert_int_equal(census.count, 0);
	/* idir, .versions, the version, drivers/ + its module, lib64/ + its library, manifest */
	assert_true(census.total >= 8);
	/* The modules relabelled as container files: counted, and put back. */
	snprintf(rel, sizeof(rel), "idir/.versions/%s/drivers/nvidia.ko", id);
	assert_int_equal(set_label(f, rel, CTX), 0);
	assert_int_equal(publish_find_mislabelled(d, &se, &census), 0);
	assert_int_equal(census.count, 1);
	assert_non_null(strstr(census.first, "drivers/nvidia.ko"));
	assert_int_equal(publish_label(d, &se, &e), 0);
	assert_string_equal(label(f, rel), MCTX);
	/* Without a container label, nothing is labelled. */
	se.context[0] = '\0';
	assert_int_equal(set_label(f, rel, CTX), 0);
	assert_int_equal(publish_label(d, &se, &e), 0);
	assert_string_equal(label(f, rel), CTX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parsers),		 scratch_unit_test(test_probe),
		scratch_unit_test(test_label_tree),	 scratch_unit_test(test_label_links),
		scratch_unit_test(test_staged_labelled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
