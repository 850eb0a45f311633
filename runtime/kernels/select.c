/* Data movement and selection: Where, Cast, Gather, Split.
 * Element size 1, 2, 4 or 8 bytes where the op is type-agnostic. */
#include "dg_internal.h"

#ifdef DG_FAULT_INJECTION
/* Corrupts the first byte of the first element (tests only). */
#define DG_FAULT_BYTES2(id, dst)                       \
    do {                                               \
        if (dg_fault_id == (id))                       \
            ((uint8_t *)(dst))[0] ^= 0x01;             \
    } while (0)
#else
#define DG_FAULT_BYTES2(id, dst) ((void)0)
#endif

static inline void copy_elem2(uint8_t *dst, const uint8_t *src, uint32_t es)
{
    switch (es) {
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    case 2:
        memcpy(dst, src, 2);
        break;
    default:
        memcpy(dst, src, es);
        break;
    }
}

/* ---- Where ---------------------------------------------------------------- */
void dg_where(void *args)
{
    const dg_where_args_t *p = (const dg_where_args_t *)args;
    const uint32_t es = p->elem_size;
    const uint8_t *xb = (const uint8_t *)p->x, *yb = (const uint8_t *)p->y;
    uint8_t *ob = (uint8_t *)p->out;
    dg_range_t r = dg_split(p->n);
    uint32_t i, d;
    if (r.start >= r.end)
        return;
    if (p->ndim == 0) {
        for (i = r.start; i < r.end; i++)
            copy_elem2(ob + i * es, (p->cond[i] ? xb : yb) + i * es, es);
    } else {
        uint32_t idx[DG_MAX_DIMS], oc = 0, ox = 0, oy = 0, flat = r.start;
        for (d = p->ndim; d-- > 0;) {
            idx[d] = flat % p->shape[d];
            flat /= p->shape[d];
            oc += idx[d] * p->c_strides[d];
            ox += idx[d] * p->x_strides[d];
            oy += idx[d] * p->y_strides[d];
        }
        for (i = r.start; i < r.end; i++) {
            copy_elem2(ob + i * es, p->cond[oc] ? xb + ox * es : yb + oy * es, es);
            for (d = p->ndim; d-- > 0;) {
                oc += p->c_strides[d];
                ox += p->x_strides[d];
                oy += p->y_strides[d];
                if (++idx[d] < p->shape[d])
                    break;
                oc -= p->c_strides[d] * p->shape[d];
                ox -= p->x_strides[d] * p->shape[d];
                oy -= p->y_strides[d] * p->shape[d];
                idx[d] = 0;
            }
        }
    }
    if (r.start == 0)
        DG_FAULT_BYTES2(DG_FAULT_WHERE, p->out);
}

/* ---- Cast ----------------------------------------------------------------- */
static inline int64_t read_int(const void *x, uint32_t dt, uint32_t i)
{
    switch (dt) {
    case DG_DT_I64:
        return ((const int64_t *)x)[i];
    case DG_DT_I32:
        return ((const int32_t *)x)[i];
    case DG_DT_U8:
        return ((const uint8_t *)x)[i];
    default: /* bool */
        return ((const uint8_t *)x)[i] != 0;
    }
}

static inline void write_int(void *y, uint32_t dt, uint32_t i, int64_t v)
{
    switch (dt) {
    case DG_DT_F32:
        ((float *)y)[i] = DG_FAULT(DG_FAULT_CAST, (float)v);
        break;
    case DG_DT_I64:
        ((int64_t *)y)[i] = DG_FAULT_I(DG_FAULT_CAST, v);
        break;
    case DG_DT_I32:
        /* two's complement wrap, without relying on implementation-defined
         * signed narrowing */
        ((int32_t *)y)[i] = DG_FAULT_I(DG_FAULT_CAST, (int32_t)(uint32_t)((uint64_t)v & 0xFFFFFFFFu));
        break;
    case DG_DT_U8:
        ((uint8_t *)y)[i] = (uint8_t)DG_FAULT_I(DG_FAULT_CAST, (uint8_t)((uint64_t)v & 0xFFu));
        break;
    default: /* bool */
        ((uint8_t *)y)[i] = (uint8_t)DG_FAULT_I(DG_FAULT_CAST, v != 0);
        break;
    }
}

void dg_cast(void *args)
{
    const dg_cast_args_t *p = (const dg_cast_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    DG_CHECK(p->from <= DG_DT_BOOL && p->to <= DG_DT_BOOL, "Cast: unknown data type");
    if (p->from == DG_DT_F32) {
        const float *x = (const float *)p->x;
        for (i = r.start; i < r.end; i++) {
            const float v = x[i];
            switch (p->to) {
            case DG_DT_F32:
                ((float *)p->y)[i] = DG_FAULT(DG_FAULT_CAST, v);
                break;
            case DG_DT_I64:
                ((int64_t *)p->y)[i] = DG_FAULT_I(DG_FAULT_CAST, dg_f64_to_i64((double)v));
                break;
            case DG_DT_I32:
                ((int32_t *)p->y)[i] = DG_FAULT_I(DG_FAULT_CAST, dg_f32_to_i32(v));
                break;
            case DG_DT_U8:
                ((uint8_t *)p->y)[i] = (uint8_t)DG_FAULT_I(DG_FAULT_CAST, dg_f32_to_u8(v));
                break;
            default: /* bool: NaN is nonzero, so true */
                ((uint8_t *)p->y)[i] = (uint8_t)DG_FAULT_I(DG_FAULT_CAST, v != 0.0f);
                break;
            }
        }
    } else {
        for (i = r.start; i < r.end; i++)
            write_int(p->y, p->to, i, read_int(p->x, p->from, i));
    }
}

/* ---- Gather --------------------------------------------------------------- */
void dg_gather(void *args)
{
    const dg_gather_args_t *p = (const dg_gather_args_t *)args;
    const uint32_t row = p->inner * p->elem_size;
    dg_range_t r = dg_split(p->outer * p->n_idx);
    uint32_t k;
    for (k = r.start; k < r.end; k++) {
        const uint32_t o = k / p->n_idx, j = k % p->n_idx;
        int64_t ix = p->indices_i32 ? (int64_t)((const int32_t *)p->indices)[j]
                                    : ((const int64_t *)p->indices)[j];
        if (ix < 0)
            ix += (int64_t)p->axis_dim;
        DG_CHECK(ix >= 0 && ix < (int64_t)p->axis_dim, "Gather: index outside [0, axis_dim)");
        memcpy((uint8_t *)p->y + k * row,
               (const uint8_t *)p->x + (o * p->axis_dim + (uint32_t)ix) * row, row);
    }
    if (r.start == 0 && r.end > 0)
        DG_FAULT_BYTES2(DG_FAULT_GATHER, p->y);
}

/* ---- Split ---------------------------------------------------------------- */
void dg_split_kernel(void *args)
{
    const dg_split_args_t *p = (const dg_split_args_t *)args;
    uint32_t total = 0, i, o, pos;
    dg_range_t r;
    for (i = 0; i < p->nout; i++)
        total += p->sizes[i];
    r = dg_split(p->outer);
    for (o = r.start; o < r.end; o++) {
        pos = 0;
        for (i = 0; i < p->nout; i++) {
            const uint32_t len = p->sizes[i] * p->inner * p->elem_size;
            memcpy((uint8_t *)p->y[i] + o * len,
                   (const uint8_t *)p->x + (o * total + pos) * p->inner * p->elem_size, len);
            pos += p->sizes[i];
        }
    }
    if (r.start == 0 && r.end > 0)
        for (i = 0; i < p->nout; i++)
            if (p->sizes[i] * p->inner > 0)
                DG_FAULT_BYTES2(DG_FAULT_SPLIT, p->y[i]);
}

/* ---- GatherGrad ------------------------------------------------------------ */
void dg_gather_grad_f32(void *args)
{
    const dg_gather_grad_args_t *p = (const dg_gather_grad_args_t *)args;
    dg_range_t r = dg_split(p->outer * p->axis_dim);
    uint32_t row, j, i;
    for (row = r.start; row < r.end; row++) {
        const uint32_t o = row / p->axis_dim, k = row % p->axis_dim;
        float *dx = p->dx + row * p->inner;
        for (i = 0; i < p->inner; i++)
            dx[i] = 0.0f;
        for (j = 0; j < p->n_idx; j++) {
            const int64_t ix = p->indices_i32 ? (int64_t)((const int32_t *)p->indices)[j]
                                              : ((const int64_t *)p->indices)[j];
            const float *dy = p->dy + (o * p->n_idx + j) * p->inner;
            DG_CHECK(ix >= 0 && ix < (int64_t)p->axis_dim, "GatherGrad: index outside [0, axis_dim)");
            if (ix != (int64_t)k)
                continue;
            for (i = 0; i < p->inner; i++)
                dx[i] += dy[i];
        }
        for (i = 0; i < p->inner; i++)
            dx[i] = DG_FAULT(DG_FAULT_GATHER_GRAD, dx[i]);
    }
}
