// SPDX-License-Identifier: MIT
/*
 * tokenizer.c - SentencePiece-style and byte-level BPE tokenizers built
 * from GGUF metadata, following llama.cpp's llama-vocab.cpp behaviour:
 *
 *  SPM ("llama"): spaces become U+2581, a space is prepended to each text
 *  fragment that starts the input or follows a special token, then
 *  adjacent symbols (UTF-8 characters) are merged greedily by the score of
 *  the merged piece (highest first, leftmost on ties); characters without
 *  a token fall back to <0xXX> byte tokens.
 *
 *  BPE ("gpt2"): the text is split by hand-written equivalents of the
 *  pre-tokenizer regexes llama.cpp has for the file's tokenizer.ggml.pre
 *  (see mm_pre_passes), each piece's bytes are mapped through GPT-2's
 *  byte-to-unicode table and merged by merge rank (lowest first).
 *
 * Unicode classes (\p{L}, \p{N}, \p{P}) come from tables tools/ucd_gen.py
 * generates from the Unicode Character Database; whitespace is llama.cpp's
 * set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"
#include "tokenizer.h"

struct mm_merge_slot {
	uint64_t key;		/* (left << 32 | right) + 1; 0 = empty */
	int32_t rank;
	int32_t result;
};

struct mm_tok {
	int kind;
	int32_t n_vocab;
	char *arena;		/* token texts, NUL-separated */
	uint64_t *off;		/* start of token i in arena */
	uint32_t *len;
	float *score;
	uint8_t *attr;
	struct mm_strmap map;

	int32_t bos, eos, unk, eot, im_end;
	int add_bos, add_space_prefix;
	int pre;			/* enum mm_pre_type (BPE) */
	int ignore_merges;	/* a piece that is a token stays whole */

	int32_t *special;	/* control + user tokens, longest first */
	int32_t n_special;
	uint8_t special_first[256]; /* first bytes of special texts */

	struct mm_merge_slot *merge;
	size_t merge_cap;

	int32_t byte_tok[256];	/* BPE: mapped byte; SPM: <0xXX> */
	uint32_t byte2cp[256];
	int16_t cp2byte[512];

	char *chat_template;
};

/* ---- small helpers ---------------------------------------------------- */

/* Decodes one UTF-8 character; invalid bytes decode as themselves | ~0. */
static uint32_t mm_utf8_next(const uint8_t *s, size_t n, size_t i, size_t *clen)
{
	uint8_t c = s[i];
	size_t k, need;
	uint32_t cp;

	if (c < 0x80) {
		*clen = 1;
		return c;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
	} else {
		goto bad;
	}
	if (n - i <= need)
		goto bad;
	for (k = 1; k <= need; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			goto bad;
		cp = (cp << 6) | (s[i + k] & 0x3f);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		goto bad;
	*clen = need + 1;
	return cp;
bad:
	*clen = 1;
	return 0x80000000u | c;
}

static size_t mm_utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int mm_cp_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* BEGIN ucd_gen.py: generated from Unicode 14.0.0, do not edit */
struct mm_ucd_range {
	uint32_t lo, hi;
};

/* Lu Ll Lt Lm Lo above U+007F */
static const struct mm_ucd_range mm_ucd_letter[646] = {
	{ 0x000aa, 0x000aa }, { 0x000b5, 0x000b5 }, { 0x000ba, 0x000ba },
	{ 0x000c0, 0x000d6 }, { 0x000d8, 0x000f6 }, { 0x000f8, 0x002c1 },
	{ 0x002c6, 0x002d1 }, { 0x002e0, 0x002e4 }, { 0x002ec, 0x002ec },
	{ 0x002ee, 0x002ee }, { 0x00370, 0x00374 }, { 0x00376, 0x00377 },
	{ 0x0037a, 0x0037d }, { 0x0037f, 0x0037f }, { 0x00386, 0x00386 },
	{ 0x00388, 0x0038a }, { 0x0038c, 0x0038c }, { 0x0038e, 0x003a1 },
	{ 0x003a3, 0x003f5 }, { 0x003f7, 0x00481 }, { 0x0048a, 0x0052f },
	{ 0x00531, 0x00556 }, { 0x00559, 0x00559 }, { 0x00560, 0x00588 },
	{ 0x005d0, 0x005ea }, { 0x005ef, 0x005f2 }, { 0x00620, 0x0064a },
	{ 0x0066e, 0x0066f }, { 0x00671, 0x006d3 }, { 0x006d5, 0x006d5 },
	{ 0x006e5, 0x006e6 }, { 0x006ee, 0x006ef }, { 0x006fa, 0x006fc },
	{ 0x006ff, 0x006ff }, { 0x00710, 0x00710 }, { 0x00712, 0x0072f },
	{ 0x0074d, 0x007a5 }, { 0x007b1, 0x007b1 }, { 0x007ca, 0x007ea },
	{ 0x007f4, 0x007f5 }, { 0x007fa, 0x007fa }, { 0x00800, 0x00815 },
	{ 0x0081a, 0x0081a }, { 0x00824, 0x00824 }, { 0x00828, 0x00828 },
	{ 0x00840, 0x00858 }, { 0x00860, 0x0086a }, { 0x00870, 0x00887 },
	{ 0x00889, 0x0088e }, { 0x008a0, 0x008c9 }, { 0x00904, 0x00939 },
	{ 0x0093d, 0x0093d }, { 0x00950, 0x00950 }, { 0x00958, 0x00961 },
	{ 0x00971, 0x00980 }, { 0x00985, 0x0098c }, { 0x0098f, 0x00990 },
	{ 0x00993, 0x009a8 }, { 0x009aa, 0x009b0 }, { 0x009b2, 0x009b2 },
	{ 0x009b6, 0x009b9 }, { 0x009bd, 0x009bd }, { 0x009ce, 0x009ce },
	{ 0x009dc, 0x009dd }, { 0x009df, 0x009e1 }, { 0x009f0, 0x009f1 },
	{ 0x009fc, 0x009fc }, { 0x00a05, 0x00a0a }, { 0x00a0f, 0x00a10 },
	{ 0x00a13, 0x00a28 }, { 0x00a2a, 0x00a30 }, { 0x00a32, 0x00a33 },
	{ 0x00a35, 0x00a36 }, { 0x00a38, 0x00a39 }, { 0x00a59, 0x00a5c },
	{ 0x00a5e, 0x00a5e }, { 0x00a72, 0x00a74 }, { 0x00a85, 0x00a8d },
	{ 0x00a8f, 0x00a91 }, { 0x00a93, 0x00aa8 }, { 0x00aaa, 0x00ab0 },
	{ 0x00ab2, 0x00ab3 }, { 0x00ab5, 0x00ab9 }, { 0x00abd, 0x00abd },
	{ 0x00ad0, 0x00ad0 }, { 0x00ae0, 0x00ae1 }, { 0x00af9, 0x00af9 },
	{ 0x00b05, 0x00b0c }, { 0x00b0f, 0x00b10 }, { 0x00b13, 0x00b28 },
	{ 0x00b2a, 0x00b30 }, { 0x00b32, 0x00b33 }, { 0x00b35, 0x00b39 },
	{ 0x00b3d, 0x00b3d }, { 0x00b5c, 0x00b5d }, { 0x00b5f, 0x00b61 },
	{ 0x00b71, 0x00b71 }, { 0x00b83, 0x00b83 }, { 0x00b85, 0x00b8a },
	{ 0x00b8e, 0x00b90 }, { 0x00b92, 0x00b95 }, { 0x00b99, 0x00b9a },
	{ 0x00b9c, 0x00b9c }, { 0x00b9e, 0x00b9f }, { 0x00ba3, 0x00ba4 },
	{ 0x00ba8, 0x00baa }, { 0x00bae, 0x00bb9 }, { 0x00bd0, 0x00bd0 },
	{ 0x00c05, 0x00c0c }, { 0x00c0e, 0x00c10 }, { 0x00c12, 0x00c28 },
	{ 0x00c2a, 0x00c39 }, { 0x00c3d, 0x00c3d }, { 0x00c58, 0x00c5a },
	{ 0x00c5d, 0x00c5d }, { 0x00c60, 0x00c61 }, { 0x00c80, 0x00c80 },
	{ 0x00c85, 0x00c8c }, { 0x00c8e, 0x00c90 }, { 0x00c92, 0x00ca8 },
	{ 0x00caa, 0x00cb3 }, { 0x00cb5, 0x00cb9 }, { 0x00cbd, 0x00cbd },
	{ 0x00cdd, 0x00cde }, { 0x00ce0, 0x00ce1 }, { 0x00cf1, 0x00cf2 },
	{ 0x00d04, 0x00d0c }, { 0x00d0e, 0x00d10 }, { 0x00d12, 0x00d3a },
	{ 0x00d3d, 0x00d3d }, { 0x00d4e, 0x00d4e }, { 0x00d54, 0x00d56 },
	{ 0x00d5f, 0x00d61 }, { 0x00d7a, 0x00d7f }, { 0x00d85, 0x00d96 },
	{ 0x00d9a, 0x00db1 }, { 0x00db3, 0x00dbb }, { 0x00dbd, 0x00dbd },
	{ 0x00dc0, 0x00dc6 }, { 0x00e01, 0x00e30 }, { 0x00e32, 0x00e33 },
	{ 0x00e40, 0x00e46 }, { 0x00e81, 0x00e82 }, { 0x00e84, 0x00e84 },
	{ 0x00e86, 0x00e8a }, { 0x00e8c, 0x00ea3 }, { 0x00ea5, 0x00ea5 },
	{ 0x00ea7, 0x00eb0 }, { 0x00eb2, 0x00eb3 }, { 0x00ebd, 0x00ebd },
	{ 0x00ec0, 0x00ec4 }, { 0x00ec6, 0x00ec6 }, { 0x00edc, 0x00edf },
	{ 0x00f00, 0x00f00 }, { 0x00f40, 0x00f47 }, { 0x00f49, 0x00f6c },
	{ 0x00f88, 0x00f8c }, { 0x01000, 0x0102a }, { 0x0103f, 0x0103f },
	{ 0x01050, 0x01055 }, { 0x0105a, 0x0105d }, { 0x01061, 0x01061 },
	{ 0x01065, 0x01066 }, { 0x0106e, 0x01070 }, { 0x01075, 0x01081 },
	{ 0x0108e, 0x0108e }, { 0x010a0, 0x010c5 }, { 0x010c7, 0x010c7 },
	{ 0x010cd, 0x010cd }, { 0x010d0, 0x010fa }, { 0x010fc, 0x01248 },
	{ 0x0124a, 0x0124d }, { 0x01250, 0x01256 }, { 0x01258, 0x01258 },
	{ 0x0125a, 0x0125d }, { 0x01260, 0x01288 }, { 0x0128a, 0x0128d },
	{ 0x01290, 0x012b0 }, { 0x012b2, 0x012b5 }, { 0x012b8, 0x012be },
	{ 0x012c0, 0x012c0 }, { 0x012c2, 0x012c5 }, { 0x012c8, 0x012d6 },
	{ 0x012d8, 0x01310 }, { 0x01312, 0x01315 }, { 0x01318, 0x0135a },
	{ 0x01380, 0x0138f }, { 0x013a0, 0x013f5 }, { 0x013f8, 0x013fd },
	{ 0x01401, 0x0166c }, { 0x0166f, 0x0167f }, { 0x01681, 0x0169a },
	{ 0x016a0, 0x016ea }, { 0x016f1, 0x016f8 }, { 0x01700, 0x01711 },
	{ 0x0171f, 0x01731 }, { 0x01740, 0x01751 }, { 0x01760, 0x0176c },
	{ 0x0176e, 0x01770 }, { 0x01780, 0x017b3 }, { 0x017d7, 0x017d7 },
	{ 0x017dc, 0x017dc }, { 0x01820, 0x01878 }, { 0x01880, 0x01884 },
	{ 0x01887, 0x018a8 }, { 0x018aa, 0x018aa }, { 0x018b0, 0x018f5 },
	{ 0x01900, 0x0191e }, { 0x01950, 0x0196d }, { 0x01970, 0x01974 },
	{ 0x01980, 0x019ab }, { 0x019b0, 0x019c9 }, { 0x01a00, 0x01a16 },
	{ 0x01a20, 0x01a54 }, { 0x01aa7, 0x01aa7 }, { 0x01b05, 0x01b33 },
	{ 0x01b45, 0x01b4c }, { 0x01b83, 0x01ba0 }, { 0x01bae, 0x01baf },
	{ 0x01bba, 0x01be5 }, { 0x01c00, 0x01c23 }, { 0x01c4d, 0x01c4f },
	{ 0x01c5a, 0x01c7d }, { 0x01c80, 0x01c88 }, { 0x01c90, 0x01cba },
	{ 0x01cbd, 0x01cbf }, { 0x01ce9, 0x01cec }, { 0x01cee, 0x01cf3 },
	{ 0x01cf5, 0x01cf6 }, { 0x01cfa, 0x01cfa }, { 0x01d00, 0x01dbf },
	{ 0x01e00, 0x01f15 }, { 0x01f18, 0x01f1d }, { 0x01f20, 0x01f45 },
	{ 0x01f48, 0x01f4d }, { 0x01f50, 0x01f57 }, { 0x01f59, 0x01f59 },
	{ 0x01f5b, 0x01f5b }, { 0x01f5d, 0x01f5d }, { 0x01f5f, 0x01f7d },
	{ 0x01f80, 0x01fb4 }, { 0x01fb6, 0x01fbc }, { 0x01fbe, 0x01fbe },
	{ 0x01fc2, 0x01fc4 }, { 0x01fc6, 0x01fcc }, { 0x01fd0, 0x01fd3 },
	{ 0x01fd6, 0x01fdb }, { 0x01fe0, 0x01fec }, { 0x01ff2, 0x01ff4 },
	{ 0x01ff6, 0x01ffc }, { 0x02071, 0x02071 }, { 0x0207f, 0x0207f },
	{ 0x02090, 0x0209c }, { 0x02102, 0x02102 }, { 0x02107, 0x02107 },
	{ 0x0210a, 0x02113 }, { 0x02115, 0x02115 }, { 0x02119, 0x0211d },
	{ 0x02124, 0x02124 }, { 0x02126, 0x02126 }, { 0x02128, 0x02128 },
	{ 0x0212a, 0x0212d }, { 0x0212f, 0x02139 }, { 0x0213c, 0x0213f },
	{ 0x02145, 0x02149 }, { 0x0214e, 0x0214e }, { 0x02183, 0x02184 },
	{ 0x02c00, 0x02ce4 }, { 0x02ceb, 0x02cee }, { 0x02cf2, 0x02cf3 },
	{ 0x02d00, 0x02d25 }, { 0x02d27, 0x02d27 }, { 0x02d2d, 0x02d2d },
	{ 0x02d30, 0x02d67 }, { 0x02d6f, 0x02d6f }, { 0x02d80, 0x02d96 },
	{ 0x02da0, 0x02da6 }, { 0x02da8, 0x02dae }, { 0x02db0, 0x02db6 },
	{ 0x02db8, 0x02dbe }, { 0x02dc0, 0x02dc6 }, { 0x02dc8, 0x02dce },
	{ 0x02dd0, 0x02dd6 }, { 0x02dd8, 0x02dde }, { 0x02e2f, 0x02e2f },
	{ 0x03005, 0x03006 }, { 0x03031, 0x03035 }, { 0x0303b, 0x0303c },
	{ 0x03041, 0x03096 }, { 0x0309d, 0x0309f }, { 0x030a1, 0x030fa },
	{ 0x030fc, 0x030ff }, { 0x03105, 0x0312f }, { 0x03131, 0x0318e },
	{ 0x031a0, 0x031bf }, { 0x031f0, 0x031ff }, { 0x03400, 0x04dbf },
	{ 0x04e00, 0x0a48c }, { 0x0a4d0, 0x0a4fd }, { 0x0a500, 0x0a60c },
	{ 0x0a610, 0x0a61f }, { 0x0a62a, 0x0a62b }, { 0x0a640, 0x0a66e },
	{ 0x0a67f, 0x0a69d }, { 0x0a6a0, 0x0a6e5 }, { 0x0a717, 0x0a71f },
	{ 0x0a722, 0x0a788 }, { 0x0a78b, 0x0a7ca }, { 0x0a7d0, 0x0a7d1 },
	{ 0x0a7d3, 0x0a7d3 }, { 0x0a7d5, 0x0a7d9 }, { 0x0a7f2, 0x0a801 },
	{ 0x0a803, 0x0a805 }, { 0x0a807, 0x0a80a }, { 0x0a80c, 0x0a822 },
	{ 0x0a840, 0x0a873 }, { 0x0a882, 0x0a8b3 }, { 0x0a8f2, 0x0a8f7 },
	{ 0x0a8fb, 0x0a8fb }, { 0x0a8fd, 0x0a8fe }, { 0x0a90a, 0x0a925 },
	{ 0x0a930, 0x0a946 }, { 0x0a960, 0x0a97c }, { 0x0a984, 0x0a9b2 },
	{ 0x0a9cf, 0x0a9cf }, { 0x0a9e0, 0x0a9e4 }, { 0x0a9e6, 0x0a9ef },
	{ 0x0a9fa, 0x0a9fe }, { 0x0aa00, 0x0aa28 }, { 0x0aa40, 0x0aa42 },
	{ 0x0aa44, 0x0aa4b }, { 0x0aa60, 0x0aa76 }, { 0x0aa7a, 0x0aa7a },
	{ 0x0aa7e, 0x0aaaf }, { 0x0aab1, 0x0aab1 }, { 0x0aab5, 0x0aab6 },
	{ 0x0aab9, 0x0aabd }, { 0x0aac0, 0x0aac0 }, { 0x0aac2, 0x0aac2 },
	{ 0x0aadb, 0x0aadd }, { 0x0aae0, 0x0aaea }, { 0x0aaf2, 0x0aaf4 },
	{ 0x0ab01, 0x0ab06 }, { 0x0ab09, 0x0ab0e }, { 0x0ab11, 0x0ab16 },
	{ 0x0ab20, 0x0ab26 }, { 0x0ab28, 0x0ab2e }, { 0x0ab30, 0x0ab5a },
	{ 0x0ab5c, 0x0ab69 }, { 0x0ab70, 0x0abe2 }, { 0x0ac00, 0x0d7a3 },
	{ 0x0d7b0, 0x0d7c6 }, { 0x0d7cb, 0x0d7fb }, { 0x0f900, 0x0fa6d },
	{ 0x0fa70, 0x0fad9 }, { 0x0fb00, 0x0fb06 }, { 0x0fb13, 0x0fb17 },
	{ 0x0fb1d, 0x0fb1d }, { 0x0fb1f, 0x0fb28 }, { 0x0fb2a, 0x0fb36 },
	{ 0x0fb38, 0x0fb3c }, { 0x0fb3e, 0x0fb3e }, { 0x0fb40, 0x0fb41 },
	{ 0x0fb43, 0x0fb44 }, { 0x0fb46, 0x0fbb1 }, { 0x0fbd3, 0x0fd3d },
	{ 0x0fd50, 0x0fd8f }, { 0x0fd92, 0x0fdc7 }, { 0x0fdf0, 0x0fdfb },
	{ 0x0fe70, 0x0fe74 }, { 0x0fe76, 0x0fefc }, { 0x0ff21, 0x0ff3a },
	{ 0x0ff41, 0x0ff5a }, { 0x0ff66, 0x0ffbe }, { 0x0ffc2, 0x0ffc7 },
	{ 0x0ffca, 0x0ffcf }, { 0x0ffd2, 0x0ffd7 }, { 0x0ffda, 0x0ffdc },
	{ 0x10000, 0x1000b }, { 0x1000d, 0x10026 }, { 0x10028, 0x1003a },
	{ 0x1003c, 0x1003d }, { 0x1003f, 0x1004d }, { 0x10050, 0x1005d },
	{ 0x10080, 0x100fa }, { 0x10280, 0x1029c }, { 0x102a0, 0x102d0 },
	{ 0x10300, 0x1031f }, { 0x1032d, 0x10340 }, { 0x10342, 0x10349 },
	{ 0x10350, 0x10375 }, { 0x10380, 0x1039d }, { 0x103a0, 0x103c3 },
	{ 0x103c8, 0x103cf }, { 0x10400, 0x1049d }, { 0x104b0, 0x104d3 },
	{ 0x104d8, 0x104fb }, { 0x10500, 0x10527 }, { 0x10530, 0x10563 },
	{ 0x10570, 0x1057a }, { 0x1057c, 0x1058a }, { 0x1058c, 0x10592 },
	{ 0x10594, 0x10595 }, { 0x10597, 0x105a1 }, { 0x105a3, 0x105b1 },
	{ 0x105b3, 0x105b9 }, { 0x105bb, 0x105bc }, { 0x10600, 0x10736 },
	{ 0x10740, 0x10755 }, { 0x10760, 0x10767 }, { 0x10780, 0x10785 },
	{ 0x10787, 0x107b0 }, { 0x107b2, 0x107ba }, { 0x10800, 0x10805 },
	{ 0x10808, 0x10808 }, { 0x1080a, 0x10835 }, { 0x10837, 0x10838 },
	{ 0x1083c, 0x1083c }, { 0x1083f, 0x10855 }, { 0x10860, 0x10876 },
	{ 0x10880, 0x1089e }, { 0x108e0, 0x108f2 }, { 0x108f4, 0x108f5 },
	{ 0x10900, 0x10915 }, { 0x10920, 0x10939 }, { 0x10980, 0x109b7 },
	{ 0x109be, 0x109bf }, { 0x10a00, 0x10a00 }, { 0x10a10, 0x10a13 },
	{ 0x10a15, 0x10a17 }, { 0x10a19, 0x10a35 }, { 0x10a60, 0x10a7c },
	{ 0x10a80, 0x10a9c }, { 0x10ac0, 0x10ac7 }, { 0x10ac9, 0x10ae4 },
	{ 0x10b00, 0x10b35 }, { 0x10b40, 0x10b55 }, { 0x10b60, 0x10b72 },
	{ 0x10b80, 0x10b91 }, { 0x10c00, 0x10c48 }, { 0x10c80, 0x10cb2 },
	{ 0x10cc0, 0x10cf2 }, { 0x10d00, 0x10d23 }, { 0x10e80, 0x10ea9 },
	{ 0x10eb0, 0x10eb1 }, { 0x10f00, 0x10f1c }, { 0x10f27, 0x10f27 },
	{ 0x10f30, 0x10f45 }, { 0x10f70, 0x10f81 }, { 0x10fb0, 0x10fc4 },
	{ 0x10fe0, 0x10ff6 }, { 0x11003, 0x11037 }, { 0x11071, 0x11072 },
	{ 0x11075, 0x11075 }, { 0x11083, 0x110af }, { 0x110d0, 0x110e8 },
	{ 0x11103, 0x11126 }, { 0x11144, 0x11144 }, { 0x11147, 0x11147 },
	{ 0x11150, 0x11172 }, { 0x11176, 0x11176 }, { 0x11183, 0x111b2 },
	{ 0x111c1, 0x111c4 }, { 0x111da, 0x111da }, { 0x111dc, 0x111dc },
	{ 0x11200, 0x11211 }, { 0x11213, 0x1122b }, { 0x11280, 0x11286 },
	{ 0x11288, 0x11288 }, { 0x1128a, 0x1128d }, { 0x1128f, 0x1129d },
	{ 0x1129f, 0x112a8 }, { 0x112b0, 0x112de }, { 0x11305, 0x1130c },
	{ 0x1130f, 0x11310 }, { 0x11313, 0x11328 }, { 0x1132a, 0x11330 },
	{ 0x11332, 0x11333 }, { 0x11335, 0x11339 }, { 0x1133d, 0x1133d },
	{ 0x11350, 0x11350 }, { 0x1135d, 0x11361 }, { 0x11400, 0x11434 },
	{ 0x11447, 0x1144a }, { 0x1145f, 0x11461 }, { 0x11480, 0x114af },
	{ 0x114c4, 0x114c5 }, { 0x114c7, 0x114c7 }, { 0x11580, 0x115ae },
	{ 0x115d8, 0x115db }, { 0x11600, 0x1162f }, { 0x11644, 0x11644 },
	{ 0x11680, 0x116aa }, { 0x116b8, 0x116b8 }, { 0x11700, 0x1171a },
	{ 0x11740, 0x11746 }, { 0x11800, 0x1182b }, { 0x118a0, 0x118df },
	{ 0x118ff, 0x11906 }, { 0x11909, 0x11909 }, { 0x1190c, 0x11913 },
	{ 0x11915, 0x11916 }, { 0x11918, 0x1192f }, { 0x1193f, 0x1193f },
	{ 0x11941, 0x11941 }, { 0x119a0, 0x119a7 }, { 0x119aa, 0x119d0 },
	{ 0x119e1, 0x119e1 }, { 0x119e3, 0x119e3 }, { 0x11a00, 0x11a00 },
	{ 0x11a0b, 0x11a32 }, { 0x11a3a, 0x11a3a }, { 0x11a50, 0x11a50 },
	{ 0x11a5c, 0x11a89 }, { 0x11a9d, 0x11a9d }, { 0x11ab0, 0x11af8 },
	{ 0x11c00, 0x11c08 }, { 0x11c0a, 0x11c2e }, { 0x11c40, 0x11c40 },
	{ 0x11c72, 0x11c8f }, { 0x11d00, 0x11d06 }, { 0x11d08, 0x11d09 },
	{ 0x11d0b, 0x11d30 }, { 0x11d46, 0x11d46 }, { 0x11d60, 0x11d65 },
	{ 0x11d67, 0x11d68 }, { 0x11d6a, 0x11d89 }, { 0x11d98, 0x11d98 },
	{ 0x11ee0, 0x11ef2 }, { 0x11fb0, 0x11fb0 }, { 0x12000, 0x12399 },
	{ 0x12480, 0x12543 }, { 0x12f90, 0x12ff0 }, { 0x13000, 0x1342e },
	{ 0x14400, 0x14646 }, { 0x16800, 0x16a38 }, { 0x16a40, 0x16a5e },
	{ 0x16a70, 0x16abe }, { 0x16ad0, 0x16aed }, { 0x16b00, 0x16b2f },
	{ 0x16b40, 0x16b43 }, { 0x16b63, 0x16b77 }, { 0x16b7d, 0x16b8f },
	{ 0x16e40, 0x16e7f }, { 0x16f00, 0x16f4a }, { 0x16f50, 0x16f50 },
	{ 0x16f93, 0x16f9f }, { 0x16fe0, 0x16fe1 }, { 0x16fe3, 0x16fe3 },
	{ 0x17000, 0x187f7 }, { 0x18800, 0x18cd5 }, { 0x18d00, 0x18d08 },
	{ 0x1aff0, 0x1aff3 }, { 0x1aff5, 0x1affb }, { 0x1affd, 0x1affe },
	{ 0x1b000, 0x1b122 }, { 0x1b150, 0x1b152 }, { 0x1b164, 0x1b167 },
	{ 0x1b170, 0x1b2fb }, { 0x1bc00, 0x1bc6a }, { 0x1bc70, 0x1bc7c },
	{ 0x1bc80, 0x1bc88 }, { 0x1bc90, 0x1bc99 }, { 0x1d400, 0x1d454 },
	{ 0x1d456, 0x1d49c }, { 0x1d49e, 0x1d49f }, { 0x1d4a2, 0x1d4a2 },
	{ 0x1d4a5, 0x1d4a6 }, { 0x1d4a9, 0x1d4ac }, { 0x1d4ae, 0x1d4b9 },
	{ 0x1d4bb, 0x1d4bb }, { 0x1d4bd, 0x1d4c3 }, { 0x1d4c5, 0x1d505 },
	{ 0x1d507, 0x1d50a }, { 0x1d50d, 0x1d514 }, { 0x1d516, 0x1d51c },
	{ 0x1d51e, 0x1d539 }, { 0x1d53b, 0x1d53e }, { 0x1d540, 0x1d544 },
	{ 0x1d546, 0x1d546 }, { 0x1d54a, 0x1d550 }, { 0x1d552, 0x1d6a5 },
	{ 0x1d6a8, 0x1d6c0 }, { 0x1d6c2, 0x1d6da }, { 0x1d6dc, 0x1d6fa },
	{ 0x1d6fc, 0x1d714 }, { 0x1d716, 0x1d734 }, { 0x1d736, 0x1d74e },
	{ 0x1d750, 0x1d76e }, { 0x1d770, 0x1d788 }, { 0x1d78a, 0x1d7a8 },
	{ 0x1d7aa, 0x1d7c2 }, { 0x1d7c4, 0x1d7cb }, { 0x1df00, 0x1df1e },
	{ 0x1e100, 0x1e12c }, { 0x1e137, 0x1e13d }, { 0x1e14e, 0x1e14e },
	{ 0x1e290, 0x1e2ad }, { 0x1e2c0, 0x1e2eb }, { 0x1e7e0, 0x1e7e6 },
	{ 0x1e7e8, 0x1e7eb }, { 0x1e7ed, 0x1e7ee }, { 0x1e7f0, 0x1e7fe },
	{ 0x1e800, 0x1e8c4 }, { 0x1e900, 0x1e943 }, { 0x1e94b, 0x1e94b },
	{ 0x1ee00, 0x1ee03 }, { 0x1ee05, 0x1ee1f }, { 0x1ee21, 0x1ee22 },
	{ 0x1ee24, 0x1ee24 }, { 0x1ee27, 0x1ee27 }, { 0x1ee29, 0x1ee32 },
	{ 0x1ee34, 0x1ee37 }, { 0x1ee39, 0x1ee39 }, { 0x1ee3b, 0x1ee3b },
	{ 0x1ee42, 0x1ee42 }, { 0x1ee47, 0x1ee47 }, { 0x1ee49, 0x1ee49 },
	{ 0x1ee4b, 0x1ee4b }, { 0x1ee4d, 0x1ee4f }, { 0x1ee51, 0x1ee52 },
	{ 0x1ee54, 0x1ee54 }, { 0x1ee57, 0x1ee57 }, { 0x1ee59, 0x1ee59 },
	{ 0x1ee5b, 0x1ee5b }, { 0x1ee5d, 0x1ee5d }, { 0x1ee5f, 0x1ee5f },
	{ 0x1ee61, 0x1ee62 }, { 0x1ee64, 0x1ee64 }, { 0x1ee67, 0x1ee6a },
	{ 0x1ee6c, 0x1ee72 }, { 0x1ee74, 0x1ee77 }, { 0x1ee79, 0x1ee7c },
	{ 0x1ee7e, 0x1ee7e }, { 0x1ee80, 0x1ee89 }, { 0x1ee8b, 0x1ee9b },
	{ 0x1eea1, 0x1eea3 }, { 0x1eea5, 0x1eea9 }, { 0x1eeab, 0x1eebb },
	{ 0x20000, 0x2a6df }, { 0x2a700, 0x2b738 }, { 0x2b740, 0x2b81d },
	{ 0x2b820, 0x2cea1 }, { 0x2ceb0, 0x2ebe0 }, { 0x2f800, 0x2fa1d },
	{ 0x30000, 0x3134a },
};

/* Nd Nl No above U+007F */
static const struct mm_ucd_range mm_ucd_number[133] = {
	{ 0x000b2, 0x000b3 }, { 0x000b9, 0x000b9 }, { 0x000bc, 0x000be },
	{ 0x00660, 0x00669 }, { 0x006f0, 0x006f9 }, { 0x007c0, 0x007c9 },
	{ 0x00966, 0x0096f }, { 0x009e6, 0x009ef }, { 0x009f4, 0x009f9 },
	{ 0x00a66, 0x00a6f }, { 0x00ae6, 0x00aef }, { 0x00b66, 0x00b6f },
	{ 0x00b72, 0x00b77 }, { 0x00be6, 0x00bf2 }, { 0x00c66, 0x00c6f },
	{ 0x00c78, 0x00c7e }, { 0x00ce6, 0x00cef }, { 0x00d58, 0x00d5e },
	{ 0x00d66, 0x00d78 }, { 0x00de6, 0x00def }, { 0x00e50, 0x00e59 },
	{ 0x00ed0, 0x00ed9 }, { 0x00f20, 0x00f33 }, { 0x01040, 0x01049 },
	{ 0x01090, 0x01099 }, { 0x01369, 0x0137c }, { 0x016ee, 0x016f0 },
	{ 0x017e0, 0x017e9 }, { 0x017f0, 0x017f9 }, { 0x01810, 0x01819 },
	{ 0x01946, 0x0194f }, { 0x019d0, 0x019da }, { 0x01a80, 0x01a89 },
	{ 0x01a90, 0x01a99 }, { 0x01b50, 0x01b59 }, { 0x01bb0, 0x01bb9 },
	{ 0x01c40, 0x01c49 }, { 0x01c50, 0x01c59 }, { 0x02070, 0x02070 },
	{ 0x02074, 0x02079 }, { 0x02080, 0x02089 }, { 0x02150, 0x02182 },
	{ 0x02185, 0x02189 }, { 0x02460, 0x0249b }, { 0x024ea, 0x024ff },
	{ 0x02776, 0x02793 }, { 0x02cfd, 0x02cfd }, { 0x03007, 0x03007 },
	{ 0x03021, 0x03029 }, { 0x03038, 0x0303a }, { 0x03192, 0x03195 },
	{ 0x03220, 0x03229 }, { 0x03248, 0x0324f }, { 0x03251, 0x0325f },
	{ 0x03280, 0x03289 }, { 0x032b1, 0x032bf }, { 0x0a620, 0x0a629 },
	{ 0x0a6e6, 0x0a6ef }, { 0x0a830, 0x0a835 }, { 0x0a8d0, 0x0a8d9 },
	{ 0x0a900, 0x0a909 }, { 0x0a9d0, 0x0a9d9 }, { 0x0a9f0, 0x0a9f9 },
	{ 0x0aa50, 0x0aa59 }, { 0x0abf0, 0x0abf9 }, { 0x0ff10, 0x0ff19 },
	{ 0x10107, 0x10133 }, { 0x10140, 0x10178 }, { 0x1018a, 0x1018b },
	{ 0x102e1, 0x102fb }, { 0x10320, 0x10323 }, { 0x10341, 0x10341 },
	{ 0x1034a, 0x1034a }, { 0x103d1, 0x103d5 }, { 0x104a0, 0x104a9 },
	{ 0x10858, 0x1085f }, { 0x10879, 0x1087f }, { 0x108a7, 0x108af },
	{ 0x108fb, 0x108ff }, { 0x10916, 0x1091b }, { 0x109bc, 0x109bd },
	{ 0x109c0, 0x109cf }, { 0x109d2, 0x109ff }, { 0x10a40, 0x10a48 },
	{ 0x10a7d, 0x10a7e }, { 0x10a9d, 0x10a9f }, { 0x10aeb, 0x10aef },
	{ 0x10b58, 0x10b5f }, { 0x10b78, 0x10b7f }, { 0x10ba9, 0x10baf },
	{ 0x10cfa, 0x10cff }, { 0x10d30, 0x10d39 }, { 0x10e60, 0x10e7e },
	{ 0x10f1d, 0x10f26 }, { 0x10f51, 0x10f54 }, { 0x10fc5, 0x10fcb },
	{ 0x11052, 0x1106f }, { 0x110f0, 0x110f9 }, { 0x11136, 0x1113f },
	{ 0x111d0, 0x111d9 }, { 0x111e1, 0x111f4 }, { 0x112f0, 0x112f9 },
	{ 0x11450, 0x11459 }, { 0x114d0, 0x114d9 }, { 0x11650, 0x11659 },
	{ 0x116c0, 0x116c9 }, { 0x11730, 0x1173b }, { 0x118e0, 0x118f2 },
	{ 0x11950, 0x11959 }, { 0x11c50, 0x11c6c }, { 0x11d50, 0x11d59 },
	{ 0x11da0, 0x11da9 }, { 0x11fc0, 0x11fd4 }, { 0x12400, 0x1246e },
	{ 0x16a60, 0x16a69 }, { 0x16ac0, 0x16ac9 }, { 0x16b50, 0x16b59 },
	{ 0x16b5b, 0x16b61 }, { 0x16e80, 0x16e96 }, { 0x1d2e0, 0x1d2f3 },
	{ 0x1d360, 0x1d378 }, { 0x1d7ce, 0x1d7ff }, { 0x1e140, 0x1e149 },
	{ 0x1e2f0, 0x1e2f9 }, { 0x1e8c7, 0x1e8cf }, { 0x1e950, 0x1e959 },
	{ 0x1ec71, 0x1ecab }, { 0x1ecad, 0x1ecaf }, { 0x1ecb1, 0x1ecb4 },
	{ 0x1ed01, 0x1ed2d }, { 0x1ed2f, 0x1ed3d }, { 0x1f100, 0x1f10c },
	{ 0x1fbf0, 0x1fbf9 },
};

/* Pc Pd Ps Pe Pi Pf Po above U+007F */
static const struct mm_ucd_range mm_ucd_punct[180] = {
	{ 0x000a1, 0x000a1 }, { 0x000a7, 0x000a7 }, { 0x000ab, 0x000ab },
	{ 0x000b6, 0x000b7 }, { 0x000bb, 0x000bb }, { 0x000bf, 0x000bf },
	{ 0x0037e, 0x0037e }, { 0x00387, 0x00387 }, { 0x0055a, 0x0055f },
	{ 0x00589, 0x0058a }, { 0x005be, 0x005be }, { 0x005c0, 0x005c0 },
	{ 0x005c3, 0x005c3 }, { 0x005c6, 0x005c6 }, { 0x005f3, 0x005f4 },
	{ 0x00609, 0x0060a }, { 0x0060c, 0x0060d }, { 0x0061b, 0x0061b },
	{ 0x0061d, 0x0061f }, { 0x0066a, 0x0066d }, { 0x006d4, 0x006d4 },
	{ 0x00700, 0x0070d }, { 0x007f7, 0x007f9 }, { 0x00830, 0x0083e },
	{ 0x0085e, 0x0085e }, { 0x00964, 0x00965 }, { 0x00970, 0x00970 },
	{ 0x009fd, 0x009fd }, { 0x00a76, 0x00a76 }, { 0x00af0, 0x00af0 },
	{ 0x00c77, 0x00c77 }, { 0x00c84, 0x00c84 }, { 0x00df4, 0x00df4 },
	{ 0x00e4f, 0x00e4f }, { 0x00e5a, 0x00e5b }, { 0x00f04, 0x00f12 },
	{ 0x00f14, 0x00f14 }, { 0x00f3a, 0x00f3d }, { 0x00f85, 0x00f85 },
	{ 0x00fd0, 0x00fd4 }, { 0x00fd9, 0x00fda }, { 0x0104a, 0x0104f },
	{ 0x010fb, 0x010fb }, { 0x01360, 0x01368 }, { 0x01400, 0x01400 },
	{ 0x0166e, 0x0166e }, { 0x0169b, 0x0169c }, { 0x016eb, 0x016ed },
	{ 0x01735, 0x01736 }, { 0x017d4, 0x017d6 }, { 0x017d8, 0x017da },
	{ 0x01800, 0x0180a }, { 0x01944, 0x01945 }, { 0x01a1e, 0x01a1f },
	{ 0x01aa0, 0x01aa6 }, { 0x01aa8, 0x01aad }, { 0x01b5a, 0x01b60 },
	{ 0x01b7d, 0x01b7e }, { 0x01bfc, 0x01bff }, { 0x01c3b, 0x01c3f },
	{ 0x01c7e, 0x01c7f }, { 0x01cc0, 0x01cc7 }, { 0x01cd3, 0x01cd3 },
	{ 0x02010, 0x02027 }, { 0x02030, 0x02043 }, { 0x02045, 0x02051 },
	{ 0x02053, 0x0205e }, { 0x0207d, 0x0207e }, { 0x0208d, 0x0208e },
	{ 0x02308, 0x0230b }, { 0x02329, 0x0232a }, { 0x02768, 0x02775 },
	{ 0x027c5, 0x027c6 }, { 0x027e6, 0x027ef }, { 0x02983, 0x02998 },
	{ 0x029d8, 0x029db }, { 0x029fc, 0x029fd }, { 0x02cf9, 0x02cfc },
	{ 0x02cfe, 0x02cff }, { 0x02d70, 0x02d70 }, { 0x02e00, 0x02e2e },
	{ 0x02e30, 0x02e4f }, { 0x02e52, 0x02e5d }, { 0x03001, 0x03003 },
	{ 0x03008, 0x03011 }, { 0x03014, 0x0301f }, { 0x03030, 0x03030 },
	{ 0x0303d, 0x0303d }, { 0x030a0, 0x030a0 }, { 0x030fb, 0x030fb },
	{ 0x0a4fe, 0x0a4ff }, { 0x0a60d, 0x0a60f }, { 0x0a673, 0x0a673 },
	{ 0x0a67e, 0x0a67e }, { 0x0a6f2, 0x0a6f7 }, { 0x0a874, 0x0a877 },
	{ 0x0a8ce, 0x0a8cf }, { 0x0a8f8, 0x0a8fa }, { 0x0a8fc, 0x0a8fc },
	{ 0x0a92e, 0x0a92f }, { 0x0a95f, 0x0a95f }, { 0x0a9c1, 0x0a9cd },
	{ 0x0a9de, 0x0a9df }, { 0x0aa5c, 0x0aa5f }, { 0x0aade, 0x0aadf },
	{ 0x0aaf0, 0x0aaf1 }, { 0x0abeb, 0x0abeb }, { 0x0fd3e, 0x0fd3f },
	{ 0x0fe10, 0x0fe19 }, { 0x0fe30, 0x0fe52 }, { 0x0fe54, 0x0fe61 },
	{ 0x0fe63, 0x0fe63 }, { 0x0fe68, 0x0fe68 }, { 0x0fe6a, 0x0fe6b },
	{ 0x0ff01, 0x0ff03 }, { 0x0ff05, 0x0ff0a }, { 0x0ff0c, 0x0ff0f },
	{ 0x0ff1a, 0x0ff1b }, { 0x0ff1f, 0x0ff20 }, { 0x0ff3b, 0x0ff3d },
	{ 0x0ff3f, 0x0ff3f }, { 0x0ff5b, 0x0ff5b }, { 0x0ff5d, 0x0ff5d },
	{ 0x0ff5f, 0x0ff65 }, { 0x10100, 0x10102 }, { 0x1039f, 0x1039f },
	{ 0x103d0, 0x103d0 }, { 0x1056f, 0x1056f }, { 0x10857, 0x10857 },
	{ 0x1091f, 0x1091f }, { 0x1093f, 0x1093f }, { 0x10a50, 0x10a58 },
	{ 0x10a7f, 0x10a7f }, { 0x10af0, 0x10af6 }, { 0x10b39, 0x10b3f },
	{ 0x10b99, 0x10b9c }, { 0x10ead, 0x10ead }, { 0x10f55, 0x10f59 },
	{ 0x10f86, 0x10f89 }, { 0x11047, 0x1104d }, { 0x110bb, 0x110bc },
	{ 0x110be, 0x110c1 }, { 0x11140, 0x11143 }, { 0x11174, 0x11175 },
	{ 0x111c5, 0x111c8 }, { 0x111cd, 0x111cd }, { 0x111db, 0x111db },
	{ 0x111dd, 0x111df }, { 0x11238, 0x1123d }, { 0x112a9, 0x112a9 },
	{ 0x1144b, 0x1144f }, { 0x1145a, 0x1145b }, { 0x1145d, 0x1145d },
	{ 0x114c6, 0x114c6 }, { 0x115c1, 0x115d7 }, { 0x11641, 0x11643 },
	{ 0x11660, 0x1166c }, { 0x116b9, 0x116b9 }, { 0x1173c, 0x1173e },
	{ 0x1183b, 0x1183b }, { 0x11944, 0x11946 }, { 0x119e2, 0x119e2 },
	{ 0x11a3f, 0x11a46 }, { 0x11a9a, 0x11a9c }, { 0x11a9e, 0x11aa2 },
	{ 0x11c41, 0x11c45 }, { 0x11c70, 0x11c71 }, { 0x11ef7, 0x11ef8 },
	{ 0x11fff, 0x11fff }, { 0x12470, 0x12474 }, { 0x12ff1, 0x12ff2 },
	{ 0x16a6e, 0x16a6f }, { 0x16af5, 0x16af5 }, { 0x16b37, 0x16b3b },
	{ 0x16b44, 0x16b44 }, { 0x16e97, 0x16e9a }, { 0x16fe2, 0x16fe2 },
	{ 0x1bc9f, 0x1bc9f }, { 0x1da87, 0x1da8b }, { 0x1e95e, 0x1e95f },
};

/* END ucd_gen.py */

static int mm_ucd_in(const struct mm_ucd_range *r, size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < r[mid].lo)
			hi = mid;
		else if (c > r[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

#define MM_UCD_IN(tab, c) mm_ucd_in(tab, sizeof(tab) / sizeof(tab[0]), c)

/* \p{N}: Nd, Nl, No */
static int mm_cp_digit(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_number, c);
}

/* \p{L}: Lu, Ll, Lt, Lm, Lo */
static int mm_cp_letter(uint32_t c)
{
	if (c < 0x80)
		return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_letter, c);
}

/* \p{P}: ASCII !"#%&'()*,-./:;?@[\]_{} and P* above */
static int mm_cp_punct(uint32_t c)
{
	if (c < 0x80)
		return c > 0x20 && c < 0x7f && !mm_cp_letter(c) &&
		       !mm_cp_digit(c) && !strchr("$+<=>^`|~", (int)c);
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_punct, c);
}

/*
 * DeepSeek LLM's letter class, the literal set of its pre-tokenizer regex
 * (cased letters of Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee,
 * Glagolitic, Coptic, Deseret, Osage, ... ; not CJK or Arabic).
 */
static const struct mm_ucd_range mm_ds_letter[] = {
	{ 0x00041, 0x0005a }, { 0x00061, 0x0007a }, { 0x000b5, 0x000b5 },
	{ 0x000c0, 0x000d6 }, { 0x000d8, 0x000f6 }, { 0x000f8, 0x001ba },
	{ 0x001bc, 0x001bf }, { 0x001c4, 0x00293 }, { 0x00295, 0x002af },
	{ 0x00370, 0x00373 }, { 0x00376, 0x00377 }, { 0x0037b, 0x0037d },
	{ 0x0037f, 0x0037f }, { 0x00386, 0x00386 }, { 0x00388, 0x0038a },
	{ 0x0038c, 0x0038c }, { 0x0038e, 0x003a1 }, { 0x003a3, 0x003f5 },
	{ 0x003f7, 0x00481 }, { 0x0048a, 0x0052f }, { 0x00531, 0x00556 },
	{ 0x010a0, 0x010c5 }, { 0x013a0, 0x013f5 }, { 0x013f8, 0x013fd },
	{ 0x01c90, 0x01cba }, { 0x01cbd, 0x01cbf }, { 0x01d00, 0x01d2b },
	{ 0x01d6b, 0x01d77 }, { 0x01d79, 0x01d9a }, { 0x01e00, 0x01f15 },
	{ 0x01f18, 0x01f1d }, { 0x01f20, 0x01f45 }, { 0x01f48, 0x01f4d },
	{ 0x01f50, 0x01f57 }, { 0x01f59, 0x01f59 }, { 0x01f5b, 0x01f5b },
	{ 0x01f5d, 0x01f5d }, { 0x01f5f, 0x01f7d }, { 0x01f80, 0x01fb4 },
	{ 0x01fb6, 0x01fbc }, { 0x01fbe, 0x01fbe }, { 0x01fc2, 0x01fc4 },
	{ 0x01fc6, 0x01fcc }, { 0x01fd0, 0x01fd3 }, { 0x01fd6, 0x01fdb },
	{ 0x01fe0, 0x01fec }, { 0x01ff2, 0x01ff4 }, { 0x01ff6, 0x01ffc },
	{ 0x02102, 0x02102 }, { 0x02107, 0x02107 }, { 0x0210a, 0x02113 },
	{ 0x02115, 0x02115 }, { 0x02119, 0x0211d }, { 0x02124, 0x02124 },
	{ 0x02126, 0x02126 }, { 0x02128, 0x02128 }, { 0x0212a, 0x0212d },
	{ 0x0212f, 0x02134 }, { 0x02139, 0x02139 }, { 0x0213c, 0x0213f },
	{ 0x02145, 0x02149 }, { 0x0214e, 0x0214e }, { 0x02183, 0x02184 },
	{ 0x02c00, 0x02c7b }, { 0x02c7e, 0x02ce4 }, { 0x02ceb, 0x02cee },
	{ 0x02cf2, 0x02cf3 }, { 0x0a640, 0x0a66d }, { 0x0a680, 0x0a69b },
	{ 0x0a722, 0x0a76f }, { 0x0a771, 0x0a787 }, { 0x0a78b, 0x0a78e },
	{ 0x0ab70, 0x0abbf }, { 0x0fb00, 0x0fb06 }, { 0x0fb13, 0x0fb17 },
	{ 0x0ff21, 0x0ff3a }, { 0x0ff41, 0x0ff5a }, { 0x10400, 0x1044f },
	{ 0x104b0, 0x104d3 }, { 0x104d8, 0x104fb }, { 0x10c80, 0x10cb2 },
	{ 0x10cc0, 0x10cf2 }, { 0x118a0, 0x118df }, { 0x1e900, 0x1e943 },
};

/* DeepSeek LLM's "\s?[!-/:-~！-／：-～‘-‟　-。]+" set */
static int mm_ds_punct(uint32_t c)
{
	return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x7e) ||
	       (c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff5e) ||
	       (c >= 0x2018 && c <= 0x201f) || (c >= 0x3000 && c <= 0x3002);
}

/* DeepSeek's "[一-龥ࠀ-一가-퟿]+": U+0800..U+9FA5 and U+AC00..U+D7FF */
static int mm_ds_cjk(uint32_t c)
{
	return (c >= 0x800 && c <= 0x9fa5) || (c >= 0xac00 && c <= 0xd7ff);
}

/* ---- merges hash ------------------------------------------------------ */

static uint64_t mm_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static const struct mm_merge_slot *mm_merge_get(const struct mm_tok *t,
						int32_t a, int32_t b)
{
	uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
	size_t j;

	if (!t->merge_cap)
		return NULL;
	for (j = mm_mix(key) & (t->merge_cap - 1); t->merge[j].key;
	     j = (j + 1) & (t->merge_cap - 1))
		if (t->merge[j].key == key)
			return &t->merge[j];
	return NULL;
}

static void mm_merge_put(struct mm_tok *t, int32_t a, int32_t b, int32_t rank,
			 int32_t result)
{
	uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
	size_t j;

	for (j = mm_mix(key) & (t->merge_cap - 1); t->merge[j].key;
	     j = (j + 1) & (t->merge_cap - 1))
		if (t->merge[j].key == key)
			return;	/* keep the first (lowest) rank */
	t->merge[j].key = key;
	t->merge[j].rank = rank;
	t->merge[j].result = result;
}

/* ---- loading ---------------------------------------------------------- */

static const char *mm_tok_str(const struct mm_tok *t, int32_t id)
{
	return t->arena + t->off[id];
}

int32_t mm_tok_find(const struct mm_tok *t, const char *text)
{
	int64_t v = mm_strmap_get(&t->map, text, strlen(text));

	return v < 0 ? -1 : (int32_t)v;
}

static int32_t mm_tok_findn(const struct mm_tok *t, const char *s, size_t n)
{
	int64_t v = mm_strmap_get(&t->map, s, n);

	return v < 0 ? -1 : (int32_t)v;
}

static int mm_tok_id_key(const struct mm_gguf *g, const char *key,
			 int32_t n_vocab, int32_t *id, char *err, size_t errlen)
{
	uint32_t v;
	int ret = mm_gguf_get_u32(g, key, &v);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return mm_errf(-EINVAL, err, errlen, "key '%s': expected an unsigned token id",
				   key);
	if (v >= (uint32_t)n_vocab) {
		/* llama.cpp writes -1 as u32 for "none" in some converters */
		if (v == UINT32_MAX) {
			*id = -1;
			return 0;
		}
		return mm_errf(-EINVAL, err, errlen, "key '%s': token id %u is outside the vocab (%d tokens)",
				   key, v, n_vocab);
	}
	*id = (int32_t)v;
	return 0;
}

static int mm_tok_cmp_len_desc(const void *a, const void *b, void *arg)
{
	const struct mm_tok *t = arg;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	if (t->len[x] != t->len[y])
		return t->len[x] > t->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void mm_tok_byte_map(struct mm_tok *t)
{
	uint32_t n = 0;

	for (int i = 0; i < 512; i++)
		t->cp2byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int keep = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
			   (b >= 0xae && b <= 0xff);

		t->byte2cp[b] = keep ? (uint32_t)b : 256 + n++;
		t->cp2byte[t->byte2cp[b]] = (int16_t)b;
	}
}

static int mm_tok_load_merges(struct mm_tok *t, const struct mm_gguf *g,
			      char *err, size_t errlen)
{
	const struct mm_gguf_kv *kv = mm_gguf_find(g, "tokenizer.ggml.merges");
	uint32_t et;
	uint64_t n;

	if (!kv)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': missing (required for the gpt2 tokenizer)");
	if (mm_gguf_arr(kv, &et, &n) || et != MM_GGUF_STR)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': expected an array of strings");
	if (n > INT32_MAX)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': %" PRIu64 " merges is too many",
				   n);
	t->merge_cap = 16;
	while (t->merge_cap < 2 * n)
		t->merge_cap *= 2;
	t->merge = calloc(t->merge_cap, sizeof(*t->merge));
	if (!t->merge)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		int32_t a, b, r;
		const char *s;
		size_t len, sp;

		mm_gguf_arr_str(kv, i, &s, &len);
		/* split at the first space after the first byte (llama.cpp) */
		for (sp = 1; sp < len && s[sp] != ' '; sp++)
			;
		if (sp >= len)
			return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': merge %" PRIu64
					   " has no space separating its two tokens", i);
		a = mm_tok_findn(t, s, sp);
		b = mm_tok_findn(t, s + sp + 1, len - sp - 1);
		if (a < 0 || b < 0 || t->len[a] + (size_t)t->len[b] > 4096)
			continue;	/* cannot apply: skip like a dead merge */
		{
			char buf[4096];

			memcpy(buf, s, sp);
			memcpy(buf + sp, s + sp + 1, len - sp - 1);
			r = mm_tok_findn(t, buf, len - 1);
		}
		if (r < 0)
			continue;
		mm_merge_put(t, a, b, (int32_t)i, r);
	}
	return 0;
}

static int mm_tok_load_pre(struct mm_tok *t, const struct mm_gguf *g,
			   char *err, size_t errlen);

int mm_tok_load(const struct mm_gguf *g, struct mm_tok **out, char *err,
		size_t errlen)
{
	const struct mm_gguf_kv *tokens, *scores, *types;
	const char *model, *s;
	struct mm_tok *t;
	uint64_t n, total = 0, pos = 0;
	uint32_t et;
	size_t len;
	int ret;

	if (err && errlen)
		err[0] = 0;
	*out = NULL;
	ret = mm_gguf_get_str(g, "tokenizer.ggml.model", &model, NULL);
	if (ret)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.model': %s",
				   ret == -ENOENT ? "missing" : "expected a string");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (!strcmp(model, "llama")) {
		t->kind = MM_TOK_SPM;
	} else if (!strcmp(model, "gpt2")) {
		t->kind = MM_TOK_BPE;
	} else {
		ret = -ENOTSUP;
		mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.model': tokenizer '%.32s' is not supported (llama and gpt2 are)",
			    model);
		goto fail;
	}

	tokens = mm_gguf_find(g, "tokenizer.ggml.tokens");
	if (!tokens || mm_gguf_arr(tokens, &et, &n) || et != MM_GGUF_STR) {
		ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': %s",
				  tokens ? "expected an array of strings" : "missing");
		goto fail;
	}
	if (!n || n > INT32_MAX) {
		ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': %" PRIu64
				  " tokens is not a usable vocab size", n);
		goto fail;
	}
	t->n_vocab = (int32_t)n;
	t->off = malloc(n * sizeof(*t->off));
	t->len = malloc(n * sizeof(*t->len));
	t->score = calloc(n, sizeof(*t->score));
	t->attr = malloc(n);
	if (!t->off || !t->len || !t->score || !t->attr)
		goto nomem;
	/* each length taken once (the parser's, mm_gguf_arr_str()): the
	 * arena is sized and filled with the same numbers */
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		if (len > UINT32_MAX) {
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': token %" PRIu64
					  " is too long", i);
			goto fail;
		}
		t->len[i] = (uint32_t)len;
		total += len + 1;	/* bounded by the file size */
	}
	t->arena = malloc(total);
	if (!t->arena)
		goto nomem;
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		memcpy(t->arena + pos, s, t->len[i]);
		t->arena[pos + t->len[i]] = 0;
		t->off[i] = pos;
		t->attr[i] = MM_TOK_NORMAL;
		pos += t->len[i] + 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		ret = mm_strmap_put(&t->map, t->arena + t->off[i], t->len[i],
				    (int64_t)i);
		if (ret < 0)
			goto nomem;
	}

	scores = mm_gguf_find(g, "tokenizer.ggml.scores");
	if (scores) {
		uint64_t sn;

		if (mm_gguf_arr(scores, &et, &sn) ||
		    (et != MM_GGUF_F32 && et != MM_GGUF_F64) || sn != n) {
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.scores': expected %" PRIu64
					  " f32 values, one per token", n);
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++)
			mm_gguf_arr_f32(scores, i, &t->score[i]);
	}
	types = mm_gguf_find(g, "tokenizer.ggml.token_type");
	if (types) {
		uint64_t tn;

		if (mm_gguf_arr(types, &et, &tn) || tn != n ||
		    et == MM_GGUF_STR || et == MM_GGUF_F32 ||
		    et == MM_GGUF_F64 || et == MM_GGUF_BOOL) {
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.token_type': expected %" PRIu64
					  " integers, one per token", n);
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++) {
			int32_t v;

			if (mm_gguf_arr_i32(types, i, &v) || v < 0 || v > 6) {
				ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.token_type': token %" PRIu64
						  " has an invalid type", i);
				goto fail;
			}
			t->attr[i] = v ? (uint8_t)v : MM_TOK_NORMAL;
		}
	}

	t->bos = t->eos = t->unk = t->eot = t->im_end = -1;
	if (t->kind == MM_TOK_SPM) {
		t->unk = t->n_vocab > 0 ? 0 : -1;
		t->bos = t->n_vocab > 1 ? 1 : -1;
		t->eos = t->n_vocab > 2 ? 2 : -1;
		t->add_bos = 1;
		t->add_space_prefix = 1;
	}
	if ((ret = mm_tok_id_key(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.eot_token_id", t->n_vocab, &t->eot, err, errlen)))
		goto fail;
	if (t->kind == MM_TOK_BPE) {
		ret = mm_tok_load_pre(t, g, err, errlen);
		if (ret)
			goto fail;
	}
	{
		int b;

		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b))
			t->add_bos = b;
		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b))
			t->add_space_prefix = b;
	}
	t->im_end = mm_tok_find(t, "<|im_end|>");
	if (!mm_gguf_get_str(g, "tokenizer.chat_template", &s, &len)) {
		t->chat_template = malloc(len + 1);
		if (!t->chat_template)
			goto nomem;
		memcpy(t->chat_template, s, len + 1);
	}

	/* specials: control and user-defined tokens, longest first */
	t->special = malloc(n * sizeof(*t->special));
	if (!t->special)
		goto nomem;
	for (int32_t i = 0; i < t->n_vocab; i++) {
		if ((t->attr[i] == MM_TOK_CONTROL || t->attr[i] == MM_TOK_USER) &&
		    t->len[i]) {
			t->special[t->n_special++] = i;
			t->special_first[(uint8_t)mm_tok_str(t, i)[0]] = 1;
		}
	}
	qsort_r(t->special, (size_t)t->n_special, sizeof(*t->special),
		mm_tok_cmp_len_desc, t);

	for (int b = 0; b < 256; b++)
		t->byte_tok[b] = -1;
	if (t->kind == MM_TOK_BPE) {
		mm_tok_byte_map(t);
		for (int b = 0; b < 256; b++) {
			char buf[4];
			size_t l = mm_utf8_put(t->byte2cp[b], buf);

			t->byte_tok[b] = mm_tok_findn(t, buf, l);
		}
		ret = mm_tok_load_merges(t, g, err, errlen);
		if (ret)
			goto fail;
	} else {
		for (int b = 0; b < 256; b++) {
			char buf[8];

			snprintf(buf, sizeof(buf), "<0x%02X>", b);
			t->byte_tok[b] = mm_tok_find(t, buf);
		}
	}
	*out = t;
	return 0;

nomem:
	ret = -ENOMEM;
	mm_errf(-EINVAL, err, errlen, "out of memory loading the tokenizer");
fail:
	mm_tok_free(t);
	return ret;
}

void mm_tok_free(struct mm_tok *t)
{
	if (!t)
		return;
	free(t->arena);
	free(t->off);
	free(t->len);
	free(t->score);
	free(t->attr);
	mm_strmap_free(&t->map);
	free(t->special);
	free(t->merge);
	free(t->chat_template);
	free(t);
}

/* ---- encoding --------------------------------------------------------- */

struct mm_ids {
	int32_t *ids;
	int max;
	int n;
	int overflow;
};

static void mm_ids_push(struct mm_ids *o, int32_t id)
{
	if (o->n < o->max)
		o->ids[o->n] = id;
	if (o->n == INT32_MAX)
		o->overflow = 1;
	else
		o->n++;
}

static int mm_tok_byte_fallback(const struct mm_tok *t, struct mm_ids *o,
				const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int32_t id = t->byte_tok[s[i]];

		if (id < 0)
			id = t->unk;
		if (id < 0)
			return -EILSEQ;
		mm_ids_push(o, id);
		if (t->byte_tok[s[i]] < 0 && t->kind == MM_TOK_SPM)
			break;	/* one <unk> per character, like llama.cpp */
	}
	return 0;
}

/* BPE: one pre-tokenized piece. sym holds ids; O(n^2) in the piece. */
static int mm_bpe_word(const struct mm_tok *t, const uint8_t *s, size_t n,
		       struct mm_ids *o)
{
	int32_t stack[64], *sym = stack;
	size_t cnt = 0;
	int ret = 0;

	if (t->ignore_merges && n > 1 && n <= 256) {
		/* llama.cpp (Llama 3): a piece that is a token is kept whole */
		char buf[512];
		size_t k = 0;
		int32_t id;

		for (size_t i = 0; i < n; i++)
			k += mm_utf8_put(t->byte2cp[s[i]], buf + k);
		id = mm_tok_findn(t, buf, k);
		if (id >= 0) {
			mm_ids_push(o, id);
			return 0;
		}
	}
	if (n > 64) {
		sym = malloc(n * sizeof(*sym));
		if (!sym)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		sym[cnt] = t->byte_tok[s[i]];
		if (sym[cnt] < 0) {
			if (t->unk < 0) {
				ret = -EILSEQ;
				goto out;
			}
			sym[cnt] = t->unk;
		}
		cnt++;
	}
	while (cnt > 1) {
		int32_t best_rank = INT32_MAX, best_res = -1;
		size_t best = 0;

		for (size_t i = 0; i + 1 < cnt; i++) {
			const struct mm_merge_slot *m =
				mm_merge_get(t, sym[i], sym[i + 1]);

			if (m && m->rank < best_rank) {
				best_rank = m->rank;
				best_res = m->result;
				best = i;
			}
		}
		if (best_res < 0)
			break;
		sym[best] = best_res;
		memmove(&sym[best + 1], &sym[best + 2],
			(cnt - best - 2) * sizeof(*sym));
		cnt--;
	}
	for (size_t i = 0; i < cnt; i++)
		mm_ids_push(o, sym[i]);
out:
	if (sym != stack)
		free(sym);
	return ret;
}

/*
 * ---- pre-tokenizers ----------------------------------------------------
 *
 * llama.cpp splits a text fragment with a list of regexes per
 * tokenizer.ggml.pre value, applied in turn: each regex splits every piece
 * the previous one left into its matches and the gaps between them (a
 * piece is a separate subject: lookaheads and "$" stop at its end). Each
 * regex is one matcher here; a matcher returns the end of its match at p
 * within [p, e), or p when there is none (then *resume says where the
 * search goes on).
 */
#define MM_CP_END 0xffffffffu

struct mm_pre_in {
	const uint8_t *s;
	size_t n;
};

typedef size_t (*mm_pre_fn)(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume);

static uint32_t mm_pre_cp(const struct mm_pre_in *in, size_t p, size_t e,
			  size_t *cl)
{
	if (p >= e) {
		*cl = 0;
		return MM_CP_END;
	}
	return mm_utf8_next(in->s, in->n, p, cl);
}

/* \s: llama.cpp's whitespace set (collapsed to \x0B for std::regex) */
static int mm_ws(uint32_t c)
{
	return c != MM_CP_END && mm_cp_space(c);
}

/* neither \s, \p{L} nor \p{N} (invalid UTF-8 counts as U+FFFD, a symbol) */
static int mm_other(uint32_t c)
{
	return c != MM_CP_END && !mm_cp_space(c) && !mm_cp_letter(c) &&
	       !mm_cp_digit(c);
}

/* end of the run of code points at p that pass f */
static size_t mm_pre_run(const struct mm_pre_in *in, size_t p, size_t e,
			 int (*f)(uint32_t))
{
	size_t cl;

	while (p < e && f(mm_pre_cp(in, p, e, &cl)))
		p += cl;
	return p;
}

static int mm_is_nl(uint32_t c)
{
	return c == '\r' || c == '\n';
}

/*
 * The tail both GPT-2 and Llama 3 end with: \s+(?!\S)|\s+ (whitespace up
 * to, not including, the last one before a non-space; else all of it),
 * for a whitespace run starting at p.
 */
static size_t mm_pre_ws_tail(const struct mm_pre_in *in, size_t p, size_t e)
{
	size_t q = p, last = p, cl;

	while (q < e && mm_ws(mm_pre_cp(in, q, e, &cl))) {
		last = q;
		q += cl;
	}
	if (q < e && last > p)
		return last;
	return q;
}

/*
 * GPT-2:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (llama.cpp's custom splitter, which also takes the final \s+).
 */
static size_t mm_pre_gpt2(const struct mm_pre_in *in, size_t p, size_t e,
			  size_t *resume)
{
	size_t cl, cl2, q;
	uint32_t c = mm_pre_cp(in, p, e, &cl), c2;

	*resume = p + cl;
	if (c == '\'' && p + 1 < e) {
		uint8_t a = in->s[p + 1], b = p + 2 < e ? in->s[p + 2] : 0;

		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return p + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
		    (a == 'l' && b == 'l'))
			return p + 3;
	}
	q = p;
	c2 = c;
	if (c == ' ') {
		c2 = mm_pre_cp(in, p + 1, e, &cl2);
		q = p + 1;
	}
	if (mm_cp_letter(c2) && c2 != MM_CP_END)
		return mm_pre_run(in, q, e, mm_cp_letter);
	if (mm_cp_digit(c2) && c2 != MM_CP_END)
		return mm_pre_run(in, q, e, mm_cp_digit);
	if (mm_other(c2))
		return mm_pre_run(in, q, e, mm_other);
	return mm_pre_ws_tail(in, p, e);
}

/*
 * Llama 3 (max_digits 3) and Qwen2 (1):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
static size_t mm_pre_llama3_n(const struct mm_pre_in *in, size_t p, size_t e,
			      size_t *resume, int max_digits)
{
	size_t cl, cl2, q, last_nl;
	uint32_t c = mm_pre_cp(in, p, e, &cl), c2;

	*resume = p + cl;
	if (c == '\'' && p + 1 < e) {
		uint8_t a = in->s[p + 1] | 0x20;
		uint8_t b = p + 2 < e ? in->s[p + 2] | 0x20 : 0;

		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return p + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
		    (a == 'l' && b == 'l'))
			return p + 3;
	}
	c2 = mm_pre_cp(in, p + cl, e, &cl2);
	if (!mm_is_nl(c) && !mm_cp_digit(c) &&
	    (mm_cp_letter(c) || (c2 != MM_CP_END && mm_cp_letter(c2))))
		return mm_pre_run(in, p + cl, e, mm_cp_letter);
	if (mm_cp_digit(c)) {
		q = p;
		for (int k = 0; k < max_digits && q < e &&
		     mm_cp_digit(mm_pre_cp(in, q, e, &cl2)); k++)
			q += cl2;
		return q;
	}
	q = p;
	c2 = c;
	if (c == ' ') {
		c2 = mm_pre_cp(in, p + 1, e, &cl2);
		q = p + 1;
	}
	if (mm_other(c2)) {
		q = mm_pre_run(in, q, e, mm_other);
		return mm_pre_run(in, q, e, mm_is_nl);
	}
	/* \s*[\r\n]+: up to the last newline of the whitespace run */
	last_nl = p;
	for (q = p; q < e;) {
		c2 = mm_pre_cp(in, q, e, &cl2);
		if (!mm_ws(c2))
			break;
		q += cl2;
		if (mm_is_nl(c2))
			last_nl = q;
	}
	if (last_nl > p)
		return last_nl;
	return mm_pre_ws_tail(in, p, e);
}

static size_t mm_pre_llama3(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume)
{
	return mm_pre_llama3_n(in, p, e, resume, 3);
}

static size_t mm_pre_qwen2(const struct mm_pre_in *in, size_t p, size_t e,
			   size_t *resume)
{
	return mm_pre_llama3_n(in, p, e, resume, 1);
}

/* a run of code points passing f (at least one), at most max of them */
static size_t mm_pre_class(const struct mm_pre_in *in, size_t p, size_t e,
			   size_t *resume, int (*f)(uint32_t), int max)
{
	size_t cl, q = p;
	int k = 0;

	mm_pre_cp(in, p, e, &cl);
	*resume = p + cl;
	while (q < e && (max <= 0 || k < max) &&
	       f(mm_pre_cp(in, q, e, &cl))) {
		q += cl;
		k++;
	}
	return q;
}

/* \s?X+: an optional whitespace, then a run of f */
static size_t mm_pre_opt_ws_run(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *resume, int (*f)(uint32_t))
{
	size_t cl, cl2;
	uint32_t c = mm_pre_cp(in, p, e, &cl);

	*resume = p + cl;
	if (mm_ws(c) && p + cl < e && f(mm_pre_cp(in, p + cl, e, &cl2)))
		return mm_pre_run(in, p + cl, e, f);
	if (c != MM_CP_END && f(c))
		return mm_pre_run(in, p, e, f);
	return p;
}

static int mm_is_ascii_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

/* [\p{P}\$\+<=>\^~\|`] (falcon) */
static int mm_falcon_punct(uint32_t c)
{
	return mm_cp_punct(c) || (c < 0x80 && strchr("$+<=>^~|`", (int)c) && c);
}

/* [\p{P}\$\+<=>\^~\|] (default) */
static int mm_default_punct(uint32_t c)
{
	return mm_cp_punct(c) || (c < 0x80 && strchr("$+<=>^~|", (int)c) && c);
}

static int mm_ds_letter_f(uint32_t c)
{
	return c != MM_CP_END && !(c & 0x80000000u) &&
	       MM_UCD_IN(mm_ds_letter, c);
}

static int mm_digit_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_digit(c);
}

static int mm_letter_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_letter(c);
}

static int mm_punct_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_punct(c);
}

static size_t mm_pre_nl(const struct mm_pre_in *in, size_t p, size_t e,
			size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_is_nl, 1);
}

static size_t mm_pre_digit1(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_digit_f, 1);
}

static size_t mm_pre_digits(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_digit_f, 0);
}

/* [0-9][0-9][0-9] */
static size_t mm_pre_digit3(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	size_t q = mm_pre_class(in, p, e, r, mm_is_ascii_digit, 3);

	return q - p == 3 ? q : p;
}

static size_t mm_pre_falcon_punct(const struct mm_pre_in *in, size_t p,
				  size_t e, size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_falcon_punct, 0);
}

static size_t mm_pre_default_punct(const struct mm_pre_in *in, size_t p,
				   size_t e, size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_default_punct, 0);
}

static size_t mm_pre_ds_cjk(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_ds_cjk, 0);
}

static size_t mm_pre_ds_letters(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_ds_letter_f);
}

static size_t mm_pre_ds_puncts(const struct mm_pre_in *in, size_t p,
			       size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_ds_punct);
}

static size_t mm_pre_ws_letters(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_letter_f);
}

static size_t mm_pre_ws_puncts(const struct mm_pre_in *in, size_t p,
			       size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_punct_f);
}

/* \s+$: the whitespace that ends the piece */
static size_t mm_pre_ws_end(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume)
{
	size_t q = mm_pre_run(in, p, e, mm_ws), cl;

	if (q == p) {
		mm_pre_cp(in, p, e, &cl);
		*resume = p + cl;
		return p;
	}
	*resume = q;
	return q == e ? q : p;
}

enum mm_pre_type {
	MM_PRE_DEFAULT,
	MM_PRE_GPT2,
	MM_PRE_STARCODER,	/* also refact, smollm */
	MM_PRE_LLAMA3,
	MM_PRE_QWEN2,
	MM_PRE_DEEPSEEK_LLM,
	MM_PRE_DEEPSEEK_CODER,
	MM_PRE_FALCON,
};

static const struct {
	const char *name;
	enum mm_pre_type type;
} mm_pre_names[] = {
	{ "default", MM_PRE_DEFAULT },
	{ "gpt-2", MM_PRE_GPT2 },
	{ "starcoder", MM_PRE_STARCODER },
	{ "refact", MM_PRE_STARCODER },
	{ "smollm", MM_PRE_STARCODER },
	{ "llama-bpe", MM_PRE_LLAMA3 },
	{ "llama3", MM_PRE_LLAMA3 },
	{ "llama-v3", MM_PRE_LLAMA3 },
	{ "qwen2", MM_PRE_QWEN2 },
	{ "deepseek-r1-qwen", MM_PRE_QWEN2 },
	{ "deepseek-llm", MM_PRE_DEEPSEEK_LLM },
	{ "deepseek-coder", MM_PRE_DEEPSEEK_CODER },
	{ "falcon", MM_PRE_FALCON },
};

#define MM_PRE_MAX_PASSES 6

static const mm_pre_fn mm_pre_passes[][MM_PRE_MAX_PASSES + 1] = {
	[MM_PRE_DEFAULT] = { mm_pre_default_punct, mm_pre_gpt2, mm_pre_digits,
			     mm_pre_digit3 },
	[MM_PRE_GPT2] = { mm_pre_gpt2 },
	[MM_PRE_STARCODER] = { mm_pre_digit1, mm_pre_gpt2 },
	[MM_PRE_LLAMA3] = { mm_pre_llama3 },
	[MM_PRE_QWEN2] = { mm_pre_qwen2 },
	[MM_PRE_DEEPSEEK_LLM] = { mm_pre_nl, mm_pre_ds_letters,
				  mm_pre_ds_puncts, mm_pre_ws_end,
				  mm_pre_ds_cjk, mm_pre_digits },
	[MM_PRE_DEEPSEEK_CODER] = { mm_pre_nl, mm_pre_ws_letters,
				    mm_pre_ws_puncts, mm_pre_ds_cjk,
				    mm_pre_digit1 },
	[MM_PRE_FALCON] = { mm_pre_falcon_punct, mm_pre_gpt2, mm_pre_digit3 },
};

/* One regex over every piece of in[]: matches and gaps into out[]. */
static size_t mm_pre_pass(const struct mm_pre_in *in, mm_pre_fn fn,
			  const size_t *len, size_t n, size_t *out)
{
	size_t start = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t e = start + len[i], p = start, gap = start;

		while (p < e) {
			size_t resume, q = fn(in, p, e, &resume);

			if (q > p) {
				if (p > gap)
					out[k++] = p - gap;
				out[k++] = q - p;
				p = gap = q;
			} else {
				p = resume;
			}
		}
		if (e > gap)
			out[k++] = e - gap;
		start = e;
	}
	return k;
}

/*
 * Splits s[0..n) with the rules of pre into pieces; *lens (malloc'd, the
 * caller frees) gets their byte lengths. Returns the count or -ENOMEM.
 */
static long mm_pre_split(int pre, const uint8_t *s, size_t n, size_t **lens)
{
	struct mm_pre_in in = { s, n };
	size_t *a, *b, cnt = 1;

	*lens = NULL;
	a = malloc((n + 1) * sizeof(*a));
	b = malloc((n + 1) * sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	a[0] = n;
	for (int k = 0; k < MM_PRE_MAX_PASSES && mm_pre_passes[pre][k]; k++) {
		size_t *t;

		cnt = mm_pre_pass(&in, mm_pre_passes[pre][k], a, cnt, b);
		t = a;
		a = b;
		b = t;
	}
	free(b);
	*lens = a;
	return (long)cnt;
}

/*
 * tokenizer.ggml.pre as llama.cpp reads it for a BPE vocab: missing means
 * "default" (llama.cpp warns and uses its default rules); a value it does
 * not know is refused. Every name in mm_pre_names is one llama.cpp's
 * llama-vocab.cpp accepts, spelled as it spells it (GPT-2's is "gpt-2":
 * llama.cpp refuses "gpt2").
 */
static int mm_tok_load_pre(struct mm_tok *t, const struct mm_gguf *g,
			   char *err, size_t errlen)
{
	const char *s;
	size_t len;
	int ret = mm_gguf_get_str(g, "tokenizer.ggml.pre", &s, &len);

	t->pre = MM_PRE_DEFAULT;
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': expected a string");
	for (size_t i = 0; i < sizeof(mm_pre_names) / sizeof(mm_pre_names[0]); i++) {
		if (strlen(mm_pre_names[i].name) == len &&
		    !memcmp(mm_pre_names[i].name, s, len)) {
			t->pre = mm_pre_names[i].type;
			if (t->pre == MM_PRE_LLAMA3) {
				t->ignore_merges = 1;
				t->add_bos = 1;
			}
			return 0;
		}
	}
	mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': pre-tokenizer '%.*s' is not supported (default, gpt-2, smollm, starcoder, refact, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, deepseek-llm, deepseek-coder, falcon are)",
		    (int)(len > 64 ? 64 : len), s);
	return -ENOTSUP;
}

/* For tests: the pre-tokenizer of a tokenizer.ggml.pre value on its own. */
int mm_tok_pre_split(const char *pre, const char *text, size_t len,
		     size_t *lens, int max, int *n_out, char *err,
		     size_t errlen)
{
	struct mm_tok t = { .kind = MM_TOK_BPE };
	size_t *l;
	long cnt;

	*n_out = 0;
	if (pre) {
		size_t i;

		for (i = 0; i < sizeof(mm_pre_names) / sizeof(mm_pre_names[0]); i++)
			if (!strcmp(mm_pre_names[i].name, pre))
				break;
		if (i == sizeof(mm_pre_names) / sizeof(mm_pre_names[0])) {
			mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': pre-tokenizer '%.64s' is not supported",
				    pre);
			return -ENOTSUP;
		}
		t.pre = mm_pre_names[i].type;
	}
	cnt = mm_pre_split(t.pre, (const uint8_t *)text, len, &l);
	if (cnt < 0)
		return (int)cnt;
	for (long k = 0; k < cnt && k < max; k++)
		lens[k] = l[k];
	free(l);
	*n_out = (int)cnt;
	return cnt > max ? -ENOSPC : 0;
}

static int mm_bpe_text(const struct mm_tok *t, const uint8_t *s, size_t n,
		       struct mm_ids *o)
{
	size_t *lens, i = 0;
	long cnt = mm_pre_split(t->pre, s, n, &lens);
	int ret = 0;

	if (cnt < 0)
		return (int)cnt;
	for (long k = 0; k < cnt && !ret; k++) {
		ret = mm_bpe_word(t, s + i, lens[k], o);
		i += lens[k];
	}
	free(lens);
	return ret;
}

struct mm_spm_sym {
	size_t start, len;
	int32_t prev, next;
	float pair_score;	/* merging with next; -inf when impossible */
	int32_t pair_id;
};

static int mm_spm_mergeable(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && (t->attr[id] == MM_TOK_NORMAL ||
			   t->attr[id] == MM_TOK_USER);
}

static void mm_spm_pair(const struct mm_tok *t, const char *text,
			struct mm_spm_sym *sy, int32_t i)
{
	int32_t nx = sy[i].next, id;

	sy[i].pair_id = -1;
	if (nx < 0)
		return;
	id = mm_tok_findn(t, text + sy[i].start, sy[i].len + sy[nx].len);
	if (mm_spm_mergeable(t, id)) {
		sy[i].pair_id = id;
		sy[i].pair_score = t->score[id];
	}
}

/* SPM: text already has spaces escaped. */
static int mm_spm_text(const struct mm_tok *t, const char *text, size_t n,
		       struct mm_ids *o)
{
	struct mm_spm_sym *sy;
	int32_t cnt = 0;
	int ret = 0;

	if (!n)
		return 0;
	sy = malloc(n * sizeof(*sy));
	if (!sy)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t cl;

		mm_utf8_next((const uint8_t *)text, n, i, &cl);
		sy[cnt].start = i;
		sy[cnt].len = cl;
		sy[cnt].prev = cnt - 1;
		sy[cnt].next = i + cl < n ? cnt + 1 : -1;
		cnt++;
		i += cl;
	}
	for (int32_t i = 0; i < cnt; i++)
		mm_spm_pair(t, text, sy, i);
	for (;;) {
		int32_t best = -1;

		for (int32_t i = 0; i >= 0; i = sy[i].next)
			if (sy[i].pair_id >= 0 &&
			    (best < 0 || sy[i].pair_score > sy[best].pair_score))
				best = i;
		if (best < 0)
			break;
		{
			int32_t nx = sy[best].next;

			sy[best].len += sy[nx].len;
			sy[best].next = sy[nx].next;
			if (sy[nx].next >= 0)
				sy[sy[nx].next].prev = best;
			mm_spm_pair(t, text, sy, best);
			if (sy[best].prev >= 0)
				mm_spm_pair(t, text, sy, sy[best].prev);
		}
	}
	for (int32_t i = 0; i >= 0 && !ret; i = sy[i].next) {
		int32_t id = mm_tok_findn(t, text + sy[i].start, sy[i].len);

		if (mm_spm_mergeable(t, id))
			mm_ids_push(o, id);
		else
			ret = mm_tok_byte_fallback(t, o,
						   (const uint8_t *)text + sy[i].start,
						   sy[i].len);
	}
	free(sy);
	return ret;
}

static int mm_spm_fragment(const struct mm_tok *t, const char *s, size_t n,
			   int prefix, struct mm_ids *o)
{
	size_t cap = 3 * (n + 1), k = 0;
	char *buf;
	int ret;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (prefix) {
		memcpy(buf, "\xe2\x96\x81", 3);
		k = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(buf + k, "\xe2\x96\x81", 3);
			k += 3;
		} else {
			buf[k++] = s[i];
		}
	}
	ret = mm_spm_text(t, buf, k, o);
	free(buf);
	return ret;
}

/* Longest special token at s[0..n), or -1. */
static int32_t mm_tok_special_at(const struct mm_tok *t, const char *s,
				 size_t n, int parse_special)
{
	if (!t->special_first[(uint8_t)s[0]])
		return -1;
	for (int32_t k = 0; k < t->n_special; k++) {
		int32_t id = t->special[k];

		if (!parse_special && t->attr[id] == MM_TOK_CONTROL)
			continue;
		if (t->len[id] <= n && !memcmp(s, mm_tok_str(t, id), t->len[id]))
			return id;
	}
	return -1;
}

int mm_tok_encode(const struct mm_tok *t, const char *text, size_t len,
		  int add_bos, int parse_special, int32_t *ids, int max,
		  int *n_out)
{
	struct mm_ids o = { .ids = ids, .max = max < 0 ? 0 : max };
	int prev_special = 1, ret = 0;
	size_t i = 0, start = 0;

	if (!t || (!text && len) || (!ids && max > 0))
		return -EINVAL;
	if (add_bos && t->bos >= 0)
		mm_ids_push(&o, t->bos);
	while (!ret && start <= len) {
		int32_t sp = -1;

		/* find the next special token at or after i */
		while (i < len && (sp = mm_tok_special_at(t, text + i, len - i,
							   parse_special)) < 0)
			i++;
		if (i > start) {
			if (t->kind == MM_TOK_BPE)
				ret = mm_bpe_text(t, (const uint8_t *)text + start,
						  i - start, &o);
			else
				ret = mm_spm_fragment(t, text + start, i - start,
						      prev_special &&
						      t->add_space_prefix, &o);
			prev_special = 0;
		}
		if (ret || i >= len)
			break;
		mm_ids_push(&o, sp);
		prev_special = 1;
		i += t->len[sp];
		start = i;
	}
	if (n_out)
		*n_out = o.n;
	if (ret)
		return ret;
	if (o.overflow)
		return -E2BIG;
	return o.n > o.max ? -ENOSPC : 0;
}

/* ---- decoding --------------------------------------------------------- */

struct mm_out {
	char *buf;
	size_t cap;
	size_t len;
};

static void mm_out_put(struct mm_out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t c = o->cap - o->len < n ? o->cap - o->len : n;

		memcpy(o->buf + o->len, s, c);
	}
	o->len += n;
}

static int mm_tok_render(const struct mm_tok *t, int32_t id, unsigned flags,
			 int *strip, struct mm_out *o)
{
	const char *s;
	size_t n;

	if (id < 0 || id >= t->n_vocab)
		return -EINVAL;
	s = mm_tok_str(t, id);
	n = t->len[id];
	switch (t->attr[id]) {
	case MM_TOK_CONTROL:
		if (flags & MM_TOK_DECODE_SPECIAL)
			mm_out_put(o, s, n);
		return 0;
	case MM_TOK_USER:
		mm_out_put(o, s, n);
		*strip = 0;
		return 0;
	case MM_TOK_UNKNOWN:
		if (t->kind == MM_TOK_SPM) {
			mm_out_put(o, "\xe2\x96\x85", 3);
			*strip = 0;
			return 0;
		}
		break;
	case MM_TOK_BYTE:
		if (t->kind == MM_TOK_SPM && n == 6 && s[0] == '<' &&
		    s[1] == '0' && s[2] == 'x' && s[5] == '>') {
			char b = (char)strtoul(s + 3, NULL, 16);

			mm_out_put(o, &b, 1);
			*strip = 0;
			return 0;
		}
		break;
	}
	if (t->kind == MM_TOK_SPM) {
		for (size_t i = 0; i < n;) {
			if (n - i >= 3 && !memcmp(s + i, "\xe2\x96\x81", 3)) {
				if (!*strip)
					mm_out_put(o, " ", 1);
				i += 3;
			} else {
				mm_out_put(o, s + i, 1);
				i++;
			}
			*strip = 0;
		}
		return 0;
	}
	for (size_t i = 0; i < n;) {
		size_t cl;
		uint32_t cp = mm_utf8_next((const uint8_t *)s, n, i, &cl);

		if (cp < 512 && t->cp2byte[cp] >= 0) {
			char b = (char)t->cp2byte[cp];

			mm_out_put(o, &b, 1);
		} else {
			mm_out_put(o, s + i, cl);
		}
		i += cl;
	}
	return 0;
}

static int mm_out_finish(struct mm_out *o, size_t *len_out)
{
	if (len_out)
		*len_out = o->len;
	if (o->cap) {
		o->buf[o->len < o->cap ? o->len : o->cap - 1] = 0;
		if (o->len >= o->cap)
			return -ENOSPC;
	} else if (o->len) {
		return -ENOSPC;
	}
	return 0;
}

int mm_tok_decode_ex(const struct mm_tok *t, const int32_t *ids, int n,
		     unsigned flags, char *buf, size_t cap, size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };
	int strip = t->kind == MM_TOK_SPM && t->add_space_prefix &&
		    !(flags & MM_TOK_DECODE_KEEP_SPACE);

	for (int i = 0; i < n; i++) {
		int ret = mm_tok_render(t, ids[i], flags, &strip, &o);

		if (ret)
			return ret;
	}
	return mm_out_finish(&o, len_out);
}

int mm_tok_decode(const struct mm_tok *t, const int32_t *ids, int n,
		  char *buf, size_t cap, size_t *len_out)
{
	return mm_tok_decode_ex(t, ids, n, 0, buf, cap, len_out);
}

int mm_tok_piece(const struct mm_tok *t, int32_t id, unsigned flags,
		 char *buf, size_t cap, size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };
	int strip = 0;
	int ret = mm_tok_render(t, id, flags, &strip, &o);

	return ret ? ret : mm_out_finish(&o, len_out);
}

/* ---- properties ------------------------------------------------------- */

int mm_tok_kind(const struct mm_tok *t) { return t->kind; }
int mm_tok_n_vocab(const struct mm_tok *t) { return t->n_vocab; }
int mm_tok_bos(const struct mm_tok *t) { return t->bos; }
int mm_tok_eos(const struct mm_tok *t) { return t->eos; }

int mm_tok_is_eog(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && (id == t->eos || id == t->eot || id == t->im_end);
}

const char *mm_tok_text(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? mm_tok_str(t, id) : NULL;
}

int mm_tok_attr(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? t->attr[id] : -EINVAL;
}

/* ---- chat ------------------------------------------------------------- */

int mm_tok_chat_format(const struct mm_tok *t, const struct mm_chat_msg *msgs,
		       int n, int add_gen, char *buf, size_t cap,
		       size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };

	if (t->chat_template && !strstr(t->chat_template, "<|im_start|>"))
		return -ENOTSUP;
	for (int i = 0; i < n; i++) {
		if (!msgs[i].role || !msgs[i].content)
			return -EINVAL;
		mm_out_put(&o, "<|im_start|>", 12);
		mm_out_put(&o, msgs[i].role, strlen(msgs[i].role));
		mm_out_put(&o, "\n", 1);
		mm_out_put(&o, msgs[i].content, strlen(msgs[i].content));
		mm_out_put(&o, "<|im_end|>\n", 11);
	}
	if (add_gen)
		mm_out_put(&o, "<|im_start|>assistant\n", 22);
	return mm_out_finish(&o, len_out);
}
