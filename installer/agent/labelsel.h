/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A label selector as the API server takes one in a list's labelSelector and as NVIDIA's
 * upgrade policy takes its podSelector (k8s-operator-libs api/upgrade/v1alpha1/
 * upgrade_spec.go, lines 53-57 and 95-99): k8s.io/apimachinery pkg/labels/selector.go, Parse.
 * Requirements joined by commas, all of which must hold:
 *
 *   key  !key  key=v  key==v  key!=v  key in (v1,v2)  key notin (v1,v2)  key>N  key<N
 *
 * with blanks allowed between tokens; a key a qualified name and a value a label value
 * (pkg/util/validation, IsQualifiedName and IsValidLabelValue); "in" and "notin" take a
 * non-empty set; > and < an integer (a label whose value is not one never matches).
 * key!=v and notin also match a pod without the key. The agent matches it itself against
 * the pods it lists anyway, so that the API server is asked no more than before.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "agent/agent.h"

enum labelsel_op {
	LABELSEL_EXISTS,
	LABELSEL_NOT_EXISTS,
	LABELSEL_IN,	 /* = and == too: a set of one */
	LABELSEL_NOT_IN, /* != too */
	LABELSEL_GT,
	LABELSEL_LT,
};

struct labelsel_req {
	char *key;
	enum labelsel_op op;
	size_t n_values;
	char **values;
};

struct labelsel {
	size_t n;
	struct labelsel_req *reqs; /* none: every pod matches */
};

/*
 * Parses S into *RET (freed with labelsel_free). 0, or -1 with WHY (WHY_SIZE bytes) saying
 * what is wrong and where, *RET then empty.
 */
int labelsel_parse(const char *s, struct labelsel *ret, char *why, size_t why_size);
void labelsel_free(struct labelsel *sel);

/* Whether LABELS (a JSON object of strings, or NULL for none) match SEL. */
bool labelsel_matches(const struct labelsel *sel, json_object *labels);
