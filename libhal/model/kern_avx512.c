// SPDX-License-Identifier: MIT
/*
 * kern_avx512.c - AVX-512 VNNI kernel set (built with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni; used when cpuid reports all of them). It is the
 * AVX2 set with every u8 x s8 dot product done by vpdpbusd (VL/ymm
 * encoding, full rate on Zen4 and Intel), see kern_avx2.c.
 */
#define MM_VNNI 1
#include "kern_avx2.c"
