//! The `deploygen` command line (see `src/cli/`).

fn main() -> std::process::ExitCode {
    deploygen::cli::main()
}
