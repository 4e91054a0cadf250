// SPDX-License-Identifier: MIT
/*
 * slo.c - the session's service levels: the ring of the last asks'
 * first/last-token times and their percentiles, and the counters.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_int.h"

int mmhal_session_slo(const struct mmhal_session *s,
		      struct mmhal_session_slo *out)
{
	static const double pct[3] = { 50, 95, 99 };
	struct mmhal_session_slo o;
	struct rusage ru;
	uint32_t size;
	double *v, q[3];

	if (!s || !out)
		return -EINVAL;
	size = out->size;
	if (size < offsetof(struct mmhal_session_slo, first_p50))
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.n = s->slo_n;
	if (s->slo_n) {
		v = malloc(s->slo_n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, s->slo_first, s->slo_n * sizeof(*v));
		mmhal_percentiles(v, s->slo_n, pct, q, 3);
		o.first_p50 = q[0];
		o.first_p95 = q[1];
		o.first_p99 = q[2];
		o.first_max = v[s->slo_n - 1];
		memcpy(v, s->slo_last, s->slo_n * sizeof(*v));
		mmhal_percentiles(v, s->slo_n, pct, q, 3);
		o.last_p50 = q[0];
		o.last_p95 = q[1];
		o.last_p99 = q[2];
		o.last_max = v[s->slo_n - 1];
		free(v);
	}
	if (!getrusage(RUSAGE_SELF, &ru))
		o.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	o.cpu_s = cpu_s() - s->cpu_create;
	o.wall_s = ms_between(s->t_create, now_ns()) / 1e3;
	memcpy(out, &o, size < sizeof(o) ? size : sizeof(o));
	out->size = size;
	return 0;
}

int mmhal_session_stats(const struct mmhal_session *s,
			struct mmhal_session_stats *out)
{
	uint32_t size;

	if (!s || !out)
		return -EINVAL;
	size = out->size;
	if (size < offsetof(struct mmhal_session_stats, asks) + sizeof(uint64_t))
		return -EINVAL;
	memcpy(out, &s->st, size < sizeof(s->st) ? size : sizeof(s->st));
	out->size = size;
	return 0;
}
