//! Activation recompute: which forward values the backward pass reads are
//! kept until that read, and which are computed again just before it.
//!
//! A training step keeps every forward value a backward node reads until
//! that read. A value whose producer the registry calls pure
//! (`OpDef::recompute`: Relu and other unary maps, Add, Transpose, views,
//! Pad, Conv, MaxPool with its indices, BatchNorm in inference form,
//! training BatchNorm from the batch statistics it saved) can instead be
//! made again from inputs that are kept anyway: a copy of its producer
//! goes just before its first backward reader, the backward readers read
//! the copy, and the original dies at its last forward read. A copy makes
//! every output of its node again (MaxPool's Y with the indices
//! MaxPoolGrad reads; the others are written and not read). When an input
//! of the copy would itself only be kept for the copy, its producer is
//! copied too (a chain, at most [`DEPTH`] nodes deep).
//!
//! A copy is made once: a value a copy needs, or a candidate itself, is
//! first taken from a copy an earlier choice made, still read at that
//! point or made later and moved up (with the copies it reads) to just
//! before its new reader; the node then costs nothing again. cct's
//! tokenizer so runs Conv_1 once for the Relu gradient and for the
//! MaxPool copy that remakes the indices.
//!
//! The choice is greedy, largest value first: a candidate stays when the
//! most bytes live at any step of the default level (arena lower bound,
//! every buffer at that level) goes down and the estimated cost added by
//! every copy so far stays within the budget, a percentage of the step's
//! estimated cost. A node's cost is the tiler's (`plan::tile`: bytes
//! between L2 and L1, DMA commands, kernel calls), for a node without a
//! tile choice the bytes of its operands plus one kernel call, plus its
//! multiply-adds (`plan::tile::compute_cost`), so a Conv is run again only
//! where the bytes it frees are worth its work. A choice that lowered one
//! of several equal peaks (or was made before such a choice) is dropped
//! again when the peak stays where it is without it (it would add cost
//! for nothing); at most [`DROP_TRIES`] are tried, so the pass stays
//! quadratic in the step's length. A trial edits the model in place and
//! is undone when it is not kept, and its peak comes from a discovery of
//! sizes and lifetimes only (`buffers::Detail::Sizes`). Training
//! BatchNorm is never run again on fresh batch statistics: its copy
//! normalises with the saved ones, so the values equal the original's.
//!
//! The copies are ordinary nodes of the main graph (named `<node>.recomputed`,
//! with `marks.recomputed_from` naming the node they copy): buffers, lifetimes,
//! the arena verifier and the harness treat them as any other node.

use std::collections::{HashMap, HashSet};

use petgraph::stable_graph::NodeIndex;
use serde::Serialize;

use super::buffers::{self, Kind};
use super::{tile, tile_choices, PlanOptions};
use crate::error::{Error, Result};
use crate::ir::{Graph, Model, Node, Origin, Role, TensorId};
use crate::ops::{self, Recompute, Train};

/// Most nodes copied to remake one value.
pub const DEPTH: usize = 4;

/// Most choices tried again without (each try runs the greedy choice
/// again over the rest).
pub const DROP_TRIES: usize = 16;

/// Most plan steps the trials of one choice may walk, summed over the
/// trials: a trial walks the schedule to make its copies (a copy of the
/// schedule to undo them, the search for the first backward reader),
/// and once more to measure the plan when the copies are within the
/// budget. The choice is quadratic in the step's length; past this bound
/// the candidates left are not tried, and the report says so.
pub const TRIAL_STEPS: u64 = 10_000_000;

/// Whether the planner may recompute (`--recompute`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Recompute what lowers the peak within the budget.
    #[default]
    Auto,
    /// Keep every value the backward pass reads.
    Off,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        match s {
            "auto" => Ok(Mode::Auto),
            "off" => Ok(Mode::Off),
            _ => Err(Error::Usage(format!("--recompute {s}: the recompute mode is 'auto' or 'off'"))),
        }
    }
}

/// One added node.
#[derive(Clone, Debug, Serialize)]
pub struct Copy {
    /// The added node's name.
    pub node: String,
    /// The node it copies.
    pub copy_of: String,
    pub op: String,
    /// The value it makes again.
    pub tensor: String,
}

/// One value recomputed, with the nodes that remake it.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    pub tensor: String,
    pub nodes: Vec<Copy>,
    /// Peak bytes saved by this choice (after the ones before it).
    pub bytes_saved: u64,
    /// Estimated cost added (the tiler's units).
    pub cost_added: u64,
}

/// What the pass did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub mode: Mode,
    pub budget_pct: u32,
    /// Most bytes live at one step of the default level, without and with
    /// the recomputed values.
    pub peak_without: u64,
    pub peak_with: u64,
    /// The step's estimated cost without recompute, and the cost added.
    pub cost_without: u64,
    pub cost_added: u64,
    pub chosen: Vec<Choice>,
    /// Gradient accumulations moved up to just after the gradient they
    /// add (node names), so the gradient dies there.
    pub accumulated_early: Vec<String>,
    /// Candidates tried and left out, with why.
    pub rejected: Vec<String>,
}

impl Report {
    pub fn bytes_saved(&self) -> u64 {
        self.peak_without.saturating_sub(self.peak_with)
    }

    /// Estimated cost added, in percent of the step's.
    pub fn cost_pct(&self) -> f64 {
        if self.cost_without == 0 {
            0.0
        } else {
            100.0 * self.cost_added as f64 / self.cost_without as f64
        }
    }
}

/// Choose the values to recompute and add their copies to the model's main
/// graph. `None` for an inference model or with `--recompute off`.
pub fn apply(model: &mut Model, opts: &PlanOptions) -> Result<Option<Report>> {
    if opts.recompute == Mode::Off || !model.roles.is_training() {
        return Ok(None);
    }
    let backward = backward_nodes(model);
    let ((peak_without, _), costs) = measure(model, opts, true)?;
    let cost_without: u64 = costs.values().sum();
    let accumulated_early = accumulate_early(&mut model.graph);
    let ((peak_early, area), _) = measure(model, opts, false)?;
    let base = Report {
        mode: opts.recompute,
        budget_pct: opts.recompute_budget,
        peak_without,
        peak_with: peak_early,
        cost_without,
        accumulated_early,
        ..Report::default()
    };
    let found = candidates(model, &backward);
    let producer_cost = found.iter().map(|&(t, n)| (t, costs.get(&n).copied().unwrap_or(0))).collect();
    let mut cands: Vec<TensorId> = found.into_iter().map(|(t, _)| t).collect();
    let measured = std::cell::Cell::new(0);
    let search = Search { model, opts, backward: &backward, costs: &costs, producer_cost, area, measured };
    let g = &model.graph;
    cands.sort_by_key(|&t| (std::cmp::Reverse(g.tensor(t).ty.bytes().unwrap_or(0)), t));
    let (mut best, mut report) = search.greedy(&cands, base.clone())?;
    // A choice made while the peak was a plateau (it lowered one of
    // several equal steps: no bytes saved then) may be worth nothing once
    // the rest are chosen, and so may one made before such a choice: drop
    // each whose absence leaves the peak where it is, dearest first. When
    // every choice lowered the peak, none is tried; and each try runs the
    // greedy choice again, so at most DROP_TRIES are (trying every choice
    // made the pass cubic in the step's length).
    let last_plateau = report.chosen.iter().rposition(|c| c.bytes_saved == 0);
    let mut chosen: Vec<(TensorId, u64)> = report.chosen[..last_plateau.map_or(0, |i| i + 1)]
        .iter()
        .filter_map(|c| Some((model.graph.id(&c.tensor)?, c.cost_added)))
        .collect();
    chosen.sort_by_key(|&(t, cost)| (std::cmp::Reverse(cost), t));
    chosen.truncate(DROP_TRIES);
    for (t, _) in chosen {
        let keep: Vec<TensorId> =
            report.chosen.iter().filter_map(|c| model.graph.id(&c.tensor)).filter(|&c| c != t).collect();
        let (m, r) = search.greedy(&keep, base.clone())?;
        if r.peak_with <= report.peak_with && r.cost_added < report.cost_added {
            let mut rejected = report.rejected.clone();
            rejected.push(format!("'{}': the peak stays where it is without it", model.graph.name_of(t)));
            report = Report { rejected, ..r };
            best = m;
        }
    }
    *model = best;
    Ok(Some(report))
}

/// What the greedy choice works from: the model before any copy, and the
/// measures of it.
struct Search<'a> {
    model: &'a Model,
    opts: &'a PlanOptions,
    backward: &'a HashSet<NodeIndex>,
    costs: &'a HashMap<NodeIndex, u64>,
    /// Per candidate, the cost of its producer: what remaking it costs at
    /// least when no copy made earlier serves.
    producer_cost: HashMap<TensorId, u64>,
    area: u64,
    /// Plan steps walked so far by every trial ([`TRIAL_STEPS`]).
    measured: std::cell::Cell<u64>,
}

impl Search<'_> {
    /// Try `cands` in order, keeping each that lowers the peak (or the
    /// bytes live over the step at the same peak) within the budget: the
    /// model with the copies kept, and the report. A trial edits the model
    /// and is undone when it is not kept (a copy of the model per trial
    /// made the pass slow on long steps).
    fn greedy(&self, cands: &[TensorId], mut report: Report) -> Result<(Model, Report)> {
        let budget = report.cost_without * u64::from(self.opts.recompute_budget) / 100;
        let mut model = self.model.clone();
        let mut area = self.area;
        let mut copies: HashMap<TensorId, Vec<TensorId>> = HashMap::new();
        for (k, &t) in cands.iter().enumerate() {
            let steps = steps_of(&model);
            // A trial walks the schedule twice at most (its copies, its measure).
            if self.measured.get() + 2 * steps > TRIAL_STEPS {
                report.rejected.push(format!(
                    "{} candidate(s) not tried: the trials have walked {} plan steps, and one more (up to {} steps) \
                     would pass the bound of {TRIAL_STEPS}",
                    cands.len() - k,
                    self.measured.get(),
                    2 * steps
                ));
                break;
            }
            let name = model.graph.name_of(t).to_string();
            // Without a copy to reuse, the value's producer runs again at
            // least: past the budget, nothing need be tried.
            let least = self.producer_cost.get(&t).copied().unwrap_or(0);
            if !copies.contains_key(&t) && report.cost_added + least > budget {
                report.rejected.push(format!("'{name}': its cost (at least {least}) would pass the budget"));
                continue;
            }
            self.measured.set(self.measured.get() + steps);
            let mut trial = Trial::start(&model.graph);
            let mut trial_copies = copies.clone();
            let mut added = vec![];
            trial.switched = remake(&mut model, self.backward, &mut trial_copies, t, &mut added);
            if trial.switched.is_none() {
                trial.undo(&mut model.graph, &added);
                report.rejected.push(format!("'{name}': no copy can be made before its backward reads"));
                continue;
            }
            let cost: u64 = added.iter().filter(|m| m.new).map(|m| self.costs.get(&m.orig).copied().unwrap_or(0)).sum();
            if report.cost_added + cost > budget {
                trial.undo(&mut model.graph, &added);
                report.rejected.push(format!("'{name}': its cost {cost} would pass the budget"));
                continue;
            }
            self.measured.set(self.measured.get() + steps);
            let Ok(((peak, trial_area), _)) = measure(&model, self.opts, false) else {
                trial.undo(&mut model.graph, &added);
                report.rejected.push(format!("'{name}': the copies leave a buffer without a size"));
                continue;
            };
            // A lower peak, or the same peak with fewer bytes live over the
            // step (a plateau of equal peaks goes down one step at a time).
            if (peak, trial_area) >= (report.peak_with, area) {
                trial.undo(&mut model.graph, &added);
                report.rejected.push(format!("'{name}': the peak would not go down ({peak} B)"));
                continue;
            }
            area = trial_area;
            let nodes = added.iter().map(|m| copy_entry(&model.graph, m)).collect();
            report.chosen.push(Choice { tensor: name, nodes, bytes_saved: report.peak_with - peak, cost_added: cost });
            report.peak_with = peak;
            report.cost_added += cost;
            copies = trial_copies;
        }
        Ok((model, report))
    }
}

/// Steps of the model's plan (every graph's schedule), as a trial's
/// measure walks them.
fn steps_of(m: &Model) -> u64 {
    let len = |g: Option<&Graph>| g.map_or(0, |g| g.schedule.len() as u64);
    len(Some(&m.graph)) + len(m.optimizer.as_ref()) + len(m.predict.as_ref())
}

/// What a trial changes in the graph, to be put back when it is not kept:
/// the schedule, the tensors added (at the end of the table), the nodes
/// added and the inputs of the readers switched to a copy.
struct Trial {
    schedule: Vec<NodeIndex>,
    tensors: usize,
    /// The value remade, its copy and the readers switched to the copy.
    switched: Option<Switch>,
}

/// Readers switched from a value to its copy.
struct Switch {
    from: TensorId,
    to: TensorId,
    readers: Vec<NodeIndex>,
}

impl Trial {
    fn start(g: &Graph) -> Trial {
        Trial { schedule: g.schedule.clone(), tensors: g.tensors.len(), switched: None }
    }

    /// Put the graph back as it was before the trial that made `added`.
    /// The nodes go in reverse order, so that the next ones added get the
    /// same indices they would have had without the trial.
    fn undo(self, g: &mut Graph, added: &[Made]) {
        if let Some(sw) = self.switched {
            for n in sw.readers {
                for s in g.dag[n].inputs.iter_mut().filter(|s| **s == Some(sw.to)) {
                    *s = Some(sw.from);
                }
            }
        }
        for m in added.iter().rev().filter(|m| m.new) {
            g.dag.remove_node(m.node);
        }
        g.tensors.truncate(self.tensors);
        g.schedule = self.schedule;
        g.rebuild_edges();
    }
}

/// A node a choice runs: added by it (`new`), or added by an earlier
/// choice and read again.
struct Made {
    node: NodeIndex,
    /// The node it copies.
    orig: NodeIndex,
    /// The value it makes that is read.
    tensor: TensorId,
    new: bool,
}

fn copy_entry(g: &Graph, m: &Made) -> Copy {
    let node = g.node(m.node);
    Copy {
        node: node.name.clone(),
        copy_of: g.node(m.orig).name.clone(),
        op: node.op.clone(),
        tensor: g.name_of(m.tensor).to_string(),
    }
}

/// Move every gradient accumulation (`Train::Accumulator`) up to just
/// after the last producer of its inputs. A training step's file order
/// puts them all at the end, which keeps every weight gradient alive from
/// its node to there; run at once, each gradient dies where it is added.
/// The buffer it updates in place is read by nothing else in the graph
/// (the optimizer runs after the step), so the values do not change; an
/// accumulation whose buffer another node reads stays where it is. The
/// names of the moved nodes.
fn accumulate_early(g: &mut Graph) -> Vec<String> {
    let readers = g.readers();
    let mut moved = vec![];
    // Moving a node within the schedule vector, one accumulator at a time,
    // was quadratic in a long step; instead each node gets a sort key: its
    // place in the schedule, or, once moved, its new anchor's key and then
    // its move's number negated (a node moved later to the same anchor goes
    // in front of one moved earlier, as an insertion right after the
    // anchor puts it). The keys sorted give the new schedule.
    let mut key: HashMap<NodeIndex, Vec<i64>> = HashMap::new();
    let start = vec![-1i64];
    // The node right before the one looked at, in the new order (None
    // for the schedule's start).
    let mut last: Option<NodeIndex> = None;
    // Each value's producer, as `Graph::producer` finds it, looked up once.
    let mut made_by: HashMap<TensorId, NodeIndex> = HashMap::new();
    for n in g.dag.node_indices() {
        for &t in g.dag[n].outputs.iter().flatten() {
            made_by.entry(t).or_insert(n);
        }
    }
    for (i, &n) in g.schedule.iter().enumerate() {
        key.insert(n, vec![i as i64]);
        let node = g.node(n);
        let def = ops::of(node);
        let early = matches!(def.update, ops::Update::Always { input, .. }
            if def.train == Train::Accumulator
                && !node.input(input).is_some_and(|b| readers.get(&b).is_some_and(|rs| rs.iter().any(|&r| r != n))));
        let producers: Option<Vec<NodeIndex>> = node
            .inputs
            .iter()
            .flatten()
            .filter_map(|t| made_by.get(t))
            .map(|p| key.contains_key(p).then_some(*p))
            .collect();
        let anchor = producers.map(|ps| ps.into_iter().max_by(|a, b| key[a].cmp(&key[b])));
        match anchor {
            // Already right after its last producer (or at the start).
            Some(a) if early && a != last => {
                let mut k = a.map_or_else(|| start.clone(), |a| key[&a].clone());
                k.push(-(moved.len() as i64) - 1);
                key.insert(n, k);
                moved.push(node.name.clone());
            }
            _ => last = Some(n),
        }
    }
    g.schedule.sort_by(|a, b| key[a].cmp(&key[b]));
    moved
}

/// The nodes of the loss, the backward pass, gradient accumulation and
/// the optimizer: those the registry calls so and every node reading what
/// they or the training inputs (labels, gradient buffers) hold.
fn backward_nodes(model: &Model) -> HashSet<NodeIndex> {
    let g = &model.graph;
    let mut training: HashSet<TensorId> = HashSet::new();
    for &t in &g.inputs {
        let forward = matches!(model.roles.role(g.name_of(t)), Some(Role::Data | Role::Param | Role::Frozen));
        if g.tensor(t).sequence || !forward {
            training.insert(t);
        }
    }
    let mut out = HashSet::new();
    for (n, node) in g.nodes() {
        let def = ops::of(node);
        if def.gradient || def.train != Train::None || node.inputs.iter().flatten().any(|t| training.contains(t)) {
            out.insert(n);
            training.extend(node.outputs.iter().flatten());
        }
    }
    out
}

/// Forward values with a recomputable producer that a backward node reads,
/// each with its producer.
fn candidates(model: &Model, backward: &HashSet<NodeIndex>) -> Vec<(TensorId, NodeIndex)> {
    let g = &model.graph;
    let outputs: HashSet<TensorId> = g.outputs.iter().copied().collect();
    let readers = g.readers();
    let mut v = vec![];
    for (n, node) in g.nodes() {
        let Some(how) = (!backward.contains(&n)).then(|| rule(g, node)).flatten() else { continue };
        // A copy from saved statistics makes output 0 only.
        let made = match how {
            Recompute::Copy => node.outputs.len(),
            Recompute::SavedStats { .. } => 1,
        };
        for &t in node.outputs[..made].iter().flatten() {
            if outputs.contains(&t) || g.tensor(t).ty.bytes().is_none() {
                continue;
            }
            if readers.get(&t).is_some_and(|rs| rs.iter().any(|r| backward.contains(r))) {
                v.push((t, n));
            }
        }
    }
    v
}

fn rule(g: &Graph, node: &Node) -> Option<Recompute> {
    ops::of(node).recompute.and_then(|f| f(g, node))
}

/// Remake `t` before its first backward read: copies inserted there, the
/// readers from there on switched to the copy. The nodes that remake it
/// go in `added` (those added before a failure too); the readers
/// switched, or `None` when `t` cannot be remade (and none is).
fn remake(
    m: &mut Model,
    backward: &HashSet<NodeIndex>,
    copies: &mut HashMap<TensorId, Vec<TensorId>>,
    t: TensorId,
    added: &mut Vec<Made>,
) -> Option<Switch> {
    let g = &m.graph;
    let pos = g.schedule.iter().position(|n| backward.contains(n) && g.node(*n).inputs.contains(&Some(t)))?;
    let switch: Vec<NodeIndex> =
        g.schedule[pos..].iter().copied().filter(|&n| g.node(n).inputs.contains(&Some(t))).collect();
    let mut at = pos;
    // A copy another choice made serves these readers too (its node is
    // listed again, at no cost).
    let copy = match reuse(&mut m.graph, copies, t, &mut at) {
        Some(c) => {
            let n = m.graph.producer(c)?;
            let o = m.graph.node(n).marks.recomputed_from.clone()?;
            let orig = m.graph.nodes().find(|(_, nd)| nd.name == o)?.0;
            added.push(Made { node: n, orig, tensor: c, new: false });
            c
        }
        None => copy_of(m, copies, t, &mut at, DEPTH, added)?,
    };
    // Every reader switched runs after the copy (a copy moved up may read
    // `t` itself).
    let order: HashMap<NodeIndex, usize> = m.graph.schedule.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let made = order.get(&m.graph.producer(copy)?)?;
    if switch.iter().any(|r| order.get(r).is_none_or(|i| i <= made)) {
        return None;
    }
    for &n in &switch {
        for s in m.graph.dag[n].inputs.iter_mut() {
            if *s == Some(t) {
                *s = Some(copy);
            }
        }
    }
    m.graph.rebuild_edges();
    Some(Switch { from: t, to: copy, readers: switch })
}

/// Whether `u` is live at schedule position `at` without any copy: not a
/// node's value, a graph output, or read there or later.
fn kept(g: &Graph, u: TensorId, at: usize) -> bool {
    g.tensor(u).origin != Origin::Value
        || g.outputs.contains(&u)
        || g.schedule[at..].iter().any(|&n| g.node(n).inputs.contains(&Some(u)))
}

/// A copy of `u`'s producer at `*at` (after copies of the inputs it needs),
/// its output's tensor.
fn copy_of(
    m: &mut Model,
    copies: &mut HashMap<TensorId, Vec<TensorId>>,
    u: TensorId,
    at: &mut usize,
    depth: usize,
    added: &mut Vec<Made>,
) -> Option<TensorId> {
    if depth == 0 {
        return None;
    }
    let g = &m.graph;
    let p = g.producer(u)?;
    let node = g.node(p).clone();
    let how = rule(g, &node)?;
    let k = node.outputs.iter().position(|&o| o == Some(u))?;
    if matches!(how, Recompute::SavedStats { .. }) && k != 0 {
        return None;
    }
    let mut inputs = match how {
        Recompute::Copy => node.inputs.clone(),
        Recompute::SavedStats { mean, inv_std } => {
            vec![node.input(0), node.input(1), node.input(2), node.output(mean), node.output(inv_std)]
        }
    };
    // An in-place update of an input between the two runs would feed the
    // copy another value.
    let writes_in_place = |g: &Graph, t: TensorId| {
        g.schedule.iter().any(|&n| {
            let nd = g.node(n);
            nd.inputs.iter().enumerate().any(|(slot, s)| {
                *s == Some(t)
                    && (matches!(ops::of(nd).update, ops::Update::Always { input, .. } if input == slot)
                        || ops::of(nd).updates_state(slot)
                        || ops::of(nd).update == ops::Update::Sequence)
            })
        })
    };
    for s in inputs.iter_mut() {
        let Some(x) = *s else { continue };
        if writes_in_place(&m.graph, x) {
            return None;
        }
        if kept(&m.graph, x, *at) {
            continue;
        }
        if let Some(c) = reuse(&mut m.graph, copies, x, at) {
            *s = Some(c);
            continue;
        }
        if let Some(c) = copy_of(m, copies, x, at, depth - 1, added) {
            *s = Some(c);
        }
    }
    let g = &mut m.graph;
    // Every output again (the ones not asked for are written and not
    // read), or output 0 alone from saved statistics.
    let made: Vec<Option<TensorId>> = match how {
        Recompute::Copy => node.outputs.clone(),
        Recompute::SavedStats { .. } => vec![Some(u)],
    };
    let mut outs = vec![];
    for o in made {
        let Some(o) = o else {
            outs.push(None);
            continue;
        };
        let name = unique(g, &format!("{}.recomputed", g.name_of(o)), |g, n| g.tensors.contains_key(n));
        let mut tensor = g.tensor(o).clone();
        tensor.name = name.clone();
        tensor.origin = Origin::Value;
        tensor.data = None;
        let c = g.tensors.insert_full(name, tensor).0;
        copies.entry(o).or_default().push(c);
        outs.push(Some(c));
    }
    let out = outs[k].expect("the asked output");
    let mut copy = node.clone();
    copy.name = unique(g, &format!("{}.recomputed", node.name), |g, n| g.dag.node_weights().any(|w| w.name == n));
    copy.inputs = inputs;
    copy.outputs = outs;
    copy.marks.recomputed_from = Some(node.name.clone());
    if let Recompute::SavedStats { .. } = how {
        ops::saved_stats_form(&mut copy);
    }
    let ni = g.dag.add_node(copy);
    g.schedule.insert(*at, ni);
    *at += 1;
    added.push(Made { node: ni, orig: p, tensor: out, new: true });
    Some(out)
}

/// A copy of `x` already made that can be read at `*at`: one made before
/// and still read there or later, or one made later whose node (with the
/// copies it reads that are made later too) moves up to `*at`, past
/// `*at`.
fn reuse(g: &mut Graph, copies: &HashMap<TensorId, Vec<TensorId>>, x: TensorId, at: &mut usize) -> Option<TensorId> {
    let cs = copies.get(&x)?;
    let pos = |g: &Graph, n: NodeIndex| g.schedule.iter().position(|&m| m == n);
    let before = cs.iter().copied().find(|&c| {
        let made = g.producer(c).and_then(|pn| pos(g, pn));
        made.is_some_and(|i| i < *at) && kept(g, c, *at)
    });
    if before.is_some() {
        return before;
    }
    for &c in cs {
        if let Some(moved) = hoist(g, c, *at) {
            *at += moved;
            return Some(c);
        }
    }
    None
}

/// Move the node making the copy `c`, and the copies it reads that run at
/// or after `at`, up to schedule position `at` in their order: the same
/// nodes run earlier, their other inputs made before `at` (none is written
/// in place, or they would not be copies). How many moved; `None` (nothing
/// moved) when `c` is made before `at` or reads a value made at or after
/// `at` that is no copy.
fn hoist(g: &mut Graph, c: TensorId, at: usize) -> Option<usize> {
    let pos = |g: &Graph, n: NodeIndex| g.schedule.iter().position(|&m| m == n);
    let root = g.producer(c)?;
    if pos(g, root)? < at {
        return None;
    }
    let mut moving = vec![];
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if moving.contains(&n) {
            continue;
        }
        let node = g.node(n);
        node.marks.recomputed_from.as_ref()?;
        moving.push(n);
        for &i in node.inputs.iter().flatten() {
            if let Some(q) = g.producer(i) {
                if pos(g, q)? >= at {
                    stack.push(q);
                }
            }
        }
    }
    moving.sort_by_key(|&n| pos(g, n));
    g.schedule.retain(|n| !moving.contains(n));
    let moved = moving.len();
    for (k, n) in moving.into_iter().enumerate() {
        g.schedule.insert(at + k, n);
    }
    Some(moved)
}

fn unique(g: &Graph, base: &str, taken: impl Fn(&Graph, &str) -> bool) -> String {
    let mut name = base.to_string();
    let mut k = 2;
    while taken(g, &name) {
        name = format!("{base}.{k}");
        k += 1;
    }
    name
}

/// Most bytes live at one step of the default level (every buffer there
/// but the statics asked for by later stages) and the transient bytes
/// live summed over the steps, and with `costs` the
/// estimated cost of every main-graph node.
fn measure(model: &Model, opts: &PlanOptions, costs: bool) -> Result<((u64, u64), HashMap<NodeIndex, u64>)> {
    // The tiler's costs need the steps' names; the peak needs only sizes.
    let detail = if costs { buffers::Detail::Full } else { buffers::Detail::Sizes };
    let disc = buffers::discover_with(model, &opts.statics, opts.platform.alignment, detail)?;
    let steps = disc.steps.len().max(1);
    // Transient bytes live per step; persistent buffers live at every
    // step (their bytes are the same whatever the schedule's length).
    let mut delta = vec![0i64; steps + 1];
    let mut band = 0u64;
    for b in disc.buffers.iter().filter(|b| b.kind != Kind::Static) {
        if b.persistent {
            band += b.size;
            continue;
        }
        delta[b.start as usize] += b.size as i64;
        delta[b.end as usize + 1] -= b.size as i64;
    }
    // The copies' own steps do not count in the sum: a step added lengthens
    // every lifetime across it without holding more at once.
    let counted: Vec<bool> = disc
        .steps
        .iter()
        .map(|s| s.graph != buffers::GraphSel::Main || model.graph.node(s.node).marks.recomputed_from.is_none())
        .collect();
    let (mut live, mut peak, mut area) = (0i64, 0i64, 0u64);
    for (i, d) in delta[..steps].iter().enumerate() {
        live += d;
        peak = peak.max(live);
        if counted.get(i).copied().unwrap_or(true) {
            area += live.max(0) as u64;
        }
    }
    let peak = band + peak.max(0) as u64;
    let mut c = HashMap::new();
    if costs {
        let tiler = tile_choices(model, &disc, opts);
        for (s, (choice, _)) in disc.steps.iter().zip(&tiler) {
            if s.graph != buffers::GraphSel::Main {
                continue;
            }
            let moved = match choice {
                Some(Ok(ch)) => ch.cost,
                _ => s.operands.iter().map(|&(b, _)| disc.buffers[b].bytes).sum::<u64>() + 1024,
            };
            let cost = moved + tile::compute_cost(&model.graph, model.graph.node(s.node));
            c.insert(s.node, if s.alias_only { 0 } else { cost });
        }
    }
    Ok(((peak, area), c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::lowered;

    /// The schedule edit `accumulate_early` stands for, done one move at a
    /// time in the schedule vector (quadratic, kept as the oracle).
    fn by_moves(g: &mut Graph) -> Vec<String> {
        let readers = g.readers();
        let mut moved = vec![];
        for n in g.schedule.clone() {
            let node = g.node(n);
            let def = ops::of(node);
            let ops::Update::Always { input, .. } = def.update else { continue };
            let shared =
                node.input(input).is_some_and(|b| readers.get(&b).is_some_and(|rs| rs.iter().any(|&r| r != n)));
            if def.train != Train::Accumulator || shared {
                continue;
            }
            let pos = |g: &Graph, m: NodeIndex| g.schedule.iter().position(|&x| x == m);
            let from = pos(g, n).unwrap();
            let after = node.inputs.iter().flatten().filter_map(|&t| g.producer(t)).filter_map(|p| pos(g, p)).max();
            let to = after.map_or(0, |a| a + 1);
            if to < from {
                moved.push(node.name.clone());
                g.schedule.remove(from);
                g.schedule.insert(to, n);
            }
        }
        moved
    }

    /// The sort keys give the schedule and the names the moves give, on
    /// training steps of several shapes (accumulations after their own
    /// gradients, several sharing a last producer, frozen parts).
    #[test]
    fn the_keys_give_the_schedule_of_the_moves() {
        let mut seen = 0;
        for model in ["resnet8", "cct", "mlp_derived_frozen", "conv1d_autoencoder_train", "mobilenet_v3_block_train"] {
            let m = lowered(model);
            let (mut a, mut b) = (m.graph.clone(), m.graph.clone());
            let (ma, mb) = (accumulate_early(&mut a), by_moves(&mut b));
            assert_eq!(ma, mb, "{model}: moved");
            assert_eq!(a.schedule, b.schedule, "{model}: schedule");
            seen += ma.len();
        }
        assert!(seen > 50, "too few accumulations moved to tell: {seen}");
    }
}
