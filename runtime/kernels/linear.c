/* Gemm and batched MatMul. Rows of the output are split across cores; each
 * output is one dot product summed over k in order, computed in register
 * tiles of several outputs (dg_mm_block_f32) so the k loop reuses every
 * load of A and B for several multiply-adds. */
#include "dg_internal.h"

/* ---- register tiles ------------------------------------------------------
 * A(i, k) = pa[i * a_si + k * a_sk]. "rowb": B(k, j) = pb[k * b_sk + j]
 * (j contiguous); "colb": B(k, j) = pb[k + j * b_sj] (k contiguous). Every
 * accumulator starts at 0.0f (or, with acc, at the partial sum already in
 * y) and adds its products in k order. */


#define DG_TILE_ROWB_4XN(NAME, INIT0, INIT1, INIT2, INIT3)                                  \
    static DG_INLINE void NAME(const float *pa, uint32_t a_si, uint32_t a_sk, const float *pb, uint32_t b_sk, \
                     float *y, uint32_t ldy, uint32_t k)                                       \
    {                                                                                         \
        float c0[DG_TILE_N], c1[DG_TILE_N], c2[DG_TILE_N], c3[DG_TILE_N];                     \
        const uint32_t s2 = 2 * a_si, s3 = 3 * a_si;                                            \
        uint32_t kk, t;                                                                       \
        for (t = 0; t < DG_TILE_N; t++) {                                                     \
            c0[t] = INIT0;                                                                    \
            c1[t] = INIT1;                                                                    \
            c2[t] = INIT2;                                                                    \
            c3[t] = INIT3;                                                                    \
        }                                                                                     \
        for (kk = 0; kk < k; kk++) {                                                          \
            const float a0 = pa[0], a1 = pa[a_si], a2 = pa[s2], a3 = pa[s3];                  \
            DG_UNROLL_TILE                                                                    \
            for (t = 0; t < DG_TILE_N; t++) {                                                 \
                const float bv = pb[t];                                                       \
                c0[t] += a0 * bv;                                                             \
                c1[t] += a1 * bv;                                                             \
                c2[t] += a2 * bv;                                                             \
                c3[t] += a3 * bv;                                                             \
            }                                                                                 \
            pa += a_sk;                                                                       \
            pb += b_sk;                                                                       \
        }                                                                                     \
        for (t = 0; t < DG_TILE_N; t++) {                                                     \
            y[t] = c0[t];                                                                     \
            y[ldy + t] = c1[t];                                                               \
            y[2 * ldy + t] = c2[t];                                                           \
            y[3 * ldy + t] = c3[t];                                                           \
        }                                                                                     \
    }

DG_TILE_ROWB_4XN(tile_rowb_4xn_new, 0.0f, 0.0f, 0.0f, 0.0f)
DG_TILE_ROWB_4XN(tile_rowb_4xn_acc, y[t], y[ldy + t], y[2 * ldy + t], y[3 * ldy + t])

static DG_INLINE void tile_rowb_4xn(const float *pa, uint32_t a_si, uint32_t a_sk, const float *pb, uint32_t b_sk,
                          float *y, uint32_t ldy, uint32_t k, int acc)
{
    if (acc)
        tile_rowb_4xn_acc(pa, a_si, a_sk, pb, b_sk, y, ldy, k);
    else
        tile_rowb_4xn_new(pa, a_si, a_sk, pb, b_sk, y, ldy, k);
}

static void tile_rowb_1xn(const float *pa, uint32_t a_sk, const float *pb, uint32_t b_sk, float *y,
                          uint32_t k, int acc)
{
    float c0[DG_TILE_N];
    uint32_t kk, t;
    for (t = 0; t < DG_TILE_N; t++)
        c0[t] = acc ? y[t] : 0.0f;
    for (kk = 0; kk < k; kk++) {
        const float a0 = pa[0];
        DG_UNROLL_TILE
        for (t = 0; t < DG_TILE_N; t++)
            c0[t] += a0 * pb[t];
        pa += a_sk;
        pb += b_sk;
    }
    for (t = 0; t < DG_TILE_N; t++)
        y[t] = c0[t];
}

/* 4 x 4 outputs, any B layout (used for k-contiguous B and for the edges). */
static void tile_4x4(const float *pa, uint32_t a_si, uint32_t a_sk, const float *pb, uint32_t b_sk,
                     uint32_t b_sj, float *y, uint32_t ldy, uint32_t k, int acc)
{
    float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f;
    float c10 = 0.0f, c11 = 0.0f, c12 = 0.0f, c13 = 0.0f;
    float c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f;
    float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;
    if (acc) {
        c00 = y[0], c01 = y[1], c02 = y[2], c03 = y[3];
        c10 = y[ldy], c11 = y[ldy + 1], c12 = y[ldy + 2], c13 = y[ldy + 3];
        c20 = y[2 * ldy], c21 = y[2 * ldy + 1], c22 = y[2 * ldy + 2], c23 = y[2 * ldy + 3];
        c30 = y[3 * ldy], c31 = y[3 * ldy + 1], c32 = y[3 * ldy + 2], c33 = y[3 * ldy + 3];
    }
    const uint32_t s2 = 2 * a_si, s3 = 3 * a_si, t2 = 2 * b_sj, t3 = 3 * b_sj;
    uint32_t kk;
    for (kk = 0; kk < k; kk++) {
        const float a0 = pa[0], a1 = pa[a_si], a2 = pa[s2], a3 = pa[s3];
        const float b0 = pb[0], b1 = pb[b_sj], b2 = pb[t2], b3 = pb[t3];
        c00 += a0 * b0;
        c01 += a0 * b1;
        c02 += a0 * b2;
        c03 += a0 * b3;
        c10 += a1 * b0;
        c11 += a1 * b1;
        c12 += a1 * b2;
        c13 += a1 * b3;
        c20 += a2 * b0;
        c21 += a2 * b1;
        c22 += a2 * b2;
        c23 += a2 * b3;
        c30 += a3 * b0;
        c31 += a3 * b1;
        c32 += a3 * b2;
        c33 += a3 * b3;
        pa += a_sk;
        pb += b_sk;
    }
    y[0] = c00;
    y[1] = c01;
    y[2] = c02;
    y[3] = c03;
    y += ldy;
    y[0] = c10;
    y[1] = c11;
    y[2] = c12;
    y[3] = c13;
    y += ldy;
    y[0] = c20;
    y[1] = c21;
    y[2] = c22;
    y[3] = c23;
    y += ldy;
    y[0] = c30;
    y[1] = c31;
    y[2] = c32;
    y[3] = c33;
}

/* 4 rows x 1 column / 1 row x 4 columns / 1 x 1, any layout. */
static void tile_4x1(const float *pa, uint32_t a_si, uint32_t a_sk, const float *pb, uint32_t b_sk,
                     float *y, uint32_t ldy, uint32_t k, int acc)
{
    float c0 = acc ? y[0] : 0.0f, c1 = acc ? y[ldy] : 0.0f;
    float c2 = acc ? y[2 * ldy] : 0.0f, c3 = acc ? y[3 * ldy] : 0.0f;
    const uint32_t s2 = 2 * a_si, s3 = 3 * a_si;
    uint32_t kk;
    for (kk = 0; kk < k; kk++) {
        const float bv = pb[0];
        c0 += pa[0] * bv;
        c1 += pa[a_si] * bv;
        c2 += pa[s2] * bv;
        c3 += pa[s3] * bv;
        pa += a_sk;
        pb += b_sk;
    }
    y[0] = c0;
    y[ldy] = c1;
    y[2 * ldy] = c2;
    y[3 * ldy] = c3;
}

static void tile_1x4(const float *pa, uint32_t a_sk, const float *pb, uint32_t b_sk, uint32_t b_sj,
                     float *y, uint32_t k, int acc)
{
    float c0 = acc ? y[0] : 0.0f, c1 = acc ? y[1] : 0.0f;
    float c2 = acc ? y[2] : 0.0f, c3 = acc ? y[3] : 0.0f;
    const uint32_t t2 = 2 * b_sj, t3 = 3 * b_sj;
    uint32_t kk;
    for (kk = 0; kk < k; kk++) {
        const float av = pa[0];
        c0 += av * pb[0];
        c1 += av * pb[b_sj];
        c2 += av * pb[t2];
        c3 += av * pb[t3];
        pa += a_sk;
        pb += b_sk;
    }
    y[0] = c0;
    y[1] = c1;
    y[2] = c2;
    y[3] = c3;
}

static float dot1(const float *pa, uint32_t a_sk, const float *pb, uint32_t b_sk, uint32_t k, float c)
{
    uint32_t kk;
    for (kk = 0; kk < k; kk++) {
        c += pa[0] * pb[0];
        pa += a_sk;
        pb += b_sk;
    }
    return c;
}

static void mm_tiles(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sk,
                     uint32_t b_sj, float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k, int acc)
{
    /* j contiguous in B (and not the degenerate n == 1 column): wide tiles */
    const int rowb = b_sj == 1 && n >= DG_TILE_N;
    const uint32_t nw = rowb ? DG_TILE_N : 4;
    uint32_t i = 0, j;
    for (; i + DG_TILE_M <= rows; i += DG_TILE_M) {
        const float *pa = a + i * a_si;
        float *yr = y + i * ldy;
        for (j = 0; j + nw <= n; j += nw) {
            if (rowb)
                tile_rowb_4xn(pa, a_si, a_sk, b + j, b_sk, yr + j, ldy, k, acc);
            else
                tile_4x4(pa, a_si, a_sk, b + j * b_sj, b_sk, b_sj, yr + j, ldy, k, acc);
        }
        for (; j + 4 <= n; j += 4)
            tile_4x4(pa, a_si, a_sk, b + j * b_sj, b_sk, b_sj, yr + j, ldy, k, acc);
        for (; j < n; j++)
            tile_4x1(pa, a_si, a_sk, b + j * b_sj, b_sk, yr + j, ldy, k, acc);
    }
    for (; i < rows; i++) {
        const float *pa = a + i * a_si;
        float *yr = y + i * ldy;
        for (j = 0; j + nw <= n; j += nw) {
            if (rowb)
                tile_rowb_1xn(pa, a_sk, b + j, b_sk, yr + j, k, acc);
            else
                tile_1x4(pa, a_sk, b + j * b_sj, b_sk, b_sj, yr + j, k, acc);
        }
        for (; j + 4 <= n; j += 4)
            tile_1x4(pa, a_sk, b + j * b_sj, b_sk, b_sj, yr + j, k, acc);
        for (; j < n; j++)
            yr[j] = dot1(pa, a_sk, b + j * b_sj, b_sk, k, acc ? yr[j] : 0.0f);
    }
}

#if !defined(__riscv) && !defined(DG_MM_PANEL) && !defined(DG_MM_NO_PACK)
/* Hosts with vector units: a k-contiguous B (transposed B, the dot-product
 * form) is copied DG_TILE_N columns x DG_MM_PACK_K k at a time into a
 * small j-contiguous panel so the wide tiles apply; between k chunks the
 * partial sums wait in y (stored floats, so continuing from them is the
 * same as continuing in a register). The 32-bit cores have no float SIMD
 * and run the 4 x 4 dot-product tiles instead, without the copy and its
 * stack buffer. */
#define DG_MM_PACK_K 128
static void mm_packed(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sj,
                      float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k, int acc)
{
    float pk[DG_MM_PACK_K * DG_TILE_N];
    uint32_t j0, k0, kk, t, i;
    for (j0 = 0; j0 + DG_TILE_N <= n; j0 += DG_TILE_N) {
        for (k0 = 0; k0 < k; k0 += DG_MM_PACK_K) {
            const uint32_t kc = k - k0 < DG_MM_PACK_K ? k - k0 : DG_MM_PACK_K;
            const int ac = acc || k0 > 0;
            for (t = 0; t < DG_TILE_N; t++) {
                const float *bc = b + (j0 + t) * b_sj + k0;
                for (kk = 0; kk < kc; kk++)
                    pk[kk * DG_TILE_N + t] = bc[kk];
            }
            for (i = 0; i + DG_TILE_M <= rows; i += DG_TILE_M)
                tile_rowb_4xn(a + i * a_si + k0 * a_sk, a_si, a_sk, pk, DG_TILE_N,
                              y + i * ldy + j0, ldy, kc, ac);
            for (; i < rows; i++)
                tile_rowb_1xn(a + i * a_si + k0 * a_sk, a_sk, pk, DG_TILE_N, y + i * ldy + j0, kc,
                              ac);
        }
    }
    if (j0 < n)
        mm_tiles(a, a_si, a_sk, b + j0 * b_sj, 1, b_sj, y + j0, ldy, rows, n - j0, k, acc);
}
#endif

#if defined(__riscv) || defined(DG_MM_PANEL)
/* The 32-bit cores: floats live in the 32 integer registers (zfinx) and
 * loads take only an immediate offset, so a tile whose operands sit at
 * runtime strides spends registers and adds on addresses. Four rows of A
 * are copied, DG_PANEL_K k at a time, into a panel ap[kk * 4 + r] (512
 * bytes of stack); the 4 x 4 tiles then read A at immediate offsets and B
 * by one row pointer (B rows contiguous) or four column pointers (columns
 * contiguous). Between k chunks the partial sums wait in y (stored floats:
 * the order of each sum is unchanged). -DDG_MM_PANEL builds it on the host,
 * where the tests check it. */
#define DG_PANEL_K 32

static void pack_a4(const float *a, uint32_t a_si, uint32_t a_sk, uint32_t kc, float *ap)
{
    const float *a1 = a + a_si, *a2 = a1 + a_si, *a3 = a2 + a_si;
    uint32_t kk = 0, o = 0;
    /* rows of A contiguous: four k a pass, each row read at immediate offsets */
    if (a_sk == 1)
        for (; kk + 4 <= kc; kk += 4, a += 4, a1 += 4, a2 += 4, a3 += 4, ap += 16) {
            const float v00 = a[0], v01 = a[1], v02 = a[2], v03 = a[3];
            const float v10 = a1[0], v11 = a1[1], v12 = a1[2], v13 = a1[3];
            const float v20 = a2[0], v21 = a2[1], v22 = a2[2], v23 = a2[3];
            const float v30 = a3[0], v31 = a3[1], v32 = a3[2], v33 = a3[3];
            ap[0] = v00, ap[1] = v10, ap[2] = v20, ap[3] = v30;
            ap[4] = v01, ap[5] = v11, ap[6] = v21, ap[7] = v31;
            ap[8] = v02, ap[9] = v12, ap[10] = v22, ap[11] = v32;
            ap[12] = v03, ap[13] = v13, ap[14] = v23, ap[15] = v33;
        }
    for (; kk < kc; kk++, o += a_sk, ap += 4) {
        ap[0] = a[o];
        ap[1] = a1[o];
        ap[2] = a2[o];
        ap[3] = a3[o];
    }
}

#define DG_PANEL_LOAD(acc, y, ldy)                                                          \
    float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f;          \
    float c12 = 0.0f, c13 = 0.0f, c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f;          \
    float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;                                  \
    if (acc) {                                                                              \
        c00 = y[0], c01 = y[1], c02 = y[2], c03 = y[3];                                     \
        c10 = y[ldy], c11 = y[ldy + 1], c12 = y[ldy + 2], c13 = y[ldy + 3];                 \
        c20 = y[2 * ldy], c21 = y[2 * ldy + 1], c22 = y[2 * ldy + 2], c23 = y[2 * ldy + 3]; \
        c30 = y[3 * ldy], c31 = y[3 * ldy + 1], c32 = y[3 * ldy + 2], c33 = y[3 * ldy + 3]; \
    }

/* One k step of a 4 x 4 tile: the panel's 4 values at a[o .. o + 3]
 * times the 4 B values b0 .. b3. */
#define DG_PANEL_FMA(o, b0, b1, b2, b3)                                                     \
    {                                                                                       \
        const float a0 = a[o], a1 = a[(o) + 1], a2 = a[(o) + 2], a3 = a[(o) + 3];           \
        const float e0 = (b0), e1 = (b1), e2 = (b2), e3 = (b3);                             \
        c00 += a0 * e0, c01 += a0 * e1, c02 += a0 * e2, c03 += a0 * e3;                     \
        c10 += a1 * e0, c11 += a1 * e1, c12 += a1 * e2, c13 += a1 * e3;                     \
        c20 += a2 * e0, c21 += a2 * e1, c22 += a2 * e2, c23 += a2 * e3;                     \
        c30 += a3 * e0, c31 += a3 * e1, c32 += a3 * e2, c33 += a3 * e3;                     \
    }

#define DG_PANEL_STORE(y, ldy)                                                              \
    y[0] = c00, y[1] = c01, y[2] = c02, y[3] = c03;                                         \
    y[ldy] = c10, y[ldy + 1] = c11, y[ldy + 2] = c12, y[ldy + 3] = c13;                     \
    y[2 * ldy] = c20, y[2 * ldy + 1] = c21, y[2 * ldy + 2] = c22, y[2 * ldy + 3] = c23;     \
    y[3 * ldy] = c30, y[3 * ldy + 1] = c31, y[3 * ldy + 2] = c32, y[3 * ldy + 3] = c33;

#if defined(__riscv_zfinx) && !defined(DG_NO_ASM)
/* The 32-bit cores with floats in the integer registers: clang keeps a
 * frame pointer, so 27 registers are left, and its schedule loads the next
 * k step's values while the multiply-adds of this one run, which spills
 * accumulators; the k loop is therefore written out. The multiply-adds of
 * a step go row 0, row 1, then rows 2 and 3 column by column, so two
 * registers take the panel's four values in turn (%[x]: rows 0 and 2,
 * %[w]: rows 1 and 3) and each B value's register is free for the next
 * step's after its last use: 16 accumulators, x, w, e0 .. e3, %[a], %[b],
 * the end, the B stride and %[y] take all 27. Each sum runs k by k from
 * 0.0f (the first step adds its products to the zero register, which reads
 * +0.0f) or from y, as in the C tile.
 *
 * Where cores i and i + 4 share an FPU that takes one operation a cycle
 * (DG_CHIP_FPU_SHARED_BY_CORE_PAIRS of dg_chips.h: Siracusa), every
 * multiply-add is followed by exactly one other instruction (DG_ASM_PACE,
 * a nop, where a step has nothing else to do),
 * so a core asks for the FPU every other cycle: two cores one cycle apart
 * never meet, and two in step meet once, after which one of them is a
 * cycle behind. The pair then runs at the FPU's full rate with neither
 * core waiting on the other (with multiply-adds back to back, which core
 * waits depends on the phase the two settle in, and one core ended 4,000
 * cycles after the other in the 64 x 64 x 64 Gemm). Elsewhere the nops
 * would only cost time. */
#if defined(DG_CHIP_FPU_SHARED_BY_CORE_PAIRS)
#define DG_ASM_PACE "nop"
#else
#define DG_ASM_PACE ""
#endif
#define DG_ASM_TILE_OUT                                                                     \
    [c00] "=&r"(c00), [c01] "=&r"(c01), [c02] "=&r"(c02), [c03] "=&r"(c03),                   \
    [c10] "=&r"(c10), [c11] "=&r"(c11), [c12] "=&r"(c12), [c13] "=&r"(c13),                   \
    [c20] "=&r"(c20), [c21] "=&r"(c21), [c22] "=&r"(c22), [c23] "=&r"(c23),                   \
    [c30] "=&r"(c30), [c31] "=&r"(c31), [c32] "=&r"(c32), [c33] "=&r"(c33),                   \
    [a] "=&r"(a), [b] "=&r"(b), [x] "=&r"(x), [w] "=&r"(w), [e0] "=&r"(e0), [e1] "=&r"(e1),   \
    [e2] "=&r"(e2), [e3] "=&r"(e3), [y] "+r"(y), [tgt] "=m"(tgt)
#define DG_ASM_TILE_IN                                                                      \
    [end] "r"(a_end), [bs] "r"(bs), [ly] "m"(ly), [ap] "m"(ap), [pbd] "m"(pbd),               \
    [yend] "m"(y_end), [adj] "m"(adj), [sk] "m"(skip)

/* one multiply-add, then the instruction `then` (one, or none): FA adds to the sum
 * in the register, FZ to +0.0f (a sum's first product) */
#define DG_ASM_FA(c, x, y, then) "fmadd.s %[" #c "], %[" #x "], %[" #y "], %[" #c "]\n\t" then "\n\t"
#define DG_ASM_FZ(c, x, y, then) "fmadd.s %[" #c "], %[" #x "], %[" #y "], zero\n\t" then "\n\t"
/* One k step: its a_0 in x, its B row in e0 .. e2 (e3 comes first) and
 * %[b], its panel entries at byte o of %[a]. It loads a_1 .. a_3, moves
 * %[b] to the next B row and loads that row and the next a_0 (panel byte
 * ox of %[a]); t9, t16: the loop's own two instructions, or DG_ASM_PACE. */
#define DG_ASM_STEP(F, o, ox, t9, t16)                                                      \
    F(c00, x, e0, "lw %[e3], 12(%[b])") F(c01, x, e1, "add %[b], %[b], %[bs]")                \
    F(c02, x, e2, "lw %[w], " #o "+4(%[a])") F(c03, x, e3, "lw %[x], " #o "+8(%[a])")         \
    F(c10, w, e0, DG_ASM_PACE) F(c11, w, e1, DG_ASM_PACE) F(c12, w, e2, DG_ASM_PACE)            \
    F(c13, w, e3, "lw %[w], " #o "+12(%[a])") F(c20, x, e0, t9)                              \
    F(c30, w, e0, "lw %[e0], 0(%[b])") F(c21, x, e1, DG_ASM_PACE)                            \
    F(c31, w, e1, "lw %[e1], 4(%[b])") F(c22, x, e2, DG_ASM_PACE)                            \
    F(c32, w, e2, "lw %[e2], 8(%[b])")                                                       \
    F(c23, x, e3, "lw %[x], " #ox "(%[a])") F(c33, w, e3, t16)

/* The tile's start: %[b] = y + pbd (B moves 4 columns on with y), the
 * first step's a_0 and B row but e3. */
#define DG_ASM_TILE_START                                                                   \
    "0:\n\t"                                                                                 \
    "lw %[b], %[pbd]\n\t" "lw %[a], %[ap]\n\t" "add %[b], %[b], %[y]\n\t"                     \
    "lw %[x], 0(%[a])\n\t" "lw %[e0], 0(%[b])\n\t" "lw %[e1], 4(%[b])\n\t"                    \
    "lw %[e2], 8(%[b])\n\t"
/* Into the loop of two steps a pass: at its first step, or (sk != 0, out
 * of line) at the step that leaves a whole number of passes, %[a] moved by
 * adj bytes so that the passes end at the last step's entries, or straight
 * to the last step. */
#define DG_ASM_ENTER "lw %[w], %[sk]\n\t" "bnez %[w], 8f\n"
#define DG_ASM_LOOP                                                                         \
    "10:\n\t" DG_ASM_STEP(DG_ASM_FA, 0, 16, DG_ASM_PACE, DG_ASM_PACE)                                     \
    "11:\n\t" DG_ASM_STEP(DG_ASM_FA, 16, 0, "addi %[a], %[a], 32", "bne %[a], %[end], 10b")
/* %[tgt] for the out-of-line entry: the loop's second step (sk 1) or the
 * last step (sk 2) */
#define DG_ASM_TARGET                                                                       \
    "lw %[x], %[sk]\n\t" "lla %[w], 11f\n\t" "addi %[x], %[x], -1\n\t" "beqz %[x], 7f\n\t"    \
    "lla %[w], 4f\n"                                                                         \
    "7:\n\t" "sw %[w], %[tgt]\n\t"
/* the last step, storing each sum after its last product (rows 0 and 1
 * between the multiply-adds, then rows 2 and 3); the next tile, or the
 * end; the out-of-line entry */
#define DG_ASM_LAST                                                                         \
    "4:\n\t"                                                                                 \
    DG_ASM_FA(c00, x, e0, "lw %[e3], 12(%[b])") DG_ASM_FA(c01, x, e1, "sw %[c00], 0(%[y])")   \
    DG_ASM_FA(c02, x, e2, "lw %[w], 4(%[a])") DG_ASM_FA(c03, x, e3, "lw %[x], 8(%[a])")       \
    DG_ASM_FA(c10, w, e0, "sw %[c01], 4(%[y])") DG_ASM_FA(c11, w, e1, "sw %[c02], 8(%[y])")   \
    DG_ASM_FA(c12, w, e2, "sw %[c03], 12(%[y])") DG_ASM_FA(c13, w, e3, "lw %[w], 12(%[a])")   \
    DG_ASM_FA(c20, x, e0, "lw %[c00], %[ly]") DG_ASM_FA(c30, w, e0, "add %[c01], %[y], %[c00]") \
    DG_ASM_FA(c21, x, e1, "sw %[c10], 0(%[c01])") DG_ASM_FA(c31, w, e1, "sw %[c11], 4(%[c01])") \
    DG_ASM_FA(c22, x, e2, "sw %[c12], 8(%[c01])") DG_ASM_FA(c32, w, e2, "sw %[c13], 12(%[c01])") \
    DG_ASM_FA(c23, x, e3, "add %[c01], %[c01], %[c00]") DG_ASM_FA(c33, w, e3, "sw %[c20], 0(%[c01])") \
    "sw %[c21], 4(%[c01])\n\t" "sw %[c22], 8(%[c01])\n\t" "sw %[c23], 12(%[c01])\n\t"         \
    "add %[c01], %[c01], %[c00]\n\t" "sw %[c30], 0(%[c01])\n\t" "sw %[c31], 4(%[c01])\n\t"    \
    "sw %[c32], 8(%[c01])\n\t" "sw %[c33], 12(%[c01])\n\t"                                   \
    "lw %[x], %[yend]\n\t" "addi %[y], %[y], 16\n\t" "bne %[y], %[x], 0b\n\t"                 \
    "j 9f\n"                                                                                 \
    "8:\n\t" "lw %[w], %[adj]\n\t" "add %[a], %[a], %[w]\n\t" "lw %[w], %[tgt]\n\t" "jr %[w]\n" \
    "9:\n"

/* The whole row of tiles in one block, so that no accumulator crosses
 * compiler-made code and the code between two tiles' k loops stays short
 * (the cores' instruction caches are 512 bytes). Needs kc >= 2. */
static DG_NOINLINE void panel_rowb_asm(const float *ap, const float *pb, uint32_t b_sk, float *y,
                                       uint32_t ldy, uint32_t kc, uint32_t ntile, int acc)
{
    const uint32_t bs = 4 * b_sk, ly = 4 * ldy;
    const float *const a_end = ap + 4 * (kc - 1); /* the last step's entries */
    const uintptr_t pbd = (uintptr_t)pb - (uintptr_t)y;
    const float *const y_end = y + 4 * ntile;
    /* the loop's steps: all but the last, and without acc but the first */
    const uint32_t n = acc ? kc - 1 : kc - 2;
    /* entering the loop s steps into a pass (s = 2: straight to the last
     * step), %[a] moved by -16 s bytes */
    const uint32_t skip = n == 0 ? 2 : n % 2;
    const uint32_t adj = 0u - 16u * (skip % 2);
    /* registers x8 .. x15 (but the frame pointer) for the loop's loads,
     * which then take 2 bytes: the code between two tiles' loops stays
     * within the 512-byte instruction cache */
    register const float *a __asm__("s1");
    register const float *b __asm__("a0");
    register float x __asm__("a1"), w __asm__("a2");
    register float e0 __asm__("a3"), e1 __asm__("a4"), e2 __asm__("a5");
    float e3;
    void *tgt;
    float c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
    if (ntile == 0)
        return;
    if (!acc) {
        /* the first step from +0.0f, %[a] on to the loop's first step */
        __asm__ volatile(DG_ASM_TARGET DG_ASM_TILE_START
                         DG_ASM_STEP(DG_ASM_FZ, 0, 0, "addi %[a], %[a], 16", DG_ASM_PACE)
                         DG_ASM_ENTER DG_ASM_LOOP DG_ASM_LAST
                         : DG_ASM_TILE_OUT
                         : DG_ASM_TILE_IN
                         : "memory");
        return;
    }
    /* the sums from y, then the loop from the first step */
    __asm__ volatile(DG_ASM_TARGET DG_ASM_TILE_START
                     "lw %[c30], %[ly]\n\t"
                     "lw %[c00], 0(%[y])\n\t" "lw %[c01], 4(%[y])\n\t" "lw %[c02], 8(%[y])\n\t"
                     "lw %[c03], 12(%[y])\n\t" "add %[c31], %[y], %[c30]\n\t"
                     "lw %[c10], 0(%[c31])\n\t" "lw %[c11], 4(%[c31])\n\t" "lw %[c12], 8(%[c31])\n\t"
                     "lw %[c13], 12(%[c31])\n\t" "add %[c31], %[c31], %[c30]\n\t"
                     "lw %[c20], 0(%[c31])\n\t" "lw %[c21], 4(%[c31])\n\t" "lw %[c22], 8(%[c31])\n\t"
                     "lw %[c23], 12(%[c31])\n\t" "add %[c31], %[c31], %[c30]\n\t"
                     "lw %[c30], 0(%[c31])\n\t" "lw %[c32], 8(%[c31])\n\t" "lw %[c33], 12(%[c31])\n\t"
                     "lw %[c31], 4(%[c31])\n\t"
                     DG_ASM_ENTER DG_ASM_LOOP DG_ASM_LAST
                     : DG_ASM_TILE_OUT
                     : DG_ASM_TILE_IN
                     : "memory");
}
#endif

/* ntile 4 x 4 tiles side by side: the panel's 4 rows (kc > 0 k values)
 * times B(k, j + t) = pb[k * b_sk + t], tile after tile 4 columns on. */
static DG_NOINLINE void panel_rowb(const float *ap, const float *pb, uint32_t b_sk, float *y,
                                   uint32_t ldy, uint32_t kc, uint32_t ntile, int acc)
{
    const float *const a_end = ap + 4 * kc;
#if defined(__riscv_zfinx) && !defined(DG_NO_ASM)
    if (kc >= 2) {
        panel_rowb_asm(ap, pb, b_sk, y, ldy, kc, ntile, acc);
        return;
    }
#endif
    for (; ntile > 0; ntile--, pb += 4, y += 4) {
        const float *a = ap, *b = pb;
        DG_PANEL_LOAD(acc, y, ldy)
        for (; a != a_end; a += 4, b += b_sk)
            DG_PANEL_FMA(0, b[0], b[1], b[2], b[3])
        DG_PANEL_STORE(y, ldy)
    }
}

/* One 4 x 4 tile as panel_rowb's with B(k, j + t) = pb[t * b_sj + k]
 * (columns contiguous): four column pointers. */
static DG_NOINLINE void panel_colb(const float *ap, const float *pb, uint32_t b_sj, float *y,
                                   uint32_t ldy, uint32_t kc, int acc)
{
    const float *end = ap + 4 * kc, *q1 = pb + b_sj, *q2 = q1 + b_sj, *q3 = q2 + b_sj;
    const float *a = ap;
    DG_PANEL_LOAD(acc, y, ldy)
    for (; a != end; a += 4, pb++, q1++, q2++, q3++)
        DG_PANEL_FMA(0, pb[0], q1[0], q2[0], q3[0])
    DG_PANEL_STORE(y, ldy)
}

/* 4 rows x 1 column, B(k, j) = pb[k * b_sk] */
static void panel_4x1(const float *ap, const float *pb, uint32_t b_sk, float *y, uint32_t ldy,
                      uint32_t kc, int acc)
{
    const float *end = ap + 4 * kc;
    float c0 = acc ? y[0] : 0.0f, c1 = acc ? y[ldy] : 0.0f;
    float c2 = acc ? y[2 * ldy] : 0.0f, c3 = acc ? y[3 * ldy] : 0.0f;
    for (; ap != end; ap += 4, pb += b_sk) {
        const float bv = pb[0];
        c0 += ap[0] * bv;
        c1 += ap[1] * bv;
        c2 += ap[2] * bv;
        c3 += ap[3] * bv;
    }
    y[0] = c0, y[ldy] = c1, y[2 * ldy] = c2, y[3 * ldy] = c3;
}

/* Needs b_sj == 1 or b_sk == 1, and k > 0. */
static void mm_panel(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sk,
                     uint32_t b_sj, float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k,
                     int acc)
{
    float ap[4 * DG_PANEL_K];
    uint32_t i, j, k0;
    for (i = 0; i + 4 <= rows; i += 4) {
        float *yi = y + i * ldy;
        for (k0 = 0; k0 < k; k0 += DG_PANEL_K) {
            const uint32_t kc = k - k0 < DG_PANEL_K ? k - k0 : DG_PANEL_K;
            const int ac = acc || k0 > 0;
            const float *bk = b + k0 * b_sk;
            pack_a4(a + i * a_si + k0 * a_sk, a_si, a_sk, kc, ap);
            if (b_sj == 1)
                panel_rowb(ap, bk, b_sk, yi, ldy, kc, n / 4, ac);
            else
                for (j = 0; j + 4 <= n; j += 4)
                    panel_colb(ap, bk + j * b_sj, b_sj, yi + j, ldy, kc, ac);
            for (j = n / 4 * 4; j < n; j++)
                panel_4x1(ap, bk + j * b_sj, b_sk, yi + j, ldy, kc, ac);
        }
    }
    if (i < rows)
        mm_tiles(a + i * a_si, a_si, a_sk, b, b_sk, b_sj, y + i * ldy, ldy, rows - i, n, k, acc);
}
#endif

void dg_mm_block_f32(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sk,
                     uint32_t b_sj, float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k,
                     int acc)
{
#if defined(__riscv) || defined(DG_MM_PANEL)
    if ((b_sj == 1 || b_sk == 1) && rows >= 4 && k > 0) {
        mm_panel(a, a_si, a_sk, b, b_sk, b_sj, y, ldy, rows, n, k, acc);
        return;
    }
#elif !defined(DG_MM_NO_PACK)
    if (b_sk == 1 && b_sj != 1 && n >= DG_TILE_N && rows >= DG_TILE_M && k > 0) {
        mm_packed(a, a_si, a_sk, b, b_sj, y, ldy, rows, n, k, acc);
        return;
    }
#endif
    mm_tiles(a, a_si, a_sk, b, b_sk, b_sj, y, ldy, rows, n, k, acc);
}

/* Fault injection perturbs outputs in the epilogue, which then always runs. */
#ifdef DG_FAULT_INJECTION
#define DG_EPILOGUE_ALWAYS 1
#else
#define DG_EPILOGUE_ALWAYS 0
#endif

/* y += alpha * (a fresh product), 4 x 16 outputs at a time (a call of its
 * own, by the register tiles without the A panel, so that its buffer and
 * the panel are not both on the stack) */
static DG_NOINLINE void mm_add_scaled(const float *a, uint32_t a_si, uint32_t a_sk, const float *b,
                                      uint32_t b_sk, uint32_t b_sj, float *y, uint32_t ldy,
                                      uint32_t rows, uint32_t n, uint32_t k, float alpha)
{
    float t[4 * 16];
    uint32_t i, j, r, c;
    for (i = 0; i < rows; i += 4) {
        const uint32_t rr = rows - i < 4 ? rows - i : 4;
        for (j = 0; j < n; j += 16) {
            const uint32_t cc = n - j < 16 ? n - j : 16;
            mm_tiles(a + i * a_si, a_si, a_sk, b + j * b_sj, b_sk, b_sj, t, 16, rr, cc, k, 0);
            for (r = 0; r < rr; r++)
                for (c = 0; c < cc; c++)
                    y[(i + r) * ldy + j + c] += alpha * t[r * 16 + c];
        }
    }
}

/* y (rows x n, row stride ldy) = alpha * A B, or += alpha * A B when
 * accumulate. Returns non-zero when y still needs the alpha pass. */
static int mm_alpha(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sk,
                    uint32_t b_sj, float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k,
                    float alpha, uint32_t accumulate)
{
    if (!accumulate || alpha == 1.0f) {
        dg_mm_block_f32(a, a_si, a_sk, b, b_sk, b_sj, y, ldy, rows, n, k, accumulate != 0);
        return !accumulate && alpha != 1.0f;
    }
    mm_add_scaled(a, a_si, a_sk, b, b_sk, b_sj, y, ldy, rows, n, k, alpha);
    return 0;
}

/* Rows [i0, i1) x columns [j0, j1) of the Gemm: the product, then the
 * epilogue y = alpha * sum (+ beta * C), then the activation. */
static void gemm_block(const dg_gemm_args_t *p, uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1)
{
    const uint32_t a_si = p->trans_a ? 1 : p->k, a_sk = p->trans_a ? p->m : 1;
    const uint32_t b_sk = p->trans_b ? 1 : p->n, b_sj = p->trans_b ? p->k : 1;
    const int use_c = !p->accumulate && p->c != NULL && p->beta != 0.0f;
    uint32_t i, j;
    if (!mm_alpha(p->a + i0 * a_si, a_si, a_sk, p->b + j0 * b_sj, b_sk, b_sj, p->y + i0 * p->n + j0,
                  p->n, i1 - i0, j1 - j0, p->k, p->alpha, p->accumulate) &&
        !use_c && !DG_EPILOGUE_ALWAYS && p->act != 1)
        return;
    for (i = i0; i < i1; i++) {
        float *yr = p->y + i * p->n;
        if (use_c) {
            const float *cr = p->c + i * p->c_stride_m;
            const uint32_t cs = p->c_stride_n;
            for (j = j0; j < j1; j++)
                yr[j] = DG_FAULT(DG_FAULT_GEMM, p->alpha * yr[j] + p->beta * cr[j * cs]);
        } else if (p->accumulate || p->alpha == 1.0f) {
            for (j = j0; j < j1; j++)
                yr[j] = DG_FAULT(DG_FAULT_GEMM, yr[j]);
        } else {
            for (j = j0; j < j1; j++)
                yr[j] = DG_FAULT(DG_FAULT_GEMM, p->alpha * yr[j]);
        }
        if (p->act == 1)
            for (j = j0; j < j1; j++)
                yr[j] = yr[j] < 0.0f ? 0.0f : yr[j];
    }
}

/* Work split: runs of whole rows while there are at least as many 4-row
 * panels as cores; with fewer rows, the columns are cut into as many
 * chunks (whole tiles wide) as it takes to give every core a (panel,
 * chunk) item. Each output's sum is the same either way (dg_mm_block_f32),
 * so the split does not change the results. */
void dg_gemm_f32(void *args)
{
    const dg_gemm_args_t *p = (const dg_gemm_args_t *)args;
    const uint32_t nc = (uint32_t)pi_cl_team_nb_cores(), rb = (p->m + 3) / 4;
    const uint32_t chunks = rb ? (nc + rb - 1) / rb : 1;
    const uint32_t cw = ((p->n + chunks - 1) / chunks + DG_TILE_N - 1) / DG_TILE_N * DG_TILE_N;
    const uint32_t cb = cw ? (p->n + cw - 1) / cw : 0;
    dg_range_t r;
    uint32_t it;
    if (rb >= nc || cb < 2) {
        r = dg_split(p->m);
        if (r.start < r.end)
            gemm_block(p, r.start, r.end, 0, p->n);
        return;
    }
    r = dg_split(rb * cb);
    for (it = r.start; it < r.end; it++) {
        const uint32_t i0 = it / cb * 4, j0 = it % cb * cw;
        gemm_block(p, i0, i0 + 4 < p->m ? i0 + 4 : p->m, j0, j0 + cw < p->n ? j0 + cw : p->n);
    }
}

/* Batched y = alpha * op(A) op(B); the batch * m output rows are split. */
static void matmul_rows(const dg_matmul_args_t *p, uint32_t trans_a, uint32_t trans_b, float alpha,
                        int fault)
{
    dg_range_t r = dg_split(p->batch * p->m);
    const uint32_t a_si = trans_a ? 1 : p->k, a_sk = trans_a ? p->m : 1;
    const uint32_t b_sk = trans_b ? 1 : p->n, b_sj = trans_b ? p->k : 1;
    uint32_t row = r.start;
    (void)fault;
    while (row < r.end) {
        const uint32_t bi = row / p->m, i0 = row % p->m;
        const uint32_t rows = (p->m - i0 < r.end - row) ? p->m - i0 : r.end - row;
        uint32_t aoff, boff, i;
        float *y = p->y + row * p->n;
        int pass;
        dg_matmul_batch(p, bi, &aoff, &boff);
        pass = mm_alpha(p->a + aoff + i0 * a_si, a_si, a_sk, p->b + boff, b_sk, b_sj, y, p->n,
                        rows, p->n, p->k, alpha, p->accumulate);
        if (pass || DG_EPILOGUE_ALWAYS)
            for (i = 0; i < rows * p->n; i++)
                y[i] = DG_FAULT(fault, pass ? alpha * y[i] : y[i]);
        row += rows;
    }
}

void dg_matmul_f32(void *args)
{
    matmul_rows((const dg_matmul_args_t *)args, 0, 0, 1.0f, DG_FAULT_MATMUL);
}

void dg_fused_matmul_f32(void *args)
{
    const dg_matmul_args_t *p = (const dg_matmul_args_t *)args;
    matmul_rows(p, p->trans_a, p->trans_b, p->alpha, DG_FAULT_FUSED_MATMUL);
}
