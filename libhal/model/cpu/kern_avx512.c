// SPDX-License-Identifier: MIT
/*
 * kern_avx512.c - AVX-512 VNNI kernel set (built with -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni; used when cpuid reports all of them). It is the
 * AVX2 set with every u8 x s8 dot product done by vpdpbusd: on ymm (VL
 * encoding) in decode, on zmm in the prefill GEMM, whose every type takes
 * the u8 form with W as the u8 side (mm_pkz_tile()), see kern_x86.h.
 */
#define MM_VNNI 1
#include "kern_x86.h"
