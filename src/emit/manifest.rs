//! `deploygen.json`: what a generated project promises its test runner
//! (which model, platform and level it is for, how many values its
//! harness compares and why others are not), and where each weight and
//! the test data went. One type for the file: emission writes it, `verify`
//! (and `build --force`) read it back. Fields `verify` does not need may
//! be absent when read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::harness::Harness;
use super::model_api::ModelApi;
use super::weights::Weights;
use super::{Common, L3_IMAGE, TEST_DATA_IMAGE};
use crate::plan::{self, Level};

/// The manifest's file name in the project folder.
pub const FILE: &str = "deploygen.json";

/// What a generated project promises its test runner (`deploygen.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub model: String,
    pub platform: String,
    pub default_mem: String,
    /// "training" | "inference".
    pub kind: String,
    /// Values the harness must compare: loss references plus the elements
    /// of every compared tensor reference.
    pub expected_compared: u64,
    pub loss_refs: u64,
    /// Absolute tolerance (`atol`).
    pub tolerance: f32,
    /// Relative tolerance: a float value passes when `|computed - ref| <=
    /// tolerance + rtol * |ref|`.
    #[serde(default)]
    pub rtol: f32,
    /// Compared tensors: name and element count.
    #[serde(default)]
    pub compared: Vec<Compared>,
    /// References or outputs not compared, with why.
    #[serde(default)]
    pub not_compared: Vec<NotCompared>,
    pub steps: u64,
    pub accum: u64,
    /// Bytes per level: arena, and static data outside it.
    #[serde(default)]
    pub memory: BTreeMap<String, LevelBytes>,
    /// Where each weight went.
    #[serde(default)]
    pub weights: Vec<WeightSupply>,
    #[serde(default)]
    pub l3_image: Option<String>,
    #[serde(default)]
    pub l3_image_bytes: u64,
    /// Where the harness keeps its test data and references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_data: Option<TestDataPlace>,
    /// Every file deploygen wrote into the project (but this manifest),
    /// with its SHA-256: what `build --force` may replace.
    #[serde(default)]
    pub files: Vec<WrittenFile>,
    /// The application API of the project (`dg_model.h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_api: Option<ModelApiSummary>,
}

impl Manifest {
    /// Whether the harness has nothing to check: no loss and no tensor
    /// reference. A project whose every reference is a zero-size tensor
    /// compares 0 values but still checks each one's line.
    pub fn compares_nothing(&self) -> bool {
        self.expected_compared == 0 && self.compared.is_empty()
    }
}

/// What `dg_model.h` offers: its inputs and predict outputs by index,
/// the checkpoint's size (0 in an inference project), and what `demo.c`
/// compares.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelApiSummary {
    /// Inputs of `dg_model_predict` and its outputs.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// Inputs of `dg_model_train_step` (training projects).
    #[serde(default)]
    pub train_inputs: Vec<String>,
    /// Samples per `dg_model_predict`.
    #[serde(default)]
    pub predict_batch: u64,
    /// Why `dg_model_predict` is not offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_predict: Option<String>,
    pub checkpoint_bytes: u64,
    pub checkpoint_layout: String,
    /// Values `demo.c` compares with `predict.npz`.
    pub demo_compared: u64,
}

/// One file of the project as deploygen wrote it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WrittenFile {
    pub path: String,
    pub sha256: String,
}

impl WrittenFile {
    pub fn of(path: &std::path::Path, data: &[u8]) -> WrittenFile {
        use sha2::Digest;
        let sha256 = sha2::Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect();
        WrittenFile { path: path.to_string_lossy().into_owned(), sha256 }
    }
}

/// The harness's test data and references: bytes, level, and the image
/// file it is loaded from when in L3.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TestDataPlace {
    pub bytes: u64,
    pub level: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Compared {
    pub name: String,
    pub values: u64,
    /// Compared exactly: an integer tensor, or an f32 one whose reference
    /// held integers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NotCompared {
    pub name: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LevelBytes {
    pub arena: u64,
    pub static_bytes: u64,
    pub capacity: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WeightSupply {
    pub name: String,
    pub bytes: u64,
    pub level: String,
    pub supply: String,
}

/// The manifest of a project with these parts.
pub(super) fn build(c: &Common, plan: &plan::Plan, w: &Weights, h: &Harness, api: Option<&ModelApi>) -> Manifest {
    let memory = Level::ALL
        .into_iter()
        .map(|l| {
            let lp = plan.level(l);
            (l.to_string(), LevelBytes { arena: lp.arena_bytes, static_bytes: lp.static_bytes, capacity: lp.capacity })
        })
        .collect();
    let has_image = !w.segments.is_empty();
    Manifest {
        model: c.model.clone(),
        platform: c.platform.clone(),
        default_mem: c.default_mem.clone(),
        kind: if c.training { "training" } else { "inference" }.into(),
        expected_compared: h.expected,
        loss_refs: h.loss_refs as u64,
        tolerance: h.tolerance,
        rtol: h.rtol,
        compared: h.compared.clone(),
        not_compared: h.not_compared_raw.clone(),
        steps: h.steps as u64,
        accum: h.accum as u64,
        memory,
        weights: w.supplies.clone(),
        l3_image: (has_image && !w.hex_files).then(|| format!("hex/{L3_IMAGE}")),
        l3_image_bytes: if has_image { w.image.len() as u64 } else { 0 },
        test_data: plan.buffers.iter().find(|b| b.kind == plan::Kind::Static && b.name == plan::TEST_DATA).map(|b| {
            TestDataPlace {
                bytes: b.bytes,
                level: b.level.to_string(),
                image: (b.level == Level::L3).then(|| format!("hex/{TEST_DATA_IMAGE}")),
            }
        }),
        files: vec![],
        model_api: api.map(|a| ModelApiSummary {
            inputs: a.input_names.clone(),
            outputs: a.output_names.clone(),
            train_inputs: a.train_input_names.clone(),
            predict_batch: a.predict_batch as u64,
            no_predict: a.no_predict.clone(),
            checkpoint_bytes: a.checkpoint_bytes,
            checkpoint_layout: a.layout_hash.clone(),
            demo_compared: a.demo_expected,
        }),
    }
}
