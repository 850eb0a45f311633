//! `deploygen triage`: the missing-input training triage (docs/triage.md)
//! as one workflow, for one model per invocation.
//!
//! ```text
//! resolve   TEST-NAME → model folder + status key        (resolve.rs)
//! gate      the training check's findings: missing_targets, decoder_inputs,
//!           bn_single_value; anything else stops, nothing changed
//! reproduce the host run fails for the same canonical reason  (runner.rs)
//! fix       per flavor, in a scratch copy                  (fix.rs, rebatch.rs)
//! refs      tools/make_refs.py when asked and available     (refs.rs)
//! re-run    training (every variant that reproduced) and inference: the
//!           model beside it, or one derived by dropping the loss and the
//!           backward part (inference.rs, derive.rs); inference
//!           regressing reverts the fix
//! write     the fix next to the original (or over it with --in-place),
//!           a derived inference variant as `<name>.derived/`, and the
//!           status entries                             (verify/status.rs)
//! ```

pub mod derive;
pub mod fix;
pub mod inference;
pub mod rebatch;
pub mod refs;
mod rerun;
pub mod resolve;
pub mod runner;
mod text;

use rerun::*;
pub use text::text;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bind::npz::Loaded;
use crate::bind::{self, BindOptions};
use crate::diag::{Finding, TriageFlavor};
use crate::error::{Error, Result};
use crate::ir::Model;
use crate::verify::status::{self, Entry, Key, Status, StatusTable};
use crate::verify::{Kind, Stage};
pub use runner::{CaseOutcome, RunCase};

/// The reason recorded when a fixed run mismatches references computed
/// for the original data.
pub const STALE_REFS_REASON: &str = "references were computed for other test data; regenerate with tools/make_refs.py";
pub const FIXED_INPUTS: &str = "inputs.triage.npz";
pub const FIXED_OUTPUTS: &str = "outputs.triage.npz";

#[derive(Clone, Debug)]
pub struct Options {
    /// Repository root: `status.toml`, `models/`, `tests/fixtures/`.
    pub root: PathBuf,
    pub name: String,
    pub fix: bool,
    pub in_place: bool,
    pub refs: bool,
    /// The status table to edit (`--status FILE`); `None`: `<root>/status.toml`
    /// when it exists (none is created unasked).
    pub status: Option<PathBuf>,
}

/// One row of the input dump: what the graph needs, what the data holds.
#[derive(Clone, Debug, Serialize)]
pub struct InputRow {
    pub input: String,
    pub needs: String,
    pub key: Option<String>,
    pub holds: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FixReport {
    pub attempted: bool,
    pub changes: Vec<String>,
    /// Files written (empty when the fix was reverted or not attempted).
    pub written: Vec<PathBuf>,
    pub refs: Option<String>,
    pub not_fixable: Option<String>,
    pub reverted: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub key: Key,
    /// The model folder run; for a derived inference variant, the
    /// training model folder it is derived from.
    pub dir: PathBuf,
    pub before: CaseOutcome,
    pub after: Option<CaseOutcome>,
    /// Set for an inference variant derived from the training model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived: Option<DerivedVariant>,
}

/// An inference variant derived by dropping the loss and the backward part.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DerivedVariant {
    /// The forward outputs it computes (its graph outputs).
    pub outputs: Vec<String>,
    /// What the derivation kept and dropped.
    pub changes: Vec<String>,
    /// The run before the fix; `None` when the variant could not be derived.
    pub before: Option<DerivedSide>,
    pub after: Option<DerivedSide>,
    /// `<name>.derived/`, when the fix was kept.
    pub written: Option<PathBuf>,
}

/// References of one run of a derived variant.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DerivedSide {
    /// Where the references came from; `None`: there were none.
    pub references: Option<String>,
    /// Forward outputs without a reference: nothing was compared for them.
    pub unreferenced: Vec<String>,
    pub notes: Vec<String>,
}

impl DerivedSide {
    fn of(run: &inference::DerivedRun) -> DerivedSide {
        DerivedSide {
            references: run.references.clone(),
            unreferenced: run.derived.unreferenced(),
            notes: run.notes.clone(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub name: String,
    pub model: String,
    pub key: String,
    pub dir: PathBuf,
    pub resolved_how: String,
    pub prior: Option<Entry>,
    pub flavor: Option<String>,
    pub findings: Vec<Finding>,
    pub inputs: Vec<InputRow>,
    pub unused_keys: Vec<String>,
    /// Training variants (this key first) and their outcomes.
    pub training: Vec<Variant>,
    pub inference: Option<Variant>,
    pub inference_note: Option<String>,
    pub fix: FixReport,
    pub status_written: Vec<(Key, Entry)>,
    /// The status table the entries were written to; `None` when none was.
    pub status_file: Option<PathBuf>,
    pub human: Vec<String>,
    pub outcome: String,
    pub exit_code: i32,
}

/// What the static check says about a model folder.
struct Diagnosis {
    model: Model,
    npz: Loaded,
    binding: Option<bind::Binding>,
    findings: Vec<Finding>,
    /// positions → the input their array belongs to (swapped slots).
    misplaced: Option<std::collections::BTreeMap<usize, usize>>,
}

fn diagnose(dir: &Path) -> Result<Diagnosis> {
    let model = crate::load(dir)?;
    let path = bind::inputs_path(&model)?.ok_or_else(|| {
        Error::Usage(format!("{} has no {}: no test data to triage", dir.display(), bind::INPUTS_FILE))
    })?;
    let npz = bind::npz::read_all(&path)?;
    match bind::bind(&model, &BindOptions::default()) {
        Ok(b) => {
            let findings = crate::check::findings(&model, &b);
            Ok(Diagnosis { model, npz, binding: Some(b), findings, misplaced: None })
        }
        Err(e @ Error::Binding { .. }) => {
            let Some(map) = fix::misplaced_positions(&model, &npz) else { return Err(e) };
            let inputs = fix::positioned(&model);
            let detail = e.to_string();
            let mut targets: Vec<usize> = map.values().copied().collect();
            targets.sort_unstable();
            let findings = targets
                .into_iter()
                .map(|q| Finding {
                    flavor: TriageFlavor::DecoderInputs,
                    reason: format!(
                        "graph input '{}' is present only under a position that binds it to a different input",
                        inputs[q].name
                    ),
                    detail: detail.clone(),
                    input: Some(inputs[q].name.clone()),
                    node: None,
                    shape: None,
                    batch2_fixes: None,
                    fix: "re-key inputs.npz by name (the named layout)".into(),
                })
                .collect();
            Ok(Diagnosis { model, npz, binding: None, findings, misplaced: Some(map) })
        }
        Err(e) => Err(e),
    }
}

fn input_rows(d: &Diagnosis) -> (Vec<InputRow>, Vec<String>) {
    let inputs = fix::positioned(&d.model);
    let mut used = Vec::new();
    let rows = inputs
        .iter()
        .enumerate()
        .map(|(p, x)| {
            let key = [x.name.clone(), format!("arr_{p:04}")].into_iter().find(|k| d.npz.get(k).is_some());
            if let Some(k) = &key {
                used.push(k.clone());
            }
            InputRow {
                input: x.name.clone(),
                needs: x.ty.to_string(),
                holds: match key.as_ref().and_then(|k| d.npz.get(k)) {
                    Some(t) => Some(t.ty().to_string()),
                    // A derived step's weight starts from its initializer.
                    None if d.model.roles.lazy_reset.as_deref() == Some(x.name.as_str()) => {
                        Some("(written by the harness)".into())
                    }
                    None => d.model.initial.get(&x.name).map(|t| format!("{} (initializer)", t.ty())),
                },
                key,
            }
        })
        .collect();
    let unused = d
        .npz
        .keys()
        .filter(|k| !used.iter().any(|u| u == k) && !k.starts_with("mb") && !k.starts_with("meta_"))
        .map(str::to_string)
        .collect();
    (rows, unused)
}

/// Does a run fail for the finding's canonical reason? A misplaced
/// positional slot fails binding before any check runs: its run names the
/// slots as the binding error the finding carries does.
fn same_reason(o: &CaseOutcome, f: &Finding) -> bool {
    !o.passed()
        && (o.message.contains(&f.reason)
            || (f.flavor == TriageFlavor::DecoderInputs && o.message.contains(first_line(&f.detail))))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The stage a run failed at, for its status entry; `or` when it names none.
fn stage_of(o: &CaseOutcome, or: Stage) -> Stage {
    o.stage.as_deref().and_then(Stage::parse).unwrap_or(or)
}

/// Copy the regular files of `from` into a new folder `to`.
pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::write(to, e))?;
    for e in std::fs::read_dir(from).map_err(|e| Error::io(from, e))? {
        let e = e.map_err(|e| Error::io(from, e))?;
        if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            std::fs::copy(e.path(), to.join(e.file_name())).map_err(|err| Error::write(to.join(e.file_name()), err))?;
        }
    }
    Ok(())
}

/// A new scratch folder, created exclusively under an unpredictable name:
/// removing it later removes only what this process made.
fn scratch_dir(model: &str) -> Result<PathBuf> {
    let prefix: String =
        model.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    tempfile::Builder::new()
        .prefix(&format!("deploygen-triage-{prefix}-"))
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(|e| Error::write(std::env::temp_dir(), e))
}

fn write_npz(path: &Path, arrays: &fix::Arrays) -> Result<()> {
    let refs: Vec<(&str, &crate::ir::TensorData)> = arrays.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let bytes =
        bind::npz::write_npz(&refs).map_err(|e| Error::Npz { path: path.into(), key: None, detail: e.to_string() })?;
    crate::files::write(path, &bytes)
}

/// What the fix is, before anything is run.
enum Plan {
    Data { arrays: fix::Arrays, changes: Vec<String> },
    Rebatch { arrays: fix::Arrays, changes: Vec<String>, inputs: Vec<String> },
    NotFixable(String),
}

fn plan_fix(d: &Diagnosis, flavor: TriageFlavor) -> Plan {
    let of_flavor: Vec<&Finding> = d.findings.iter().filter(|f| f.flavor == flavor).collect();
    let data = |f: fix::Fix| match f {
        fix::Fix::Data { arrays, changes } => Plan::Data { arrays, changes },
        fix::Fix::NotFixable(why) => Plan::NotFixable(why),
    };
    match flavor {
        TriageFlavor::MissingTargets => match &d.binding {
            Some(b) => data(fix::targets(&d.model, b, &d.npz, &of_flavor)),
            None => Plan::NotFixable("the test data does not bind".into()),
        },
        TriageFlavor::DecoderInputs => match (&d.misplaced, &d.binding) {
            (Some(map), _) => data(fix::rekey_positions(&d.model, &d.npz, map)),
            (None, Some(b)) => data(fix::rekey_missing(&d.model, b, &d.npz, &of_flavor)),
            (None, None) => Plan::NotFixable("the test data does not bind".into()),
        },
        TriageFlavor::BnSingleValue => {
            if let Some(f) = of_flavor.iter().find(|f| f.batch2_fixes != Some(true)) {
                return Plan::NotFixable(format!("not fixable by batching: {}", f.detail));
            }
            let Some(b) = &d.binding else { return Plan::NotFixable("the test data does not bind".into()) };
            let inputs: Vec<String> = b
                .slots
                .iter()
                .filter(|s| matches!(s.role, crate::ir::Role::Data | crate::ir::Role::Labels))
                .filter(|s| s.shape.first() == Some(&1))
                .map(|s| s.input.clone())
                .collect();
            let (arrays, changes) = fix::repeat_batch(b, &d.npz);
            Plan::Rebatch { arrays, changes, inputs }
        }
    }
}

/// Run the workflow. Errors are the exit-2 cases (bad input, unresolvable
/// name, not a missing-input flavor), with nothing changed.
pub fn run(opts: &Options, run_case: &RunCase<'_>) -> Result<Report> {
    let table_path = opts.status.clone().unwrap_or_else(|| opts.root.join(status::FILE));
    let mut table = StatusTable::open(&table_path)?;
    let writable = opts.status.is_some() || table_path.is_file();
    let r = resolve::resolve(&opts.root, &opts.name, &table)?;
    let key = r.key.clone();
    let prior = table.get(&key.to_string()).cloned();

    let d = gate(&r.dir, &key)?;
    let mut report = Report::new(opts, &r, prior.clone(), &d);
    let before = run_case(&r.dir, &key.platform, key.level.name());
    let Some(first) = d.findings.first() else {
        return nothing_missing(report, &key, &r.dir, before);
    };
    let failure =
        Failure { flavor: first.flavor, reason: first.reason.clone(), seen: first_line(&first.detail).to_string() };
    report.flavor = Some(failure.flavor.name().to_string());
    note_flavors(&mut report, &d, failure.flavor);

    // Reproduce, for this key and every other training variant of the model.
    if !same_reason(&before, first) {
        return not_reproduced(report, &key, &r.dir, before, &failure);
    }
    report.training.push(Variant { key: key.clone(), dir: r.dir.clone(), before, after: None, derived: None });
    other_training_variants(&mut report, &table, &r.dir, first, run_case);
    let dest = inference::derived_dir(&r.dir);
    let ictx = inference::Ctx { make_refs: opts.refs, dest: &dest };
    let derived_before = inference_variant(&mut report, &ictx, &r.dir, &d, run_case);
    let done = Done { writable, dest: &dest };

    if !opts.fix {
        failure.xfail_all(&mut report, &mut table, "reproduced; recorded as a known failure (no --fix)")?;
        return done.finish(report, &table);
    }

    // Fix, in a scratch copy.
    let (arrays, changes, rebatch_inputs) = match plan_fix(&d, failure.flavor) {
        Plan::NotFixable(why) => {
            report.fix.not_fixable = Some(why.clone());
            report.human.push(format!("no test-data fix: {why}"));
            failure.xfail_all(&mut report, &mut table, "reproduced; no test-data fix applies")?;
            report.exit_code = 1;
            return done.finish(report, &table);
        }
        Plan::Data { arrays, changes } => (arrays, changes, None),
        Plan::Rebatch { arrays, changes, inputs } => (arrays, changes, Some(inputs)),
    };
    report.fix.attempted = true;
    report.fix.changes = changes;
    let scratch = scratch_dir(&key.model)?;
    let fixing = Fixing { opts, d: &d, arrays: &arrays, rebatch_inputs: rebatch_inputs.as_deref() };
    let inf = InferenceCtx { ctx: &ictx, before: derived_before.as_ref() };
    let kept = match fix_in(&scratch, &fixing, &inf, &mut report, run_case) {
        Ok(k) => k,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            let why = e.to_string();
            report.fix.not_fixable = Some(why.clone());
            report.fix.attempted = false;
            report.human.push(format!("the fix could not be made: {why}"));
            failure.xfail_all(&mut report, &mut table, "reproduced; the fix could not be made")?;
            report.exit_code = 1;
            return done.finish(report, &table);
        }
    };
    record_reruns(&mut report, &mut table, &failure, kept, opts.in_place)?;
    done.finish(report, &table)
}

/// The gate: the training check's findings on the model, or why triage
/// does not apply.
fn gate(dir: &Path, key: &Key) -> Result<Diagnosis> {
    diagnose(dir).map_err(|e| {
        Error::Usage(format!(
            "{key}: not a missing-input failure, nothing changed. The failing reason here is ({}): {}",
            crate::pipeline::Stage::of(&e),
            e
        ))
    })
}

impl Report {
    fn new(opts: &Options, r: &resolve::Resolved, prior: Option<Entry>, d: &Diagnosis) -> Report {
        let (inputs, unused_keys) = input_rows(d);
        Report {
            name: opts.name.clone(),
            model: r.key.model.clone(),
            key: r.key.to_string(),
            dir: r.dir.clone(),
            resolved_how: r.how.clone(),
            prior,
            flavor: None,
            findings: d.findings.clone(),
            inputs,
            unused_keys,
            training: vec![],
            inference: None,
            inference_note: None,
            fix: FixReport::default(),
            status_written: vec![],
            status_file: None,
            human: vec![],
            outcome: String::new(),
            exit_code: 0,
        }
    }

    /// The status key of the case triage was asked about.
    fn case_key(&self) -> &Key {
        &self.training[0].key
    }
}

/// The check finds nothing missing: a passing run means nothing to do (or
/// a stale status entry); a failing one is not triage's to fix.
fn nothing_missing(mut report: Report, key: &Key, dir: &Path, before: CaseOutcome) -> Result<Report> {
    report.training.push(Variant {
        key: key.clone(),
        dir: dir.to_path_buf(),
        before: before.clone(),
        after: None,
        derived: None,
    });
    if !before.passed() {
        return Err(Error::Usage(format!(
            "{key}: not a missing-input failure, nothing changed. The failing reason here is {}",
            before.summary()
        )));
    }
    report.outcome = match &report.prior {
        Some(p) if p.status != Status::ExpectedPassing => format!(
            "training check finds nothing missing and the host run passes: the status entry '{key}' ({}) is \
             stale; re-run `deploygen test` for it. Nothing changed.",
            p.summary()
        ),
        _ => "training check finds nothing missing and the host run passes: nothing to do".into(),
    };
    Ok(report)
}

/// Say when the status entry's reason is of another flavor than the one
/// found, and when other flavors were found too (one per invocation).
fn note_flavors(report: &mut Report, d: &Diagnosis, flavor: TriageFlavor) {
    if let Some(p) = report.prior.as_ref().map(|p| p.reason.clone()).filter(|r| !r.is_empty()) {
        if TriageFlavor::from_reason(&p) != Some(flavor) {
            report.human.push(format!(
                "the status entry's reason \"{p}\" is not of the flavor the check finds ({})",
                flavor.name()
            ));
        }
    }
    if d.findings.iter().any(|f| f.flavor != flavor) {
        report.human.push(format!(
            "other flavors found too (one per invocation; this one treats {}): {}",
            flavor.name(),
            d.findings.iter().filter(|f| f.flavor != flavor).map(|f| f.reason.as_str()).collect::<Vec<_>>().join("; ")
        ));
    }
}

/// The host run does not fail for the check's reason: a pass means the
/// entry or the check is wrong; another failure is not triage's to fix.
fn not_reproduced(mut report: Report, key: &Key, dir: &Path, before: CaseOutcome, failure: &Failure) -> Result<Report> {
    report.training.push(Variant {
        key: key.clone(),
        dir: dir.to_path_buf(),
        before: before.clone(),
        after: None,
        derived: None,
    });
    if before.passed() {
        report.outcome = format!(
            "the training check reports {} but the host run passes: the status entry is stale or the check is \
             wrong; nothing changed",
            failure.flavor.name()
        );
        report.human.push("the check and the host run disagree".into());
        return Ok(report);
    }
    Err(Error::Usage(format!(
        "{key}: the host run does not fail for the canonical reason \"{}\"; it fails with {}. Nothing changed.",
        failure.reason,
        before.summary()
    )))
}

/// The model's other training entries in the table that fail the same way.
fn other_training_variants(
    report: &mut Report,
    table: &StatusTable,
    dir: &Path,
    first: &Finding,
    run_case: &RunCase<'_>,
) {
    let key = report.case_key().clone();
    for k in table.keys() {
        if k.model != key.model || k.kind != Kind::Training || *k == key {
            continue;
        }
        let o = run_case(dir, &k.platform, k.level.name());
        if same_reason(&o, first) {
            report.training.push(Variant {
                key: k.clone(),
                dir: dir.to_path_buf(),
                before: o,
                after: None,
                derived: None,
            });
        } else {
            report.human.push(format!("'{k}' does not reproduce ({}); left as it is", o.summary()));
        }
    }
}

/// The inference variant: the model beside it, or one derived by dropping
/// the loss and the backward part (returned, to compare after the fix).
fn inference_variant(
    report: &mut Report,
    ictx: &inference::Ctx<'_>,
    dir: &Path,
    d: &Diagnosis,
    run_case: &RunCase<'_>,
) -> Option<derive::Derived> {
    let key = report.case_key().clone();
    match inference::sibling(dir) {
        Ok(Some((name, idir))) => {
            let ikey = key.with(&name, Kind::Inference);
            let before = run_case(&idir, &key.platform, key.level.name());
            report.inference = Some(Variant { key: ikey, dir: idir, before, after: None, derived: None });
            None
        }
        Ok(None) => derived_inference(report, ictx, dir, d, run_case),
        Err(note) => {
            report.inference_note = Some(note.to_string());
            None
        }
    }
}

fn derived_inference(
    report: &mut Report,
    ictx: &inference::Ctx<'_>,
    dir: &Path,
    d: &Diagnosis,
    run_case: &RunCase<'_>,
) -> Option<derive::Derived> {
    let key = report.case_key().clone();
    let f = match crate::lower::forward::forward(&d.model) {
        Ok(f) => f,
        Err(e) => {
            report.inference_note =
                Some(format!("no inference variant: there is no inference model beside it, and {e}"));
            return None;
        }
    };
    let prepared = scratch_dir(&format!("{}-inference", key.model))
        .and_then(|scratch| inference::prepare(ictx, &d.model, d.binding.as_ref(), None, scratch));
    let mut derived_before = None;
    let (before, side) = match prepared {
        Ok(run) => {
            let o = run_derived(&run, &key, run_case);
            let _ = std::fs::remove_dir_all(&run.scratch);
            let side = DerivedSide::of(&run);
            derived_before = Some(run.derived);
            (o, Some(side))
        }
        Err(e) => (CaseOutcome::fail(crate::pipeline::Stage::of(&e).name(), e.to_string()), None),
    };
    let derived = DerivedVariant {
        outputs: f.outputs.iter().map(|&t| d.model.graph.name_of(t).to_string()).collect(),
        changes: derived_before.as_ref().map(|x: &derive::Derived| x.changes.clone()).unwrap_or_default(),
        before: side,
        after: None,
        written: None,
    };
    report.inference = Some(Variant {
        key: key.with(&key.model, Kind::Inference),
        dir: dir.to_path_buf(),
        before,
        after: None,
        derived: Some(derived),
    });
    derived_before
}

/// The last steps of every way through: the note on an unreferenced
/// derived inference variant, then the status table.
struct Done<'a> {
    writable: bool,
    dest: &'a Path,
}

impl Done<'_> {
    fn finish(&self, mut report: Report, table: &StatusTable) -> Result<Report> {
        note_inference(&mut report, self.dest);
        record(table, self.writable, &mut report)?;
        Ok(report)
    }
}

/// Write the status table when it may be: an explicit `--status FILE`,
/// or the root's `status.toml` when it exists; never one created unasked.
fn record(table: &StatusTable, writable: bool, report: &mut Report) -> Result<()> {
    if report.status_written.is_empty() {
        return Ok(());
    }
    if !writable {
        report.human.push(format!(
            "the status entries above were not recorded: there is no {} (pass --status FILE to name the table \
             that governs this model)",
            table.path_text()
        ));
        return Ok(());
    }
    table.write()?;
    report.status_file = table.path.clone();
    Ok(())
}
