/* SPDX-License-Identifier: MIT */
/*
 * Device limits. These are the values ibv_query_device reports AND the values the object
 * code enforces; change them here only.
 */
#ifndef SR_LIMITS_H
#define SR_LIMITS_H

#define SR_MAX_QP          4096
#define SR_MAX_QP_WR       16384
#define SR_MAX_SGE         32
#define SR_MAX_SGE_RD      32
#define SR_MAX_CQ          4096
#define SR_MAX_CQE         65536
#define SR_MAX_MR          65536
#define SR_MAX_PD          16384
#define SR_MAX_SRQ         4096
#define SR_MAX_SRQ_WR      16384
#define SR_MAX_SRQ_SGE     32
#define SR_MAX_QP_RD_ATOM  32      /* IRD/ORD ceiling, 14-bit MPA v2 field allows more */
#define SR_MAX_INLINE      256
#define SR_MAX_MR_SIZE     (1ULL << 40)
#define SR_MAX_MSG_SIZE    0x80000000u /* 2 GiB per message */
#define SR_PAGE_SIZE_CAP   0xfffff000ull
#define SR_VENDOR_ID       0x005352 /* "SR"; no IEEE OUI is claimed */
#define SR_GID_TBL_LEN     1
#define SR_PKEY_TBL_LEN    1

#endif
