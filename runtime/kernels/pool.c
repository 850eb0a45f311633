/* Pooling kernels (NCHW). Work is split by output row (forward) or by
 * (n, c) plane (gradients: a plane's scatter touches only its own plane). */
#include "dg_internal.h"

#include <float.h>

void dg_maxpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t planes = p->batch * p->channels;
    dg_range_t r = dg_split(planes * p->out_h);
    uint32_t row;
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h, pl = row / p->out_h;
        const float *xp = p->x + (size_t)pl * p->in_h * p->in_w;
        const int64_t hs = (int64_t)oh * p->stride_h - (int64_t)p->pad_top;
        uint32_t ow, kh, kw;
        for (ow = 0; ow < p->out_w; ow++) {
            const int64_t ws = (int64_t)ow * p->stride_w - (int64_t)p->pad_left;
            float best = -FLT_MAX;
            int64_t best_i = -1;
            for (kh = 0; kh < p->k_h; kh++) {
                const int64_t ih = hs + (int64_t)kh * p->dil_h;
                if (ih < 0 || ih >= (int64_t)p->in_h)
                    continue;
                for (kw = 0; kw < p->k_w; kw++) {
                    const int64_t iw = ws + (int64_t)kw * p->dil_w;
                    float v;
                    if (iw < 0 || iw >= (int64_t)p->in_w)
                        continue;
                    v = xp[ih * p->in_w + iw];
                    if (v > best || best_i < 0) {
                        best = v;
                        best_i = ih * p->in_w + iw;
                    }
                }
            }
            p->y[(size_t)row * p->out_w + ow] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best);
            if (p->indices)
                p->indices[(size_t)row * p->out_w + ow] = DG_FAULT_I(
                    DG_FAULT_MAXPOOL_IDX, (int64_t)pl * p->in_h * p->in_w + best_i);
        }
    }
}

void dg_maxpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t in_sz = p->in_h * p->in_w, out_sz = p->out_h * p->out_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        float *dxp = p->dx + (size_t)pl * in_sz;
        const int64_t base = (int64_t)pl * in_sz;
        for (i = 0; i < in_sz; i++)
            dxp[i] = 0.0f;
        for (i = 0; i < out_sz; i++) {
            const int64_t idx = p->indices_in[(size_t)pl * out_sz + i] - base;
            DG_CHECK(idx >= 0 && idx < (int64_t)in_sz,
                     "MaxPoolGrad: an index points outside its (n, c) plane");
            if (idx < 0 || idx >= (int64_t)in_sz)
                continue;
            dxp[idx] += p->dy[(size_t)pl * out_sz + i];
        }
        for (i = 0; i < in_sz; i++)
            dxp[i] = DG_FAULT(DG_FAULT_MAXPOOL_GRAD, dxp[i]);
    }
}

/* Window of output (oh, ow): [hs, he) x [ws, we) clipped to the input, and
 * the divisor onnxruntime uses. */
static void avg_window(const dg_pool_args_t *p, uint32_t oh, uint32_t ow, int64_t *hs,
                       int64_t *he, int64_t *ws, int64_t *we, float *div)
{
    int64_t h0 = (int64_t)oh * p->stride_h - (int64_t)p->pad_top;
    int64_t w0 = (int64_t)ow * p->stride_w - (int64_t)p->pad_left;
    int64_t h1 = h0 + p->k_h, w1 = w0 + p->k_w;
    DG_CHECK(p->dil_h <= 1 && p->dil_w <= 1, "AveragePool: dilations are not supported");
    if (h1 > (int64_t)p->in_h + p->pad_bottom)
        h1 = (int64_t)p->in_h + p->pad_bottom;
    if (w1 > (int64_t)p->in_w + p->pad_right)
        w1 = (int64_t)p->in_w + p->pad_right;
    if (p->count_include_pad)
        *div = (float)((h1 - h0) * (w1 - w0));
    if (h0 < 0)
        h0 = 0;
    if (w0 < 0)
        w0 = 0;
    if (h1 > (int64_t)p->in_h)
        h1 = p->in_h;
    if (w1 > (int64_t)p->in_w)
        w1 = p->in_w;
    if (!p->count_include_pad)
        *div = (float)((h1 - h0) * (w1 - w0));
    *hs = h0;
    *he = h1;
    *ws = w0;
    *we = w1;
}

void dg_avgpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    dg_range_t r = dg_split(p->batch * p->channels * p->out_h);
    uint32_t row, ow;
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h, pl = row / p->out_h;
        const float *xp = p->x + (size_t)pl * p->in_h * p->in_w;
        for (ow = 0; ow < p->out_w; ow++) {
            int64_t hs, he, ws, we, ih, iw;
            float div = 1.0f, acc = 0.0f;
            avg_window(p, oh, ow, &hs, &he, &ws, &we, &div);
            for (ih = hs; ih < he; ih++)
                for (iw = ws; iw < we; iw++)
                    acc += xp[ih * p->in_w + iw];
            p->y[(size_t)row * p->out_w + ow] = DG_FAULT(DG_FAULT_AVGPOOL, acc / div);
        }
    }
}

void dg_avgpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t in_sz = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i, oh, ow;
    for (pl = r.start; pl < r.end; pl++) {
        float *dxp = p->dx + (size_t)pl * in_sz;
        const float *dyp = p->dy + (size_t)pl * p->out_h * p->out_w;
        for (i = 0; i < in_sz; i++)
            dxp[i] = 0.0f;
        for (oh = 0; oh < p->out_h; oh++) {
            for (ow = 0; ow < p->out_w; ow++) {
                int64_t hs, he, ws, we, ih, iw;
                float div = 1.0f, g;
                avg_window(p, oh, ow, &hs, &he, &ws, &we, &div);
                g = dyp[oh * p->out_w + ow] / div;
                for (ih = hs; ih < he; ih++)
                    for (iw = ws; iw < we; iw++)
                        dxp[ih * p->in_w + iw] += g;
            }
        }
        for (i = 0; i < in_sz; i++)
            dxp[i] = DG_FAULT(DG_FAULT_AVGPOOL_GRAD, dxp[i]);
    }
}

void dg_global_avgpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        const float *xp = p->x + (size_t)pl * hw;
        float acc = 0.0f;
        for (i = 0; i < hw; i++)
            acc += xp[i];
        p->y[pl] = DG_FAULT(DG_FAULT_GAP, acc / (float)hw);
    }
}

void dg_global_avgpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        const float g = p->dy[pl] / (float)hw;
        for (i = 0; i < hw; i++)
            p->dx[(size_t)pl * hw + i] = DG_FAULT(DG_FAULT_GAP_GRAD, g);
    }
}
