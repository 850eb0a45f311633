//! Fitting L2 at the default level L2: when everything does not fit,
//! persistent buffers move to L3 one at a time — one that covers the
//! shortfall alone (fewest node touches, then smallest), else the one that
//! frees most bytes per touch, since each node touching an L3 buffer
//! stages it through L2 — each move recorded with its numbers. When
//! nothing more can move, the plan is a capacity error with the numbers and
//! what would help.

use super::buffers::{BufId, Discovery, Kind};
use super::{attempt, capacity_error, largest_staging, thousands, Attempt, PlanOptions};
use crate::diag::Hint;
use crate::error::Result;
use crate::target::Level;

/// Try the level assignment in `base`, relieving L2 until it fits.
pub(super) fn fit(
    base: &mut [crate::plan::Buffer],
    disc: &Discovery,
    opts: &PlanOptions,
    tiler: &[super::levels::Tiler],
    decisions: &mut Vec<String>,
) -> Result<Attempt> {
    let p = &opts.platform;
    let mut first: Option<Attempt> = None;
    let mut moved: Vec<BufId> = vec![];
    let access_count = |id: BufId| disc.steps.iter().filter(|s| s.operands.iter().any(|(b, _)| *b == id)).count();

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
                &a,
                Level::L3,
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
            let mut cands: Vec<BufId> = base
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
                // Each node touching an L3 buffer stages it, so prefer
                // buffers few nodes touch: one that covers the shortfall
                // alone (fewest touches, then smallest), else the one that
                // frees most bytes per touch.
                let mut freed = 0u64;
                while freed < short && !cands.is_empty() {
                    let need = short - freed;
                    let covering = cands
                        .iter()
                        .enumerate()
                        .filter(|(_, &id)| base[id].size >= need)
                        .min_by_key(|(_, &id)| (access_count(id), base[id].size, id))
                        .map(|(i, _)| i);
                    let pick = covering.unwrap_or_else(|| {
                        let score = |id: BufId| base[id].size / (access_count(id).max(1) as u64);
                        cands
                            .iter()
                            .enumerate()
                            .max_by(|(_, &x), (_, &y)| score(x).cmp(&score(y)).then(y.cmp(&x)))
                            .map(|(i, _)| i)
                            .unwrap_or(0)
                    });
                    let id = cands.swap_remove(pick);
                    freed += base[id].size;
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
                    first = Some(a);
                }
                continue;
            }
        }
        // L2 cannot be relieved any further.
        let shown = first.as_ref().unwrap_or(&a);
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
        if opts.test_data == Some(Level::L2) && shown.buffers.iter().any(|b| b.kind == Kind::Static) {
            hints.push(Hint::TestDataL3);
        }
        return Err(capacity_error(p, shown, Level::L2, extra, hints));
    }
}

/// Moves the static requests that may live in L3 (the harness's test data
/// and references) there, before any of the network's own buffers: they
/// cost the network nothing in L3. Whether anything moved.
fn move_movable_statics(
    base: &mut [crate::plan::Buffer],
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
