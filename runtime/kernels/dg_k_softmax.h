/* Softmax, LogSoftmax and SoftmaxGrad (softmax.c). Included by
 * dg_kernels.h, which states the calling convention. */
#ifndef DG_K_SOFTMAX_H
#define DG_K_SOFTMAX_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Softmax over one axis: the tensor is [outer, dim, inner]. Opset-13
 * Softmax(axis) and SoftmaxGrad_13(axis): outer = prod(shape[:axis]),
 * dim = shape[axis], inner = prod(shape[axis+1:]). The pre-13 "coerce to
 * 2-D" forms (Softmax <= 12, com.microsoft SoftmaxGrad): dim =
 * prod(shape[axis:]), inner = 1.
 * SoftmaxGrad(dY, Y): dx = y * (dy - sum(dy * y)).
 * ====================================================================== */
typedef struct {
    const float *x;
    float *y;
    uint32_t outer, dim, inner;
} dg_softmax_args_t;
void dg_softmax_f32(void *args);

typedef struct {
    const float *dy;
    const float *y;
    float *dx;
    uint32_t outer, dim, inner;
} dg_softmax_grad_args_t;
void dg_softmax_grad_f32(void *args);

/* LogSoftmax on dg_softmax_args_t: y = x - max - log(sum(exp(x - max))). */
void dg_log_softmax_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_SOFTMAX_H */
