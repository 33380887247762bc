// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: an API server's answer read for the fields kept (kube_keep_parse), as the
 * node agent reads its node's pod list: values kept whole, objects and arrays of objects
 * kept in part, the rest stepped over as text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct kube_keep inner[] = {{"name"}, {"resources"}, {NULL}};
static const struct kube_keep item[] = {
	{"metadata", (const struct kube_keep[]){{"name"}, {"annotations"}, {NULL}}},
	{"spec", (const struct kube_keep[]){{"containers", inner, true}, {NULL}}},
	{NULL}};
static const struct kube_keep list[] = {
	{"kind"},
	{"metadata", (const struct kube_keep[]){{"continue"}, {NULL}}},
	{"items", item, true},
	{NULL}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_object *o;
	size_t kept = 0;

	/* Not NUL-terminated: the parser must stop at SIZE. */
	o = kube_keep_parse((const char *)data, size, list, &kept);
	if (o && kept > size)
		abort();
	json_object_put(o);
	return 0;
}
