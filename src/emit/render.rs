//! The askama templates, and the runtime files copied into every project.

use std::path::PathBuf;

use askama::Template;

use super::build_files::BuildFiles;
use super::harness::Harness;
use super::model_api::ModelApi;
use super::network::Network;
use super::weights::Weights;
use super::Common;
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
/// transitively, what they use, and the one holding the kernels' run-time
/// error status (the harness reads it); and every source of `mem/` and
/// `harness/`.
/// (`pmsis-host/` is the host build's alone.)
pub fn runtime_sources<'a>(calls: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>> {
    let defining = |name: &str| KERNEL_SYMBOLS.iter().position(|(_, defs, _)| defs.contains(&name));
    let mut need = vec![false; KERNEL_SYMBOLS.len()];
    // The harness asks the kernels' run-time error status (dg_kernel_error).
    let mut todo: Vec<usize> = defining("dg_kernel_error").into_iter().collect();
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

/// Every builder's facts, for the templates.
pub struct Parts<'a> {
    pub c: &'a Common,
    pub net: &'a Network,
    pub w: &'a Weights,
    pub h: &'a Harness,
    pub b: &'a BuildFiles,
    /// The application API (`dg_model.h`).
    pub api: Option<&'a ModelApi>,
}

macro_rules! template {
    ($name:ident, $path:literal, $($field:ident: $ty:ty),*) => {
        #[derive(Template)]
        #[template(path = $path)]
        struct $name<'a> {
            $($field: &'a $ty),*
        }
    };
}

template!(NetworkH, "network.h", c: Common, nw: Network, w: Weights);
template!(NetworkC, "network.c", c: Common, nw: Network, w: Weights);
template!(WeightsC, "weights.c", c: Common, w: Weights);
template!(OptimizerH, "optimizer.h", c: Common, nw: Network);
template!(OptimizerC, "optimizer.c", c: Common, nw: Network);
template!(TestInputs, "testinputs.h", c: Common, h: Harness);
template!(TestOutputs, "testoutputs.h", c: Common, h: Harness);
template!(MainC, "main.c", c: Common, h: Harness, api: ModelApi);
template!(ModelH, "dg_model.h", c: Common, api: ModelApi);
template!(ModelC, "dg_model.c", c: Common, api: ModelApi);
template!(PredictC, "predict.c", c: Common, api: ModelApi, nw: Network);
template!(DemoC, "demo.c", c: Common, api: ModelApi);
template!(DemoInferC, "demo_infer.c", c: Common, api: ModelApi);
template!(TestPredict, "testpredict.h", c: Common, api: ModelApi);
template!(MakefileHost, "makefile_host.mk", c: Common, b: BuildFiles);
template!(MakefileSdk, "makefile_sdk.mk", c: Common, b: BuildFiles);
template!(CMakeLists, "cmakelists.txt", c: Common, b: BuildFiles);

fn text(t: &impl Template, what: &str) -> Result<Vec<u8>> {
    let mut s = t.render().map_err(|e| Error::model(format!("internal error rendering {what}: {e}")))?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s.into_bytes())
}

/// Every generated source and build file, plus the runtime.
pub fn render(p: &Parts) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let (c, nw, w, h, b) = (p.c, p.net, p.w, p.h, p.b);
    let net = &c.net;
    // The harness is a client of dg_model.h.
    let api = p.api.ok_or_else(|| Error::model("internal error: main.c needs dg_model.h"))?;
    let mut files = vec![
        (PathBuf::from(format!("{net}.h")), text(&NetworkH { c, nw, w }, "the network header")?),
        (PathBuf::from(format!("{net}.c")), text(&NetworkC { c, nw, w }, "the network")?),
        (PathBuf::from("Weights.c"), text(&WeightsC { c, w }, "Weights.c")?),
        (PathBuf::from("testinputs.h"), text(&TestInputs { c, h }, "testinputs.h")?),
        (PathBuf::from("testoutputs.h"), text(&TestOutputs { c, h }, "testoutputs.h")?),
        (PathBuf::from("main.c"), text(&MainC { c, h, api }, "main.c")?),
        (PathBuf::from("Makefile.host"), text(&MakefileHost { c, b }, "Makefile.host")?),
    ];
    if c.training {
        files.push((PathBuf::from("OptimizerNetwork.h"), text(&OptimizerH { c, nw }, "the optimizer header")?));
        files.push((PathBuf::from("OptimizerNetwork.c"), text(&OptimizerC { c, nw }, "the optimizer")?));
    }
    files.push((PathBuf::from("dg_model.h"), text(&ModelH { c, api }, "dg_model.h")?));
    files.push((PathBuf::from("dg_model.c"), text(&ModelC { c, api }, "dg_model.c")?));
    if c.training {
        files.push((PathBuf::from("PredictNetwork.c"), text(&PredictC { c, api, nw }, "PredictNetwork.c")?));
        files.push((PathBuf::from("demo.c"), text(&DemoC { c, api }, "demo.c")?));
        files.push((PathBuf::from("testpredict.h"), text(&TestPredict { c, api }, "testpredict.h")?));
    } else {
        files.push((PathBuf::from("demo.c"), text(&DemoInferC { c, api }, "demo.c")?));
    }
    match c.sdk_build {
        SdkBuild::PulpMake => files.push((PathBuf::from("Makefile"), text(&MakefileSdk { c, b }, "Makefile")?)),
        SdkBuild::GapCmake => {
            files.push((PathBuf::from("CMakeLists.txt"), text(&CMakeLists { c, b }, "CMakeLists.txt")?))
        }
        SdkBuild::None => {}
    }
    for (p, data) in RUNTIME {
        files.push((PathBuf::from("runtime").join(p), data.to_vec()));
    }
    Ok(files)
}
