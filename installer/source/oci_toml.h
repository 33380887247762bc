/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of TOML that containerd's hosts.toml is written in, read strictly (oci_toml.c
 * says which part): internal to source/, for oci_hosts.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define TOML_KEY_PARTS_MAX 8

enum toml_type { TOML_STRING, TOML_BOOL, TOML_INT, TOML_ARRAY };

struct toml_value {
	enum toml_type type;
	char *s;		  /* TOML_STRING: the string; TOML_INT: its digits as written */
	bool b;			  /* TOML_BOOL */
	struct toml_value *items; /* TOML_ARRAY */
	size_t n;
};

/* A dotted key: "host" "https://mirror" "header" for [host."https://mirror".header]. */
struct toml_key {
	char *parts[TOML_KEY_PARTS_MAX];
	size_t n;
};

void toml_value_done(struct toml_value *v);
void toml_key_done(struct toml_key *k);

/*
 * What the reader calls, in the order of the text: TABLE for each [header] line, KEY_VALUE
 * for each KEY = VALUE line (the table being the last header, the root before any). LINE is
 * the line's number, for the callee's messages. Each returns 0, or -1 with e set to stop.
 */
struct toml_calls {
	int (*table)(void *userdata, const struct toml_key *name, unsigned line, struct err *e);
	int (*key_value)(void *userdata, const char *key, const struct toml_value *v, unsigned line,
			 struct err *e);
	void *userdata;
};

/*
 * Reads TEXT (LEN bytes, the file PATH, for messages) and calls CALLS. Returns 0, or -1
 * with e set: EXIT_USAGE "'PATH' line N: what" for text outside the subset or not TOML
 * (a table or key defined twice included), or the callee's error.
 */
_must_check_ int toml_read(const char *text, size_t len, const char *path,
			   const struct toml_calls *calls, struct err *e);
