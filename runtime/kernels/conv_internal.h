/* Shared by the convolution sources, one per kernel variant (not part of
 * the kernel API): conv_fwd.c (the general forward), conv_pointwise.c,
 * conv_depthwise.c (3 x 3), conv_grad_dx.c, conv_grad_dw.c and
 * conv_grad_db.c. */
#ifndef DG_CONV_INTERNAL_H
#define DG_CONV_INTERNAL_H

#include "dg_internal.h"

/* Is p a pointwise convolution (1 x 1, stride 1, no padding), the form of
 * conv_pointwise.c? */
static inline int dg_conv_is_pointwise(const dg_conv_args_t *p)
{
    return p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
           p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w;
}

/* Does the depthwise 3 x 3 row kernel (conv_depthwise.c) apply? */
static inline int dg_conv_dw3_applies(const dg_conv_args_t *p)
{
    return p->group == p->in_c && p->out_c == p->in_c && p->k_h == 3 && p->k_w == 3 &&
           p->dil_h == 1 && p->dil_w == 1 && p->stride_h == p->stride_w &&
           (p->stride_w == 1 || p->stride_w == 2) && p->pad_top <= 2 && p->pad_left <= 2;
}

/* The forward's weight panels of the 32-bit cores (conv_fwd.c): at most
 * DG_CONV_PANEL_FLOATS floats of stack; DG_CONV_PANEL_FITS(p): p's blocks
 * of 4 output channels take that path. */
#if defined(__riscv) || defined(DG_CONV_PANEL)
#define DG_CONV_PANEL_FLOATS 144
#define DG_CONV_PANEL_FITS(p) (4 * (p)->k_h * (p)->k_w <= DG_CONV_PANEL_FLOATS)
#else
#define DG_CONV_PANEL_FITS(p) 0
#endif

/* conv_fwd.c: the general convolution; wflip: the dX form (see
 * conv_grad_dx.c), with every block on the panel path. */
void dg_conv_items(const dg_conv_args_t *p, const float *wflip, int fault);

/* conv_pointwise.c: the forward, dX and dW of a pointwise convolution. */
void dg_conv_pointwise(const dg_conv_args_t *p);
void dg_conv_grad_dx_pointwise(const dg_conv_args_t *p);
void dg_conv_grad_dw_pointwise(const dg_conv_args_t *p);

/* conv_depthwise.c: the depthwise 3 x 3 over x (in_h x in_w) into y (out_h
 * x out_w), flip: the dX form (weights rotated by 180 degrees); its dX with
 * stride 2; its dW. */
void dg_conv_dw3_run(const dg_conv_args_t *p, const float *x, float *y, uint32_t in_h, uint32_t in_w,
                     uint32_t out_h, uint32_t out_w, uint32_t pad_top, uint32_t pad_left, int flip,
                     int fault);
void dg_conv_dw3_grad_x_s2(const dg_conv_args_t *p);
void dg_conv_dw3_grad_w(const dg_conv_args_t *p);

#endif /* DG_CONV_INTERNAL_H */
