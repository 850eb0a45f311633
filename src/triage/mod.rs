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
pub mod resolve;
pub mod runner;

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
    let bytes = bind::npz::write_npz(&refs).map_err(|e| Error::Npz { path: path.into(), key: None, detail: e })?;
    std::fs::write(path, bytes).map_err(|e| Error::write(path, e))
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

    // Gate.
    let d = match diagnose(&r.dir) {
        Ok(d) => d,
        Err(e) => {
            return Err(Error::Usage(format!(
                "{key}: not a missing-input failure, nothing changed. The failing reason here is ({}): {}",
                crate::pipeline::Stage::of(&e),
                e
            )))
        }
    };
    let (inputs, unused_keys) = input_rows(&d);
    let mut report = Report {
        name: opts.name.clone(),
        model: key.model.clone(),
        key: key.to_string(),
        dir: r.dir.clone(),
        resolved_how: r.how.clone(),
        prior: prior.clone(),
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
    };
    let before = run_case(&r.dir, &key.platform, key.level.name());
    let Some(first) = d.findings.first() else {
        report.training.push(Variant {
            key: key.clone(),
            dir: r.dir.clone(),
            before: before.clone(),
            after: None,
            derived: None,
        });
        if before.passed() {
            report.outcome = match &prior {
                Some(p) if p.status != Status::ExpectedPassing => format!(
                    "training check finds nothing missing and the host run passes: the status entry '{key}' ({}) is \
                     stale; re-run `deploygen test` for it. Nothing changed.",
                    p.summary()
                ),
                _ => "training check finds nothing missing and the host run passes: nothing to do".into(),
            };
            return Ok(report);
        }
        return Err(Error::Usage(format!(
            "{key}: not a missing-input failure, nothing changed. The failing reason here is {}",
            before.summary()
        )));
    };
    let flavor = first.flavor;
    let reason = first.reason.clone();
    let seen = first_line(&first.detail).to_string();
    report.flavor = Some(flavor.name().to_string());
    if let Some(p) = prior.as_ref().map(|p| p.reason.as_str()).filter(|r| !r.is_empty()) {
        if TriageFlavor::from_reason(p) != Some(flavor) {
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

    // Reproduce, for this key and every other training variant of the model.
    if !same_reason(&before, first) {
        report.training.push(Variant {
            key: key.clone(),
            dir: r.dir.clone(),
            before: before.clone(),
            after: None,
            derived: None,
        });
        if before.passed() {
            report.outcome = format!(
                "the training check reports {} but the host run passes: the status entry is stale or the check is \
                 wrong; nothing changed",
                flavor.name()
            );
            report.human.push("the check and the host run disagree".into());
            return Ok(report);
        }
        return Err(Error::Usage(format!(
            "{key}: the host run does not fail for the canonical reason \"{reason}\"; it fails with {}. Nothing changed.",
            before.summary()
        )));
    }
    report.training.push(Variant { key: key.clone(), dir: r.dir.clone(), before, after: None, derived: None });
    for k in table.keys() {
        if k.model != key.model || k.kind != Kind::Training || *k == key {
            continue;
        }
        let o = run_case(&r.dir, &k.platform, k.level.name());
        if same_reason(&o, first) {
            report.training.push(Variant { key: k.clone(), dir: r.dir.clone(), before: o, after: None, derived: None });
        } else {
            report.human.push(format!("'{k}' does not reproduce ({}); left as it is", o.summary()));
        }
    }
    let dest = inference::derived_dir(&r.dir);
    let ictx = inference::Ctx { make_refs: opts.refs, dest: &dest };
    let mut derived_before: Option<derive::Derived> = None;
    match inference::sibling(&r.dir) {
        Ok(Some((name, dir))) => {
            let ikey = key.with(&name, Kind::Inference);
            let before = run_case(&dir, &key.platform, key.level.name());
            report.inference = Some(Variant { key: ikey, dir, before, after: None, derived: None });
        }
        Ok(None) => match crate::lower::forward::forward(&d.model) {
            Err(e) => {
                report.inference_note =
                    Some(format!("no inference variant: there is no inference model beside it, and {e}"))
            }
            Ok(f) => {
                let prepared = scratch_dir(&format!("{}-inference", key.model))
                    .and_then(|scratch| inference::prepare(&ictx, &d.model, d.binding.as_ref(), None, scratch));
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
                    changes: derived_before.as_ref().map(|x| x.changes.clone()).unwrap_or_default(),
                    before: side,
                    after: None,
                    written: None,
                };
                report.inference = Some(Variant {
                    key: key.with(&key.model, Kind::Inference),
                    dir: r.dir.clone(),
                    before,
                    after: None,
                    derived: Some(derived),
                });
            }
        },
        Err(note) => report.inference_note = Some(note),
    }

    let xfail_all = |report: &mut Report, table: &mut StatusTable, why: &str| -> Result<()> {
        for v in &report.training {
            let e = Entry::xfail(
                stage_of(&v.before, Stage::Bind),
                &reason,
                &format!("deploygen triage: host run of {}: {}; {seen}", v.key, first_line(&v.before.message)),
            );
            table.set(&v.key, &e)?;
            report.status_written.push((v.key.clone(), e));
        }
        report.outcome = why.to_string();
        Ok(())
    };

    if !opts.fix {
        xfail_all(
            &mut report,
            &mut table,
            &format!("{} reproduced; recorded as a known failure (no --fix)", flavor.name()),
        )?;
        note_inference(&mut report, &dest);
        record(&table, writable, &mut report)?;
        return Ok(report);
    }

    // Fix, in a scratch copy.
    let plan = plan_fix(&d, flavor);
    let (arrays, changes, rebatch_inputs) = match plan {
        Plan::NotFixable(why) => {
            report.fix.not_fixable = Some(why.clone());
            report.human.push(format!("no test-data fix: {why}"));
            xfail_all(&mut report, &mut table, &format!("{} reproduced; no test-data fix applies", flavor.name()))?;
            report.exit_code = 1;
            note_inference(&mut report, &dest);
            record(&table, writable, &mut report)?;
            return Ok(report);
        }
        Plan::Data { arrays, changes } => (arrays, changes, None),
        Plan::Rebatch { arrays, changes, inputs } => (arrays, changes, Some(inputs)),
    };
    report.fix.attempted = true;
    report.fix.changes = changes;
    let scratch = scratch_dir(&key.model)?;
    let fixing = Fixing { opts, d: &d, arrays: &arrays, rebatch_inputs: rebatch_inputs.as_deref() };
    let inf = InferenceCtx { ctx: &ictx, before: derived_before.as_ref() };
    let result = fix_in(&scratch, &fixing, &inf, &mut report, run_case);
    let kept = match result {
        Ok(k) => k,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            let why = e.to_string();
            report.fix.not_fixable = Some(why.clone());
            report.fix.attempted = false;
            report.human.push(format!("the fix could not be made: {why}"));
            xfail_all(&mut report, &mut table, &format!("{} reproduced; the fix could not be made", flavor.name()))?;
            report.exit_code = 1;
            note_inference(&mut report, &dest);
            record(&table, writable, &mut report)?;
            return Ok(report);
        }
    };

    // Status entries from the re-runs.
    let refs_regenerated = report.fix.refs.as_deref().is_some_and(|s| s.starts_with("regenerated"));
    let mut all_pass = true;
    let written = report.fix.written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    for v in &report.training {
        let after = v.after.clone().expect("every variant is re-run");
        all_pass &= kept && after.passed();
        let e = if !kept {
            Entry::xfail(
                stage_of(&v.before, Stage::Bind),
                &reason,
                &format!("deploygen triage: host run of {}: {}; {seen}", v.key, first_line(&v.before.message)),
            )
        } else if after.passed() && !opts.in_place {
            // The case, as the status table names it, still reads the
            // original data: it passes only once the fixed files replace it.
            Entry::xfail(
                stage_of(&v.before, Stage::Bind),
                &reason,
                &format!(
                    "deploygen triage --fix: {} passes with the fixed test data written beside the original \
                     ({written}); it is EXPECTED_PASSING once those replace the originals (or with --in-place)",
                    v.key
                ),
            )
        } else if after.passed() {
            Entry::passing()
        } else if after.stage.as_deref() == Some("INCORRECT_RESULT") && !refs_regenerated {
            Entry::xfail(
                Stage::Result,
                STALE_REFS_REASON,
                &format!(
                    "deploygen triage --fix: host run of {} with the fixed data: {}",
                    v.key,
                    first_line(&after.message)
                ),
            )
        } else {
            Entry::xfail(
                stage_of(&after, Stage::Runtime),
                Some(first_line(&after.message))
                    .filter(|l| !l.trim().is_empty())
                    .unwrap_or("the host run printed no message"),
                &format!("deploygen triage --fix: host run of {} with the fixed data", v.key),
            )
        };
        table.set(&v.key, &e)?;
        report.status_written.push((v.key.clone(), e));
    }
    if kept && all_pass && !opts.in_place {
        report.human.push(format!(
            "the case passes with the fixed files: move {written} over the originals (or run with --in-place), \
             then the strict xfail entries fail as XPASS and say to promote them"
        ));
    }
    report.exit_code = if kept && all_pass { 0 } else { 1 };
    report.outcome = match (kept, all_pass) {
        (true, true) => format!("fixed: {} passes with the fixed test data", key),
        (true, false) => format!("fix kept, but {key} still does not pass"),
        (false, _) => "fix reverted; recorded as a known failure".into(),
    };
    note_inference(&mut report, &dest);
    record(&table, writable, &mut report)?;
    Ok(report)
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

/// Run a derived inference variant. Without a single reference the
/// project would compare nothing (emission refuses it): only the stages
/// up to the memory plan are checked, and nothing is called a pass of it.
fn run_derived(run: &inference::DerivedRun, key: &Key, run_case: &RunCase<'_>) -> CaseOutcome {
    if run.derived.references.is_empty() {
        let o = runner::stages_only(&run.scratch, &key.platform, key.level.name());
        if !o.passed() {
            return o;
        }
        CaseOutcome::pass(
            format!(
                "not run, nothing compared: no references for {}; import, bind, check and memory plan pass",
                run.derived.outputs.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
            ),
            0,
        )
    } else {
        run_case(&run.scratch, &key.platform, key.level.name())
    }
}

/// Say plainly when a derived inference variant was run without
/// references: it ran, but nothing was compared, so it did not pass.
fn note_inference(report: &mut Report, dest: &Path) {
    let Some(dv) = report.inference.as_ref().and_then(|v| v.derived.as_ref()) else { return };
    let Some(side) = dv.after.as_ref().or(dv.before.as_ref()) else { return };
    if side.unreferenced.is_empty() {
        return;
    }
    let note = inference::no_references_note(&side.unreferenced, dv.written.as_deref(), dest);
    report.outcome.push_str("; the derived inference variant was not compared (it has no references)");
    report.human.push(note.clone());
    report.inference_note = Some(note);
}

/// The fix to apply.
struct Fixing<'a> {
    opts: &'a Options,
    d: &'a Diagnosis,
    arrays: &'a fix::Arrays,
    rebatch_inputs: Option<&'a [String]>,
}

/// What re-deriving the inference variant after the fix needs.
struct InferenceCtx<'a> {
    ctx: &'a inference::Ctx<'a>,
    /// The variant derived before the fix.
    before: Option<&'a derive::Derived>,
}

/// Apply the fix in `scratch`, re-run, and write the deliverables when the
/// fix is kept. Returns whether it was kept.
fn fix_in(
    scratch: &Path,
    fixing: &Fixing<'_>,
    inf: &InferenceCtx<'_>,
    report: &mut Report,
    run_case: &RunCase<'_>,
) -> Result<bool> {
    let mut derived_after: Option<inference::DerivedRun> = None;
    let kept = fix_and_rerun(scratch, fixing, inf, &mut derived_after, report, run_case);
    if let Some(run) = derived_after {
        if let (Ok(true), Some(dv)) = (&kept, report.inference.as_mut().and_then(|v| v.derived.as_mut())) {
            match inference::persist(&run.scratch, inf.ctx.dest) {
                Ok(()) => dv.written = Some(inf.ctx.dest.to_path_buf()),
                Err(e) => report.human.push(format!("the derived inference variant was not written: {e}")),
            }
        }
        let _ = std::fs::remove_dir_all(&run.scratch);
    }
    kept
}

fn fix_and_rerun(
    scratch: &Path,
    fixing: &Fixing<'_>,
    inf_ctx: &InferenceCtx<'_>,
    derived_after: &mut Option<inference::DerivedRun>,
    report: &mut Report,
    run_case: &RunCase<'_>,
) -> Result<bool> {
    let Fixing { opts, d, arrays, rebatch_inputs } = *fixing;
    let dir = report.dir.clone();
    copy_dir(&dir, scratch)?;
    write_npz(&scratch.join(bind::INPUTS_FILE), arrays)?;
    if let Some(inputs) = rebatch_inputs {
        let main = d.model.path.file_name().map(PathBuf::from).unwrap_or_else(|| "network.onnx".into());
        let changes = rebatch::rebatch(&d.model, inputs, &scratch.join(main))?;
        report.fix.changes.extend(changes);
    }
    if opts.refs {
        report.fix.refs = Some(match refs::make_refs(scratch) {
            refs::Refs::Regenerated(s) => format!("regenerated outputs.npz: {s}"),
            refs::Refs::Unavailable(s) => format!("not regenerated: {s}"),
            refs::Refs::Failed(s) => format!("not regenerated: {s}"),
        });
    } else {
        report.fix.refs =
            Some(format!("not regenerated (no --refs): {} was computed for the original data", bind::OUTPUTS_FILE));
    }
    for i in 0..report.training.len() {
        let key = report.training[i].key.clone();
        report.training[i].after = Some(run_case(scratch, &key.platform, key.level.name()));
    }
    // The inference model beside it has its own test data: the fix does
    // not reach it, and the re-run confirms that. A derived variant is
    // derived again, from the fixed copy: the fix reaches it as it reaches
    // training.
    if let Some(inf) = report.inference.as_mut() {
        let key = inf.key.clone();
        let after = match inf.derived.as_mut() {
            None => run_case(&inf.dir, &key.platform, key.level.name()),
            Some(dv) => {
                let prepared = crate::load(scratch).and_then(|m| {
                    let b = bind::bind(&m, &BindOptions::default())?;
                    let to = scratch_dir(&format!("{}-inference", key.model))?;
                    inference::prepare(inf_ctx.ctx, &m, Some(&b), inf_ctx.before, to)
                });
                match prepared {
                    Ok(run) => {
                        let o = run_derived(&run, &key, run_case);
                        dv.after = Some(DerivedSide::of(&run));
                        if dv.changes.is_empty() {
                            dv.changes = run.derived.changes.clone();
                        }
                        *derived_after = Some(run);
                        o
                    }
                    Err(e) => CaseOutcome::fail(crate::pipeline::Stage::of(&e).name(), e.to_string()),
                }
            }
        };
        if inf.before.passed() && !after.passed() {
            let what = if inf.derived.is_some() { " (derived)" } else { "" };
            report.fix.reverted = Some(format!("inference '{}'{what} regressed: {}", inf.key, after.summary()));
        }
        inf.after = Some(after);
    }
    let training_reason_gone = report
        .training
        .iter()
        .all(|v| !v.after.as_ref().is_some_and(|a| a.message.contains(&report.findings[0].reason)));
    if report.fix.reverted.is_none() && !training_reason_gone {
        report.fix.reverted = Some("the fixed data still fails for the same canonical reason".into());
    }
    if let Some(why) = &report.fix.reverted {
        report.human.push(format!("fix reverted: {why}"));
        let _ = std::fs::remove_dir_all(scratch);
        return Ok(false);
    }
    // Deliverables.
    let regenerated = report.fix.refs.as_deref().is_some_and(|s| s.starts_with("regenerated"));
    let mut written = Vec::new();
    if rebatch_inputs.is_some() {
        if opts.in_place {
            let main = d.model.path.file_name().map(PathBuf::from).unwrap_or_else(|| "network.onnx".into());
            let mut files = vec![main, bind::INPUTS_FILE.into()];
            if regenerated {
                files.push(bind::OUTPUTS_FILE.into());
            }
            for f in files {
                std::fs::copy(scratch.join(&f), dir.join(&f)).map_err(|e| Error::write(dir.join(&f), e))?;
                written.push(dir.join(f));
            }
        } else {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let copy = dir.with_file_name(format!("{name}.triage"));
            if copy.exists() {
                std::fs::remove_dir_all(&copy).map_err(|e| Error::write(&copy, e))?;
            }
            copy_dir(scratch, &copy)?;
            written.push(copy);
        }
    } else {
        let (inp, out) =
            if opts.in_place { (bind::INPUTS_FILE, bind::OUTPUTS_FILE) } else { (FIXED_INPUTS, FIXED_OUTPUTS) };
        std::fs::copy(scratch.join(bind::INPUTS_FILE), dir.join(inp)).map_err(|e| Error::write(dir.join(inp), e))?;
        written.push(dir.join(inp));
        if regenerated {
            std::fs::copy(scratch.join(bind::OUTPUTS_FILE), dir.join(out))
                .map_err(|e| Error::write(dir.join(out), e))?;
            written.push(dir.join(out));
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
    report.fix.written = written;
    Ok(true)
}

/// The one-screen report.
pub fn text(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "triage {}", r.name);
    let _ = writeln!(s, "  model     {} ({}; {})", r.model, r.dir.display(), r.resolved_how);
    let _ = writeln!(s, "  key       {}", r.key);
    let _ = writeln!(s, "  prior     {}", r.prior.as_ref().map_or("no status entry".into(), Entry::summary));
    let _ = writeln!(s, "  flavor    {}", r.flavor.as_deref().unwrap_or("none"));
    for f in &r.findings {
        let _ = writeln!(s, "  reason    {}", f.reason);
        for line in f.detail.lines() {
            let _ = writeln!(s, "            {}", line.trim_start());
        }
        if let Some(b) = f.batch2_fixes {
            let _ = writeln!(s, "            batch 2 fixes it: {}", if b { "yes" } else { "no" });
        }
    }
    let _ = writeln!(s, "  inputs    (graph needs / data holds)");
    for row in &r.inputs {
        let holds = match (&row.key, &row.holds) {
            (Some(k), Some(h)) => format!("'{k}' {h}"),
            (None, Some(h)) => h.clone(),
            _ => "MISSING".into(),
        };
        let _ = writeln!(s, "    {:<24} {:<20} {holds}", row.input, row.needs);
    }
    if !r.unused_keys.is_empty() {
        let _ = writeln!(s, "    unused keys: {}", r.unused_keys.join(", "));
    }
    for v in &r.training {
        let _ = writeln!(s, "  before    {}: {}", v.key, v.before.summary());
    }
    if r.fix.attempted || r.fix.not_fixable.is_some() {
        let _ = writeln!(s, "  fix");
        for c in &r.fix.changes {
            let _ = writeln!(s, "    - {c}");
        }
        if let Some(n) = &r.fix.not_fixable {
            let _ = writeln!(s, "    not fixable: {n}");
        }
        if let Some(refs) = &r.fix.refs {
            let _ = writeln!(s, "    references: {refs}");
        }
        for w in &r.fix.written {
            let _ = writeln!(s, "    wrote {}", w.display());
        }
        if let Some(why) = &r.fix.reverted {
            let _ = writeln!(s, "    reverted: {why}");
        }
    }
    for v in &r.training {
        if let Some(a) = &v.after {
            let _ = writeln!(s, "  after     {}: {}", v.key, a.summary());
        }
    }
    match r.inference.as_ref().map(|v| (v, v.derived.as_ref())) {
        Some((v, None)) => {
            let _ = writeln!(s, "  inference {}: before {}", v.key, v.before.summary());
            if let Some(a) = &v.after {
                let _ = writeln!(s, "            after  {}", a.summary());
            }
        }
        Some((v, Some(dv))) => {
            let _ = writeln!(s, "  inference {} (derived: no inference model beside it)", v.key);
            for c in &dv.changes {
                let _ = writeln!(s, "            - {c}");
            }
            let _ = writeln!(s, "            before {}", derived_summary(&v.before, dv.before.as_ref()));
            if let Some(a) = &v.after {
                let _ = writeln!(s, "            after  {}", derived_summary(a, dv.after.as_ref()));
            }
            if let Some(w) = &dv.written {
                let _ = writeln!(s, "            wrote {} (the variant of the fixed model and data)", w.display());
            }
        }
        None => {}
    }
    if let Some(n) = &r.inference_note {
        let _ = writeln!(s, "  inference {n}");
    }
    match &r.status_file {
        Some(f) => {
            let _ = writeln!(s, "  status    wrote {}", f.display());
        }
        None if !r.status_written.is_empty() => {
            let _ = writeln!(s, "  status    not written (no status table; see below)");
        }
        None => {
            let _ = writeln!(s, "  status    unchanged");
        }
    }
    for (k, e) in &r.status_written {
        let _ = writeln!(s, "            \"{k}\" = {}", e.summary());
    }
    for h in &r.human {
        let _ = writeln!(s, "  look      {h}");
    }
    let _ = writeln!(s, "  outcome   {}", r.outcome);
    s
}

/// One run of a derived inference variant: a run without references is
/// not called a pass.
fn derived_summary(o: &CaseOutcome, side: Option<&DerivedSide>) -> String {
    let Some(side) = side else { return o.summary() };
    let notes = if side.notes.is_empty() { String::new() } else { format!(" ({})", side.notes.join("; ")) };
    let list = side.unreferenced.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    match (side.references.as_deref(), o.passed()) {
        (None, true) => format!("{}{notes}", o.message),
        (None, false) => {
            format!("{} (stages up to the memory plan only: no references for {list}{notes})", o.summary())
        }
        (Some(src), _) if side.unreferenced.is_empty() => format!("{}; references: {src}", o.summary()),
        (Some(src), _) => format!("{}; references: {src}; none for {list}", o.summary()),
    }
}
