//! `deploygen test --bisect`: for a case whose outputs are wrong, find the
//! first node whose output differs. The case is rebuilt with
//! `-DDG_DUMP_TENSORS`, so every node's f32 outputs are appended to a dump
//! file as the network runs (`DG_DUMP` in the generated code,
//! `runtime/mem`); `tools/make_refs.py --intermediates` computes every
//! value of the same graph's first pass with onnxruntime; the dumps are
//! compared in schedule order against those references, first pass only.
//!
//! deploygen never computes references itself: without Python and
//! onnxruntime this says so and what to install.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run_case, tools, Case, StageError};
use crate::bind::npz;

/// What computing the references needs, said when it is missing.
const NEED: &str = "bisecting needs Python with onnxruntime (tools/requirements.txt; DEPLOYGEN_PYTHON names the \
                    interpreter, e.g. ~/.venvs/deploygen-tools/bin/python)";

/// Why a case could not be bisected.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error("the tensor dump is cut off at byte {at} of {len}")]
    CutOff { at: usize, len: usize },
    /// The references (or one of them) cannot be read.
    #[error("{0}")]
    References(#[source] Box<crate::error::Error>),
    #[error("cannot create a temp folder: {0}")]
    TempDir(#[source] std::io::Error),
    /// The rebuilt case left no dump: why, and how the case ended.
    #[error("the rebuilt case wrote no tensor dump ({source}); it ended with {class}: {message}")]
    NoDump { source: std::io::Error, class: &'static str, message: String },
    #[error("{NEED}: no DEPLOYGEN_PYTHON and no python3 on PATH")]
    NoPython,
    #[error("{NEED}: make_refs.py not found in {} (--tools DIR or {})", .0.display(), tools::ENV)]
    NoScript(PathBuf),
    #[error("{NEED}: cannot run {}: {source}", python.display())]
    CannotRun { python: PathBuf, source: std::io::Error },
    /// `make_refs.py` says what it lacks (its exit code 2): its stderr.
    #[error("{NEED}: {0}")]
    Lacking(String),
    /// `make_refs.py` failed otherwise: its stderr.
    #[error("onnxruntime could not compute the references: {0}")]
    Onnxruntime(String),
}

impl From<crate::error::Error> for BisectError {
    fn from(e: crate::error::Error) -> Self {
        BisectError::References(Box::new(e))
    }
}

/// One dumped tensor: its name and values, in the order the network
/// wrote them.
#[derive(Clone, Debug, PartialEq)]
pub struct Dumped {
    pub name: String,
    pub values: Vec<f32>,
}

/// Read a dump file: records of u32 name length, name, u32 n, n floats.
pub fn read_dumps(bytes: &[u8]) -> Result<Vec<Dumped>, BisectError> {
    let mut out = vec![];
    let mut at = 0usize;
    let u32_at = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?)) };
    while at < bytes.len() {
        let bad = || BisectError::CutOff { at, len: bytes.len() };
        let len = u32_at(at).ok_or_else(bad)? as usize;
        let name = bytes.get(at + 4..at + 4 + len).ok_or_else(bad)?;
        let n = u32_at(at + 4 + len).ok_or_else(bad)? as usize;
        let start = at + 8 + len;
        let data = bytes.get(start..start + n * 4).ok_or_else(bad)?;
        let values = data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        out.push(Dumped { name: String::from_utf8_lossy(name).into_owned(), values });
        at = start + n * 4;
    }
    Ok(out)
}

/// What bisecting found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// Tensors compared and matching, in order, before the first
    /// differing one.
    pub matching: Vec<String>,
    /// The first differing tensor and what differs about it.
    pub first_bad: Option<(String, String)>,
    /// Dumped tensors without a reference (onnxruntime does not compute
    /// them under that name).
    pub unreferenced: Vec<String>,
}

/// Compare dumps (first occurrence of each name: the first pass) with
/// references, in order, up to the first tensor that differs; an error
/// when a reference cannot be read.
/// A value matches when `|computed - ref| <= tol + rtol * |ref|`.
pub fn compare(dumps: &[Dumped], refs: &npz::Npz, tol: f32, rtol: f32) -> Result<Found, BisectError> {
    // an infinite reference gets no infinite bound: only an equal value matches
    let bound = |r: f32| if r.is_finite() { tol + rtol * r.abs() } else { tol };
    let mut found = Found::default();
    let mut seen = BTreeSet::new();
    for d in dumps.iter().filter(|d| seen.insert(d.name.clone())) {
        let Some(r) = refs.get(&d.name)?.and_then(|t| t.to_f32()) else {
            found.unreferenced.push(d.name.clone());
            continue;
        };
        if r.len() != d.values.len() {
            let why = format!("{} values computed, the reference has {}", d.values.len(), r.len());
            found.first_bad = Some((d.name.clone(), why));
            return Ok(found);
        }
        let bad: Vec<usize> =
            (0..r.len()).filter(|&i| !(d.values[i] == r[i] || (d.values[i] - r[i]).abs() <= bound(r[i]))).collect();
        if let Some(&i) = bad.first() {
            let why = format!(
                "{} of {} values differ beyond {tol} + {rtol} x |ref| (first [{i}]: computed {}, reference {})",
                bad.len(),
                r.len(),
                d.values[i],
                r[i]
            );
            found.first_bad = Some((d.name.clone(), why));
            return Ok(found);
        }
        found.matching.push(d.name.clone());
    }
    Ok(found)
}

/// The node that writes tensor `name` in the case's model: `'node' (Op)`.
fn producer(case: &Case, name: &str) -> String {
    let Ok(m) = crate::load_with(&case.model, crate::import::UnknownAttrs::Warn) else { return "?".into() };
    let g = &m.graph;
    g.id(name)
        .and_then(|t| g.producer(t))
        .map(|n| g.node(n))
        .map_or_else(|| "?".into(), |n| format!("node '{}' ({})", n.name, n.op))
}

/// Bisect one case: rebuild it with tensor dumps (generated by `gen`),
/// compute references, and report the first node whose output differs.
pub fn bisect<E>(case: &Case, gen: &(dyn Fn(&Case, &Path) -> Result<(), E> + Sync)) -> Result<String, BisectError>
where
    E: Into<StageError>,
{
    let work = tempfile::Builder::new().prefix("deploygen-bisect-").tempdir().map_err(BisectError::TempDir)?;
    let refs_file = work.path().join("intermediates.npz");
    references(&case.model, &refs_file)?;
    let dump = work.path().join("dumps.bin");
    let dumping = Case { dump: Some(dump.clone()), keep: false, ..case.clone() };
    let o = run_case(&dumping, gen);
    let bytes = std::fs::read(&dump).map_err(|source| BisectError::NoDump {
        source,
        class: o.class(),
        message: o.message.clone(),
    })?;
    let dumps = read_dumps(&bytes)?;
    let refs = npz::read(&refs_file)?;
    let tol = o.tolerance.unwrap_or(crate::emit::DEFAULT_TOLERANCE);
    let rtol = o.rtol.unwrap_or(crate::emit::DEFAULT_RTOL);
    let found = compare(&dumps, &refs, tol, rtol)?;
    let mut s = String::new();
    match &found.first_bad {
        Some((t, why)) => s.push_str(&format!(
            "first differing node: {} writes '{t}': {why}; the {} output(s) before it match\n",
            producer(case, t),
            found.matching.len()
        )),
        None => s.push_str(&format!(
            "no node output differs from onnxruntime's first pass ({} compared): the difference comes later \
             (a later mini-batch, the optimizer step) or from the comparison itself\n",
            found.matching.len()
        )),
    }
    if !found.unreferenced.is_empty() {
        s.push_str(&format!(
            "not compared (no onnxruntime value under that name): {}\n",
            found.unreferenced.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(s)
}

/// `tools/make_refs.py MODEL --intermediates OUT` with the pinned Python.
fn references(model: &Path, out: &Path) -> Result<(), BisectError> {
    let py = tools::python().ok_or(BisectError::NoPython)?;
    let script = tools::script().ok_or_else(|| BisectError::NoScript(tools::dir()))?;
    let o = Command::new(&py)
        .arg(&script)
        .arg(model)
        .arg("--intermediates")
        .arg(out)
        .output()
        .map_err(|source| BisectError::CannotRun { python: py.clone(), source })?;
    let err = String::from_utf8_lossy(&o.stderr).trim().to_string();
    match o.status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(BisectError::Lacking(err)),
        _ => Err(BisectError::Onnxruntime(err)),
    }
}
