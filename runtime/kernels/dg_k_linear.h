/* Linear algebra: Gemm, MatMul and FusedMatMul (linear.c). Included by
 * dg_kernels.h, which states the calling convention. */
#ifndef DG_K_LINEAR_H
#define DG_K_LINEAR_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Linear algebra
 * ====================================================================== */

/* Gemm: y[m,n] = alpha * op(A) op(B) + beta * C. A is [m,k] ([k,m] when
 * trans_a), B is [k,n] ([n,k] when trans_b). C may be NULL (or beta 0);
 * it is read at c[i * c_stride_m + j * c_stride_n] (strides 0 broadcast).
 * accumulate (added field; 0 = the above): y += alpha * op(A) op(B), C and
 * beta ignored, for K split into tiles (each call one K tile with its own
 * A / B views). With alpha = 1 each output's sum continues from the value in
 * y, so the tiles give exactly the bits of one call over the whole K; with
 * another alpha a tile's product is scaled, then added.
 * act (added field; 0 = none): 1 applies ReLU to every output this call
 * stores, after alpha, beta * C and the accumulation (a fused Gemm + Relu;
 * with K tiles set it on the last tile's call only). */
typedef struct {
    const float *a;
    const float *b;
    const float *c;
    float *y;
    uint32_t m, n, k;
    uint32_t trans_a, trans_b; /* optional: 0 = as stored */
    float alpha, beta;
    uint32_t c_stride_m, c_stride_n;
    uint32_t accumulate; /* optional: 0 = overwrite */
    uint32_t act; /* optional: 0 = none */
} dg_gemm_args_t;
void dg_gemm_f32(void *args);

/* MatMul with batch broadcasting: y[b, m, n] = A[b, m, k] B[b, k, n] where
 * b runs over batch_shape (nbatch_dims dims, product `batch`), and A / B
 * start at sum(b_i * a_bstrides[i]) / sum(b_i * b_bstrides[i]) (element
 * strides, 0 = broadcast). 1-D operands are [1,k] / [k,1]. */
typedef struct {
    const float *a;
    const float *b;
    float *y;
    uint32_t m, n, k;
    uint32_t batch;
    uint32_t nbatch_dims;
    uint32_t batch_shape[4];
    uint32_t a_bstrides[4];
    uint32_t b_bstrides[4];
    /* FusedMatMul only (dg_matmul_f32 ignores them): A holds [b, k, m]
     * when trans_a, B holds [b, n, k] when trans_b; y = alpha * op(A) op(B). */
    uint32_t trans_a, trans_b; /* optional: 0 = as stored */
    float alpha; /* optional: FusedMatMul only */
    /* added field, both kernels: y += alpha * op(A) op(B) (K tiles), as
     * dg_gemm_args_t.accumulate */
    uint32_t accumulate; /* optional: 0 = overwrite */
} dg_matmul_args_t;
void dg_matmul_f32(void *args);
/* dg_matmul_args_t on int32 a, b and y (the pointers cast): each output
 * the sum over k in order, wrapping as two's complement; accumulate as
 * above. */
void dg_matmul_i32(void *args);
/* com.microsoft FusedMatMul: MatMul with transposes and a scale, which
 * onnxruntime emits for MatMul gradients. */
void dg_fused_matmul_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_LINEAR_H */
