// SPDX-License-Identifier: Apache-2.0
/*
 * NVIDIA's driver capabilities as words (compute, utility, video, graphics, all: the
 * NVIDIA_DRIVER_CAPABILITIES of NVIDIA's container stack) and as REPO_CAP_* bits, for the
 * index's packages[].capabilities and --driver-capabilities (docs/design.md, "Video and
 * graphics").
 */
#include <stdio.h>
#include <string.h>

#include "source/repo_caps.h"
#include "source/repo_names.h"

static const char *const cap_names[] = {"compute", "utility", "video", "graphics"};

static int cap_bit(const char *word, size_t len, unsigned *ret)
{
	for (unsigned i = 0; i < ARRAY_SIZE(cap_names); i++) {
		if (strlen(cap_names[i]) == len && strncmp(word, cap_names[i], len) == 0) {
			*ret = 1u << i;
			return 0;
		}
	}
	if (len == 3 && strncmp(word, "all", 3) == 0) {
		*ret = REPO_CAP_ALL;
		return 0;
	}
	return -1;
}

/*
 * Items split at commas only and trimmed of blanks, an empty item refused: as
 * build-driver-package's media.parse_capabilities and the toolkit split theirs
 * (nvidia-container-toolkit internal/config/image/capabilities.go: strings.Split on ",").
 */
int repo_caps_parse(const char *text, unsigned *ret)
{
	unsigned caps = 0, bit;
	const char *p = text;

	if (!p)
		return -1;
	for (;;) {
		size_t len = strcspn(p, ",");
		const char *w = p, *end = p + len;

		while (w < end && (*w == ' ' || *w == '\t'))
			w++;
		while (end > w && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end == w || cap_bit(w, (size_t)(end - w), &bit) < 0)
			return -1;
		caps |= bit;
		if (!p[len])
			break;
		p += len + 1;
	}
	*ret = caps | REPO_CAP_DEFAULT;
	return 0;
}

const char *repo_caps_text(unsigned caps, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < ARRAY_SIZE(cap_names); i++) {
		if ((caps & (1u << i)) && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "",
					      cap_names[i]);
	}
	return buf;
}

/*
 * "capabilities": an array of capability words, optional (docs/repository-format.md);
 * absent is compute and utility. A word this installer does not know is skipped and grants
 * nothing (rules 1 and 3 of "How the format evolves"): a package is never taken for a
 * capability it is not said to serve, and a newer build-driver-package's word does not
 * strand every node of an older installer.
 */
int repo_caps_parse_package(json_object *o, const char *where, struct repo_package *p,
			    struct err *e)
{
	static const struct repo_name_set field = {"capabilities", cap_names,
						   ARRAY_SIZE(cap_names)};
	unsigned bits = 0;

	if (repo_names_bits(o, &field, where, &bits, e) < 0)
		return -1;
	p->capabilities = REPO_CAP_DEFAULT | bits;
	return 0;
}
