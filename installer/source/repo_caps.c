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

static const char *const cap_names[] = {"compute", "utility", "video", "graphics"};

static int cap_bit(const char *word, size_t len, unsigned *ret)
{
	for (unsigned i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++) {
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

int repo_caps_parse(const char *text, unsigned *ret)
{
	unsigned caps = 0, bit;

	for (const char *p = text ? text : ""; *p;) {
		size_t len;

		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		len = strcspn(p, ", \t");
		if (!len)
			break;
		if (cap_bit(p, len, &bit) < 0)
			return -1;
		caps |= bit;
		p += len;
	}
	if (!caps)
		return -1;
	*ret = caps | REPO_CAP_DEFAULT;
	return 0;
}

const char *repo_caps_text(unsigned caps, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++) {
		if ((caps & (1u << i)) && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "",
					      cap_names[i]);
	}
	return buf;
}

/*
 * "capabilities": an array of capability words, optional (docs/repository-format.md);
 * absent is compute and utility. A word this installer does not know is refused: a
 * package must not be taken for a node that asks what the index cannot say it has.
 */
int repo_caps_parse_package(json_object *o, const char *where, struct repo_package *p,
			    struct err *e)
{
	json_object *v;
	unsigned bits;

	p->capabilities = REPO_CAP_DEFAULT;
	if (!json_object_object_get_ex(o, "capabilities", &v))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return err_set(e, EXIT_VERIFY, "%s: \"capabilities\" must be an array of strings",
			       where);
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *w = json_object_array_get_idx(v, i);
		const char *s = json_object_get_string(w);

		if (!json_object_is_type(w, json_type_string) || strcmp(s, "all") == 0 ||
		    strpbrk(s, ", \t") || repo_caps_parse(s, &bits) < 0)
			return err_set(
				e, EXIT_VERIFY,
				"%s: \"capabilities\" must hold only compute, utility, video and graphics",
				where);
		p->capabilities |= bits;
	}
	return 0;
}
