/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fleet-wide limit on nodes upgrading at once, kept by the API server: slot I is the
 * coordination.k8s.io/v1 Lease SLOTS_PREFIX-I in the agent's namespace, held by the node
 * whose name is its spec.holderIdentity. Taking a free slot is a create (409 AlreadyExists:
 * another node was first) or a replace carrying the resourceVersion read (409 Conflict:
 * another node changed it first); no consensus of our own. A holder renews its lease at
 * every look and whenever a third of its duration has passed (slots_renew_at), whatever
 * the agent is doing. A lease not renewed within its leaseDurationSeconds has lapsed. As
 * client-go's leader election does, that is judged by this agent's own clock from when it
 * first saw the lease's current version, not from the renewTime another node's clock wrote.
 * A lapsed lease is free unless its holder's Node still records an upgrade under way in
 * that slot (upgrade_record_claims): a node whose agent died while it was cordoned keeps
 * its slot until its agent comes back and finishes, or a person removes the record.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "kube/kube.h"

#define SLOTS_PREFIX "nvidia-driver-upgrade-slot"
#define SLOTS_MAX 256

struct slots {
	struct kube *k;
	const char *ns;	       /* the leases' namespace: the agent's pod's */
	const char *holder;    /* this node's name */
	unsigned duration_s;   /* leaseDurationSeconds */
	int held;	       /* the slot held, or -1 */
	uint64_t renewed;      /* when this node last wrote the lease it holds (monotonic s) */
	struct {	       /* what this agent saw of each slot, for expiry */
		char rv[32];   /* the lease's resourceVersion when first seen */
		uint64_t seen; /* when (a monotonic clock's seconds) */
	} seen[SLOTS_MAX];
};

/* Whether SPEC is a percentage (the DaemonSet's node count is needed for it). */
bool slots_limit_is_percent(const char *spec);

/*
 * Takes a slot among the first LIMIT: the one S->held names (renewed; the caller restores it
 * from the node's record after a restart), else the first free or expired one. NOW is a
 * monotonic clock's seconds. 1 when held (S->held set), 0 when every slot is taken, -1 on an
 * API error.
 */
_must_check_ int slots_take(struct slots *s, unsigned limit, uint64_t now, struct err *e);

/*
 * Whether slots_take could take a slot among the first LIMIT now (one held already counts),
 * nothing written: 1 or 0, -1 on an API error. What the agent asks before it reads more
 * (--upgrade-max-unavailable's lists) for a slot that is not there.
 */
_must_check_ int slots_free(struct slots *s, unsigned limit, uint64_t now, struct err *e);

/* Renews the slot held, at NOW. 1 when still held, 0 when it was lost (S->held -1), -1 on
 * error. */
_must_check_ int slots_renew(struct slots *s, uint64_t now, struct err *e);

/*
 * When the slot held is due for renewal: a third of its duration after it was last written,
 * so that two renewals may fail before its lease lapses. 0 when no slot is held.
 */
uint64_t slots_renew_at(const struct slots *s);

/* Gives every slot among the first LIMIT (and S->held) that this node holds back
 * (holderIdentity cleared). 0 or -1. */
_must_check_ int slots_release(struct slots *s, unsigned limit, struct err *e);

/* The lease's renewTime form (metav1.MicroTime): "2026-12-02T15:04:05.000000Z". */
void slots_microtime(uint64_t unix_s, char buf[32]);
