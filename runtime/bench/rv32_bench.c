/*
 * rv32 instruction-count instrument: calls every kernel family, forward and
 * backward, on small shapes, built for 32-bit RISC-V and run under QEMU user
 * mode (see the rv32 target of the Makefile). Each kernel call sits between
 * dg_rv32_begin() and dg_rv32_end(); rv32_count reads QEMU's execution log
 * and counts the instructions executed between the two markers.
 *
 * This program prints, in call order, one line per measured case:
 *     case <kernel> <case> <work> <cores>
 * then `done`. A case with <cores> = 8 is 8 measured calls, core ids 0..7 of
 * a team of 8 run one after another (runtime/bench/rv32/pmsis.h). <work> is
 * the MACs of the call (matrix products, convolutions), else the elements
 * named in the case table of runtime/bench/README.md.
 */
#include "dg_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t dg_rv32_core_id;
uint32_t dg_rv32_team_size = 1;

/* The markers: never inlined, and different bodies so that no linker
 * folds them into one address. */
volatile uint32_t dg_rv32_marker;
__attribute__((noinline)) void dg_rv32_begin(void) { dg_rv32_marker = 1; }
__attribute__((noinline)) void dg_rv32_end(void) { dg_rv32_marker = 2; }

static uint32_t g_seed = 12345u;

static float frand(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 8388608.0f - 1.0f;
}

/* n pseudo-random floats in [-1, 1) (inputs) */
static float *fin(uint32_t n)
{
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    uint32_t i;
    if (!p)
        abort();
    for (i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* n floats in [0.5, 1.5) (variances, inverse deviations) */
static float *fpos(uint32_t n)
{
    float *p = fin(n);
    uint32_t i;
    for (i = 0; i < n; i++)
        p[i] = 1.0f + 0.5f * p[i];
    return p;
}

/* n floats of 0 (outputs, accumulators) */
static float *fout(uint32_t n)
{
    float *p = (float *)calloc(n ? n : 1, sizeof(float));
    if (!p)
        abort();
    return p;
}

static void *args_of(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (!p)
        abort();
    return p;
}

/* Runs fn(args) on a team of `cores`, one core id after another, each call
 * between the markers, and prints the case line. */
static void measure(const char *kernel, const char *name, void (*fn)(void *), void *args,
                    uint32_t work, uint32_t cores)
{
    uint32_t c;
    printf("case %s %s %u %u\n", kernel, name, (unsigned)work, (unsigned)cores);
    dg_rv32_team_size = cores;
    for (c = 0; c < cores; c++) {
        dg_rv32_core_id = c;
        dg_rv32_begin();
        fn(args);
        dg_rv32_end();
    }
    dg_rv32_team_size = 1;
    dg_rv32_core_id = 0;
}

/* every case on 1 core and on a team of 8 */
static void run(const char *kernel, const char *name, void (*fn)(void *), void *args, uint32_t work)
{
    measure(kernel, name, fn, args, work, 1);
    measure(kernel, name, fn, args, work, 8);
}

static void nothing(void *args) { (void)args; }

/* ---- linear ---------------------------------------------------------------- */
static void gemm_case(const char *name, uint32_t m, uint32_t n, uint32_t k, uint32_t ta,
                      uint32_t tb, int bias)
{
    dg_gemm_args_t *a = (dg_gemm_args_t *)args_of(sizeof *a);
    a->m = m, a->n = n, a->k = k, a->trans_a = ta, a->trans_b = tb;
    a->alpha = 1.0f, a->beta = 1.0f;
    a->a = fin(m * k), a->b = fin(k * n), a->y = fout(m * n);
    if (bias)
        a->c = fin(n), a->c_stride_n = 1;
    run("gemm", name, dg_gemm_f32, a, m * n * k);
}

static void matmul_case(const char *kernel, const char *name, void (*fn)(void *), uint32_t batch,
                        uint32_t m, uint32_t n, uint32_t k, uint32_t ta, uint32_t tb)
{
    dg_matmul_args_t *a = (dg_matmul_args_t *)args_of(sizeof *a);
    a->m = m, a->n = n, a->k = k, a->batch = batch, a->trans_a = ta, a->trans_b = tb;
    a->alpha = 1.0f;
    a->nbatch_dims = batch > 1;
    a->batch_shape[0] = batch, a->a_bstrides[0] = m * k, a->b_bstrides[0] = k * n;
    a->a = fin(batch * m * k), a->b = fin(batch * k * n), a->y = fout(batch * m * n);
    run(kernel, name, fn, a, batch * m * n * k);
}

/* ---- convolution ------------------------------------------------------------- */
static dg_conv_args_t *conv_args(uint32_t c, uint32_t h, uint32_t m, uint32_t k, uint32_t s,
                                 uint32_t pad, uint32_t group)
{
    dg_conv_args_t *a = (dg_conv_args_t *)args_of(sizeof *a);
    a->batch = 1, a->in_c = c, a->in_h = h, a->in_w = h, a->out_c = m;
    a->k_h = k, a->k_w = k, a->stride_h = s, a->stride_w = s, a->dil_h = 1, a->dil_w = 1;
    a->pad_top = pad, a->pad_left = pad, a->group = group;
    a->out_h = (h + 2 * pad - k) / s + 1;
    a->out_w = a->out_h;
    a->x = fin(c * h * h), a->w = fin(m * (c / group) * k * k), a->b = fin(m);
    a->y = fout(m * a->out_h * a->out_w);
    a->dy = fin(m * a->out_h * a->out_w), a->dx = fout(c * h * h);
    a->dw = fout(m * (c / group) * k * k), a->db = fout(m);
    return a;
}

static void conv_cases(const char *name, uint32_t c, uint32_t h, uint32_t m, uint32_t k,
                       uint32_t s, uint32_t pad, uint32_t group)
{
    dg_conv_args_t *a = conv_args(c, h, m, k, s, pad, group);
    const uint32_t macs = m * (c / group) * k * k * a->out_h * a->out_w;
    run("conv", name, dg_conv_f32, a, macs);
    run("conv_grad_dx", name, dg_conv_grad_dx_f32, a, macs);
    run("conv_grad_dw", name, dg_conv_grad_dw_f32, a, macs);
    run("conv_grad_db", name, dg_conv_grad_db_f32, a, m * a->out_h * a->out_w);
}

static void conv_transpose_case(void)
{
    /* ConvTranspose 8 -> 8 channels, 3x3, stride 2, pad 1: 8x8 -> 15x15 */
    dg_conv_args_t *a = (dg_conv_args_t *)args_of(sizeof *a);
    a->batch = 1, a->in_c = 8, a->in_h = 8, a->in_w = 8, a->out_c = 8, a->out_h = 15,
    a->out_w = 15;
    a->k_h = 3, a->k_w = 3, a->stride_h = 2, a->stride_w = 2, a->dil_h = 1, a->dil_w = 1;
    a->pad_top = 1, a->pad_left = 1, a->group = 1;
    a->x = fin(8 * 64), a->w = fin(8 * 8 * 9), a->b = fin(8), a->y = fout(8 * 225);
    run("conv_transpose", "c8h8m8k3s2", dg_conv_transpose_f32, a, 8 * 8 * 9 * 64);
}

/* ---- pooling ----------------------------------------------------------------- */
static dg_pool_args_t *pool_args(uint32_t c, uint32_t h, uint32_t k, uint32_t s, uint32_t pad)
{
    dg_pool_args_t *a = (dg_pool_args_t *)args_of(sizeof *a);
    uint32_t i, out;
    a->batch = 1, a->channels = c, a->in_h = h, a->in_w = h;
    a->k_h = k, a->k_w = k, a->stride_h = s, a->stride_w = s, a->dil_h = 1, a->dil_w = 1;
    a->pad_top = a->pad_left = a->pad_bottom = a->pad_right = pad;
    a->out_h = a->out_w = out = k ? (h + 2 * pad - k) / s + 1 : 1;
    a->x = fin(c * h * h), a->y = fout(c * out * out), a->dy = fin(c * out * out);
    a->dx = fout(c * h * h);
    a->indices = (int64_t *)calloc(c * out * out, sizeof(int64_t));
    if (!a->indices)
        abort();
    for (i = 0; i < c * out * out; i++) /* window origins, inside the input */
        a->indices[i] = (int64_t)(i / (out * out)) * h * h;
    a->indices_in = a->indices;
    return a;
}

static void pool_cases(void)
{
    dg_pool_args_t *p = pool_args(8, 16, 3, 2, 1), *q = pool_args(8, 16, 2, 2, 0);
    dg_pool_args_t *g = pool_args(8, 16, 0, 1, 0);
    const uint32_t in = 8 * 16 * 16;
    int64_t *idx = p->indices;
    p->indices = NULL;
    run("maxpool", "c8h16k3s2p1", dg_maxpool_f32, p, in);
    p->indices = idx;
    run("maxpool", "c8h16k3s2p1_idx", dg_maxpool_f32, p, in);
    run("maxpool_grad", "c8h16k3s2p1", dg_maxpool_grad_f32, p, in);
    run("maxpool", "c8h16k2s2", dg_maxpool_f32, q, in);
    run("avgpool", "c8h16k3s2p1", dg_avgpool_f32, p, in);
    run("avgpool_grad", "c8h16k3s2p1", dg_avgpool_grad_f32, p, in);
    run("avgpool", "c8h16k2s2", dg_avgpool_f32, q, in);
    run("avgpool_grad", "c8h16k2s2", dg_avgpool_grad_f32, q, in);
    run("global_avgpool", "c8h16", dg_global_avgpool_f32, g, in);
    run("global_avgpool_grad", "c8h16", dg_global_avgpool_grad_f32, g, in);
    run("global_maxpool", "c8h16", dg_global_maxpool_f32, g, in);
}

/* ---- normalization ------------------------------------------------------------ */
static void norm_cases(void)
{
    const uint32_t n = 2, c = 8, hw = 64, r = 16, cols = 64;
    dg_batchnorm_args_t *b = (dg_batchnorm_args_t *)args_of(sizeof *b);
    dg_batchnorm_grad_args_t *bg = (dg_batchnorm_grad_args_t *)args_of(sizeof *bg);
    dg_layernorm_args_t *l = (dg_layernorm_args_t *)args_of(sizeof *l);
    dg_layernorm_grad_args_t *lg = (dg_layernorm_grad_args_t *)args_of(sizeof *lg);
    dg_groupnorm_args_t *g = (dg_groupnorm_args_t *)args_of(sizeof *g);
    b->batch = n, b->channels = c, b->spatial = hw, b->epsilon = 1e-5f, b->momentum = 0.9f;
    b->x = fin(n * c * hw), b->scale = fin(c), b->bias = fin(c), b->y = fout(n * c * hw);
    b->mean = fin(c), b->var = fpos(c);
    b->running_mean_out = fout(c), b->running_var_out = fout(c);
    b->saved_mean = fout(c), b->saved_inv_std = fout(c);
    run("batchnorm", "n2c8s64", dg_batchnorm_f32, b, n * c * hw);
    run("batchnorm_train", "n2c8s64", dg_batchnorm_train_f32, b, n * c * hw);
    bg->batch = n, bg->channels = c, bg->spatial = hw;
    bg->dy = fin(n * c * hw), bg->x = b->x, bg->scale = b->scale;
    bg->saved_mean = b->mean, bg->saved_inv_std = b->var;
    bg->dx = fout(n * c * hw), bg->dscale = fout(c), bg->dbias = fout(c);
    run("batchnorm_grad", "n2c8s64", dg_batchnorm_grad_f32, bg, n * c * hw);
    l->rows = r, l->cols = cols, l->epsilon = 1e-5f;
    l->x = fin(r * cols), l->scale = fin(cols), l->bias = fin(cols), l->y = fout(r * cols);
    l->mean = fout(r), l->inv_std = fout(r);
    run("layernorm", "r16c64", dg_layernorm_f32, l, r * cols);
    run("rmsnorm", "r16c64", dg_rmsnorm_f32, l, r * cols);
    lg->rows = r, lg->cols = cols, lg->epsilon = 1e-5f;
    lg->dy = fin(r * cols), lg->x = l->x, lg->scale = l->scale, lg->mean = fin(r);
    lg->inv_std = fpos(r), lg->dx = fout(r * cols), lg->dscale = fout(cols), lg->dbias = fout(cols);
    run("layernorm_grad", "r16c64", dg_layernorm_grad_f32, lg, r * cols);
    g->batch = n, g->channels = c, g->spatial = hw, g->groups = 4, g->epsilon = 1e-5f;
    g->x = b->x, g->scale = b->scale, g->bias = b->bias, g->y = fout(n * c * hw);
    run("groupnorm", "n2c8g4s64", dg_groupnorm_f32, g, n * c * hw);
    run("instancenorm", "n2c8s64", dg_instancenorm_f32, g, n * c * hw);
}

/* ---- softmax and losses ----------------------------------------------------------- */
static void softmax_loss_cases(void)
{
    const uint32_t rows = 16, cols = 32, n = rows * cols;
    dg_softmax_args_t *s = (dg_softmax_args_t *)args_of(sizeof *s);
    dg_softmax_grad_args_t *sg = (dg_softmax_grad_args_t *)args_of(sizeof *sg);
    dg_sce_args_t *ce = (dg_sce_args_t *)args_of(sizeof *ce);
    dg_sce_grad_args_t *cg = (dg_sce_grad_args_t *)args_of(sizeof *cg);
    dg_mse_args_t *m = (dg_mse_args_t *)args_of(sizeof *m);
    dg_mse_grad_args_t *mg = (dg_mse_grad_args_t *)args_of(sizeof *mg);
    int64_t *labels = (int64_t *)calloc(rows, sizeof(int64_t));
    uint32_t i;
    if (!labels)
        abort();
    for (i = 0; i < rows; i++)
        labels[i] = (int64_t)((i * 7u) % cols);
    s->outer = rows, s->dim = cols, s->inner = 1, s->x = fin(n), s->y = fout(n);
    run("softmax", "r16c32", dg_softmax_f32, s, n);
    sg->outer = rows, sg->dim = cols, sg->inner = 1;
    sg->dy = fin(n), sg->y = s->x, sg->dx = fout(n);
    run("softmax_grad", "r16c32", dg_softmax_grad_f32, sg, n);
    ce->batch = rows, ce->classes = cols, ce->inner = 1, ce->scores = s->x, ce->labels = labels;
    ce->log_prob = fout(n), ce->loss = fout(1);
    run("sce_loss", "r16c32", dg_sce_loss_f32, ce, n);
    cg->batch = rows, cg->classes = cols, cg->inner = 1, cg->labels = labels;
    cg->log_prob = ce->log_prob, cg->dy = fin(1), cg->dx = fout(n);
    run("sce_loss_grad", "r16c32", dg_sce_loss_grad_f32, cg, n);
    m->n = n, m->x = s->x, m->target = sg->dy, m->loss = fout(1);
    run("mse_loss", "n512", dg_mse_loss_f32, m, n);
    mg->n = n, mg->x = s->x, mg->target = sg->dy, mg->dy = cg->dy, mg->dx = fout(n);
    run("mse_loss_grad", "n512", dg_mse_loss_grad_f32, mg, n);
}

/* ---- elementwise --------------------------------------------------------------- */
static void elementwise_cases(void)
{
    const uint32_t n = 512;
    dg_binary_args_t *b = (dg_binary_args_t *)args_of(sizeof *b);
    dg_binary_args_t *bb = (dg_binary_args_t *)args_of(sizeof *bb);
    dg_unary_args_t *u = (dg_unary_args_t *)args_of(sizeof *u);
    dg_act_grad_args_t *g = (dg_act_grad_args_t *)args_of(sizeof *g);
    dg_act_grad_y_args_t *gy = (dg_act_grad_y_args_t *)args_of(sizeof *gy);
    dg_scale_args_t *sc = (dg_scale_args_t *)args_of(sizeof *sc);
    dg_clip_args_t *cl = (dg_clip_args_t *)args_of(sizeof *cl);
    dg_sum_args_t *su = (dg_sum_args_t *)args_of(sizeof *su);
    const float **xs = (const float **)calloc(3, sizeof(float *));
    if (!xs)
        abort();
    b->n = n, b->a = fin(n), b->b = fin(n), b->y = fout(n);
    run("add", "n512", dg_add_f32, b, n);
    run("mul", "n512", dg_mul_f32, b, n);
    run("div", "n512", dg_div_f32, b, n);
    /* a bias over channels: [8, 64] + [8, 1] */
    bb->n = n, bb->ndim = 2, bb->shape[0] = 8, bb->shape[1] = 64;
    bb->a_strides[0] = 64, bb->a_strides[1] = 1, bb->b_strides[0] = 1, bb->b_strides[1] = 0;
    bb->a = b->a, bb->b = fin(8), bb->y = fout(n);
    run("add", "8x64+8x1", dg_add_f32, bb, n);
    u->n = n, u->x = b->a, u->y = fout(n);
    run("relu", "n512", dg_relu_f32, u, n);
    run("gelu", "n512", dg_gelu_f32, u, n);
    run("sigmoid", "n512", dg_sigmoid_f32, u, n);
    run("tanh", "n512", dg_tanh_f32, u, n);
    run("exp", "n512", dg_exp_f32, u, n);
    g->n = n, g->dy = b->b, g->x = b->a, g->dx = fout(n);
    run("relu_grad", "n512", dg_relu_grad_f32, g, n);
    run("gelu_grad", "n512", dg_gelu_grad_f32, g, n);
    gy->n = n, gy->dy = b->b, gy->y = b->a, gy->dx = fout(n);
    run("sigmoid_grad", "n512", dg_sigmoid_grad_f32, gy, n);
    run("tanh_grad", "n512", dg_tanh_grad_f32, gy, n);
    sc->n = n, sc->x = b->a, sc->scale = b->b, sc->y = fout(n);
    run("scale", "n512", dg_scale_f32, sc, n);
    cl->n = n, cl->x = b->a, cl->y = fout(n), cl->dy = b->b, cl->dx = fout(n);
    cl->min = -0.5f, cl->max = 0.5f, cl->has_min = cl->has_max = 1;
    run("clip", "n512", dg_clip_f32, cl, n);
    run("clip_grad", "n512", dg_clip_grad_f32, cl, n);
    xs[0] = b->a, xs[1] = b->b, xs[2] = bb->y;
    su->x = xs, su->nin = 3, su->n = n, su->y = fout(n);
    run("sum", "3xn512", dg_sum_f32, su, n);
}

/* ---- reductions, data movement, training ------------------------------------------ */
static void other_cases(void)
{
    const uint32_t n = 512;
    dg_reduce_args_t *r = (dg_reduce_args_t *)args_of(sizeof *r);
    dg_copy_args_t *cp = (dg_copy_args_t *)args_of(sizeof *cp);
    dg_strided_copy_args_t *t = (dg_strided_copy_args_t *)args_of(sizeof *t);
    dg_pad_args_t *pd = (dg_pad_args_t *)args_of(sizeof *pd);
    dg_sgd_args_t *sg = (dg_sgd_args_t *)args_of(sizeof *sg);
    dg_accumulate_args_t *ac = (dg_accumulate_args_t *)args_of(sizeof *ac);
    dg_adamw_args_t *ad = (dg_adamw_args_t *)args_of(sizeof *ad);
    static int64_t adamw_step = 99;
    float *x = fin(n);
    /* [16, 32] reduced over the last axis */
    r->x = x, r->y = fout(16), r->nkeep = 1, r->keep_shape[0] = 16, r->keep_strides[0] = 32;
    r->nred = 1, r->red_shape[0] = 32, r->red_strides[0] = 1;
    run("reduce_sum", "16x32_axis1", dg_reduce_sum_f32, r, n);
    run("reduce_max", "16x32_axis1", dg_reduce_max_f32, r, n);
    cp->x = x, cp->y = fout(n), cp->bytes = n * 4;
    run("copy_kernel", "n512", dg_copy_kernel, cp, n);
    /* [16, 32] -> [32, 16] */
    t->x = x, t->y = fout(n), t->elem_size = 4, t->ndim = 2;
    t->shape[0] = 32, t->shape[1] = 16, t->strides[0] = 1, t->strides[1] = 32;
    run("transpose", "16x32", dg_transpose, t, n);
    pd->x = x, pd->y = fout(8 * 10 * 10), pd->ndim = 3, pd->mode = DG_PAD_CONSTANT;
    pd->in_shape[0] = 8, pd->in_shape[1] = 8, pd->in_shape[2] = 8;
    pd->pads_begin[1] = pd->pads_begin[2] = pd->pads_end[1] = pd->pads_end[2] = 1;
    run("pad", "8x8x8_p1", dg_pad_f32, pd, 8 * 10 * 10);
    sg->w = x, sg->g = fin(n), sg->w_out = fout(n), sg->n = n, sg->lr = 0.01f;
    run("sgd", "n512", dg_sgd_f32, sg, n);
    /* AdamW at step 100 (the bias corrections' powers of beta are not the
     * first two; hold_step keeps the count from moving between calls) */
    ad->w = x, ad->g = sg->g, ad->m = fin(n), ad->v = fpos(n), ad->step = &adamw_step;
    ad->w_out = fout(n), ad->n = n, ad->lr = 0.001f, ad->beta1 = 0.9f, ad->beta2 = 0.999f;
    ad->epsilon = 1e-8f, ad->weight_decay = 0.01f, ad->hold_step = 1;
    run("adamw", "n512_t100", dg_adamw_f32, ad, n);
    ac->buffer = fout(n), ac->grad = sg->g, ac->n = n;
    run("inplace_accumulate", "n512", dg_inplace_accumulate_f32, ac, n);
}

int main(void)
{
    /* the markers' own cost, subtracted from every count */
    measure("calibrate", "empty", nothing, NULL, 1, 1);
    gemm_case("m32n32k32", 32, 32, 32, 0, 0, 0);
    gemm_case("m32n32k32_tb_bias", 32, 32, 32, 0, 1, 1);
    gemm_case("m16n20k24", 16, 20, 24, 0, 0, 0);
    gemm_case("m8n64k32", 8, 64, 32, 0, 0, 0);
    matmul_case("matmul", "b4m16n16k16", dg_matmul_f32, 4, 16, 16, 16, 0, 0);
    matmul_case("fused_matmul", "m32n32k32_ta", dg_fused_matmul_f32, 1, 32, 32, 32, 1, 0);
    matmul_case("fused_matmul", "m32n32k32_tb", dg_fused_matmul_f32, 1, 32, 32, 32, 0, 1);
    conv_cases("c8h16m8k3s1p1", 8, 16, 8, 3, 1, 1, 1);
    conv_cases("c8h16m16k3s2p1", 8, 16, 16, 3, 2, 1, 1);
    conv_cases("c16h8m16k1", 16, 8, 16, 1, 1, 0, 1);
    conv_cases("c16h16k3s1p1g16", 16, 16, 16, 3, 1, 1, 16);
    conv_cases("c8h32k3s1p1g8", 8, 32, 8, 3, 1, 1, 8);
    conv_cases("c16h16k3s2p1g16", 16, 16, 16, 3, 2, 1, 16);
    conv_transpose_case();
    pool_cases();
    norm_cases();
    softmax_loss_cases();
    elementwise_cases();
    other_cases();
    printf("done\n");
    return 0;
}
