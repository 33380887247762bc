/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json-c as the installer uses it: the library, and json_object_putp for
 * _cleanup_(json_object_putp), which drops the reference a variable holds when it goes out
 * of scope (json_object_put on a non-NULL pointer).
 */
#pragma once

#include <json-c/json.h>

#include "util/cleanup.h"

DEFINE_POINTER_CLEANUP(json_object, json_object_put)
