//! `deploygen inspect`: what is inside a model, as text for a person, JSON
//! for tools, and Graphviz for a picture.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{json, Value};

use crate::escape::{dot_string, name};
use crate::ir::{Dim, Flavor, Graph, Model, Origin, Role, TensorId, TensorType};

#[derive(Serialize)]
pub struct Report {
    pub model: String,
    pub flavor: Flavor,
    pub training: bool,
    /// Nodes in the ONNX file.
    pub nodes: usize,
    /// Nodes removed by constant folding of static shape subgraphs.
    pub folded_nodes: usize,
    pub ops: BTreeMap<String, usize>,
    /// Domain (`ai.onnx` for the default) → number of nodes.
    pub domains: BTreeMap<String, usize>,
    pub opsets: BTreeMap<String, i64>,
    pub initializers: usize,
    /// Bytes of all weights: initializers plus parameter graph inputs.
    pub param_bytes: usize,
    /// Bytes of the trainable parameters.
    pub trainable_bytes: usize,
    pub inputs: Vec<ValueReport>,
    pub outputs: Vec<ValueReport>,
    pub loss: Option<String>,
    pub params: Vec<crate::ir::roles::ParamRoles>,
    pub optimizer: Option<GraphReport>,
    /// The training step deploygen derived from `train.toml`, when it did.
    pub derived: Option<crate::ir::train::Derived>,
    /// Symbolic dims with the value each took and where it came from.
    pub dims: Vec<crate::ir::DimValue>,
    /// What `dg_model_predict` of a training project runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predict: Option<PredictReport>,
    /// Import and lowering warnings (both graphs), one line each.
    pub warnings: Vec<String>,
}

/// The prediction graph of a training model, which `dg_model_predict`
/// runs: the forward part in eval mode at its own batch, on the training
/// step's weight buffers.
#[derive(Clone, Serialize)]
pub struct PredictReport {
    pub nodes: usize,
    pub outputs: Vec<String>,
    /// Samples per prediction.
    pub batch: usize,
    /// Nodes that normalise with their running statistics (eval-mode BatchNorm).
    pub eval_nodes: usize,
    /// Why there is no prediction, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
    /// Why the batch is not the default one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn predict_report(model: &Model) -> Option<PredictReport> {
    if !model.roles.is_training() {
        return None;
    }
    let batch = model.predict_batch;
    Some(match (&model.predict, crate::lower::forward::forward(model)) {
        (Some(pg), Ok(f)) => PredictReport {
            nodes: pg.schedule.len(),
            outputs: pg.outputs.iter().map(|&t| pg.name_of(t).to_string()).collect(),
            batch,
            eval_nodes: f.batch_stats.len(),
            none: None,
            note: model.predict_note.clone(),
        },
        _ => PredictReport {
            nodes: 0,
            outputs: vec![],
            batch,
            eval_nodes: 0,
            none: Some(model.no_predict.as_ref().map_or_else(|| "no prediction graph".into(), ToString::to_string)),
            note: None,
        },
    })
}

#[derive(Clone, Serialize)]
pub struct ValueReport {
    pub name: String,
    pub shape: Value,
    pub dtype: String,
    pub role: String,
}

#[derive(Serialize)]
pub struct GraphReport {
    pub path: String,
    pub nodes: usize,
    pub ops: BTreeMap<String, usize>,
    pub inputs: Vec<ValueReport>,
    pub outputs: Vec<ValueReport>,
}

fn shape_json(ty: &TensorType) -> Value {
    match &ty.dims {
        None => Value::Null,
        Some(d) => Value::Array(
            d.iter()
                .map(|x| match x {
                    Dim::Fixed(n) => json!(n),
                    Dim::Sym(s) => json!(if s.is_empty() { "?" } else { s.as_str() }),
                })
                .collect(),
        ),
    }
}

fn values(g: &Graph, ids: &[TensorId], role: impl Fn(&str) -> Option<Role>, seq_note: bool) -> Vec<ValueReport> {
    ids.iter()
        .map(|&t| {
            let tensor = g.tensor(t);
            let mut dtype = tensor.ty.dtype.name();
            if seq_note && tensor.sequence {
                dtype = format!("seq({dtype})");
            }
            ValueReport {
                name: tensor.name.clone(),
                shape: shape_json(&tensor.ty),
                dtype,
                role: role(&tensor.name).map_or("other", Role::name).to_string(),
            }
        })
        .collect()
}

fn op_counts(g: &Graph) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for n in g.dag.node_weights() {
        *m.entry(n.op.clone()).or_insert(0) += 1;
    }
    m
}

fn domain_name(d: &str) -> String {
    if d.is_empty() {
        "ai.onnx".into()
    } else {
        d.to_string()
    }
}

pub fn report(model: &Model) -> Report {
    let g = &model.graph;
    let r = &model.roles;
    let mut domains = BTreeMap::new();
    for n in g.dag.node_weights() {
        *domains.entry(domain_name(&n.domain)).or_insert(0) += 1;
    }
    let bytes_of = |name: &str| g.id(name).and_then(|t| g.tensor(t).ty.bytes()).unwrap_or(0);
    let weight_inputs: usize = g
        .inputs
        .iter()
        .filter(|&&t| matches!(r.role(g.name_of(t)), Some(Role::Param | Role::Frozen)))
        .map(|&t| g.tensor(t).ty.bytes().unwrap_or(0))
        .sum();
    Report {
        model: model.path.display().to_string(),
        flavor: r.flavor,
        training: r.is_training(),
        nodes: g.onnx_nodes,
        folded_nodes: g.onnx_nodes - g.node_count(),
        ops: op_counts(g),
        domains,
        opsets: g.opsets.iter().map(|(d, v)| (domain_name(d), *v)).collect(),
        initializers: g.initializers.len(),
        param_bytes: g.initializer_bytes() + weight_inputs,
        trainable_bytes: r.params.iter().map(|p| bytes_of(&p.name)).sum(),
        inputs: values(g, &g.inputs, |n| r.role(n), false),
        outputs: values(g, &g.outputs, |n| r.role(n), false),
        loss: r.loss.clone(),
        params: r.params.clone(),
        optimizer: model.optimizer.as_ref().map(|og| GraphReport {
            path: model.optimizer_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            nodes: og.onnx_nodes,
            ops: op_counts(og),
            inputs: values(og, &og.inputs, |n| r.optimizer.get(n).copied(), true),
            outputs: values(og, &og.outputs, |n| r.optimizer.get(n).copied(), true),
        }),
        derived: model.derived.clone(),
        dims: model.dims.clone(),
        predict: predict_report(model),
        warnings: g.warnings.iter().chain(model.optimizer.iter().flat_map(|og| &og.warnings)).cloned().collect(),
    }
}

pub fn json(model: &Model) -> String {
    let mut s = serde_json::to_string_pretty(&report(model)).expect("report serializes");
    s.push('\n');
    s
}

/// The JSON report with further top-level sections (the test-data
/// `binding`, …) after the graph's own fields, then `plan` when there is
/// one, written to `out` as it is serialized.
pub fn write_json_with<P: Serialize>(
    out: impl std::io::Write,
    report: Report,
    sections: BTreeMap<String, Value>,
    plan: Option<P>,
) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct Extended<P> {
        #[serde(flatten)]
        report: Report,
        #[serde(flatten)]
        sections: BTreeMap<String, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        plan: Option<P>,
    }
    let mut out = out;
    serde_json::to_writer_pretty(&mut out, &Extended { report, sections, plan })?;
    out.write_all(b"\n").map_err(serde_json::Error::io)
}

/// Human-readable byte count.
pub fn human_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

fn shape_text(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "[?]".into(),
    }
}

fn table(out: &mut String, rows: &[ValueReport]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.name.clone(), format!("{} {}", r.dtype, shape_text(&r.shape)), r.role.clone()])
        .collect();
    out.push_str(&crate::text::table(&rows, &crate::text::Style { max_width: 60, ..crate::text::Style::PLAIN }));
}

/// Names joined by `, `, each on the line ([`crate::escape::name`]).
fn names(v: &[String]) -> String {
    v.iter().map(|n| name(n)).collect::<Vec<_>>().join(", ")
}

/// The text report. Every name in it is [`crate::escape::name`]d: a line
/// break in a name cannot forge a line of the report.
pub fn text(model: &Model) -> String {
    let r = report(model);
    let mut o = String::new();
    let flavor = match r.flavor {
        _ if r.derived.is_some() => "inference graph with a training spec: the training step derived from it",
        Flavor::Inference => "inference graph",
        Flavor::TrainingStep => "training step in one graph (forward, backward, inline SGD)",
        Flavor::TrainingArtifacts => "training artifacts (training graph with gradient accumulation + optimizer graph)",
    };
    let _ = writeln!(o, "model        {}", name(&r.model));
    let _ = writeln!(o, "flavor       {flavor}");
    let folded = if r.folded_nodes > 0 { format!(" ({} folded away)", r.folded_nodes) } else { String::new() };
    let _ = writeln!(o, "nodes        {}{folded}", r.nodes);
    if r.derived.is_some() {
        // The weights that train are graph inputs now; all of them were
        // initializers of the file.
        let _ = writeln!(
            o,
            "weights      {} in all, {} trainable (initial values from the model's initializers)",
            human_bytes(r.param_bytes),
            human_bytes(r.trainable_bytes)
        );
    } else {
        let _ = writeln!(
            o,
            "weights      {} initializers, {} in all, {} trainable",
            r.initializers,
            human_bytes(r.param_bytes),
            human_bytes(r.trainable_bytes)
        );
    }
    for d in &r.dims {
        let _ = writeln!(o, "dim          {} = {}, from {}", name(&d.name), d.value, name(&d.from));
    }
    let domains: Vec<String> =
        r.domains.iter().map(|(d, n)| format!("{} ({})", name(d), crate::text::count(*n, "node"))).collect();
    let _ = writeln!(o, "domains      {}", domains.join(", "));
    let mut ops: Vec<(&String, &usize)> = r.ops.iter().collect();
    ops.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let ops: Vec<String> = ops.iter().map(|(k, v)| format!("{} x{v}", name(k))).collect();
    let _ = writeln!(o, "ops          {}", ops.join(", "));
    // Per-parameter buffers and flags are listed with their parameter below;
    // here they are one line each, so the table shows what a person feeds.
    for (title, rows) in [("inputs", &r.inputs), ("outputs", &r.outputs)] {
        let _ = writeln!(o, "\n{title} ({})", rows.len());
        let (bulk, shown): (Vec<&ValueReport>, Vec<&ValueReport>) =
            rows.iter().partition(|v| v.role == "grad_buffer" || v.role == "grad_flag");
        table(&mut o, &shown.into_iter().cloned().collect::<Vec<_>>());
        if let Some(first) = bulk.first() {
            let what = if first.role == "grad_buffer" { "gradient accumulation buffers" } else { "accumulation flags" };
            let _ = writeln!(o, "  … {} {what} ({}, …)", bulk.len(), name(&first.name));
        }
    }
    if r.training {
        let log_prob_only = model.graph.nodes().any(|(_, n)| crate::ops::loss::log_prob_only(&model.graph, n));
        let missing = if log_prob_only {
            "(not computed: SoftmaxCrossEntropyLoss keeps only its log_prob output in this graph)"
        } else {
            "(not found)"
        };
        let _ = writeln!(o, "\nloss         {}", r.loss.as_deref().map_or(missing.into(), name));
        let _ = writeln!(o, "\ntrainable parameters ({})", r.params.len());
        for p in &r.params {
            let mut parts = vec![];
            if let Some(b) = &p.grad_buffer {
                parts.push(format!("buffer {}", name(b)));
            } else if let Some(gr) = &p.gradient {
                parts.push(format!("gradient {}", name(gr)));
            }
            if let Some(u) = &p.updated {
                parts.push(format!("updated {}", name(u)));
            }
            let _ = writeln!(o, "  {}  ->  {}", name(&p.name), parts.join(", "));
        }
    }
    if let Some(d) = &r.derived {
        derived_text(&mut o, d);
    }
    if let Some(opt) = &r.optimizer {
        let ops: Vec<String> = opt.ops.iter().map(|(k, v)| format!("{} x{v}", name(k))).collect();
        let _ = writeln!(
            o,
            "\noptimizer    {} ({}: {})",
            name(&opt.path),
            crate::text::count(opt.nodes, "node"),
            ops.join(", ")
        );
        table(&mut o, &opt.inputs);
        table(&mut o, &opt.outputs);
    }
    if let Some(p) = &r.predict {
        let _ = match &p.none {
            None => writeln!(
                o,
                "\npredict      dg_model.h: {} (the forward part in eval mode{}), outputs {}, batch {} \
                 (--predict-batch); it reads the training step's weights and adds its own activations",
                crate::text::count(p.nodes, "node"),
                if p.eval_nodes > 0 {
                    format!(", {} on running statistics", crate::text::count(p.eval_nodes, "BatchNorm"))
                } else {
                    String::new()
                },
                names(&p.outputs),
                p.batch
            )
            .and_then(|_| match &p.note {
                Some(n) => writeln!(o, "             {n}"),
                None => Ok(()),
            }),
            Some(why) => writeln!(o, "\npredict      none: {why}"),
        };
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(o);
        for w in &r.warnings {
            let _ = writeln!(o, "warning: {}", name(w));
        }
    }
    o
}

/// The derived training step: what was added, what trains, what it costs.
fn derived_text(o: &mut String, d: &crate::ir::train::Derived) {
    let Some(spec) = &d.spec else { return };
    let _ = writeln!(o, "\nderived training step (from {})", name(&spec.source));
    let chosen = if spec.logits.is_some() { "" } else { " (the only float output)" };
    let _ = writeln!(
        o,
        "  loss {} on '{}'{chosen}, labels '{}'; optimizer {} (lr {}), accumulation {}",
        spec.loss.name(),
        name(&d.logits),
        name(&spec.labels),
        spec.optimizer.name(),
        spec.learning_rate,
        spec.accumulation_steps
    );
    let _ = writeln!(
        o,
        "  nodes: {} forward, {} added (loss, backward, accumulation), {} optimizer",
        d.forward_nodes, d.nodes_added, d.optimizer_nodes
    );
    let _ = writeln!(o, "  trainable ({}): {}", d.trainable.len(), names(&d.trainable));
    let frozen = if d.frozen.is_empty() { "none".to_string() } else { names(&d.frozen) };
    let _ = writeln!(o, "  frozen ({}): {frozen}  (no gradient, no buffer)", d.frozen.len());
    if !d.state_inputs.is_empty() {
        let _ = writeln!(o, "  updated as training state: {}", names(&d.state_inputs));
    }
    let _ = writeln!(
        o,
        "  gradient buffers {}, optimizer state {}",
        human_bytes(d.gradient_buffer_bytes as usize),
        human_bytes(d.optimizer_state_bytes as usize)
    );
}

/// Graphviz: one box per operator in schedule order, one ellipse per graph
/// input and output; edges carry tensor names and shapes. Initializers are
/// folded into their consumers' labels to keep the picture readable.
pub fn dot(model: &Model) -> String {
    let g = &model.graph;
    let mut o = String::from("digraph deploygen {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n");
    for &t in &g.inputs {
        let tensor = g.tensor(t);
        let role = model.roles.role(&tensor.name).map_or("input", Role::name);
        let _ = writeln!(
            o,
            "  \"t:{}\" [shape=ellipse, style=filled, fillcolor=\"#e0f0ff\", label=\"{}\\n{}\\n{}\"];",
            dot_string(&tensor.name),
            dot_string(&tensor.name),
            tensor.ty,
            role
        );
    }
    for (i, (_, n)) in g.nodes().enumerate() {
        let _ = writeln!(
            o,
            "  \"n:{i}\" [shape=box, style=filled, fillcolor=\"#fff4d0\", label=\"{}\\n{}\"];",
            dot_string(&n.op),
            dot_string(&n.name)
        );
    }
    let index: std::collections::HashMap<_, _> = g.nodes().enumerate().map(|(i, (n, _))| (n, i)).collect();
    for (i, (_, n)) in g.nodes().enumerate() {
        for &t in n.inputs.iter().flatten() {
            let tensor = g.tensor(t);
            let from = match (g.producer(t), &tensor.origin) {
                (Some(p), _) => format!("n:{}", index[&p]),
                (None, Origin::Input) => format!("t:{}", tensor.name),
                _ => continue,
            };
            let _ = writeln!(
                o,
                "  \"{}\" -> \"n:{i}\" [label=\"{}\\n{}\"];",
                dot_string(&from),
                dot_string(&tensor.name),
                tensor.ty.shape_string()
            );
        }
    }
    for &t in &g.outputs {
        let tensor = g.tensor(t);
        let role = model.roles.role(&tensor.name).map_or("output", Role::name);
        let _ = writeln!(
            o,
            "  \"o:{}\" [shape=ellipse, style=filled, fillcolor=\"#e0ffe0\", label=\"{}\\n{}\\n{}\"];",
            dot_string(&tensor.name),
            dot_string(&tensor.name),
            tensor.ty,
            role
        );
        if let Some(p) = g.producer(t) {
            let _ = writeln!(o, "  \"n:{}\" -> \"o:{}\";", index[&p], dot_string(&tensor.name));
        }
    }
    o.push_str("}\n");
    o
}
