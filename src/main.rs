//! The `deploygen` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use deploygen::{bind, import, inspect, plan, verify, Error};

#[derive(Parser)]
#[command(name = "deploygen", version, about = "ONNX models to C deployment projects for GAP9 and Siracusa")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Show what is inside a model: graph, operators, inputs, outputs, roles.
    Inspect {
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
        /// Where graph I/O, weights and buffers live unless a rule moves them.
        #[arg(long, value_name = "LEVEL")]
        default_mem: Option<String>,
        /// L1 capacity in bytes (overrides the platform's).
        #[arg(long, value_name = "BYTES")]
        l1: Option<u64>,
        /// L2 capacity in bytes (overrides the platform's).
        #[arg(long, value_name = "BYTES")]
        l2: Option<u64>,
        /// L3 capacity in bytes (overrides the platform's).
        #[arg(long, value_name = "BYTES")]
        l3: Option<u64>,
        /// Also draw the memory plan as SVG to this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Generate, build and run models on the host emulation; check their
    /// results against the references (exit 0 pass, 1 wrong, 2 not run).
    Test(verify::cli::TestArgs),
}

fn write_file(path: &Path, contents: &str) -> Result<(), Error> {
    // Write next to the target, then rename: no half-written file on error.
    let tmp = path.with_extension("deploygen-tmp");
    std::fs::write(&tmp, contents).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Print a report. A reader that stops early (`deploygen inspect … | head`)
/// closes the pipe; that is the end of the output, not an error.
fn write_stdout(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.map_err(|e| Error::io("<stdout>", e)),
    }
}

fn run(cli: Cli) -> Result<i32, Error> {
    match cli.command {
        Command::Test(args) => verify::cli::run(&args),
        Command::Inspect { model, format, dot, num_data_inputs, platform, default_mem, l1, l2, l3, svg } => {
            let opts = plan::PlanOptions::from_flags(platform.as_deref(), default_mem.as_deref(), [l1, l2, l3])?;
            if svg.is_some() && opts.is_none() {
                return Err(Error::Usage("--svg draws the memory plan, which needs --platform".into()));
            }
            let m = import::load(&model)?;
            // Test data: bound and checked when the model folder has it. A
            // failure still shows the graph (and the binding, if it got that
            // far), then exits 2 with the message.
            let (binding, problem) = bind::report::bind_and_check(&m, num_data_inputs);
            let mem = opts.map(|o| plan::plan(&m, &o)).transpose()?;
            if let Some(path) = dot {
                write_file(&path, &inspect::dot(&m))?;
            }
            if let (Some(path), Some(p)) = (svg, &mem) {
                write_file(&path, &plan::svg::svg(p, &model.display().to_string()))?;
            }
            let out = match format {
                Format::Text => {
                    let mut out = inspect::text(&m);
                    if let Some(b) = &binding {
                        out.push_str(&bind::report::text(b));
                    }
                    if let Some(p) = &mem {
                        out.push_str(&plan::report::text(p));
                    }
                    out
                }
                Format::Json => {
                    let mut sections = bind::report::json_sections(binding.as_ref(), problem.as_ref());
                    if let Some(p) = &mem {
                        sections.insert("plan".to_string(), plan::report::json(p));
                    }
                    inspect::json_with(&m, sections)
                }
            };
            write_stdout(&out)?;
            problem.map_or(Ok(0), Err)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
