/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an install run says on its own Node (docs/design.md, "A kernel nobody built for"),
 * when it runs in a pod that knows its node's name (--node-name, NVIDIA_NODE_NAME) and has
 * its service account: the image it runs (annotation NODEASK_IMAGE, each run), the package
 * it waits for (NODEASK_WANTS, while it waits; removed once a run installed), and the
 * Events DriverPackageWanted and DriverPackageArrived. The supply pass reads them
 * (scripts/supply). With --node-condition (NVIDIA_NODE_CONDITION, default yes), also the
 * Node's condition KUBE_CONDITION_TYPE while the run keeps the node from serving: False
 * with reason Installing, WaitingForPackage or InstallFailed (docs/configuration.md,
 * --node-condition); the node agent writes it from then on. Nothing here stops a run: a call
 * that fails is one warning line and, in a wait, is made again at the next check.
 */
#pragma once

#include <stdbool.h>

#include "cmd/config.h"
#include "host/host.h"
#include "stage/stage.h"
#include "util/cleanup.h"

#define NODEASK_IMAGE "nvidia.com/gpu.driver-installer.node-image"
#define NODEASK_WANTS "nvidia.com/gpu.driver-installer.wants"

struct nodeask;

/*
 * A client for this node's Node, or NULL where the run cannot publish (no node name, no
 * service account: a run by hand); then WHY (SIZE bytes) says why, for the one line a
 * wait logs.
 */
struct nodeask *nodeask_new(const struct config *c, char *why, size_t size);
void nodeask_free(struct nodeask *a);
DEFINE_POINTER_CLEANUP(struct nodeask, nodeask_free)

/* The annotation NODEASK_IMAGE with what H is (os, os_build, kernel, arch). 0 or -1 (logged). */
int nodeask_image(struct nodeask *a, const struct host *h);

/*
 * While the run waits for W, at each check: the annotation NODEASK_WANTS, and the Event
 * DriverPackageWanted once per wait (and again when what it waits for changes), and the
 * image when nodeask_image's call failed. Only what is not on the Node yet is sent; 0 when
 * all of it is, -1 when a call failed (logged once per cause).
 */
int nodeask_wants(struct nodeask *a, const struct waiting *w);

/*
 * While the run waits for W, at each check: the condition False, reason WaitingForPackage,
 * written every time, so that its lastHeartbeatTime says the wait goes on. 0, or -1 when
 * the call failed (logged once per cause).
 */
int nodeask_waiting(struct nodeask *a, const struct waiting *w);

/*
 * The run will load or switch a driver (WHAT says which, for people): the condition False,
 * reason Installing, once per run (a later call while the Node holds this run's Installing
 * does nothing). 0, or -1 when the call failed (logged once per cause).
 */
int nodeask_installing(struct nodeask *a, const char *what);

/*
 * The run failed with E: the condition False, reason InstallFailed, its message E's line
 * and exit code. Not for a run stopped by a signal (it did not fail: the next run goes on
 * from where it stopped) nor after a call of this run found the API server unreachable
 * (another would only delay the exit). 0, or -1 when the call failed (logged).
 */
int nodeask_failed(struct nodeask *a, const struct err *e);

/*
 * A run that installed: NODEASK_WANTS removed (a merge patch's null: nothing when there
 * is none), and, when W (the wait it ended) is not NULL, the Event DriverPackageArrived.
 */
int nodeask_done(struct nodeask *a, const struct waiting *w);
