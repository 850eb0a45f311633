//! The askama templates, and the runtime files copied into every project.

use std::path::PathBuf;

use askama::Template;

use super::Facts;
use crate::error::{Error, Result};
use crate::target::SdkBuild;

/// `runtime/` files copied into a project (path under `runtime/`, bytes),
/// sorted by path: `runtime/README.md` and every file under `kernels/`,
/// `mem/`, `harness/` and `pmsis-host/`, listed by `build.rs`.
pub const RUNTIME: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/runtime_files.rs"));

/// Per `runtime/kernels/*.c` file (path under `runtime/`): the `dg_*`
/// functions and variables it defines, and the `dg_*` names it uses
/// (itself or through a header's macros), listed by `build.rs`.
pub const KERNEL_SYMBOLS: &[(&str, &[&str], &[&str])] = include!(concat!(env!("OUT_DIR"), "/runtime_symbols.rs"));

/// The runtime sources a project with these kernel calls compiles, as
/// `runtime/<path>`: the kernel files defining the called functions and,
/// transitively, what they use; and every source of `mem/` and `harness/`.
/// (`pmsis-host/` is the host build's alone.)
pub fn runtime_sources<'a>(calls: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>> {
    let defining = |name: &str| KERNEL_SYMBOLS.iter().position(|(_, defs, _)| defs.contains(&name));
    let mut need = vec![false; KERNEL_SYMBOLS.len()];
    let mut todo = vec![];
    for f in calls {
        let i = defining(f).ok_or_else(|| {
            Error::model(format!("internal error: no runtime/kernels file defines {f}, which a node calls"))
        })?;
        todo.push(i);
    }
    while let Some(i) = todo.pop() {
        if std::mem::replace(&mut need[i], true) {
            continue;
        }
        todo.extend(KERNEL_SYMBOLS[i].2.iter().filter_map(|u| defining(u)));
    }
    let kernels = KERNEL_SYMBOLS.iter().zip(&need).filter(|(_, n)| **n).map(|((p, _, _), _)| *p);
    let others =
        RUNTIME.iter().map(|(p, _)| *p).filter(|p| !p.starts_with("kernels/") && !p.starts_with("pmsis-host/"));
    let mut out: Vec<String> =
        kernels.chain(others.filter(|p| p.ends_with(".c"))).map(|p| format!("runtime/{p}")).collect();
    out.sort();
    Ok(out)
}

#[derive(Template)]
#[template(path = "network.h")]
struct NetworkH<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "network.c")]
struct NetworkC<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "weights.c")]
struct WeightsC<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "optimizer.h")]
struct OptimizerH<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "optimizer.c")]
struct OptimizerC<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "testinputs.h")]
struct TestInputs<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "testoutputs.h")]
struct TestOutputs<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "main.c")]
struct MainC<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "makefile_host.mk")]
struct MakefileHost<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "makefile_sdk.mk")]
struct MakefileSdk<'a> {
    f: &'a Facts,
}

#[derive(Template)]
#[template(path = "cmakelists.txt")]
struct CMakeLists<'a> {
    f: &'a Facts,
}

fn text(t: &impl Template, what: &str) -> Result<Vec<u8>> {
    let mut s = t.render().map_err(|e| Error::model(format!("internal error rendering {what}: {e}")))?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s.into_bytes())
}

/// Every generated source and build file, plus the runtime.
pub fn render(f: &Facts) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let net = &f.net;
    let mut files = vec![
        (PathBuf::from(format!("{net}.h")), text(&NetworkH { f }, "the network header")?),
        (PathBuf::from(format!("{net}.c")), text(&NetworkC { f }, "the network")?),
        (PathBuf::from("Weights.c"), text(&WeightsC { f }, "Weights.c")?),
        (PathBuf::from("testinputs.h"), text(&TestInputs { f }, "testinputs.h")?),
        (PathBuf::from("testoutputs.h"), text(&TestOutputs { f }, "testoutputs.h")?),
        (PathBuf::from("main.c"), text(&MainC { f }, "main.c")?),
        (PathBuf::from("Makefile.host"), text(&MakefileHost { f }, "Makefile.host")?),
    ];
    if f.has_optimizer {
        files.push((PathBuf::from("OptimizerNetwork.h"), text(&OptimizerH { f }, "the optimizer header")?));
        files.push((PathBuf::from("OptimizerNetwork.c"), text(&OptimizerC { f }, "the optimizer")?));
    }
    match f.sdk_build {
        SdkBuild::PulpMake => files.push((PathBuf::from("Makefile"), text(&MakefileSdk { f }, "Makefile")?)),
        SdkBuild::GapCmake => files.push((PathBuf::from("CMakeLists.txt"), text(&CMakeLists { f }, "CMakeLists.txt")?)),
        SdkBuild::None => {}
    }
    for (p, data) in RUNTIME {
        files.push((PathBuf::from("runtime").join(p), data.to_vec()));
    }
    Ok(files)
}
