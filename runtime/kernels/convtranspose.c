/* ConvTranspose (NCHW, weights [in_c, out_c / group, k_h, k_w]) as a
 * gather: each output element, owned by one core, sums the inputs that map
 * onto it in (input channel, k_h, k_w) order, then adds the bias. */
#include "dg_internal.h"

void dg_conv_transpose_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t icg = p->in_c / p->group, ocg = p->out_c / p->group;
    const uint32_t in_hw = p->in_h * p->in_w, khw = p->k_h * p->k_w;
    const uint32_t rows = p->batch * p->out_c * p->out_h;
    dg_range_t r = dg_split(rows);
    uint32_t row;
    DG_CHECK(p->group > 0 && p->in_c % p->group == 0 && p->out_c % p->group == 0,
             "ConvTranspose: channels not divisible by group");
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h, noc = row / p->out_h;
        const uint32_t oc = noc % p->out_c, n = noc / p->out_c;
        const uint32_t g = oc / ocg, ocl = oc % ocg;
        float *y = p->y + row * p->out_w;
        uint32_t ow;
        for (ow = 0; ow < p->out_w; ow++) {
            float acc = 0.0f;
            uint32_t icl, kh, kw;
            for (icl = 0; icl < icg; icl++) {
                const uint32_t ic = g * icg + icl;
                const float *x = p->x + (n * p->in_c + ic) * in_hw;
                const float *w = p->w + (ic * ocg + ocl) * khw;
                for (kh = 0; kh < p->k_h; kh++) {
                    /* oh = ih * stride - pad + kh * dil */
                    const int32_t th = (int32_t)oh + (int32_t)p->pad_top - (int32_t)(kh * p->dil_h);
                    int32_t ih;
                    if (th < 0 || th % (int32_t)p->stride_h)
                        continue;
                    ih = th / (int32_t)p->stride_h;
                    if (ih >= (int32_t)p->in_h)
                        continue;
                    for (kw = 0; kw < p->k_w; kw++) {
                        const int32_t tw =
                            (int32_t)ow + (int32_t)p->pad_left - (int32_t)(kw * p->dil_w);
                        int32_t iw;
                        if (tw < 0 || tw % (int32_t)p->stride_w)
                            continue;
                        iw = tw / (int32_t)p->stride_w;
                        if (iw >= (int32_t)p->in_w)
                            continue;
                        acc += x[(uint32_t)ih * p->in_w + (uint32_t)iw] * w[kh * p->k_w + kw];
                    }
                }
            }
            if (p->b)
                acc += p->b[oc];
            y[ow] = DG_FAULT(DG_FAULT_CONV_TRANSPOSE, acc);
        }
    }
}
