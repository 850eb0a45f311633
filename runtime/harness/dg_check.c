/* deploygen harness helpers, see dg_check.h. */
#include "dg_check.h"

#include "dg_mem.h"
#include "pmsis.h"

#include <stdio.h>

#define DG_CHECK_CHUNK 64

PI_L2 static float dg_check_buf[DG_CHECK_CHUNK];
PI_L2 static float dg_check_ref[DG_CHECK_CHUNK];

static float dg_absf(float x) { return x < 0.0f ? -x : x; }

/* |computed - ref|, and 0 for equal values: equal infinities match (their
 * difference is NaN), a NaN on either side never does. */
static float dg_diff(float c, float r) { return c == r ? 0.0f : dg_absf(c - r); }

uint32_t dg_check_losses(const float *computed, const void *ref, uint32_t n, float tol,
                         uint32_t *compared)
{
    uint32_t i, errors = 0;
    for (i = 0; i < n; i++) {
        float r, diff;
        dg_copy(&r, (const uint8_t *)ref + (size_t)i * sizeof(float), sizeof r);
        diff = dg_diff(computed[i], r);
        if (!(diff <= tol))
            errors++;
        printf("[loss %u] computed=%.6f ref=%.6f diff=%.6f tol=%.6f\r\n", (unsigned)i,
               (double)computed[i], (double)r, (double)diff, (double)tol);
        (*compared)++;
    }
    return errors;
}

uint32_t dg_check_tensor(const char *name, const void *computed, const void *ref, uint32_t n,
                         float tol, uint32_t *compared)
{
    uint32_t i, k, done, errors = 0;
    const uint8_t *src = (const uint8_t *)computed;
    if (computed == NULL) {
        printf("[check %s] no buffer to compare\r\n", name);
        return n;
    }
    for (done = 0; done < n; done += k) {
        k = n - done < DG_CHECK_CHUNK ? n - done : DG_CHECK_CHUNK;
        dg_copy(dg_check_buf, src + (size_t)done * sizeof(float), (size_t)k * sizeof(float));
        dg_copy(dg_check_ref, (const uint8_t *)ref + (size_t)done * sizeof(float), (size_t)k * sizeof(float));
        for (i = 0; i < k; i++) {
            float c = dg_check_buf[i], r = dg_check_ref[i];
            float diff = dg_diff(c, r);
            if (!(diff <= tol)) {
                if (errors < DG_CHECK_SHOW)
                    printf("  mismatch %s[%u] computed=%.6f ref=%.6f\r\n", name,
                           (unsigned)(done + i), (double)c, (double)r);
                errors++;
            }
            (*compared)++;
        }
    }
    printf("[check %s] errors %u out of %u\r\n", name, (unsigned)errors, (unsigned)n);
    return errors;
}

const char *dg_u64_str(char buf[21], uint64_t v)
{
    char tmp[21];
    int n = 0, i;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10u));
        v /= 10u;
    } while (v != 0u && n < 20);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return buf;
}
