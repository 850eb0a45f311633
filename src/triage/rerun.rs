//! After the gate: the failure the run reproduced recorded as known
//! failures, the fix applied in a scratch copy and every variant re-run
//! (training, and inference beside or derived), and the status entries
//! the re-runs give.

use super::*;

/// The missing-input failure the check found and the run reproduced.
pub(super) struct Failure {
    pub flavor: TriageFlavor,
    pub reason: String,
    /// The check's first detail line, quoted in the evidence.
    pub seen: String,
}

impl Failure {
    /// The known-failure entry of a variant whose run failed as found.
    pub(super) fn xfail(&self, v: &Variant) -> Entry {
        Entry::xfail(
            stage_of(&v.before, Stage::Bind),
            &self.reason,
            &format!("deploygen triage: host run of {}: {}; {}", v.key, first_line(&v.before.message), self.seen),
        )
    }

    /// Every training variant recorded as a known failure; `why` follows
    /// the flavor's name in the outcome.
    pub(super) fn xfail_all(&self, report: &mut Report, table: &mut StatusTable, why: &str) -> Result<()> {
        for v in &report.training {
            let e = self.xfail(v);
            table.set(&v.key, &e)?;
            report.status_written.push((v.key.clone(), e));
        }
        report.outcome = format!("{} {why}", self.flavor.name());
        Ok(())
    }

    /// The entry of a variant after the fix was tried and re-run.
    pub(super) fn after_fix(
        &self,
        v: &Variant,
        kept: bool,
        in_place: bool,
        refs_regenerated: bool,
        written: &str,
    ) -> Entry {
        let after = v.after.as_ref().expect("every variant is re-run");
        if !kept {
            self.xfail(v)
        } else if after.passed() && !in_place {
            // The case, as the status table names it, still reads the
            // original data: it passes only once the fixed files replace it.
            Entry::xfail(
                stage_of(&v.before, Stage::Bind),
                &self.reason,
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
                stage_of(after, Stage::Runtime),
                Some(first_line(&after.message))
                    .filter(|l| !l.trim().is_empty())
                    .unwrap_or("the host run printed no message"),
                &format!("deploygen triage --fix: host run of {} with the fixed data", v.key),
            )
        }
    }
}

/// Status entries from the re-runs, the exit code and the outcome.
pub(super) fn record_reruns(
    report: &mut Report,
    table: &mut StatusTable,
    failure: &Failure,
    kept: bool,
    in_place: bool,
) -> Result<()> {
    let refs_regenerated = report.fix.refs.as_deref().is_some_and(|s| s.starts_with("regenerated"));
    let written = report.fix.written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let mut all_pass = true;
    let mut entries = vec![];
    for v in &report.training {
        all_pass &= kept && v.after.as_ref().is_some_and(CaseOutcome::passed);
        entries.push((v.key.clone(), failure.after_fix(v, kept, in_place, refs_regenerated, &written)));
    }
    for (k, e) in entries {
        table.set(&k, &e)?;
        report.status_written.push((k, e));
    }
    if kept && all_pass && !in_place {
        report.human.push(format!(
            "the case passes with the fixed files: move {written} over the originals (or run with --in-place), \
             then the strict xfail entries fail as XPASS and say to promote them"
        ));
    }
    let key = report.case_key().clone();
    report.exit_code = if kept && all_pass { 0 } else { 1 };
    report.outcome = match (kept, all_pass) {
        (true, true) => format!("fixed: {key} passes with the fixed test data"),
        (true, false) => format!("fix kept, but {key} still does not pass"),
        (false, _) => "fix reverted; recorded as a known failure".into(),
    };
    Ok(())
}

/// Run a derived inference variant. Without a single reference the
/// project would compare nothing (emission refuses it): only the stages
/// up to the memory plan are checked, and nothing is called a pass of it.
pub(super) fn run_derived(run: &inference::DerivedRun, key: &Key, run_case: &RunCase<'_>) -> CaseOutcome {
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
pub(super) fn note_inference(report: &mut Report, dest: &Path) {
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
pub(super) struct Fixing<'a> {
    pub opts: &'a Options,
    pub d: &'a Diagnosis,
    pub arrays: &'a fix::Arrays,
    pub rebatch_inputs: Option<&'a [String]>,
}

/// What re-deriving the inference variant after the fix needs.
pub(super) struct InferenceCtx<'a> {
    pub ctx: &'a inference::Ctx<'a>,
    /// The variant derived before the fix.
    pub before: Option<&'a derive::Derived>,
}

/// Apply the fix in `scratch`, re-run, and write the deliverables when the
/// fix is kept. Returns whether it was kept.
pub(super) fn fix_in(
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

pub(super) fn fix_and_rerun(
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
