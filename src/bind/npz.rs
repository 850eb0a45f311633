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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use ndarray_npy::npy::header::{Header as NpyFileHeader, Layout};
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
/// Bytes of a member read to find its header: the magic string, version,
/// length field and the longest header accepted.
const HEADER_PREFIX: u64 = 12 + MAX_HEADER as u64;
/// Nesting limit for the header's Python literal.
const MAX_DEPTH: usize = 16;

/// One `.npz` file: its members by key (member name without `.npy`), in
/// file order. Opening it reads every member's `.npy` header (dtype and
/// shape, from the first bytes of the member); a member's values are
/// decompressed only when asked for, once. So the binding inflates only
/// the arrays it binds, each after its header has shown that it fits, and
/// a file of huge members nobody uses costs nothing.
///
/// The zip directory is read once, when the file is opened; every member
/// is found through it afterwards, so reading a file is linear in its
/// members.
pub struct Npz {
    pub path: PathBuf,
    /// The archive over the file's bytes, its directory read; cloned
    /// (shared bytes, shared directory) to read a member.
    zip: zip::ZipArchive<Cursor<Arc<[u8]>>>,
    members: IndexMap<String, Member>,
    inflated: AtomicU64,
}

impl std::fmt::Debug for Npz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Npz").field("path", &self.path).field("members", &self.members).finish()
    }
}

/// One member: what its header says, and its values once read.
#[derive(Debug)]
pub struct Member {
    pub header: Header,
    index: usize,
    /// Uncompressed size the zip entry declares (header and data).
    size: u64,
    value: OnceLock<TensorData>,
}

/// What an array's `.npy` header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl Header {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn of(t: &TensorData) -> Header {
        Header { dtype: t.dtype, shape: t.shape.clone() }
    }
}

/// What is wrong with one `.npy` array: a sentence without the key (the
/// caller names the file and the key, [`Error::Npz`]).
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("not an .npy array (magic string missing)")]
    NoMagic,
    #[error(".npy format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)")]
    Version { major: u8, minor: u8 },
    #[error("the .npy header is cut short")]
    HeaderCut,
    #[error("the .npy header claims {0} bytes (at most {MAX_HEADER} are accepted)")]
    HeaderTooLong(usize),
    #[error("the .npy header claims {0} bytes but the array is cut short")]
    HeaderPastEnd(usize),
    #[error("the .npy header is nested too deeply")]
    TooDeep,
    #[error("the .npy header is not valid: {0}")]
    Header(#[source] ndarray_npy::npy::header::ReadHeaderError),
    /// A descriptor that is not a plain type (a structured dtype), as written.
    #[error("dtype descriptor {0} is not a plain type ({SUPPORTED})")]
    NotPlain(String),
    #[error("dtype descriptor '{0}' is not supported ({SUPPORTED})")]
    Unsupported(String),
    #[error("dtype {0} has no fixed element size")]
    NoElementSize(DType),
    #[error("shape {0:?} is too large")]
    TooLarge(Vec<usize>),
    #[error("{} {:?} needs {needs} bytes of data but the array holds {holds}", header.dtype, header.shape)]
    DataSize { header: Header, needs: usize, holds: u64 },
    #[error("cannot decompress: {0}")]
    Decompress(#[source] std::io::Error),
}

/// Why an array cannot be written as `.npy` (or into an `.npz`).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write {0} to .npy")]
    Dtype(DType),
    #[error("{0}")]
    Header(#[from] ndarray_npy::npy::header::FormatHeaderError),
    #[error("{0}")]
    Zip(#[from] zip::result::ZipError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The descriptors [`descriptor`] reads, for messages.
const SUPPORTED: &str =
    "supported: f32 '<f4', f64 '<f8', i64 '<i8', i32 '<i4', i16, i8, u8 '|u1', u16, u32, u64, bool '|b1', f16";

/// A parsed `.npy` header and where its data starts.
struct NpyHeader {
    header: Header,
    swap: bool,
    fortran: bool,
    data_at: usize,
    data_bytes: usize,
}

impl Npz {
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// An archive of `arrays` (as [`write_npz`] writes them), opened.
    pub fn from_arrays(path: &Path, arrays: &[(&str, &TensorData)]) -> Result<Npz> {
        let bytes = write_npz(arrays).map_err(|e| npz_err(path, None, e.to_string()))?;
        parse_owned(path, bytes)
    }

    /// The header of the member `key`, without reading its values.
    pub fn header(&self, key: &str) -> Option<&Header> {
        self.members.get(key).map(|m| &m.header)
    }

    /// Every member's key and header, in file order.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &Header)> {
        self.members.iter().map(|(k, m)| (k.as_str(), &m.header))
    }

    /// The values of member `key` (`None`: no such key), decompressed on
    /// first use.
    pub fn get(&self, key: &str) -> Result<Option<&TensorData>> {
        let Some(m) = self.members.get(key) else { return Ok(None) };
        if let Some(v) = m.value.get() {
            return Ok(Some(v));
        }
        let v = self.inflate(key, m)?;
        Ok(Some(m.value.get_or_init(|| v)))
    }

    /// Every array, all decompressed, in file order.
    pub fn arrays(&self) -> Result<IndexMap<String, TensorData>> {
        self.keys().map(|k| Ok((k.to_string(), self.get(k)?.expect("a listed key").clone()))).collect()
    }

    /// Bytes decompressed so far (every member's values, once each).
    pub fn inflated_bytes(&self) -> u64 {
        self.inflated.load(Ordering::Relaxed)
    }

    fn inflate(&self, key: &str, m: &Member) -> Result<TensorData> {
        let err = |d: String| npz_err(&self.path, Some(key), d);
        // A clone shares the bytes and the directory read at opening.
        let mut zip = self.zip.clone();
        let member = zip.by_index(m.index).map_err(|e| err(format!("cannot open the zip member: {e}")))?;
        let mut data = Vec::new();
        member.take(m.size + 1).read_to_end(&mut data).map_err(|e| err(format!("cannot decompress: {e}")))?;
        self.inflated.fetch_add(data.len() as u64, Ordering::Relaxed);
        if data.len() as u64 != m.size {
            return Err(err(format!("member holds {} bytes but its zip entry declares {}", data.len(), m.size)));
        }
        parse_npy(&data).map_err(|e| err(e.to_string()))
    }
}

/// Every array of one `.npz` file, decompressed: for tools that rewrite
/// the whole file (triage's fixes) and for tests.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub path: PathBuf,
    pub arrays: IndexMap<String, TensorData>,
}

impl Loaded {
    pub fn get(&self, key: &str) -> Option<&TensorData> {
        self.arrays.get(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.arrays.keys().map(String::as_str)
    }
}

/// Read an `.npz` file from disk with every array decompressed.
pub fn read_all(path: &Path) -> Result<Loaded> {
    let npz = read(path)?;
    Ok(Loaded { arrays: npz.arrays()?, path: npz.path })
}

fn npz_err(path: &Path, key: Option<&str>, detail: impl Into<String>) -> Error {
    Error::Npz { path: path.to_path_buf(), key: key.map(str::to_string), detail: detail.into() }
}

/// Open an `.npz` file from disk (headers only; see [`Npz`]).
pub fn read(path: &Path) -> Result<Npz> {
    let mut f = crate::files::open_regular(path, "an .npz archive")?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(|e| Error::io(path, e))?;
    parse_owned(path, bytes)
}

/// Open `.npz` bytes: the archive's directory and every member's header,
/// each checked against the member's declared size. `path` is only used
/// in messages.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Npz> {
    parse_owned(path, bytes.to_vec())
}

/// [`parse`], keeping `bytes`.
fn parse_owned(path: &Path, bytes: Vec<u8>) -> Result<Npz> {
    let bytes: Arc<[u8]> = bytes.into();
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| npz_err(path, None, format!("not a readable .npz (zip) archive: {e}")))?;
    let mut members = IndexMap::new();
    for index in 0..zip.len() {
        let member =
            zip.by_index(index).map_err(|e| npz_err(path, None, format!("cannot open zip member #{index}: {e}")))?;
        if member.is_dir() {
            continue;
        }
        let name = member.name().to_string();
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        if key.contains('\0') {
            let shown = key.escape_debug().to_string();
            return Err(npz_err(
                path,
                Some(&shown),
                "the key holds a NUL byte, which the generated harness cannot print",
            ));
        }
        let size = member.size();
        if size > MAX_MEMBER {
            return Err(npz_err(
                path,
                Some(&key),
                format!("member declares {size} bytes; deploygen reads at most {MAX_MEMBER} per array"),
            ));
        }
        let header = member_header(member, size).map_err(|e| npz_err(path, Some(&key), e.to_string()))?;
        let m = Member { header, index, size, value: OnceLock::new() };
        if members.insert(key.clone(), m).is_some() {
            return Err(npz_err(path, Some(&key), "the key appears twice in the archive"));
        }
    }
    Ok(Npz { path: path.to_path_buf(), zip, members, inflated: AtomicU64::new(0) })
}

/// A member's header, read from its first bytes only, and checked against
/// the size the zip entry declares.
fn member_header(member: impl Read, size: u64) -> Result<Header, NpyError> {
    let mut prefix = Vec::new();
    member.take(size.min(HEADER_PREFIX)).read_to_end(&mut prefix).map_err(NpyError::Decompress)?;
    let h = npy_header(&prefix)?;
    let holds = size - h.data_at as u64;
    if holds != h.data_bytes as u64 {
        return Err(NpyError::DataSize { header: h.header, needs: h.data_bytes, holds });
    }
    Ok(h.header)
}

/// Parse one `.npy` file. The error is a sentence without the key.
pub fn parse_npy(bytes: &[u8]) -> Result<TensorData, NpyError> {
    let h = npy_header(bytes)?;
    let body = &bytes[h.data_at..];
    if body.len() != h.data_bytes {
        return Err(NpyError::DataSize { header: h.header, needs: h.data_bytes, holds: body.len() as u64 });
    }
    let esize = h.header.dtype.size().unwrap_or(1);
    let mut data = body.to_vec();
    if h.swap && esize > 1 {
        for c in data.chunks_exact_mut(esize) {
            c.reverse();
        }
    }
    if h.header.dtype == DType::Bool {
        for b in &mut data {
            *b = (*b != 0) as u8;
        }
    }
    if h.fortran && h.header.shape.len() > 1 {
        data = fortran_to_c(&data, &h.header.shape, esize);
    }
    Ok(TensorData { dtype: h.header.dtype, shape: h.header.shape, bytes: data })
}

/// The header of an `.npy` file, from its first bytes.
fn npy_header(bytes: &[u8]) -> Result<NpyHeader, NpyError> {
    precheck(bytes)?;
    let mut cursor = Cursor::new(bytes);
    let h = NpyFileHeader::from_reader(&mut cursor).map_err(NpyError::Header)?;
    let (dtype, swap) = descriptor(&h.type_descriptor)?;
    let esize = dtype.size().ok_or(NpyError::NoElementSize(dtype))?;
    let numel = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let data_bytes = numel.and_then(|n| n.checked_mul(esize)).ok_or_else(|| NpyError::TooLarge(h.shape.clone()))?;
    Ok(NpyHeader {
        header: Header { dtype, shape: h.shape },
        swap,
        fortran: h.layout == Layout::Fortran,
        data_at: cursor.position() as usize,
        data_bytes,
    })
}

/// Bounds checked before the header is parsed: the magic string, a known
/// version, a header length within numpy's limit and within the member, and
/// shallow bracket nesting (a header is one flat dict).
fn precheck(bytes: &[u8]) -> Result<(), NpyError> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < MAGIC.len() + 2 || !bytes.starts_with(MAGIC) {
        return Err(NpyError::NoMagic);
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let len_bytes = match major {
        1 => 2usize,
        2 | 3 => 4,
        _ => return Err(NpyError::Version { major, minor }),
    };
    let start = 8 + len_bytes;
    let Some(len_field) = bytes.get(8..start) else {
        return Err(NpyError::HeaderCut);
    };
    let header_len = len_field.iter().rev().fold(0usize, |a, &b| (a << 8) | b as usize);
    if header_len > MAX_HEADER {
        return Err(NpyError::HeaderTooLong(header_len));
    }
    let Some(header) = bytes.get(start..start + header_len) else {
        return Err(NpyError::HeaderPastEnd(header_len));
    };
    let mut depth = 0usize;
    for &c in header {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err(NpyError::TooDeep);
        }
    }
    Ok(())
}

/// Map a numpy type descriptor (`'<f4'`, `'|b1'`, `'>i8'`, …) to a dtype and
/// whether its bytes need swapping to little-endian.
fn descriptor(descr: &Py) -> Result<(DType, bool), NpyError> {
    let Py::String(s) = descr else {
        return Err(NpyError::NotPlain(descr.to_string()));
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
        _ => return Err(NpyError::Unsupported(s.clone())),
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
pub fn write_npz(arrays: &[(&str, &TensorData)]) -> Result<Vec<u8>, WriteError> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (key, t) in arrays {
        zip.start_file(format!("{key}.npy"), options)?;
        zip.write_all(&npy_bytes(t)?)?;
    }
    Ok(zip.finish()?.into_inner())
}

/// One array as `.npy` 1.0 bytes.
pub fn npy_bytes(t: &TensorData) -> Result<Vec<u8>, WriteError> {
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
        other => return Err(WriteError::Dtype(other)),
    };
    let header =
        NpyFileHeader { type_descriptor: Py::String(descr.into()), layout: Layout::Standard, shape: t.shape.clone() };
    let mut out = header.to_bytes()?;
    out.extend_from_slice(&t.bytes);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], v: &[f32]) -> TensorData {
        TensorData::from_f32(shape.to_vec(), v)
    }

    /// The harness prints reference keys; a C string cannot hold a NUL.
    #[test]
    fn a_key_with_a_nul_byte_is_refused() {
        let a = f32s(&[1], &[1.]);
        let e = parse(Path::new("x.npz"), &write_npz(&[("w\0_updated", &a)]).unwrap()).unwrap_err().to_string();
        assert!(e.contains("NUL"), "{e}");
    }

    #[test]
    fn round_trip_through_the_writer() {
        let a = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let b = TensorData::from_i64(vec![], &[7]);
        let bytes = write_npz(&[("a", &a), ("meta_b", &b)]).unwrap();
        let npz = parse(Path::new("x.npz"), &bytes).unwrap();
        assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "meta_b"]);
        assert_eq!(npz.get("a").unwrap(), Some(&a));
        assert_eq!(npz.get("meta_b").unwrap(), Some(&b));
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
        let e = parse_npy(&npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", &[0; 8]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'<c8'"), "{e}");
        let e = parse_npy(&npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", &[0; 4]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("[('a', '<f4')]"), "{e}");
    }

    #[test]
    fn short_data_and_oversized_headers_are_errors() {
        let e = parse_npy(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", &[0; 8]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs 12 bytes"), "{e}");
        let mut huge = b"\x93NUMPY\x02\x00".to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(parse_npy(&huge), Err(NpyError::HeaderTooLong(_))));
        let deep = format!("{}{}", "(".repeat(100), ")".repeat(100));
        assert!(matches!(parse_npy(&npy(&deep, &[])), Err(NpyError::TooDeep)));
    }
}
