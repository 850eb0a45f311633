/* Convolutions: Conv and its gradients (conv_*.c), ConvTranspose
 * (convtranspose.c) and the 3-D windows, pools included (window3d.c).
 * Included by dg_kernels.h, which states the calling convention. */
#ifndef DG_K_CONV_H
#define DG_K_CONV_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Convolution (NCHW, weights [out_c, in_c / group, k_h, k_w])
 * One args struct for the forward and the three gradient kernels:
 *   dg_conv_f32          x, w, b (may be NULL) -> y
 *   dg_conv_grad_dx_f32  dy, w -> dx
 *   dg_conv_grad_dw_f32  dy, x -> dw
 *   dg_conv_grad_db_f32  dy -> db
 * Padding bottom/right is implied by out_h / out_w.
 * accumulate (added field; 0 = overwrite): dg_conv_grad_dw_f32 and
 *   dg_conv_grad_db_f32 add into dw / db (partial sums over batch or output
 *   row tiles: each sum continues from the value there, so tiles taken in
 *   order give the bits of one call); dg_conv_f32 adds into y (partial sums
 *   over input-channel tiles: x, w and in_c describe the tile; the sum
 *   continues from y and the bias is added only when b is non-NULL, so pass
 *   it with the last tile).
 * act (added field; 0 = none): dg_conv_f32 applies ReLU (act 1) to every
 *   output it stores, after the bias (a fused Conv + Relu; with input-channel
 *   tiles set it on the last tile's call only). The gradient kernels ignore
 *   it.
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *w;
    const float *b; /* optional: NULL where the kernel does not read it */
    float *y; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    float *dw; /* optional: NULL where the kernel does not read it */
    float *db; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t k_h, k_w;
    uint32_t stride_h, stride_w;
    uint32_t dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t group;
    uint32_t accumulate; /* optional: 0 = overwrite */
    uint32_t act; /* optional: 0 = none */
} dg_conv_args_t;
void dg_conv_f32(void *args);
void dg_conv_grad_dx_f32(void *args);
void dg_conv_grad_dw_f32(void *args);
void dg_conv_grad_db_f32(void *args);

/* ---- ConvTranspose (NCHW; 1-D is height 1) ---------------------------------
 * dg_conv_args_t with x, w, b (may be NULL), y; w is [in_c, out_c / group,
 * k_h, k_w] (ONNX's ConvTranspose layout). pad_top / pad_left are the begin
 * pads; the end pads and output_padding are implied by out_h / out_w
 * (out_h = stride_h (in_h - 1) + output_padding_h + dil_h (k_h - 1) + 1
 * - pad_top - pad_bottom). Each output element sums, in (in channel, k_h,
 * k_w) order, the inputs that map onto it, then adds the bias. */
void dg_conv_transpose_f32(void *args);

/* com.microsoft ConvTransposeGrad(dY, X, W) needs no kernel of its own
 * (onnxruntime 1.19 has no CPU kernel for it either). With the
 * ConvTranspose's strides, pads, dilations and group:
 *   dX = Conv(dY, W):   dg_conv_f32 with x = dY, w = W, y = dX (in_c =
 *                       ConvTranspose's out_c, out_c = its in_c; W's
 *                       [in_c, out_c / group, k_h, k_w] is Conv's layout);
 *   dW = dg_conv_grad_dw_f32 with dy = X, x = dY, dw = dW (same args);
 *   dB = dg_conv_grad_db_f32 with dy = dY viewed as that Conv's input, i.e.
 *        out_c = ConvTranspose's out_c and out_h / out_w its output size.
 * (tests/kernel_tests_ops.c case convtranspose_grad does exactly this.) */

/* ---- 3-D windows (NCDHW; window3d.c) -------------------------------------
 * One args struct for the forward 3-D pools and convolution:
 *   dg_maxpool3d_f32  x -> y, indices (int64, may be NULL)
 *   dg_avgpool3d_f32  x -> y
 *   dg_conv3d_f32     x, w, b (may be NULL) -> y; w is [out_c, in_c / group,
 *                     k_d, k_h, k_w]; act 1 applies ReLU after the bias
 *   dg_conv_transpose3d_f32  x, w, b (may be NULL) -> y; w is [in_c,
 *                     out_c / group, k_d, k_h, k_w] (ONNX's ConvTranspose
 *                     layout); output o of an axis sums the inputs
 *                     (o + pad - k dil) / stride that divide and lie in
 *                     the input, in (input channel, k_d, k_h, k_w) order;
 *                     the end pads and output_padding are implied by the
 *                     output extents
 * Output position o of a spatial axis reads the input at o * stride - pad
 * + k * dil for k < kernel, the taps outside the input skipped (zero
 * padding for Conv). Pools: out_c == in_c (the channels). MaxPool keeps the
 * first maximum in window order (k_d, k_h, k_w); its index is the flat
 * position in the whole input, (((n * C + c) * D + d) * H + h) * W + w; a
 * window with no tap in the input gives -FLT_MAX. AveragePool divides by
 * the taps inside the input, with count_include_pad by the taps inside the
 * padded input (pads on both ends of each axis): a ceil_mode window that
 * overhangs the end pad does not count the taps beyond it (the ONNX
 * reference since onnx 1.18, as PyTorch; onnxruntime 1.19 divides by the
 * whole kernel there). 1-D and 2-D AveragePool with dilations run here with
 * depth 1. The other kernels do not read the end pads (implied by the
 * output extents). Each output element is computed by one core (the
 * outputs split evenly over the cores).
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *w; /* optional: NULL where the kernel does not read it */
    const float *b; /* optional: NULL where the kernel does not read it */
    float *y;
    int64_t *indices; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_d, in_h, in_w;
    uint32_t out_c, out_d, out_h, out_w;
    uint32_t k_d, k_h, k_w;
    uint32_t stride_d, stride_h, stride_w;
    uint32_t dil_d, dil_h, dil_w;
    uint32_t pad_front, pad_top, pad_left;
    uint32_t pad_back, pad_bottom, pad_right; /* optional: read by dg_avgpool3d_f32 */
    uint32_t group; /* optional: 0 = 1 (read by dg_conv3d_f32) */
    uint32_t count_include_pad; /* optional: 0 = no */
    uint32_t act; /* optional: 0 = none */
} dg_window3d_args_t;
void dg_maxpool3d_f32(void *args);
void dg_avgpool3d_f32(void *args);
void dg_conv3d_f32(void *args);
void dg_conv_transpose3d_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_CONV_H */
