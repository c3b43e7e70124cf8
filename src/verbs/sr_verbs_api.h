/* SPDX-License-Identifier: MIT */
/*
 * Everything that declares a libibverbs export: the installed public headers and, for the
 * exports none of them declares, rdma-core 44's private declarations. Force-included into
 * every libibverbs source (src/verbs/CMakeLists.txt), so each exported definition is
 * compiled against rdma-core's type; tools/abi-decl-tu checks every name of the export map
 * is declared here.
 */
#ifndef SR_VERBS_API_H
#define SR_VERBS_API_H

#include <infiniband/sa.h>
#include <infiniband/verbs.h>

#include "verbs/rdma_core_private.h"

#endif
