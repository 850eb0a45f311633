//! The plan for a person (text tables) and for tools (JSON).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::buffers::Kind;
use super::supply::Supply;
use super::{thousands, Level, Placement, Plan};

/// `plan` object of `deploygen inspect --format json`: the whole plan, with
/// `levels[L] = {capacity, arena_bytes, lower_bound_bytes, efficiency,
/// weights_bytes, …}` and `weights[] = {name, bytes, level, supply, reason,
/// …}`. Keys in sorted order, at every depth.
///
/// Written as it is serialized: the buffer and node lists of a long
/// training step would take gigabytes as one JSON value; here only one of
/// their entries is a value at a time.
pub struct Json<'a>(pub &'a Plan);

impl serde::Serialize for Json<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeMap};
        // Every field named: a field added to Plan is a compile error here.
        let Plan {
            platform,
            default_mem,
            steps,
            main_steps,
            levels,
            weights,
            skip_initweight_copy,
            buffers: _,
            nodes,
            decisions,
            recompute,
        } = self.0;
        let shell = Plan {
            platform: platform.clone(),
            default_mem: *default_mem,
            steps: *steps,
            main_steps: *main_steps,
            levels: levels.clone(),
            weights: weights.clone(),
            skip_initweight_copy: skip_initweight_copy.clone(),
            buffers: super::Buffers::default(),
            nodes: vec![],
            decisions: decisions.clone(),
            recompute: recompute.clone(),
        };
        let Value::Object(fields) = serde_json::to_value(&shell).map_err(S::Error::custom)? else {
            return Err(S::Error::custom("the plan is not a JSON object"));
        };
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (key, value) in &fields {
            match key.as_str() {
                "buffers" => map.serialize_entry(key, &Each(self.0.buffers.as_slice(), |b| buffer_value(self.0, b)))?,
                "nodes" => map.serialize_entry(key, &Each(nodes, serde_json::to_value))?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// A buffer's JSON value, with its level's reason ([`Plan::level_reason`]).
fn buffer_value(plan: &Plan, b: &super::Buffer) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(b)?;
    if b.level_reason.is_empty() {
        v["level_reason"] = Value::String(plan.level_reason(b).into_owned());
    }
    Ok(v)
}

/// A list serialized one entry at a time, each as the JSON value `value`
/// makes of it (keys sorted, as in the rest of the plan).
struct Each<'a, T, F>(&'a [T], F);

impl<'a, T, F: Fn(&'a T) -> serde_json::Result<Value>> serde::Serialize for Each<'a, T, F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

fn table(o: &mut String, head: &[&str], rows: &[Vec<String>]) {
    use crate::text::{Align, Style};
    let mut all = vec![head.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    all.extend(rows.iter().cloned());
    let align = [Align::Left, Align::Left, Align::Right, Align::Right, Align::Right, Align::Right, Align::Right];
    let align: Vec<Align> = (0..head.len()).map(|i| *align.get(i).unwrap_or(&Align::Right)).collect();
    o.push_str(&crate::text::table(&all, &Style { sep: " ", align: &align, ..Style::PLAIN }));
}

/// One line of the report holding names ([`crate::escape::name`]): a
/// line break in a name cannot forge another line.
fn line(s: &str) -> std::borrow::Cow<'_, str> {
    crate::escape::name(s)
}

/// Text for `deploygen inspect --platform P`.
pub fn text(plan: &Plan) -> String {
    let mut o = String::new();
    levels_text(&mut o, plan);
    if let Some(r) = &plan.recompute {
        recompute(&mut o, r);
    }
    weights_text(&mut o, plan);
    buffers_text(&mut o, plan);
    tiling_text(&mut o, plan);
    decisions_text(&mut o, plan);
    o
}

/// The header (platform, schedule) and each level's capacity and use, its
/// arena's split and its reservations.
fn levels_text(o: &mut String, plan: &Plan) {
    let p = &plan.platform;
    let _ = writeln!(
        o,
        "\nmemory plan  {}, default level {}  ({} cluster cores; a task sent without fork runs on core {})",
        p.name, plan.default_mem, p.cluster_cores, p.controller_core_id
    );
    let _ = writeln!(
        o,
        "  schedule: {} steps ({} main graph{})",
        plan.steps,
        plan.main_steps,
        if plan.steps > plan.main_steps {
            format!(", {} optimizer", plan.steps - plan.main_steps)
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = Level::ALL
        .iter()
        .map(|&l| {
            let lp = plan.level(l);
            vec![
                l.to_string(),
                String::new(),
                thousands(lp.capacity),
                thousands(lp.reserved_bytes),
                thousands(lp.static_bytes),
                thousands(lp.arena_bytes),
                thousands(lp.lower_bound_bytes),
                format!("{:.4}", lp.efficiency),
                thousands(lp.weights_bytes),
                thousands(lp.free_bytes),
            ]
        })
        .collect();
    let _ = writeln!(o);
    table(
        o,
        &["level", "", "capacity", "reserved", "static", "arena", "lower bound", "efficiency", "weights", "free"],
        &rows,
    );
    for l in Level::ALL {
        let lp = plan.level(l);
        if lp.arena_bytes == 0 {
            continue;
        }
        let _ = writeln!(
            o,
            "  {l} arena: persistent band {} B + transient region {} B (lower bound {} B, efficiency {:.4}; {}; greedy by size alone {} B)",
            thousands(lp.persistent_bytes),
            thousands(lp.transient_arena_bytes),
            thousands(lp.transient_lower_bound_bytes),
            lp.transient_efficiency,
            lp.strategy,
            thousands(lp.greedy_arena_bytes)
        );
    }
    for l in Level::ALL {
        let lp = plan.level(l);
        if !lp.reserved.is_empty() {
            let r: Vec<String> = lp.reserved.iter().map(|r| format!("{} {} B", r.name, thousands(r.bytes))).collect();
            let _ = writeln!(o, "  {l} reserved: {}", r.join("; "));
        }
    }
}

/// The weights: counts by supply, a row each, and one line per distinct
/// reason.
fn weights_text(o: &mut String, plan: &Plan) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for w in &plan.weights {
        *counts.entry(w.supply.name()).or_insert(0) += 1;
    }
    let c: Vec<String> = counts.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    let _ = writeln!(o, "\nweights ({}{}{})", plan.weights.len(), if c.is_empty() { "" } else { ": " }, c.join(", "));
    let rows: Vec<Vec<String>> = plan
        .weights
        .iter()
        .map(|w| {
            vec![
                w.name.clone(),
                w.kind.name().to_string(),
                thousands(w.bytes),
                w.level.to_string(),
                w.supply.name().to_string(),
                w.hex_index.map(|i| format!("hex/l3.bin #{i}")).unwrap_or_default(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(o, &["name", "kind", "bytes", "level", "supply", "file"], &rows);
        // One line per distinct reason.
        let mut reasons: Vec<(String, usize)> = vec![];
        for w in &plan.weights {
            let r = format!(
                "{}: {}",
                w.supply.name(),
                w.reason.replace(&super::supply::l3_file(w.hex_index.unwrap_or(0)), &super::supply::l3_file_any())
            );
            match reasons.iter_mut().find(|(x, _)| *x == r) {
                Some((_, n)) => *n += 1,
                None => reasons.push((r, 1)),
            }
        }
        let _ = writeln!(o, "  why:");
        for (r, n) in reasons {
            let _ = writeln!(o, "    ({n}) {}", line(&r));
        }
    }
    let _ = writeln!(
        o,
        "  TRAINING_SKIP_INITWEIGHT_COPY: {} ({})",
        if plan.skip_initweight_copy.skip { "defined" } else { "not defined" },
        line(&plan.skip_initweight_copy.reason)
    );
}

/// Where the rest lives: buffers by level and kind, how many tensors share a
/// buffer, where nodes compute, and the largest arena buffers.
fn buffers_text(o: &mut String, plan: &Plan) {
    let _ = writeln!(o, "\nbuffers");
    let mut rows = vec![];
    for l in Level::ALL {
        let mut by_kind: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
        for b in plan.buffers.iter().filter(|b| b.level == l) {
            let e = by_kind.entry(b.kind.name()).or_insert((0, 0));
            e.0 += 1;
            e.1 += b.size;
        }
        for (k, (n, bytes)) in by_kind {
            rows.push(vec![l.to_string(), k.to_string(), n.to_string(), thousands(bytes)]);
        }
    }
    table(o, &["level", "kind", "count", "bytes (sum)"], &rows);
    let aliased: usize =
        plan.buffers.iter().map(|b| b.aliases.iter().filter(|a| !a.why.starts_with("same name")).count()).sum();
    let execs = |e: Option<Level>| plan.nodes.iter().filter(|n| n.exec == e).count();
    let _ = writeln!(
        o,
        "  {} another's buffer (in-place updates, shape-only views); nodes computing in L1: {}, in L2: {}, views without code: {}",
        if aliased == 1 { "1 tensor shares".to_string() } else { format!("{aliased} tensors share") },
        execs(Some(Level::L1)),
        execs(Some(Level::L2)),
        execs(None)
    );
    for l in [Level::L2, Level::L3] {
        let mut largest: Vec<_> = plan
            .buffers
            .iter()
            .filter(|b| b.level == l && !b.kind.is_per_node() && b.kind != Kind::Static)
            .filter_map(|b| match b.placement {
                Placement::Arena { offset } => Some((b, offset)),
                _ => None,
            })
            .collect();
        if largest.is_empty() {
            continue;
        }
        largest.sort_by(|a, b| b.0.size.cmp(&a.0.size).then(a.0.id.cmp(&b.0.id)));
        let _ = writeln!(o, "  largest in the {l} arena:");
        let rows: Vec<Vec<String>> = largest
            .iter()
            .take(8)
            .map(|(b, off)| {
                vec![
                    b.name.clone(),
                    b.kind.name().to_string(),
                    thousands(b.size),
                    format!("@{}", thousands(*off)),
                    format!("steps {}..{}", b.start, b.end),
                ]
            })
            .collect();
        table(o, &["  name", "kind", "bytes", "offset", "live"], &rows);
    }
}

/// The decisions the plan made, and how many weights are staged from L3.
fn decisions_text(o: &mut String, plan: &Plan) {
    if !plan.decisions.is_empty() {
        let _ = writeln!(o, "\ndecisions");
        for d in &plan.decisions {
            let _ = writeln!(o, "  - {}", line(d));
        }
    }
    let staged = plan.weights.iter().filter(|w| w.supply == Supply::L3Staged).count();
    if staged > 0 {
        let _ = writeln!(o, "  - {staged} weight(s) l3-staged");
    }
}

/// The tiling section: each tiled node's tiles, buffering and traffic,
/// and why the others run untiled.
fn tiling_text(o: &mut String, plan: &Plan) {
    let tiled: Vec<_> = plan.nodes.iter().filter_map(|n| Some((n, n.tiling.as_ref()?))).collect();
    let untiled: Vec<_> = plan.nodes.iter().filter_map(|n| Some((n, n.untiled.as_ref()?))).collect();
    if tiled.is_empty() && untiled.is_empty() {
        return;
    }
    let _ = writeln!(o, "\ntiling ({} node(s) tiled through L1, {} untiled)", tiled.len(), untiled.len());
    let rows: Vec<Vec<String>> = tiled
        .iter()
        .map(|(n, t)| {
            vec![
                n.step.to_string(),
                n.name.clone(),
                n.op.clone(),
                t.count.to_string(),
                format!("{:?}", t.tile),
                t.buffering().to_string(),
                thousands(t.moved.l2_to_l1 + t.moved.l1_to_l2),
                thousands(t.moved.l3_to_l2 + t.moved.l2_to_l3),
                t.dma_commands.to_string(),
                thousands(t.l1_bytes),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(o, &["step", "node", "op", "tiles", "tile", "buffers", "L2<->L1 B", "L3<->L2 B", "DMA", "L1 B"], &rows);
        let _ = writeln!(o, "  why:");
        for (n, t) in &tiled {
            let _ = writeln!(o, "    step {} '{}': {}", n.step, line(&n.name), line(&t.why));
        }
    }
    for (n, why) in untiled {
        let why = why.to_string();
        let _ = writeln!(o, "  untiled: step {} '{}' ({}): {}", n.step, line(&n.name), line(&n.op), line(&why));
    }
}

/// What the planner recomputes for the backward pass.
fn recompute(o: &mut String, r: &super::recompute::Report) {
    let _ = writeln!(
        o,
        "\nrecompute ({}, budget {} %): {} value(s); peak at the default level {} B -> {} B ({} B saved); estimated cost +{} ({:.1} % of {})",
        match r.mode {
            super::recompute::Mode::Auto => "auto",
            super::recompute::Mode::Off => "off",
        },
        r.budget_pct,
        r.chosen.len(),
        thousands(r.peak_without),
        thousands(r.peak_with),
        thousands(r.bytes_saved()),
        thousands(r.cost_added),
        r.cost_pct(),
        thousands(r.cost_without)
    );
    if !r.accumulated_early.is_empty() {
        let _ = writeln!(
            o,
            "  {} gradient accumulation(s) run as soon as their gradient is made (no cost): {}",
            r.accumulated_early.len(),
            r.accumulated_early.iter().map(|n| format!("'{}'", line(n))).collect::<Vec<_>>().join(", ")
        );
    }
    for c in &r.chosen {
        let nodes: Vec<String> = c
            .nodes
            .iter()
            .map(|n| format!("'{}' ({}, copy of '{}')", line(&n.node), line(&n.op), line(&n.copy_of)))
            .collect();
        let _ = writeln!(
            o,
            "  {}: {} B saved, cost +{}: {}",
            line(&c.tensor),
            thousands(c.bytes_saved),
            thousands(c.cost_added),
            nodes.join(", ")
        );
    }
    for why in &r.rejected {
        let _ = writeln!(o, "  kept {}", line(why));
    }
}
