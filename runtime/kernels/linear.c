/* Gemm and batched MatMul. Rows of the output are split across cores; each
 * output is one dot product summed over k in order. */
#include "dg_internal.h"

void dg_gemm_f32(void *args)
{
    const dg_gemm_args_t *p = (const dg_gemm_args_t *)args;
    dg_range_t r = dg_split(p->m);
    const uint32_t a_si = p->trans_a ? 1 : p->k, a_sk = p->trans_a ? p->m : 1;
    const uint32_t b_sk = p->trans_b ? 1 : p->n, b_sj = p->trans_b ? p->k : 1;
    const int use_c = p->c != NULL && p->beta != 0.0f;
    uint32_t i, j, kk;
    for (i = r.start; i < r.end; i++) {
        const float *arow = p->a + (size_t)i * a_si;
        for (j = 0; j < p->n; j++) {
            const float *bcol = p->b + (size_t)j * b_sj;
            float acc = 0.0f, v;
            for (kk = 0; kk < p->k; kk++)
                acc += arow[(size_t)kk * a_sk] * bcol[(size_t)kk * b_sk];
            v = p->alpha * acc;
            if (use_c)
                v += p->beta * p->c[(size_t)i * p->c_stride_m + (size_t)j * p->c_stride_n];
            p->y[(size_t)i * p->n + j] = DG_FAULT(DG_FAULT_GEMM, v);
        }
    }
}

/* Batched y = alpha * op(A) op(B); one output row per work item. */
static void matmul_rows(const dg_matmul_args_t *p, uint32_t trans_a, uint32_t trans_b, float alpha, int fault)
{
    dg_range_t r = dg_split(p->batch * p->m);
    const uint32_t a_si = trans_a ? 1 : p->k, a_sk = trans_a ? p->m : 1;
    const uint32_t b_sk = trans_b ? 1 : p->n, b_sj = trans_b ? p->k : 1;
    uint32_t row, j, kk, d;
    (void)fault;
    for (row = r.start; row < r.end; row++) {
        const uint32_t bi = row / p->m, i = row % p->m;
        size_t aoff = 0, boff = 0;
        uint32_t rem = bi;
        const float *arow, *bmat;
        for (d = p->nbatch_dims; d-- > 0;) {
            const uint32_t id = rem % p->batch_shape[d];
            rem /= p->batch_shape[d];
            aoff += (size_t)id * p->a_bstrides[d];
            boff += (size_t)id * p->b_bstrides[d];
        }
        arow = p->a + aoff + (size_t)i * a_si;
        bmat = p->b + boff;
        for (j = 0; j < p->n; j++) {
            float acc = 0.0f;
            for (kk = 0; kk < p->k; kk++)
                acc += arow[(size_t)kk * a_sk] * bmat[(size_t)kk * b_sk + (size_t)j * b_sj];
            p->y[(size_t)row * p->n + j] = DG_FAULT(fault, alpha * acc);
        }
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
