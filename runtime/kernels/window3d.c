/* 3-D windows (NCDHW): MaxPool, AveragePool, Conv and ConvTranspose over
 * depth, height and width. Straightforward loops: the output elements split
 * evenly over the cores, each computed alone by one core from the taps of
 * its window that lie inside the input (the tap ranges found per axis, so
 * no access leaves the input). */
#include "dg_internal.h"

#include <float.h>

/* The taps [lo, hi) of one axis of output position o that read inside the
 * input: o * stride - pad + k * dil in [0, in); and `padded`, how many
 * read inside the padded input (below in + pad_end: taps before the input
 * lie in the begin pad), AveragePool's count with count_include_pad. */
typedef struct {
    int32_t s; /* input position of tap 0 (may be negative) */
    uint32_t lo, hi, padded;
} tap_span_t;

static tap_span_t tap_span(uint32_t o, uint32_t stride, uint32_t pad, uint32_t k, uint32_t dil,
                           uint32_t in, uint32_t pad_end)
{
    tap_span_t r;
    r.s = (int32_t)(o * stride) - (int32_t)pad;
    for (r.lo = 0; r.lo < k && r.s + (int32_t)(r.lo * dil) < 0; r.lo++)
        ;
    for (r.hi = r.lo; r.hi < k && r.s + (int32_t)(r.hi * dil) < (int32_t)in; r.hi++)
        ;
    for (r.padded = r.hi; r.padded < k && r.s + (int32_t)(r.padded * dil) < (int32_t)(in + pad_end);
         r.padded++)
        ;
    return r;
}

/* Output element i of [batch, out_c, out_d, out_h, out_w]: its plane
 * (n * out_c + c) and spans of the three axes. */
typedef struct {
    uint32_t plane;
    tap_span_t d, h, w;
} window_t;

static window_t window_of(const dg_window3d_args_t *p, uint32_t i)
{
    window_t q;
    const uint32_t ow = i % p->out_w, oh = (i / p->out_w) % p->out_h;
    const uint32_t od = (i / p->out_w / p->out_h) % p->out_d;
    q.plane = i / p->out_w / p->out_h / p->out_d;
    q.d = tap_span(od, p->stride_d, p->pad_front, p->k_d, p->dil_d, p->in_d, p->pad_back);
    q.h = tap_span(oh, p->stride_h, p->pad_top, p->k_h, p->dil_h, p->in_h, p->pad_bottom);
    q.w = tap_span(ow, p->stride_w, p->pad_left, p->k_w, p->dil_w, p->in_w, p->pad_right);
    return q;
}

void dg_maxpool3d_f32(void *args)
{
    const dg_window3d_args_t *p = (const dg_window3d_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w, vol = p->in_d * hw;
    const uint32_t n = p->batch * p->out_c * p->out_d * p->out_h * p->out_w;
    const dg_range_t r = dg_split(n);
    uint32_t i, kd, kh, kw;
    DG_CHECK(p->out_c == p->in_c, "MaxPool 3-D: out_c must equal in_c");
    for (i = r.start; i < r.end; i++) {
        const window_t q = window_of(p, i);
        const float *xp = p->x + q.plane * vol;
        float best = -FLT_MAX;
        int64_t bi = -1;
        for (kd = q.d.lo; kd < q.d.hi; kd++) {
            const uint32_t id = (uint32_t)(q.d.s + (int32_t)(kd * p->dil_d));
            for (kh = q.h.lo; kh < q.h.hi; kh++) {
                const uint32_t ih = (uint32_t)(q.h.s + (int32_t)(kh * p->dil_h));
                const uint32_t row = id * hw + ih * p->in_w;
                for (kw = q.w.lo; kw < q.w.hi; kw++) {
                    const uint32_t o = row + (uint32_t)(q.w.s + (int32_t)(kw * p->dil_w));
                    const float v = xp[o];
                    if (v > best || bi < 0) {
                        best = v;
                        bi = (int64_t)o;
                    }
                }
            }
        }
        p->y[i] = DG_FAULT(DG_FAULT_MAXPOOL3D_Y, best);
        if (p->indices)
            p->indices[i] = DG_FAULT_I(DG_FAULT_MAXPOOL3D_IDX, (int64_t)q.plane * (int64_t)vol + bi);
    }
}

void dg_avgpool3d_f32(void *args)
{
    const dg_window3d_args_t *p = (const dg_window3d_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w, vol = p->in_d * hw;
    const uint32_t n = p->batch * p->out_c * p->out_d * p->out_h * p->out_w;
    const dg_range_t r = dg_split(n);
    uint32_t i, kd, kh, kw;
    DG_CHECK(p->out_c == p->in_c, "AveragePool 3-D: out_c must equal in_c");
    for (i = r.start; i < r.end; i++) {
        const window_t q = window_of(p, i);
        const float *xp = p->x + q.plane * vol;
        float acc = 0.0f;
        uint32_t count;
        for (kd = q.d.lo; kd < q.d.hi; kd++) {
            const uint32_t id = (uint32_t)(q.d.s + (int32_t)(kd * p->dil_d));
            for (kh = q.h.lo; kh < q.h.hi; kh++) {
                const uint32_t ih = (uint32_t)(q.h.s + (int32_t)(kh * p->dil_h));
                const float *xr = xp + id * hw + ih * p->in_w;
                for (kw = q.w.lo; kw < q.w.hi; kw++)
                    acc += xr[q.w.s + (int32_t)(kw * p->dil_w)];
            }
        }
        /* count_include_pad: the taps inside the padded input, so not those
         * of a ceil_mode window beyond the end pad (the ONNX reference) */
        if (p->count_include_pad)
            count = q.d.padded * q.h.padded * q.w.padded;
        else
            count = (q.d.hi - q.d.lo) * (q.h.hi - q.h.lo) * (q.w.hi - q.w.lo);
        /* a window with no tap to average (never with pads below the kernel) */
        p->y[i] = DG_FAULT(DG_FAULT_AVGPOOL3D, count ? acc / (float)count : 0.0f);
    }
}

void dg_conv3d_f32(void *args)
{
    const dg_window3d_args_t *p = (const dg_window3d_args_t *)args;
    const uint32_t group = p->group ? p->group : 1;
    const uint32_t hw = p->in_h * p->in_w, vol = p->in_d * hw;
    const uint32_t cpg = p->in_c / group, mpg = p->out_c / group;
    const uint32_t ksz = p->k_d * p->k_h * p->k_w;
    const uint32_t n = p->batch * p->out_c * p->out_d * p->out_h * p->out_w;
    const dg_range_t r = dg_split(n);
    uint32_t i, c, kd, kh, kw;
    DG_CHECK(p->in_c % group == 0 && p->out_c % group == 0,
             "Conv 3-D: channels not divisible by group");
    for (i = r.start; i < r.end; i++) {
        const window_t q = window_of(p, i);
        const uint32_t m = q.plane % p->out_c, b = q.plane / p->out_c;
        const uint32_t c0 = (m / mpg) * cpg;
        float acc = 0.0f;
        for (c = 0; c < cpg; c++) {
            const float *xp = p->x + (b * p->in_c + c0 + c) * vol;
            const float *wp = p->w + (m * cpg + c) * ksz;
            for (kd = q.d.lo; kd < q.d.hi; kd++) {
                const uint32_t id = (uint32_t)(q.d.s + (int32_t)(kd * p->dil_d));
                for (kh = q.h.lo; kh < q.h.hi; kh++) {
                    const uint32_t ih = (uint32_t)(q.h.s + (int32_t)(kh * p->dil_h));
                    const float *xr = xp + id * hw + ih * p->in_w;
                    const float *wr = wp + (kd * p->k_h + kh) * p->k_w;
                    for (kw = q.w.lo; kw < q.w.hi; kw++)
                        acc += xr[q.w.s + (int32_t)(kw * p->dil_w)] * wr[kw];
                }
            }
        }
        if (p->b)
            acc += p->b[m];
        if (p->act == 1 && acc < 0.0f)
            acc = 0.0f;
        p->y[i] = DG_FAULT(DG_FAULT_CONV3D, acc);
    }
}

/* The input positions of one axis that output position o gathers from:
 * tap k reads input (o + pad - k * dil) / stride when that divides and
 * lies in [0, in). Returns the position or -1. */
static DG_INLINE int32_t transposed_tap(uint32_t o, uint32_t pad, uint32_t k, uint32_t dil,
                                        uint32_t stride, uint32_t in)
{
    const int32_t t = (int32_t)(o + pad) - (int32_t)(k * dil);
    if (t < 0 || (uint32_t)t % stride != 0 || (uint32_t)t / stride >= in)
        return -1;
    return (int32_t)((uint32_t)t / stride);
}

void dg_conv_transpose3d_f32(void *args)
{
    const dg_window3d_args_t *p = (const dg_window3d_args_t *)args;
    const uint32_t group = p->group ? p->group : 1;
    const uint32_t hw = p->in_h * p->in_w, vol = p->in_d * hw;
    const uint32_t cpg = p->in_c / group, mpg = p->out_c / group;
    const uint32_t ksz = p->k_d * p->k_h * p->k_w;
    const uint32_t n = p->batch * p->out_c * p->out_d * p->out_h * p->out_w;
    const dg_range_t r = dg_split(n);
    uint32_t i, c, kd, kh, kw;
    DG_CHECK(p->in_c % group == 0 && p->out_c % group == 0,
             "ConvTranspose 3-D: channels not divisible by group");
    for (i = r.start; i < r.end; i++) {
        const uint32_t ow = i % p->out_w, oh = (i / p->out_w) % p->out_h;
        const uint32_t od = (i / p->out_w / p->out_h) % p->out_d;
        const uint32_t plane = i / p->out_w / p->out_h / p->out_d;
        const uint32_t m = plane % p->out_c, b = plane / p->out_c;
        const uint32_t c0 = (m / mpg) * cpg, mo = m % mpg;
        float acc = 0.0f;
        for (c = 0; c < cpg; c++) {
            const float *xp = p->x + (b * p->in_c + c0 + c) * vol;
            const float *wp = p->w + ((c0 + c) * mpg + mo) * ksz;
            for (kd = 0; kd < p->k_d; kd++) {
                const int32_t id = transposed_tap(od, p->pad_front, kd, p->dil_d, p->stride_d, p->in_d);
                if (id < 0)
                    continue;
                for (kh = 0; kh < p->k_h; kh++) {
                    const int32_t ih =
                        transposed_tap(oh, p->pad_top, kh, p->dil_h, p->stride_h, p->in_h);
                    if (ih < 0)
                        continue;
                    for (kw = 0; kw < p->k_w; kw++) {
                        const int32_t iw =
                            transposed_tap(ow, p->pad_left, kw, p->dil_w, p->stride_w, p->in_w);
                        if (iw < 0)
                            continue;
                        acc += xp[(uint32_t)id * hw + (uint32_t)ih * p->in_w + (uint32_t)iw] *
                               wp[(kd * p->k_h + kh) * p->k_w + kw];
                    }
                }
            }
        }
        if (p->b)
            acc += p->b[m];
        p->y[i] = DG_FAULT(DG_FAULT_CONV_TRANSPOSE3D, acc);
    }
}
