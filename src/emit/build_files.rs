//! The build files: `Makefile.host` for the host emulation and, per chip,
//! the SDK's (`Makefile` for the PULP SDK, `CMakeLists.txt` for the GAP
//! SDK): the sources, the runtime files the kernel calls need, the heap
//! sizes of the emulation and the flash image's files.

use super::network::Network;
use super::weights::Weights;
use super::{render, Common, L3_IMAGE, TEST_DATA_IMAGE};
use crate::error::Result;
use crate::plan::{self, Level};

#[derive(Clone, Debug, Default)]
pub struct BuildFiles {
    pub sources: Vec<String>,
    /// The sources of `demo` (the second client of `dg_model.h`) but main.c's.
    pub demo_sources: Vec<String>,
    pub runtime_sources: Vec<String>,
    pub l1_heap: u64,
    pub l2_heap: u64,
    pub l3_heap: u64,
    /// Files put into the flash's read-only file system.
    pub readfs: Vec<String>,
}

pub(super) fn build(c: &Common, plan: &plan::Plan, net: &Network, w: &Weights, test_image: bool) -> Result<BuildFiles> {
    // main.c is a client of dg_model.h, as demo.c is.
    let mut sources = vec!["main.c".to_string(), format!("{}.c", c.net), "Weights.c".to_string()];
    if c.training {
        sources.extend(["OptimizerNetwork.c", "PredictNetwork.c"].map(String::from));
    }
    sources.push("dg_model.c".into());
    let demo_sources = vec!["demo.c".to_string()];
    // A tiled node's calls are in its tile loop.
    let nodes = net.main_nodes.iter().chain(&net.opt_nodes).chain(&net.predict_nodes);
    let calls = nodes.flat_map(|n| n.calls.iter().chain(n.tiled.iter().flat_map(|t| &t.calls)));
    let runtime_sources = render::runtime_sources(calls.map(|c| c.func.as_str()))?;
    let budget = |l: Level| {
        let lp = plan.level(l);
        lp.capacity.saturating_sub(lp.reserved_bytes)
    };
    let mut readfs: Vec<String> = if w.segments.is_empty() {
        vec![]
    } else if w.hex_files {
        w.hex.iter().map(|(p, _)| p.display().to_string()).collect()
    } else {
        vec![format!("hex/{L3_IMAGE}")]
    };
    if test_image {
        readfs.push(format!("hex/{TEST_DATA_IMAGE}"));
    }
    Ok(BuildFiles {
        sources,
        demo_sources,
        runtime_sources,
        l1_heap: budget(Level::L1),
        l2_heap: budget(Level::L2).saturating_sub(plan.level(Level::L2).static_bytes),
        l3_heap: budget(Level::L3),
        readfs,
    })
}
