//! The binding as `deploygen inspect` shows it: a table for a person, a
//! `binding` object for tools.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::ir::Role;
use crate::text::{Align, Style};

use super::{short, Binding, DetectedFrom, Layout, ParamBinding, Source};
use crate::error::Error;

#[derive(Serialize)]
pub struct SlotReport {
    pub index: usize,
    pub role: &'static str,
    pub input: String,
    /// Mini-batch-0 key; `null` for gradient buffers and missing inputs.
    pub key: Option<String>,
    /// Every key, one per sample, for per-mini-batch slots.
    pub keys: Vec<String>,
    pub shape: Vec<usize>,
    pub dtype: String,
    pub source: Source,
}

#[derive(Serialize)]
pub struct BindingReport {
    pub inputs: String,
    pub outputs: Option<String>,
    pub layout: Layout,
    pub outputs_layout: Layout,
    pub num_data_inputs: usize,
    pub detected_from: DetectedFrom,
    pub slots: Vec<SlotReport>,
    /// Forward passes in the run (`meta_n_batches`).
    pub mini_batches: usize,
    /// Forward passes per optimizer step (`meta_n_accum`).
    pub accum_steps: usize,
    /// Distinct samples, cycled (`meta_data_size`).
    pub data_size: usize,
    /// Optimizer steps.
    pub steps: usize,
    pub learning_rate: Option<f64>,
    pub learning_rate_source: Option<String>,
    pub params: Vec<ParamBinding>,
    pub loss_references: usize,
    pub references: usize,
    pub missing: Vec<super::Missing>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

pub fn report(b: &Binding) -> BindingReport {
    BindingReport {
        inputs: b.inputs_path.display().to_string(),
        outputs: b.outputs_path.as_ref().map(|p| p.display().to_string()),
        layout: b.layout,
        outputs_layout: b.outputs_layout,
        num_data_inputs: b.num_data_inputs,
        detected_from: b.detected_from,
        slots: b
            .slots
            .iter()
            .map(|s| SlotReport {
                index: s.index,
                role: s.role.name(),
                input: s.input.clone(),
                key: s.key().map(str::to_string),
                keys: if s.source == Source::PerMiniBatch { s.keys.clone() } else { vec![] },
                shape: s.shape.clone(),
                dtype: s.dtype.name(),
                source: s.source,
            })
            .collect(),
        mini_batches: b.schedule.n_batches,
        accum_steps: b.schedule.n_accum,
        data_size: b.schedule.data_size,
        steps: b.schedule.n_steps,
        // f32 → the shortest decimal that reads back as the same f32.
        learning_rate: b.learning_rate.and_then(|lr| lr.to_string().parse().ok()),
        learning_rate_source: b.learning_rate_source.clone(),
        params: b.params.clone(),
        loss_references: b.loss.as_ref().map_or(0, |l| l.data.numel()),
        references: b.references.len(),
        missing: b.missing.clone(),
        warnings: b.warnings.clone(),
        notes: b.notes.clone(),
    }
}

pub fn json(b: &Binding) -> serde_json::Value {
    serde_json::to_value(report(b)).expect("the binding report serializes")
}

fn shape(s: &[usize]) -> String {
    format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

/// The text section: slot table, schedule, references, warnings.
pub fn text(b: &Binding) -> String {
    let mut o = String::new();
    let outputs = match b.outputs_path.as_deref() {
        Some(p) => format!("{} ({} layout)", short(p), b.outputs_layout.name()),
        None => "no outputs.npz".into(),
    };
    let _ = writeln!(
        o,
        "\ntest data    {} ({} layout), {}",
        crate::escape::name(&short(&b.inputs_path)),
        b.layout.name(),
        crate::escape::name(&outputs)
    );
    let how = match b.detected_from {
        DetectedFrom::MiniBatchKeys => "detected: the inputs with mb<i>_ keys",
        DetectedFrom::GraphRoles if b.slots_with(Role::Labels).next().is_none() => {
            "one mini-batch: the graph's data inputs"
        }
        DetectedFrom::GraphRoles => "one mini-batch: the graph's data and label inputs",
        DetectedFrom::Flag => "one mini-batch: num_data_inputs given",
    };
    let _ = writeln!(o, "data inputs  {} ({how})", b.num_data_inputs);
    let rows: Vec<[String; 6]> = b
        .slots
        .iter()
        .map(|s| {
            let key = match (s.source, s.key()) {
                (Source::Zeros, _) => "(zeros)".to_string(),
                (Source::Initializer, _) => "(initializer)".to_string(),
                (Source::Missing, _) => "MISSING".to_string(),
                (Source::PerMiniBatch, Some(k)) if s.keys.len() > 1 => format!("{k} (+{})", s.keys.len() - 1),
                (_, Some(k)) => k.to_string(),
                (_, None) => "(harness)".to_string(),
            };
            [s.index.to_string(), s.role.name().to_string(), s.input.clone(), key, shape(&s.shape), s.dtype.name()]
        })
        .collect();
    let header = ["slot", "role", "graph input", "npz key", "shape", "dtype"].map(str::to_string);
    let mut all = vec![header.to_vec()];
    all.extend(rows.iter().map(|r| r.to_vec()));
    let style = Style { align: &[Align::Right], max_width: 60, ..Style::PLAIN };
    o.push_str(&crate::text::table(&all, &style));
    let s = &b.schedule;
    let mut tolerance = b.tolerance.map(|t| format!("; tolerance {t} (meta_tolerance)")).unwrap_or_default();
    if let Some(r) = b.rtol {
        tolerance.push_str(&format!("; rtol {r} (meta_rtol)"));
    }
    if b.params.is_empty() && b.loss.is_none() && s.n_batches == 1 {
        let _ = writeln!(o, "schedule     one inference pass");
        let _ = writeln!(o, "references   {} output(s){tolerance}", b.references.len());
        for n in &b.notes {
            let _ = writeln!(o, "note: {}", crate::escape::name(n));
        }
        for w in &b.warnings {
            let _ = writeln!(o, "warning: {}", crate::escape::name(w));
        }
        return o;
    }
    let lr = match (b.learning_rate, &b.learning_rate_source) {
        (Some(lr), Some(src)) => format!("; learning rate {lr} ({src})"),
        (None, Some(src)) => format!("; learning rate: {src}"),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "schedule     {} forward pass(es) over {} distinct mini-batch(es), {} per optimizer step -> {} step(s){lr}",
        s.n_batches, s.data_size, s.n_accum, s.n_steps
    );
    let updated = b.params.iter().filter(|p| p.reference.is_some()).count();
    let _ = writeln!(
        o,
        "references   {} loss(es), {updated} of {} updated weight(s), {} other{tolerance}",
        b.loss.as_ref().map_or(0, |l| l.data.numel()),
        b.params.len(),
        b.references.len() - updated
    );
    if !b.params.is_empty() {
        let buffers = b.params.iter().filter(|p| p.grad_buffer.is_some()).count();
        let _ = writeln!(
            o,
            "pairing      W = {} weights, NG = {buffers} gradient buffers, {} optimizer updates, paired by name",
            b.params.len(),
            b.params.len()
        );
    }
    for n in &b.notes {
        let _ = writeln!(o, "note: {}", crate::escape::name(n));
    }
    for w in &b.warnings {
        let _ = writeln!(o, "warning: {}", crate::escape::name(w));
    }
    o
}

/// JSON sections for `inspect --format json`: `binding` (or `null`), and
/// `binding_error` when binding or a check failed.
pub fn json_sections(binding: Option<&Binding>, problem: Option<&Error>) -> BTreeMap<String, Value> {
    let mut m = BTreeMap::new();
    m.insert("binding".to_string(), binding.map_or(Value::Null, json));
    if let Some(e) = problem {
        let (kind, findings) = match e {
            Error::Triage(f) => ("triage", serde_json::to_value(f).expect("findings serialize")),
            Error::Npz { .. } => ("npz", Value::Array(vec![])),
            Error::Binding { .. } => ("binding", Value::Array(vec![])),
            _ => ("other", Value::Array(vec![])),
        };
        m.insert(
            "binding_error".to_string(),
            serde_json::json!({ "kind": kind, "message": e.to_string(), "findings": findings }),
        );
    }
    m
}
