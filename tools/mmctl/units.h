/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Human units for mmctl: rates in bytes per second both ways ("200M",
 * "1.5G", "64k" in; "200 MB/s" out), plain numbers, intervals, and the
 * queue-wait percentile of a channel's histogram. No device access, so
 * units_test.c tests it on the host.
 */
#ifndef MMCTL_UNITS_H
#define MMCTL_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses a rate in bytes per second: a decimal number (fractions allowed)
 * with an optional unit: k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti
 * (powers of 1024), optionally followed by "B" and "/s"; case does not
 * matter for the letters ("200M", "1.5G", "64k", "200MB/s", "4MiB").
 * Fractions of a byte are rounded to the nearest.
 * Return: 0, -EINVAL (not a rate), -ERANGE (does not fit 64 bits).
 */
int mmctl_parse_rate(const char *s, uint64_t *out);

/*
 * Formats @bps with three significant digits and an SI unit:
 * "0 B/s", "950 B/s", "64 kB/s", "2.3 MB/s", "1.5 GB/s". Returns @buf.
 */
const char *mmctl_fmt_rate(uint64_t bps, char *buf, size_t len);

/*
 * Parses an unsigned decimal integer (digits only, no sign, no unit).
 * Return: 0, -EINVAL (not a number), -ERANGE (above @max).
 */
int mmctl_parse_uint(const char *s, uint64_t max, uint64_t *out);

/*
 * Parses seconds: a decimal number, fractions allowed, optional "s"
 * ("1", "0.5", "2s").
 * Return: 0, -EINVAL (not a number), -ERANGE (not in @min..@max).
 */
int mmctl_parse_seconds(const char *s, double min, double max, double *out);

/*
 * The @pct percentile (0 < @pct <= 100) of a queue-wait histogram of
 * @n buckets where bucket i counts waits below 2^(i + 10) ns and the
 * last one everything longer. Returns the bucket's upper bound in ns;
 * *open is set when it falls in the last, open-ended bucket (the value
 * is then the last bound, a lower bound); *any is false when the
 * histogram is empty (the result is then 0).
 */
uint64_t mmctl_wait_pct(const uint64_t *hist, unsigned int n, double pct,
			bool *open, bool *any);

/* "<65 us", ">33.6 ms", "-" (empty histogram). Returns @buf. */
const char *mmctl_fmt_wait(uint64_t ns, bool open, bool any, char *buf,
			   size_t len);

#endif /* MMCTL_UNITS_H */
