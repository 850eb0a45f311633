/*
 * The quantized convolution's and product's two paths give the same sums.
 *
 *   qconv_tests [--cores N]
 *
 * dg_qlinear_conv gathers windows into its scratch and multiplies four
 * bytes at a time (the packed path), or walks the windows directly when
 * it has no scratch or W's rows are not word-aligned. For every pair of
 * operand types (including int8 x with uint8 W, which onnxruntime does not
 * compute) and geometries with pads, strides, dilations, groups, odd
 * channel counts, window sizes that are and are not a multiple of 4, and
 * nonzero zero points, it runs the node as ConvInteger (int32 sums) and as
 * QLinearConv (requantized) both ways and compares every value. Exit 0
 * when all agree.
 */
#include "dg_kernels.h"
#include "pmsis.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

typedef struct {
    const char *name;
    uint32_t batch, in_c, in_h, in_w, out_c, k_h, k_w;
    uint32_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right, group;
} geom_t;

static const geom_t GEOMS[] = {
    {"3x3 pad 1", 1, 16, 6, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {"3x3 stride 2, uneven pads", 2, 3, 11, 9, 5, 3, 3, 2, 2, 1, 1, 1, 0, 2, 1, 1},
    {"depthwise 3x3", 1, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},
    {"depthwise 3x3 stride 2 dilated, uneven pads", 2, 8, 9, 11, 8, 3, 3, 2, 2, 2, 1, 1, 2, 0, 1, 8},
    {"depthwise 5x1", 1, 4, 12, 3, 4, 5, 1, 1, 1, 1, 1, 2, 0, 2, 0, 4},
    {"depthwise 3x3 stride 2", 1, 4, 9, 10, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 4},
    {"groups 2, dilated", 1, 8, 10, 9, 6, 1, 3, 1, 1, 1, 2, 0, 1, 0, 1, 2},
    {"1-D, k 5, stride 3", 1, 5, 1, 70, 4, 1, 5, 1, 3, 1, 1, 0, 2, 0, 2, 1},
    {"pointwise, odd out_c", 1, 4, 6, 7, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
    {"single channel 3x3", 1, 1, 9, 10, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {"single channel 3x3 stride 2, two samples", 2, 1, 9, 10, 16, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 1},
    {"depthwise multiplier 3, 3x3", 2, 4, 8, 7, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},
    {"depthwise multiplier 2, 5x5 dilated", 1, 3, 11, 12, 6, 5, 5, 1, 2, 1, 2, 2, 1, 3, 2, 3},
};

/* One kernel call on g_cores cores of the cluster. */
typedef struct {
    void (*kernel)(void *);
    void *args;
    int ncores;
} job_t;

static int g_cores = 8;

static void entry(void *arg)
{
    job_t *j = (job_t *)arg;
    pi_cl_team_fork(j->ncores, j->kernel, j->args);
}

static struct pi_device g_cluster;

static void run_kernel(void (*kernel)(void *), void *args)
{
    struct pi_cluster_task task;
    job_t j;
    j.kernel = kernel;
    j.args = args;
    j.ncores = g_cores;
    pi_cluster_send_task_to_cl(&g_cluster, pi_cluster_task(&task, entry, &j));
}

static void run(dg_qconv_args_t *a)
{
    run_kernel(dg_qlinear_conv, a);
}

static uint32_t rng_state = 12345u;

static uint32_t rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static uint32_t out_dim(uint32_t in, uint32_t pb, uint32_t pe, uint32_t k, uint32_t d, uint32_t s)
{
    return (in + pb + pe - ((k - 1u) * d + 1u)) / s + 1u;
}

/* Scratch as dg_kernels.h sizes it (8 slots). */
static size_t scratch_bytes(const geom_t *g)
{
    const size_t k = (size_t)g->in_c / g->group * g->k_h * g->k_w, kp = (k + 3u) & ~(size_t)3u;
    return 16u * g->out_c + (kp != k ? g->out_c * kp : 0u) + 8u * 4u * kp;
}

/* One geometry, operand types and output type: packed vs direct (and vs
 * packed with W one byte off alignment, which must take the direct loop
 * or, for K not a multiple of 4, the copy). Returns the values that differ. */
static size_t one(const geom_t *g, uint32_t xdt, uint32_t wdt, uint32_t ydt, size_t *compared)
{
    const uint32_t oh = out_dim(g->in_h, g->pad_top, g->pad_bottom, g->k_h, g->dil_h, g->stride_h);
    const uint32_t ow = out_dim(g->in_w, g->pad_left, g->pad_right, g->k_w, g->dil_w, g->stride_w);
    const size_t nx = (size_t)g->batch * g->in_c * g->in_h * g->in_w;
    const size_t nw = (size_t)g->out_c * (g->in_c / g->group) * g->k_h * g->k_w;
    const size_t ny = (size_t)g->batch * g->out_c * oh * ow, ysz = ydt == DG_DT_I32 ? 4u : 1u;
    uint8_t *x = malloc(nx), *wbuf = malloc(nw + 4), *w = wbuf + 4, *wodd = wbuf + 1;
    uint8_t *scratch = malloc(scratch_bytes(g));
    uint8_t *y[3];
    int32_t *b = malloc(4u * g->out_c);
    float xs = 0.04f, ys = 0.09f, *ws = malloc(4u * g->out_c);
    uint8_t xzp = (uint8_t)(xdt == DG_DT_I8 ? 0xFD : 0x83), yzp = 3, *wzp = malloc(g->out_c);
    size_t i, bad = 0;
    dg_qconv_args_t a;
    for (i = 0; i < 3; i++)
        y[i] = malloc(ny * ysz);
    for (i = 0; i < nx; i++)
        x[i] = (uint8_t)rnd();
    for (i = 0; i < nw; i++)
        w[i] = (uint8_t)rnd();
    for (i = 0; i < g->out_c; i++) {
        b[i] = (int32_t)(rnd() % 6000u) - 3000;
        ws[i] = 0.002f + (float)(rnd() % 1000u) * 0.00002f;
        wzp[i] = (uint8_t)(rnd() % 7u + (wdt == DG_DT_U8 ? 125u : 0u)) - (wdt == DG_DT_I8 ? 3u : 0u);
    }
    memset(&a, 0, sizeof a);
    a.x = x;
    a.w = w;
    a.x_zero_point = &xzp;
    a.w_zero_point = wzp;
    a.w_per_channel = 1;
    if (ydt != DG_DT_I32) {
        a.b = b;
        a.x_scale = &xs;
        a.w_scale = ws;
        a.y_scale = &ys;
        a.y_zero_point = &yzp;
    }
    a.batch = g->batch, a.in_c = g->in_c, a.in_h = g->in_h, a.in_w = g->in_w;
    a.out_c = g->out_c, a.out_h = oh, a.out_w = ow, a.k_h = g->k_h, a.k_w = g->k_w;
    a.stride_h = g->stride_h, a.stride_w = g->stride_w, a.dil_h = g->dil_h, a.dil_w = g->dil_w;
    a.pad_top = g->pad_top, a.pad_left = g->pad_left, a.group = g->group;
    a.x_dtype = xdt, a.w_dtype = wdt, a.y_dtype = ydt;
    /* direct */
    a.y = y[0];
    a.scratch = NULL;
    run(&a);
    /* packed */
    a.y = y[1];
    a.scratch = scratch;
    run(&a);
    /* W off word alignment */
    memmove(wodd, w, nw);
    a.w = wodd;
    a.y = y[2];
    run(&a);
    for (i = 0; i < ny * ysz; i++)
        bad += (y[1][i] != y[0][i]) + (y[2][i] != y[0][i]);
    *compared += 2u * ny;
    if (bad)
        printf("  %s, x %u w %u y %u: %zu bytes differ\n", g->name, (unsigned)xdt, (unsigned)wdt, (unsigned)ydt, bad);
    for (i = 0; i < 3; i++)
        free(y[i]);
    free(x), free(wbuf), free(scratch), free(b), free(ws), free(wzp);
    return bad;
}

/* ---- products: dg_qlinear_matmul with and without its scratch ---- */

static void mm_run(dg_qmatmul_args_t *a)
{
    run_kernel(dg_qlinear_matmul, a);
}

/* batch x m x k times k x n (or n x k with trans_b), B shared by the batch. */
static size_t mm_one(uint32_t batch, uint32_t m, uint32_t k, uint32_t n, uint32_t trans_b, uint32_t adt,
                     uint32_t bdt, uint32_t ydt, size_t *compared)
{
    const size_t na = (size_t)batch * m * k, nb = (size_t)k * n, ny = (size_t)batch * m * n;
    const size_t ysz = ydt == DG_DT_I8 || ydt == DG_DT_U8 ? 1u : 4u;
    uint8_t *av = malloc(na), *bv = malloc(nb), *y0 = malloc(ny * ysz), *y1 = malloc(ny * ysz);
    uint8_t *scratch = malloc(nb + 16u * n), azp = (uint8_t)(adt == DG_DT_I8 ? 0xFE : 0x85), yzp = 5;
    uint8_t *bzp = malloc(n);
    int32_t *bias = malloc(4u * n);
    float as = 0.05f, ys = 0.3f, *bs = malloc(4u * n);
    size_t i, bad = 0;
    dg_qmatmul_args_t a;
    for (i = 0; i < na; i++)
        av[i] = (uint8_t)rnd();
    for (i = 0; i < nb; i++)
        bv[i] = (uint8_t)rnd();
    for (i = 0; i < n; i++) {
        bzp[i] = (uint8_t)(rnd() % 5u + (bdt == DG_DT_U8 ? 126u : 0u)) - (bdt == DG_DT_I8 ? 2u : 0u);
        bias[i] = (int32_t)(rnd() % 4000u) - 2000;
        bs[i] = 0.001f + (float)(rnd() % 1000u) * 0.00001f;
    }
    memset(&a, 0, sizeof a);
    a.a = av, a.b = bv, a.a_zero_point = &azp, a.b_zero_point = bzp, a.b_per_col = 1;
    if (ydt != DG_DT_I32) {
        a.a_scale = &as, a.b_scale = bs, a.bias = bias, a.alpha = 0.75f;
        if (ydt != DG_DT_F32)
            a.y_scale = &ys, a.y_zero_point = &yzp;
    }
    a.m = m, a.n = n, a.k = k, a.batch = batch, a.trans_b = trans_b;
    if (batch > 1) {
        a.nbatch_dims = 1, a.batch_shape[0] = batch, a.a_bstrides[0] = m * k, a.b_bstrides[0] = 0;
    }
    a.a_dtype = adt, a.b_dtype = bdt, a.y_dtype = ydt;
    a.y = y0;
    mm_run(&a);
    a.y = y1;
    a.scratch = scratch;
    mm_run(&a);
    for (i = 0; i < ny * ysz; i++)
        bad += y0[i] != y1[i];
    *compared += ny;
    if (bad)
        printf("  matmul %ux%ux%ux%u trans_b %u, a %u b %u y %u: %zu bytes differ\n", (unsigned)batch, (unsigned)m,
               (unsigned)k, (unsigned)n, (unsigned)trans_b, (unsigned)adt, (unsigned)bdt, (unsigned)ydt, bad);
    free(av), free(bv), free(y0), free(y1), free(scratch), free(bzp), free(bias), free(bs);
    return bad;
}

/* QuantizeLinear with one scale: its quotients near every half-integer
 * (ties of the product and their neighbours) and random ones, against
 * rintf(x / scale) + zp saturated. Returns the values that differ. */
static size_t quantize_one(float scale, int32_t zp, uint32_t ydt, size_t *compared)
{
    enum { N = 3 * 601 + 400 };
    static float x[N];
    static uint8_t y[N];
    const int8_t zp8 = (int8_t)zp;
    const uint8_t zpu = (uint8_t)zp;
    dg_quantize_args_t a;
    size_t n = 0, bad = 0, i;
    int k;
    for (k = -300; k <= 300; k++) {
        const float t = ((float)k + 0.5f) * scale;
        x[n++] = t;
        x[n++] = nextafterf(t, 1e30f);
        x[n++] = nextafterf(t, -1e30f);
    }
    while (n < N)
        x[n++] = ((float)(rnd() % 200001u) / 100000.0f - 1.0f) * 400.0f * scale;
    memset(&a, 0, sizeof a);
    a.x = x;
    a.scale = &scale;
    a.zero_point = ydt == DG_DT_I8 ? (const void *)&zp8 : (const void *)&zpu;
    a.y = y;
    a.outer = 1;
    a.axis_len = 1;
    a.inner = N;
    a.y_dtype = ydt;
    run_kernel(dg_quantize_linear, &a);
    for (i = 0; i < N; i++) {
        volatile float q = x[i] / scale;
        const int32_t lo = ydt == DG_DT_I8 ? -128 : 0, hi = ydt == DG_DT_I8 ? 127 : 255;
        int32_t r = (int32_t)rintf(q) + zp;
        const int32_t got = ydt == DG_DT_I8 ? (int32_t)(int8_t)y[i] : (int32_t)y[i];
        r = r < lo ? lo : (r > hi ? hi : r);
        bad += got != r;
    }
    *compared += N;
    if (bad)
        printf("  quantize scale %g zp %d y %u: %zu values differ\n", (double)scale, (int)zp, (unsigned)ydt, bad);
    return bad;
}

int main(int argc, char **argv)
{
    static const uint32_t pairs[4][2] = {
        {DG_DT_I8, DG_DT_I8}, {DG_DT_U8, DG_DT_I8}, {DG_DT_I8, DG_DT_U8}, {DG_DT_U8, DG_DT_U8}};
    struct pi_cluster_conf conf;
    size_t bad = 0, compared = 0, cases = 0, gi, p;
    if (argc == 3 && !strcmp(argv[1], "--cores"))
        g_cores = atoi(argv[2]);
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&g_cluster, &conf);
    if (pi_cluster_open(&g_cluster) != 0)
        return 2;
    for (gi = 0; gi < sizeof GEOMS / sizeof GEOMS[0]; gi++) {
        for (p = 0; p < 4; p++) {
            bad += one(&GEOMS[gi], pairs[p][0], pairs[p][1], DG_DT_I32, &compared);
            bad += one(&GEOMS[gi], pairs[p][0], pairs[p][1], pairs[p][0], &compared);
            cases += 2;
        }
    }
    for (p = 0; p < 4; p++) {
        const uint32_t ad = pairs[p][0], bd = pairs[p][1];
        bad += mm_one(1, 5, 12, 7, 0, ad, bd, DG_DT_I32, &compared);
        bad += mm_one(3, 4, 40, 9, 1, ad, bd, ad, &compared);
        bad += mm_one(2, 3, 8, 4, 0, ad, bd, DG_DT_F32, &compared);
        bad += mm_one(1, 1, 64, 13, 1, ad, bd, ad, &compared);
        cases += 4;
    }
    {
        static const float scales[] = {0.1f, 0.0078125f, 1.0f / 3.0f, 0.0372f, 7.5f, 3e-5f};
        for (p = 0; p < sizeof scales / sizeof scales[0]; p++) {
            bad += quantize_one(scales[p], p % 2 ? 3 : -5, p % 2 ? DG_DT_U8 : DG_DT_I8, &compared);
            cases++;
        }
    }
    pi_cluster_close(&g_cluster);
    printf("qconv paths: %zu cases on %d cores, %zu values compared, %zu differ\n", cases, g_cores, compared, bad);
    return bad != 0 || compared == 0;
}
