/* SPDX-License-Identifier: Apache-2.0 */
/* What every cmocka test file needs, in the order cmocka requires. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
