/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's parts, below the command that runs them (cmd/agent.c): the kernel
 * log's Xids, the health judgement and its metrics, the HTTP endpoint, a driver upgrade's
 * states and the fleet's upgrade slots. The face of
 * agent/, the only header of it that cmd/ includes.
 */
#pragma once

#include "agent/control.h"
#include "agent/daemons.h"
#include "agent/health.h"
#include "agent/httpd.h"
#include "agent/slots.h"
#include "agent/upgrade.h"
#include "agent/xid.h"
