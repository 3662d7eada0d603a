/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qpn_guess.h"

uint32_t rsec_qpn_guess_rank(uint32_t own, uint32_t target)
{
	uint32_t up = (target - own) & (RSEC_QPN_SPACE - 1);

	if (up == 0)
		return 0;
	if (up < RSEC_QPN_SPACE / 2)
		return 2 * up - 1;
	return 2 * (RSEC_QPN_SPACE - up);
}

double rsec_qpn_bits(double mean)
{
	return mean <= 1.0 ? 0.0 : log2(2.0 * mean - 1.0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int rsec_qpn_summarize(uint32_t *ranks, size_t n, struct rsec_qpn_summary *out)
{
	double sum = 0;
	size_t in1 = 0, in16 = 0;

	RSEC_ENSURE(ranks != NULL && out != NULL && n > 0, RSEC_E_INVAL);
	for (size_t i = 0; i < n; i++) {
		RSEC_ENSURE(ranks[i] >= 1, RSEC_E_INVAL);
		sum += ranks[i];
		in1 += ranks[i] <= 1;
		in16 += ranks[i] <= 16;
	}
	qsort(ranks, n, sizeof(*ranks), cmp_u32);
	memset(out, 0, sizeof(*out));
	out->trials = n;
	out->mean = sum / (double)n;
	out->median = n % 2 ? ranks[n / 2] : ((double)ranks[n / 2 - 1] + ranks[n / 2]) / 2.0;
	out->within1 = (double)in1 / (double)n;
	out->within16 = (double)in16 / (double)n;
	out->bits = rsec_qpn_bits(out->mean);
	return 0;
}
