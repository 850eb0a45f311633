/* Pad (constant, reflect, edge, wrap; negative pads crop), of f32 values and
 * of 8-bit ones (quantized graphs pad int8 / uint8 as bytes). The output is
 * split by rows (all dims but the last); each row maps, per dim, to one
 * source row of the cropped input or to the constant. */
#include "dg_internal.h"

/* Source coordinate in the cropped extent [0, len) for output coordinate o
 * (pb = the positive begin pad), or -1 for the constant. */
static inline int32_t pad_src(int32_t o, int32_t pb, int32_t len, uint32_t mode)
{
    int32_t j = o - pb;
    if (j >= 0 && j < len)
        return j;
    switch (mode) {
    case DG_PAD_REFLECT:
        if (len == 1)
            return 0;
        while (j < 0 || j >= len) /* one reflection for valid pads */
            j = j < 0 ? -j : 2 * (len - 1) - j;
        return j;
    case DG_PAD_EDGE:
        return j < 0 ? 0 : len - 1;
    case DG_PAD_WRAP:
        j %= len;
        return j < 0 ? j + len : j;
    default:
        return -1;
    }
}

/* One kernel per element type: only the moved values' type differs. */
#define DG_PAD_KERNEL(NAME, ARGS, T, FAULT) \
void NAME(void *args)                                                                                \
{                                                                                                    \
    const ARGS *p = (const ARGS *)args;                                                              \
    const uint32_t nd = p->ndim, last = nd - 1;                                                      \
    int32_t crop[DG_MAX_DIMS], len[DG_MAX_DIMS], pb[DG_MAX_DIMS];                                    \
    uint32_t out_shape[DG_MAX_DIMS], in_stride[DG_MAX_DIMS];                                         \
    uint32_t rows = 1, d, row, k;                                                                    \
    dg_range_t r;                                                                                    \
    DG_CHECK(nd >= 1 && nd <= DG_MAX_DIMS, "Pad: ndim out of range");                                \
    for (d = nd; d-- > 0;) {                                                                         \
        const int32_t b = p->pads_begin[d], e = p->pads_end[d];                                      \
        crop[d] = b < 0 ? -b : 0;                                                                    \
        len[d] = (int32_t)p->in_shape[d] - crop[d] - (e < 0 ? -e : 0);                               \
        pb[d] = b > 0 ? b : 0;                                                                       \
        out_shape[d] = (uint32_t)((int32_t)p->in_shape[d] + b + e);                                  \
        in_stride[d] = d == last ? 1 : in_stride[d + 1] * p->in_shape[d + 1];                        \
        DG_CHECK(len[d] > 0 || out_shape[d] == 0 || p->mode == DG_PAD_CONSTANT,                      \
                 "Pad: nothing left to reflect / extend");                                           \
        DG_CHECK(p->mode != DG_PAD_REFLECT || (pb[d] < len[d] && (e > 0 ? e : 0) < len[d]),          \
                 "Pad: reflect pads must be smaller than the extent");                               \
    }                                                                                                \
    for (d = 0; d < last; d++)                                                                       \
        rows *= out_shape[d];                                                                        \
    r = dg_split(rows);                                                                              \
    for (row = r.start; row < r.end; row++) {                                                        \
        uint32_t rem = row, src = 0;                                                                 \
        int constant = 0;                                                                            \
        T *y = p->y + row * out_shape[last];                                                         \
        for (d = last; d-- > 0;) {                                                                   \
            const int32_t o = (int32_t)(rem % out_shape[d]);                                         \
            int32_t s;                                                                               \
            rem /= out_shape[d];                                                                     \
            s = len[d] > 0 ? pad_src(o, pb[d], len[d], p->mode) : -1;                                \
            if (s < 0)                                                                               \
                constant = 1;                                                                        \
            else                                                                                     \
                src += (uint32_t)(s + crop[d]) * in_stride[d];                                       \
        }                                                                                            \
        if (constant) {                                                                              \
            for (k = 0; k < out_shape[last]; k++)                                                    \
                y[k] = (T)FAULT(DG_FAULT_PAD, p->value);                                             \
        } else {                                                                                     \
            const T *x = p->x + src + crop[last];                                                    \
            for (k = 0; k < out_shape[last]; k++) {                                                  \
                const int32_t s =                                                                    \
                    len[last] > 0 ? pad_src((int32_t)k, pb[last], len[last], p->mode) : -1;          \
                y[k] = (T)FAULT(DG_FAULT_PAD, s < 0 ? p->value : x[s]);                              \
            }                                                                                        \
        }                                                                                            \
    }                                                                                                \
}

DG_PAD_KERNEL(dg_pad_f32, dg_pad_args_t, float, DG_FAULT)
DG_PAD_KERNEL(dg_pad_b8, dg_pad_b8_args_t, uint8_t, DG_FAULT_I)
