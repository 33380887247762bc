// SPDX-License-Identifier: Apache-2.0
/*
 * The kernel the host boots next, read from its files without running anything on it:
 * the installed kernels (/lib/modules/R with an image), and the boot loader's default
 * entry: GRUB's grub.cfg and environment block, Boot Loader Specification entries (GRUB's
 * blscfg on RHEL and Fedora, systemd-boot), systemd-boot's loader.conf.
 */
#include "host/boot.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/fs.h"
#include "util/str.h"
#include "util/vercmp.h"

#define BOOT_FILE_MAX (4u << 20)

/*
 * The environment block (GRUB manual, "Environment block"): "# GRUB Environment Block",
 * then NAME=VALUE lines, padded with '#' to 1024 bytes.
 */
int boot_grubenv_get(const char *text, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		size_t len = strcspn(l, "\n");

		if (len > n + 1 && strncmp(l, name, n) == 0 && l[n] == '=') {
			str_fmt_cut(out, size, "%.*s", (int)(len - n - 1), l + n + 1);
			return 1;
		}
	}
	return 0;
}

/* The next word of a grub.cfg line at *P, quotes removed, into OUT; *P moves past it. */
static void word(const char **p, char *out, size_t size)
{
	const char *s = *p + strspn(*p, " \t");
	size_t n = 0;
	char q = 0;

	for (; *s && *s != '\n' && (q || (*s != ' ' && *s != '\t')); s++) {
		if (!q && (*s == '\'' || *s == '"'))
			q = *s;
		else if (q && *s == q)
			q = 0;
		else if (n + 1 < size)
			out[n++] = *s;
	}
	out[n] = '\0';
	*p = s;
}

/* A `menuentry` or `submenu` line: its title and id (grub-mkconfig's 10_linux). */
static void entry_line(const char *l, struct boot_entry *e)
{
	char w[256];

	word(&l, w, sizeof(w)); /* menuentry */
	word(&l, e->title, sizeof(e->title));
	while (*l && *l != '\n') {
		word(&l, w, sizeof(w));
		if (strcmp(w, "$menuentry_id_option") == 0 || strcmp(w, "--id") == 0)
			word(&l, e->id, sizeof(e->id));
		else if (strncmp(w, "--id=", 5) == 0)
			str_fmt_cut(e->id, sizeof(e->id), "%s", w + 5);
	}
}

/* The release of a kernel image path: "/boot/vmlinuz-6.1.0-58-amd64" -> "6.1.0-58-amd64". */
static void release_of_image(const char *path, char *out, size_t size)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (strncmp(b, "vmlinuz-", 8) == 0 || strncmp(b, "vmlinux-", 8) == 0)
		str_fmt_cut(out, size, "%s", b + 8);
}

void boot_parse_grub_cfg(const char *text, struct boot_menu *m)
{
	int stack[16], depth = 0; /* open blocks: an entry's index, or -1 for another */

	memset(m, 0, sizeof(*m));
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		size_t len = strcspn(l, "\n"), t;
		const char *s = l + strspn(l, " \t");
		int top = depth ? stack[depth - 1] : -1, opened = -1;
		char w[256];

		while (len && isspace((unsigned char)l[len - 1]))
			len--;
		t = (size_t)(s - l) < len ? len - (size_t)(s - l) : 0;
		if (t == 1 && *s == '}') {
			depth -= depth > 0;
			continue;
		}
		if ((strncmp(s, "menuentry ", 10) == 0 || strncmp(s, "submenu ", 8) == 0) &&
		    m->n < BOOT_MAX_ENTRIES) {
			struct boot_entry *e = &m->e[m->n];

			entry_line(s, e);
			e->is_submenu = *s == 's';
			e->parent = top;
			opened = (int)m->n++;
		} else if (top >= 0 && strncmp(s, "linux", 5) == 0 &&
			   (isspace((unsigned char)s[5]) || strncmp(s + 5, "16", 2) == 0 ||
			    strncmp(s + 5, "efi", 3) == 0)) {
			const char *p = s;

			word(&p, w, sizeof(w)); /* linux, linux16, linuxefi */
			word(&p, w, sizeof(w));
			release_of_image(w, m->e[top].release, sizeof(m->e[top].release));
		} else if (strncmp(s, "set default=", 12) == 0) {
			const char *p = s + 12;

			word(&p, w, sizeof(w));
			if (!strstr(w, "next_entry"))
				str_fmt_cut(m->default_entry, sizeof(m->default_entry), "%s", w);
		} else if (strncmp(s, "blscfg", 6) == 0 &&
			   (!s[6] || isspace((unsigned char)s[6]))) {
			m->blscfg = true;
		}
		if (t && s[t - 1] == '{' && depth < (int)ARRAY_SIZE(stack))
			stack[depth++] = opened;
	}
}

/*
 * A BLS type 1 entry (uapi-group.org/specifications/specs/boot_loader_specification,
 * "Type #1 Boot Loader Entry Keys"): "KEY VALUE" lines; the kernel is its `version`,
 * else its `linux` image's name.
 */
int boot_parse_bls(const char *name, const char *text, struct boot_entry *e)
{
	size_t n = strlen(name);
	char image[256] = "";

	memset(e, 0, sizeof(*e));
	e->parent = -1;
	str_fmt_cut(e->id, sizeof(e->id), "%.*s", (int)(n > 5 ? n - 5 : n), name);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *s = l + strspn(l, " \t"), *v;
		size_t k = strcspn(s, " \t\n");
		size_t vl;

		v = s + k + strspn(s + k, " \t");
		vl = strcspn(v, "\n");
		while (vl && isspace((unsigned char)v[vl - 1]))
			vl--;
		if (k == 5 && strncmp(s, "title", 5) == 0)
			str_fmt_cut(e->title, sizeof(e->title), "%.*s", (int)vl, v);
		else if (k == 7 && strncmp(s, "version", 7) == 0)
			str_fmt_cut(e->release, sizeof(e->release), "%.*s", (int)vl, v);
		else if (k == 8 && strncmp(s, "sort-key", 8) == 0)
			str_fmt_cut(e->sort_key, sizeof(e->sort_key), "%.*s", (int)vl, v);
		else if (k == 5 && strncmp(s, "linux", 5) == 0)
			str_fmt_cut(image, sizeof(image), "%.*s", (int)vl, v);
	}
	if (!e->release[0])
		release_of_image(image, e->release, sizeof(e->release));
	return e->release[0] ? 0 : -1;
}

static int (*sort_cmp)(const char *, const char *);

/* The spec's "Sorting": sort-key ascending, those without it last; then version, newest first. */
static int bls_order(const void *x, const void *y)
{
	const struct boot_entry *a = x, *b = y;
	int c;

	if (!a->sort_key[0] != !b->sort_key[0])
		return a->sort_key[0] ? -1 : 1;
	if ((c = strcmp(a->sort_key, b->sort_key)) != 0)
		return c;
	if ((c = sort_cmp(b->release, a->release)) != 0)
		return c;
	return sort_cmp(b->id, a->id);
}

void boot_sort_bls(struct boot_entry *e, size_t n, int (*cmp)(const char *, const char *))
{
	sort_cmp = cmp;
	qsort(e, n, sizeof(*e), bls_order);
}

int boot_menu_find(const struct boot_menu *m, const char *def)
{
	int parent = -1, found = -1;

	for (const char *p = def; p;) {
		size_t len = strcspn(p, ">");
		char step[256], *end;
		long idx;
		int nth = 0;

		str_fmt_cut(step, sizeof(step), "%.*s", (int)len, p);
		idx = strtol(step, &end, 10);
		found = -1;
		for (size_t i = 0; i < m->n && found < 0; i++) {
			if (m->e[i].parent != parent)
				continue;
			if ((*step && !*end && idx == nth) || strcmp(m->e[i].title, step) == 0 ||
			    (m->e[i].id[0] && strcmp(m->e[i].id, step) == 0))
				found = (int)i;
			nth++;
		}
		if (found < 0)
			return -1;
		parent = found;
		p = p[len] ? p + len + 1 : NULL;
	}
	return found >= 0 && !m->e[found].is_submenu ? found : -1;
}

/* ---- the host's files ------------------------------------------------------------ */

/* rpm's order on rpm distributions (RHEL and its rebuilds, Fedora, SUSE), else dpkg's. */
static int (*order_of(const struct host *h))(const char *, const char *)
{
	static const char *const rpm_ids[] = {"rhel", "fedora", "centos",     "suse",	"opensuse",
					      "sles", "amzn",	"azurelinux", "mariner"};

	for (size_t i = 0; i < ARRAY_SIZE(rpm_ids); i++) {
		if (host_os_is(h, rpm_ids[i]))
			return vercmp_rpm;
	}
	return vercmp_dpkg;
}

static bool exists_in_root(int root_fd, const char *path)
{
	struct err e;
	int fd = fs_open_regular_in_root(root_fd, path, 0, &e);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* An installed kernel: /lib/modules/R and its image, /boot/vmlinuz-R or the tree's own. */
static bool has_image(int root_fd, const char *r)
{
	static const char *const boot[] = {"vmlinuz", "vmlinux", "Image"};
	char path[320];

	for (size_t i = 0; i < ARRAY_SIZE(boot); i++) {
		if (str_fmt(path, sizeof(path), "/boot/%s-%s", boot[i], r) == 0 &&
		    exists_in_root(root_fd, path))
			return true;
	}
	return str_fmt(path, sizeof(path), "/lib/modules/%s/vmlinuz", r) == 0 &&
	       exists_in_root(root_fd, path);
}

static void find_newest(int root_fd, int (*cmp)(const char *, const char *), struct host_boot *b)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	int fd = fs_dir_in_root(root_fd, "/lib/modules", false, &e);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) > HOST_RELEASE_MAX ||
		    !has_image(root_fd, de->d_name))
			continue;
		b->n_installed++;
		if (!b->newest[0] || cmp(de->d_name, b->newest) > 0)
			str_fmt_cut(b->newest, sizeof(b->newest), "%s", de->d_name);
	}
}

/* BLS entries of DIR ("/boot/loader/entries"), in menu order, into M. */
static void read_bls(int root_fd, const char *dir, int (*cmp)(const char *, const char *),
		     struct boot_menu *m)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	int fd = fs_dir_in_root(root_fd, dir, false, &e);

	m->n = 0;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && m->n < BOOT_MAX_ENTRIES) {
		size_t n = strlen(de->d_name);
		_cleanup_free_ char *text = NULL;
		char path[512];

		if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".conf") != 0 ||
		    str_fmt(path, sizeof(path), "%s/%s", dir, de->d_name) < 0 ||
		    !(text = fs_read_in_root(root_fd, path, BOOT_FILE_MAX, NULL)))
			continue;
		if (boot_parse_bls(de->d_name, text, &m->e[m->n]) == 0)
			m->n++;
	}
	boot_sort_bls(m->e, m->n, cmp);
}

/* The default NAME picks among BLS entries: an index, an id or a title. */
static int bls_find(const struct boot_menu *m, const char *name)
{
	char *end;
	long idx = strtol(name, &end, 10);

	if (*name && !*end)
		return idx >= 0 && (size_t)idx < m->n ? (int)idx : -1;
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->e[i].id, name) == 0 || strcmp(m->e[i].title, name) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * GRUB: grub.cfg's `set default=` (grub-mkconfig's 00_header: "${next_entry}" first, for
 * one boot, then GRUB_DEFAULT: a number, an entry, or "${saved_entry}" from grubenv, as
 * grub-set-default, grub-reboot and RHEL's grubby --set-default write it). With blscfg
 * the entries are /boot/loader/entries' (RHEL 9: "Configuring kernel command-line
 * parameters", "Changing the default boot entry with grubby"). 1 when it named a kernel.
 */
static int grub_next(int root_fd, const char *dir, int (*cmp)(const char *, const char *),
		     struct boot_menu *m, struct host_boot *b)
{
	char path[64], def[256] = "", src[96];
	_cleanup_free_ char *cfg = NULL, *env = NULL;
	int i;

	snprintf(path, sizeof(path), "%s/grub.cfg", dir);
	if (!(cfg = fs_read_in_root(root_fd, path, BOOT_FILE_MAX, NULL)))
		return 0;
	boot_parse_grub_cfg(cfg, m);
	snprintf(path, sizeof(path), "%s/grubenv", dir);
	env = fs_read_in_root(root_fd, path, 1u << 16, NULL);
	if (env && boot_grubenv_get(env, "next_entry", def, sizeof(def)))
		snprintf(src, sizeof(src), "GRUB's next_entry (one boot) in %s", path);
	else if (strstr(m->default_entry, "saved_entry") && env &&
		 boot_grubenv_get(env, "saved_entry", def, sizeof(def)))
		snprintf(src, sizeof(src), "GRUB's saved_entry in %s", path);
	else {
		snprintf(def, sizeof(def), "%s",
			 m->default_entry[0] && !strstr(m->default_entry, "saved_entry")
				 ? m->default_entry
				 : "0");
		snprintf(src, sizeof(src), "GRUB's default in %s/grub.cfg", dir);
	}
	if (m->blscfg)
		read_bls(root_fd, "/boot/loader/entries", cmp, m);
	i = m->blscfg ? bls_find(m, def) : boot_menu_find(m, def);
	if (i < 0 || !m->e[i].release[0]) {
		str_fmt_cut(b->why, sizeof(b->why), "%s names '%s', which is no kernel entry%s",
			    src, def, m->blscfg ? " of /boot/loader/entries" : "");
		return 0;
	}
	snprintf(b->next, sizeof(b->next), "%s", m->e[i].release);
	str_fmt_cut(b->why, sizeof(b->why), "%s: '%s', entry '%s'", src, def,
		    m->e[i].title[0] ? m->e[i].title : m->e[i].id);
	return 1;
}

/*
 * systemd-boot: loader.conf's `default`, a glob over entry ids (loader.conf(5)); without
 * one, the first entry in menu order. "@saved" is the EFI variable: not read here.
 */
static int sdboot_next(int root_fd, const char *esp, int (*cmp)(const char *, const char *),
		       struct boot_menu *m, struct host_boot *b)
{
	char path[64], pat[256] = "";
	_cleanup_free_ char *conf = NULL;

	snprintf(path, sizeof(path), "%s/loader/loader.conf", esp);
	if (!(conf = fs_read_in_root(root_fd, path, 1u << 16, NULL)))
		return 0;
	for (const char *l = conf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, "default", 7) == 0 && (l[7] == ' ' || l[7] == '\t')) {
			const char *v = l + 7 + strspn(l + 7, " \t");

			str_fmt_cut(pat, sizeof(pat), "%.*s", (int)strcspn(v, " \t\n"), v);
		}
	}
	snprintf(path, sizeof(path), "%s/loader/entries", esp);
	read_bls(root_fd, path, cmp, m);
	for (size_t i = 0; i < m->n && pat[0] != '@'; i++) {
		char file[200];

		snprintf(file, sizeof(file), "%s.conf", m->e[i].id);
		if (pat[0] && fnmatch(pat, m->e[i].id, 0) != 0 && fnmatch(pat, file, 0) != 0)
			continue;
		snprintf(b->next, sizeof(b->next), "%s", m->e[i].release);
		str_fmt_cut(b->why, sizeof(b->why),
			    "systemd-boot's %s in %s/loader/loader.conf: entry '%s'",
			    pat[0] ? "default" : "first entry (no default)", esp, m->e[i].id);
		return 1;
	}
	str_fmt_cut(b->why, sizeof(b->why),
		    "systemd-boot's default '%s' in %s/loader/loader.conf %s", pat, esp,
		    pat[0] == '@' ? "is an EFI variable, not read here" : "matches no entry");
	return 0;
}

int host_boot_next(int root_fd, const struct host *h, struct host_boot *ret, struct err *e)
{
	static const char *const grub[] = {"/boot/grub", "/boot/grub2"};
	static const char *const esp[] = {"/boot/efi", "/efi", "/boot"};
	int (*cmp)(const char *, const char *) = order_of(h);
	_cleanup_free_ struct boot_menu *m = calloc(1, sizeof(*m));
	int found = 0;

	if (!m)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "boot menu");
	memset(ret, 0, sizeof(*ret));
	find_newest(root_fd, cmp, ret);
	for (size_t i = 0; i < ARRAY_SIZE(grub) && !found && !ret->why[0]; i++)
		found = grub_next(root_fd, grub[i], cmp, m, ret);
	for (size_t i = 0; i < ARRAY_SIZE(esp) && !found && !ret->why[0]; i++)
		found = sdboot_next(root_fd, esp[i], cmp, m, ret);
	ret->newest_after_next =
		found && ret->newest[0] && ret->next[0] && cmp(ret->newest, ret->next) > 0;
	if (!found && ret->newest[0]) {
		char why[sizeof(ret->why)];

		snprintf(why, sizeof(why), "%s", ret->why);
		snprintf(ret->next, sizeof(ret->next), "%s", ret->newest);
		str_fmt_cut(ret->why, sizeof(ret->why),
			    "the newest of %zu installed kernel(s), in %s order (%s)",
			    ret->n_installed, cmp == vercmp_rpm ? "rpm's" : "dpkg's",
			    why[0] ? why
				   : "no boot loader default read: no grub.cfg, no loader.conf");
	}
	return 0;
}
