//! Memory planning (docs/architecture.md): which level every buffer lives in and why,
//! how every weight gets there, and where in its level's arena each buffer
//! sits.
//!
//! ```text
//! buffers::discover   tensors → buffers (sizes, lifetimes, aliases, kinds)
//! levels::initial     level per buffer under the default level, with reasons
//! supply::decide      per weight: baked / l3-hex / l3-staged
//! levels::derive      per node: L2 staging of L3 operands, L1 copies, scratch
//! offsets::assign     per level: offsets (greedy by size + order search)
//! offsets::verify     independent check of every level's offsets
//! ```
//!
//! When the default level L2 cannot hold everything, persistent buffers
//! move to L3 one by one (`evict`), each move recorded with its numbers.
//! When nothing more can move, the plan is an error that gives the bytes
//! needed and available per level, split into arena, weights and reserved
//! memory, and what to try.

pub mod buffers;
mod evict;
pub mod levels;
pub mod offsets;
pub mod recompute;
pub mod report;
pub mod supply;
pub mod svg;
pub mod tile;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

pub use crate::target::{Level, Platform};
pub use buffers::{Access, BufId, Buffer, Buffers, GraphSel, Kind, Placement, StaticRequest};
pub use levels::{Moved, NodePlan, Operand, TiledOperand, Tiling};
pub use supply::{SkipCopy, Supply, WeightPlan};

use crate::diag::Hint;
use crate::error::{Error, Result};
use crate::ir::Model;

/// Name of the static buffer that holds the test harness's data and
/// references (requested by the pipeline, laid out by emission).
pub const TEST_DATA: &str = "test data and references (the harness's own)";

/// Most bytes of one node's constant tables whatever the capacities: the
/// generated C spells every entry out (16 MiB of tables are some 60 MB of
/// source).
pub const TABLES_CEILING: u64 = 16 << 20;

/// The static buffer of the kernels' constant tables (Resize's taps).
pub const KERNEL_TABLES: &str = "kernel tables (static data of the network's calls)";

/// What to plan for.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// The platform, with any capacity overrides applied.
    pub platform: Platform,
    /// The default level of graph I/O, weights and buffers: L2 or L3.
    pub default_mem: Level,
    /// Extra static buffers a later stage needs (the test data, see
    /// `pipeline::plan_options`) at the level asked for: baked into the L2
    /// image, counted in L2's capacity and image limit; eviction never
    /// moves them, since emission writes them as L2 arrays.
    pub statics: Vec<StaticRequest>,
    /// Bound on the bytes baked into the L2 image; weights beyond it are
    /// `l3-staged`. Defaults to the platform's `image_limit` for L2.
    pub l2_image_limit: Option<u64>,
    /// Where the test harness keeps its test data and references: `None`
    /// in L2, moved to L3 when L2 is short; `Some(level)` there.
    pub test_data: Option<Level>,
    /// Run the nodes that have a tile rule in L1 tiles (`--no-tiling`:
    /// whole-operand copies as before).
    pub tiling: bool,
    /// Recompute forward values for the backward pass (`recompute::apply`).
    pub recompute: recompute::Mode,
    /// Most estimated cost recompute may add, in percent of the step's.
    pub recompute_budget: u32,
}

impl PlanOptions {
    pub fn new(platform: Platform, default_mem: Level) -> PlanOptions {
        PlanOptions {
            platform,
            default_mem,
            statics: vec![],
            l2_image_limit: None,
            test_data: None,
            tiling: true,
            recompute: recompute::Mode::Auto,
            recompute_budget: 10,
        }
    }

    /// Options by name: a platform (name or alias), a default level (L2 or
    /// L3) and per-level capacity overrides (L1, L2, L3).
    pub fn named(platform: &str, default_mem: &str, capacities: [Option<u64>; 3]) -> Result<PlanOptions> {
        let mut p = Platform::by_name(platform)?;
        let level = Level::parse(default_mem).filter(|l| *l != Level::L1).ok_or_else(|| {
            Error::Usage(format!("memory level '{default_mem}': the default memory level must be L2 or L3"))
        })?;
        for (l, c) in Level::ALL.into_iter().zip(capacities) {
            if let Some(bytes) = c {
                if bytes == 0 {
                    return Err(Error::Usage(format!(
                        "--{} 0: a level's capacity must be at least one byte",
                        l.to_string().to_lowercase()
                    )));
                }
                // Generated code holds sizes and offsets in 32 bits.
                if bytes > u64::from(u32::MAX) {
                    return Err(Error::Usage(format!(
                        "--{} {bytes}: a level's capacity is at most {} B (the generated code holds sizes and \
                         offsets in 32 bits)",
                        l.to_string().to_lowercase(),
                        thousands(u64::from(u32::MAX))
                    )));
                }
                p = p.with_capacity(l, bytes);
            }
        }
        Ok(PlanOptions::new(p, level))
    }
}

/// Accounting of one level.
#[derive(Clone, Debug, Serialize)]
pub struct LevelPlan {
    pub level: Level,
    pub capacity: u64,
    pub reserved: Vec<crate::target::Reserved>,
    pub reserved_bytes: u64,
    /// Bytes of the level's arena: persistent band + transient region.
    pub arena_bytes: u64,
    /// Buffers live for the whole schedule, stacked at the arena's bottom.
    pub persistent_bytes: u64,
    /// Most bytes live at any step: no arena can be smaller.
    pub lower_bound_bytes: u64,
    /// lower_bound_bytes / arena_bytes.
    pub efficiency: f64,
    /// The same two figures for the transient region alone.
    pub transient_arena_bytes: u64,
    pub transient_lower_bound_bytes: u64,
    pub transient_efficiency: f64,
    /// Transient arena of plain greedy by size, before the order search.
    pub greedy_arena_bytes: u64,
    pub strategy: String,
    /// Weights living at this level (baked or in the arena).
    pub weights_bytes: u64,
    /// Static allocations outside the arena: baked weights and static
    /// buffers; in L3 also the hex images of l3-staged weights.
    pub static_bytes: u64,
    /// reserved + arena + static.
    pub needed_bytes: u64,
    pub free_bytes: u64,
    pub fits: bool,
    pub buffers: usize,
}

/// A memory plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub platform: Platform,
    pub default_mem: Level,
    /// Schedule steps in all (training/inference graph, then optimizer).
    pub steps: u32,
    /// Steps of the main graph; the optimizer's follow.
    pub main_steps: u32,
    pub levels: BTreeMap<Level, LevelPlan>,
    pub weights: Vec<WeightPlan>,
    pub skip_initweight_copy: SkipCopy,
    pub buffers: Buffers,
    pub nodes: Vec<NodePlan>,
    /// Decisions a person should know about, in the order they were made.
    pub decisions: Vec<String>,
    /// The forward values recomputed for the backward pass (set by the
    /// pipeline, which runs `recompute::apply` before planning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute: Option<recompute::Report>,
}

impl Plan {
    pub fn level(&self, l: Level) -> &LevelPlan {
        &self.levels[&l]
    }

    /// Why `b` is at its level: its own reason, or for a per-node buffer
    /// the node it serves.
    pub fn level_reason<'a>(&'a self, b: &'a Buffer) -> std::borrow::Cow<'a, str> {
        let Some(n) = b.step.and_then(|s| self.node_at(s)).filter(|_| b.level_reason.is_empty()) else {
            return std::borrow::Cow::Borrowed(&b.level_reason);
        };
        let node = format!("node '{}' ({})", n.name, n.op);
        let staging = b.kind == Kind::Staging;
        let reason = match (b.kind, b.copy_of, &n.tiling) {
            (Kind::Scratch, ..) => format!("kernel scratch of {node}"),
            (_, Some(of), Some(t)) => {
                let k = t.operands.iter().find_map(|o| {
                    let list = if staging { &o.l2_stage } else { &o.l1 };
                    list.iter().position(|&x| x == b.id)
                });
                let what = if staging { "L2 stage of L1 tile buffer" } else { "L1 tile buffer" };
                format!("{what} {} of '{}' for {node}", k.unwrap_or(0), self.buffers[of].name)
            }
            (_, Some(of), None) => {
                let what = if staging { "L2 staging of" } else { "L1 copy of" };
                format!("{what} '{}' for {node}", self.buffers[of].name)
            }
            (_, None, _) => {
                // A copy shared by every parameter (or gradient) of a node
                // that updates one parameter at a time.
                let served = n.operands.iter().find(|o| o.l1_copy == Some(b.id) || o.l2_staging == Some(b.id));
                let gradient = served.is_some_and(|o| self.buffers[o.buffer].kind == Kind::GradBuffer);
                format!(
                    "{} shared by every {} of {node}, which updates one parameter at a time",
                    if staging { "L2 staging" } else { "L1 copy" },
                    if gradient { "gradient" } else { "parameter" }
                )
            }
        };
        std::borrow::Cow::Owned(reason)
    }

    /// The node run at schedule step `step`.
    fn node_at(&self, step: u32) -> Option<&NodePlan> {
        match self.nodes.get(step as usize) {
            Some(n) if n.step == step => Some(n),
            _ => self.nodes.iter().find(|n| n.step == step),
        }
    }

    /// Buffers placed in a level's arena, with their offsets.
    pub fn arena(&self, l: Level) -> Vec<(&Buffer, u64)> {
        self.buffers
            .iter()
            .filter(|b| b.level == l)
            .filter_map(|b| match b.placement {
                Placement::Arena { offset } => Some((b, offset)),
                _ => None,
            })
            .collect()
    }

    /// Independent check of the whole plan: per level, no two buffers live
    /// at a common step overlap, all lie inside the arena, the arena fits
    /// what the level has left after reservations and static data; every
    /// buffer is placed; every weight has exactly one supply.
    pub fn verify(&self) -> std::result::Result<(), PlanFault> {
        if let Some(b) = self.buffers.iter().find(|b| b.placement == Placement::Unplaced) {
            return Err(PlanFault::Unplaced(b.name.clone()));
        }
        for l in Level::ALL {
            self.verify_arena(l)?;
        }
        for n in &self.nodes {
            self.verify_node(n)?;
        }
        let mut seen = std::collections::HashSet::new();
        for w in &self.weights {
            if !seen.insert(w.buffer) {
                return Err(PlanFault::TwoSupplies(w.name.clone()));
            }
        }
        for b in self.buffers.iter().filter(|b| b.kind.is_weight()) {
            if !seen.contains(&b.id) {
                return Err(PlanFault::NoSupply(b.name.clone()));
            }
        }
        Ok(())
    }

    /// Level `l`'s arena: its buffers' offsets, alignment and room.
    fn verify_arena(&self, l: Level) -> std::result::Result<(), PlanFault> {
        let align = self.platform.alignment.max(1);
        let lp = self.level(l);
        let placed = self.arena(l);
        let items: Vec<offsets::Item> =
            placed.iter().map(|(b, _)| offsets::Item::new(b.size, b.start, b.end)).collect();
        let offs: Vec<u64> = placed.iter().map(|(_, o)| *o).collect();
        let room = lp.capacity.saturating_sub(lp.reserved_bytes + lp.static_bytes);
        offsets::verify(&items, &offs, lp.arena_bytes, room, align).map_err(|violation| {
            let name = |i: usize| placed.get(i).map(|(b, _)| b.name.clone());
            match violation {
                offsets::Violation::Overlap { a, b } => PlanFault::Overlap { level: l, a: name(a), b: name(b) },
                offsets::Violation::OutOfArena { item, .. } | offsets::Violation::Misaligned { item, .. } => {
                    PlanFault::Misplaced { level: l, buffer: name(item), violation }
                }
                _ => PlanFault::Arena { level: l, violation },
            }
        })
    }

    /// Node `n`'s tiling, and every buffer it touches live at its step
    /// and addressable by its cores.
    fn verify_node(&self, n: &NodePlan) -> std::result::Result<(), PlanFault> {
        let tile_bufs: Vec<BufId> = n
            .tiling
            .iter()
            .flat_map(|t| t.operands.iter().flat_map(|o| o.l1.iter().chain(&o.l2_stage).copied()))
            .collect();
        if let Some(t) = &n.tiling {
            tile::verify(t, &self.buffers).map_err(|fault| PlanFault::Tiling { node: n.name.clone(), fault })?;
        }
        let touched = n.operands.iter().flat_map(|o| [Some(o.buffer), o.l2_staging, o.l1_copy]).chain([n.scratch]);
        for b in touched.flatten().chain(tile_bufs) {
            let buf = self.buffers.get(b).ok_or_else(|| PlanFault::NoBuffer { node: n.name.clone(), buffer: b })?;
            if !(buf.start <= n.step && n.step <= buf.end) {
                let (node, step, buffer) = (n.name.clone(), n.step, buf.name.clone());
                return Err(PlanFault::NotLive { node, step, buffer, start: buf.start, end: buf.end });
            }
        }
        for o in &n.operands {
            if self.buffers[o.buffer].level == Level::L3 && o.at == Level::L3 {
                return Err(PlanFault::InL3 { node: n.name.clone(), buffer: self.buffers[o.buffer].name.clone() });
            }
        }
        Ok(())
    }
}

/// What [`Plan::verify`] finds wrong with a plan: a bug of the planner,
/// never of the model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanFault {
    #[error("buffer '{0}' was never placed")]
    Unplaced(String),
    /// Two buffers of a level's arena (`None`: no such buffer).
    #[error("{level}: {} and {} overlap while both live", quoted(.a), quoted(.b))]
    Overlap { level: Level, a: Option<String>, b: Option<String> },
    /// A buffer out of its level's arena, or misaligned there.
    #[error("{level}: {}: {violation}", quoted(.buffer))]
    Misplaced { level: Level, buffer: Option<String>, violation: offsets::Violation },
    #[error("{level}: {violation}")]
    Arena { level: Level, violation: offsets::Violation },
    #[error("node '{node}': {fault}")]
    Tiling { node: String, fault: tile::TileFault },
    #[error("node '{node}' names buffer {buffer}, which does not exist")]
    NoBuffer { node: String, buffer: BufId },
    #[error("node '{node}' at step {step} touches '{buffer}', which is live only at steps {start}..{end}")]
    NotLive { node: String, step: u32, buffer: String, start: u32, end: u32 },
    #[error("node '{node}' computes on '{buffer}' in L3, which its cores cannot address")]
    InL3 { node: String, buffer: String },
    #[error("weight '{0}' has two supplies")]
    TwoSupplies(String),
    #[error("weight '{0}' has no supply")]
    NoSupply(String),
}

/// A buffer's name in quotes, `?` for none.
fn quoted(name: &Option<String>) -> String {
    name.as_ref().map_or("?".to_string(), |n| format!("'{n}'"))
}

/// A plan that fails its own check is an internal error, naming the node
/// or buffer at fault where there is one.
impl From<PlanFault> for Error {
    fn from(fault: PlanFault) -> Self {
        let (node, buffer) = match &fault {
            PlanFault::Tiling { node, .. } | PlanFault::NoBuffer { node, .. } => (Some(node.clone()), None),
            PlanFault::NotLive { node, buffer, .. } | PlanFault::InL3 { node, buffer } => {
                (Some(node.clone()), Some(buffer.clone()))
            }
            PlanFault::Unplaced(b) | PlanFault::TwoSupplies(b) | PlanFault::NoSupply(b) => (None, Some(b.clone())),
            _ => (None, None),
        };
        let detail = format!("internal error: the memory plan failed its own check: {fault}");
        Error::Plan { buffer, node, detail }
    }
}

/// One try at fitting the current level assignment.
struct Attempt {
    buffers: Buffers,
    nodes: Vec<NodePlan>,
    weights: Vec<WeightPlan>,
    skip: SkipCopy,
    levels: BTreeMap<Level, LevelPlan>,
}

impl Attempt {
    fn fits(&self) -> bool {
        self.levels.values().all(|l| l.fits)
    }
}

/// Lay one level's arena out: the persistent band (buffers live at every
/// step) at the bottom in buffer order, the rest above it.
fn pack(buffers: &mut Buffers, l: Level, last: u32, align: u64) -> (u64, u64, u64, u64, u64, String) {
    let ids: Vec<BufId> =
        buffers.iter().filter(|b| b.level == l && b.placement != Placement::Static).map(|b| b.id).collect();
    let full = |b: &Buffer| b.persistent && b.start == 0 && b.end == last;
    let mut band = 0u64;
    for &i in &ids {
        if full(&buffers[i]) {
            buffers[i].placement = Placement::Arena { offset: band };
            band += buffers[i].size;
        }
    }
    let rest: Vec<BufId> = ids.iter().copied().filter(|&i| !full(&buffers[i])).collect();
    let items: Vec<offsets::Item> =
        rest.iter().map(|&i| offsets::Item::new(buffers[i].size, buffers[i].start, buffers[i].end)).collect();
    let a = offsets::assign(&items, align);
    for (k, &i) in rest.iter().enumerate() {
        buffers[i].placement = Placement::Arena { offset: band + a.offsets[k] };
    }
    (band, a.arena, a.lower_bound, a.greedy_arena, band + a.arena, a.strategy)
}

fn attempt(base: &Buffers, disc: &buffers::Discovery, opts: &PlanOptions, tiler: &[levels::Tiler]) -> Attempt {
    let p = &opts.platform;
    let align = p.alignment.max(1);
    let last = disc.steps.len().max(1) as u32 - 1;
    let mut bufs = base.clone();
    let image_limit = opts.l2_image_limit.or(p.level(Level::L2).image_limit);
    let (weights, skip) = supply::decide(&mut bufs, image_limit);
    let nodes = levels::derive(&mut bufs, &disc.steps, p, tiler);
    let mut levels = BTreeMap::new();
    for l in Level::ALL {
        let (band, t_arena, t_lb, greedy, arena, strategy) = pack(&mut bufs, l, last, align);
        let desc = p.level(l);
        let reserved_bytes = desc.reserved_bytes();
        let mut static_bytes: u64 =
            bufs.iter().filter(|b| b.level == l && b.placement == Placement::Static).map(|b| b.size).sum();
        if l == Level::L3 {
            static_bytes +=
                weights.iter().filter(|w| w.supply == Supply::L3Staged).map(|w| bufs[w.buffer].size).sum::<u64>();
        }
        let weights_bytes: u64 = bufs.iter().filter(|b| b.level == l && b.kind.is_weight()).map(|b| b.bytes).sum();
        let needed = reserved_bytes + arena + static_bytes;
        let lower_bound = band + t_lb;
        levels.insert(
            l,
            LevelPlan {
                level: l,
                capacity: desc.capacity,
                reserved: desc.reserved.clone(),
                reserved_bytes,
                arena_bytes: arena,
                persistent_bytes: band,
                lower_bound_bytes: lower_bound,
                efficiency: offsets::efficiency(lower_bound, arena),
                transient_arena_bytes: t_arena,
                transient_lower_bound_bytes: t_lb,
                transient_efficiency: offsets::efficiency(t_lb, t_arena),
                greedy_arena_bytes: greedy,
                strategy: if t_arena == 0 { "empty".into() } else { strategy },
                weights_bytes,
                static_bytes,
                needed_bytes: needed,
                free_bytes: desc.capacity.saturating_sub(needed),
                fits: needed <= desc.capacity,
                buffers: bufs.iter().filter(|b| b.level == l).count(),
            },
        );
    }
    Attempt { buffers: bufs, nodes, weights, skip, levels }
}

/// `1638400` → `1,638,400`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The accounting of one level as lines for an error message.
fn breakdown(a: &Attempt, l: Level) -> Vec<String> {
    let lp = &a.levels[&l];
    let in_arena = |k: &[Kind]| -> u64 {
        a.buffers
            .iter()
            .filter(|b| {
                b.level == l && matches!(b.placement, Placement::Arena { .. }) && b.persistent && k.contains(&b.kind)
            })
            .map(|b| b.size)
            .sum()
    };
    let w = in_arena(&[Kind::Param, Kind::Frozen, Kind::Constant]);
    let g = in_arena(&[Kind::GradBuffer]);
    let io = in_arena(&[Kind::Input, Kind::OptimizerInput]);
    let harness_in_arena = in_arena(&[Kind::Static]);
    let t = lp.arena_bytes.saturating_sub(w + g + io + harness_in_arena);
    let baked_w: u64 = a
        .buffers
        .iter()
        .filter(|b| b.level == l && b.placement == Placement::Static && b.kind.is_weight())
        .map(|b| b.size)
        .sum();
    let harness_static: u64 = a
        .buffers
        .iter()
        .filter(|b| b.level == l && b.placement == Placement::Static && b.kind == Kind::Static)
        .filter(|b| b.name != KERNEL_TABLES)
        .map(|b| b.size)
        .sum();
    let tables: u64 = a.buffers.iter().filter(|b| b.level == l && b.name == KERNEL_TABLES).map(|b| b.size).sum();
    let other_static = lp.static_bytes.saturating_sub(baked_w + harness_static + tables);
    let reserved: Vec<String> = lp.reserved.iter().map(|r| format!("{} {}", r.name, thousands(r.bytes))).collect();
    let mut v = vec![
        format!(
            "  arena            {:>11} B  (weights {}, gradient buffers {}, graph I/O {}{}, activations/gradients/staging {})",
            thousands(lp.arena_bytes),
            thousands(w),
            thousands(g),
            thousands(io),
            if harness_in_arena > 0 { format!(", harness data {}", thousands(harness_in_arena)) } else { String::new() },
            thousands(t)
        ),
        format!("  weights, baked   {:>11} B", thousands(baked_w)),
    ];
    if tables > 0 {
        v.push(format!("  kernel tables    {:>11} B  (static arrays of the network's calls)", thousands(tables)));
    }
    if harness_static > 0 {
        v.push(format!("  harness data     {:>11} B  (static arrays)", thousands(harness_static)));
    }
    if other_static > 0 {
        v.push(format!("  other static     {:>11} B", thousands(other_static)));
    }
    v.push(format!(
        "  stacks/reserved  {:>11} B{}",
        thousands(lp.reserved_bytes),
        if reserved.is_empty() { String::new() } else { format!("  ({})", reserved.join(", ")) }
    ));
    if harness_static + harness_in_arena > 0 {
        // The test harness's own data, not the network's: it can move. Said
        // apart so that the lines above add up to what the level needs.
        v.push(format!(
            "  of these, {} B are harness data: test data and references, the harness's own, not the network's{}",
            thousands(harness_static + harness_in_arena),
            if l == Level::L2 { "; --test-data L3 keeps it in L3" } else { "" }
        ));
    }
    v
}

/// What a capacity error says of one level of an attempt: kept instead of
/// the attempt itself, which holds every buffer and node of the plan.
struct Shortfall {
    level: LevelPlan,
    lines: Vec<String>,
    /// The plan has static requests (test data, references, tables).
    statics: bool,
}

impl Shortfall {
    fn of(a: &Attempt, l: Level) -> Shortfall {
        Shortfall {
            level: a.levels[&l].clone(),
            lines: breakdown(a, l),
            statics: a.buffers.iter().any(|b| b.kind == Kind::Static),
        }
    }
}

fn capacity_error(p: &Platform, s: &Shortfall, extra: Vec<String>, hints: Vec<Hint>) -> Error {
    let lp = &s.level;
    let l = lp.level;
    let mut msg = format!(
        "the memory plan does not fit {}'s {l}: it needs {} B and {l} has {} B ({} B short)",
        p.name,
        thousands(lp.needed_bytes),
        thousands(lp.capacity),
        thousands(lp.needed_bytes - lp.capacity.min(lp.needed_bytes))
    );
    for line in s.lines.iter().chain(&extra) {
        msg.push('\n');
        msg.push_str(line);
    }
    Error::Capacity {
        platform: p.name.clone(),
        level: l.to_string(),
        needed: lp.needed_bytes,
        available: lp.capacity,
        message: msg,
        hints,
    }
}

/// The largest single node's staging in L2, for messages.
fn largest_staging(a: &Attempt) -> Option<(String, u64)> {
    a.nodes
        .iter()
        .map(|n| {
            let mut ids: Vec<BufId> = n.operands.iter().filter_map(|o| o.l2_staging).collect();
            ids.sort_unstable();
            ids.dedup();
            let bytes: u64 = ids.iter().map(|&b| a.buffers[b].size).sum();
            (format!("'{}' ({})", n.name, n.op), bytes)
        })
        .max_by_key(|(_, b)| *b)
        .filter(|(_, b)| *b > 0)
}

/// The tiler's choice for every step, made once (it does not depend on
/// the levels eviction changes).
fn tile_choices(model: &Model, disc: &buffers::Discovery, opts: &PlanOptions) -> Vec<levels::Tiler> {
    // A long step repeats a few kinds of node thousands of times: each
    // kind is tiled once.
    let mut made: HashMap<String, std::result::Result<tile::Choice, tile::Untiled>> = HashMap::new();
    disc.steps
        .iter()
        .map(|step| {
            if !opts.tiling || step.alias_only {
                return (None, vec![]);
            }
            match tile_operands(model, disc, step) {
                Err(why) => (Some(Err(why)), vec![]),
                Ok((graph, operands)) => {
                    let node = graph.node(step.node);
                    let key = alike(graph, node, &operands, step.scratch_bytes);
                    if let Some(c) = key.as_ref().and_then(|k| made.get(k)) {
                        return (Some(c.clone()), operands);
                    }
                    let c = choose_tiles(model, graph, step, &operands, opts);
                    if let Some(k) = key {
                        made.insert(k, c.clone());
                    }
                    (Some(c), operands)
                }
            }
        })
        .collect()
}

/// The tiler's choice for one step, made on its own.
fn choose_tiles(
    model: &Model,
    graph: &crate::ir::Graph,
    step: &buffers::Step,
    operands: &[tile::OperandIn],
    opts: &PlanOptions,
) -> std::result::Result<tile::Choice, tile::Untiled> {
    tile::choose(&tile::NodeIn {
        model,
        graph,
        node: graph.node(step.node),
        operands: operands.to_vec(),
        budget: opts.platform.budget(Level::L1),
        align: opts.platform.alignment.max(1),
        scratch: step.scratch_bytes,
    })
}

/// Everything of a node the tiler reads, as a key: nodes with equal keys
/// get the same choice. `None` (tile it on its own) when a slot holds a
/// constant, whose values a rule may read.
fn alike(
    graph: &crate::ir::Graph,
    node: &crate::ir::Node,
    operands: &[tile::OperandIn],
    scratch: u64,
) -> Option<String> {
    let mut slots = Vec::with_capacity(node.inputs.len() + node.outputs.len());
    for t in node.inputs.iter().chain(&node.outputs) {
        let Some(t) = t.map(|t| graph.tensor(t)) else {
            slots.push(None);
            continue;
        };
        if t.data.is_some() {
            return None;
        }
        slots.push(Some((&t.ty, &t.origin, t.sequence)));
    }
    let operands: Vec<_> =
        operands.iter().map(|o| (o.access, o.slots.iter().map(|(s, _)| *s).collect::<Vec<_>>())).collect();
    let what = (node.op_id, &node.domain, &node.op, &node.attrs, &node.marks.fused_act, node.marks.saved_stats);
    let copy = node.marks.recomputed_from.is_some();
    Some(format!("{what:?} {copy} {} {slots:?} {operands:?} {scratch}", node.inputs.len()))
}

/// A step's distinct buffers with the slots that name them, in the step's
/// operand order.
fn tile_operands<'m>(
    model: &'m Model,
    disc: &buffers::Discovery,
    step: &buffers::Step,
) -> std::result::Result<(&'m crate::ir::Graph, Vec<tile::OperandIn>), tile::Untiled> {
    let (graph, map) = match step.graph {
        GraphSel::Main => (&model.graph, &disc.main),
        GraphSel::Optimizer => (model.optimizer.as_ref().ok_or(tile::Untiled::NoGraph("optimizer"))?, &disc.optimizer),
        GraphSel::Predict => (model.predict.as_ref().ok_or(tile::Untiled::NoGraph("predict"))?, &disc.predict),
    };
    let node = graph.node(step.node);
    let mut ops: Vec<tile::OperandIn> =
        step.operands.iter().map(|&(buffer, access)| tile::OperandIn { buffer, access, slots: vec![] }).collect();
    let slots = node.inputs.iter().enumerate().map(|(i, t)| (false, i, *t));
    let slots = slots.chain(node.outputs.iter().enumerate().map(|(i, t)| (true, i, *t)));
    for (output, index, t) in slots {
        let Some(t) = t else { continue };
        if graph.tensor(t).sequence {
            return Err(tile::Untiled::Sequence);
        }
        let Some(&b) = map.get(&t) else { continue };
        let o = ops.iter_mut().find(|o| o.buffer == b).ok_or(tile::Untiled::SlotNotOperand)?;
        o.slots.push((tile::Slot { output, index }, t));
    }
    if ops.iter().any(|o| o.slots.is_empty()) {
        return Err(tile::Untiled::UnnamedOperand);
    }
    Ok((graph, ops))
}

/// Plan a model's memory for a platform.
pub fn plan(model: &Model, opts: &PlanOptions) -> Result<Plan> {
    match plan_once(model, opts) {
        Err(Error::Capacity { platform, level, needed, available, message, hints }) => {
            let hints = joint_hints(model, opts, hints);
            Err(Error::Capacity { platform, level, needed, available, message, hints })
        }
        r => r,
    }
}

/// A capacity hint names the level that failed first; giving it those
/// bytes can leave another level short (L2's moves land in L3). Plan again
/// with every hinted capacity until the plan fits, so that the one hint
/// names every level it takes. Without such a fit the capacity hint goes:
/// following it would only lead to the next error.
fn joint_hints(model: &Model, opts: &PlanOptions, hints: Vec<Hint>) -> Vec<Hint> {
    let capacity = |h: &Hint| match *h {
        Hint::Capacity { level, bytes } => Some((level, bytes)),
        _ => None,
    };
    let mut caps: BTreeMap<Level, u64> = hints.iter().filter_map(capacity).collect();
    if caps.is_empty() {
        return hints;
    }
    let mut joint = None;
    // Capacities only grow, and each round adds or grows one: a few rounds
    // settle any chip's three levels.
    for _ in 0..8 {
        let mut o = opts.clone();
        for (&l, &bytes) in &caps {
            o.platform = o.platform.with_capacity(l, bytes.max(opts.platform.capacity(l)));
        }
        let more: Vec<(Level, u64)> = match plan_once(model, &o) {
            Ok(_) => {
                joint = Some(caps);
                break;
            }
            Err(Error::Capacity { hints, .. }) => hints.iter().filter_map(capacity).collect(),
            Err(_) => vec![],
        };
        let before = caps.clone();
        for (l, bytes) in more {
            let c = caps.entry(l).or_insert(0);
            *c = (*c).max(bytes);
        }
        if caps == before {
            break;
        }
    }
    let mut out: Vec<Hint> = hints.into_iter().filter(|h| capacity(h).is_none()).collect();
    if let Some(caps) = joint {
        // After "--default-mem L3": moving the defaults costs no memory.
        let at = out.iter().take_while(|h| matches!(h, Hint::DefaultMem { .. })).count();
        out.insert(at, Hint::Capacities(caps.into_iter().collect()));
    }
    out
}

fn plan_once(model: &Model, opts: &PlanOptions) -> Result<Plan> {
    let p = &opts.platform;
    p.validate()?;
    if opts.default_mem == Level::L1 {
        return Err(Error::Usage(
            "the default memory level must be L2 or L3, not L1 (L1 holds per-node copies and scratch only)".into(),
        ));
    }
    for l in Level::ALL {
        let d = p.level(l);
        if d.reserved_bytes() > d.capacity {
            let names: Vec<String> =
                d.reserved.iter().map(|r| format!("{} {} B", r.name, thousands(r.bytes))).collect();
            return Err(Error::Capacity {
                platform: p.name.clone(),
                level: l.to_string(),
                needed: d.reserved_bytes(),
                available: d.capacity,
                message: format!(
                    "{}'s {l} of {} B cannot even hold what is reserved there: {} B ({})",
                    p.name,
                    thousands(d.capacity),
                    thousands(d.reserved_bytes()),
                    names.join(", "),
                ),
                hints: vec![Hint::Capacity { level: l, bytes: d.reserved_bytes() + 1 }],
            });
        }
    }

    let opts = &with_tables(model, opts)?;
    let mut disc = buffers::discover(model, &opts.statics, p.alignment)?;
    // Later steps read the discovery's steps and maps, not its buffers.
    let mut base = std::mem::take(&mut disc.buffers);
    levels::initial(&mut base, opts.default_mem);
    let mut decisions = std::mem::take(&mut disc.notes);
    let tiler = tile_choices(model, &disc, opts);
    let done = evict::fit(&mut base, &disc, opts, &tiler, &mut decisions)?;

    let plan = Plan {
        platform: p.clone(),
        default_mem: opts.default_mem,
        steps: disc.steps.len() as u32,
        main_steps: disc.main_steps,
        levels: done.levels,
        weights: done.weights,
        skip_initweight_copy: done.skip,
        buffers: done.buffers,
        nodes: done.nodes,
        decisions,
        recompute: None,
    };
    plan.verify()?;
    Ok(plan)
}

/// The options with the kernels' constant tables as one static L2 buffer
/// (emitted as `static const` arrays: the network's data, never its
/// stack), sized from every node's shapes before any table is built. A
/// node whose tables alone pass what L2 has after its reservations is an
/// error naming it.
fn with_tables(model: &Model, opts: &PlanOptions) -> Result<PlanOptions> {
    // Initialised data: within the L2 image the boot loader copies, where
    // the chip bounds it, and within what L2 has after its reservations.
    let image = opts.l2_image_limit.or(opts.platform.level(Level::L2).image_limit);
    let room = opts.platform.budget(Level::L2).min(image.unwrap_or(u64::MAX)).min(TABLES_CEILING);
    let mut total = 0u64;
    for g in std::iter::once(&model.graph).chain(model.optimizer.as_ref()) {
        for &n in &g.schedule {
            let node = g.node(n);
            let Some(f) = crate::ops::of(node).tables else { continue };
            let bytes = f(g, node)?;
            if bytes > room {
                return Err(Error::Plan {
                    buffer: None,
                    node: Some(node.name.clone()),
                    detail: format!(
                        "node '{}' ({}): its kernel's tables take {} B of static data in L2, more than the {} B \
                         {}'s L2 can hold as initialised data (after its reservations, within its image limit and \
                         the {} B deploygen writes for one node)",
                        node.name,
                        node.op,
                        thousands(bytes),
                        thousands(room),
                        opts.platform.name,
                        thousands(TABLES_CEILING)
                    ),
                });
            }
            total = total.saturating_add(bytes);
        }
    }
    let mut o = opts.clone();
    if total > 0 {
        o.statics.push(StaticRequest { name: KERNEL_TABLES.into(), bytes: total, level: Level::L2, movable: false });
    }
    Ok(o)
}

impl Plan {
    /// Bytes moved between levels in one run of every node: tiled nodes'
    /// DMA and RAM transfers, untiled nodes' whole-operand copies.
    pub fn traffic(&self) -> Moved {
        let mut m = Moved::default();
        for n in &self.nodes {
            if let Some(t) = &n.tiling {
                m.l3_to_l2 += t.moved.l3_to_l2;
                m.l2_to_l1 += t.moved.l2_to_l1;
                m.l1_to_l2 += t.moved.l1_to_l2;
                m.l2_to_l3 += t.moved.l2_to_l3;
                continue;
            }
            for o in &n.operands {
                let b = self.buffers[o.buffer].bytes;
                let (rd, wr) = (o.access != Access::Write, o.access != Access::Read);
                if o.home == Level::L3 && (o.l2_staging.is_some() || o.l1_copy.is_some()) {
                    m.l3_to_l2 += if rd { b } else { 0 };
                    m.l2_to_l3 += if wr { b } else { 0 };
                }
                if o.l1_copy.is_some() {
                    m.l2_to_l1 += if rd { b } else { 0 };
                    m.l1_to_l2 += if wr { b } else { 0 };
                }
            }
        }
        m
    }

    /// The largest L2 buffer an L3 operand passes through (a whole-operand
    /// staging of an untiled node, or a tile's stage).
    pub fn largest_l2_staging(&self) -> u64 {
        self.buffers.iter().filter(|b| b.kind == Kind::Staging).map(|b| b.size).max().unwrap_or(0)
    }

    /// Bytes the deployment occupies in L1, L2 and L3 (arenas and static
    /// data), less the static buffers asked for by later stages (the
    /// harness's test data).
    pub fn footprint(&self) -> u64 {
        let statics: u64 = self.buffers.iter().filter(|b| b.kind == Kind::Static).map(|b| b.size).sum();
        let total: u64 = self.levels.values().map(|l| l.arena_bytes + l.static_bytes).sum();
        total.saturating_sub(statics)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zoo model through the stages before plan.
    pub(crate) fn lowered(model: &str) -> Model {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(model);
        let mut m = crate::import::load(&path).unwrap();
        crate::bind::dims::specialise(&mut m).unwrap();
        crate::bind::pinned::pin(&mut m).unwrap();
        crate::lower::lower(m).unwrap()
    }

    /// A choice shared among nodes alike is the one each would get alone,
    /// on models whose steps repeat kinds of node.
    #[test]
    fn nodes_alike_get_the_choice_each_would_get() {
        let mut shared = 0;
        for model in ["resnet8", "cct", "mobilenet_v1", "kws_cnn_derived_sgd"] {
            let m = lowered(model);
            let opts = PlanOptions::new(Platform::by_name("GAP9").unwrap(), Level::L2);
            let disc = buffers::discover(&m, &opts.statics, opts.platform.alignment).unwrap();
            let choices = tile_choices(&m, &disc, &opts);
            let mut keys = std::collections::HashSet::new();
            for (step, (choice, operands)) in disc.steps.iter().zip(&choices) {
                let Some(choice) = choice else { continue };
                let Ok((graph, _)) = tile_operands(&m, &disc, step) else { continue };
                let node = graph.node(step.node);
                let alone = choose_tiles(&m, graph, step, operands, &opts);
                let seen = |c: &std::result::Result<tile::Choice, tile::Untiled>| match c {
                    Ok(c) => format!("{:?} {:?} {:?} {} {:?}", c.space, c.tile, c.double, c.why, c.tiles),
                    Err(why) => why.to_string(),
                };
                assert_eq!(seen(choice), seen(&alone), "{model}: node '{}'", node.name);
                let key = alike(graph, node, operands, step.scratch_bytes);
                shared += usize::from(key.is_some_and(|k| !keys.insert(k)));
            }
        }
        assert!(shared > 100, "only {shared} choices were shared");
    }
}
