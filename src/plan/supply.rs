//! Weight supply (docs/architecture.md, "Memory planning"): how each weight's initial value reaches its
//! buffer. Decided per weight by where the weight lives and what fits,
//! never by platform name:
//!
//! - lives in L3 → `l3-hex`: loaded from `hex/<n>.hex` into its L3 buffer
//!   at Init; its initial-weight slot is NULL and the harness skips it;
//! - lives in L2 → `baked`: the buffer is an initialised static array
//!   (`.data`), no arena slot, no copy at Init; unless the level's image
//!   limit cannot take it, then
//! - `l3-staged`: the buffer is in the L2 arena, its initial value stays in
//!   an L3 hex file and is copied in at Init.
//!
//! Baking and staging cost the same L2 bytes at run time (the value is in
//! L2 either way); staging keeps the L2 image small at the price of a hex
//! copy in L3 and a copy at Init.
//!
//! Every weight gets exactly one supply. The skip-copy flag
//! (`TRAINING_SKIP_INITWEIGHT_COPY`) is set when no weight is copied at
//! Init.

use serde::Serialize;

use super::buffers::{BufId, Buffers, Kind, Placement};
use crate::target::Level;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Supply {
    #[serde(rename = "baked")]
    Baked,
    #[serde(rename = "l3-hex")]
    L3Hex,
    #[serde(rename = "l3-staged")]
    L3Staged,
}

impl Supply {
    pub fn name(self) -> &'static str {
        match self {
            Supply::Baked => "baked",
            Supply::L3Hex => "l3-hex",
            Supply::L3Staged => "l3-staged",
        }
    }
}

/// The supply decision for one weight.
#[derive(Clone, Debug, Serialize)]
pub struct WeightPlan {
    pub name: String,
    pub buffer: BufId,
    /// `param` (trainable), `frozen` or `constant`.
    pub kind: Kind,
    pub bytes: u64,
    pub level: Level,
    pub supply: Supply,
    pub reason: String,
    /// `hex/<n>.hex` holding the initial value (l3-hex, l3-staged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hex_index: Option<u32>,
}

/// Whether the harness's initial-weight copy loop can be compiled out.
#[derive(Clone, Debug, Serialize)]
pub struct SkipCopy {
    pub skip: bool,
    pub reason: String,
}

/// Decide every weight's supply and place baked weights and static
/// buffers of L2 as static arrays. `image_limit` bounds the bytes baked
/// into L2 (None: only the capacity does).
pub fn decide(buffers: &mut Buffers, image_limit: Option<u64>) -> (Vec<WeightPlan>, SkipCopy) {
    let weights: Vec<BufId> = buffers.iter().filter(|b| b.kind.is_weight()).map(|b| b.id).collect();
    let mut supply: Vec<(BufId, Supply)> = weights
        .iter()
        .map(|&w| (w, if buffers[w].level == Level::L3 { Supply::L3Hex } else { Supply::Baked }))
        .collect();

    // The L2 image: baked weights plus static buffers kept at L2.
    let statics_l2: u64 =
        buffers.iter().filter(|b| b.kind == Kind::Static && b.level == Level::L2).map(|b| b.size).sum();
    let baked_bytes = |s: &[(BufId, Supply)]| -> u64 {
        s.iter().filter(|(_, x)| *x == Supply::Baked).map(|(w, _)| buffers[*w].size).sum::<u64>() + statics_l2
    };
    let full_image = baked_bytes(&supply);
    let mut staged_note = None;
    if let Some(limit) = image_limit {
        // Stage the largest baked weights until the image fits.
        let mut order: Vec<usize> = (0..supply.len()).filter(|&i| supply[i].1 == Supply::Baked).collect();
        order.sort_by(|&a, &b| buffers[supply[b].0].size.cmp(&buffers[supply[a].0].size).then(a.cmp(&b)));
        let mut baked = full_image;
        for i in order {
            if baked <= limit {
                break;
            }
            baked -= buffers[supply[i].0].size;
            supply[i].1 = Supply::L3Staged;
        }
        if supply.iter().any(|(_, s)| *s == Supply::L3Staged) {
            staged_note = Some(format!(
                "baking every L2 weight would make the L2 image {full_image} B, over its limit of {limit} B"
            ));
        }
    }

    let mut hex = 0u32;
    let mut plans = Vec::with_capacity(weights.len());
    for (w, s) in supply {
        let b = &mut buffers[w];
        let hex_index = (s != Supply::Baked).then(|| {
            hex += 1;
            hex - 1
        });
        let reason = match s {
            Supply::L3Hex => format!(
                "lives in L3 ({}); loaded from {} into its L3 buffer at Init; its initial-weight slot is NULL",
                b.level_reason,
                l3_file(hex_index.unwrap_or(0))
            ),
            Supply::Baked => format!(
                "lives in L2 ({}); its buffer is an initialised static array in L2: no arena slot, no copy at Init",
                b.level_reason
            ),
            Supply::L3Staged => format!(
                "lives in L2 ({}), in the arena; {}: its initial value stays in {} (L3) and is copied in at Init",
                b.level_reason,
                staged_note.as_deref().unwrap_or("the L2 image must stay small"),
                l3_file(hex_index.unwrap_or(0))
            ),
        };
        b.placement = if s == Supply::Baked { Placement::Static } else { Placement::Unplaced };
        plans.push(WeightPlan {
            name: b.name.clone(),
            buffer: w,
            kind: b.kind,
            bytes: b.bytes,
            level: b.level,
            supply: s,
            reason,
            hex_index,
        });
    }
    // Static buffers at L2 are baked too; at L3 they are hex-loaded into
    // the arena.
    for b in buffers.iter_mut().filter(|b| b.kind == Kind::Static) {
        b.placement = if b.level == Level::L2 { Placement::Static } else { Placement::Unplaced };
    }

    let staged = plans.iter().filter(|p| p.supply == Supply::L3Staged).count();
    let hexed = plans.iter().filter(|p| p.supply == Supply::L3Hex).count();
    let skip = SkipCopy {
        skip: staged == 0,
        reason: if plans.is_empty() {
            "the model has no weights".into()
        } else if staged > 0 {
            format!("{staged} weight(s) are l3-staged: their initial values are copied from L3 at Init")
        } else if hexed == plans.len() {
            "every weight is hex-loaded into its L3 buffer at Init".into()
        } else if hexed == 0 {
            "every weight is baked: its buffer starts initialised".into()
        } else {
            "no weight is copied at Init: each is baked or hex-loaded".into()
        },
    };
    (plans, skip)
}

/// Where an L3-supplied weight's initial value is: segment `n` of the
/// packed image a build writes, or its own file with `--hex-files`.
pub fn l3_file(n: u32) -> String {
    format!("segment {n} of hex/l3.bin (hex/{n}.hex with build --hex-files)")
}

/// [`l3_file`] for any segment, where one line speaks for many weights.
pub fn l3_file_any() -> String {
    "its segment of hex/l3.bin (hex/<n>.hex with build --hex-files)".to_string()
}
