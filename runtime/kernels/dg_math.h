/* Single-precision exp and erf for the kernels, in float arithmetic only.
 *
 * The kernels run on the cluster cores, which have an FPU; the C library
 * they link may not use it (a soft-float libm costs thousands of cycles per
 * call: on GVSoC Siracusa, Softmax and Gelu spent ~3,800 and ~5,600 core
 * cycles per element in picolibc's expf / erff). These are inline, take no
 * errno path and need no double arithmetic. Accuracy against the C
 * library's double exp and erf (runtime/tests/math_tests.c, which requires
 * 2 ulp): dg_expf at most 1.33 ulp over every 3rd float, dg_erff 1.7 ulp
 * (1.0e-7 absolute, near 0.885, past the point where its two forms meet)
 * over every 7th.
 *
 * The polynomial coefficients are least-squares fits (reweighted towards
 * the minimax error) made for this file. */
#ifndef DG_MATH_H
#define DG_MATH_H

#include <stdint.h>
#include <string.h>

static inline float dg_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* e^x: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, the first
 * with 8 trailing zero bits so n * its value is exact for |n| < 256), a
 * degree-6 polynomial for e^r (relative error 1.9e-9), times 2^n built in
 * the exponent bits (in two factors when 2^n alone is not a normal float,
 * for the subnormal results). */
static inline float dg_expf(float x)
{
    const float log2e = 1.44269504089f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    float r, p;
    int32_t n;
    if (!(x < 88.7228394f)) /* overflow, +inf and NaN */
        return x > 0.0f ? x * 1.0e30f * 1.0e30f : x + x;
    if (x < -103.972084f)
        return 0.0f;
    p = x * log2e;
    n = (int32_t)(p + (p < 0.0f ? -0.5f : 0.5f));
    r = (x - (float)n * ln2_hi) - (float)n * ln2_lo;
    p = 1.0f +
        r * (1.0f + r * (4.999999106e-01f +
                         r * (1.666641980e-01f +
                              r * (4.166814312e-02f + r * (8.374842815e-03f + r * 1.384140225e-03f)))));
    if (n >= -126 && n <= 127)
        return p * dg_f32_from_bits((uint32_t)(n + 127) << 23);
    {
        const int32_t h = n / 2;
        return p * dg_f32_from_bits((uint32_t)(h + 127) << 23) * dg_f32_from_bits((uint32_t)(n - h + 127) << 23);
    }
}

/* erf(x), odd: for |x| < 0.875, x + x q(x^2) with 1 + q of degree 5
 * (relative error 8.6e-9; the 1 kept apart, it rounds less); for
 * 0.875 <= |x| < 3.92, 1 - e^(-x^2) R(1/|x|) with R of degree 9
 * (relative error 5e-8 of erfc, whose largest value there is 0.22);
 * above, erf rounds to 1. */
static inline float dg_erff(float x)
{
    const float a = x < 0.0f ? -x : x;
    float y;
    if (a < 0.875f) {
        const float z = x * x;
        return x + x * (1.283791671e-01f +
                        z * (-3.761255145e-01f +
                         z * (1.128246412e-01f +
                              z * (-2.679177746e-02f + z * (5.032645538e-03f + z * -6.205654354e-04f)))));
    }
    if (a < 3.92f) {
        const float t = 1.0f / a;
        const float rr =
            2.005842398e-04f +
            t * (5.603065491e-01f +
                 t * (3.209751472e-02f +
                      t * (-4.275323451e-01f +
                           t * (3.742134571e-01f +
                                t * (-2.045809105e-02f +
                                     t * (-2.355253845e-01f +
                                          t * (2.187913656e-01f +
                                               t * (-8.894792944e-02f + t * 1.443786081e-02f))))))));
        y = 1.0f - dg_expf(-a * a) * rr;
    } else if (a == a) {
        y = 1.0f;
    } else {
        return x; /* NaN */
    }
    return x < 0.0f ? -y : y;
}

#endif
