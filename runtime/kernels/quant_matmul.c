/* QLinearMatMul / MatMulInteger / QGemm (dg_k_quant.h states the
 * arithmetic): the packed path when it can take the node, else a direct
 * loop over the output rows. Each kernel splits its outer loop over the
 * team's cores. */
#include "dg_internal.h"
#include "quant_internal.h"

#include <stdint.h>

/* The sum over k of (a[k] - azp)(b[k * sb] - bzp), one function per pair
 * of operand types, so that the loop loads plain bytes. */
#define DG_QDOT(NAME, AT, BT)                                                                                 \
    static int32_t NAME(const void *a, const void *b, uint32_t k, uint32_t sb, int32_t azp, int32_t bzp)    \
    {                                                                                                         \
        const AT *pa = (const AT *)a;                                                                         \
        const BT *pb = (const BT *)b;                                                                         \
        int32_t s = 0;                                                                                        \
        uint32_t i;                                                                                           \
        for (i = 0; i < k; i++)                                                                               \
            s += ((int32_t)pa[i] - azp) * ((int32_t)pb[i * sb] - bzp);                                        \
        return s;                                                                                             \
    }

DG_QDOT(qdot_ss, int8_t, int8_t)
DG_QDOT(qdot_us, uint8_t, int8_t)
DG_QDOT(qdot_su, int8_t, uint8_t)
DG_QDOT(qdot_uu, uint8_t, uint8_t)

typedef int32_t (*qdot_fn)(const void *, const void *, uint32_t, uint32_t, int32_t, int32_t);

/* The multiplier of B's column (or scale entry) c: alpha (QGemm) times
 * q_multiplier's. */
static float qmm_multiplier(const dg_qmatmul_args_t *p, uint32_t c)
{
    if (p->alpha != 0.0f && p->a_scale && p->b_scale)
        return p->y_scale ? p->alpha * p->a_scale[0] * p->b_scale[c] / p->y_scale[0]
                          : p->alpha * p->a_scale[0] * p->b_scale[c];
    return q_multiplier(p->a_scale, p->b_scale, p->y_scale, c);
}

/* Row `i` of one batch's product: y[i, :] = sum_k (a[i,k] - a_zp)(b[k,:] - b_zp). */
static void qmatmul_row(const dg_qmatmul_args_t *p, uint32_t aoff, uint32_t boff, uint32_t i, uint32_t yoff)
{
    const int32_t azp = q_zp(p->a_zero_point, p->a_zp_per_row ? i : 0, p->a_dtype);
    const int32_t yzp = q_zp(p->y_zero_point, 0, p->y_dtype);
    const int as = p->a_dtype == DG_DT_I8, bs = p->b_dtype == DG_DT_I8;
    const qdot_fn dot = as ? (bs ? qdot_ss : qdot_su) : (bs ? qdot_us : qdot_uu);
    /* B's element (k, j): stride along k and along j. */
    const uint32_t sk = p->trans_b ? 1 : p->n, sj = p->trans_b ? p->k : 1;
    uint32_t j;
    for (j = 0; j < p->n; j++) {
        const uint32_t c = p->b_per_col ? j : 0;
        const int32_t bzp = q_zp(p->b_zero_point, c, p->b_dtype);
        /* 8-bit operands: element offsets are byte offsets. */
        const uint8_t *a = (const uint8_t *)p->a + aoff + i * p->k;
        const uint8_t *b = (const uint8_t *)p->b + boff + j * sj;
        int32_t s = (p->bias ? p->bias[j] : 0) + dot(a, b, p->k, sk, azp, bzp);
        q_out(p->y, yoff + i * p->n + j, s, qmm_multiplier(p, c), yzp, p->y_dtype);
    }
}

/* ---- QLinearMatMul / MatMulInteger / QGemm, the packed path ---------------
 * With one B for every batch and k a multiple of 4, the team first copies
 * B as [n, k] rows (transposed unless trans_b) into the scratch and fills
 * per-column tables; then each core takes pairs of A's rows and multiplies
 * them with 4 of B's rows at a time, 4 bytes per packed dot product. The
 * zero points come out of the sum as the convolution's do. */
typedef struct {
    int32_t *sumb; /* sum of B's column j */
    uint32_t *bzp, *lim;
    float *m;
} qmm_chan_t;

/* The scratch bytes the packed path needs, 0 when it cannot take the node. */
static uint32_t qmm_packed_bytes(const dg_qmatmul_args_t *p)
{
    uint32_t d;
    if (!p->scratch || p->k % 4u != 0 || ((uintptr_t)p->a & 3u) != 0 || ((uintptr_t)p->scratch & 3u) != 0)
        return 0;
    for (d = 0; d < p->nbatch_dims; d++)
        if (p->b_bstrides[d] != 0)
            return 0;
    return p->n * p->k + 16u * p->n;
}

/* Columns [lo, hi): B's rows [n, k] and the tables. */
#define DG_QMM_ROWS(NAME, WSUM)                                                                                    \
    static void NAME(const dg_qmatmul_args_t *p, uint8_t *bt, const qmm_chan_t *ch, uint32_t lo, uint32_t hi)      \
    {                                                                                                             \
        const uint8_t *b = (const uint8_t *)p->b;                                                                 \
        uint32_t j, i;                                                                                            \
        for (j = lo; j < hi; j++) {                                                                               \
            const uint32_t c = p->b_per_col ? j : 0;                                                              \
            const uint32_t *r = (const uint32_t *)(bt + j * p->k);                                                \
            int32_t s = 0;                                                                                        \
            for (i = 0; i < p->k; i++)                                                                            \
                bt[j * p->k + i] = p->trans_b ? b[j * p->k + i] : b[i * p->n + j];                                \
            for (i = 0; i < p->k / 4u; i++)                                                                       \
                WSUM(s, r[i], Q_ONES);                                                                            \
            ch->sumb[j] = s;                                                                                      \
            ch->bzp[j] = (uint32_t)q_zp(p->b_zero_point, c, p->b_dtype);                                          \
            ch->m[j] = qmm_multiplier(p, c);                                                                      \
            ch->lim[j] = q_lim(ch->m[j], p->y_dtype);                                                             \
        }                                                                                                         \
    }

DG_QMM_ROWS(qmm_rows_s, Q_DOT_SS)
DG_QMM_ROWS(qmm_rows_u, Q_DOT_UU)

/* Output (row, j) from acc = sum a b and sa = sum of the row's a. */
static inline void qmm_store(const dg_qmatmul_args_t *p, const qmm_chan_t *ch, uint32_t at, uint32_t j, int32_t acc,
                             int32_t sa, uint32_t azp, int32_t yzp)
{
    const uint32_t bzp = ch->bzp[j];
    const uint32_t s = (uint32_t)acc - bzp * (uint32_t)sa - azp * (uint32_t)ch->sumb[j] + p->k * azp * bzp +
                       (uint32_t)(p->bias ? p->bias[j] : 0);
    q_out8(p->y, at + j, (int32_t)s, ch->m[j], ch->lim[j], yzp, p->y_dtype);
}

/* Rows [r0, r1) (over batch * m) in pairs, 4 columns at a time. */
#define DG_QMM_PACKED(NAME, AT, XW, ASUM)                                                                          \
    static void NAME(const dg_qmatmul_args_t *p, const uint8_t *bt, const qmm_chan_t *ch, uint32_t r0, uint32_t r1) \
    {                                                                                                             \
        const uint32_t k4 = p->k / 4u, n = p->n;                                                                  \
        const int32_t yzp = q_zp(p->y_zero_point, 0, p->y_dtype);                                                 \
        uint32_t row, j, i, d;                                                                                    \
        for (row = r0; row < r1; row += 2u) {                                                                     \
            const int two = row + 1u < r1;                                                                        \
            uint32_t aoff[2], rr, azp[2];                                                                         \
            int32_t sa[2];                                                                                        \
            const uint32_t *a0, *a1;                                                                              \
            for (rr = 0; rr < 2u; rr++) {                                                                         \
                const uint32_t ro = two || rr == 0 ? row + rr : row, bi = ro / p->m;                              \
                uint32_t rem = bi, off = 0;                                                                       \
                const uint32_t *ar;                                                                               \
                int32_t s = 0;                                                                                    \
                for (d = p->nbatch_dims; d-- > 0;) {                                                              \
                    off += rem % p->batch_shape[d] * p->a_bstrides[d];                                            \
                    rem /= p->batch_shape[d];                                                                     \
                }                                                                                                 \
                aoff[rr] = off + ro % p->m * p->k;                                                                \
                ar = (const uint32_t *)((const AT *)p->a + aoff[rr]);                                             \
                for (i = 0; i < k4; i++)                                                                          \
                    ASUM(s, ar[i], Q_ONES);                                                                       \
                sa[rr] = s;                                                                                       \
                azp[rr] = (uint32_t)q_zp(p->a_zero_point, p->a_zp_per_row ? ro % p->m : 0, p->a_dtype);           \
            }                                                                                                     \
            a0 = (const uint32_t *)((const AT *)p->a + aoff[0]);                                                  \
            a1 = (const uint32_t *)((const AT *)p->a + aoff[1]);                                                  \
            for (j = 0; j < n; j += 4u) {                                                                         \
                const uint32_t *b0 = (const uint32_t *)(bt + j * p->k);                                           \
                const uint32_t *b1 = j + 1u < n ? b0 + k4 : b0, *b2 = j + 2u < n ? b0 + 2u * k4 : b0;             \
                const uint32_t *b3 = j + 3u < n ? b0 + 3u * k4 : b0;                                              \
                int32_t x0 = 0, x1 = 0, x2 = 0, x3 = 0, y0 = 0, y1 = 0, y2 = 0, y3 = 0;                           \
                const uint32_t nj = n - j < 4u ? n - j : 4u;                                                      \
                int32_t xs[4], ys[4];                                                                             \
                Q_DOT_2X4(XW, TWO, k4, a0, a1, b0, b1, b2, b3, x0, x1, x2, x3, y0, y1, y2, y3);                   \
                xs[0] = x0, xs[1] = x1, xs[2] = x2, xs[3] = x3;                                                   \
                ys[0] = y0, ys[1] = y1, ys[2] = y2, ys[3] = y3;                                                   \
                for (i = 0; i < nj; i++) {                                                                        \
                    qmm_store(p, ch, row * n, j + i, xs[i], sa[0], azp[0], yzp);                                  \
                    if (two)                                                                                      \
                        qmm_store(p, ch, (row + 1u) * n, j + i, ys[i], sa[1], azp[1], yzp);                       \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

DG_QMM_PACKED(qmm_packed_ss, int8_t, Q_XW_SS, Q_DOT_SS)
DG_QMM_PACKED(qmm_packed_us, uint8_t, Q_XW_US, Q_DOT_UU)
DG_QMM_PACKED(qmm_packed_su, int8_t, Q_XW_SU, Q_DOT_SS)
DG_QMM_PACKED(qmm_packed_uu, uint8_t, Q_XW_UU, Q_DOT_UU)

typedef void (*qmm_packed_fn)(const dg_qmatmul_args_t *, const uint8_t *, const qmm_chan_t *, uint32_t, uint32_t);

/* The packed path: the team fills B's copy and the tables, then splits
 * the row pairs. */
static void qmm_packed(const dg_qmatmul_args_t *p)
{
    const int as = p->a_dtype == DG_DT_I8, bs = p->b_dtype == DG_DT_I8;
    const qmm_packed_fn f = as ? (bs ? qmm_packed_ss : qmm_packed_su) : (bs ? qmm_packed_us : qmm_packed_uu);
    uint8_t *bt = (uint8_t *)p->scratch;
    const uint32_t pairs = (p->batch * p->m + 1u) / 2u;
    const dg_range_t cols = dg_split(p->n);
    dg_range_t r;
    qmm_chan_t ch;
    ch.sumb = (int32_t *)(bt + p->n * p->k);
    ch.bzp = (uint32_t *)(ch.sumb + p->n);
    ch.m = (float *)(ch.bzp + p->n);
    ch.lim = (uint32_t *)(ch.m + p->n);
    (bs ? qmm_rows_s : qmm_rows_u)(p, bt, &ch, cols.start, cols.end);
    pi_cl_team_barrier();
    r = dg_split(pairs);
    if (r.start < r.end)
        f(p, bt, &ch, 2u * r.start, 2u * r.end < p->batch * p->m ? 2u * r.end : p->batch * p->m);
}

void dg_qlinear_matmul(void *args)
{
    const dg_qmatmul_args_t *p = (const dg_qmatmul_args_t *)args;
    dg_range_t r;
    uint32_t row, d;
    if (qmm_packed_bytes(p)) {
        qmm_packed(p);
        return;
    }
    r = dg_split(p->batch * p->m);
    for (row = r.start; row < r.end; row++) {
        const uint32_t bi = row / p->m;
        uint32_t aoff = 0, boff = 0, rem = bi;
        for (d = p->nbatch_dims; d-- > 0;) {
            const uint32_t id = rem % p->batch_shape[d];
            rem /= p->batch_shape[d];
            aoff += id * p->a_bstrides[d];
            boff += id * p->b_bstrides[d];
        }
        qmatmul_row(p, aoff, boff, row % p->m, bi * p->m * p->n);
    }
}
