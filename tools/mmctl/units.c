// SPDX-License-Identifier: GPL-2.0
/*
 * Human units; see units.h.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "units.h"

/*
 * A non-negative decimal number "D[.D]" at *s (no sign, no exponent, no
 * hex, no locale): advances *s past it. Return: false if there is none.
 */
static bool mmctl_parse_decimal(const char **s, double *out)
{
	const char *p = *s;
	double v = 0, scale = 1;
	bool digits = false;

	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p++ - '0');
		digits = true;
	}
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			scale /= 10;
			v += (*p++ - '0') * scale;
			digits = true;
		}
	}
	if (!digits)
		return false;
	*s = p;
	*out = v;
	return true;
}

int mmctl_parse_rate(const char *s, uint64_t *out)
{
	static const char units[] = "kmgt";
	const char *p = s, *u;
	double v, mult = 1;

	*out = 0;
	if (!s || !mmctl_parse_decimal(&p, &v))
		return -EINVAL;
	if (*p && (u = strchr(units, tolower((unsigned char)*p)))) {
		int e = (int)(u - units) + 1;

		p++;
		if (*p == 'i' || *p == 'I') {
			mult = ldexp(1, 10 * e);
			p++;
		} else {
			mult = pow(10, 3 * e);
		}
	}
	if (*p == 'B' || *p == 'b')
		p++;
	if (!strcmp(p, "/s"))
		p += 2;
	if (*p)
		return -EINVAL;
	v = round(v * mult);
	if (v >= 18446744073709551616.0)	/* 2^64 */
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

const char *mmctl_fmt_rate(uint64_t bps, char *buf, size_t len)
{
	static const char *const units[] = {
		"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s",
	};
	double v = (double)bps;
	unsigned int u = 0;
	int prec;

	/* Round first: 999.96 kB/s is "1 MB/s", not "1e+03 kB/s". */
	while (u < sizeof(units) / sizeof(units[0]) - 1) {
		prec = v >= 100 ? 0 : v >= 10 ? 1 : 2;
		if (round(v * pow(10, prec)) / pow(10, prec) < 1000)
			break;
		v /= 1000;
		u++;
	}
	prec = u == 0 || v >= 100 ? 0 : v >= 10 ? 1 : 2;
	snprintf(buf, len, "%.*f", prec, v);
	/* Trailing zeros of the fraction go: "2.30" -> "2.3", "2.00" -> "2". */
	if (strchr(buf, '.')) {
		char *e = buf + strlen(buf) - 1;

		while (*e == '0')
			*e-- = '\0';
		if (*e == '.')
			*e = '\0';
	}
	snprintf(buf + strlen(buf), len - strlen(buf), " %s", units[u]);
	return buf;
}

int mmctl_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	*out = 0;
	if (!s || !*s)
		return -EINVAL;
	for (p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	for (p = s; *p; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int mmctl_parse_seconds(const char *s, double min, double max, double *out)
{
	const char *p = s;
	double v;

	*out = 0;
	if (!s || !mmctl_parse_decimal(&p, &v))
		return -EINVAL;
	if (*p == 's')
		p++;
	if (*p)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

uint64_t mmctl_wait_pct(const uint64_t *hist, unsigned int n, double pct,
			bool *open, bool *any)
{
	uint64_t total = 0, cum = 0, need;
	unsigned int i;

	*open = false;
	*any = false;
	for (i = 0; i < n; i++)
		total += hist[i];
	if (!total || n < 2)
		return 0;
	*any = true;
	need = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (!need)
		need = 1;
	for (i = 0; i < n - 1; i++) {
		cum += hist[i];
		if (cum >= need)
			return 1ULL << (i + 10);
	}
	*open = true;
	return 1ULL << (n - 2 + 10);
}

const char *mmctl_fmt_wait(uint64_t ns, bool open, bool any, char *buf,
			   size_t len)
{
	double v = (double)ns;
	const char *unit = "ns";

	if (!any) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (v >= 1e6) {
		v /= 1e6;
		unit = "ms";
	} else if (v >= 1e3) {
		v /= 1e3;
		unit = "us";
	}
	snprintf(buf, len, "%s%.*f %s", open ? ">" : "<",
		 v >= 100 ? 0 : v >= 10 ? 1 : 2, v, unit);
	return buf;
}
