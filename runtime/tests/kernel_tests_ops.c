/*
 * Operator kernel tests: the dg_* kernels beyond a CNN training step's core
 * (unary math and activations, their gradients, Clip, Max / Min, Where,
 * Cast, Gather, Split, Pad, ReduceMax, GlobalMaxPool, Group / Instance /
 * RMS normalization, ConvTranspose, Conv 1-D, the 3-D MaxPool, AveragePool,
 * Conv and ConvTranspose) against onnxruntime reference
 * vectors made by tools/make_kernel_refs.py (runtime/tests/refs/ops), and
 * the int64 / int32 / int8 / uint8 / bool / mixed-type forms of integer.c
 * (and the int8 / uint8 comparisons and MaxPool), Mod, Not, ArgMax /
 * ArgMin, ConstantOfShape's fill, Tile, LogSoftmax and Resize against
 * numpy ones (ONNX's reference implementation for Resize) made by the same
 * script (--int-forms).
 *
 *   kernel_tests_ops REFDIR [--cores 1,3,8] [--fault] [CASE...]
 *
 * Same harness and driver as kernel_tests.c (ref_harness.h): REFDIR holds one folder per case
 * (manifest.txt + key.bin, unpacked by tests/it/runtime.rs); each case runs
 * inside a cluster task that forks the kernel on each core count; outputs
 * start as 0xFF bytes (NaN / -1) so an element no core writes fails; a case
 * passes when every output is within tolerance (integers and exact cases
 * bit-exact) for every core count and bit-identical across core counts.
 * --fault (build with -DDG_FAULT_INJECTION): perturb each listed kernel
 * output in turn and require the check to fail.
 */
#include "dg_kernels.h"
#include "pmsis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_harness.h"

#define PL(name, i) ((int32_t)pv(t, name, i))

/* ---- cases ------------------------------------------------------------------- */
static void c_unary(tc_t *t, void (*k)(void *))
{
    dg_unary_args_t a;
    a.x = IN("x");
    a.y = OUT("y");
    a.n = N("out_y");
    FORK(k, &a);
}
static void c_ceil(tc_t *t) { c_unary(t, dg_ceil_f32); }
static void c_floor(tc_t *t) { c_unary(t, dg_floor_f32); }
static void c_exp(tc_t *t) { c_unary(t, dg_exp_f32); }
static void c_log(tc_t *t) { c_unary(t, dg_log_f32); }
static void c_sqrt(tc_t *t) { c_unary(t, dg_sqrt_f32); }
static void c_neg(tc_t *t) { c_unary(t, dg_neg_f32); }
static void c_abs(tc_t *t) { c_unary(t, dg_abs_f32); }
static void c_tanh(tc_t *t) { c_unary(t, dg_tanh_f32); }
static void c_sigmoid(tc_t *t) { c_unary(t, dg_sigmoid_f32); }
static void c_erf(tc_t *t) { c_unary(t, dg_erf_f32); }
static void c_hard_swish(tc_t *t) { c_unary(t, dg_hard_swish_f32); }
static void c_softplus(tc_t *t) { c_unary(t, dg_softplus_f32); }

static void c_unary_param(tc_t *t, void (*k)(void *))
{
    dg_unary_param_args_t a;
    a.x = IN("x");
    a.y = OUT("y");
    a.n = N("out_y");
    a.alpha = fv(t, "param", 0);
    a.beta = fv(t, "param", 1);
    FORK(k, &a);
}
static void c_hard_sigmoid(tc_t *t) { c_unary_param(t, dg_hard_sigmoid_f32); }
static void c_swish(tc_t *t) { c_unary_param(t, dg_swish_f32); }
static void c_leaky_relu(tc_t *t) { c_unary_param(t, dg_leaky_relu_f32); }
static void c_elu(tc_t *t) { c_unary_param(t, dg_elu_f32); }

/* p_clip = [has_min, has_max, as_inputs]; f_clip = [min, max]. The input
 * form passes the bounds by pointer, the attribute form by value. */
static void clip_params(tc_t *t, dg_clip_args_t *a)
{
    float *bounds = (float *)temp(t, 2 * sizeof(float));
    memset(a, 0, sizeof *a);
    a->n = N("in_x");
    a->x = IN("x");
    a->has_min = P("clip", 0);
    a->has_max = P("clip", 1);
    bounds[0] = fv(t, "clip", 0);
    bounds[1] = fv(t, "clip", 1);
    if (P("clip", 2)) {
        a->min_ptr = a->has_min ? &bounds[0] : NULL;
        a->max_ptr = a->has_max ? &bounds[1] : NULL;
        a->has_min = a->has_max = 0; /* the pointers alone must suffice */
    } else {
        a->min = bounds[0];
        a->max = bounds[1];
    }
}

static void c_clip(tc_t *t)
{
    dg_clip_args_t a;
    clip_params(t, &a);
    a.y = OUT("y");
    FORK(dg_clip_f32, &a);
}

static void c_clip_grad(tc_t *t)
{
    dg_clip_args_t a;
    clip_params(t, &a);
    a.dy = IN("dy");
    a.dx = OUT("dx");
    FORK(dg_clip_grad_f32, &a);
}

static void c_act_grad_y(tc_t *t, void (*k)(void *))
{
    dg_act_grad_y_args_t a;
    a.dy = IN("dy");
    a.y = IN("y");
    a.dx = OUT("dx");
    a.n = N("out_dx");
    FORK(k, &a);
}
static void c_sigmoid_grad(tc_t *t) { c_act_grad_y(t, dg_sigmoid_grad_f32); }
static void c_tanh_grad(tc_t *t) { c_act_grad_y(t, dg_tanh_grad_f32); }

static void c_swish_grad(tc_t *t)
{
    dg_swish_grad_args_t a;
    a.dy = IN("dy");
    a.x = IN("x");
    a.dx = OUT("dx");
    a.n = N("out_dx");
    a.alpha = fv(t, "param", 0);
    FORK(dg_swish_grad_f32, &a);
}

/* inputs in_x0.. in order; p_strides holds nin x ndim strides */
static void c_variadic(tc_t *t, void (*k)(void *))
{
    static const char *names[DG_MAX_VARIADIC] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
    const float *xs[DG_MAX_VARIADIC];
    dg_variadic_args_t a;
    uint32_t i, d;
    memset(&a, 0, sizeof a);
    for (i = 0; i < DG_MAX_VARIADIC && find(t, "in_", names[i]); i++)
        xs[i] = IN(names[i]);
    a.x = xs;
    a.nin = i;
    a.y = OUT("y");
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        for (i = 0; i < a.nin; i++)
            a.strides[i][d] = P("strides", i * a.ndim + d);
    }
    FORK(k, &a);
}
static void c_max(tc_t *t) { c_variadic(t, dg_max_f32); }
static void c_min(tc_t *t) { c_variadic(t, dg_min_f32); }

static void c_where(tc_t *t)
{
    dg_where_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.cond = (const uint8_t *)in_(t, "cond");
    a.x = in_(t, "x");
    a.y = in_(t, "y");
    a.out = out_(t, "o", NULL);
    a.elem_size = P("elem", 0);
    a.n = N("out_o");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.c_strides[d] = P("strides", d);
        a.x_strides[d] = P("strides", a.ndim + d);
        a.y_strides[d] = P("strides", 2 * a.ndim + d);
    }
    FORK(dg_where, &a);
}

static void c_cast(tc_t *t)
{
    dg_cast_args_t a;
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    a.from = P("cast", 0);
    a.to = P("cast", 1);
    FORK(dg_cast, &a);
}

/* p_gather = [outer, axis_dim, inner, n_idx, indices_i32, elem_size] */
static void c_gather(tc_t *t)
{
    dg_gather_args_t a;
    a.x = in_(t, "x");
    a.indices = in_(t, "indices");
    a.y = out_(t, "y", NULL);
    a.outer = P("gather", 0);
    a.axis_dim = P("gather", 1);
    a.inner = P("gather", 2);
    a.n_idx = P("gather", 3);
    a.indices_i32 = P("gather", 4);
    a.elem_size = P("gather", 5);
    FORK(dg_gather, &a);
}

static void c_split(tc_t *t)
{
    void *ys[3];
    uint32_t sizes[3];
    dg_split_args_t a;
    ys[0] = OUT("y0");
    ys[1] = OUT("y1");
    ys[2] = OUT("y2");
    sizes[0] = P("sizes", 0);
    sizes[1] = P("sizes", 1);
    sizes[2] = P("sizes", 2);
    a.x = in_(t, "x");
    a.y = ys;
    a.sizes = sizes;
    a.nout = 3;
    a.elem_size = 4;
    a.outer = P("outer_inner", 0);
    a.inner = P("outer_inner", 1);
    FORK(dg_split_kernel, &a);
}

static void c_pad(tc_t *t)
{
    dg_pad_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.x = IN("x");
    a.y = OUT("y");
    a.ndim = pn(t, "in_shape");
    for (d = 0; d < a.ndim; d++) {
        a.in_shape[d] = P("in_shape", d);
        a.pads_begin[d] = PL("begin", d);
        a.pads_end[d] = PL("end", d);
    }
    a.mode = P("mode", 0);
    a.value = fv(t, "value", 0);
    FORK(dg_pad_f32, &a);
}

static void c_global_maxpool(tc_t *t)
{
    dg_pool_args_t a;
    memset(&a, 0, sizeof a);
    a.batch = P("pool", 0);
    a.channels = P("pool", 1);
    a.in_h = P("pool", 2);
    a.in_w = P("pool", 3);
    a.out_h = a.out_w = 1;
    a.x = IN("x");
    a.y = OUT("y");
    FORK(dg_global_maxpool_f32, &a);
}

static void c_reduce_max(tc_t *t)
{
    dg_reduce_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.x = IN("x");
    a.y = OUT("y");
    a.nkeep = pn(t, "keep_shape");
    a.nred = pn(t, "red_shape");
    for (d = 0; d < a.nkeep; d++) {
        a.keep_shape[d] = P("keep_shape", d);
        a.keep_strides[d] = P("keep_strides", d);
    }
    for (d = 0; d < a.nred; d++) {
        a.red_shape[d] = P("red_shape", d);
        a.red_strides[d] = P("red_strides", d);
    }
    FORK(dg_reduce_max_f32, &a);
}

/* p_gn = [batch, channels, spatial, groups, scale_per_group]; f_gn = [eps] */
static void gn_params(tc_t *t, dg_groupnorm_args_t *a)
{
    a->batch = P("gn", 0);
    a->channels = P("gn", 1);
    a->spatial = P("gn", 2);
    a->groups = P("gn", 3);
    a->scale_per_group = P("gn", 4);
    a->epsilon = fv(t, "gn", 0);
    a->x = IN("x");
    a->scale = IN("scale");
    a->bias = IN("bias");
    a->y = OUT("y");
}

static void c_groupnorm(tc_t *t)
{
    dg_groupnorm_args_t a;
    gn_params(t, &a);
    FORK(dg_groupnorm_f32, &a);
}

static void c_instancenorm(tc_t *t)
{
    dg_groupnorm_args_t a;
    gn_params(t, &a);
    a.groups = 0; /* ignored by InstanceNormalization */
    FORK(dg_instancenorm_f32, &a);
}

static void c_rmsnorm(tc_t *t)
{
    dg_layernorm_args_t a;
    a.rows = P("ln", 0);
    a.cols = P("ln", 1);
    a.epsilon = fv(t, "ln", 0);
    a.x = IN("x");
    a.scale = IN("scale");
    a.bias = NULL;
    a.mean = NULL;
    a.y = OUT("y");
    a.inv_std = OUT("inv_std");
    FORK(dg_rmsnorm_f32, &a);
}

static void conv_params(tc_t *t, dg_conv_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->batch = P("conv", 0);
    a->in_c = P("conv", 1);
    a->in_h = P("conv", 2);
    a->in_w = P("conv", 3);
    a->out_c = P("conv", 4);
    a->out_h = P("conv", 5);
    a->out_w = P("conv", 6);
    a->k_h = P("conv", 7);
    a->k_w = P("conv", 8);
    a->stride_h = P("conv", 9);
    a->stride_w = P("conv", 10);
    a->dil_h = P("conv", 11);
    a->dil_w = P("conv", 12);
    a->pad_top = P("conv", 13);
    a->pad_left = P("conv", 14);
    a->group = P("conv", 15);
    a->x = IN("x");
    a->w = IN("w");
    a->b = find(t, "in_", "b") ? IN("b") : NULL;
    a->y = OUT("y");
}

static void c_conv_transpose(tc_t *t)
{
    dg_conv_args_t a;
    conv_params(t, &a);
    FORK(dg_conv_transpose_f32, &a);
}

/* Conv 1-D: the 2-D kernel with height 1 */
static void c_conv1d(tc_t *t)
{
    dg_conv_args_t a;
    conv_params(t, &a);
    FORK(dg_conv_f32, &a);
}

static void c_sign(tc_t *t) { c_unary(t, dg_sign_f32); }

static void c_compare(tc_t *t, void (*k)(void *))
{
    dg_compare_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.a = in_(t, "a");
    a.b = in_(t, "b");
    a.y = (uint8_t *)out_(t, "y", NULL);
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.a_strides[d] = P("astr", d);
        a.b_strides[d] = P("bstr", d);
    }
    FORK(k, &a);
}
static void c_equal(tc_t *t) { c_compare(t, dg_equal_f32); }
static void c_less(tc_t *t) { c_compare(t, dg_less_f32); }
static void c_less_equal(tc_t *t) { c_compare(t, dg_less_equal_f32); }
static void c_greater(tc_t *t) { c_compare(t, dg_greater_f32); }
static void c_greater_equal(tc_t *t) { c_compare(t, dg_greater_equal_f32); }
static void c_and(tc_t *t) { c_compare(t, dg_and_bool); }

static void c_gather_grad(tc_t *t)
{
    dg_gather_grad_args_t a;
    a.dy = IN("dy");
    a.indices = in_(t, "indices");
    a.dx = OUT("dx");
    a.outer = P("gather", 0);
    a.axis_dim = P("gather", 1);
    a.inner = P("gather", 2);
    a.n_idx = P("gather", 3);
    a.indices_i32 = P("gather", 4);
    FORK(dg_gather_grad_f32, &a);
}

/* ConvTransposeGrad mapped onto the Conv kernels (see dg_kernels.h):
 * p_conv describes the Conv from dY (its input) to X's shape. */
static void c_conv_transpose_grad(tc_t *t)
{
    dg_conv_args_t a, b;
    memset(&a, 0, sizeof a);
    a.batch = P("conv", 0);
    a.in_c = P("conv", 1);
    a.in_h = P("conv", 2);
    a.in_w = P("conv", 3);
    a.out_c = P("conv", 4);
    a.out_h = P("conv", 5);
    a.out_w = P("conv", 6);
    a.k_h = P("conv", 7);
    a.k_w = P("conv", 8);
    a.stride_h = P("conv", 9);
    a.stride_w = P("conv", 10);
    a.dil_h = P("conv", 11);
    a.dil_w = P("conv", 12);
    a.pad_top = P("conv", 13);
    a.pad_left = P("conv", 14);
    a.group = P("conv", 15);
    a.x = IN("dy");      /* dX = Conv(dY, W) */
    a.w = IN("w");
    a.b = NULL;
    a.y = OUT("dx");
    a.dy = IN("x");      /* dW: ConvGrad's dW with X as the output gradient */
    a.dw = OUT("dw");
    FORK(dg_conv_f32, &a);
    FORK(dg_conv_grad_dw_f32, &a);
    b = a;               /* dB: the sum of dY per ConvTranspose output channel */
    b.out_c = a.in_c;
    b.out_h = a.in_h;
    b.out_w = a.in_w;
    b.dy = a.x;
    b.db = OUT("db");
    FORK(dg_conv_grad_db_f32, &b);
}

/* Pow: the broadcast kernel of kernel_tests.c with general exponents */
static void c_pow(tc_t *t)
{
    dg_binary_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.a = IN("a");
    a.b = IN("b");
    a.y = OUT("y");
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.a_strides[d] = P("astr", d);
        a.b_strides[d] = P("bstr", d);
    }
    FORK(dg_pow_f32, &a);
}

/* PRelu: a = X, b = slope; p_shape / p_astr / p_bstr when the slope
 * broadcasts, else the same-size form (ndim 0) */
static void c_prelu(tc_t *t)
{
    dg_binary_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.a = IN("a");
    a.b = IN("b");
    a.y = OUT("y");
    a.n = N("out_y");
    a.ndim = find(t, "p_", "shape") ? pn(t, "shape") : 0;
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.a_strides[d] = P("astr", d);
        a.b_strides[d] = P("bstr", d);
    }
    FORK(dg_prelu_f32, &a);
}

/* 3-D windows (dg_window3d_args_t; p_win as make_kernel_refs.py writes it) */
static void win3d_params(tc_t *t, dg_window3d_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->batch = P("win", 0);
    a->in_c = P("win", 1);
    a->in_d = P("win", 2);
    a->in_h = P("win", 3);
    a->in_w = P("win", 4);
    a->out_c = P("win", 5);
    a->out_d = P("win", 6);
    a->out_h = P("win", 7);
    a->out_w = P("win", 8);
    a->k_d = P("win", 9);
    a->k_h = P("win", 10);
    a->k_w = P("win", 11);
    a->stride_d = P("win", 12);
    a->stride_h = P("win", 13);
    a->stride_w = P("win", 14);
    a->dil_d = P("win", 15);
    a->dil_h = P("win", 16);
    a->dil_w = P("win", 17);
    a->pad_front = P("win", 18);
    a->pad_top = P("win", 19);
    a->pad_left = P("win", 20);
    a->group = P("win", 21);
    a->count_include_pad = P("win", 22);
    a->pad_back = P("win", 23);
    a->pad_bottom = P("win", 24);
    a->pad_right = P("win", 25);
    a->x = IN("x");
    a->y = OUT("y");
}

static void c_maxpool3d(tc_t *t)
{
    dg_window3d_args_t a;
    win3d_params(t, &a);
    a.indices = (int64_t *)out_(t, "indices", NULL);
    FORK(dg_maxpool3d_f32, &a);
}

static void c_avgpool3d(tc_t *t)
{
    dg_window3d_args_t a;
    win3d_params(t, &a);
    FORK(dg_avgpool3d_f32, &a);
}

static void c_conv3d(tc_t *t)
{
    dg_window3d_args_t a;
    win3d_params(t, &a);
    a.w = IN("w");
    a.b = find(t, "in_", "b") ? IN("b") : NULL;
    FORK(dg_conv3d_f32, &a);
}

static void c_conv_transpose3d(tc_t *t)
{
    dg_window3d_args_t a;
    win3d_params(t, &a);
    a.w = IN("w");
    a.b = find(t, "in_", "b") ? IN("b") : NULL;
    FORK(dg_conv_transpose3d_f32, &a);
}

/* ---- the table ----------------------------------------------------------------- */
#define R 1e-5f
#define EXACT 0.0f, 0.0f
/* ---- integer and mixed-type forms (integer.c) --------------------------------- */
static void c_binary_typed(tc_t *t, void (*k)(void *))
{
    dg_binary_typed_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.a = in_(t, "a");
    a.b = in_(t, "b");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.a_strides[d] = P("astr", d);
        a.b_strides[d] = P("bstr", d);
    }
    FORK(k, &a);
}
static void c_add_i64(tc_t *t) { c_binary_typed(t, dg_add_i64); }
static void c_sub_i64(tc_t *t) { c_binary_typed(t, dg_sub_i64); }
static void c_mul_i64(tc_t *t) { c_binary_typed(t, dg_mul_i64); }
static void c_div_i64(tc_t *t) { c_binary_typed(t, dg_div_i64); }
static void c_pow_i64(tc_t *t) { c_binary_typed(t, dg_pow_i64); }
static void c_pow_i64_f32(tc_t *t) { c_binary_typed(t, dg_pow_i64_f32); }
static void c_pow_f32_i64(tc_t *t) { c_binary_typed(t, dg_pow_f32_i64); }

static void c_variadic_typed(tc_t *t, void (*k)(void *))
{
    static const char *names[DG_MAX_VARIADIC] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
    const void *xs[DG_MAX_VARIADIC];
    dg_variadic_typed_args_t a;
    uint32_t i, d;
    memset(&a, 0, sizeof a);
    for (i = 0; i < DG_MAX_VARIADIC && find(t, "in_", names[i]); i++)
        xs[i] = in_(t, names[i]);
    a.x = xs;
    a.nin = i;
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        for (i = 0; i < a.nin; i++)
            a.strides[i][d] = P("strides", i * a.ndim + d);
    }
    FORK(k, &a);
}
static void c_max_i64(tc_t *t) { c_variadic_typed(t, dg_max_i64); }
static void c_min_i64(tc_t *t) { c_variadic_typed(t, dg_min_i64); }
static void c_add_i32(tc_t *t) { c_binary_typed(t, dg_add_i32); }
static void c_sub_i32(tc_t *t) { c_binary_typed(t, dg_sub_i32); }
static void c_mul_i32(tc_t *t) { c_binary_typed(t, dg_mul_i32); }
static void c_div_i32(tc_t *t) { c_binary_typed(t, dg_div_i32); }
static void c_pow_i32(tc_t *t) { c_binary_typed(t, dg_pow_i32); }
static void c_pow_i32_f32(tc_t *t) { c_binary_typed(t, dg_pow_i32_f32); }
static void c_pow_f32_i32(tc_t *t) { c_binary_typed(t, dg_pow_f32_i32); }
static void c_mod_i32(tc_t *t) { c_binary_typed(t, dg_mod_i32); }
static void c_fmod_i32(tc_t *t) { c_binary_typed(t, dg_fmod_i32); }
static void c_max_i32(tc_t *t) { c_variadic_typed(t, dg_max_i32); }
static void c_min_i32(tc_t *t) { c_variadic_typed(t, dg_min_i32); }
static void c_add_i8(tc_t *t) { c_binary_typed(t, dg_add_i8); }
static void c_sub_i8(tc_t *t) { c_binary_typed(t, dg_sub_i8); }
static void c_mul_i8(tc_t *t) { c_binary_typed(t, dg_mul_i8); }
static void c_div_i8(tc_t *t) { c_binary_typed(t, dg_div_i8); }
static void c_mod_i8(tc_t *t) { c_binary_typed(t, dg_mod_i8); }
static void c_fmod_i8(tc_t *t) { c_binary_typed(t, dg_fmod_i8); }
static void c_add_u8(tc_t *t) { c_binary_typed(t, dg_add_u8); }
static void c_sub_u8(tc_t *t) { c_binary_typed(t, dg_sub_u8); }
static void c_mul_u8(tc_t *t) { c_binary_typed(t, dg_mul_u8); }
static void c_div_u8(tc_t *t) { c_binary_typed(t, dg_div_u8); }
static void c_mod_u8(tc_t *t) { c_binary_typed(t, dg_mod_u8); }
static void c_fmod_u8(tc_t *t) { c_binary_typed(t, dg_fmod_u8); }
static void c_max_i8(tc_t *t) { c_variadic_typed(t, dg_max_i8); }
static void c_min_u8(tc_t *t) { c_variadic_typed(t, dg_min_u8); }

/* p_clip = [has_min, has_max, as_inputs], p_bounds = [min, max]: the input
 * form passes the bounds by pointer (as bytes of X's type), the other by
 * value. */
static void c_clip_typed(tc_t *t, void (*k)(void *))
{
    dg_clip_typed_args_t a;
    uint8_t *bounds = (uint8_t *)temp(t, 2);
    memset(&a, 0, sizeof a);
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    a.has_min = P("clip", 0);
    a.has_max = P("clip", 1);
    bounds[0] = (uint8_t)PL("bounds", 0);
    bounds[1] = (uint8_t)PL("bounds", 1);
    if (P("clip", 2)) {
        a.min_ptr = a.has_min ? &bounds[0] : NULL;
        a.max_ptr = a.has_max ? &bounds[1] : NULL;
        a.has_min = a.has_max = 0; /* the pointers alone must suffice */
    } else {
        a.min = PL("bounds", 0);
        a.max = PL("bounds", 1);
    }
    FORK(k, &a);
}
static void c_clip_i8(tc_t *t) { c_clip_typed(t, dg_clip_i8); }
static void c_clip_u8(tc_t *t) { c_clip_typed(t, dg_clip_u8); }

static void c_relu_i8(tc_t *t)
{
    dg_unary_typed_args_t a;
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    FORK(dg_relu_i8, &a);
}

/* p_pool as kernel_tests.c's pool_params (count_include_pad unused),
 * p_order = [storage_order]. */
static void c_maxpool_typed(tc_t *t, void (*k)(void *))
{
    dg_pool_typed_args_t a;
    memset(&a, 0, sizeof a);
    a.batch = P("pool", 0);
    a.channels = P("pool", 1);
    a.in_h = P("pool", 2);
    a.in_w = P("pool", 3);
    a.out_h = P("pool", 4);
    a.out_w = P("pool", 5);
    a.k_h = P("pool", 6);
    a.k_w = P("pool", 7);
    a.stride_h = P("pool", 8);
    a.stride_w = P("pool", 9);
    a.dil_h = P("pool", 10);
    a.dil_w = P("pool", 11);
    a.pad_top = P("pool", 12);
    a.pad_left = P("pool", 13);
    a.pad_bottom = P("pool", 14);
    a.pad_right = P("pool", 15);
    a.storage_order = P("order", 0);
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.indices = find(t, "out_", "indices") ? (int64_t *)out_(t, "indices", NULL) : NULL;
    FORK(k, &a);
}
static void c_maxpool_i8(tc_t *t) { c_maxpool_typed(t, dg_maxpool_i8); }
static void c_maxpool_u8(tc_t *t) { c_maxpool_typed(t, dg_maxpool_u8); }

static void c_reduce_max_typed(tc_t *t, void (*k)(void *))
{
    dg_reduce_typed_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.nkeep = pn(t, "keep_shape");
    a.nred = pn(t, "red_shape");
    for (d = 0; d < a.nkeep; d++) {
        a.keep_shape[d] = P("keep_shape", d);
        a.keep_strides[d] = P("keep_strides", d);
    }
    for (d = 0; d < a.nred; d++) {
        a.red_shape[d] = P("red_shape", d);
        a.red_strides[d] = P("red_strides", d);
    }
    FORK(k, &a);
}
static void c_reduce_max_i64(tc_t *t) { c_reduce_max_typed(t, dg_reduce_max_i64); }
static void c_greater_equal_i64(tc_t *t) { c_compare(t, dg_greater_equal_i64); }
static void c_less_i64(tc_t *t) { c_compare(t, dg_less_i64); }
static void c_equal_i64(tc_t *t) { c_compare(t, dg_equal_i64); }
static void c_greater_i32(tc_t *t) { c_compare(t, dg_greater_i32); }
static void c_less_equal_i32(tc_t *t) { c_compare(t, dg_less_equal_i32); }
static void c_less_i8(tc_t *t) { c_compare(t, dg_less_i8); }
static void c_greater_i8(tc_t *t) { c_compare(t, dg_greater_i8); }
static void c_greater_equal_i8(tc_t *t) { c_compare(t, dg_greater_equal_i8); }
static void c_equal_u8(tc_t *t) { c_compare(t, dg_equal_u8); }
static void c_less_equal_u8(tc_t *t) { c_compare(t, dg_less_equal_u8); }
static void c_greater_equal_u8(tc_t *t) { c_compare(t, dg_greater_equal_u8); }
static void c_mod_i64(tc_t *t) { c_binary_typed(t, dg_mod_i64); }
static void c_fmod_i64(tc_t *t) { c_binary_typed(t, dg_fmod_i64); }
static void c_mod_f32_with(tc_t *t, void (*k)(void *))
{
    dg_binary_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.a = IN("a");
    a.b = IN("b");
    a.y = OUT("y");
    a.n = N("out_y");
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.a_strides[d] = P("astr", d);
        a.b_strides[d] = P("bstr", d);
    }
    FORK(k, &a);
}
static void c_fmod_f32(tc_t *t) { c_mod_f32_with(t, dg_fmod_f32); }
static void c_mod_f32(tc_t *t) { c_mod_f32_with(t, dg_mod_f32); }

/* ---- logic, index and fill kernels (index.c), LogSoftmax ----------------------- */
static void c_not(tc_t *t)
{
    dg_unary_typed_args_t a;
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    FORK(dg_not_bool, &a);
}

/* p_arg = [outer, dim, inner, select_last]; p_min = [1] for ArgMin */
static void c_arg_reduce(tc_t *t)
{
    dg_arg_reduce_args_t a;
    a.x = IN("x");
    a.y = out_(t, "y", NULL);
    a.outer = P("arg", 0);
    a.dim = P("arg", 1);
    a.inner = P("arg", 2);
    a.select_last = P("arg", 3);
    FORK(P("min", 0) ? dg_argmin_f32 : dg_argmax_f32, &a);
}

/* p_fill = [elem_size], p_value = [the value's bytes as an int64], read
 * whole (pv's long is 32 bits on rv32) */
static void c_fill(tc_t *t)
{
    dg_fill_args_t a;
    arr_t *v = need(t, "p_", "value");
    a.y = out_(t, "y", NULL);
    a.n = N("out_y");
    a.elem_size = P("fill", 0);
    a.value = v && v->numel == 1 ? ((const int64_t *)v->data)[0] : 0;
    if (!v || v->numel != 1)
        t->failed_setup = 1;
    FORK(dg_fill, &a);
}

/* p_tile = [elem_size], p_in_shape, p_out_shape */
static void c_tile(tc_t *t)
{
    dg_tile_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.x = in_(t, "x");
    a.y = out_(t, "y", NULL);
    a.elem_size = P("tile", 0);
    a.ndim = pn(t, "in_shape");
    for (d = 0; d < a.ndim; d++) {
        a.in_shape[d] = P("in_shape", d);
        a.out_shape[d] = P("out_shape", d);
    }
    FORK(dg_tile, &a);
}

/* p_resize = [planes, in_h, in_w, out_h, out_w, kh, kw], p_iy / p_ix the
 * tap indices, f_wy / f_wx their weights */
static void c_resize(tc_t *t)
{
    dg_resize_args_t a;
    int32_t *iy = (int32_t *)temp(t, pn(t, "iy") * sizeof(int32_t));
    int32_t *ix = (int32_t *)temp(t, pn(t, "ix") * sizeof(int32_t));
    float *wy = (float *)temp(t, pn(t, "iy") * sizeof(float));
    float *wx = (float *)temp(t, pn(t, "ix") * sizeof(float));
    uint32_t i;
    for (i = 0; i < pn(t, "iy"); i++) {
        iy[i] = PL("iy", i);
        wy[i] = fv(t, "wy", i);
    }
    for (i = 0; i < pn(t, "ix"); i++) {
        ix[i] = PL("ix", i);
        wx[i] = fv(t, "wx", i);
    }
    a.x = IN("x");
    a.y = OUT("y");
    a.planes = P("resize", 0);
    a.in_h = P("resize", 1);
    a.in_w = P("resize", 2);
    a.out_h = P("resize", 3);
    a.out_w = P("resize", 4);
    a.kh = P("resize", 5);
    a.kw = P("resize", 6);
    a.iy = iy;
    a.wy = wy;
    a.ix = ix;
    a.wx = wx;
    a.extrapolation = fv(t, "extrapolation", 0);
    FORK(dg_resize_f32, &a);
}

static void c_log_softmax(tc_t *t)
{
    dg_softmax_args_t a;
    a.outer = P("sm", 0);
    a.dim = P("sm", 1);
    a.inner = P("sm", 2);
    a.x = IN("x");
    a.y = OUT("y");
    FORK(dg_log_softmax_f32, &a);
}
static void c_reduce_max_bool(tc_t *t) { c_reduce_max_typed(t, dg_reduce_max_bool); }

static const case_t CASES[] = {
    {"ceil", NULL, c_ceil, EXACT, {DG_FAULT_CEIL}},
    {"floor", NULL, c_floor, EXACT, {DG_FAULT_FLOOR}},
    {"exp", NULL, c_exp, R, 1e-6f, {DG_FAULT_EXP}},
    {"log", NULL, c_log, R, 1e-6f, {DG_FAULT_LOG}},
    {"sqrt", NULL, c_sqrt, R, 1e-6f, {DG_FAULT_SQRT}},
    {"neg", NULL, c_neg, EXACT, {DG_FAULT_NEG}},
    {"abs_", NULL, c_abs, EXACT, {DG_FAULT_ABS}},
    {"tanh", NULL, c_tanh, R, 1e-6f, {DG_FAULT_TANH}},
    {"sigmoid", NULL, c_sigmoid, R, 1e-6f, {DG_FAULT_SIGMOID}},
    {"erf", NULL, c_erf, R, 1e-6f, {DG_FAULT_ERF}},
    {"hard_swish", NULL, c_hard_swish, R, 1e-6f, {DG_FAULT_HARD_SWISH}},
    {"hard_sigmoid_default", NULL, c_hard_sigmoid, R, 1e-6f, {DG_FAULT_HARD_SIGMOID}},
    {"hard_sigmoid_custom", NULL, c_hard_sigmoid, R, 1e-6f, {DG_FAULT_HARD_SIGMOID}},
    {"swish_alpha1", NULL, c_swish, R, 1e-6f, {DG_FAULT_SWISH}},
    {"swish_quickgelu", NULL, c_swish, R, 1e-6f, {DG_FAULT_SWISH}},
    {"clip_min_max", NULL, c_clip, EXACT, {DG_FAULT_CLIP}},
    {"clip_max_only", NULL, c_clip, EXACT, {DG_FAULT_CLIP}},
    {"clip_none", NULL, c_clip, EXACT, {DG_FAULT_CLIP}},
    {"clip_attr_min", NULL, c_clip, EXACT, {DG_FAULT_CLIP}},
    {"clip_grad_min_max", NULL, c_clip_grad, EXACT, {DG_FAULT_CLIP_GRAD}},
    {"clip_grad_min_only", NULL, c_clip_grad, EXACT, {DG_FAULT_CLIP_GRAD}},
    {"sigmoid_grad", NULL, c_sigmoid_grad, R, 1e-6f, {DG_FAULT_SIGMOID_GRAD}},
    {"tanh_grad", NULL, c_tanh_grad, R, 1e-6f, {DG_FAULT_TANH_GRAD}},
    {"swish_grad", NULL, c_swish_grad, R, 1e-6f, {DG_FAULT_SWISH_GRAD}},
    {"max_bcast3", NULL, c_max, EXACT, {DG_FAULT_MAX}},
    {"min_bcast2", NULL, c_min, EXACT, {DG_FAULT_MIN}},
    {"max_same4", NULL, c_max, EXACT, {DG_FAULT_MAX}},
    {"min_single", NULL, c_min, EXACT, {DG_FAULT_MIN}},
    {"where_bcast", NULL, c_where, EXACT, {DG_FAULT_WHERE}},
    {"where_same_i64", NULL, c_where, EXACT, {DG_FAULT_WHERE}},
    {"cast_f32_i64", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_f32_i32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_f32_u8", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_f32_bool", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_i64_f32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_i32_f32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_bool_f32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_u8_f32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_i64_i32", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_i64_bool", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"gather_axis0", NULL, c_gather, EXACT, {DG_FAULT_GATHER}},
    {"gather_axis1_2d_idx", NULL, c_gather, EXACT, {DG_FAULT_GATHER}},
    {"gather_last_scalar_i32", NULL, c_gather, EXACT, {DG_FAULT_GATHER}},
    {"gather_i64_data", NULL, c_gather, EXACT, {DG_FAULT_GATHER}},
    {"split_equal_axis1", NULL, c_split, EXACT, {DG_FAULT_SPLIT}},
    {"split_uneven_last", NULL, c_split, EXACT, {DG_FAULT_SPLIT}},
    {"split_sizes_axis0", NULL, c_split, EXACT, {DG_FAULT_SPLIT}},
    {"pad_constant_crop", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"pad_constant_default", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"pad_reflect", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"pad_reflect_crop", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"pad_edge_crop", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"pad_wrap", NULL, c_pad, EXACT, {DG_FAULT_PAD}},
    {"global_maxpool", NULL, c_global_maxpool, EXACT, {DG_FAULT_GLOBAL_MAXPOOL}},
    {"reducemax_axes02", NULL, c_reduce_max, EXACT, {DG_FAULT_REDUCE_MAX}},
    {"reducemax_last_keep", NULL, c_reduce_max, EXACT, {DG_FAULT_REDUCE_MAX}},
    {"reducemax_all", NULL, c_reduce_max, EXACT, {DG_FAULT_REDUCE_MAX}},
    {"groupnorm_per_channel", NULL, c_groupnorm, R, 1e-6f, {DG_FAULT_GROUPNORM}},
    {"groupnorm_per_group_opset18", NULL, c_groupnorm, R, 1e-6f, {DG_FAULT_GROUPNORM}},
    {"instancenorm", NULL, c_instancenorm, R, 1e-6f, {DG_FAULT_INSTANCENORM}},
    {"rmsnorm_last", NULL, c_rmsnorm, R, 1e-6f, {DG_FAULT_RMSNORM_Y, DG_FAULT_RMSNORM_INVSTD}},
    {"rmsnorm_axis1", NULL, c_rmsnorm, R, 1e-6f, {DG_FAULT_RMSNORM_Y, DG_FAULT_RMSNORM_INVSTD}},
    {"convtranspose_grouped", NULL, c_conv_transpose, R, 1e-6f, {DG_FAULT_CONV_TRANSPOSE}},
    {"convtranspose_s2_nobias", NULL, c_conv_transpose, R, 1e-6f, {DG_FAULT_CONV_TRANSPOSE}},
    {"convtranspose_1d", NULL, c_conv_transpose, R, 1e-6f, {DG_FAULT_CONV_TRANSPOSE}},
    {"conv1d", NULL, c_conv1d, R, 1e-6f, {DG_FAULT_CONV}},
    {"sign", NULL, c_sign, EXACT, {DG_FAULT_SIGN}},
    {"equal_bcast", NULL, c_equal, EXACT, {DG_FAULT_COMPARE}},
    {"less_same", NULL, c_less, EXACT, {DG_FAULT_COMPARE}},
    {"less_equal_bcast", NULL, c_less_equal, EXACT, {DG_FAULT_COMPARE}},
    {"greater_bcast", NULL, c_greater, EXACT, {DG_FAULT_COMPARE}},
    {"greater_equal_same", NULL, c_greater_equal, EXACT, {DG_FAULT_COMPARE}},
    {"and_bcast", NULL, c_and, EXACT, {DG_FAULT_COMPARE}},
    {"gather_grad_axis0_repeats", NULL, c_gather_grad, R, 1e-6f, {DG_FAULT_GATHER_GRAD}},
    {"gather_grad_axis1", NULL, c_gather_grad, R, 1e-6f, {DG_FAULT_GATHER_GRAD}},
    {"convtranspose_grad", NULL, c_conv_transpose_grad, R, 1e-6f,
     {DG_FAULT_CONV, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convtranspose_grad_1d", NULL, c_conv_transpose_grad, R, 1e-6f,
     {DG_FAULT_CONV, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"pow_bcast_exponents", NULL, c_pow, R, 1e-6f, {DG_FAULT_POW}},
    {"pow_negative_base_int", NULL, c_pow, R, 1e-6f, {DG_FAULT_POW}},
    {"leaky_relu_default", NULL, c_leaky_relu, R, 1e-6f, {DG_FAULT_LEAKY_RELU}},
    {"leaky_relu_custom", NULL, c_leaky_relu, R, 1e-6f, {DG_FAULT_LEAKY_RELU}},
    {"elu_default", NULL, c_elu, R, 1e-6f, {DG_FAULT_ELU}},
    {"elu_custom", NULL, c_elu, R, 1e-6f, {DG_FAULT_ELU}},
    {"softplus", NULL, c_softplus, R, 1e-6f, {DG_FAULT_SOFTPLUS}},
    {"prelu_channel", NULL, c_prelu, R, 1e-6f, {DG_FAULT_PRELU}},
    {"prelu_last_axis", NULL, c_prelu, R, 1e-6f, {DG_FAULT_PRELU}},
    {"prelu_same", NULL, c_prelu, R, 1e-6f, {DG_FAULT_PRELU}},
    {"maxpool3d_pad_stride2", NULL, c_maxpool3d, EXACT, {DG_FAULT_MAXPOOL3D_Y, DG_FAULT_MAXPOOL3D_IDX}},
    {"maxpool3d_dil2_ceil_ties", NULL, c_maxpool3d, EXACT,
     {DG_FAULT_MAXPOOL3D_Y, DG_FAULT_MAXPOOL3D_IDX}},
    {"avgpool3d_excl_pad", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"avgpool3d_incl_pad_ceil", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"avgpool3d_dil2", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"avgpool2d_dil2_ceil_incl_pad", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"avgpool2d_dil3_excl_pad", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"avgpool1d_dil2_ceil_incl_pad", NULL, c_avgpool3d, R, 1e-6f, {DG_FAULT_AVGPOOL3D}},
    {"conv3d_pad_stride2_bias", NULL, c_conv3d, R, 1e-6f, {DG_FAULT_CONV3D}},
    {"conv3d_dil2_groups", NULL, c_conv3d, R, 1e-6f, {DG_FAULT_CONV3D}},
    {"conv3d_depthwise_nobias", NULL, c_conv3d, R, 1e-6f, {DG_FAULT_CONV3D}},
    {"convtranspose3d_s2_pad_bias", NULL, c_conv_transpose3d, R, 1e-6f, {DG_FAULT_CONV_TRANSPOSE3D}},
    {"convtranspose3d_dil2_groups", NULL, c_conv_transpose3d, R, 1e-6f, {DG_FAULT_CONV_TRANSPOSE3D}},
    {"cast_f32_i64_out_of_range", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_f32_i32_out_of_range", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"cast_f32_u8_out_of_range", NULL, c_cast, EXACT, {DG_FAULT_CAST}},
    {"pow_i64_f32_out_of_range", NULL, c_pow_i64_f32, EXACT, {DG_FAULT_POW}},
    {"add_i64_bcast", NULL, c_add_i64, EXACT, {DG_FAULT_ADD}},
    {"sub_i64_same", NULL, c_sub_i64, EXACT, {DG_FAULT_SUB}},
    {"mul_i64_bcast", NULL, c_mul_i64, EXACT, {DG_FAULT_MUL}},
    {"div_i64_bcast", NULL, c_div_i64, EXACT, {DG_FAULT_DIV}},
    {"pow_i64_bcast", NULL, c_pow_i64, EXACT, {DG_FAULT_POW}},
    {"pow_i64_f32", NULL, c_pow_i64_f32, EXACT, {DG_FAULT_POW}},
    {"pow_f32_i64", NULL, c_pow_f32_i64, R, 1e-6f, {DG_FAULT_POW}},
    {"max_i64_bcast3", NULL, c_max_i64, EXACT, {DG_FAULT_MAX}},
    {"min_i64_same2", NULL, c_min_i64, EXACT, {DG_FAULT_MIN}},
    {"reducemax_i64_axes02", NULL, c_reduce_max_i64, EXACT, {DG_FAULT_REDUCE_MAX}},
    {"reducemax_bool_last_keep", NULL, c_reduce_max_bool, EXACT, {DG_FAULT_REDUCE_MAX}},
    {"mod_i64_bcast", NULL, c_mod_i64, EXACT, {DG_FAULT_MOD}},
    {"fmod_i64_same", NULL, c_fmod_i64, EXACT, {DG_FAULT_MOD}},
    {"fmod_f32_bcast", NULL, c_fmod_f32, EXACT, {DG_FAULT_MOD}},
    {"mod_f32_bcast", NULL, c_mod_f32, EXACT, {DG_FAULT_MOD}},
    {"greater_equal_i64_bcast", NULL, c_greater_equal_i64, EXACT, {DG_FAULT_COMPARE}},
    {"less_i64_same", NULL, c_less_i64, EXACT, {DG_FAULT_COMPARE}},
    {"equal_i64_bcast", NULL, c_equal_i64, EXACT, {DG_FAULT_COMPARE}},
    {"greater_i32_same", NULL, c_greater_i32, EXACT, {DG_FAULT_COMPARE}},
    {"less_equal_i32_bcast", NULL, c_less_equal_i32, EXACT, {DG_FAULT_COMPARE}},
    {"add_i32_bcast", NULL, c_add_i32, EXACT, {DG_FAULT_ADD}},
    {"sub_i32_same", NULL, c_sub_i32, EXACT, {DG_FAULT_SUB}},
    {"mul_i32_bcast", NULL, c_mul_i32, EXACT, {DG_FAULT_MUL}},
    {"div_i32_bcast", NULL, c_div_i32, EXACT, {DG_FAULT_DIV}},
    {"pow_i32_bcast", NULL, c_pow_i32, EXACT, {DG_FAULT_POW}},
    {"pow_i32_f32", NULL, c_pow_i32_f32, EXACT, {DG_FAULT_POW}},
    {"pow_f32_i32", NULL, c_pow_f32_i32, R, 1e-6f, {DG_FAULT_POW}},
    {"max_i32_bcast3", NULL, c_max_i32, EXACT, {DG_FAULT_MAX}},
    {"min_i32_same2", NULL, c_min_i32, EXACT, {DG_FAULT_MIN}},
    {"mod_i32_bcast", NULL, c_mod_i32, EXACT, {DG_FAULT_MOD}},
    {"fmod_i32_same", NULL, c_fmod_i32, EXACT, {DG_FAULT_MOD}},
    {"add_i8_bcast", NULL, c_add_i8, EXACT, {DG_FAULT_ADD}},
    {"sub_i8_same", NULL, c_sub_i8, EXACT, {DG_FAULT_SUB}},
    {"mul_i8_bcast", NULL, c_mul_i8, EXACT, {DG_FAULT_MUL}},
    {"add_u8_same", NULL, c_add_u8, EXACT, {DG_FAULT_ADD}},
    {"sub_u8_bcast", NULL, c_sub_u8, EXACT, {DG_FAULT_SUB}},
    {"mul_u8_same", NULL, c_mul_u8, EXACT, {DG_FAULT_MUL}},
    {"div_i8_bcast", NULL, c_div_i8, EXACT, {DG_FAULT_DIV}},
    {"div_u8_same", NULL, c_div_u8, EXACT, {DG_FAULT_DIV}},
    {"mod_i8_bcast", NULL, c_mod_i8, EXACT, {DG_FAULT_MOD}},
    {"fmod_i8_same", NULL, c_fmod_i8, EXACT, {DG_FAULT_MOD}},
    {"mod_u8_bcast", NULL, c_mod_u8, EXACT, {DG_FAULT_MOD}},
    {"fmod_u8_same", NULL, c_fmod_u8, EXACT, {DG_FAULT_MOD}},
    {"less_i8_bcast", NULL, c_less_i8, EXACT, {DG_FAULT_COMPARE}},
    {"greater_i8_same", NULL, c_greater_i8, EXACT, {DG_FAULT_COMPARE}},
    {"equal_u8_bcast", NULL, c_equal_u8, EXACT, {DG_FAULT_COMPARE}},
    {"less_equal_u8_same", NULL, c_less_equal_u8, EXACT, {DG_FAULT_COMPARE}},
    {"greater_equal_u8_bcast", NULL, c_greater_equal_u8, EXACT, {DG_FAULT_COMPARE}},
    {"greater_equal_i8_same", NULL, c_greater_equal_i8, EXACT, {DG_FAULT_COMPARE}},
    {"max_i8_bcast3", NULL, c_max_i8, EXACT, {DG_FAULT_MAX}},
    {"min_u8_same2", NULL, c_min_u8, EXACT, {DG_FAULT_MIN}},
    {"clip_i8_inputs", NULL, c_clip_i8, EXACT, {DG_FAULT_CLIP}},
    {"clip_i8_min_only", NULL, c_clip_i8, EXACT, {DG_FAULT_CLIP}},
    {"clip_u8_max_only", NULL, c_clip_u8, EXACT, {DG_FAULT_CLIP}},
    {"relu_i8", NULL, c_relu_i8, EXACT, {DG_FAULT_RELU}},
    {"maxpool_i8_pads_ceil_ties", NULL, c_maxpool_i8, EXACT, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"maxpool_u8_dilations", NULL, c_maxpool_u8, EXACT, {DG_FAULT_MAXPOOL_Y}},
    {"maxpool_i8_dense_2x2", NULL, c_maxpool_i8, EXACT, {DG_FAULT_MAXPOOL_Y}},
    {"maxpool_u8_dense_3x2", NULL, c_maxpool_u8, EXACT, {DG_FAULT_MAXPOOL_Y}},
    {"maxpool_i8_lowest_column_major", NULL, c_maxpool_i8, EXACT, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"maxpool_u8_1d", NULL, c_maxpool_u8, EXACT, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"not_bool", NULL, c_not, EXACT, {DG_FAULT_NOT}},
    {"argmax_axis1_ties", NULL, c_arg_reduce, EXACT, {DG_FAULT_ARG}},
    {"argmin_last_select_last", NULL, c_arg_reduce, EXACT, {DG_FAULT_ARG}},
    {"fill_f32", NULL, c_fill, EXACT, {DG_FAULT_FILL}},
    {"fill_i64", NULL, c_fill, EXACT, {DG_FAULT_FILL}},
    {"fill_bool", NULL, c_fill, EXACT, {DG_FAULT_FILL}},
    {"tile_f32_3d", NULL, c_tile, EXACT, {DG_FAULT_TILE}},
    {"tile_i64_rank6", NULL, c_tile, EXACT, {DG_FAULT_TILE}},
    {"log_softmax_axis1", NULL, c_log_softmax, R, 1e-6f, {DG_FAULT_LOG_SOFTMAX}},
    {"log_softmax_last_large", NULL, c_log_softmax, R, 1e-6f, {DG_FAULT_LOG_SOFTMAX}},
    {"resize_linear_align_corners", NULL, c_resize, R, 1e-6f, {DG_FAULT_RESIZE}},
    {"resize_nearest_asymmetric_floor", NULL, c_resize, EXACT, {DG_FAULT_RESIZE}},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

int main(int argc, char **argv)
{
    return kt_main(argc, argv, CASES, NCASES, "operator kernel tests");
}
