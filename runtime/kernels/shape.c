/* Data movement: plain copy, strided copy (Transpose / Slice / Expand),
 * Concat. Element size 1, 2, 4 or 8 bytes. */
#include "dg_internal.h"

#ifdef DG_FAULT_INJECTION
/* Corrupts the first byte of the first element (tests only). */
#define DG_FAULT_BYTES(id, dst)                        \
    do {                                               \
        if (dg_fault_id == (id))                       \
            ((uint8_t *)(dst))[0] ^= 0x01;             \
    } while (0)
#else
#define DG_FAULT_BYTES(id, dst) ((void)0)
#endif

void dg_copy_kernel(void *args)
{
    const dg_copy_args_t *p = (const dg_copy_args_t *)args;
    dg_range_t r = dg_split(p->bytes);
    if (r.end > r.start) {
        memcpy((uint8_t *)p->y + r.start, (const uint8_t *)p->x + r.start, r.end - r.start);
        if (r.start == 0)
            DG_FAULT_BYTES(DG_FAULT_COPY, p->y);
    }
}

static void copy_elem(void *dst, const void *src, uint32_t es)
{
    switch (es) {
    case 4:
        *(uint32_t *)dst = *(const uint32_t *)src;
        break;
    case 8:
        *(uint64_t *)dst = *(const uint64_t *)src;
        break;
    case 2:
        *(uint16_t *)dst = *(const uint16_t *)src;
        break;
    default:
        memcpy(dst, src, es);
        break;
    }
}

void dg_strided_copy(void *args)
{
    const dg_strided_copy_args_t *p = (const dg_strided_copy_args_t *)args;
    uint32_t n = 1, d, i, idx[DG_MAX_DIMS], rem;
    int32_t off;
    dg_range_t r;
    for (d = 0; d < p->ndim; d++)
        n *= p->shape[d];
    r = dg_split(n);
    if (r.start >= r.end)
        return;
    rem = r.start;
    off = p->offset;
    for (d = p->ndim; d-- > 0;) {
        idx[d] = rem % p->shape[d];
        rem /= p->shape[d];
        off += (int32_t)idx[d] * p->strides[d];
    }
    for (i = r.start; i < r.end; i++) {
        copy_elem((uint8_t *)p->y + (uint32_t)i * p->elem_size,
                  (const uint8_t *)p->x + off * (int32_t)p->elem_size, p->elem_size);
        for (d = p->ndim; d-- > 0;) {
            off += p->strides[d];
            if (++idx[d] < p->shape[d])
                break;
            off -= p->strides[d] * (int32_t)p->shape[d];
            idx[d] = 0;
        }
    }
    if (r.start == 0)
        DG_FAULT_BYTES(DG_FAULT_STRIDED_COPY, p->y);
}

void dg_transpose(void *args) { dg_strided_copy(args); }
void dg_slice(void *args) { dg_strided_copy(args); }
void dg_expand(void *args) { dg_strided_copy(args); }

void dg_concat(void *args)
{
    const dg_concat_args_t *p = (const dg_concat_args_t *)args;
    uint32_t total = 0, i, o, pos;
    dg_range_t r;
    for (i = 0; i < p->nin; i++)
        total += p->sizes[i];
    r = dg_split(p->outer);
    for (o = r.start; o < r.end; o++) {
        pos = 0;
        for (i = 0; i < p->nin; i++) {
            const uint32_t len = (uint32_t)p->sizes[i] * p->inner * p->elem_size;
            memcpy((uint8_t *)p->y + ((uint32_t)o * total + pos) * p->inner * p->elem_size,
                   (const uint8_t *)p->x[i] + (uint32_t)o * len, len);
            pos += p->sizes[i];
        }
    }
    if (r.start == 0 && r.end > 0)
        DG_FAULT_BYTES(DG_FAULT_CONCAT, p->y);
}
