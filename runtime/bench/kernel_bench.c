/*
 * Kernel benchmark: times the hot dg_* kernels on the shapes of a small CNN /
 * transformer and prints each next to onnxruntime's single-threaded time
 * (runtime/bench/ort_times.json, written by tools/bench_ort.py).
 *
 *   kernel_bench [--cores N] [--reps N] [--rounds N] [--ort FILE] [--dump DIR] [CASE...]
 *
 * Each case runs inside a cluster task on a team of N cores (default 1);
 * every core calls the kernel, core 0 times each call between two barriers
 * with CLOCK_MONOTONIC, and the median over the repetitions (by default as
 * many as fit in ~0.3 s) is taken (the team fork itself is outside the
 * timed region). With --rounds N (default 3) the smallest of N such
 * medians is printed: load on a shared machine only ever slows a round
 * down, as tools/bench_ort.py does for onnxruntime. --dump DIR writes every
 * output to DIR/<case>.<k>.bin, so two builds (or two core counts) can be
 * compared byte for byte with cmp. Inputs are fixed pseudo-random values in
 * [-1, 1).
 */
#include "dg_kernels.h"
#include "pmsis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BUFS 8

#ifndef DG_BENCH_ORT_JSON
#define DG_BENCH_ORT_JSON "runtime/bench/ort_times.json"
#endif

typedef struct bench {
    const char *name;
    const char *shape;
    void (*setup)(struct bench *);
    void (*kernel)(void *);
    /* filled by setup */
    void *args;
    void *outs[MAX_BUFS];
    size_t out_bytes[MAX_BUFS];
    int nout;
    void *ins[MAX_BUFS];
    int nin;
} bench_t;

static uint32_t g_seed = 12345u;

static float frand(void)
{
    g_seed = g_seed * 1664525u + 1013904223u;
    return (float)(g_seed >> 8) / 8388608.0f - 1.0f;
}

static float *in_buf(bench_t *b, size_t n)
{
    float *p = (float *)malloc(n * sizeof(float));
    size_t i;
    if (!p)
        abort();
    for (i = 0; i < n; i++)
        p[i] = frand();
    b->ins[b->nin++] = p;
    return p;
}

static void *out_buf(bench_t *b, size_t bytes)
{
    void *p = malloc(bytes);
    if (!p)
        abort();
    memset(p, 0xFF, bytes);
    b->outs[b->nout] = p;
    b->out_bytes[b->nout++] = bytes;
    return p;
}

static void *args_buf(bench_t *b, size_t bytes)
{
    b->args = calloc(1, bytes);
    if (!b->args)
        abort();
    return b->args;
}

/* ---- linear ---------------------------------------------------------------- */
static void gemm_setup(bench_t *b, uint32_t m, uint32_t n, uint32_t k, uint32_t tb, int bias)
{
    dg_gemm_args_t *a = (dg_gemm_args_t *)args_buf(b, sizeof *a);
    a->m = m;
    a->n = n;
    a->k = k;
    a->trans_b = tb;
    a->alpha = 1.0f;
    a->beta = 1.0f;
    a->a = in_buf(b, (size_t)m * k);
    a->b = in_buf(b, (size_t)k * n);
    if (bias) {
        a->c = in_buf(b, n);
        a->c_stride_n = 1;
    }
    a->y = (float *)out_buf(b, (size_t)m * n * sizeof(float));
}

static void s_gemm_nt(bench_t *b) { gemm_setup(b, 32, 128, 256, 1, 1); }
static void s_gemm_nn(bench_t *b) { gemm_setup(b, 32, 128, 256, 0, 0); }

static void matmul_setup(bench_t *b, uint32_t batch, uint32_t m, uint32_t n, uint32_t k,
                         uint32_t ta, uint32_t tb)
{
    dg_matmul_args_t *a = (dg_matmul_args_t *)args_buf(b, sizeof *a);
    a->m = m;
    a->n = n;
    a->k = k;
    a->batch = batch;
    a->nbatch_dims = batch > 1 ? 1 : 0;
    a->batch_shape[0] = batch;
    a->a_bstrides[0] = m * k;
    a->b_bstrides[0] = k * n;
    a->trans_a = ta;
    a->trans_b = tb;
    a->alpha = 1.0f;
    a->a = in_buf(b, (size_t)batch * m * k);
    a->b = in_buf(b, (size_t)batch * k * n);
    a->y = (float *)out_buf(b, (size_t)batch * m * n * sizeof(float));
}

static void s_matmul(bench_t *b) { matmul_setup(b, 8, 64, 64, 32, 0, 0); }
static void s_fmm_ta(bench_t *b) { matmul_setup(b, 1, 128, 128, 64, 1, 0); }
static void s_fmm_tb(bench_t *b) { matmul_setup(b, 1, 64, 128, 128, 0, 1); }

/* ---- conv ------------------------------------------------------------------ */
enum { FWD, DX, DW, DB };

static void conv_setup(bench_t *b, uint32_t c, uint32_t h, uint32_t m, uint32_t k, uint32_t s,
                       uint32_t pad, uint32_t group, int what)
{
    dg_conv_args_t *a = (dg_conv_args_t *)args_buf(b, sizeof *a);
    a->batch = 1;
    a->in_c = c;
    a->in_h = a->in_w = h;
    a->out_c = m;
    a->k_h = a->k_w = k;
    a->stride_h = a->stride_w = s;
    a->dil_h = a->dil_w = 1;
    a->pad_top = a->pad_left = pad;
    a->group = group;
    a->out_h = a->out_w = (h + 2 * pad - k) / s + 1;
    a->w = in_buf(b, (size_t)m * (c / group) * k * k);
    if (what == FWD) {
        a->x = in_buf(b, (size_t)c * h * h);
        a->b = in_buf(b, m);
        a->y = (float *)out_buf(b, (size_t)m * a->out_h * a->out_w * sizeof(float));
        return;
    }
    a->x = in_buf(b, (size_t)c * h * h);
    a->dy = in_buf(b, (size_t)m * a->out_h * a->out_w);
    if (what == DX)
        a->dx = (float *)out_buf(b, (size_t)c * h * h * sizeof(float));
    else if (what == DW)
        a->dw = (float *)out_buf(b, (size_t)m * (c / group) * k * k * sizeof(float));
    else
        a->db = (float *)out_buf(b, (size_t)m * sizeof(float));
}

#define CONV3 16, 32, 16, 3, 1, 1, 1
#define CONVPW 32, 16, 64, 1, 1, 0, 1
#define CONVDW 32, 32, 32, 3, 1, 1, 32
static void s_conv3(bench_t *b) { conv_setup(b, CONV3, FWD); }
static void s_conv3s2(bench_t *b) { conv_setup(b, 16, 32, 32, 3, 2, 1, 1, FWD); }
static void s_convpw(bench_t *b) { conv_setup(b, CONVPW, FWD); }
static void s_convdw(bench_t *b) { conv_setup(b, CONVDW, FWD); }
static void s_dx3(bench_t *b) { conv_setup(b, CONV3, DX); }
static void s_dw3(bench_t *b) { conv_setup(b, CONV3, DW); }
static void s_db3(bench_t *b) { conv_setup(b, CONV3, DB); }
static void s_dxpw(bench_t *b) { conv_setup(b, CONVPW, DX); }
static void s_dwpw(bench_t *b) { conv_setup(b, CONVPW, DW); }
static void s_dbpw(bench_t *b) { conv_setup(b, CONVPW, DB); }
static void s_dxdw(bench_t *b) { conv_setup(b, CONVDW, DX); }
static void s_dwdw(bench_t *b) { conv_setup(b, CONVDW, DW); }
static void s_dbdw(bench_t *b) { conv_setup(b, CONVDW, DB); }

/* ---- pool, softmax, layernorm ------------------------------------------------ */
static void pool_setup(bench_t *b, uint32_t c, uint32_t h, uint32_t k, uint32_t s, uint32_t pad,
                       int idx)
{
    dg_pool_args_t *a = (dg_pool_args_t *)args_buf(b, sizeof *a);
    a->batch = 1;
    a->channels = c;
    a->in_h = a->in_w = h;
    a->k_h = a->k_w = k;
    a->stride_h = a->stride_w = s;
    a->dil_h = a->dil_w = 1;
    a->pad_top = a->pad_left = a->pad_bottom = a->pad_right = pad;
    a->out_h = a->out_w = (h + 2 * pad - k) / s + 1;
    a->x = in_buf(b, (size_t)c * h * h);
    a->y = (float *)out_buf(b, (size_t)c * a->out_h * a->out_w * sizeof(float));
    if (idx)
        a->indices = (int64_t *)out_buf(b, (size_t)c * a->out_h * a->out_w * sizeof(int64_t));
}

static void s_mp3(bench_t *b) { pool_setup(b, 16, 32, 3, 2, 1, 0); }
static void s_mp3i(bench_t *b) { pool_setup(b, 16, 32, 3, 2, 1, 1); }
static void s_mp2(bench_t *b) { pool_setup(b, 32, 32, 2, 2, 0, 0); }

static void s_softmax(bench_t *b)
{
    dg_softmax_args_t *a = (dg_softmax_args_t *)args_buf(b, sizeof *a);
    a->outer = 64;
    a->dim = 128;
    a->inner = 1;
    a->x = in_buf(b, 64 * 128);
    a->y = (float *)out_buf(b, 64 * 128 * sizeof(float));
}

static void s_layernorm(bench_t *b)
{
    dg_layernorm_args_t *a = (dg_layernorm_args_t *)args_buf(b, sizeof *a);
    a->rows = 64;
    a->cols = 128;
    a->epsilon = 1e-5f;
    a->x = in_buf(b, 64 * 128);
    a->scale = in_buf(b, 128);
    a->bias = in_buf(b, 128);
    a->y = (float *)out_buf(b, 64 * 128 * sizeof(float));
}

#define S3 "x[1,16,32,32] w[16,16,3,3] s1 p1 g1"
#define SPW "x[1,32,16,16] w[64,32,1,1] s1 p0 g1"
#define SDW "x[1,32,32,32] w[32,1,3,3] s1 p1 g32"
static bench_t CASES[] = {
    {"gemm_nt", "M32 N128 K256 transB bias", s_gemm_nt, dg_gemm_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"gemm_nn", "M32 N128 K256", s_gemm_nn, dg_gemm_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"matmul", "[8,64,32]x[8,32,64]", s_matmul, dg_matmul_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"fused_matmul_ta", "[64,128]^T x [64,128]", s_fmm_ta, dg_fused_matmul_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"fused_matmul_tb", "[64,128] x [128,128]^T", s_fmm_tb, dg_fused_matmul_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"conv3x3", S3, s_conv3, dg_conv_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"conv3x3_s2", "x[1,16,32,32] w[32,16,3,3] s2 p1 g1", s_conv3s2, dg_conv_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"conv_pw", SPW, s_convpw, dg_conv_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"conv_dw", SDW, s_convdw, dg_conv_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dx_3x3", S3, s_dx3, dg_conv_grad_dx_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dw_3x3", S3, s_dw3, dg_conv_grad_dw_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_db_3x3", S3, s_db3, dg_conv_grad_db_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dx_pw", SPW, s_dxpw, dg_conv_grad_dx_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dw_pw", SPW, s_dwpw, dg_conv_grad_dw_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_db_pw", SPW, s_dbpw, dg_conv_grad_db_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dx_dw", SDW, s_dxdw, dg_conv_grad_dx_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_dw_dw", SDW, s_dwdw, dg_conv_grad_dw_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"convgrad_db_dw", SDW, s_dbdw, dg_conv_grad_db_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"maxpool3x3_s2", "x[1,16,32,32] k3 s2 p1", s_mp3, dg_maxpool_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"maxpool3x3_s2_idx", "x[1,16,32,32] k3 s2 p1 +Indices", s_mp3i, dg_maxpool_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"maxpool2x2", "x[1,32,32,32] k2 s2 p0", s_mp2, dg_maxpool_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"softmax", "[64,128] axis -1", s_softmax, dg_softmax_f32, NULL, {0}, {0}, 0, {0}, 0},
    {"layernorm", "[64,128] axis -1", s_layernorm, dg_layernorm_f32, NULL, {0}, {0}, 0, {0}, 0},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

/* ---- timing -------------------------------------------------------------------- */
typedef struct {
    bench_t *b;
    int nc, reps;
    double *us;
} run_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void team_body(void *arg)
{
    run_t *r = (run_t *)arg;
    int i;
    for (i = -1; i < r->reps; i++) { /* i = -1: warm-up */
        double t0 = 0.0;
        pi_cl_team_barrier();
        if (pi_core_id() == 0)
            t0 = now_us();
        r->b->kernel(r->b->args);
        pi_cl_team_barrier();
        if (pi_core_id() == 0 && i >= 0)
            r->us[i] = now_us() - t0;
    }
}

static void cluster_entry(void *arg)
{
    run_t *r = (run_t *)arg;
    pi_cl_team_fork(r->nc, team_body, r);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- ort_times.json (the fixed layout tools/bench_ort.py writes) ---------------- */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s = (char *)malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

/* onnxruntime's median for `name` in microseconds, or -1 (missing, or a
 * different shape than ours: the two case lists drifted apart). */
static double ort_time(const char *json, const bench_t *b, int *shape_mismatch)
{
    char key[96];
    const char *p, *sh, *us;
    *shape_mismatch = 0;
    if (!json)
        return -1.0;
    sprintf(key, "\"%s\": {", b->name);
    p = strstr(json, key);
    if (!p)
        return -1.0;
    sh = strstr(p, "\"shape\": \"");
    us = strstr(p, "\"us\": ");
    if (!sh || !us)
        return -1.0;
    sh += strlen("\"shape\": \"");
    if (strncmp(sh, b->shape, strlen(b->shape)) != 0 || sh[strlen(b->shape)] != '"') {
        *shape_mismatch = 1;
        return -1.0;
    }
    return strtod(us + strlen("\"us\": "), NULL);
}

static struct pi_device g_cluster;

int main(int argc, char **argv)
{
    struct pi_cluster_conf conf;
    const char *ort_path = DG_BENCH_ORT_JSON, *dump = NULL, *only[64];
    int nonly = 0, nc = 1, reps = 0, rounds = 3, i, j, k;
    char *json;
    double total_ours = 0.0, total_ort = 0.0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cores") && i + 1 < argc)
            nc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ort") && i + 1 < argc)
            ort_path = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr,
                    "usage: %s [--cores N] [--reps N] [--rounds N] [--ort FILE] [--dump DIR] "
                    "[CASE...]\n",
                    argv[0]);
            return 2;
        } else if (nonly < 64)
            only[nonly++] = argv[i];
    }
    json = read_text(ort_path);
    if (!json)
        fprintf(stderr, "note: %s not found; no onnxruntime column\n", ort_path);
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&g_cluster, &conf);
    if (pi_cluster_open(&g_cluster) != 0)
        return 2;

    printf("%-18s %-38s %11s %11s %8s\n", "kernel", "shape", "ours [us]", "ort [us]", "ratio");
    for (i = 0; i < NCASES; i++) {
        bench_t *b = &CASES[i];
        struct pi_cluster_task task;
        run_t r;
        double med, ort;
        int mismatch;
        if (nonly) {
            for (j = 0; j < nonly && strcmp(only[j], b->name); j++)
                ;
            if (j == nonly)
                continue;
        }
        g_seed = 12345u + (uint32_t)i;
        b->setup(b);
        r.b = b;
        r.nc = nc;
        /* a first single call sizes the repetitions to ~0.3 s per case */
        r.reps = 1;
        r.us = (double *)malloc(sizeof(double));
        pi_cluster_send_task_to_cl(&g_cluster, pi_cluster_task(&task, cluster_entry, &r));
        if (reps > 0)
            r.reps = reps;
        else {
            r.reps = (int)(3e5 / (r.us[0] > 1.0 ? r.us[0] : 1.0));
            r.reps = r.reps < 5 ? 5 : r.reps > 20000 ? 20000 : r.reps;
        }
        free(r.us);
        r.us = (double *)malloc((size_t)r.reps * sizeof(double));
        med = -1.0;
        for (k = 0; k < (rounds > 0 ? rounds : 1); k++) {
            pi_cluster_send_task_to_cl(&g_cluster, pi_cluster_task(&task, cluster_entry, &r));
            qsort(r.us, (size_t)r.reps, sizeof(double), cmp_double);
            if (med < 0.0 || r.us[r.reps / 2] < med)
                med = r.us[r.reps / 2];
        }
        ort = ort_time(json, b, &mismatch);
        if (ort > 0.0) {
            printf("%-18s %-38s %11.2f %11.2f %7.1fx\n", b->name, b->shape, med, ort, med / ort);
            total_ours += med;
            total_ort += ort;
        } else
            printf("%-18s %-38s %11.2f %11s %8s\n", b->name, b->shape, med,
                   mismatch ? "shape?" : "-", "-");
        if (dump) {
            for (j = 0; j < b->nout; j++) {
                char path[512];
                FILE *f;
                snprintf(path, sizeof path, "%s/%s.%d.bin", dump, b->name, j);
                f = fopen(path, "wb");
                if (!f || fwrite(b->outs[j], 1, b->out_bytes[j], f) != b->out_bytes[j]) {
                    fprintf(stderr, "cannot write %s\n", path);
                    return 1;
                }
                fclose(f);
            }
        }
        free(r.us);
        for (j = 0; j < b->nout; j++)
            free(b->outs[j]);
        for (j = 0; j < b->nin; j++)
            free(b->ins[j]);
        free(b->args);
        b->nout = b->nin = 0;
    }
    if (total_ort > 0.0)
        printf("%-18s %-38s %11.2f %11.2f %7.1fx\n", "total", "(cases with an ort time)",
               total_ours, total_ort, total_ours / total_ort);
    pi_cluster_close(&g_cluster);
    free(json);
    return 0;
}
