//! `TensorProto` → `TensorData`: raw_data, typed fields, and external data
//! resolved relative to the model file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::pb;
use crate::error::{Error, Result};
use crate::ir::{DType, TensorData};

const EXTERNAL: i32 = 1;

/// What is wrong with an initializer's `external_data` entry (an
/// `offset`, a `length`, the `location`).
#[derive(Debug, thiserror::Error)]
enum ExternalError {
    #[error("'{key}' must be a non-negative integer, found '{value}'")]
    NotACount { key: &'static str, value: String },
    #[error("'{key}' = {value} is too large")]
    TooLarge { key: &'static str, value: String },
    #[error("'location' is empty")]
    EmptyLocation,
    #[error("'location' = '{0}' is an absolute path; external data must be a file inside the model folder")]
    Absolute(String),
    #[error("'location' = '{0}' leads outside the model folder")]
    Outside(String),
    #[error("cannot resolve the model folder: {0}")]
    ModelDir(#[source] std::io::Error),
    #[error("cannot open '{location}': {source}")]
    Open { location: String, source: std::io::Error },
    #[error("'location' = '{location}' resolves (through a symbolic link) to {}, outside the model folder", real.display())]
    Linked { location: String, real: std::path::PathBuf },
    #[error("'location' = '{0}' is not a regular file")]
    NotAFile(String),
}

pub fn convert(t: &pb::TensorProto, model_dir: &Path) -> Result<TensorData> {
    let name = t.name();
    let bad = |detail: String| Error::model(format!("initializer '{name}': {detail}"));
    let dtype = DType::from_onnx(t.data_type());
    let mut shape = Vec::with_capacity(t.dims.len());
    for &d in &t.dims {
        if d < 0 {
            return Err(bad(format!("negative dimension in {:?}", t.dims)));
        }
        shape.push(d as usize);
    }
    let numel = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {:?} has too many elements", t.dims)))?;
    let Some(esize) = dtype.size() else {
        // Strings and exotic types: kept without bytes; no supported
        // operator computes with them.
        return Ok(TensorData { dtype, shape, bytes: vec![] });
    };
    let want = numel.checked_mul(esize).ok_or_else(|| bad(format!("shape {:?} has too many bytes", t.dims)))?;

    let bytes = if t.data_location() as i32 == EXTERNAL {
        read_external(t, model_dir, want)?
    } else if let Some(raw) = &t.raw_data {
        raw.clone()
    } else {
        typed_bytes(t, dtype)
    };
    if bytes.len() != want {
        return Err(bad(format!("holds {} bytes of data, but {} {:?} needs {want}", bytes.len(), dtype, shape)));
    }
    Ok(TensorData { dtype, shape, bytes })
}

/// Values stored in the typed repeated fields, packed little-endian.
fn typed_bytes(t: &pb::TensorProto, dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::F64 => t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::I64 => t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::U64 => t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::U32 => t.uint64_data.iter().flat_map(|&v| (v as u32).to_le_bytes()).collect(),
        DType::I32 => t.int32_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        // 16-bit types travel in int32_data, one value each.
        DType::I16 | DType::U16 | DType::F16 | DType::BF16 => {
            t.int32_data.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect()
        }
        DType::I8 | DType::U8 | DType::Bool => t.int32_data.iter().map(|&v| v as u8).collect(),
        DType::String | DType::Other(_) => vec![],
    }
}

/// An `offset` or `length` value: a non-negative decimal integer.
fn parse_count(key: &'static str, value: &str) -> std::result::Result<u64, ExternalError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ExternalError::NotACount { key, value: value.to_string() });
    }
    value.parse().map_err(|_| ExternalError::TooLarge { key, value: value.to_string() })
}

/// Resolve `location` inside `model_dir`: relative, without `..` leaving
/// the folder, and (after following symbolic links) still inside it.
fn confine(model_dir: &Path, location: &str) -> std::result::Result<std::path::PathBuf, ExternalError> {
    use std::path::Component;
    let rel = Path::new(location);
    if location.is_empty() {
        return Err(ExternalError::EmptyLocation);
    }
    if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::Prefix(_) | Component::RootDir)) {
        return Err(ExternalError::Absolute(location.to_string()));
    }
    let mut depth = 0usize;
    for c in rel.components() {
        match c {
            Component::ParentDir if depth == 0 => {
                return Err(ExternalError::Outside(location.to_string()));
            }
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    let path = model_dir.join(rel);
    let dir = model_dir.canonicalize().map_err(ExternalError::ModelDir)?;
    let real = path.canonicalize().map_err(|source| ExternalError::Open { location: location.to_string(), source })?;
    if !real.starts_with(&dir) {
        return Err(ExternalError::Linked { location: location.to_string(), real });
    }
    if !real.is_file() {
        return Err(ExternalError::NotAFile(location.to_string()));
    }
    Ok(real)
}

fn read_external(t: &pb::TensorProto, model_dir: &Path, want: usize) -> Result<Vec<u8>> {
    let name = t.name().to_string();
    let fail =
        |path: &Path, detail: String| Error::ExternalData { tensor: name.clone(), path: path.to_path_buf(), detail };
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for kv in &t.external_data {
        match kv.key() {
            "location" => location = Some(kv.value().to_string()),
            "offset" => offset = parse_count("offset", kv.value()).map_err(|e| fail(model_dir, e.to_string()))?,
            "length" => length = Some(parse_count("length", kv.value()).map_err(|e| fail(model_dir, e.to_string()))?),
            _ => {}
        }
    }
    let Some(location) = location else {
        return Err(fail(model_dir, "the external_data entry has no 'location'".into()));
    };
    let path = confine(model_dir, &location).map_err(|e| fail(&model_dir.join(&location), e.to_string()))?;
    let ext = |detail: String| fail(&path, detail);
    let len = length.unwrap_or(want as u64);
    if len != want as u64 {
        return Err(ext(format!("'length' = {len} but {want} bytes are needed for the tensor's type and shape")));
    }
    let mut f = File::open(&path).map_err(|e| ext(format!("cannot open it: {e}")))?;
    let size = f.metadata().map_err(|e| ext(e.to_string()))?.len();
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(ext(format!("bytes {offset}..{} are needed but the file has {size}", offset.saturating_add(len))));
    }
    f.seek(SeekFrom::Start(offset)).map_err(|e| ext(e.to_string()))?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf).map_err(|e| ext(e.to_string()))?;
    Ok(buf)
}
