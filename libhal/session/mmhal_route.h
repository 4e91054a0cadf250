/* SPDX-License-Identifier: MIT */
/*
 * Internal helpers of the session's routing and SLO accounting
 * (mmhal_route.c); the routing measures themselves are public
 * (mmhal_session.h). Not exported; the host tests link the object.
 */
#ifndef MMHAL_ROUTE_H
#define MMHAL_ROUTE_H

#include <stddef.h>

/* Sampled points per thumbnail cell side, at most. */
#define MMHAL_SIG_SAMPLES	16

/*
 * mmhal_percentiles() - nearest-rank percentiles of @n values
 * @v: the values; sorted in place.
 * @pct: n_pct percentages, 0..100.
 * @out: n_pct results: the smallest value with at least pct[i] % of the
 *	values at or below it.
 *
 * Return: 0, or -EINVAL (NULL, @n 0, a percentage out of range).
 */
int mmhal_percentiles(double *v, size_t n, const double *pct, double *out,
		      int n_pct);

#endif /* MMHAL_ROUTE_H */
