//! C literals: exact, deterministic text for values (model text goes
//! through [`crate::escape`]).

use crate::ir::{DType, TensorData};

/// An f32 as a C float literal that reads back to the same bits.
pub fn f32_lit(v: f32) -> String {
    if v.is_nan() {
        "NAN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        }
    } else {
        let s = format!("{v:?}");
        if s.contains('.') || s.contains('e') {
            format!("{s}f")
        } else {
            format!("{s}.0f")
        }
    }
}

/// The C element type of a buffer's dtype.
pub fn ctype(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F32 => "float",
        DType::I64 => "int64_t",
        DType::I32 => "int32_t",
        DType::U8 | DType::Bool => "uint8_t",
        DType::I8 => "int8_t",
        DType::U32 => "uint32_t",
        DType::I16 => "int16_t",
        DType::U16 => "uint16_t",
        DType::U64 => "uint64_t",
        _ => return None,
    })
}

/// `ctype` by the plan's dtype name (`f32`, `i64`, …).
pub fn ctype_of(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::I64 => "int64_t",
        DType::I32 => "int32_t",
        DType::U8 | DType::Bool => "uint8_t",
        DType::I8 => "int8_t",
        DType::U32 => "uint32_t",
        DType::I16 => "int16_t",
        DType::U16 => "uint16_t",
        DType::U64 => "uint64_t",
        _ => "uint8_t",
    }
}

fn i64_lit(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else {
        format!("{v}LL")
    }
}

/// The values of a tensor as C initialiser elements, eight per line,
/// for an array of `ctype(data.dtype)` (f64 narrowed to float). At least
/// one element (C forbids empty initialisers).
pub fn values(data: &TensorData) -> Vec<String> {
    let b = &data.bytes;
    let v: Vec<String> = match data.dtype {
        DType::F32 | DType::F64 => data.to_f32().unwrap_or_default().into_iter().map(f32_lit).collect(),
        DType::I64 => data.to_i64().unwrap_or_default().into_iter().map(i64_lit).collect(),
        DType::U64 => b.chunks_exact(8).map(|c| format!("{}ULL", u64::from_le_bytes(c.try_into().unwrap()))).collect(),
        DType::I32 => b
            .chunks_exact(4)
            .map(|c| {
                let x = i32::from_le_bytes(c.try_into().unwrap());
                if x == i32::MIN {
                    "(-2147483647 - 1)".to_string()
                } else {
                    x.to_string()
                }
            })
            .collect(),
        DType::U32 => b.chunks_exact(4).map(|c| format!("{}u", u32::from_le_bytes(c.try_into().unwrap()))).collect(),
        DType::I16 => b.chunks_exact(2).map(|c| i16::from_le_bytes(c.try_into().unwrap()).to_string()).collect(),
        DType::U16 => b.chunks_exact(2).map(|c| u16::from_le_bytes(c.try_into().unwrap()).to_string()).collect(),
        DType::I8 => b.iter().map(|&x| (x as i8).to_string()).collect(),
        _ => b.iter().map(|x| x.to_string()).collect(),
    };
    if v.is_empty() {
        vec!["0".into()]
    } else {
        v
    }
}

/// Initialiser elements as lines of `per_line`, each line indented and
/// ending with a comma.
pub fn lines(v: &[String], per_line: usize) -> Vec<String> {
    v.chunks(per_line.max(1)).map(|c| format!("    {},", c.join(", "))).collect()
}

/// Element type a tensor's values are written as (f64 references become float).
pub fn value_ctype(d: DType) -> &'static str {
    match d {
        DType::F64 => "float",
        other => ctype(other).unwrap_or("uint8_t"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_round_trip() {
        for v in [0.1f32, 1.0, -2.5e-8, 3.4028235e38, 1e-45, 0.0, -0.0, 123456.78] {
            let s = f32_lit(v);
            let t = s.trim_end_matches('f');
            assert_eq!(t.parse::<f32>().unwrap().to_bits(), v.to_bits(), "{s}");
        }
        assert_eq!(f32_lit(f32::NAN), "NAN");
        assert_eq!(f32_lit(2.0), "2.0f");
    }
}
