/* Reductions: ReduceSum, ReduceMean (reduce.c), ReduceMax and
 * GlobalMaxPool (reduce_max.c). Included by dg_kernels.h, which states
 * the calling convention. */
#ifndef DG_K_REDUCE_H
#define DG_K_REDUCE_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Reductions (ReduceSum, ReduceMean, any axes, keepdims is only a shape
 * matter). The input is viewed as kept dims x reduced dims: output element
 * o (row-major over keep_shape) reduces, in row-major order over
 * red_shape, x[sum(keep_idx * keep_strides) + sum(red_idx * red_strides)].
 * Element strides of the input. nkeep == 0: one output (full reduction).
 * ====================================================================== */
typedef struct {
    const float *x;
    float *y;
    uint32_t nkeep;
    uint32_t keep_shape[DG_MAX_DIMS];
    uint32_t keep_strides[DG_MAX_DIMS];
    uint32_t nred;
    uint32_t red_shape[DG_MAX_DIMS];
    uint32_t red_strides[DG_MAX_DIMS];
} dg_reduce_args_t;
void dg_reduce_sum_f32(void *args);
void dg_reduce_mean_f32(void *args);

/* IntegerMean (quantlib's integer ReduceMean, as Deeploy's Generic
 * template computes it): the walk of dg_reduce_args_t over values that
 * hold integers (x_dtype, y_dtype: DG_DT_F32 or DG_DT_I32), summed in
 * int64; the sum s of n values gives floor((s + n / 2) / n) when n is a
 * power of two (Deeploy's rounding shift), else (s + sign(s) * (n / 2)) / n
 * truncated (halves away from zero; sign(0) = 1). */
typedef struct {
    const void *x;
    void *y;
    uint32_t nkeep;
    uint32_t keep_shape[DG_MAX_DIMS];
    uint32_t keep_strides[DG_MAX_DIMS];
    uint32_t nred;
    uint32_t red_shape[DG_MAX_DIMS];
    uint32_t red_strides[DG_MAX_DIMS];
    uint32_t x_dtype, y_dtype;
} dg_reduce_int_args_t;
void dg_integer_mean(void *args);

/* ---- max reductions -------------------------------------------------------
 * GlobalMaxPool: dg_pool_args_t (batch, channels, in_h, in_w; x -> y of
 * [batch, channels, 1, 1]).
 * ReduceMax: dg_reduce_args_t exactly as ReduceSum (any axes; keepdims is
 * only a shape matter). Any NaN input gives NaN (onnxruntime 1.19 is not
 * consistent there: ReduceMax keeps only a leading NaN, GlobalMaxPool skips
 * NaN; the tests use finite data). */
void dg_global_maxpool_f32(void *args);
void dg_reduce_max_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_REDUCE_H */
