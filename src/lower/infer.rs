//! Typing pass: walks the schedule once, folds static shape subgraphs into
//! constants and gives every value a dtype and, where knowable, a shape.
//! A shape the file declares (value_info, graph outputs) that contradicts
//! the operator's rule is an error: it means the file and deploygen
//! disagree about what the node computes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir::{Attr, DType, Dim, Graph, Node, Origin, Tensor, TensorData, TensorId, TensorType};
use crate::ops::{self, Ctx, FoldWhen};
use crate::target::Platform;

/// How many bytes folding may make when generating code: each folded
/// value, and all of them together, stay within `bytes`, the target's
/// largest memory level (what no value of the network can outgrow).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldLimit {
    pub bytes: u64,
    /// What the bound is, for messages: `GAP9's largest memory level (L3)`.
    pub of: String,
}

/// The bytes folding has made so far, against its limit.
#[derive(Clone, Debug)]
pub struct Folding {
    pub limit: FoldLimit,
    pub spent: u64,
}

impl Folding {
    pub fn new(limit: FoldLimit) -> Folding {
        Folding { limit, spent: 0 }
    }
}

/// Fold and infer in schedule order, folding at most
/// [`FoldLimit::default`] bytes. Returns the number of folded nodes.
pub fn infer(graph: &mut Graph) -> Result<usize> {
    infer_within(graph, &mut Folding::new(FoldLimit::default()))
}

/// The most bytes folding may make whatever the capacities asked for:
/// what the host emulation can back (1 GiB).
pub const FOLD_CEILING: u64 = 1 << 30;

impl FoldLimit {
    /// The largest memory level of `platform` (capacity overrides
    /// applied), at most [`FOLD_CEILING`].
    pub fn of(platform: &Platform) -> FoldLimit {
        let d = platform.levels.iter().max_by_key(|d| d.capacity).expect("a platform describes its levels (tested)");
        FoldLimit {
            bytes: d.capacity.min(FOLD_CEILING),
            of: format!("{}'s largest memory level ({})", platform.name, d.level),
        }
    }
}

impl Default for FoldLimit {
    /// The largest memory level of any chip deploygen knows, for a model
    /// lowered without a target.
    fn default() -> FoldLimit {
        let bytes = Platform::all().iter().flat_map(|p| p.levels.iter().map(|d| d.capacity)).max().unwrap_or(0);
        FoldLimit { bytes: bytes.min(FOLD_CEILING), of: "the largest memory level of any chip deploygen knows".into() }
    }
}

/// Fold and infer in schedule order, every folded value and their total
/// within `folding`'s limit. Returns the number of folded nodes.
pub fn infer_within(graph: &mut Graph, folding: &mut Folding) -> Result<usize> {
    let mut folded = 0;
    let schedule = graph.schedule.clone();
    let outputs: HashSet<TensorId> = graph.outputs.iter().copied().collect();
    for n in schedule {
        let def = ops::of(&graph.dag[n]);
        required_inputs(&Ctx { graph, node: &graph.dag[n] }, def)?;
        if let Some(legacy) = def.legacy_input {
            if let Some((slot, value)) = legacy(&Ctx { graph, node: &graph.dag[n] })? {
                give_constant(graph, n, slot, value);
            }
        }
        let inferred = rule_with_int_lists(graph, n, def)?;
        if let Some(explicit) = def.explicit_pads {
            if let Some(pads) = explicit(&Ctx { graph, node: &graph.dag[n] })? {
                let node = &mut graph.dag[n];
                node.attrs.insert("pads".into(), Attr::Ints(pads));
                node.attrs.insert("auto_pad".into(), Attr::String("NOTSET".into()));
            }
        }
        let node = graph.dag[n].clone();
        let ctx = Ctx { graph, node: &node };
        if let Some(values) = try_fold(&ctx, def, &inferred, folding)? {
            for (slot, value) in node.outputs.iter().zip(values) {
                if let Some(t) = slot {
                    let t = graph.tensor_mut(*t);
                    t.ty = value.ty();
                    t.data = Some(value);
                    t.origin = Origin::Folded;
                }
            }
            graph.dag.remove_node(n);
            folded += 1;
            continue;
        }
        for (i, slot) in node.outputs.iter().enumerate() {
            let Some(t) = slot else { continue };
            let Some(rule) = inferred.get(i) else {
                return Err(Error::node(
                    &node,
                    format!("has {} outputs but the operator defines {}", node.outputs.len(), inferred.len()),
                ));
            };
            let declared = graph.tensor(*t).ty.clone();
            let at_boundary = outputs.contains(t);
            let (ty, warning) = reconcile(&node, graph.name_of(*t), rule, &declared, at_boundary)?;
            graph.warnings.extend(warning);
            graph.tensor_mut(*t).ty = ty;
        }
    }
    if folded > 0 {
        graph.schedule.retain(|n| graph.dag.contains_node(*n));
        graph.rebuild_edges();
    }
    Ok(folded)
}

/// Input `slot` of node `n` becomes a new constant tensor holding `value`
/// (named after the input it replaces; the old one stays for its other
/// readers).
fn give_constant(graph: &mut Graph, n: petgraph::graph::NodeIndex, slot: usize, value: TensorData) {
    let old = graph.dag[n].input(slot).map(|t| graph.name_of(t).to_string()).unwrap_or_default();
    let mut name = format!("{old}.current_form");
    let mut k = 2;
    while graph.tensors.contains_key(&name) {
        name = format!("{old}.current_form.{k}");
        k += 1;
    }
    let tensor = Tensor {
        name: name.clone(),
        ty: value.ty(),
        origin: Origin::Initializer,
        data: Some(Arc::new(value)),
        sequence: false,
    };
    let (id, _) = graph.tensors.insert_full(name, tensor);
    graph.dag[n].inputs[slot] = Some(id);
}

/// The operator's shape rule; a single INT given where the rule reads
/// INTS becomes a one-element list, and an INT (exact in f32) where it
/// reads a FLOAT becomes that float, each with a warning naming node and
/// attribute (other wrong types stay errors).
fn rule_with_int_lists(
    graph: &mut Graph,
    n: petgraph::stable_graph::NodeIndex,
    def: &ops::OpDef,
) -> Result<Vec<TensorType>> {
    loop {
        let e = match (def.infer)(&Ctx { graph, node: &graph.dag[n] }) {
            Ok(types) => return Ok(types),
            Err(e) => e,
        };
        let node = &mut graph.dag[n];
        if let Some(name) = node.int_refused_as_float(&e) {
            let Some(Attr::Int(v)) = node.attrs.get(&name).cloned() else { return Err(e) };
            node.attrs.insert(name.clone(), Attr::Float(v as f32));
            let warning = format!(
                "node '{}' ({}): attribute '{name}' is an INT ({v}) where a FLOAT is expected (not valid ONNX); \
                 read as {v}.0",
                node.name, node.op
            );
            graph.warnings.push(warning);
            continue;
        }
        let Some(name) = node.int_refused_as_ints(&e) else { return Err(e) };
        let Some(Attr::Int(v)) = node.attrs.get(&name).cloned() else { return Err(e) };
        node.attrs.insert(name.clone(), Attr::Ints(vec![v]));
        let warning = format!(
            "node '{}' ({}): attribute '{name}' is a single INT ({v}) where INTS are expected; read as [{v}]",
            node.name, node.op
        );
        graph.warnings.push(warning);
    }
}

/// The registry's required-input rule, for every node: a required slot
/// left empty (or beyond the node's inputs) is an error before any shape
/// rule runs.
fn required_inputs(ctx: &Ctx, def: &ops::OpDef) -> Result<()> {
    let missing: Vec<String> = def.required.iter().filter(|&&i| !ctx.has(i)).map(|i| i.to_string()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let given = ctx.node.inputs.iter().map(|t| t.map_or("''".to_string(), |t| format!("'{}'", ctx.graph.name_of(t))));
    Err(ctx.err(format!(
        "input {} is required but missing (the node has {} input(s): [{}]; {} needs inputs {:?})",
        missing.join(", "),
        ctx.node.inputs.len(),
        given.collect::<Vec<_>>().join(", "),
        def.name,
        def.required
    )))
}

/// Whether every output of the node is read, and only when generating
/// code: no graph output, each reader's slot one whose value the code is
/// generated for, or a reader that folds under the same rule (a
/// QuantizeLinear -> DequantizeLinear pair of a constant).
fn read_when_generating(g: &Graph, node: &Node) -> bool {
    node.outputs.iter().flatten().all(|&t| {
        // The graph's nodes rather than its schedule: typing removes the
        // nodes it folds before it rebuilds the schedule.
        let readers: Vec<_> = g.dag.node_indices().filter(|&n| g.dag[n].inputs.contains(&Some(t))).collect();
        !readers.is_empty()
            && !g.outputs.contains(&t)
            && readers.iter().all(|&r| {
                let (n, def) = (&g.dag[r], ops::of(&g.dag[r]));
                let slots = n.inputs.iter().enumerate().all(|(slot, i)| *i != Some(t) || def.value_at_generation(slot));
                slots || (def.fold_when == FoldWhen::ReadWhenGenerating && read_when_generating(g, n))
            })
    })
}

/// Fold a node whose outputs are integer shape arithmetic and whose inputs
/// are all known. Trainable weights are never integer, so they never fold.
/// The size of what it makes is checked against the limit before it is
/// made; a view of a constant with its shape unchanged (Identity) shares
/// the input's value.
fn try_fold(
    ctx: &Ctx,
    def: &ops::OpDef,
    inferred: &[TensorType],
    folding: &mut Folding,
) -> Result<Option<Vec<Arc<TensorData>>>> {
    let Some(fold) = def.fold else { return Ok(None) };
    let shape_only = def.fold_when == FoldWhen::Shapes;
    let inputs_known = ctx.node.inputs.iter().enumerate().filter(|(i, _)| !def.type_only.contains(i)).all(|(_, t)| {
        t.is_none_or(|t| {
            let tensor = ctx.graph.tensor(t);
            tensor.data.is_some() && !matches!(tensor.origin, Origin::Input)
        })
    });
    if !(shape_only || inputs_known) {
        return Ok(None);
    }
    let computed = || {
        let mut read = ctx.node.inputs.iter().enumerate().filter(|(i, _)| !def.type_only.contains(i));
        read.all(|(_, t)| t.is_none_or(|t| ctx.graph.tensor(t).origin == Origin::Folded))
    };
    let ints = inferred.iter().all(|t| t.dtype.is_int() || t.dtype == DType::Bool)
        || def.fold_when == FoldWhen::Always
        || (def.fold_when == FoldWhen::ConstantValues && computed())
        || (def.fold_when == FoldWhen::ReadWhenGenerating && read_when_generating(ctx.graph, ctx.node));
    if !ints {
        return Ok(None);
    }
    if def.view {
        if let (Some(x), [out]) = (ctx.node.input(0).and_then(|t| ctx.graph.tensor(t).data.as_ref()), inferred) {
            if out.dtype == x.dtype && out.shape().as_deref() == Some(x.shape.as_slice()) {
                return Ok(Some(vec![Arc::clone(x)]));
            }
        }
    }
    // Each output's size from the shape rule, before anything is made: no
    // value can outgrow the target's largest level, folded or not.
    for t in inferred.iter().filter(|t| t.dims.is_some()) {
        let bytes = t.bytes().map_or(u64::MAX, |b| b as u64);
        if bytes > folding.limit.bytes {
            return Err(too_big(ctx, t, bytes, &folding.limit));
        }
    }
    let Some(values) = fold(ctx, inferred)? else { return Ok(None) };
    let made: u64 = values.iter().map(|v| v.bytes.len() as u64).sum();
    if let Some(v) = values.iter().find(|v| v.bytes.len() as u64 > folding.limit.bytes) {
        return Err(too_big(ctx, &v.ty(), v.bytes.len() as u64, &folding.limit));
    }
    folding.spent = folding.spent.saturating_add(made);
    if folding.spent > folding.limit.bytes {
        return Err(ctx.err(format!(
            "folding it when generating code brings the constants deploygen computes to {} B, more than the {} B \
             of {}",
            thousands(folding.spent),
            thousands(folding.limit.bytes),
            folding.limit.of
        )));
    }
    Ok(Some(values.into_iter().map(Arc::new).collect()))
}

/// A value of the node, computed when generating code, that no memory
/// level of the target holds.
fn too_big(ctx: &Ctx, t: &TensorType, bytes: u64, limit: &FoldLimit) -> Error {
    let size = if bytes == u64::MAX { "more than 2^64".to_string() } else { thousands(bytes) };
    ctx.err(format!(
        "its output {t} is {size} B, more than the {} B of {}; deploygen computes it when generating code and \
         refuses values the target cannot hold",
        thousands(limit.bytes),
        limit.of
    ))
}

/// `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Same element count, and equal once the size-1 dims are dropped
/// (`[1]` vs `[]`, `[1, 8]` vs `[8]`): the same values in the same order.
fn differ_by_ones(a: &[Dim], b: &[Dim]) -> bool {
    let fixed = |d: &[Dim]| -> Option<Vec<usize>> {
        d.iter()
            .map(|x| match x {
                Dim::Fixed(n) => Some(*n),
                Dim::Sym(_) => None,
            })
            .collect()
    };
    let (Some(a), Some(b)) = (fixed(a), fixed(b)) else { return false };
    let strip = |v: &[usize]| -> Vec<usize> { v.iter().copied().filter(|&d| d != 1).collect() };
    strip(&a) == strip(&b) && a.iter().product::<usize>() == b.iter().product::<usize>()
}

/// Combine the operator rule's type with what the file declares. A
/// declaration that differs only by size-1 dims is accepted with a
/// warning: graph outputs (`at_boundary`) keep the declared shape, which
/// is the shape the file's users expect; inner values take the rule's.
fn reconcile(
    node: &crate::ir::Node,
    tensor: &str,
    rule: &TensorType,
    declared: &TensorType,
    at_boundary: bool,
) -> Result<(TensorType, Option<String>)> {
    // `Other(0)` (ONNX UNDEFINED) marks a value the file does not declare.
    let undeclared = declared.dtype == DType::Other(0);
    if !undeclared && declared.dtype != rule.dtype {
        return Err(Error::node(
            node,
            format!("output '{tensor}' is declared as {} but the operator computes {}", declared.dtype, rule.dtype),
        ));
    }
    let (Some(r), Some(d)) = (&rule.dims, &declared.dims) else {
        let ty = if rule.dims.is_some() {
            rule.clone()
        } else {
            TensorType { dtype: rule.dtype, dims: declared.dims.clone() }
        };
        return Ok((ty, None));
    };
    let agree = r.len() == d.len()
        && r.iter().zip(d).all(|(a, b)| match (a, b) {
            (Dim::Fixed(x), Dim::Fixed(y)) => x == y,
            _ => true,
        });
    if !agree && differ_by_ones(r, d) {
        let (kept, ty) = if at_boundary {
            ("the declared shape (graph output)", TensorType { dtype: rule.dtype, dims: Some(d.clone()) })
        } else {
            ("the computed shape", rule.clone())
        };
        let warning = format!(
            "'{}' ({}): output '{tensor}' is declared as {} but the operator computes {}; they differ only by \
             size-1 dims, using {kept}",
            node.name,
            node.op,
            declared.shape_string(),
            rule.shape_string()
        );
        return Ok((ty, Some(warning)));
    }
    if !agree {
        return Err(Error::node(
            node,
            format!(
                "output '{tensor}' is declared as {} but the operator computes {}",
                declared.shape_string(),
                rule.shape_string()
            ),
        ));
    }
    // Prefer fixed dims from either side.
    let dims = r
        .iter()
        .zip(d)
        .map(|(a, b)| match (a, b) {
            (Dim::Fixed(_), _) => a.clone(),
            (_, Dim::Fixed(_)) => b.clone(),
            _ => a.clone(),
        })
        .collect();
    Ok((TensorType { dtype: rule.dtype, dims: Some(dims) }, None))
}
