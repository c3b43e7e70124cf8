/* SPDX-License-Identifier: MIT */
/*
 * Device limits. These are the values ibv_query_device reports AND the values the object
 * code enforces; change them here only. Object counts are in the range real devices
 * advertise (the kernel's siw: about 100,000 QPs and CQs, 3.2 million CQEs; mlx5: hundreds
 * of thousands of QPs): what a process can create is bounded by its memory, not by us. The
 * process-wide tables behind QP numbers and STags are sized by these counts but only the
 * pages a process uses cost memory. Queue depths and IRD/ORD are siw's (siw.h); a work queue
 * ring's pages and a connection's IRD/ORD rings cost memory only once used (wq.c).
 */
#ifndef SR_LIMITS_H
#define SR_LIMITS_H

#define SR_MAX_QP          262144
#define SR_MAX_QP_WR       32768
#define SR_MAX_SGE         32
#define SR_MAX_SGE_RD      32
#define SR_MAX_CQ          262144
#define SR_MAX_CQE         4194304
#define SR_MAX_MR          1048575 /* 20 index bits: the STag keeps 12 for its key */
#define SR_MAX_PD          262144
#define SR_MAX_SRQ         262144
#define SR_MAX_SRQ_WR      327680
#define SR_MAX_SRQ_SGE     32
#define SR_MAX_QP_RD_ATOM  128     /* IRD/ORD ceiling, as siw; the 14-bit MPA field allows more */
#define SR_MAX_INLINE      256
#define SR_MAX_MR_SIZE     (1ULL << 40)
#define SR_MAX_MSG_SIZE    0x80000000u /* 2 GiB per message */
#define SR_PAGE_SIZE_CAP   0xfffff000ull
#define SR_VENDOR_ID       0x005352 /* "SR"; no IEEE OUI is claimed */
#define SR_GID_TBL_LEN     1
#define SR_PKEY_TBL_LEN    0 /* iWARP ports have no P_Key table (Linux >= 5.9) */

#endif
