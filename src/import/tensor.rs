//! `TensorProto` → `TensorData`: raw_data, typed fields, and external data
//! resolved relative to the model file.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::pb;
use crate::error::{Error, Result};
use crate::ir::{DType, TensorData};

const EXTERNAL: i32 = 1;

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

fn read_external(t: &pb::TensorProto, model_dir: &Path, want: usize) -> Result<Vec<u8>> {
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for kv in &t.external_data {
        match kv.key() {
            "location" => location = Some(kv.value().to_string()),
            "offset" => offset = kv.value().parse().unwrap_or(0),
            "length" => length = kv.value().parse::<usize>().ok(),
            _ => {}
        }
    }
    let name = t.name().to_string();
    let Some(location) = location else {
        return Err(Error::ExternalData {
            tensor: name,
            path: model_dir.to_path_buf(),
            detail: "the external_data entry has no 'location'".into(),
        });
    };
    let path = model_dir.join(&location);
    let ext = |detail: String| Error::ExternalData { tensor: name.clone(), path: path.clone(), detail };
    let mut f = File::open(&path).map_err(|e| ext(format!("cannot open it: {e}")))?;
    let size = f.metadata().map_err(|e| ext(e.to_string()))?.len();
    let len = length.unwrap_or(want) as u64;
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(ext(format!("bytes {offset}..{} are needed but the file has {size}", offset.saturating_add(len))));
    }
    f.seek(SeekFrom::Start(offset)).map_err(|e| ext(e.to_string()))?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf).map_err(|e| ext(e.to_string()))?;
    Ok(buf)
}
