//! Fitting L2 at the default level L2: when everything does not fit,
//! persistent buffers move to L3 one at a time — one that covers the
//! shortfall alone (fewest node touches, then smallest), else the one that
//! frees most bytes per touch, since each node touching an L3 buffer
//! stages it through L2 — each move recorded with its numbers. When
//! nothing more can move, the plan is a capacity error with the numbers and
//! what would help.

use std::collections::{BTreeSet, HashMap};

use super::buffers::{BufId, Discovery, Kind};
use super::{attempt, capacity_error, largest_staging, thousands, Attempt, PlanOptions, Shortfall};
use crate::diag::Hint;
use crate::error::Result;
use crate::target::Level;

/// Try the level assignment in `base`, relieving L2 until it fits.
pub(super) fn fit(
    base: &mut crate::plan::Buffers,
    disc: &Discovery,
    opts: &PlanOptions,
    tiler: &[super::levels::Tiler],
    decisions: &mut Vec<String>,
) -> Result<Attempt> {
    let p = &opts.platform;
    // The first attempt's L2 (everything at L2) is what an error shows.
    let mut first: Option<Shortfall> = None;
    let mut moved: Vec<BufId> = vec![];
    // Steps that touch each buffer, counted once.
    let mut touches: HashMap<BufId, usize> = HashMap::new();
    for s in &disc.steps {
        let mut ids: Vec<BufId> = s.operands.iter().map(|(b, _)| *b).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            *touches.entry(id).or_default() += 1;
        }
    }
    let access_count = |id: BufId| touches.get(&id).copied().unwrap_or(0);

    loop {
        let a = attempt(base, disc, opts, tiler);
        if a.fits() {
            return Ok(a);
        }
        let l2 = &a.levels[&Level::L2];
        let l3 = &a.levels[&Level::L3];
        if !l3.fits {
            let mut extra = vec![];
            if !moved.is_empty() {
                extra.push(format!("  ({} buffer(s) were moved here from L2 because L2 was short)", moved.len()));
            }
            return Err(capacity_error(
                p,
                &Shortfall::of(&a, Level::L3),
                extra,
                [Hint::Capacity { level: Level::L3, bytes: l3.needed_bytes }]
                    .into_iter()
                    .filter(|_| l3.needed_bytes <= chip_capacity(p, Level::L3))
                    .collect(),
            ));
        }
        if !l2.fits && move_movable_statics(base, opts, l2.needed_bytes - l2.capacity, decisions) {
            continue;
        }
        if !l2.fits && opts.default_mem == Level::L2 {
            // Move persistent L2 buffers to L3: most bytes freed per node
            // that touches them first (each touch is a staging copy).
            let cands: Vec<BufId> = base
                .iter()
                // Static requests (the test data) move only as a whole, above,
                // when their requester can use them in L3.
                .filter(|b| b.level == Level::L2 && b.persistent && !b.kind.is_per_node() && b.kind != Kind::Static)
                .map(|b| b.id)
                .collect();
            if !cands.is_empty() {
                let short = l2.needed_bytes - l2.capacity;
                if first.is_none() {
                    decisions.push(format!(
                        "with everything at L2 the plan needs {} B of L2, {} B more than its {} B: moving persistent buffers to L3",
                        thousands(l2.needed_bytes),
                        thousands(short),
                        thousands(l2.capacity)
                    ));
                }
                for id in pick_moves(&cands, |id| base[id].size, access_count, short) {
                    let n = access_count(id);
                    let b = &mut base[id];
                    b.level = Level::L3;
                    b.level_reason = format!(
                        "moved to L3: L2 was {} B short; a {} touched by {n} node(s) per run, staged through L2 at each",
                        thousands(short),
                        b.kind.name().replace('_', " ")
                    );
                    decisions.push(format!("moved '{}' ({} B) to L3", b.name, thousands(b.size)));
                    moved.push(id);
                }
                if first.is_none() {
                    first = Some(Shortfall::of(&a, Level::L2));
                }
                continue;
            }
        }
        // L2 cannot be relieved any further.
        let mut extra = vec![];
        if !moved.is_empty() {
            let bytes: u64 = moved.iter().map(|&i| base[i].size).sum();
            extra.push(format!(
                "  moving {} persistent buffer(s) ({} B) to L3 still leaves L2 needing {} B",
                moved.len(),
                thousands(bytes),
                thousands(l2.needed_bytes)
            ));
        }
        if let Some((node, bytes)) = largest_staging(&a) {
            extra.push(format!("  largest L2 staging of one node: {node}, {} B", thousands(bytes)));
        }
        let mut hints = vec![];
        if opts.default_mem == Level::L2 {
            hints.push(Hint::DefaultMem { level: Level::L3 });
        }
        // The least L2 that works: what this plan needs after every move
        // (the first attempt's figure keeps everything in L2).
        let needed = l2.needed_bytes;
        if needed <= chip_capacity(p, Level::L2) {
            hints.push(Hint::Capacity { level: Level::L2, bytes: needed });
        }
        let shown = first.unwrap_or_else(|| Shortfall::of(&a, Level::L2));
        if opts.test_data == Some(Level::L2) && shown.statics {
            hints.push(Hint::TestDataL3);
        }
        return Err(capacity_error(p, &shown, extra, hints));
    }
}

/// Moves the static requests that may live in L3 (the harness's test data
/// and references) there, before any of the network's own buffers: they
/// cost the network nothing in L3. Whether anything moved.
fn move_movable_statics(
    base: &mut crate::plan::Buffers,
    opts: &PlanOptions,
    short: u64,
    decisions: &mut Vec<String>,
) -> bool {
    let movable = |b: &crate::plan::Buffer| {
        b.kind == Kind::Static && b.level == Level::L2 && opts.statics.iter().any(|s| s.movable && s.name == b.name)
    };
    let mut moved = false;
    for b in base.iter_mut().filter(|b| movable(b)) {
        b.level = Level::L3;
        b.level_reason = format!("moved to L3: L2 was {} B short, and its reader streams it from L3", thousands(short));
        decisions.push(format!(
            "moved '{}' ({} B) to L3 first: L2 was {} B short",
            b.name,
            thousands(b.size),
            thousands(short)
        ));
        moved = true;
    }
    moved
}

/// The level's capacity on the chip itself, whatever `--l1/--l2/--l3`
/// say: a hint never asks for more than the chip has.
fn chip_capacity(p: &crate::target::Platform, l: Level) -> u64 {
    crate::target::Platform::by_name(&p.name).map_or(p.level(l).capacity, |chip| chip.level(l).capacity)
}

/// The buffers to move to L3 until `short` bytes are freed, in order. Each
/// node touching an L3 buffer stages it, so prefer buffers few nodes touch:
/// one that covers what is still short alone (fewest touches, then
/// smallest), else the one that frees most bytes per touch (then the
/// lowest id). Sorted once, so many small moves stay O(n log n).
fn pick_moves(
    cands: &[BufId],
    size: impl Fn(BufId) -> u64,
    touches: impl Fn(BufId) -> usize,
    short: u64,
) -> Vec<BufId> {
    let score = |id: BufId| size(id) / (touches(id).max(1) as u64);
    let mut by_score = cands.to_vec();
    by_score.sort_by(|&x, &y| score(y).cmp(&score(x)).then(x.cmp(&y)));
    let mut by_score = by_score.into_iter();
    let mut left: BTreeSet<(u64, BufId)> = cands.iter().map(|&id| (size(id), id)).collect();
    let (mut picks, mut freed) = (vec![], 0u64);
    while freed < short && !left.is_empty() {
        let need = short - freed;
        let covering =
            left.range((need, BufId::FIRST)..).map(|&(_, id)| id).min_by_key(|&id| (touches(id), size(id), id));
        let id = match covering {
            Some(id) => id,
            None => by_score.find(|&id| left.contains(&(size(id), id))).expect("a candidate is left"),
        };
        left.remove(&(size(id), id));
        freed += size(id);
        picks.push(id);
    }
    picks
}
