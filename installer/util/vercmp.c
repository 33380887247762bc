// SPDX-License-Identifier: Apache-2.0
#include "util/vercmp.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Policy 5.6.12: in a non-digit run '~' sorts first, then the end, letters, the rest. */
static int dpkg_weight(char c)
{
	if (c == '~')
		return -1;
	if (!c || isdigit((unsigned char)c))
		return 0;
	if (isalpha((unsigned char)c))
		return (unsigned char)c;
	return (unsigned char)c + 256;
}

/* One part (upstream or revision), of lengths NA and NB, by the policy's alternation. */
static int dpkg_part(const char *a, size_t na, const char *b, size_t nb)
{
	size_t i = 0, j = 0;

	while (i < na || j < nb) {
		while ((i < na && !isdigit((unsigned char)a[i])) ||
		       (j < nb && !isdigit((unsigned char)b[j]))) {
			int wa = dpkg_weight(i < na ? a[i] : 0),
			    wb = dpkg_weight(j < nb ? b[j] : 0);

			if (wa != wb)
				return wa - wb;
			i += i < na;
			j += j < nb;
		}
		while (i < na && a[i] == '0')
			i++;
		while (j < nb && b[j] == '0')
			j++;
		size_t da = i, db = j;
		while (da < na && isdigit((unsigned char)a[da]))
			da++;
		while (db < nb && isdigit((unsigned char)b[db]))
			db++;
		/* Leading zeros gone, the longer digit run is the larger number. */
		if (da - i != db - j)
			return da - i > db - j ? 1 : -1;
		int c = strncmp(a + i, b + j, da - i);
		if (c)
			return c;
		i = da;
		j = db;
	}
	return 0;
}

struct dpkg_version {
	unsigned long epoch;
	const char *up;
	size_t n_up;
	const char *rev; /* "" when none */
	size_t n_rev;
};

static void dpkg_split(const char *s, struct dpkg_version *v)
{
	const char *colon = strchr(s, ':'), *dash;
	char *end;

	v->epoch = 0;
	if (colon && colon > s) {
		v->epoch = strtoul(s, &end, 10);
		if (end == colon)
			s = colon + 1;
		else
			v->epoch = 0;
	}
	dash = strrchr(s, '-');
	v->up = s;
	v->n_up = dash ? (size_t)(dash - s) : strlen(s);
	v->rev = dash ? dash + 1 : "";
	v->n_rev = strlen(v->rev);
}

int vercmp_dpkg(const char *a, const char *b)
{
	struct dpkg_version va, vb;
	int c;

	dpkg_split(a, &va);
	dpkg_split(b, &vb);
	if (va.epoch != vb.epoch)
		return va.epoch > vb.epoch ? 1 : -1;
	c = dpkg_part(va.up, va.n_up, vb.up, vb.n_up);
	return c ? c : dpkg_part(va.rev, va.n_rev, vb.rev, vb.n_rev);
}

static bool rpm_sep(char c)
{
	return c && !isalnum((unsigned char)c) && c != '~' && c != '^';
}

/* A segment of digits or of letters starting at S: its length. */
static size_t rpm_seg(const char *s, bool digits)
{
	size_t n = 0;

	while (s[n] && (digits ? isdigit((unsigned char)s[n]) : isalpha((unsigned char)s[n])))
		n++;
	return n;
}

int vercmp_rpm(const char *a, const char *b)
{
	while (*a || *b) {
		while (rpm_sep(*a))
			a++;
		while (rpm_sep(*b))
			b++;
		if (*a == '~' || *b == '~') {
			if (*a != '~')
				return 1;
			if (*b != '~')
				return -1;
			a++, b++;
			continue;
		}
		if (*a == '^' || *b == '^') {
			if (!*a)
				return -1;
			if (!*b)
				return 1;
			if (*a != '^')
				return 1;
			if (*b != '^')
				return -1;
			a++, b++;
			continue;
		}
		if (!*a || !*b)
			break;
		bool digits = isdigit((unsigned char)*a);
		size_t na = rpm_seg(a, digits), nb = rpm_seg(b, digits);
		/* b's segment is of the other kind: a number is newer than letters. */
		if (nb == 0)
			return digits ? 1 : -1;
		const char *sa = a, *sb = b;
		a += na;
		b += nb;
		if (digits) {
			while (na > 1 && *sa == '0')
				sa++, na--;
			while (nb > 1 && *sb == '0')
				sb++, nb--;
			if (na != nb)
				return na > nb ? 1 : -1;
		}
		int c = strncmp(sa, sb, na < nb ? na : nb);
		if (c)
			return c < 0 ? -1 : 1;
		if (na != nb)
			return na > nb ? 1 : -1;
	}
	if (!*a && !*b)
		return 0;
	return *a ? 1 : -1;
}
