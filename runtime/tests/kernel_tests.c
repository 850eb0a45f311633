/*
 * Kernel tests: every dg_* kernel against onnxruntime (or numpy) reference
 * vectors made by tools/make_kernel_refs.py.
 *
 *   kernel_tests REFDIR [--cores 1,3,8] [--fault] [CASE...]
 *
 * REFDIR holds one folder per case (tests/it/runtime.rs unpacks the npz files
 * there): manifest.txt ("key dtype ndim d0 d1 ...") and key.bin (raw
 * little-endian). Each case runs inside a cluster task that forks the kernel
 * on 1, 3 and 8 cores; outputs start as NaN (0xFF bytes) so an element no
 * core writes fails. A case passes when every output is within tolerance
 * (|got - ref| <= rtol |ref| + atol, NaN fails; integers exact) for every
 * core count and the results are bit-identical across core counts.
 *
 * --fault (build with -DDG_FAULT_INJECTION): instead, for each case and each
 * fault id it lists, perturb that kernel output and require the check to
 * fail.
 */
#include "dg_kernels.h"
#include "pmsis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_harness.h"

/* ---- cases ------------------------------------------------------------------- */
static void c_binary(tc_t *t, void (*k)(void *))
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
static void c_add(tc_t *t) { c_binary(t, dg_add_f32); }
static void c_sub(tc_t *t) { c_binary(t, dg_sub_f32); }
static void c_mul(tc_t *t) { c_binary(t, dg_mul_f32); }
static void c_div(tc_t *t) { c_binary(t, dg_div_f32); }
static void c_pow(tc_t *t) { c_binary(t, dg_pow_f32); }

static void c_unary(tc_t *t, void (*k)(void *))
{
    dg_unary_args_t a;
    a.x = IN("x");
    a.y = OUT("y");
    a.n = N("out_y");
    FORK(k, &a);
}
static void c_relu(tc_t *t) { c_unary(t, dg_relu_f32); }
static void c_gelu(tc_t *t) { c_unary(t, dg_gelu_f32); }

static void c_scale(tc_t *t)
{
    dg_scale_args_t a;
    a.x = IN("x");
    a.scale = IN("scale");
    a.y = OUT("y");
    a.n = N("out_y");
    a.scale_down = P("scale_down", 0);
    FORK(dg_scale_f32, &a);
}

static void c_sum(tc_t *t)
{
    const float *xs[3];
    dg_sum_args_t a;
    xs[0] = IN("x0");
    xs[1] = IN("x1");
    xs[2] = IN("x2");
    a.x = xs;
    a.nin = 3;
    a.y = OUT("y");
    a.n = N("out_y");
    FORK(dg_sum_f32, &a);
}

static void c_act_grad(tc_t *t, void (*k)(void *))
{
    dg_act_grad_args_t a;
    a.dy = IN("dy");
    a.x = IN("x");
    a.dx = OUT("dx");
    a.n = N("out_dx");
    FORK(k, &a);
}
static void c_relu_grad(tc_t *t) { c_act_grad(t, dg_relu_grad_f32); }
static void c_gelu_grad(tc_t *t) { c_act_grad(t, dg_gelu_grad_f32); }

static void c_gemm(tc_t *t)
{
    dg_gemm_args_t a;
    memset(&a, 0, sizeof a);
    a.a = IN("a");
    a.b = IN("b");
    a.c = P("gemm", 7) ? IN("c") : NULL;
    a.y = OUT("y");
    a.m = P("gemm", 0);
    a.n = P("gemm", 1);
    a.k = P("gemm", 2);
    a.trans_a = P("gemm", 3);
    a.trans_b = P("gemm", 4);
    a.c_stride_m = P("gemm", 5);
    a.c_stride_n = P("gemm", 6);
    a.alpha = fv(t, "gemm", 0);
    a.beta = fv(t, "gemm", 1);
    a.act = find(t, "p_", "act") ? P("act", 0) : 0;
    FORK(dg_gemm_f32, &a);
}

static void matmul_params(tc_t *t, dg_matmul_args_t *a)
{
    uint32_t d;
    memset(a, 0, sizeof *a);
    a->a = IN("a");
    a->b = IN("b");
    a->y = OUT("y");
    a->m = P("mm", 0);
    a->n = P("mm", 1);
    a->k = P("mm", 2);
    a->batch = P("mm", 3);
    a->nbatch_dims = pn(t, "bshape");
    for (d = 0; d < a->nbatch_dims; d++) {
        a->batch_shape[d] = P("bshape", d);
        a->a_bstrides[d] = P("abstr", d);
        a->b_bstrides[d] = P("bbstr", d);
    }
}

static void c_matmul(tc_t *t)
{
    dg_matmul_args_t a;
    matmul_params(t, &a);
    FORK(dg_matmul_f32, &a);
}

static void c_fused_matmul(tc_t *t)
{
    dg_matmul_args_t a;
    matmul_params(t, &a);
    a.trans_a = P("fused", 0);
    a.trans_b = P("fused", 1);
    a.alpha = fv(t, "fused", 0);
    FORK(dg_fused_matmul_f32, &a);
}

/* ---- accumulate: one product / convolution split in two calls -----------------
 * Rows r0..r1 and columns c0..c1 of a row-major [rows, cols] block, copied
 * to d. */
static void copy_block(float *d, const float *src, uint32_t cols, uint32_t r0, uint32_t r1,
                       uint32_t c0, uint32_t c1)
{
    uint32_t r;
    for (r = r0; r < r1; r++)
        memcpy(d + (size_t)(r - r0) * (c1 - c0), src + (size_t)r * cols + c0,
               (c1 - c0) * sizeof(float));
}

static float *block(tc_t *t, const float *src, uint32_t cols, uint32_t r0, uint32_t r1,
                    uint32_t c0, uint32_t c1)
{
    float *d = (float *)temp(t, (size_t)(r1 - r0) * (c1 - c0) * sizeof(float));
    copy_block(d, src, cols, r0, r1, c0, c1);
    return d;
}

/* op(A)'s k range [k0, k1) of an [m, k] A ([k, m] when trans): likewise B. */
static const float *a_ktile(tc_t *t, const float *a, uint32_t trans, uint32_t m, uint32_t k,
                            uint32_t k0, uint32_t k1)
{
    return trans ? block(t, a, m, k0, k1, 0, m) : block(t, a, k, 0, m, k0, k1);
}

static const float *b_ktile(tc_t *t, const float *b, uint32_t trans, uint32_t n, uint32_t k,
                            uint32_t k0, uint32_t k1)
{
    return trans ? block(t, b, k, 0, n, k0, k1) : block(t, b, n, k0, k1, 0, n);
}

/* Gemm with K in two tiles: the first call as usual (C included), the
 * second with accumulate. */
static void c_gemm_acc(tc_t *t)
{
    dg_gemm_args_t a;
    const float *A, *B;
    uint32_t k, k1;
    memset(&a, 0, sizeof a);
    A = IN("a");
    B = IN("b");
    a.c = P("gemm", 7) ? IN("c") : NULL;
    a.y = OUT("y");
    a.m = P("gemm", 0);
    a.n = P("gemm", 1);
    k = P("gemm", 2);
    k1 = k / 2;
    a.trans_a = P("gemm", 3);
    a.trans_b = P("gemm", 4);
    a.c_stride_m = P("gemm", 5);
    a.c_stride_n = P("gemm", 6);
    a.alpha = fv(t, "gemm", 0);
    a.beta = fv(t, "gemm", 1);
    a.k = k1;
    a.a = a_ktile(t, A, a.trans_a, a.m, k, 0, k1);
    a.b = b_ktile(t, B, a.trans_b, a.n, k, 0, k1);
    FORK(dg_gemm_f32, &a);
    a.k = k - k1;
    a.a = a_ktile(t, A, a.trans_a, a.m, k, k1, k);
    a.b = b_ktile(t, B, a.trans_b, a.n, k, k1, k);
    a.accumulate = 1;
    FORK(dg_gemm_f32, &a);
}

/* The k tile [k0, k1) of each of nb stacked operands, as one buffer: A
 * ([mn, k], or [k, mn] when trans) when is_a, else B ([k, mn], or [mn, k]
 * when trans). */
static const float *ktiles(tc_t *t, const float *src, uint32_t nb, int is_a, uint32_t trans,
                           uint32_t mn, uint32_t k, uint32_t k0, uint32_t k1)
{
    const uint32_t each = mn * (k1 - k0);
    float *d = (float *)temp(t, (size_t)nb * each * sizeof(float));
    uint32_t i;
    for (i = 0; i < nb; i++) {
        const float *m = src + (size_t)i * mn * k;
        if (is_a != (int)trans) /* k is the column index */
            copy_block(d + (size_t)i * each, m, k, 0, mn, k0, k1);
        else
            copy_block(d + (size_t)i * each, m, mn, k0, k1, 0, mn);
    }
    return d;
}

/* MatMul / FusedMatMul with K in two tiles (batch strides are multiples of
 * the [m, k] / [k, n] matrices, so they scale with the tile). */
static void mm_acc(tc_t *t, void (*kernel)(void *), int fused)
{
    dg_matmul_args_t a, h;
    uint32_t k, k1, d, nb_a, nb_b, half;
    matmul_params(t, &a);
    if (fused) {
        a.trans_a = P("fused", 0);
        a.trans_b = P("fused", 1);
        a.alpha = fv(t, "fused", 0);
    }
    k = a.k, k1 = k / 2;
    nb_a = (uint32_t)(N("in_a") / (a.m * k));
    nb_b = (uint32_t)(N("in_b") / (a.n * k));
    for (half = 0; half < 2; half++) {
        const uint32_t k0 = half ? k1 : 0, ke = half ? k : k1;
        h = a;
        h.k = ke - k0;
        h.accumulate = half;
        h.a = ktiles(t, a.a, nb_a, 1, a.trans_a, a.m, k, k0, ke);
        h.b = ktiles(t, a.b, nb_b, 0, a.trans_b, a.n, k, k0, ke);
        for (d = 0; d < a.nbatch_dims; d++) {
            h.a_bstrides[d] = a.a_bstrides[d] / k * h.k;
            h.b_bstrides[d] = a.b_bstrides[d] / k * h.k;
        }
        FORK(kernel, &h);
    }
}
static void c_matmul_acc(tc_t *t) { mm_acc(t, dg_matmul_f32, 0); }
static void c_fused_matmul_acc(tc_t *t) { mm_acc(t, dg_fused_matmul_f32, 1); }

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
    a->act = find(t, "p_", "act") ? P("act", 0) : 0;
}

static void c_conv(tc_t *t)
{
    dg_conv_args_t a;
    conv_params(t, &a);
    a.x = IN("x");
    a.w = IN("w");
    a.b = find(t, "in_", "b") ? IN("b") : NULL;
    a.y = OUT("y");
    FORK(dg_conv_f32, &a);
}

/* Conv (group 1) over two input-channel tiles: the first without bias, the
 * second accumulating, with the bias. */
static void c_conv_acc(tc_t *t)
{
    dg_conv_args_t a;
    const float *x, *w, *b;
    uint32_t c, c1, hw, kk;
    conv_params(t, &a);
    x = IN("x");
    w = IN("w");
    b = find(t, "in_", "b") ? IN("b") : NULL;
    a.y = OUT("y");
    c = a.in_c, c1 = c / 2, hw = a.in_h * a.in_w, kk = a.k_h * a.k_w;
    a.in_c = c1;
    a.x = block(t, x, c * hw, 0, a.batch, 0, c1 * hw);
    a.w = block(t, w, c * kk, 0, a.out_c, 0, c1 * kk);
    a.b = NULL;
    FORK(dg_conv_f32, &a);
    a.in_c = c - c1;
    a.x = block(t, x, c * hw, 0, a.batch, c1 * hw, c * hw);
    a.w = block(t, w, c * kk, 0, a.out_c, c1 * kk, c * kk);
    a.b = b;
    a.accumulate = 1;
    FORK(dg_conv_f32, &a);
}

/* ConvGrad with dW / dB over two batch tiles (sample 0, then the rest). */
static void c_conv_grad_acc(tc_t *t)
{
    dg_conv_args_t a;
    uint32_t nb;
    conv_params(t, &a);
    a.x = IN("x");
    a.w = IN("w");
    a.dy = IN("dy");
    a.dx = OUT("dx");
    a.dw = OUT("dw");
    a.db = OUT("db");
    FORK(dg_conv_grad_dx_f32, &a);
    nb = a.batch;
    a.batch = 1;
    FORK(dg_conv_grad_dw_f32, &a);
    FORK(dg_conv_grad_db_f32, &a);
    a.batch = nb - 1;
    a.x += a.in_c * a.in_h * a.in_w;
    a.dy += a.out_c * a.out_h * a.out_w;
    a.accumulate = 1;
    FORK(dg_conv_grad_dw_f32, &a);
    FORK(dg_conv_grad_db_f32, &a);
}

static void c_conv_grad(tc_t *t)
{
    dg_conv_args_t a;
    conv_params(t, &a);
    a.x = IN("x");
    a.w = IN("w");
    a.dy = IN("dy");
    a.dx = OUT("dx");
    a.dw = OUT("dw");
    a.db = OUT("db");
    FORK(dg_conv_grad_dx_f32, &a);
    FORK(dg_conv_grad_dw_f32, &a);
    FORK(dg_conv_grad_db_f32, &a);
}

static void pool_params(tc_t *t, dg_pool_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->batch = P("pool", 0);
    a->channels = P("pool", 1);
    a->in_h = P("pool", 2);
    a->in_w = P("pool", 3);
    a->out_h = P("pool", 4);
    a->out_w = P("pool", 5);
    a->k_h = P("pool", 6);
    a->k_w = P("pool", 7);
    a->stride_h = P("pool", 8);
    a->stride_w = P("pool", 9);
    a->dil_h = P("pool", 10);
    a->dil_w = P("pool", 11);
    a->pad_top = P("pool", 12);
    a->pad_left = P("pool", 13);
    a->pad_bottom = P("pool", 14);
    a->pad_right = P("pool", 15);
    a->count_include_pad = P("pool", 16);
}

static void c_maxpool(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.x = IN("x");
    a.y = OUT("y");
    a.indices = find(t, "out_", "indices") ? (int64_t *)out_(t, "indices", NULL) : NULL;
    FORK(dg_maxpool_f32, &a);
}

static void c_maxpool_grad(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.dy = IN("dy");
    a.indices_in = (const int64_t *)in_(t, "indices");
    a.dx = OUT("dx");
    FORK(dg_maxpool_grad_f32, &a);
}

static void c_avgpool(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.x = IN("x");
    a.y = OUT("y");
    FORK(dg_avgpool_f32, &a);
}

static void c_avgpool_grad(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.dy = IN("dy");
    a.dx = OUT("dx");
    FORK(dg_avgpool_grad_f32, &a);
}

static void c_gap(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.x = IN("x");
    a.y = OUT("y");
    FORK(dg_global_avgpool_f32, &a);
}

static void c_gap_grad(tc_t *t)
{
    dg_pool_args_t a;
    pool_params(t, &a);
    a.dy = IN("dy");
    a.dx = OUT("dx");
    FORK(dg_global_avgpool_grad_f32, &a);
}

static void bn_params(tc_t *t, dg_batchnorm_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->batch = P("bn", 0);
    a->channels = P("bn", 1);
    a->spatial = P("bn", 2);
    a->epsilon = fv(t, "bn", 0);
    a->momentum = fv(t, "bn", 1);
    a->x = IN("x");
    a->scale = IN("scale");
    a->bias = IN("bias");
    a->mean = IN("mean");
    a->var = IN("var");
    a->y = OUT("y");
}

static void c_bn(tc_t *t)
{
    dg_batchnorm_args_t a;
    bn_params(t, &a);
    FORK(dg_batchnorm_f32, &a);
}

static void c_bn_train(tc_t *t)
{
    dg_batchnorm_args_t a;
    bn_params(t, &a);
    a.running_mean_out = OUT("running_mean");
    a.running_var_out = OUT("running_var");
    a.saved_mean = OUT("saved_mean");
    a.saved_inv_std = OUT("saved_inv_std");
    FORK(dg_batchnorm_train_f32, &a);
}

static void c_bn_grad(tc_t *t)
{
    dg_batchnorm_grad_args_t a;
    a.batch = P("bn", 0);
    a.channels = P("bn", 1);
    a.spatial = P("bn", 2);
    a.dy = IN("dy");
    a.x = IN("x");
    a.scale = IN("scale");
    a.saved_mean = IN("saved_mean");
    a.saved_inv_std = IN("saved_inv_std");
    a.dx = OUT("dx");
    a.dscale = OUT("dscale");
    a.dbias = OUT("dbias");
    FORK(dg_batchnorm_grad_f32, &a);
}

static void c_ln(tc_t *t)
{
    dg_layernorm_args_t a;
    a.rows = P("ln", 0);
    a.cols = P("ln", 1);
    a.epsilon = fv(t, "ln", 0);
    a.x = IN("x");
    a.scale = IN("scale");
    a.bias = IN("bias");
    a.y = OUT("y");
    a.mean = OUT("mean");
    a.inv_std = OUT("inv_std");
    FORK(dg_layernorm_f32, &a);
}

static void ln_grad(tc_t *t, int recompute)
{
    dg_layernorm_grad_args_t a;
    a.rows = P("ln", 0);
    a.cols = P("ln", 1);
    a.epsilon = fv(t, "ln", 0);
    a.dy = IN("dy");
    a.x = IN("x");
    a.scale = IN("scale");
    a.mean = recompute ? NULL : IN("mean");
    a.inv_std = recompute ? NULL : IN("inv_std");
    a.scratch = recompute ? (float *)temp(t, 2 * sizeof(float) * a.rows) : NULL;
    a.dx = OUT("dx");
    a.dscale = OUT("dscale");
    a.dbias = OUT("dbias");
    FORK(dg_layernorm_grad_f32, &a);
}
static void c_ln_grad(tc_t *t) { ln_grad(t, 0); }
static void c_ln_grad_recompute(tc_t *t) { ln_grad(t, 1); }

static void c_softmax(tc_t *t)
{
    dg_softmax_args_t a;
    a.outer = P("sm", 0);
    a.dim = P("sm", 1);
    a.inner = P("sm", 2);
    a.x = IN("x");
    a.y = OUT("y");
    FORK(dg_softmax_f32, &a);
}

static void c_softmax_grad(tc_t *t)
{
    dg_softmax_grad_args_t a;
    a.outer = P("sm", 0);
    a.dim = P("sm", 1);
    a.inner = P("sm", 2);
    a.dy = IN("dy");
    a.y = IN("y");
    a.dx = OUT("dx");
    FORK(dg_softmax_grad_f32, &a);
}

static void c_sce(tc_t *t)
{
    dg_sce_args_t a;
    memset(&a, 0, sizeof a); /* optional fields (class weights) unset */
    a.batch = P("sce", 0);
    a.classes = P("sce", 1);
    a.inner = P("sce", 2);
    a.has_ignore = P("sce", 3);
    a.ignore_index = pv(t, "sce", 4);
    a.reduction = P("sce", 5);
    a.labels_i32 = P("sce", 6);
    a.scores = IN("scores");
    a.labels = in_(t, "labels");
    a.log_prob = OUT("log_prob");
    a.loss = OUT("loss");
    FORK(dg_sce_loss_f32, &a);
}

static void c_sce_grad(tc_t *t)
{
    dg_sce_grad_args_t a;
    a.batch = P("sce", 0);
    a.classes = P("sce", 1);
    a.inner = P("sce", 2);
    a.has_ignore = P("sce", 3);
    a.ignore_index = pv(t, "sce", 4);
    a.reduction = P("sce", 5);
    a.labels_i32 = P("sce", 6);
    a.dy = IN("dy");
    a.log_prob = IN("log_prob");
    a.labels = in_(t, "labels");
    a.dx = OUT("dx");
    FORK(dg_sce_loss_grad_f32, &a);
}

static void c_mse(tc_t *t)
{
    dg_mse_args_t a;
    memset(&a, 0, sizeof a);
    a.x = IN("x");
    a.target = IN("target");
    a.loss = OUT("loss");
    a.n = N("in_x");
    FORK(dg_mse_loss_f32, &a);
}

static void c_mse_grad(tc_t *t)
{
    dg_mse_grad_args_t a;
    a.dy = IN("dy");
    a.x = IN("x");
    a.target = IN("target");
    a.dx = OUT("dx");
    a.n = N("in_x");
    FORK(dg_mse_loss_grad_f32, &a);
}

static void c_reduce(tc_t *t, void (*k)(void *))
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
    FORK(k, &a);
}
static void c_reduce_sum(tc_t *t) { c_reduce(t, dg_reduce_sum_f32); }
static void c_reduce_mean(tc_t *t) { c_reduce(t, dg_reduce_mean_f32); }

static void c_copy(tc_t *t)
{
    dg_copy_args_t a;
    a.x = in_(t, "x");
    a.y = OUT("y");
    a.bytes = N("in_x") * 4;
    FORK(dg_copy_kernel, &a);
}

static void c_strided(tc_t *t, void (*k)(void *))
{
    dg_strided_copy_args_t a;
    uint32_t d;
    memset(&a, 0, sizeof a);
    a.x = in_(t, "x");
    a.y = OUT("y");
    a.elem_size = 4;
    a.ndim = pn(t, "shape");
    for (d = 0; d < a.ndim; d++) {
        a.shape[d] = P("shape", d);
        a.strides[d] = (int32_t)pv(t, "strides", d);
    }
    a.offset = (int32_t)pv(t, "offset", 0);
    FORK(k, &a);
}
static void c_transpose(tc_t *t) { c_strided(t, dg_transpose); }
static void c_slice(tc_t *t) { c_strided(t, dg_slice); }
static void c_expand(tc_t *t) { c_strided(t, dg_expand); }

static void c_concat(tc_t *t)
{
    const void *xs[3];
    uint32_t sizes[3];
    dg_concat_args_t a;
    xs[0] = in_(t, "x0");
    xs[1] = in_(t, "x1");
    xs[2] = in_(t, "x2");
    sizes[0] = P("sizes", 0);
    sizes[1] = P("sizes", 1);
    sizes[2] = P("sizes", 2);
    a.x = xs;
    a.sizes = sizes;
    a.nin = 3;
    a.y = OUT("y");
    a.elem_size = 4;
    a.outer = P("outer_inner", 0);
    a.inner = P("outer_inner", 1);
    FORK(dg_concat, &a);
}

static void c_accumulate(tc_t *t)
{
    dg_accumulate_args_t a;
    uint8_t *reset = (uint8_t *)temp(t, 1);
    uint8_t *updated = (uint8_t *)temp(t, 1);
    arr_t *r = need(t, "in_", "reset");
    reset[0] = (uint8_t)(r ? ((const int64_t *)r->data)[0] != 0 : 0);
    a.buffer = (float *)out_(t, "buffer", "buffer"); /* in place */
    a.grad = IN("grad");
    a.lazy_reset = reset;
    a.out = a.buffer;
    a.updated = updated;
    a.n = N("in_grad");
    FORK(dg_inplace_accumulate_f32, &a);
    if (updated[0] != 1) {
        printf("  accumulate: updated flag not set\n");
        t->failed_setup = 1;
    }
}

static void c_sgd(tc_t *t)
{
    dg_sgd_args_t a;
    a.w_out = (float *)out_(t, "w", "w"); /* in place: w_out aliases w */
    a.w = a.w_out;
    a.g = IN("g");
    a.n = N("in_w");
    a.lr = fv(t, "lr", 0);
    a.lr_ptr = NULL;
    FORK(dg_sgd_f32, &a);
}

static void c_momentum_sgd(tc_t *t)
{
    dg_momentum_sgd_args_t a;
    a.w_out = (float *)out_(t, "w", "w"); /* in place: w_out aliases w */
    a.w = a.w_out;
    a.g = IN("g");
    a.velocity = (float *)out_(t, "velocity", "velocity");
    a.n = N("in_w");
    a.lr = fv(t, "hyper", 0);
    a.lr_ptr = NULL;
    a.momentum = fv(t, "hyper", 1);
    a.weight_decay = fv(t, "hyper", 2);
    FORK(dg_momentum_sgd_f32, &a);
}

static void c_adamw(tc_t *t)
{
    dg_adamw_args_t a;
    a.w_out = (float *)out_(t, "w", "w"); /* in place: w_out aliases w */
    a.w = a.w_out;
    a.g = IN("g");
    a.m = (float *)out_(t, "m", "m");
    a.v = (float *)out_(t, "v", "v");
    a.step = (int64_t *)out_(t, "step", "step");
    a.n = N("in_w");
    a.lr = fv(t, "hyper", 0);
    a.lr_ptr = NULL;
    a.beta1 = fv(t, "hyper", 1);
    a.beta2 = fv(t, "hyper", 2);
    a.epsilon = fv(t, "hyper", 3);
    a.weight_decay = fv(t, "hyper", 4);
    a.hold_step = 0;
    FORK(dg_adamw_f32, &a);
}

/* ---- the table ----------------------------------------------------------------- */
#define R 1e-5f
static const case_t CASES[] = {
    {"add_same", NULL, c_add, R, 1e-6f, {DG_FAULT_ADD}},
    {"add_bcast", NULL, c_add, R, 1e-6f, {DG_FAULT_ADD}},
    {"sub_bcast", NULL, c_sub, R, 1e-6f, {DG_FAULT_SUB}},
    {"mul_bcast", NULL, c_mul, R, 1e-6f, {DG_FAULT_MUL}},
    {"div_bcast", NULL, c_div, R, 1e-6f, {DG_FAULT_DIV}},
    {"pow_square", NULL, c_pow, R, 1e-6f, {DG_FAULT_POW}},
    {"relu", NULL, c_relu, R, 1e-6f, {DG_FAULT_RELU}},
    {"gelu", NULL, c_gelu, R, 1e-6f, {DG_FAULT_GELU}},
    {"scale_mul", NULL, c_scale, R, 1e-6f, {DG_FAULT_SCALE}},
    {"scale_down", NULL, c_scale, R, 1e-6f, {DG_FAULT_SCALE}},
    {"sum3", NULL, c_sum, R, 1e-6f, {DG_FAULT_SUM}},
    {"relu_grad", NULL, c_relu_grad, R, 1e-6f, {DG_FAULT_RELU_GRAD}},
    {"gelu_grad", NULL, c_gelu_grad, R, 1e-6f, {DG_FAULT_GELU_GRAD}},
    {"gemm_bias", NULL, c_gemm, R, 1e-6f, {DG_FAULT_GEMM}},
    {"gemm_trans", NULL, c_gemm, R, 1e-6f, {DG_FAULT_GEMM}},
    {"gemm_noc", NULL, c_gemm, R, 1e-6f, {DG_FAULT_GEMM}},
    {"gemm_bias_relu", NULL, c_gemm, R, 1e-6f, {DG_FAULT_GEMM}},
    {"matmul_batched", NULL, c_matmul, R, 1e-6f, {DG_FAULT_MATMUL}},
    {"matmul_bcast", NULL, c_matmul, R, 1e-6f, {DG_FAULT_MATMUL}},
    {"fused_matmul_trans", NULL, c_fused_matmul, R, 1e-6f, {DG_FAULT_FUSED_MATMUL}},
    {"fused_matmul_ta", NULL, c_fused_matmul, R, 1e-6f, {DG_FAULT_FUSED_MATMUL}},
    {"gemm_bias_acc", "gemm_bias", c_gemm_acc, R, 1e-6f, {DG_FAULT_GEMM}},
    {"gemm_trans_acc", "gemm_trans", c_gemm_acc, R, 1e-6f, {DG_FAULT_GEMM}},
    {"gemm_noc_acc", "gemm_noc", c_gemm_acc, R, 1e-6f, {DG_FAULT_GEMM}},
    {"matmul_batched_acc", "matmul_batched", c_matmul_acc, R, 1e-6f, {DG_FAULT_MATMUL}},
    {"fused_matmul_trans_acc", "fused_matmul_trans", c_fused_matmul_acc, R, 1e-6f,
     {DG_FAULT_FUSED_MATMUL}},
    {"fused_matmul_ta_acc", "fused_matmul_ta", c_fused_matmul_acc, R, 1e-6f,
     {DG_FAULT_FUSED_MATMUL}},
    {"conv_regular_acc", "conv_regular", c_conv_acc, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_pointwise_acc", "conv_pointwise", c_conv_acc, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_regular", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_depthwise", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_pointwise", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_grouped", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_depthwise_wide", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_depthwise_s2", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_depthwise_edges", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_regular_relu", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_depthwise_relu", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_pointwise_relu", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"convgrad_regular_acc", "convgrad_regular", c_conv_grad_acc, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_depthwise_acc", "convgrad_depthwise", c_conv_grad_acc, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_pointwise_acc", "convgrad_pointwise", c_conv_grad_acc, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_regular", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_depthwise", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_grouped", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_depthwise_wide", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_depthwise_s2", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_depthwise_edges", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_s1_dilated", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_s1_grouped", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_s2_c4", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_s3_dil2", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_s2_m12", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"conv_k3_edges", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"conv_k3s2_edges", NULL, c_conv, R, 1e-6f, {DG_FAULT_CONV}},
    {"convgrad_k3_w10", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_k3_w11", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_k3_w12", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"convgrad_pointwise", NULL, c_conv_grad, R, 1e-6f,
     {DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB}},
    {"maxpool", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"maxpool_ceil_ties", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"maxpool_grad", NULL, c_maxpool_grad, R, 1e-6f, {DG_FAULT_MAXPOOL_GRAD}},
    {"maxpool_k3s1_values", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y}},
    {"maxpool_k3s2_values", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y}},
    {"maxpool_k3s2_idx_ties", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"maxpool_k3s1_idx_ties", NULL, c_maxpool, R, 1e-6f, {DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX}},
    {"avgpool_excl_pad", NULL, c_avgpool, R, 1e-6f, {DG_FAULT_AVGPOOL}},
    {"avgpool_incl_pad", NULL, c_avgpool, R, 1e-6f, {DG_FAULT_AVGPOOL}},
    {"avgpool_ceil", NULL, c_avgpool, R, 1e-6f, {DG_FAULT_AVGPOOL}},
    {"avgpool_ceil_incl_pad", NULL, c_avgpool, R, 1e-6f, {DG_FAULT_AVGPOOL}},
    {"avgpoolgrad_excl_pad", NULL, c_avgpool_grad, R, 1e-6f, {DG_FAULT_AVGPOOL_GRAD}},
    {"avgpoolgrad_incl_pad", NULL, c_avgpool_grad, R, 1e-6f, {DG_FAULT_AVGPOOL_GRAD}},
    {"global_avgpool", NULL, c_gap, R, 1e-6f, {DG_FAULT_GAP}},
    {"global_avgpool_grad", NULL, c_gap_grad, R, 1e-6f, {DG_FAULT_GAP_GRAD}},
    {"batchnorm_infer", NULL, c_bn, R, 1e-6f, {DG_FAULT_BN}},
    {"batchnorm_train", NULL, c_bn_train, R, 1e-6f,
     {DG_FAULT_BN_TRAIN_Y, DG_FAULT_BN_TRAIN_RMEAN, DG_FAULT_BN_TRAIN_RVAR,
      DG_FAULT_BN_TRAIN_SMEAN, DG_FAULT_BN_TRAIN_SINVSTD}},
    {"batchnorm_grad", NULL, c_bn_grad, R, 1e-6f,
     {DG_FAULT_BN_GRAD_DX, DG_FAULT_BN_GRAD_DSCALE, DG_FAULT_BN_GRAD_DBIAS}},
    {"layernorm_last", NULL, c_ln, R, 1e-6f, {DG_FAULT_LN_Y, DG_FAULT_LN_MEAN, DG_FAULT_LN_INVSTD}},
    {"layernorm_axis1", NULL, c_ln, R, 1e-6f, {DG_FAULT_LN_Y, DG_FAULT_LN_MEAN, DG_FAULT_LN_INVSTD}},
    {"layernorm_grad", NULL, c_ln_grad, R, 1e-6f,
     {DG_FAULT_LN_GRAD_DX, DG_FAULT_LN_GRAD_DSCALE, DG_FAULT_LN_GRAD_DBIAS}},
    {"layernorm_grad_recompute", "layernorm_grad", c_ln_grad_recompute, R, 1e-6f,
     {DG_FAULT_LN_GRAD_DX, DG_FAULT_LN_GRAD_DSCALE, DG_FAULT_LN_GRAD_DBIAS}},
    {"softmax_last", NULL, c_softmax, R, 1e-6f, {DG_FAULT_SOFTMAX}},
    {"softmax_mid", NULL, c_softmax, R, 1e-6f, {DG_FAULT_SOFTMAX}},
    {"softmaxgrad_13", NULL, c_softmax_grad, R, 1e-6f, {DG_FAULT_SOFTMAX_GRAD}},
    {"softmaxgrad_2d", NULL, c_softmax_grad, R, 1e-6f, {DG_FAULT_SOFTMAX_GRAD}},
    {"sce_mean_ignore", NULL, c_sce, R, 1e-6f, {DG_FAULT_SCE_LOSS, DG_FAULT_SCE_LOGPROB}},
    {"sce_mean_nd", NULL, c_sce, R, 1e-6f, {DG_FAULT_SCE_LOSS, DG_FAULT_SCE_LOGPROB}},
    {"sce_sum", NULL, c_sce, R, 1e-6f, {DG_FAULT_SCE_LOSS, DG_FAULT_SCE_LOGPROB}},
    {"sce_grad_mean_ignore", NULL, c_sce_grad, R, 1e-6f, {DG_FAULT_SCE_GRAD}},
    {"sce_grad_mean_nd", NULL, c_sce_grad, R, 1e-6f, {DG_FAULT_SCE_GRAD}},
    {"sce_grad_sum", NULL, c_sce_grad, R, 1e-6f, {DG_FAULT_SCE_GRAD}},
    {"mse_loss", NULL, c_mse, R, 1e-6f, {DG_FAULT_MSE}},
    {"mse_loss_grad", NULL, c_mse_grad, R, 1e-6f, {DG_FAULT_MSE_GRAD}},
    {"reducesum_axes02", NULL, c_reduce_sum, R, 1e-6f, {DG_FAULT_REDUCE_SUM}},
    {"reducesum_all", NULL, c_reduce_sum, R, 1e-6f, {DG_FAULT_REDUCE_SUM}},
    {"reducemean_keep", NULL, c_reduce_mean, R, 1e-6f, {DG_FAULT_REDUCE_MEAN}},
    {"reducemean_last", NULL, c_reduce_mean, R, 1e-6f, {DG_FAULT_REDUCE_MEAN}},
    {"identity_copy", NULL, c_copy, 0.0f, 0.0f, {DG_FAULT_COPY}},
    {"transpose_nchw_nhwc", NULL, c_transpose, 0.0f, 0.0f, {DG_FAULT_STRIDED_COPY}},
    {"slice_neg_step", NULL, c_slice, 0.0f, 0.0f, {DG_FAULT_STRIDED_COPY}},
    {"expand_bcast", NULL, c_expand, 0.0f, 0.0f, {DG_FAULT_STRIDED_COPY}},
    {"concat_axis1", NULL, c_concat, 0.0f, 0.0f, {DG_FAULT_CONCAT}},
    {"accumulate_add", NULL, c_accumulate, 0.0f, 0.0f, {DG_FAULT_ACCUMULATE}},
    {"accumulate_reset", NULL, c_accumulate, 0.0f, 0.0f, {DG_FAULT_ACCUMULATE}},
    {"sgd", NULL, c_sgd, 0.0f, 0.0f, {DG_FAULT_SGD}},
    {"momentum_sgd", NULL, c_momentum_sgd, R, 1e-6f, {DG_FAULT_MOMENTUM_W, DG_FAULT_MOMENTUM_V}},
    {"adamw_step3", NULL, c_adamw, R, 1e-6f, {DG_FAULT_ADAMW_W, DG_FAULT_ADAMW_M, DG_FAULT_ADAMW_V}},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

int main(int argc, char **argv)
{
    return kt_main(argc, argv, CASES, NCASES, "kernel tests");
}
