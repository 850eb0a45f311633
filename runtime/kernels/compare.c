/* Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual) on f32,
 * int64, int32, int8 and uint8, and And, Or and Xor, with numpy broadcasting and a bool (0 / 1 byte)
 * output: the building blocks of onnxruntime-training's Max / Min and Clip
 * gradients, and of shape and mask arithmetic on integers. */
#include "dg_internal.h"

#define DG_COMPARE_KERNEL(name, T, EXPR)                                        \
    void name(void *args)                                                       \
    {                                                                           \
        const dg_compare_args_t *p = (const dg_compare_args_t *)args;           \
        const T *A = (const T *)p->a, *B = (const T *)p->b;                     \
        DG_BINARY_WALK(p, T, A, T, B,                                           \
                       p->y[i] = (uint8_t)DG_FAULT_I(DG_FAULT_COMPARE, (EXPR) ? 1 : 0)); \
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
