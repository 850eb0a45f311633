/* Elementwise kernels: binary and unary maps, activations and their
 * gradients, variadic Max / Min, comparisons and logic, and the integer
 * and mixed-type forms (elementwise.c, unary.c, gelu_tanh.c, compare.c,
 * integer.c). Included by dg_kernels.h, which states the calling
 * convention. */
#ifndef DG_K_ELEMENTWISE_H
#define DG_K_ELEMENTWISE_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Elementwise
 * ====================================================================== */

/* Add, Sub, Mul, Div, Pow with numpy broadcasting. ndim == 0: a, b and y
 * are n contiguous elements each. Otherwise `shape` is the output shape and
 * a_strides / b_strides the element strides of a and b per output dimension
 * (0 on a broadcast dimension). y may alias a or b when they are not
 * broadcast. */
typedef struct {
    const float *a;
    const float *b;
    float *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_binary_args_t;
void dg_add_f32(void *args);
void dg_sub_f32(void *args);
void dg_mul_f32(void *args);
void dg_div_f32(void *args);
void dg_pow_f32(void *args);

/* Relu, Gelu (erf form: 0.5 x (1 + erf(x / sqrt 2))). y may alias x. */
typedef struct {
    const float *x;
    float *y;
    uint32_t n;
} dg_unary_args_t;
void dg_relu_f32(void *args);
void dg_gelu_f32(void *args);

/* com.microsoft Scale: y = x * scale[0], or x / scale[0] when scale_down. */
typedef struct {
    const float *x;
    const float *scale;
    float *y;
    uint32_t n;
    uint32_t scale_down;
} dg_scale_args_t;
void dg_scale_f32(void *args);

/* Sum of nin same-shaped inputs, added in input order. */
typedef struct {
    const float *const *x;
    uint32_t nin;
    float *y;
    uint32_t n;
} dg_sum_args_t;
void dg_sum_f32(void *args);

/* ReluGrad(dY, X): dx = dy * (x > 0). GeluGrad(dY, X) (erf form):
 * dx = dy * (0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)). */
typedef struct {
    const float *dy;
    const float *x;
    float *dx;
    uint32_t n;
} dg_act_grad_args_t;
void dg_relu_grad_f32(void *args);
void dg_gelu_grad_f32(void *args);

/* ---- unary elementwise (dg_unary_args_t: x, y, n; y may alias x) -------
 * Ceil, Floor, Exp, Log, Sqrt, Neg, Abs, Tanh, Sigmoid (1 / (1 + e^-x)),
 * Erf, HardSwish (x * max(0, min(1, x / 6 + 1/2))), Softplus (ln(1 + e^x),
 * as x + ln(1 + e^-x) for x > 0 so that it never overflows). */
void dg_ceil_f32(void *args);
void dg_floor_f32(void *args);
void dg_exp_f32(void *args);
void dg_log_f32(void *args);
void dg_sqrt_f32(void *args);
void dg_neg_f32(void *args);
void dg_abs_f32(void *args);
void dg_tanh_f32(void *args);
void dg_sigmoid_f32(void *args);
void dg_erf_f32(void *args);
void dg_hard_swish_f32(void *args);
void dg_softplus_f32(void *args);

/* Unary with parameters. y may alias x.
 *   dg_hard_sigmoid_f32  y = max(0, min(1, alpha x + beta))  (ONNX defaults
 *                        alpha 0.2, beta 0.5)
 *   dg_swish_f32         y = x * sigmoid(alpha x)  (Swish, opset 24 and
 *                        com.microsoft QuickGelu; Swish's default alpha is 1,
 *                        QuickGelu's 1.702; beta unused)
 *   dg_leaky_relu_f32    y = x < 0 ? alpha x : x  (LeakyRelu, default alpha
 *                        0.01; beta unused)
 *   dg_elu_f32           y = x < 0 ? alpha (e^x - 1) : x  (Elu, default
 *                        alpha 1; beta unused) */
typedef struct {
    const float *x;
    float *y;
    uint32_t n;
    float alpha, beta;
} dg_unary_param_args_t;
void dg_hard_sigmoid_f32(void *args);
void dg_swish_f32(void *args);
void dg_leaky_relu_f32(void *args);
void dg_elu_f32(void *args);

/* PRelu(X, slope): y = x < 0 ? slope x : x, with dg_binary_args_t: a = X,
 * b = slope broadcast to X (numpy strides, 0 on a broadcast dimension, as for
 * Add; ndim = 0 when both have X's size); y may alias a. */
void dg_prelu_f32(void *args);

/* Clip: y = min(max(x, lo), hi). lo = *min_ptr when min_ptr != NULL (the
 * opset >= 11 input), else `min` (the opset-6 attribute) when has_min, else
 * -FLT_MAX (onnxruntime's default: -inf clips to -FLT_MAX); hi likewise with
 * FLT_MAX.
 * dg_clip_grad_f32: onnxruntime's gradient graph for Clip
 *   (GreaterOrEqual(X, min) And LessOrEqual(X, max), Cast, Mul) fused:
 *   dx = dy where lo <= x <= hi (boundaries included), else 0; an absent
 *   bound is no condition. Reads x, dy; writes dx. */
typedef struct {
    const float *x;
    float *y; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    uint32_t n;
    const float *min_ptr;
    const float *max_ptr;
    float min, max;
    uint32_t has_min, has_max;
} dg_clip_args_t;
void dg_clip_f32(void *args);
void dg_clip_grad_f32(void *args);

/* Gradients that onnxruntime-training emits from the forward *output* Y
 * (com.microsoft, inputs (dY, Y)):
 *   SigmoidGrad: dx = dy * y * (1 - y)
 *   TanhGrad:    dx = dy * (1 - y * y) */
typedef struct {
    const float *dy;
    const float *y;
    float *dx;
    uint32_t n;
} dg_act_grad_y_args_t;
void dg_sigmoid_grad_f32(void *args);
void dg_tanh_grad_f32(void *args);

/* com.microsoft QuickGeluGrad(dY, X){alpha}, the gradient of Swish /
 * QuickGelu: with s = sigmoid(alpha x), dx = dy * s * (1 + alpha x (1 - s)). */
typedef struct {
    const float *dy;
    const float *x;
    float *dx;
    uint32_t n;
    float alpha;
} dg_swish_grad_args_t;
void dg_swish_grad_f32(void *args);

/* ---- variadic Max / Min with numpy broadcasting -------------------------
 * nin (1..DG_MAX_VARIADIC) inputs. ndim == 0: every input is n contiguous
 * elements. Otherwise `shape` is the output shape and strides[i] the element
 * strides of input i per output dimension (0 on a broadcast dimension), as
 * in dg_binary_args_t. Inputs are combined in input order. y may alias an
 * input that is not broadcast. */
#define DG_MAX_VARIADIC 8
typedef struct {
    const float *const *x;
    uint32_t nin;
    float *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t strides[DG_MAX_VARIADIC][DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_variadic_args_t;
void dg_max_f32(void *args);
void dg_min_f32(void *args);

/* ---- operators of onnxruntime-training's gradient graphs ------------------
 * Sign (Abs gradient): dg_unary_args_t, y = -1, 0 or 1 (0 for +-0; NaN
 * stays NaN). */
void dg_sign_f32(void *args);

/* Comparisons with numpy broadcasting, bool (one byte, 0 / 1) output:
 * Equal, Less, LessOrEqual, Greater, GreaterOrEqual on float inputs (a NaN
 * operand compares false), on int64, int32, int8 and uint8 inputs (the
 * kernel's name says which), And on bool inputs. Max / Min gradients use
 * Equal (+ Cast, Sum, Div, Mul), the Clip gradient GreaterOrEqual /
 * LessOrEqual / And (+ Cast, Mul; or dg_clip_grad_f32 fused). Same layout
 * as dg_binary_args_t: ndim == 0: n contiguous elements each; else the
 * output shape and per-input element strides (0 = broadcast). */
typedef struct {
    const void *a;
    const void *b;
    uint8_t *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_compare_args_t;
void dg_equal_f32(void *args);
void dg_less_f32(void *args);
void dg_less_equal_f32(void *args);
void dg_greater_f32(void *args);
void dg_greater_equal_f32(void *args);
void dg_equal_i64(void *args);
void dg_less_i64(void *args);
void dg_less_equal_i64(void *args);
void dg_greater_i64(void *args);
void dg_greater_equal_i64(void *args);
void dg_equal_i32(void *args);
void dg_less_i32(void *args);
void dg_less_equal_i32(void *args);
void dg_greater_i32(void *args);
void dg_greater_equal_i32(void *args);
void dg_equal_i8(void *args);
void dg_less_i8(void *args);
void dg_less_equal_i8(void *args);
void dg_greater_i8(void *args);
void dg_greater_equal_i8(void *args);
void dg_equal_u8(void *args);
void dg_less_u8(void *args);
void dg_less_equal_u8(void *args);
void dg_greater_u8(void *args);
void dg_greater_equal_u8(void *args);
void dg_and_bool(void *args);
void dg_or_bool(void *args);
void dg_xor_bool(void *args);

/* ---- Gelu, approximate = "tanh" (gelu_tanh.c) ----------------------------
 * y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) on dg_unary_args_t;
 * its gradient (GeluGrad{approximate=tanh}, onnxruntime's FastGeluGrad)
 * dx = dy * d/dx y on dg_act_grad_args_t. */
void dg_gelu_tanh_f32(void *args);
void dg_gelu_tanh_grad_f32(void *args);

/* ---- integer and mixed-type forms (integer.c) ------------------------------
 * Element types are the kernel's name: dg_<op>_<a> computes on a, b and y of
 * that type, dg_pow_<a>_<b> on a base of type <a> and an exponent of type
 * <b> with y of the base's type (ONNX's Pow). The fault ids are the f32
 * kernels' (tests only).
 *
 * Add, Sub, Mul, Div, Pow on int64 (and on int32: the same arithmetic in 32
 * bits, _i32 for _i64 in every name below; Add, Sub, Mul, Div on int8 in 8
 * bits, _i8) with numpy broadcasting, same layout as dg_binary_args_t (y may
 * alias a when a is not broadcast):
 *   Add, Sub, Mul wrap around (two's complement), as onnxruntime does;
 *   Div truncates toward zero (C's and onnxruntime's); a zero divisor gives 0
 *     and is a run-time error (dg_kernel_error), INT64_MIN / -1 gives
 *     INT64_MIN;
 *   dg_pow_i64: exact repeated squaring, wrapping; a negative exponent gives
 *     what onnxruntime's static_cast of pow() gives where that is defined
 *     (1 for a base of 1, +-1 for -1) and 0 otherwise;
 *   dg_pow_i64_f32: pow((double)a, (double)b) truncated toward zero
 *     (onnxruntime's static_cast<int64_t>(std::pow(a, b))); a result that is
 *     NaN or outside int64 gives INT64_MIN, as onnxruntime does on x86-64;
 *   dg_pow_f32_i64: (float)pow((double)a, (double)b) (std::pow as
 *     onnxruntime calls it, in double).
 * Add, Sub, Mul, Div on uint8 (_u8): modulo 256, Div truncating; a zero
 * divisor gives 0 and is a run-time error. */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_binary_typed_args_t;
void dg_add_i64(void *args);
void dg_sub_i64(void *args);
void dg_mul_i64(void *args);
void dg_div_i64(void *args);
void dg_pow_i64(void *args);
void dg_pow_i64_f32(void *args);
void dg_pow_f32_i64(void *args);
void dg_add_i32(void *args);
void dg_sub_i32(void *args);
void dg_mul_i32(void *args);
void dg_div_i32(void *args);
void dg_pow_i32(void *args);
void dg_pow_i32_f32(void *args);
void dg_pow_f32_i32(void *args);
void dg_add_i8(void *args);
void dg_sub_i8(void *args);
void dg_mul_i8(void *args);
void dg_div_i8(void *args);
void dg_add_u8(void *args);
void dg_sub_u8(void *args);
void dg_mul_u8(void *args);
void dg_div_u8(void *args);

/* Variadic Max / Min on int64, int32, int8 and uint8: as dg_variadic_args_t
 * (x holds nin pointers to inputs of the kernel's type, y is of that type). */
typedef struct {
    const void *const *x;
    uint32_t nin;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t strides[DG_MAX_VARIADIC][DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_variadic_typed_args_t;
void dg_max_i64(void *args);
void dg_min_i64(void *args);
void dg_max_i32(void *args);
void dg_min_i32(void *args);
void dg_max_i8(void *args);
void dg_min_i8(void *args);
void dg_max_u8(void *args);
void dg_min_u8(void *args);

/* Clip and Relu on int8 (and Clip on uint8), in the input's type: Clip as
 * dg_clip_f32 with the bounds of the input's type (lo = *min_ptr when
 * min_ptr != NULL, else `min` when has_min, else the type's lowest value;
 * hi likewise with the highest); Relu on dg_unary_typed_args_t,
 * y = x > 0 ? x : 0. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
    const void *min_ptr; /* optional: NULL when the bound is a value */
    const void *max_ptr; /* optional: NULL when the bound is a value */
    int32_t min, max;
    uint32_t has_min, has_max;
} dg_clip_typed_args_t;
void dg_clip_i8(void *args);
void dg_clip_u8(void *args);
void dg_relu_i8(void *args);

/* ReduceMax on int64 and on bool (one byte, 0 / 1: the result is 1 when any
 * reduced element is nonzero), laid out as dg_reduce_args_t. */
typedef struct {
    const void *x;
    void *y;
    uint32_t nkeep;
    uint32_t keep_shape[DG_MAX_DIMS];
    uint32_t keep_strides[DG_MAX_DIMS];
    uint32_t nred;
    uint32_t red_shape[DG_MAX_DIMS];
    uint32_t red_strides[DG_MAX_DIMS];
} dg_reduce_typed_args_t;
void dg_reduce_max_i64(void *args);
void dg_reduce_max_bool(void *args);

/* Mod with numpy broadcasting (dg_binary_typed_args_t; dg_mod_f32 and
 * dg_fmod_f32 on dg_binary_args_t; the _i32 and _i8 forms as the _i64 ones
 * in 32 and 8 bits; on uint8 dg_mod_u8 and dg_fmod_u8 are both C's %):
 * dg_mod_i64 and dg_mod_f32 are ONNX's
 * fmod = 0, the remainder with the divisor's sign (numpy's mod; on floats a
 * zero remainder is a zero of the divisor's sign, a zero divisor gives
 * NaN); dg_fmod_i64 and dg_fmod_f32 are fmod = 1, the remainder with the
 * dividend's sign (C's % and fmodf). An integer divisor of 0 gives 0 and is
 * a run-time error (dg_kernel_error). */
void dg_mod_i64(void *args);
void dg_mod_f32(void *args);
void dg_fmod_i64(void *args);
void dg_fmod_f32(void *args);
void dg_mod_i32(void *args);
void dg_fmod_i32(void *args);
void dg_mod_i8(void *args);
void dg_fmod_i8(void *args);
void dg_mod_u8(void *args);
void dg_fmod_u8(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_ELEMENTWISE_H */
