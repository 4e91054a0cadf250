/* SPDX-License-Identifier: MIT */
/*
 * tap.h - minimal TAP output for the gguf/tokenizer tests: "ok N - name",
 * the plan at the end, and "RESULT <suite> <passed> <failed>".
 */
#ifndef MM_TAP_H
#define MM_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_fail;

__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_fail++;
	return cond;
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static inline int tap_done(const char *suite)
{
	printf("1..%d\n", tap_n);
	printf("RESULT %s %d %d\n", suite, tap_n - tap_fail, tap_fail);
	return tap_fail ? 1 : 0;
}

#endif /* MM_TAP_H */
