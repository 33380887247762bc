// SPDX-License-Identifier: Apache-2.0
/*
 * agent/slots: the fleet's upgrade slots as Leases (see agent/slots.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/slots.h"
#include "agent/upgrade.h"
#include "util/jsonc.h"
#include "util/str.h"

bool slots_limit_is_percent(const char *spec)
{
	size_t n = strlen(spec);

	return n > 1 && spec[n - 1] == '%';
}

int slots_limit(const char *spec, unsigned total, unsigned *ret)
{
	bool pct = slots_limit_is_percent(spec);
	size_t n = strlen(spec) - pct;
	unsigned long v;
	char *end;

	*ret = 0;
	if (n == 0 || n > 6 || strspn(spec, "0123456789") != n)
		return -1;
	v = strtoul(spec, &end, 10);
	if (pct) {
		if (v > 100)
			return -1;
		v = (v * total + 99) / 100; /* rounded up, as maxUnavailable */
	}
	*ret = v == 0 ? 1 : v > SLOTS_MAX ? SLOTS_MAX : (unsigned)v;
	return 0;
}

void slots_microtime(uint64_t unix_s, char buf[32])
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
}

static const char *str_at(json_object *o, const char *a, const char *b)
{
	json_object *x = NULL, *y = NULL;

	if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y) ||
	    !json_object_is_type(y, json_type_string))
		return NULL;
	return json_object_get_string(y);
}

static int64_t int_at(json_object *o, const char *a, const char *b)
{
	json_object *x = NULL, *y = NULL;

	if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y))
		return 0;
	return json_object_get_int64(y);
}

static void slot_name(unsigned i, char buf[64])
{
	snprintf(buf, 64, SLOTS_PREFIX "-%u", i);
}

/* A Lease for slot I held by HOLDER (NULL: released), replacing version RV (NULL: new). */
static json_object *lease_new(const struct slots *s, unsigned i, const char *holder, const char *rv,
			      int64_t transitions, const char *acquired)
{
	json_object *l = json_object_new_object(), *meta = json_object_new_object(),
		    *spec = json_object_new_object();
	char name[64], now[32];

	if (!l || !meta || !spec) {
		json_object_put(l);
		json_object_put(meta);
		json_object_put(spec);
		return NULL;
	}
	slot_name(i, name);
	slots_microtime((uint64_t)time(NULL), now);
	json_object_object_add(l, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
	json_object_object_add(l, "kind", json_object_new_string("Lease"));
	json_object_object_add(meta, "name", json_object_new_string(name));
	json_object_object_add(meta, "namespace", json_object_new_string(s->ns));
	if (rv)
		json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
	json_object_object_add(l, "metadata", meta);
	if (holder) {
		json_object_object_add(spec, "holderIdentity", json_object_new_string(holder));
		json_object_object_add(spec, "leaseDurationSeconds",
				       json_object_new_int((int)s->duration_s));
		json_object_object_add(spec, "acquireTime",
				       json_object_new_string(acquired ? acquired : now));
		json_object_object_add(spec, "renewTime", json_object_new_string(now));
	}
	json_object_object_add(spec, "leaseTransitions", json_object_new_int64(transitions));
	json_object_object_add(l, "spec", spec);
	return l;
}

/*
 * Whether Node HOLDER still records an upgrade under way in slot I (upgrade_node_claims): 1
 * or 0 (a holder that is no node, or a node gone, claims nothing), -1 on error.
 */
static int holder_claims(struct slots *s, const char *holder, unsigned i, struct err *e)
{
	struct kube_request q = {.method = "GET"};
	struct kube_reply r;
	char path[320];
	int rc;

	if (!kube_name_ok(holder))
		return 0;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", holder);
	q.path = path;
	rc = kube_call(s->k, &q, &r, e);
	if (rc < 0 && r.status == 404) {
		err_clear(e);
		rc = 0;
	} else if (rc == 0) {
		rc = upgrade_node_claims(r.body, i);
	}
	kube_reply_done(&r);
	return rc;
}

/*
 * Slot I for this node: 1 when taken or renewed, 0 when another node holds it (or took it
 * first), -1 on error. PEEK: nothing written, 1 when it could be taken now.
 */
static int take_one(struct slots *s, unsigned i, uint64_t now, bool peek, struct err *e)
{
	_cleanup_(json_object_putp) json_object *cur = NULL, *want = NULL;
	const char *holder, *rv, *acquired;
	int64_t transitions, duration;
	bool ours, free_now;
	char name[64];
	int r;

	slot_name(i, name);
	r = kube_lease_get(s->k, s->ns, name, &cur, e);
	if (r < 0)
		return -1;
	if (r == 1 && peek)
		return 1;
	if (r == 1) {
		want = lease_new(s, i, s->holder, NULL, 0, NULL);
		if (!want)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "upgrade slots");
		r = kube_lease_put(s->k, s->ns, want, false, NULL, e);
		if (r == 0)
			s->renewed = now;
		return r < 0 ? -1 : r == 1 ? 0 : 1;
	}
	holder = str_at(cur, "spec", "holderIdentity");
	rv = str_at(cur, "metadata", "resourceVersion");
	acquired = str_at(cur, "spec", "acquireTime");
	transitions = int_at(cur, "spec", "leaseTransitions");
	duration = int_at(cur, "spec", "leaseDurationSeconds");
	if (!rv)
		return err_set(e, EXIT_UNEXPECTED, "upgrade slots: lease %s has no resourceVersion",
			       name);
	/* Expiry by our clock, from when we first saw this version of the lease. */
	if (strcmp(s->seen[i].rv, rv) != 0) {
		snprintf(s->seen[i].rv, sizeof(s->seen[i].rv), "%s", rv);
		s->seen[i].seen = now;
	}
	ours = holder && strcmp(holder, s->holder) == 0;
	free_now = !holder || !*holder ||
		   now >= s->seen[i].seen + (uint64_t)(duration > 0 ? duration : 0);
	if (!ours && !free_now)
		return 0;
	/* Lapsed, but its node is still cordoned for its upgrade (its agent down): held. */
	if (!ours && holder && *holder && (r = holder_claims(s, holder, i, e)) != 0)
		return r < 0 ? -1 : 0;
	if (peek)
		return 1;
	want = lease_new(s, i, s->holder, rv, transitions + !ours, ours ? acquired : NULL);
	if (!want)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "upgrade slots");
	r = kube_lease_put(s->k, s->ns, want, true, NULL, e);
	if (r == 0)
		s->renewed = now;
	return r < 0 ? -1 : r == 1 ? 0 : 1;
}

int slots_take(struct slots *s, unsigned limit, uint64_t now, struct err *e)
{
	if (limit > SLOTS_MAX)
		limit = SLOTS_MAX;
	/* The one held already first (a restarted agent knows it from the node's record). */
	if (s->held >= 0) {
		int r = take_one(s, (unsigned)s->held, now, false, e);

		if (r != 0)
			return r;
		s->held = -1;
	}
	for (unsigned i = 0; i < limit; i++) {
		int r = take_one(s, i, now, false, e);

		if (r < 0)
			return -1;
		if (r == 1) {
			s->held = (int)i;
			return 1;
		}
	}
	return 0;
}

int slots_free(struct slots *s, unsigned limit, uint64_t now, struct err *e)
{
	if (s->held >= 0)
		return 1;
	if (limit > SLOTS_MAX)
		limit = SLOTS_MAX;
	for (unsigned i = 0; i < limit; i++) {
		int r = take_one(s, i, now, true, e);

		if (r != 0)
			return r;
	}
	return 0;
}

int slots_renew(struct slots *s, uint64_t now, struct err *e)
{
	int r;

	if (s->held < 0)
		return 0;
	r = take_one(s, (unsigned)s->held, now, false, e);
	if (r == 0)
		s->held = -1;
	return r;
}

uint64_t slots_renew_at(const struct slots *s)
{
	return s->held < 0 ? 0 : s->renewed + s->duration_s / 3;
}

int slots_release(struct slots *s, unsigned limit, struct err *e)
{
	if (limit > SLOTS_MAX)
		limit = SLOTS_MAX;
	if (s->held >= 0 && (unsigned)s->held >= limit)
		limit = (unsigned)s->held + 1;
	for (unsigned i = 0; i < limit; i++) {
		_cleanup_(json_object_putp) json_object *cur = NULL, *want = NULL;
		const char *holder, *rv;
		char name[64];
		int r;

		slot_name(i, name);
		r = kube_lease_get(s->k, s->ns, name, &cur, e);
		if (r < 0)
			return -1;
		holder = r == 0 ? str_at(cur, "spec", "holderIdentity") : NULL;
		rv = r == 0 ? str_at(cur, "metadata", "resourceVersion") : NULL;
		if (!holder || strcmp(holder, s->holder) != 0 || !rv)
			continue;
		want = lease_new(s, i, NULL, rv, int_at(cur, "spec", "leaseTransitions"), NULL);
		if (!want)
			return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "upgrade slots");
		/* A conflict: another node changed it, so it is no longer ours. */
		if (kube_lease_put(s->k, s->ns, want, true, NULL, e) < 0)
			return -1;
	}
	s->held = -1;
	return 0;
}
