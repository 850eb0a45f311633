//! Element types, shapes and constant tensor data.

use std::fmt;

/// Element type of a tensor. Codes follow `onnx.TensorProto.DataType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    BF16,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
    String,
    /// A type deploygen does not compute with (complex, float8, int4, …).
    Other(i32),
}

impl DType {
    pub fn from_onnx(code: i32) -> DType {
        match code {
            1 => DType::F32,
            2 => DType::U8,
            3 => DType::I8,
            4 => DType::U16,
            5 => DType::I16,
            6 => DType::I32,
            7 => DType::I64,
            8 => DType::String,
            9 => DType::Bool,
            10 => DType::F16,
            11 => DType::F64,
            12 => DType::U32,
            13 => DType::U64,
            16 => DType::BF16,
            other => DType::Other(other),
        }
    }

    /// The ONNX `TensorProto.DataType` code: the inverse of [`DType::from_onnx`].
    pub fn to_onnx(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::U8 => 2,
            DType::I8 => 3,
            DType::U16 => 4,
            DType::I16 => 5,
            DType::I32 => 6,
            DType::I64 => 7,
            DType::String => 8,
            DType::Bool => 9,
            DType::F16 => 10,
            DType::F64 => 11,
            DType::U32 => 12,
            DType::U64 => 13,
            DType::BF16 => 16,
            DType::Other(code) => code,
        }
    }

    /// Bytes per element; `None` for strings and unknown types.
    pub fn size(self) -> Option<usize> {
        Some(match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::String | DType::Other(_) => return None,
        })
    }

    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32 | DType::U64
        )
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// Short name used in reports and JSON (`f32`, `i64`, `bool`, …).
    pub fn name(self) -> String {
        match self {
            DType::F32 => "f32".into(),
            DType::F64 => "f64".into(),
            DType::F16 => "f16".into(),
            DType::BF16 => "bf16".into(),
            DType::I8 => "i8".into(),
            DType::I16 => "i16".into(),
            DType::I32 => "i32".into(),
            DType::I64 => "i64".into(),
            DType::U8 => "u8".into(),
            DType::U16 => "u16".into(),
            DType::U32 => "u32".into(),
            DType::U64 => "u64".into(),
            DType::Bool => "bool".into(),
            DType::String => "string".into(),
            DType::Other(c) => format!("onnx-type-{c}"),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// One dimension as declared in the file: a number, or a symbolic name
/// (`dim_param`) that the test data binds later.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Fixed(usize),
    Sym(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Sym(s) if s.is_empty() => f.write_str("?"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

/// Shape and element type of a value. `dims == None` means the rank is
/// unknown. A shape is *static* when every dim is `Fixed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    pub dtype: DType,
    pub dims: Option<Vec<Dim>>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: &[usize]) -> Self {
        TensorType { dtype, dims: Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()) }
    }

    pub fn unknown(dtype: DType) -> Self {
        TensorType { dtype, dims: None }
    }

    /// The concrete shape, if every dim is known.
    pub fn shape(&self) -> Option<Vec<usize>> {
        self.dims
            .as_ref()?
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => Some(*n),
                Dim::Sym(_) => None,
            })
            .collect()
    }

    pub fn numel(&self) -> Option<usize> {
        self.shape()?.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    pub fn bytes(&self) -> Option<usize> {
        self.numel()?.checked_mul(self.dtype.size()?)
    }

    /// `[1, 3, 32, 32]`, `[N, 10]`, or `[?]` when the rank is unknown.
    pub fn shape_string(&self) -> String {
        match &self.dims {
            None => "[?]".into(),
            Some(d) => format!("[{}]", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.dtype, self.shape_string())
    }
}

/// A constant tensor's bytes, little-endian, densely packed.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl TensorData {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype, &self.shape)
    }

    pub fn from_i64(shape: Vec<usize>, values: &[i64]) -> Self {
        TensorData { dtype: DType::I64, shape, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }

    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Self {
        TensorData { dtype: DType::F32, shape, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }

    /// Values widened to i64, for integer and bool tensors (shape
    /// arithmetic, axes, indices). `None` for other types.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        let b = &self.bytes;
        let v: Vec<i64> = match self.dtype {
            DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect(),
            DType::I32 => b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
            DType::U32 => b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
            DType::I16 => b.chunks_exact(2).map(|c| i16::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
            DType::U16 => b.chunks_exact(2).map(|c| u16::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
            DType::I8 => b.iter().map(|&x| x as i8 as i64).collect(),
            DType::U8 | DType::Bool => b.iter().map(|&x| x as i64).collect(),
            DType::U64 => b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) as i64).collect(),
            _ => return None,
        };
        Some(v)
    }

    /// Values as f32, for float tensors (f64 narrowed).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        let b = &self.bytes;
        Some(match self.dtype {
            DType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
            DType::F64 => b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap()) as f32).collect(),
            _ => return None,
        })
    }

    /// Rebuild the same values as another integer type (Cast folding).
    pub fn from_i64_as(dtype: DType, shape: Vec<usize>, values: &[i64]) -> Option<Self> {
        let bytes: Vec<u8> = match dtype {
            DType::I64 | DType::U64 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            DType::I32 | DType::U32 => values.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect(),
            DType::I16 | DType::U16 => values.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect(),
            DType::I8 | DType::U8 => values.iter().map(|&v| v as u8).collect(),
            DType::Bool => values.iter().map(|&v| (v != 0) as u8).collect(),
            DType::F32 => values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
            DType::F64 => values.iter().flat_map(|&v| (v as f64).to_le_bytes()).collect(),
            _ => return None,
        };
        Some(TensorData { dtype, shape, bytes })
    }
}
