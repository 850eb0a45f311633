//! Compiles the vendored `proto/onnx.proto` with protox (pure Rust), so the
//! build needs no system `protoc` and fetches nothing.

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let fds = protox::compile(["onnx.proto"], ["proto"]).expect("compile proto/onnx.proto");
    prost_build::Config::new().compile_fds(fds).expect("generate Rust code for onnx.proto");
}
