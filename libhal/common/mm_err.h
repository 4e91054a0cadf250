/* SPDX-License-Identifier: MIT */
/*
 * mm_err.h - libmmhal's one error formatter: every part (device layer,
 * model runtime, session, store) reports a failure as a negative errno
 * and one printf-style line in the caller's buffer.
 */
#ifndef MM_ERR_H
#define MM_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Formats one line into @err (nothing when it is NULL or @errlen is 0)
 * and returns @ret, so that "return mm_errf(-EINVAL, err, errlen, ...)"
 * reports and fails at once.
 */
__attribute__((format(printf, 4, 5)))
static inline int mm_errf(int ret, char *err, size_t errlen, const char *fmt,
			  ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#endif /* MM_ERR_H */
