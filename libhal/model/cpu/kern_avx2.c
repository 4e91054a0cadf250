// SPDX-License-Identifier: MIT
/*
 * kern_avx2.c - the AVX2 + FMA + F16C kernel set (built with -mavx2
 * -mfma -mf16c; used when cpuid reports them): kern_x86.h without
 * MM_VNNI.
 */
#include "kern_x86.h"
