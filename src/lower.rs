//! Lowering: training-specific rewrites on the typed IR (ConvGrad split,
//! in-place aliasing) ahead of planning.
