/* deploygen harness helpers, see dg_check.h. */
#include "dg_check.h"

#include "dg_mem.h"
#include "pmsis.h"

#include <stdio.h>
#include <string.h>

#define DG_CHECK_CHUNK 64

PI_L2 static float dg_check_buf[DG_CHECK_CHUNK];
PI_L2 static float dg_check_ref[DG_CHECK_CHUNK];

/* A signed integer of `size` bytes, little-endian, as int64 (for printing). */
static void dg_int_value(const uint8_t *p, uint32_t size, int64_t *v)
{
    uint64_t u = 0;
    uint32_t b;
    for (b = 0; b < size && b < 8u; b++)
        u |= (uint64_t)p[b] << (8u * b);
    if (size < 8u && size > 0u && (u >> (8u * size - 1u)) & 1u)
        u |= ~(uint64_t)0 << (8u * size);
    *v = (int64_t)u;
}

static float dg_absf(float x) { return x < 0.0f ? -x : x; }

/* |computed - ref|, and 0 for equal values: equal infinities match (their
 * difference is NaN), and so does a NaN against a NaN reference (as
 * numpy's allclose with equal_nan); a NaN against a number never does. */
static float dg_diff(float c, float r)
{
    if (c == r || (c != c && r != r))
        return 0.0f;
    return dg_absf(c - r);
}

/* The tolerance of one value: atol + rtol * |ref| (numpy's allclose); atol
 * alone for a reference that is NaN or infinite (which only an equal value
 * matches, dg_diff), so an infinite bound never passes a finite value. */
static float dg_tol(float r, float atol, float rtol)
{
    return r - r == 0.0f ? atol + rtol * dg_absf(r) : atol;
}

uint32_t dg_check_losses(const float *computed, const void *ref, uint32_t n, float atol, float rtol,
                         uint32_t *compared)
{
    uint32_t i, errors = 0;
    for (i = 0; i < n; i++) {
        float r, diff, tol;
        dg_copy(&r, (const uint8_t *)ref + (size_t)i * sizeof(float), sizeof r);
        diff = dg_diff(computed[i], r);
        tol = dg_tol(r, atol, rtol);
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
    return dg_check_close(name, computed, ref, n, tol, 0.0f, compared);
}

uint32_t dg_check_close(const char *name, const void *computed, const void *ref, uint32_t n,
                        float atol, float rtol, uint32_t *compared)
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
            if (!(diff <= dg_tol(r, atol, rtol))) {
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

uint32_t dg_check_exact(const char *name, const void *computed, const void *ref, uint32_t n, uint32_t size,
                        uint32_t *compared)
{
    uint32_t i, k, done, per = sizeof dg_check_buf / (size ? size : 1u), errors = 0;
    const uint8_t *src = (const uint8_t *)computed;
    const uint8_t *c = (const uint8_t *)dg_check_buf, *r = (const uint8_t *)dg_check_ref;
    if (computed == NULL) {
        printf("[check %s] no buffer to compare\r\n", name);
        return n;
    }
    for (done = 0; done < n; done += k) {
        k = n - done < per ? n - done : per;
        dg_copy(dg_check_buf, src + (size_t)done * size, (size_t)k * size);
        dg_copy(dg_check_ref, (const uint8_t *)ref + (size_t)done * size, (size_t)k * size);
        for (i = 0; i < k; i++) {
            if (memcmp(c + (size_t)i * size, r + (size_t)i * size, size) != 0) {
                if (errors < DG_CHECK_SHOW) {
                    int64_t cv = 0, rv = 0;
                    dg_int_value(c + (size_t)i * size, size, &cv);
                    dg_int_value(r + (size_t)i * size, size, &rv);
                    printf("  mismatch %s[%u] computed=%ld ref=%ld\r\n", name, (unsigned)(done + i), (long)cv,
                           (long)rv);
                }
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
