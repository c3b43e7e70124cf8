/* SPDX-License-Identifier: MIT */
/*
 * Everything that declares a librdmacm export: rdma-core 44's installed headers declare all
 * of them. Force-included into every librdmacm source (src/cm/CMakeLists.txt), so each
 * exported definition is compiled against rdma-core's type; tools/abi-decl-tu checks every
 * name of the export map is declared here.
 */
#ifndef SR_CM_API_H
#define SR_CM_API_H

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#endif
