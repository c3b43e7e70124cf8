// SPDX-License-Identifier: MIT
/* Messages as spans of registered memory, resolved once per message. */
#include <string.h>

#include "transport/iwarp.h"

enum sr_access_result sr_iw_buf_init(struct sr_iw_buf *b, const struct sr_pd *pd,
				     const struct ibv_sge *sge, uint32_t n, int need)
{
	b->n = 0;
	b->total = 0;
	for (uint32_t i = 0; i < n && i < SR_MAX_SGE; i++) {
		struct sr_mr *mr = NULL;
		uint8_t *p = NULL;
		enum sr_access_result r;

		if (!sge[i].length)
			continue; /* zero-length SGEs carry nothing and need no key */
		r = sr_mr_resolve(sge[i].lkey, pd, sge[i].addr, sge[i].length, need, &mr, &p);
		if (r != SR_ACC_OK) {
			sr_iw_buf_release(b);
			return r;
		}
		b->span[b->n].p = p;
		b->span[b->n].len = sge[i].length;
		b->span[b->n].mr = mr;
		b->n++;
		b->total += sge[i].length;
	}
	return SR_ACC_OK;
}

void sr_iw_buf_inline(struct sr_iw_buf *b, uint8_t *p, uint64_t len)
{
	b->n = len ? 1 : 0;
	b->total = len;
	b->span[0].p = p;
	b->span[0].len = len;
	b->span[0].mr = NULL;
}

void sr_iw_buf_release(struct sr_iw_buf *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->span[i].mr)
			sr_mr_put(b->span[i].mr);
	b->n = 0;
	b->total = 0;
}

int sr_iw_buf_iov(const struct sr_iw_buf *b, uint64_t off, uint64_t len, struct iovec *iov,
		  int max)
{
	int cnt = 0;

	for (uint32_t i = 0; i < b->n && len && cnt < max; i++) {
		uint64_t take;

		if (off >= b->span[i].len) {
			off -= b->span[i].len;
			continue;
		}
		take = b->span[i].len - off;
		if (take > len)
			take = len;
		iov[cnt].iov_base = b->span[i].p + off;
		iov[cnt].iov_len = take;
		cnt++;
		len -= take;
		off = 0;
	}
	return cnt;
}

uint8_t *sr_iw_buf_at(const struct sr_iw_buf *b, uint64_t off, uint64_t *contig,
		      struct sr_mr **mr)
{
	for (uint32_t i = 0; i < b->n; i++) {
		if (off < b->span[i].len) {
			*contig = b->span[i].len - off;
			*mr = b->span[i].mr;
			return b->span[i].p + off;
		}
		off -= b->span[i].len;
	}
	*contig = 0;
	*mr = NULL;
	return NULL;
}

bool sr_iw_buf_enter(const struct sr_iw_buf *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->span[i].mr && !sr_mr_enter(b->span[i].mr)) {
			while (i--)
				if (b->span[i].mr)
					sr_mr_leave(b->span[i].mr);
			return false;
		}
	}
	return true;
}

void sr_iw_buf_leave(const struct sr_iw_buf *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->span[i].mr)
			sr_mr_leave(b->span[i].mr);
}
