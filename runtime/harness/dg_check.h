/*
 * deploygen harness helpers: comparisons that cannot pass vacuously
 * (docs/testing.md, "The harness", rules 2 and 3). Every function counts
 * the values it really compared into *compared; an error is counted
 * unless computed == ref (equal infinities included), both are NaN, or
 * |computed - ref| <= atol + rtol * |ref| (numpy's allclose), so a NaN
 * against a number is always an error. Integer and boolean tensors are
 * compared exactly.
 * Computed values and references may live in any memory level
 * (they are read through dg_copy in small chunks). Call from the fabric controller or the
 * cluster controller, never inside a team fork.
 */
#ifndef DG_CHECK_H
#define DG_CHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many mismatches per tensor are printed. */
#ifndef DG_CHECK_SHOW
#define DG_CHECK_SHOW 5
#endif

/* Prints "[loss i] computed=... ref=... diff=... tol=..." per loss, tol
 * being that loss's atol + rtol * |ref|. */
uint32_t dg_check_losses(const float *computed, const void *ref, uint32_t n, float atol, float rtol,
                         uint32_t *compared);

/* Prints "[check NAME] errors E out of N" and the first mismatches as
 * "  mismatch NAME[i] computed=... ref=...". */
uint32_t dg_check_close(const char *name, const void *computed, const void *ref, uint32_t n,
                        float atol, float rtol, uint32_t *compared);

/* dg_check_close with rtol 0: |computed - ref| <= tol. */
uint32_t dg_check_tensor(const char *name, const void *computed, const void *ref, uint32_t n,
                         float tol, uint32_t *compared);

/* The same for integer or boolean values of `size` bytes each (at most 8),
 * compared exactly: "  mismatch NAME[i] computed=... ref=..." as integers. */
uint32_t dg_check_exact(const char *name, const void *computed, const void *ref, uint32_t n, uint32_t size,
                        uint32_t *compared);

/* Decimal text of a 64-bit count (printf of %llu is not everywhere). */
const char *dg_u64_str(char buf[21], uint64_t v);

#ifdef __cplusplus
}
#endif

#endif /* DG_CHECK_H */
