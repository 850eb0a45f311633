//! The memory-plan flags shared by `build`, `test`, `inspect` and
//! `report`, declared once.

use crate::error::{Error, Result};
use crate::plan::{Level, PlanOptions};

const HEADING: &str = "Memory plan";

#[derive(clap::Args, Clone, Debug, Default)]
pub struct PlanArgs {
    /// L1 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES", help_heading = HEADING)]
    pub l1: Option<u64>,
    /// L2 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES", help_heading = HEADING)]
    pub l2: Option<u64>,
    /// L3 capacity in bytes (overrides the platform's).
    #[arg(long, value_name = "BYTES", help_heading = HEADING)]
    pub l3: Option<u64>,
    /// Most bytes of weights baked into the L2 image; larger weights are
    /// l3-staged (default: the platform's L2 image limit).
    #[arg(long = "l2-image", value_name = "BYTES", help_heading = HEADING)]
    pub l2_image: Option<u64>,
    /// Where the harness keeps its test data and references, L2 or L3
    /// (default: L2, moved to L3 when L2 is short).
    #[arg(long = "test-data", value_name = "LEVEL", help_heading = HEADING)]
    pub test_data: Option<String>,
    /// Plan without L1 tiles: each kernel reads and writes whole operands
    /// copied around it (slower; for comparison and bisecting).
    #[arg(long, help_heading = HEADING)]
    pub no_tiling: bool,
    /// Recompute forward values for the backward pass where that lowers
    /// the peak (auto, the default) or keep every one (off).
    #[arg(long, value_name = "MODE", help_heading = HEADING)]
    pub recompute: Option<String>,
    /// Most estimated cost recompute may add, in percent of the step's
    /// (default: 10).
    #[arg(long = "recompute-budget", value_name = "PCT", help_heading = HEADING)]
    pub recompute_budget: Option<u32>,
}

impl PlanArgs {
    pub fn capacities(&self) -> [Option<u64>; 3] {
        [self.l1, self.l2, self.l3]
    }

    /// `--test-data` as a level: L2 or L3.
    pub fn test_data_level(&self) -> Result<Option<Level>> {
        self.test_data.as_deref().map(test_data_level).transpose()
    }

    /// The flags that shape a plan, as typed: for commands where a plan is
    /// optional, naming what needs `--platform`.
    pub fn given(&self) -> Vec<&'static str> {
        let set = [
            ("--l1", self.l1.is_some()),
            ("--l2", self.l2.is_some()),
            ("--l3", self.l3.is_some()),
            ("--l2-image", self.l2_image.is_some()),
            ("--test-data", self.test_data.is_some()),
            ("--no-tiling", self.no_tiling),
            ("--recompute", self.recompute.is_some()),
            ("--recompute-budget", self.recompute_budget.is_some()),
        ];
        set.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect()
    }

    /// The options for one platform at one default level (L2 when `None`).
    pub fn options(&self, platform: &str, default_mem: Option<&str>) -> Result<PlanOptions> {
        let level = default_mem.unwrap_or("L2");
        if !matches!(Level::parse(level), Some(Level::L2 | Level::L3)) {
            return Err(Error::Usage(format!("--default-mem {level}: the default memory level must be L2 or L3")));
        }
        let mut o = PlanOptions::named(platform, level, self.capacities())?;
        o.l2_image_limit = self.l2_image;
        o.test_data = self.test_data_level()?;
        o.tiling = !self.no_tiling;
        (o.recompute, o.recompute_budget) = self.recompute()?;
        Ok(o)
    }

    /// `--recompute` and `--recompute-budget`, checked.
    pub fn recompute(&self) -> Result<(crate::plan::recompute::Mode, u32)> {
        let mode = self.recompute.as_deref().map_or(Ok(Default::default()), crate::plan::recompute::Mode::parse)?;
        let budget = self.recompute_budget.unwrap_or(10);
        if budget > 1000 {
            return Err(Error::Usage(format!(
                "--recompute-budget {budget}: the budget is a percentage of the step's cost, at most 1000"
            )));
        }
        Ok((mode, budget))
    }
}

/// `--test-data L2|L3`: where the harness keeps its test data.
fn test_data_level(s: &str) -> Result<Level> {
    Level::parse(s)
        .filter(|l| *l != Level::L1)
        .ok_or_else(|| Error::Usage(format!("--test-data {s}: the test data lives in L2 or L3")))
}
