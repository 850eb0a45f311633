//! The triage report as text for the terminal.

use super::*;

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
