//! `.npz` reading: a zip archive (stored or deflated members) of `.npy`
//! arrays. Each array's dtype and shape come from its own header; values are
//! kept as raw little-endian bytes in C order (`TensorData`), so later stages
//! copy them without reinterpretation.
//!
//! The `.npy` header is parsed here rather than through ndarray-npy: the
//! parser bounds the header length (numpy itself refuses headers over 10,000
//! bytes unless asked) and the nesting depth, so no file, however malformed,
//! makes deploygen allocate without limit or panic. Every failure is an
//! `Error::Npz` naming the file, the key and what was wrong.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

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
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < MAGIC.len() + 2 || !bytes.starts_with(MAGIC) {
        return Err("not an .npy array (magic string missing)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_bytes, utf8) = match major {
        1 => (2usize, false),
        2 => (4, false),
        3 => (4, true),
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
    let text = if utf8 {
        std::str::from_utf8(header).map_err(|_| "the .npy header is not UTF-8".to_string())?
    } else if header.is_ascii() {
        std::str::from_utf8(header).map_err(|_| "the .npy header is not ASCII".to_string())?
    } else {
        return Err("the .npy header is not ASCII".into());
    };
    let h = Header::parse(text)?;
    let (dtype, swap) = descriptor(&h.descr)?;
    let esize = dtype.size().ok_or_else(|| format!("dtype {dtype} has no fixed element size"))?;
    let numel = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let want = numel.and_then(|n| n.checked_mul(esize)).ok_or_else(|| format!("shape {:?} is too large", h.shape))?;
    let body = &bytes[start + header_len..];
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
    if h.fortran && h.shape.len() > 1 {
        data = fortran_to_c(&data, &h.shape, esize);
    }
    Ok(TensorData { dtype, shape: h.shape, bytes: data })
}

/// Map a numpy type descriptor (`'<f4'`, `'|b1'`, `'>i8'`, …) to a dtype and
/// whether its bytes need swapping to little-endian.
fn descriptor(descr: &Py) -> Result<(DType, bool), String> {
    let supported = "supported: f32 '<f4', f64 '<f8', i64 '<i8', i32 '<i4', i16, i8, u8 '|u1', u16, u32, u64, \
                     bool '|b1', f16";
    let Py::Str(s) = descr else {
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

/// The header dictionary numpy writes: `{'descr': '<f4', 'fortran_order':
/// False, 'shape': (1, 3), }`.
struct Header {
    descr: Py,
    fortran: bool,
    shape: Vec<usize>,
}

impl Header {
    fn parse(text: &str) -> Result<Header, String> {
        let text = text.trim_end_matches(['\n', ' ', '\0']);
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        let value = p.value(0)?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("the .npy header has trailing text after the dictionary: {text:?}"));
        }
        let Py::Dict(items) = value else {
            return Err(format!("the .npy header is not a dictionary: {text:?}"));
        };
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        for (k, v) in items {
            match (k.as_str(), v) {
                (Some("descr"), v) => descr = Some(v),
                (Some("fortran_order"), Py::Bool(b)) => fortran = Some(b),
                (Some("shape"), Py::Tuple(dims)) => {
                    let dims: Option<Vec<usize>> =
                        dims.iter().map(|d| if let Py::Int(n) = d { usize::try_from(*n).ok() } else { None }).collect();
                    shape = Some(dims.ok_or_else(|| "the .npy shape is not a tuple of sizes".to_string())?);
                }
                (Some(key @ ("fortran_order" | "shape")), v) => {
                    return Err(format!("the .npy header's '{key}' has an unexpected value {v}"))
                }
                (_, _) => {} // numpy ignores unknown keys only in newer versions; so do we
            }
        }
        match (descr, fortran, shape) {
            (Some(descr), Some(fortran), Some(shape)) => Ok(Header { descr, fortran, shape }),
            _ => Err(format!("the .npy header lacks 'descr', 'fortran_order' or 'shape': {text:?}")),
        }
    }
}

/// The subset of Python literals an `.npy` header uses.
#[derive(Debug)]
enum Py {
    Str(String),
    Int(u64),
    Bool(bool),
    None,
    Tuple(Vec<Py>),
    List(Vec<Py>),
    Dict(Vec<(Py, Py)>),
}

impl Py {
    fn as_str(&self) -> Option<&str> {
        if let Py::Str(s) = self {
            Some(s)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Py {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seq = |f: &mut std::fmt::Formatter<'_>, items: &[Py], open: &str, close: &str| {
            f.write_str(open)?;
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{x}")?;
            }
            f.write_str(close)
        };
        match self {
            Py::Str(s) => write!(f, "'{s}'"),
            Py::Int(n) => write!(f, "{n}"),
            Py::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Py::None => f.write_str("None"),
            Py::Tuple(v) => seq(f, v, "(", ")"),
            Py::List(v) => seq(f, v, "[", "]"),
            Py::Dict(v) => {
                f.write_str("{")?;
                for (i, (k, x)) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {x}")?;
                }
                f.write_str("}")
            }
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("the .npy header is not a valid Python literal ({what} at byte {})", self.i))
    }

    fn value(&mut self, depth: usize) -> Result<Py, String> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.s.get(self.i).is_some_and(|&c| c != q) {
                    self.i += 1;
                }
                if self.i >= self.s.len() {
                    return self.fail("unterminated string");
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Ok(Py::Str(s))
            }
            Some(b'(') => self.seq(b')', depth).map(Py::Tuple),
            Some(b'[') => self.seq(b']', depth).map(Py::List),
            Some(b'{') => {
                self.i += 1;
                let mut items = vec![];
                loop {
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Py::Dict(items));
                    }
                    let k = self.value(depth + 1)?;
                    if self.peek() != Some(b':') {
                        return self.fail("expected ':'");
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    items.push((k, v));
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        _ => return self.fail("expected ',' or '}'"),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                // Python 2 wrote long integers with an `L` suffix.
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                digits.parse().map(Py::Int).or_else(|_| self.fail("integer too large"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(u8::is_ascii_alphanumeric) {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Ok(Py::Bool(true)),
                    b"False" => Ok(Py::Bool(false)),
                    b"None" => Ok(Py::None),
                    _ => {
                        self.i = start;
                        self.fail("unknown name")
                    }
                }
            }
            Some(_) => self.fail("unexpected character"),
            None => self.fail("unexpected end"),
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Result<Vec<Py>, String> {
        self.i += 1;
        let mut items = vec![];
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => return self.fail("expected ',' or a closing bracket"),
            }
        }
    }
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
    let shape = match t.shape.len() {
        1 => format!("({},)", t.shape[0]),
        _ => format!("({})", t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad so that the data starts on a 64-byte boundary, newline-terminated.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
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
