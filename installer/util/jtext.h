/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON as text, by RFC 8259's grammar: one value stepped over, the members of an object (or
 * the elements of an array) walked in the order of the text, nothing decoded and nothing
 * allocated. For readers that keep a little of a large answer (kube/keep.c) or must see what
 * a tree of json-c objects loses, duplicate keys and their order (expose/mig.c).
 *
 * The grammar is the RFC's, which Go's encoding/json scanner (src/encoding/json/scanner.go)
 * holds to: strings with the RFC's escapes only and no control character, numbers without a
 * leading zero, '+', a bare '.' or an empty exponent, the literals true, false and null; no
 * comment, single quote, NaN or trailing comma, all of which json-c takes. Nesting is crossed
 * in a loop over a stack of the brackets open, bounded by the caller, never by recursion.
 * Every pointer pair is a text and its end: nothing is read at or past END, and a NUL byte is
 * not JSON.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"

/* The most brackets jtext_value holds open at once, whatever its caller allows. */
#define JTEXT_DEPTH_MAX 4096

/* A stretch of the text, P up to END. */
struct jtext_span {
	const char *p, *end;
};

/* Past the whitespace at P (space, tab, CR, LF): P itself when there is none. */
const char *jtext_ws(const char *p, const char *end);

/* Past the string at P (its opening quote): a pointer after its closing quote, or NULL. */
_must_check_ const char *jtext_string(const char *p, const char *end);

/*
 * Past the one value at P (whitespace before it is stepped over, none after it): a pointer
 * just after the value, or NULL where the text is not one JSON value or opens more than
 * DEPTH_MAX brackets at once (0: no object or array at all; at most JTEXT_DEPTH_MAX).
 */
_must_check_ const char *jtext_value(const char *p, const char *end, size_t depth_max);

/* A walk over the members of one object, or the elements of one array. */
struct jtext_walk {
	const char *p; /* between jtext_walk_next calls: the caller moves it past each value */
	const char *end;
	char close; /* '}' or ']' */
	bool is_first;
};

/* Starts a walk of the object or array at P (whitespace before it stepped over): 0, or -1
 * where neither is there. */
_must_check_ int jtext_walk_start(struct jtext_walk *w, const char *p, const char *end);

/*
 * The next member: 1 with W->p at its value (whitespace stepped over) and, in an object,
 * *RET_KEY its key as a JSON string, quotes and escapes as written (RET_KEY may be NULL);
 * the caller moves W->p past the value before the next call. 0 at the closing bracket, W->p
 * past it. -1 where the text is not JSON there.
 */
_must_check_ int jtext_walk_next(struct jtext_walk *w, struct jtext_span *ret_key);

/* One member as the text has it: its key (a JSON string, quotes included; both NULL in an
 * array) and its value. */
struct jtext_member {
	struct jtext_span key, value;
};

/*
 * jtext_walk_next, then past the value with jtext_value(DEPTH_MAX): 1 with *RET filled, 0 at
 * the closing bracket, -1 where the text is not JSON there.
 */
_must_check_ int jtext_walk_member(struct jtext_walk *w, size_t depth_max,
				   struct jtext_member *ret);
