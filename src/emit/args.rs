//! Kernel arguments in C: the one place an [`Arg`] becomes C text, and the
//! check of every call against its args struct as
//! `runtime/kernels/dg_kernels.h` declares it (read by `build.rs` with the
//! family headers it includes, `dg_k_*.h`): a field
//! the struct lacks, a value of the wrong kind, an array too long, or a
//! field left out (which C would silently zero) is an internal error
//! naming the kernel and the field.

use crate::c;
use crate::ops::kernel::{Arg, Invocation};

/// One field: name, element type (or "ptr"), array dims, optional.
type Field = (&'static str, &'static str, &'static [u64], bool);
/// `(struct, fields)`.
type Structs = &'static [(&'static str, &'static [Field])];

const STRUCTS: Structs = include!(concat!(env!("OUT_DIR"), "/kernel_args.rs"));
const ENUMS: &[&str] = include!(concat!(env!("OUT_DIR"), "/kernel_enums.rs"));

/// A kernel call that does not match its args struct: an internal error
/// naming the kernel, its struct and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("internal error: {func} ({args_type}): {fault}")]
pub struct ArgsError {
    pub func: String,
    pub args_type: String,
    pub fault: ArgsFault,
}

/// What is wrong with the call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgsFault {
    #[error("runtime/kernels/dg_kernels.h declares no such args struct")]
    NoStruct,
    #[error("the struct has no field '{0}'")]
    NoField(&'static str),
    #[error("field '{field}': {misfit}")]
    Misfit { field: &'static str, misfit: Misfit },
    #[error("fields left unset (C would make them zero): {}", .0.join(", "))]
    Unset(Vec<&'static str>),
    #[error("field '{0}' set twice")]
    Twice(&'static str),
}

/// Why a value cannot initialise a field; `arg` describes the value
/// (`unsigned 4`, `a pointer`, …).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Misfit {
    #[error("{given} values for an array of {n}")]
    TooLong { given: usize, n: u64 },
    #[error("{arg} for an array")]
    NotAList { arg: String },
    #[error("{arg} for a {ty}")]
    Type { arg: String, ty: String },
}

/// The C text of an argument.
pub fn c(a: &Arg) -> String {
    match a {
        Arg::U(v) => format!("{v}u"),
        Arg::I(v) if *v == i64::MIN => "(-9223372036854775807LL - 1)".into(),
        Arg::I(v) if i32::try_from(*v).is_ok() => v.to_string(),
        Arg::I(v) => format!("{v}LL"),
        Arg::F(v) => c::f32_lit(*v),
        Arg::Ptr(e) => e.clone(),
        Arg::Null => "NULL".into(),
        Arg::Local(n) | Arg::Enum(n) => (*n).to_string(),
        Arg::List(v) if v.is_empty() => "{0}".into(),
        Arg::List(v) => format!("{{{}}}", v.iter().map(c).collect::<Vec<_>>().join(", ")),
    }
}

/// The fields of an args struct.
fn fields(args_type: &str) -> Option<&'static [Field]> {
    STRUCTS.iter().find(|(n, _)| *n == args_type).map(|(_, f)| *f)
}

/// The element type of a field (for a table of its per-tile values).
pub fn field_type(args_type: &str, field: &str) -> Option<&'static str> {
    fields(args_type)?.iter().find(|(n, ..)| *n == field).map(|(_, t, ..)| *t)
}

/// Whether `a` can initialise an element of type `ty` with `dims` array dimensions.
fn fits(a: &Arg, ty: &str, dims: &[u64]) -> Result<(), Misfit> {
    if let Some((&n, inner)) = dims.split_first() {
        return match a {
            Arg::List(v) if v.len() as u64 <= n => v.iter().try_for_each(|x| fits(x, ty, inner)),
            Arg::List(v) => Err(Misfit::TooLong { given: v.len(), n }),
            other => Err(Misfit::NotAList { arg: kind(other) }),
        };
    }
    let ok = match (ty, a) {
        ("ptr", Arg::Ptr(_) | Arg::Null | Arg::Local(_)) => true,
        ("float", Arg::F(_)) => true,
        (_, Arg::Enum(e)) => ty != "ptr" && ty != "float" && ENUMS.contains(e),
        ("uint32_t", Arg::U(v)) => *v <= u32::MAX as u64,
        ("uint8_t", Arg::U(v)) => *v <= u8::MAX as u64,
        ("int32_t", Arg::U(v)) => *v <= i32::MAX as u64,
        ("int32_t", Arg::I(v)) => i32::try_from(*v).is_ok(),
        ("int64_t", Arg::U(v)) => *v <= i64::MAX as u64,
        ("int64_t", Arg::I(_)) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Misfit::Type { arg: kind(a), ty: ty.to_string() })
    }
}

fn kind(a: &Arg) -> String {
    match a {
        Arg::U(v) => format!("unsigned {v}"),
        Arg::I(v) => format!("signed {v}"),
        Arg::F(v) => format!("float {v}"),
        Arg::Ptr(_) => "a pointer".into(),
        Arg::Null => "NULL".into(),
        Arg::Local(n) => format!("local array {n}"),
        Arg::Enum(e) => format!("enumerator {e}"),
        Arg::List(_) => "a list".into(),
    }
}

/// Checks a call's fields against its struct.
pub fn check(inv: &Invocation) -> Result<(), ArgsError> {
    let err = |fault| ArgsError { func: inv.func.clone(), args_type: inv.args_type.clone(), fault };
    let Some(decl) = fields(&inv.args_type) else {
        return Err(err(ArgsFault::NoStruct));
    };
    for &(name, ref arg) in &inv.fields {
        let Some((_, ty, dims, _)) = decl.iter().find(|(n, ..)| *n == name) else {
            return Err(err(ArgsFault::NoField(name)));
        };
        fits(arg, ty, dims).map_err(|misfit| err(ArgsFault::Misfit { field: name, misfit }))?;
    }
    let missing: Vec<&str> = decl
        .iter()
        .filter(|(n, _, _, optional)| !optional && !inv.fields.iter().any(|(f, _)| f == n))
        .map(|(n, ..)| *n)
        .collect();
    if !missing.is_empty() {
        return Err(err(ArgsFault::Unset(missing)));
    }
    let mut names: Vec<&str> = inv.fields.iter().map(|(n, _)| *n).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(err(ArgsFault::Twice(w[0])));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::kernel::Invocation;

    fn inv(fields: Vec<(&'static str, Arg)>) -> Invocation {
        Invocation {
            func: "dg_relu_f32".into(),
            args_type: "dg_unary_args_t".into(),
            fields,
            forked: true,
            locals: vec![],
            stage: vec![],
            comment: None,
        }
    }

    #[test]
    fn the_header_is_read() {
        let conv = fields("dg_conv_args_t").expect("dg_conv_args_t");
        assert!(conv.iter().any(|(n, t, ..)| *n == "x" && *t == "ptr"));
        assert!(conv.iter().any(|(n, t, _, o)| *n == "pad_top" && *t == "uint32_t" && !o));
        assert!(conv.iter().any(|(n, _, _, o)| *n == "act" && *o));
        let bin = fields("dg_binary_args_t").unwrap();
        assert!(bin.iter().any(|(n, _, d, _)| *n == "shape" && d == &[6]));
        assert!(ENUMS.contains(&"DG_DT_F32"));
    }

    #[test]
    fn a_call_must_match_its_struct() {
        let good = || vec![("x", Arg::Ptr("p".into())), ("y", Arg::Null), ("n", Arg::U(4))];
        assert_eq!(check(&inv(good())), Ok(()));
        let mut typo = good();
        typo[2].0 = "nn";
        assert_eq!(check(&inv(typo)).unwrap_err().fault, ArgsFault::NoField("nn"));
        let mut wrong = good();
        wrong[2].1 = Arg::F(4.0);
        assert_eq!(
            check(&inv(wrong)).unwrap_err().to_string(),
            "internal error: dg_relu_f32 (dg_unary_args_t): field 'n': float 4 for a uint32_t"
        );
        let mut short = good();
        short.pop();
        assert!(check(&inv(short)).unwrap_err().to_string().contains("left unset"));
    }

    #[test]
    fn arguments_print_as_c() {
        assert_eq!(c(&Arg::List(vec![Arg::U(1), Arg::I(-2), Arg::I(1 << 40)])), "{1u, -2, 1099511627776LL}");
        assert_eq!(c(&Arg::List(vec![])), "{0}");
        assert_eq!(c(&Arg::I(i64::MIN)), "(-9223372036854775807LL - 1)");
    }
}
