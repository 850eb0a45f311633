//! `bn_single_value`: a BatchNormalization in training mode normalises each
//! channel over every other dim (batch and spatial); when their product is
//! 1 the batch variance is 0 and PyTorch refuses the model (`Expected more
//! than 1 value per channel when training`). onnxruntime runs it (the output
//! is then just the bias), so the reference would not notice: deploygen
//! flags it statically, from the graph's shapes.
//!
//! Repeating the batch to 2 fixes it iff the batch is the only collapsed
//! dim (a `[1, C]` input) or the spatial dims are a fixed 1×1 made by a
//! global pool (then the product becomes the batch, 2). When a strided
//! layer shrank the map to 1×1, the fix is a larger input resolution.

use super::{Finding, TriageFlavor, BN_SINGLE_VALUE_REASON};
use crate::bind::Binding;
use crate::ir::{Graph, Model, Node, Role, TensorId};
use crate::ops;

/// Whether a node is a BatchNormalization running in training mode.
fn training_mode(n: &Node) -> bool {
    ops::of(n).batch_stats.is_some_and(|f| f(n))
}

/// The canonical reason for a BatchNorm input shape.
pub fn reason(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{BN_SINGLE_VALUE_REASON} [{}]", dims.join(", "))
}

fn spatial_all_one(g: &Graph, t: TensorId) -> bool {
    g.tensor(t).ty.shape().is_some_and(|s| s.len() > 2 && s[2..].iter().all(|&d| d == 1))
}

/// A node that produces a fixed 1×1 map whatever the input resolution.
fn is_global_pool(g: &Graph, n: &Node) -> bool {
    ops::of(n).fixed_1x1.is_some_and(|f| f(g, n))
}

/// Walk back from `t` (a value with 1×1 spatial dims) to the node that made
/// it 1×1: the first producer whose first input still has a larger map.
/// Returns that node, or `None` when the 1×1 comes from a graph input.
fn collapser(g: &Graph, mut t: TensorId) -> Option<&Node> {
    for _ in 0..g.node_count() + 1 {
        let n = g.node(g.producer(t)?);
        let Some(x) = n.input(0) else { return Some(n) };
        if spatial_all_one(g, x) {
            t = x;
        } else {
            return Some(n);
        }
    }
    None
}

/// Every training-mode BatchNorm whose input has one value per channel.
pub fn single_value(model: &Model, binding: &Binding) -> Vec<Finding> {
    let g = &model.graph;
    let data_batch: Option<usize> =
        binding.slots.iter().find(|s| s.role == Role::Data).and_then(|s| s.shape.first().copied());
    let mut out = Vec::new();
    for (_, n) in g.nodes() {
        if !training_mode(n) {
            continue;
        }
        let Some(x) = n.input(0) else { continue };
        let Some(shape) = g.tensor(x).ty.shape() else { continue };
        if shape.len() < 2 {
            continue;
        }
        let per_channel: usize = shape.iter().enumerate().filter(|&(i, _)| i != 1).map(|(_, &d)| d).product();
        if per_channel != 1 {
            continue;
        }
        let batch_is_data = data_batch == Some(1);
        let (fixes, why) = if !batch_is_data {
            (
                false,
                format!(
                    "Dim 0 of the BatchNorm input is not the data's batch (the data input has batch {}), so a \
                     larger batch does not reach it",
                    data_batch.map_or("?".into(), |b| b.to_string())
                ),
            )
        } else if shape.len() == 2 {
            (
                true,
                "The batch is the only collapsed dim: with the batch repeated to 2 each channel sees 2 values".into(),
            )
        } else {
            match collapser(g, x) {
                Some(c) if is_global_pool(g, c) => (
                    true,
                    format!(
                        "The 1×1 spatial map is fixed by the global pool '{}' ({}): with the batch repeated to 2 each \
                         channel sees 2 values",
                        c.name, c.op
                    ),
                ),
                Some(c) => (
                    false,
                    format!(
                        "The spatial dims collapse to 1×1 at '{}' ({}), which depends on the input resolution: a \
                         larger input, not a larger batch, is the fix",
                        c.name, c.op
                    ),
                ),
                None => (false, "The data itself is 1×1 spatially: batch and spatial dims are all 1".into()),
            }
        };
        out.push(Finding {
            flavor: TriageFlavor::BnSingleValue,
            reason: reason(&shape),
            detail: format!(
                "{} '{}' normalises '{}' ({}) in training mode: product of the non-channel dims is 1, so its batch \
                 variance is 0. {why}.",
                n.op,
                n.name,
                g.name_of(x),
                g.tensor(x).ty
            ),
            input: None,
            node: Some(n.name.clone()),
            shape: Some(shape),
            batch2_fixes: Some(fixes),
            fix: if fixes {
                "repeat the batch to 2 in the test data (inputs and labels), and regenerate the references".into()
            } else {
                "not fixable by repeating the batch; enlarge the input or record it as a known failure".into()
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn reason_has_the_real_shape() {
        assert_eq!(
            super::reason(&[1, 256, 1, 1]),
            "Expected more than 1 value per channel when training, got input size [1, 256, 1, 1]"
        );
    }
}
