/* Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual) on f32,
 * int64, int32, int8 and uint8, and And, Or and Xor, with numpy broadcasting and a bool (0 / 1 byte)
 * output: the building blocks of onnxruntime-training's Max / Min and Clip
 * gradients, and of shape and mask arithmetic on integers. */
#include "dg_internal.h"

#define DG_COMPARE_KERNEL(name, T, EXPR)                                             \
    void name(void *args)                                                            \
    {                                                                                \
        const dg_compare_args_t *p = (const dg_compare_args_t *)args;                \
        const T *A = (const T *)p->a, *B = (const T *)p->b;                          \
        dg_range_t r = dg_split(p->n);                                               \
        uint32_t i, d;                                                               \
        if (p->ndim == 0) {                                                          \
            for (i = r.start; i < r.end; i++) {                                      \
                const T va = A[i], vb = B[i];                                        \
                p->y[i] = (uint8_t)DG_FAULT_I(DG_FAULT_COMPARE, (EXPR) ? 1 : 0);     \
            }                                                                        \
        } else {                                                                     \
            uint32_t idx[DG_MAX_DIMS], oa = 0, ob = 0, flat = r.start;               \
            for (d = p->ndim; d-- > 0;) {                                            \
                idx[d] = flat % p->shape[d];                                         \
                flat /= p->shape[d];                                                 \
                oa += idx[d] * p->a_strides[d];                                      \
                ob += idx[d] * p->b_strides[d];                                      \
            }                                                                        \
            for (i = r.start; i < r.end; i++) {                                      \
                const T va = A[oa], vb = B[ob];                                      \
                p->y[i] = (uint8_t)DG_FAULT_I(DG_FAULT_COMPARE, (EXPR) ? 1 : 0);     \
                for (d = p->ndim; d-- > 0;) {                                        \
                    oa += p->a_strides[d];                                           \
                    ob += p->b_strides[d];                                           \
                    if (++idx[d] < p->shape[d])                                      \
                        break;                                                       \
                    oa -= p->a_strides[d] * p->shape[d];                             \
                    ob -= p->b_strides[d] * p->shape[d];                             \
                    idx[d] = 0;                                                      \
                }                                                                    \
            }                                                                        \
        }                                                                            \
    }

DG_COMPARE_KERNEL(dg_equal_f32, float, va == vb)
DG_COMPARE_KERNEL(dg_less_f32, float, va < vb)
DG_COMPARE_KERNEL(dg_less_equal_f32, float, va <= vb)
DG_COMPARE_KERNEL(dg_greater_f32, float, va > vb)
DG_COMPARE_KERNEL(dg_greater_equal_f32, float, va >= vb)
DG_COMPARE_KERNEL(dg_equal_i64, int64_t, va == vb)
DG_COMPARE_KERNEL(dg_less_i64, int64_t, va < vb)
DG_COMPARE_KERNEL(dg_less_equal_i64, int64_t, va <= vb)
DG_COMPARE_KERNEL(dg_greater_i64, int64_t, va > vb)
DG_COMPARE_KERNEL(dg_greater_equal_i64, int64_t, va >= vb)
DG_COMPARE_KERNEL(dg_equal_i32, int32_t, va == vb)
DG_COMPARE_KERNEL(dg_less_i32, int32_t, va < vb)
DG_COMPARE_KERNEL(dg_less_equal_i32, int32_t, va <= vb)
DG_COMPARE_KERNEL(dg_greater_i32, int32_t, va > vb)
DG_COMPARE_KERNEL(dg_greater_equal_i32, int32_t, va >= vb)
DG_COMPARE_KERNEL(dg_equal_i8, int8_t, va == vb)
DG_COMPARE_KERNEL(dg_less_i8, int8_t, va < vb)
DG_COMPARE_KERNEL(dg_less_equal_i8, int8_t, va <= vb)
DG_COMPARE_KERNEL(dg_greater_i8, int8_t, va > vb)
DG_COMPARE_KERNEL(dg_greater_equal_i8, int8_t, va >= vb)
DG_COMPARE_KERNEL(dg_equal_u8, uint8_t, va == vb)
DG_COMPARE_KERNEL(dg_less_u8, uint8_t, va < vb)
DG_COMPARE_KERNEL(dg_less_equal_u8, uint8_t, va <= vb)
DG_COMPARE_KERNEL(dg_greater_u8, uint8_t, va > vb)
DG_COMPARE_KERNEL(dg_greater_equal_u8, uint8_t, va >= vb)
DG_COMPARE_KERNEL(dg_and_bool, uint8_t, va != 0 && vb != 0)
DG_COMPARE_KERNEL(dg_or_bool, uint8_t, va != 0 || vb != 0)
DG_COMPARE_KERNEL(dg_xor_bool, uint8_t, (va != 0) != (vb != 0))
