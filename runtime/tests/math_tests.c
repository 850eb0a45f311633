/*
 * Accuracy of dg_math.h (the kernels' expf and erff) against the C
 * library's double-precision exp and erf.
 *
 *   math_tests [STRIDE]
 *
 * Walks the float bit patterns of the ranges that matter, every STRIDE-th
 * one (default 1: all of them), and prints the largest error of each
 * function in units in the last place of the correctly rounded result.
 * Fails (exit 1) when dg_expf is off by more than 2 ulp on
 * [-103.97, 88.72] (0 below, +inf above), dg_erff by more than 2 ulp on
 * [-5, 5], or a special value (infinities, NaN, 0, the overflow and
 * underflow limits) comes out wrong.
 */
#include "dg_math.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The spacing of floats at the correctly rounded value of `r`. */
static double ulp_at(double r)
{
    const float f = (float)r;
    int e;
    double u;
    if (f == 0.0f)
        return ldexp(1.0, -149);
    frexp(fabs((double)f), &e);
    u = ldexp(1.0, e - 24);
    return u < ldexp(1.0, -149) ? ldexp(1.0, -149) : u;
}

static int failed;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failed = 1;
    }
}

int main(int argc, char **argv)
{
    const uint32_t stride = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1u;
    double exp_max = 0.0, erf_max = 0.0;
    float exp_at = 0.0f, erf_at = 0.0f;
    uint64_t u;
    for (u = 0; u <= 0xffffffffu; u += stride) {
        const uint32_t bits = (uint32_t)u;
        float x;
        memcpy(&x, &bits, sizeof x);
        if (!(fabsf(x) <= 104.0f))
            continue;
        {
            const double ref = exp((double)x);
            const float got = dg_expf(x);
            double e;
            if ((float)ref == INFINITY) {
                if (got != INFINITY) {
                    printf("FAIL dg_expf(%.9g) = %.9g, not +inf\n", (double)x, (double)got);
                    failed = 1;
                }
                continue;
            }
            e = fabs((double)got - ref) / ulp_at(ref);
            if (!(e <= exp_max)) {
                exp_max = e;
                exp_at = x;
            }
        }
        if (fabsf(x) <= 5.0f) {
            const double ref = erf((double)x);
            const double e = fabs((double)dg_erff(x) - ref) / ulp_at(ref);
            if (!(e <= erf_max)) {
                erf_max = e;
                erf_at = x;
            }
        }
    }
    printf("dg_expf: at most %.3f ulp (at %.9g)\n", exp_max, (double)exp_at);
    printf("dg_erff: at most %.3f ulp (at %.9g)\n", erf_max, (double)erf_at);
    expect(exp_max <= 2.0, "dg_expf within 2 ulp");
    expect(erf_max <= 2.0, "dg_erff within 2 ulp");
    expect(dg_expf(INFINITY) == INFINITY, "dg_expf(+inf) = +inf");
    expect(dg_expf(-INFINITY) == 0.0f, "dg_expf(-inf) = 0");
    expect(isnan(dg_expf(NAN)), "dg_expf(NaN) is NaN");
    expect(dg_expf(0.0f) == 1.0f, "dg_expf(0) = 1");
    expect(dg_expf(89.0f) == INFINITY, "dg_expf(89) overflows");
    expect(dg_expf(-104.0f) == 0.0f, "dg_expf(-104) underflows");
    expect(dg_expf(-100.0f) > 0.0f, "dg_expf(-100) is a subnormal, not 0");
    expect(dg_erff(INFINITY) == 1.0f && dg_erff(-INFINITY) == -1.0f, "dg_erff(+-inf) = +-1");
    expect(isnan(dg_erff(NAN)), "dg_erff(NaN) is NaN");
    expect(dg_erff(0.0f) == 0.0f, "dg_erff(0) = 0");
    printf("%s\n", failed ? "math_tests: FAILED" : "math_tests: ok");
    return failed;
}
