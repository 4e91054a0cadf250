// SPDX-License-Identifier: MIT
/*
 * repack.c - load-time weight layouts: the interleaved (_r8) forms the
 * kernel sets read, chosen for a context (mm_repack_type()), made in
 * place (mm_repack()) and read back a row at a time (mm_layout_row()).
 */
#include "quant.h"
#include "quant_kern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- load-time layouts ----------------------------------------------- */

enum mm_type mm_repack_type(const struct mm_ctx *ctx, enum mm_type t,
			    int64_t m, int64_t k)
{
	const enum mm_type to = t == MM_TYPE_Q4_0 ? MM_TYPE_Q4_0_R8 :
				t == MM_TYPE_Q5_0 ? MM_TYPE_Q5_0_R8 :
				t == MM_TYPE_Q8_0 ? MM_TYPE_Q8_0_R8 :
				t == MM_TYPE_Q4_K ? MM_TYPE_Q4_K_R8 : t;

	if (to != t && m >= 8 && k > 0 &&
	    k % (int64_t)mm_type_block_elems(t) == 0 && ctx->kern->gemv[to])
		return to;
	return t;
}

/* Bits 0, 4, 8, 12 of v to bits 0, 2, 4, 6 */
static unsigned int mm_r8_spread(unsigned int v)
{
	v = (v | v >> 2) & 0x0505u;
	return (v | v >> 4) & 0x55u;
}

/* Row r's file block b into group-block o of layout t */
static void mm_r8_put(enum mm_type t, uint8_t *o, int r, const uint8_t *b)
{
	const size_t bs = mm_type_block_bytes(mm_stored_type(t));
	uint8_t *q = o + mm_r8_qbase(t);

	memcpy(o + 2 * r, b, 2);	/* d */
	if (t == MM_TYPE_Q4_K_R8) {
		const struct mm_block_q4_k *k4 = (const void *)b;

		memcpy(o + MM_R8_KDMIN + 2 * r, &k4->dmin, 2);
		for (int j = 0; j < MM_K_SCALE_SIZE; j += 4)
			memcpy(o + MM_R8_KSCALES + mm_r8_qbyte(r, j), k4->scales + j, 4);
		for (int j = 0; j < MM_QK_K / 2; j += 4)
			memcpy(q + mm_r8_qbyte(r, j), k4->qs + j, 4);
		return;
	}
	if (t == MM_TYPE_Q8_0_R8) {
		memcpy(q + MM_QK * r, b + bs - MM_QK, MM_QK);
		return;
	}
	/* nibble bytes 4t..4t+3 lie together */
	for (int j = 0; j < 16; j += 4)
		memcpy(q + mm_r8_qbyte(r, j), b + bs - 16 + j, 4);
	if (t == MM_TYPE_Q5_0_R8) {
		const uint8_t *qh = ((const struct mm_block_q5_0 *)b)->qh;
		const uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 |
				   (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;

		/* plane byte 4r + c: bits c, c + 4, .. c + 12 of h to bits 0,
		 * 2, 4, 6 and c + 16, .. c + 28 to 1, 3, 5, 7 (mm_r8_hbit()) */
		for (int c = 0; c < 4; c++)
			o[MM_R8_PLANES + 4 * r + c] =
				(uint8_t)(mm_r8_spread(h >> c & 0x1111u) |
					  mm_r8_spread(h >> (c + 16) & 0x1111u) << 1);
	}
}

/* Row r's block, file layout, out of group-block o of layout t into b */
static void mm_r8_get(enum mm_type t, const uint8_t *o, int r, uint8_t *b)
{
	const size_t bs = mm_type_block_bytes(mm_stored_type(t));
	const uint8_t *q = o + mm_r8_qbase(t);

	memcpy(b, o + 2 * r, 2);
	if (t == MM_TYPE_Q4_K_R8) {
		struct mm_block_q4_k *k4 = (void *)b;

		memcpy(&k4->dmin, o + MM_R8_KDMIN + 2 * r, 2);
		for (int j = 0; j < MM_K_SCALE_SIZE; j += 4)
			memcpy(k4->scales + j, o + MM_R8_KSCALES + mm_r8_qbyte(r, j), 4);
		for (int j = 0; j < MM_QK_K / 2; j += 4)
			memcpy(k4->qs + j, q + mm_r8_qbyte(r, j), 4);
		return;
	}
	if (t == MM_TYPE_Q8_0_R8) {
		memcpy(b + bs - MM_QK, q + MM_QK * r, MM_QK);
		return;
	}
	for (int j = 0; j < 16; j++)
		b[bs - 16 + j] = q[mm_r8_qbyte(r, j)];
	if (t == MM_TYPE_Q5_0_R8) {
		uint8_t *qh = ((struct mm_block_q5_0 *)b)->qh;

		memset(qh, 0, 4);
		for (int e = 0; e < MM_QK; e++)
			qh[e / 8] |= (uint8_t)((o[MM_R8_PLANES + 4 * r + e % 4] >> mm_r8_hbit(e) & 1u) <<
					       e % 8);
	}
}

int mm_repack(enum mm_type from, enum mm_type to, void *W, int64_t m,
	      int64_t k)
{
	const size_t bs = mm_type_block_bytes(from);
	const int64_t be = (int64_t)mm_type_block_elems(from);
	size_t ws;
	uint8_t *tmp;

	if (from == to)
		return 0;
	if (!(from == MM_TYPE_Q4_0 && to == MM_TYPE_Q4_0_R8) &&
	    !(from == MM_TYPE_Q5_0 && to == MM_TYPE_Q5_0_R8) &&
	    !(from == MM_TYPE_Q8_0 && to == MM_TYPE_Q8_0_R8) &&
	    !(from == MM_TYPE_Q4_K && to == MM_TYPE_Q4_K_R8))
		return -EINVAL;
	if (m < 0 || k <= 0 || k % be)
		return -EINVAL;
	ws = mm_row_bytes(from, k);
	tmp = malloc(8 * ws);
	if (!tmp)
		return -ENOMEM;
	for (int64_t g = 0; g + 8 <= m; g += 8) {
		uint8_t *grp = (uint8_t *)W + (size_t)g * ws;

		memcpy(tmp, grp, 8 * ws);
		for (int64_t i = 0; i < k / be; i++)
			for (int r = 0; r < 8; r++)
				mm_r8_put(to, grp + (size_t)i * 8 * bs, r,
					  tmp + r * ws + i * bs);
	}
	free(tmp);
	return 0;
}

void mm_layout_row(enum mm_type t, const void *W, int64_t m, int64_t k,
		   int64_t r, float *y)
{
	const enum mm_type st = mm_stored_type(t);
	const size_t bs = mm_type_block_bytes(st), ws = mm_row_bytes(st, k);
	const int64_t be = (int64_t)mm_type_block_elems(st);
	const uint8_t *grp = (const uint8_t *)W + (size_t)(r / 8) * 8 * ws;

	if (t == st || r >= m / 8 * 8) {	/* a row as stored */
		mm_dequantize_row(st, (const uint8_t *)W + (size_t)r * ws, y, k);
		return;
	}
	/* block i of the row, put back together from the group-block */
	for (int64_t i = 0; i < k / be; i++) {
		union {
			struct mm_block_q4_0 q4;
			struct mm_block_q5_0 q5;
			struct mm_block_q8_0 q8;
			struct mm_block_q4_k q4k;
		} b;

		mm_r8_get(t, grp + (size_t)i * 8 * bs, (int)(r % 8), (uint8_t *)&b);
		mm_dequantize_row(st, &b, y + i * be, be);
	}
}
