//! `.npz` reading: a zip archive (stored or deflated members) of `.npy`
//! arrays. Each array's dtype and shape come from its own header, parsed by
//! ndarray-npy; values are kept as raw little-endian bytes in C order
//! (`TensorData`), so later stages copy them without reinterpretation.
//!
//! Before ndarray-npy sees a header, a small pre-check bounds it: its
//! length (numpy itself refuses headers over 10,000 bytes unless asked) and
//! its bracket nesting, so no file, however malformed, makes deploygen
//! allocate without limit or recurse deeply. Every failure is an
//! `Error::Npz` naming the file, the key and what was wrong.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use ndarray_npy::npy::header::{Header, Layout};
use py_literal::Value as Py;

use crate::error::{Error, Result};
use crate::ir::{DType, TensorData};

/// numpy's own limit on the header (`max_header_size`); generous for every
/// header numpy writes (dtype, order and shape of one array).
const MAX_HEADER: usize = 10_000;
/// Upper bound on one member's uncompressed size: far above any test data a
/// microcontroller model needs, low enough that a lying zip entry cannot make
/// us reserve memory we will never fill.
const MAX_MEMBER: u64 = 1 << 30;
/// Nesting limit for the header's Python literal.
const MAX_DEPTH: usize = 16;

/// One `.npz` file: arrays by key (member name without `.npy`), in file order.
#[derive(Clone, Debug)]
pub struct Npz {
    pub path: PathBuf,
    pub arrays: IndexMap<String, TensorData>,
}

impl Npz {
    pub fn get(&self, key: &str) -> Option<&TensorData> {
        self.arrays.get(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.arrays.keys().map(String::as_str)
    }
}

fn npz_err(path: &Path, key: Option<&str>, detail: impl Into<String>) -> Error {
    Error::Npz { path: path.to_path_buf(), key: key.map(str::to_string), detail: detail.into() }
}

/// Read an `.npz` file from disk.
pub fn read(path: &Path) -> Result<Npz> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse(path, &bytes)
}

/// Parse `.npz` bytes; `path` is only used in messages.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Npz> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| npz_err(path, None, format!("not a readable .npz (zip) archive: {e}")))?;
    let mut arrays = IndexMap::new();
    for i in 0..zip.len() {
        let mut member =
            zip.by_index(i).map_err(|e| npz_err(path, None, format!("cannot open zip member #{i}: {e}")))?;
        if member.is_dir() {
            continue;
        }
        let name = member.name().to_string();
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let declared = member.size();
        if declared > MAX_MEMBER {
            return Err(npz_err(
                path,
                Some(&key),
                format!("member declares {declared} bytes; deploygen reads at most {MAX_MEMBER} per array"),
            ));
        }
        let mut data = Vec::new();
        (&mut member)
            .take(declared + 1)
            .read_to_end(&mut data)
            .map_err(|e| npz_err(path, Some(&key), format!("cannot decompress: {e}")))?;
        if data.len() as u64 != declared {
            return Err(npz_err(
                path,
                Some(&key),
                format!("member holds {} bytes but its zip entry declares {declared}", data.len()),
            ));
        }
        let array = parse_npy(&data).map_err(|d| npz_err(path, Some(&key), d))?;
        if arrays.insert(key.clone(), array).is_some() {
            return Err(npz_err(path, Some(&key), "the key appears twice in the archive"));
        }
    }
    Ok(Npz { path: path.to_path_buf(), arrays })
}

/// Parse one `.npy` file. The error is a sentence without the key.
pub fn parse_npy(bytes: &[u8]) -> Result<TensorData, String> {
    precheck(bytes)?;
    let mut cursor = Cursor::new(bytes);
    let h = Header::from_reader(&mut cursor).map_err(|e| format!("the .npy header is not valid: {e}"))?;
    let (dtype, swap) = descriptor(&h.type_descriptor)?;
    let esize = dtype.size().ok_or_else(|| format!("dtype {dtype} has no fixed element size"))?;
    let numel = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let want = numel.and_then(|n| n.checked_mul(esize)).ok_or_else(|| format!("shape {:?} is too large", h.shape))?;
    let body = &bytes[cursor.position() as usize..];
    if body.len() != want {
        return Err(format!("{} {:?} needs {want} bytes of data but the array holds {}", dtype, h.shape, body.len()));
    }
    let mut data = body.to_vec();
    if swap && esize > 1 {
        for c in data.chunks_exact_mut(esize) {
            c.reverse();
        }
    }
    if dtype == DType::Bool {
        for b in &mut data {
            *b = (*b != 0) as u8;
        }
    }
    if h.layout == Layout::Fortran && h.shape.len() > 1 {
        data = fortran_to_c(&data, &h.shape, esize);
    }
    Ok(TensorData { dtype, shape: h.shape, bytes: data })
}

/// Bounds checked before the header is parsed: the magic string, a known
/// version, a header length within numpy's limit and within the member, and
/// shallow bracket nesting (a header is one flat dict).
fn precheck(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < MAGIC.len() + 2 || !bytes.starts_with(MAGIC) {
        return Err("not an .npy array (magic string missing)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let len_bytes = match major {
        1 => 2usize,
        2 | 3 => 4,
        _ => return Err(format!(".npy format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")),
    };
    let start = 8 + len_bytes;
    let Some(len_field) = bytes.get(8..start) else {
        return Err("the .npy header is cut short".into());
    };
    let header_len = len_field.iter().rev().fold(0usize, |a, &b| (a << 8) | b as usize);
    if header_len > MAX_HEADER {
        return Err(format!("the .npy header claims {header_len} bytes (at most {MAX_HEADER} are accepted)"));
    }
    let Some(header) = bytes.get(start..start + header_len) else {
        return Err(format!("the .npy header claims {header_len} bytes but the array is cut short"));
    };
    let mut depth = 0usize;
    for &c in header {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err("the .npy header is nested too deeply".into());
        }
    }
    Ok(())
}

/// Map a numpy type descriptor (`'<f4'`, `'|b1'`, `'>i8'`, …) to a dtype and
/// whether its bytes need swapping to little-endian.
fn descriptor(descr: &Py) -> Result<(DType, bool), String> {
    let supported = "supported: f32 '<f4', f64 '<f8', i64 '<i8', i32 '<i4', i16, i8, u8 '|u1', u16, u32, u64, \
                     bool '|b1', f16";
    let Py::String(s) = descr else {
        return Err(format!("dtype descriptor {descr} is not a plain type ({supported})"));
    };
    let (order, code) = match s.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &s[1..]),
        _ => ('=', s.as_str()),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "i1" => DType::I8,
        "u1" => DType::U8,
        "i2" => DType::I16,
        "u2" => DType::U16,
        "i4" => DType::I32,
        "u4" => DType::U32,
        "i8" => DType::I64,
        "u8" => DType::U64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return Err(format!("dtype descriptor '{s}' is not supported ({supported})")),
    };
    let swap = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    Ok((dtype, swap))
}

/// Reorder a Fortran-order (column-major) buffer into C order.
fn fortran_to_c(data: &[u8], shape: &[usize], esize: usize) -> Vec<u8> {
    let n = data.len() / esize;
    let mut out = vec![0u8; data.len()];
    // Fortran strides (in elements): first dim fastest.
    let mut fstride = vec![1usize; shape.len()];
    for i in 1..shape.len() {
        fstride[i] = fstride[i - 1] * shape[i - 1];
    }
    let mut idx = vec![0usize; shape.len()];
    for c in 0..n {
        let f: usize = idx.iter().zip(&fstride).map(|(i, s)| i * s).sum();
        out[c * esize..(c + 1) * esize].copy_from_slice(&data[f * esize..(f + 1) * esize]);
        // Advance the C-order multi-index: last dim fastest.
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Writing `.npz` files: used by tests and by tools that derive test data
/// (e.g. a triage fix). Stored (uncompressed) members, numpy's `.npy` 1.0
/// header, keys in the order given.
pub fn write_npz(arrays: &[(&str, &TensorData)]) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (key, t) in arrays {
        zip.start_file(format!("{key}.npy"), options).map_err(|e| e.to_string())?;
        zip.write_all(&npy_bytes(t)?).map_err(|e| e.to_string())?;
    }
    Ok(zip.finish().map_err(|e| e.to_string())?.into_inner())
}

/// One array as `.npy` 1.0 bytes.
pub fn npy_bytes(t: &TensorData) -> Result<Vec<u8>, String> {
    let descr = match t.dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I16 => "<i2",
        DType::U16 => "<u2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        other => return Err(format!("cannot write {other} to .npy")),
    };
    let header = Header { type_descriptor: Py::String(descr.into()), layout: Layout::Standard, shape: t.shape.clone() };
    let mut out = header.to_bytes().map_err(|e| e.to_string())?;
    out.extend_from_slice(&t.bytes);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], v: &[f32]) -> TensorData {
        TensorData::from_f32(shape.to_vec(), v)
    }

    #[test]
    fn round_trip_through_the_writer() {
        let a = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let b = TensorData::from_i64(vec![], &[7]);
        let bytes = write_npz(&[("a", &a), ("meta_b", &b)]).unwrap();
        let npz = parse(Path::new("x.npz"), &bytes).unwrap();
        assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "meta_b"]);
        assert_eq!(npz.get("a"), Some(&a));
        assert_eq!(npz.get("meta_b"), Some(&b));
    }

    fn npy(header: &str, body: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn big_endian_and_fortran_order_become_little_endian_c_order() {
        let body: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_be_bytes()).collect();
        let t = parse_npy(&npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n", &body)).unwrap();
        assert_eq!(t.to_i64().unwrap(), [1, 2]);
        // [[1, 2, 3], [4, 5, 6]] stored column-major: 1 4 2 5 3 6.
        let body: Vec<u8> = [1u8, 4, 2, 5, 3, 6].to_vec();
        let t = parse_npy(&npy("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }\n", &body)).unwrap();
        assert_eq!(t.bytes, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn unsupported_descriptor_names_it() {
        let e = parse_npy(&npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", &[0; 8])).unwrap_err();
        assert!(e.contains("'<c8'"), "{e}");
        let e = parse_npy(&npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", &[0; 4]))
            .unwrap_err();
        assert!(e.contains("[('a', '<f4')]"), "{e}");
    }

    #[test]
    fn short_data_and_oversized_headers_are_errors() {
        let e = parse_npy(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", &[0; 8])).unwrap_err();
        assert!(e.contains("needs 12 bytes"), "{e}");
        let mut huge = b"\x93NUMPY\x02\x00".to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_npy(&huge).unwrap_err().contains("at most"));
        let deep = format!("{}{}", "(".repeat(100), ")".repeat(100));
        assert!(parse_npy(&npy(&deep, &[])).unwrap_err().contains("nested too deeply"));
    }
}
