/* ConvGrad dB: the gradient of a convolution with respect to its bias. */
#include "dg_internal.h"
#include "conv_internal.h"

/* ---- dB: db[m] = sum over n, i (in this order) of dy[n, m, i]. Four
 * channels are summed side by side: four independent addition chains
 * instead of one, each in its own channel's order. */
void dg_conv_grad_db_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    dg_range_t r = dg_split(p->out_c);
    const uint32_t hw = p->out_h * p->out_w;
    const uint32_t dy_n = (uint32_t)p->out_c * hw;
    uint32_t m = r.start, n, i;
    for (; m + 4 <= r.end; m += 4) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        if (p->accumulate)
            a0 = p->db[m], a1 = p->db[m + 1], a2 = p->db[m + 2], a3 = p->db[m + 3];
        for (n = 0; n < p->batch; n++) {
            const float *d0 = p->dy + n * dy_n + (uint32_t)m * hw;
            const float *d1 = d0 + hw, *d2 = d1 + hw, *d3 = d2 + hw;
            for (i = 0; i < hw; i++) {
                a0 += d0[i];
                a1 += d1[i];
                a2 += d2[i];
                a3 += d3[i];
            }
        }
        p->db[m] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a0);
        p->db[m + 1] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a1);
        p->db[m + 2] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a2);
        p->db[m + 3] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a3);
    }
    for (; m < r.end; m++) {
        float acc = p->accumulate ? p->db[m] : 0.0f;
        for (n = 0; n < p->batch; n++) {
            const float *dyp = p->dy + n * dy_n + (uint32_t)m * hw;
            for (i = 0; i < hw; i++)
                acc += dyp[i];
        }
        p->db[m] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, acc);
    }
}
