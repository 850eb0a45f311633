//! `deploygen inspect`: what is inside a model, how its test data binds,
//! and (with `--platform`) its memory plan.

use std::path::PathBuf;

use clap::ValueEnum;

use super::output::{write_file, write_json_stdout_with, write_stdout};
use crate::bind::{self, BindOptions, Binding};
use crate::error::{Error, Result};
use crate::ir::Model;
use crate::{check, inspect, plan};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// A model folder (network.onnx, inputs.npz, …) or one .onnx file.
    model: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also write the graph as Graphviz to this file.
    #[arg(long, value_name = "FILE")]
    dot: Option<PathBuf>,
    /// Number of per-mini-batch data inputs; only where the test data
    /// cannot tell (a single mini-batch) or to confirm detection.
    #[arg(long, value_name = "N")]
    num_data_inputs: Option<usize>,
    /// Target platform for the memory plan (GAP9, Siracusa, host).
    #[arg(long)]
    platform: Option<String>,
    /// Where graph I/O, weights and buffers live unless a rule moves them
    /// (L2 or L3; default with --platform: L2).
    #[arg(long, value_name = "LEVEL")]
    default_mem: Option<String>,
    /// Ignore (with a warning) attributes the operator's schema does not
    /// define, instead of refusing the node.
    #[arg(long)]
    allow_unknown_attributes: bool,
    /// Also draw the memory plan as SVG to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    plan: super::plan_args::PlanArgs,
    #[command(flatten)]
    train: super::train::TrainArgs,
}

/// Bind the model's test data when its folder has an `inputs.npz`, then run
/// the training checks. Returns the binding when binding succeeded (even
/// if a check then failed, so the table can show what is missing) and the
/// first problem.
pub fn bind_and_check(model: &Model, num_data_inputs: Option<usize>) -> (Option<Binding>, Option<Error>) {
    match bind::inputs_path(model) {
        Err(e) => return (None, Some(e)),
        Ok(Some(_)) => {}
        Ok(None) => {
            let problem = num_data_inputs.map(|n| {
                Error::Usage(format!(
                    "--num-data-inputs {n} needs test data, but {} has no {}",
                    model.dir.display(),
                    bind::INPUTS_FILE
                ))
            });
            return (None, problem);
        }
    }
    match bind::bind(model, &BindOptions { num_data_inputs }) {
        Ok(b) => {
            let problem = check::training(model, &b).err();
            (Some(b), problem)
        }
        Err(e) => (None, Some(e)),
    }
}

/// The model's part of the report, in the format asked for.
enum Shown {
    Text(String),
    Json(Box<inspect::Report>),
}

/// Every fallible step runs before anything is printed; a data problem
/// (binding or training check) still prints the report, which shows it,
/// then exits 2 with the message.
pub fn run(a: Args) -> Result<()> {
    let opts = match &a.platform {
        Some(p) => Some(a.plan.options(p, a.default_mem.as_deref())?),
        None => {
            let mut given = a.plan.given();
            given.extend(a.default_mem.as_ref().map(|_| "--default-mem"));
            if !given.is_empty() {
                return Err(Error::Usage(format!(
                    "{} shape(s) a memory plan, which needs --platform ({})",
                    given.join(", "),
                    plan::Platform::all().iter().map(|p| p.name.clone()).collect::<Vec<_>>().join(", ")
                )));
            }
            None
        }
    };
    if a.svg.is_some() && opts.is_none() {
        return Err(Error::Usage("--svg draws the memory plan, which needs --platform".into()));
    }
    let attrs = super::unknown_attrs(a.allow_unknown_attributes);
    let m = crate::pipeline::lowered(&a.model, &a.train.request(), attrs)?;
    let (binding, problem) = bind_and_check(&m, a.num_data_inputs);
    // What is shown of the model is taken before planning, which rewrites
    // it (recomputation): the model is not kept twice.
    let dot = a.dot.as_ref().map(|_| inspect::dot(&m));
    let shown = match a.format {
        Format::Text => Shown::Text(inspect::text(&m)),
        Format::Json => Shown::Json(Box::new(inspect::report(&m))),
    };
    let mem = opts
        .map(|o| {
            let o = crate::pipeline::plan_options(&m, binding.as_ref(), &o);
            let mut rm = m;
            let recompute = plan::recompute::apply(&mut rm, &o)?;
            plan::plan(&rm, &o).map(|p| plan::Plan { recompute, ..p })
        })
        .transpose()?;
    if let (Some(path), Some(dot)) = (&a.dot, &dot) {
        write_file(path, dot)?;
    }
    if let (Some(path), Some(p)) = (&a.svg, &mem) {
        write_file(path, &plan::svg::svg(p, &a.model.display().to_string()))?;
    }
    match shown {
        Shown::Text(mut out) => {
            if let Some(b) = &binding {
                out.push_str(&bind::report::text(b));
            }
            if let Some(p) = &mem {
                out.push_str(&plan::report::text(p));
            }
            write_stdout(&out)?;
        }
        Shown::Json(report) => {
            let sections = bind::report::json_sections(binding.as_ref(), problem.as_ref());
            let plan = mem.as_ref().map(plan::report::Json);
            write_json_stdout_with(|out| inspect::write_json_with(out, *report, sections, plan))?;
        }
    }
    problem.map_or(Ok(()), Err)
}
