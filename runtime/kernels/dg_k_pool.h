/* Pooling (pool.c; GlobalMaxPool is in dg_k_reduce.h, the 3-D pools in
 * dg_k_conv.h). Included by dg_kernels.h, which states the calling
 * convention. */
#ifndef DG_K_POOL_H
#define DG_K_POOL_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Pooling (NCHW)
 *   dg_maxpool_f32            x -> y, indices (int64, may be NULL)
 *   dg_maxpool_grad_f32       dy, indices_in -> dx
 *   dg_avgpool_f32            x -> y
 *   dg_avgpool_grad_f32       dy -> dx
 *   dg_global_avgpool_f32     x -> y ([batch, channels, 1, 1])
 *   dg_global_avgpool_grad_f32 dy -> dx
 * MaxPool indices follow onnxruntime: the flat index into the whole input
 * tensor, ((n * C + c) * H + h) * W + w, or with storage_order 1 (1-D and
 * 2-D) (n * C + c) * H * W + w * H + h; ties keep the first maximum in
 * window order. AveragePool's divisor: with count_include_pad the window
 * clipped to the padded input (pads on all four sides; a ceil_mode window's
 * taps beyond the end pad do not count, as the ONNX reference), else the
 * window clipped to the input. No dilations in dg_avgpool_f32 (a dilated
 * AveragePool runs in dg_avgpool3d_f32).
 * ====================================================================== */
typedef struct {
    const float *x; /* optional: NULL where the kernel does not read it */
    float *y; /* optional: NULL where the kernel does not read it */
    int64_t *indices; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    const int64_t *indices_in; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    uint32_t batch, channels, in_h, in_w, out_h, out_w;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left, pad_bottom, pad_right; /* optional: 0 = none (global pools) */
    uint32_t count_include_pad; /* optional: 0 = no */
    uint32_t storage_order; /* optional: 0 = row-major indices */
} dg_pool_args_t;
void dg_maxpool_f32(void *args);
void dg_maxpool_grad_f32(void *args);
void dg_avgpool_f32(void *args);
void dg_avgpool_grad_f32(void *args);
void dg_global_avgpool_f32(void *args);
void dg_global_avgpool_grad_f32(void *args);

/* MaxPool on int8 and uint8 (1-D as height 1, 2-D): dg_maxpool_f32's
 * geometry, maxima, ties and indices in the input's type (an output whose
 * window holds no tap of the input is the type's lowest value). */
typedef struct {
    const void *x;
    void *y;
    int64_t *indices; /* optional: NULL when not wanted */
    uint32_t batch, channels, in_h, in_w, out_h, out_w;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    uint32_t storage_order; /* optional: 0 = row-major indices */
} dg_pool_typed_args_t;
void dg_maxpool_i8(void *args);
void dg_maxpool_u8(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_POOL_H */
