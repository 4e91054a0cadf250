/* SPDX-License-Identifier: MIT */
/*
 * tap.h - a tiny TAP producer for libmmhal's tests (one test binary = one
 * translation unit including this header).
 *
 *	static void test_foo(void)
 *	{
 *		CHECK_INT(foo(), 0);
 *		if (!have_bar)
 *			SKIP("no bar here");
 *	}
 *
 *	static const struct tap_test tests[] = {
 *		TAP_TEST(test_foo),
 *	};
 *
 *	int main(void) { return tap_run(tests, TAP_COUNT(tests)); }
 *
 * A failed CHECK prints a "# file:line: ..." diagnostic and marks the test
 * failed; the test goes on so that one run shows every broken check.
 * FAIL() fails and returns, SKIP() skips and returns, BAIL_OUT() fails and
 * ends the whole run.
 *
 * Tests whose cases are not known in advance (one per kernel set, per
 * shape, ...) number them as they go instead, and print the plan last:
 *
 *	tap_ok(err < tol, "q8_0 gemv on %s", set);
 *	tap_skip("avx512 kernels: not on this CPU");
 *	return tap_done("quant");
 *
 * Both styles print TAP only. The counting (plan against cases seen, a
 * crash before the plan, exit status) is libhal/tests/tap-run.sh's, which
 * every test stage of the tree runs its binaries through.
 */
#ifndef MMHAL_TAP_H
#define MMHAL_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct tap_test {
	const char *name;
	void (*fn)(void);
};

#define TAP_TEST(fn)	{ #fn, fn }
#define TAP_COUNT(a)	(sizeof(a) / sizeof((a)[0]))

/* State of the test that is running. */
static int tap_cur_failed;
static const char *tap_cur_skip;
static const char *tap_bail;

static inline void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		tap_diag("%s:%d: check failed: %s",			\
			 __FILE__, __LINE__, #cond);			\
		tap_cur_failed = 1;					\
	}								\
} while (0)

#define CHECK_INT(got, want) do {					\
	long long __got = (got), __want = (want);			\
	if (__got != __want) {						\
		tap_diag("%s:%d: %s is %lld, want %lld (%s)",		\
			 __FILE__, __LINE__, #got, __got, __want,	\
			 #want);					\
		tap_cur_failed = 1;					\
	}								\
} while (0)

#define CHECK_STR(got, want) do {					\
	const char *__got = (got), *__want = (want);			\
	if (!__got || strcmp(__got, __want)) {				\
		tap_diag("%s:%d: %s is \"%s\", want \"%s\"",		\
			 __FILE__, __LINE__, #got,			\
			 __got ? __got : "(null)", __want);		\
		tap_cur_failed = 1;					\
	}								\
} while (0)

/* Stop the current test without failing it. */
#define SKIP(reason) do {						\
	tap_cur_skip = (reason);					\
	return;								\
} while (0)

/* Fail and stop the current test. */
#define FAIL(...) do {							\
	tap_diag(__VA_ARGS__);						\
	tap_cur_failed = 1;						\
	return;								\
} while (0)

/* Fail the current test and stop the run: later tests cannot work. */
#define BAIL_OUT(reason) do {						\
	tap_bail = (reason);						\
	tap_cur_failed = 1;						\
	return;								\
} while (0)

/* Runs every test in order. Return: the exit status for main(). */
static inline int tap_run(const struct tap_test *tests, size_t n)
{
	size_t i;
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		tap_cur_failed = 0;
		tap_cur_skip = NULL;
		tests[i].fn();
		if (tap_cur_failed) {
			printf("not ok %zu - %s\n", i + 1, tests[i].name);
			failed++;
		} else if (tap_cur_skip) {
			printf("ok %zu - %s # SKIP %s\n", i + 1, tests[i].name,
			       tap_cur_skip);
		} else {
			printf("ok %zu - %s\n", i + 1, tests[i].name);
		}
		fflush(stdout);
		if (tap_bail) {
			printf("Bail out! %s\n", tap_bail);
			return 1;
		}
	}
	return failed ? 1 : 0;
}

/* Cases numbered as they run; the plan comes last (tap_done). */
static int tap_n, tap_fail;

static inline void __attribute__((format(printf, 3, 0)))
tap_vresult(int cond, const char *skip, const char *fmt, va_list ap)
{
	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	vprintf(fmt, ap);
	if (skip)
		printf(" # SKIP %s", skip);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_fail++;
}

/* One case: passes when @cond is non-zero. Returns @cond. */
static inline int __attribute__((format(printf, 2, 3)))
tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(cond, NULL, fmt, ap);
	va_end(ap);
	return cond;
}

/* One case that could not run here (counted as skipped, not passed). */
static inline void __attribute__((format(printf, 1, 2)))
tap_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(1, "", fmt, ap);
	va_end(ap);
}

/* Prints the plan. Return: the exit status for main(). */
static inline int tap_done(const char *suite)
{
	printf("# %s: %d cases, %d failed\n", suite, tap_n, tap_fail);
	printf("1..%d\n", tap_n);
	fflush(stdout);
	return tap_fail ? 1 : 0;
}

#endif /* MMHAL_TAP_H */
