/* Data movement and selection: copies, transposes, slices, Concat
 * (shape.c), Where, Cast, Gather, Split, GatherGrad (select.c), Pad
 * (pad.c), Not, ArgMax / ArgMin, ConstantOfShape, Tile (index.c) and
 * Resize (resize.c). Included by dg_kernels.h, which states the calling
 * convention. */
#ifndef DG_K_MOVEMENT_H
#define DG_K_MOVEMENT_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Data movement (any element size: 1, 2, 4 or 8 bytes)
 * ====================================================================== */

/* Identity, Reshape, Squeeze, Unsqueeze, Flatten when not aliased. */
typedef struct {
    const void *x;
    void *y;
    uint32_t bytes;
} dg_copy_args_t;
void dg_copy_kernel(void *args);

/* y[i] = x[offset + sum(idx_d * strides[d])] over the output shape: covers
 * Transpose (strides permuted), Slice (offset = starts, strides * steps,
 * possibly negative) and Expand (strides 0 on broadcast dims). */
typedef struct {
    const void *x;
    void *y;
    uint32_t elem_size;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS];
    int32_t strides[DG_MAX_DIMS];
    int32_t offset;
} dg_strided_copy_args_t;
void dg_strided_copy(void *args);
void dg_transpose(void *args);
void dg_slice(void *args);
void dg_expand(void *args);

/* Concat along an axis: the output is [outer, sum(sizes), inner]; input i
 * is [outer, sizes[i], inner]. */
typedef struct {
    const void *const *x;
    const uint32_t *sizes;
    uint32_t nin;
    void *y;
    uint32_t elem_size;
    uint32_t outer, inner;
} dg_concat_args_t;
void dg_concat(void *args);

/* ---- Where(cond, x, y) with numpy broadcasting (any element size 1/2/4/8)
 * out[i] = cond[.] ? x[.] : y[.]; cond is bool (one byte, nonzero = true).
 * ndim == 0: all n contiguous; else the output shape and per-input element
 * strides (0 = broadcast). */
typedef struct {
    const uint8_t *cond;
    const void *x;
    const void *y;
    void *out;
    uint32_t elem_size;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t c_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t x_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t y_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_where_args_t;
void dg_where(void *args);

/* ---- Cast between f32, i64, i32, u8 and bool (n elements) ----------------
 * float -> integer truncates toward zero; NaN, infinities and values outside
 * the target's range give what onnxruntime gives on x86-64 (where C leaves
 * the conversion undefined): int64 and int32 get their minimum (INT64_MIN,
 * INT32_MIN), and uint8 is the low byte of the int32 conversion (so 300.0
 * gives 44, -1.0 gives 255, 1e30 and NaN give 0); -> bool is x != 0 (stored
 * as 0 / 1, NaN is true); integer -> float rounds to nearest; integer ->
 * narrower integer wraps (two's complement); bool reads nonzero as 1.
 * from == to copies. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
    uint32_t from, to;
} dg_cast_args_t;
void dg_cast(void *args);

/* ---- Gather along an axis (any element size) ------------------------------
 * x is [outer, axis_dim, inner], y is [outer, n_idx, inner]:
 * y[o, j, i] = x[o, indices[j], i]. Indices are int64 (int32 when
 * indices_i32): constant ones normalised to [0, axis_dim) by the generator,
 * run-time ones (token ids) in [-axis_dim, axis_dim), a negative one
 * counting from the end (the host emulation aborts on one outside). Scalar indices: n_idx = 1 and the
 * generator drops the axis from the output shape. */
typedef struct {
    const void *x;
    const void *indices;
    uint32_t indices_i32;
    void *y;
    uint32_t elem_size;
    uint32_t outer, axis_dim, inner;
    uint32_t n_idx;
} dg_gather_args_t;
void dg_gather(void *args);

/* ---- Split along an axis (any element size): the inverse of dg_concat ---
 * x is [outer, sum(sizes), inner]; output i is [outer, sizes[i], inner]. */
typedef struct {
    const void *x;
    void *const *y;
    const uint32_t *sizes;
    uint32_t nout;
    uint32_t elem_size;
    uint32_t outer, inner;
} dg_split_args_t;
void dg_split_kernel(void *args);

/* ---- Pad (fp32), ndim dims -----------------------------------------------
 * pads_begin[d] / pads_end[d] are ONNX's pads[d] / pads[ndim + d] and may be
 * negative (crop). As onnxruntime: the negative pads crop the input first,
 * then the positive pads extend the cropped input by `value` (constant),
 * its mirror without the edge element (reflect; pads must be smaller than
 * the cropped extent), its edge element (edge) or wrap around (wrap).
 * out_shape[d] = in_shape[d] + pads_begin[d] + pads_end[d]. */
enum { DG_PAD_CONSTANT = 0, DG_PAD_REFLECT = 1, DG_PAD_EDGE = 2, DG_PAD_WRAP = 3 };
typedef struct {
    const float *x;
    float *y;
    uint32_t ndim;
    uint32_t in_shape[DG_MAX_DIMS];
    int32_t pads_begin[DG_MAX_DIMS];
    int32_t pads_end[DG_MAX_DIMS];
    uint32_t mode;
    float value;
} dg_pad_args_t;
void dg_pad_f32(void *args);
/* The same on int8 / uint8 values, moved as bytes; `value` is the
 * constant's byte (an int8 as two's complement). */
typedef struct {
    const uint8_t *x;
    uint8_t *y;
    uint32_t ndim;
    uint32_t in_shape[DG_MAX_DIMS];
    int32_t pads_begin[DG_MAX_DIMS];
    int32_t pads_end[DG_MAX_DIMS];
    uint32_t mode;
    uint8_t value;
} dg_pad_b8_args_t;
void dg_pad_b8(void *args);

/* com.microsoft GatherGrad(shape, indices, dY){axis} (fp32): dx is
 * [outer, axis_dim, inner] and zero except dx[o, indices[j], i] +=
 * dy[o, j, i], summed in j order (repeated indices add up). Each dx row
 * (o, k) is owned by one core, which scans all indices. Indices as in
 * dg_gather_args_t (normalised int64, or int32 when indices_i32). */
typedef struct {
    const float *dy;
    const void *indices;
    uint32_t indices_i32;
    float *dx;
    uint32_t outer, axis_dim, inner;
    uint32_t n_idx;
} dg_gather_grad_args_t;
void dg_gather_grad_f32(void *args);

/* ---- logic, index and fill kernels (index.c) ------------------------------
 * Not on bool (one byte, 0 / 1): y = !x over n elements. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
} dg_unary_typed_args_t;
void dg_not_bool(void *args);

/* ArgMax / ArgMin over the middle axis of x viewed as [outer, dim, inner]:
 * y[o, i] (int64) is the index of the largest (smallest) element of
 * x[o, :, i], the first one among equals, the last when select_last; the
 * first NaN, when there is one (numpy's argmax / argmin). */
typedef struct {
    const float *x;
    void *y;
    uint32_t outer, dim, inner;
    uint32_t select_last;
} dg_arg_reduce_args_t;
void dg_argmax_f32(void *args);
void dg_argmin_f32(void *args);

/* ConstantOfShape: n elements of elem_size bytes (1, 4 or 8), each the
 * low elem_size bytes of value's little-endian bytes. */
typedef struct {
    void *y;
    uint32_t n;
    uint32_t elem_size;
    int64_t value;
} dg_fill_args_t;
void dg_fill(void *args);

/* Tile: y (out_shape) repeats x (in_shape, same rank ndim): y[i0, i1, ...]
 * = x[i0 % in_shape[0], i1 % in_shape[1], ...], elements of elem_size
 * bytes (1, 4 or 8). */
typedef struct {
    const void *x;
    void *y;
    uint32_t elem_size;
    uint32_t ndim;
    uint32_t in_shape[DG_MAX_DIMS];
    uint32_t out_shape[DG_MAX_DIMS];
} dg_tile_args_t;
void dg_tile(void *args);

/* Resize (resize.c) of `planes` [in_h, in_w] maps to [out_h, out_w] by
 * tables of taps: output row oy reads input rows iy[oy * kh + i] with
 * weights wy[oy * kh + i] (i < kh), output column ox columns
 * ix[ox * kw + j] with weights wx[ox * kw + j]; y is the weighted sum
 * (nearest: one tap of weight 1); a row or column whose first index is
 * -1 lies outside a tf_crop_and_resize crop and is `extrapolation`. The
 * generator computes the taps (mode, coordinate transformation, antialias,
 * edge clamping). */
typedef struct {
    const float *x;
    float *y;
    uint32_t planes;
    uint32_t in_h, in_w, out_h, out_w;
    uint32_t kh, kw;
    const int32_t *iy;
    const float *wy;
    const int32_t *ix;
    const float *wx;
    float extrapolation;
} dg_resize_args_t;
void dg_resize_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_MOVEMENT_H */
