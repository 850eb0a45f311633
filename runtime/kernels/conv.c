/* 2-D convolution (NCHW, groups, strides, dilations, pads) and its three
 * gradients. Every output element is owned by one core and summed in a
 * fixed order, so the gradients need no cross-core reduction. */
#include "dg_internal.h"

void dg_conv_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    dg_range_t r = dg_split(p->batch * p->out_c * p->out_h);
    uint32_t row;
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h;
        const uint32_t m = (row / p->out_h) % p->out_c;
        const uint32_t n = row / (p->out_h * p->out_c);
        const uint32_t g = m / mg;
        const float bias = p->b ? p->b[m] : 0.0f;
        float *yrow = p->y + (size_t)row * p->out_w;
        uint32_t ow, c, kh, kw;
        for (ow = 0; ow < p->out_w; ow++) {
            float acc = 0.0f;
            for (c = 0; c < cg; c++) {
                const float *xp = p->x + ((size_t)n * p->in_c + g * cg + c) * p->in_h * p->in_w;
                const float *wp = p->w + ((size_t)m * cg + c) * p->k_h * p->k_w;
                for (kh = 0; kh < p->k_h; kh++) {
                    const int64_t ih = (int64_t)oh * p->stride_h + (int64_t)kh * p->dil_h -
                                       (int64_t)p->pad_top;
                    if (ih < 0 || ih >= (int64_t)p->in_h)
                        continue;
                    for (kw = 0; kw < p->k_w; kw++) {
                        const int64_t iw = (int64_t)ow * p->stride_w + (int64_t)kw * p->dil_w -
                                           (int64_t)p->pad_left;
                        if (iw < 0 || iw >= (int64_t)p->in_w)
                            continue;
                        acc += xp[ih * p->in_w + iw] * wp[kh * p->k_w + kw];
                    }
                }
            }
            yrow[ow] = DG_FAULT(DG_FAULT_CONV, acc + bias);
        }
    }
}

/* dx[n, c, ih, iw] = sum over m in c's group, kh, kw with
 * ih = oh * stride_h + kh * dil_h - pad_top (same for w) of dy * w. */
void dg_conv_grad_dx_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    dg_range_t r = dg_split(p->batch * p->in_c * p->in_h);
    uint32_t row;
    for (row = r.start; row < r.end; row++) {
        const uint32_t ih = row % p->in_h;
        const uint32_t ci = (row / p->in_h) % p->in_c;
        const uint32_t n = row / (p->in_h * p->in_c);
        const uint32_t g = ci / cg, c = ci % cg;
        float *dxrow = p->dx + (size_t)row * p->in_w;
        uint32_t iw, mm, kh, kw;
        for (iw = 0; iw < p->in_w; iw++) {
            float acc = 0.0f;
            for (mm = 0; mm < mg; mm++) {
                const uint32_t m = g * mg + mm;
                const float *dyp = p->dy + ((size_t)n * p->out_c + m) * p->out_h * p->out_w;
                const float *wp = p->w + ((size_t)m * cg + c) * p->k_h * p->k_w;
                for (kh = 0; kh < p->k_h; kh++) {
                    const int64_t th = (int64_t)ih + p->pad_top - (int64_t)kh * p->dil_h;
                    int64_t oh;
                    if (th < 0 || th % p->stride_h != 0)
                        continue;
                    oh = th / p->stride_h;
                    if (oh >= (int64_t)p->out_h)
                        continue;
                    for (kw = 0; kw < p->k_w; kw++) {
                        const int64_t tw = (int64_t)iw + p->pad_left - (int64_t)kw * p->dil_w;
                        int64_t ow;
                        if (tw < 0 || tw % p->stride_w != 0)
                            continue;
                        ow = tw / p->stride_w;
                        if (ow >= (int64_t)p->out_w)
                            continue;
                        acc += dyp[oh * p->out_w + ow] * wp[kh * p->k_w + kw];
                    }
                }
            }
            dxrow[iw] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, acc);
        }
    }
}

/* dw[m, c, kh, kw] = sum over n, oh, ow of dy[n, m, oh, ow] * x[n, g*cg + c,
 * ih, iw]. One weight element per work item. */
void dg_conv_grad_dw_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t kk = p->k_h * p->k_w;
    dg_range_t r = dg_split(p->out_c * cg * kk);
    uint32_t e;
    for (e = r.start; e < r.end; e++) {
        const uint32_t kw = e % p->k_w;
        const uint32_t kh = (e / p->k_w) % p->k_h;
        const uint32_t c = (e / kk) % cg;
        const uint32_t m = e / (kk * cg);
        const uint32_t ci = (m / mg) * cg + c;
        float acc = 0.0f;
        uint32_t n, oh, ow;
        for (n = 0; n < p->batch; n++) {
            const float *dyp = p->dy + ((size_t)n * p->out_c + m) * p->out_h * p->out_w;
            const float *xp = p->x + ((size_t)n * p->in_c + ci) * p->in_h * p->in_w;
            for (oh = 0; oh < p->out_h; oh++) {
                const int64_t ih = (int64_t)oh * p->stride_h + (int64_t)kh * p->dil_h -
                                   (int64_t)p->pad_top;
                if (ih < 0 || ih >= (int64_t)p->in_h)
                    continue;
                for (ow = 0; ow < p->out_w; ow++) {
                    const int64_t iw = (int64_t)ow * p->stride_w + (int64_t)kw * p->dil_w -
                                       (int64_t)p->pad_left;
                    if (iw < 0 || iw >= (int64_t)p->in_w)
                        continue;
                    acc += dyp[oh * p->out_w + ow] * xp[ih * p->in_w + iw];
                }
            }
        }
        p->dw[e] = DG_FAULT(DG_FAULT_CONV_GRAD_DW, acc);
    }
}

void dg_conv_grad_db_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    dg_range_t r = dg_split(p->out_c);
    const uint32_t hw = p->out_h * p->out_w;
    uint32_t m, n, i;
    for (m = r.start; m < r.end; m++) {
        float acc = 0.0f;
        for (n = 0; n < p->batch; n++) {
            const float *dyp = p->dy + ((size_t)n * p->out_c + m) * hw;
            for (i = 0; i < hw; i++)
                acc += dyp[i];
        }
        p->db[m] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, acc);
    }
}
