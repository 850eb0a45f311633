//! The mini-batch schedule (docs/cli.md, "Test data"): how many distinct samples the data
//! holds, how many forward passes run, how many of them accumulate into one
//! optimizer step. Pass `p` uses sample `p % data_size`; the gradient buffers
//! are reset on the first pass of every step.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::ir::{DType, TensorData};

/// Most forward passes a test run may schedule: far more than any
/// reference file holds, few enough that the harness finishes.
pub const MAX_PASSES: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// Distinct mini-batches (samples), cycled (`meta_data_size`).
    pub data_size: usize,
    /// Forward passes in total (`meta_n_batches`).
    pub n_batches: usize,
    /// Forward passes per optimizer step (`meta_n_accum`).
    pub n_accum: usize,
    /// Optimizer steps: `n_batches / n_accum`.
    pub n_steps: usize,
    /// Mini-batches stored in the file (1 + the highest `mb<i>_` index).
    pub stored: usize,
}

impl Schedule {
    /// The sample forward pass `pass` reads.
    pub fn sample(&self, pass: usize) -> usize {
        pass % self.data_size.max(1)
    }

    /// Whether the gradient buffers are overwritten (not added to) on `pass`.
    pub fn resets(&self, pass: usize) -> bool {
        pass.is_multiple_of(self.n_accum.max(1))
    }
}

/// The `meta_*` values of `inputs.npz`, read and checked.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    pub data_size: Option<usize>,
    pub n_batches: Option<usize>,
    pub n_accum: Option<usize>,
    pub learning_rate: Option<f32>,
    /// `meta_tolerance`: the model's absolute comparison tolerance.
    pub tolerance: Option<f32>,
    /// `meta_rtol`: the model's relative comparison tolerance.
    pub rtol: Option<f32>,
    /// Keys not understood (reported as warnings).
    pub unknown: Vec<String>,
}

/// One scalar: a 0-d or one-element array.
fn scalar<'a>(key: &str, t: &'a TensorData) -> Result<&'a TensorData> {
    if t.numel() != 1 {
        return Err(Error::binding(format!(
            "inputs.npz key '{key}' must be a scalar, found {} {:?}",
            t.dtype, t.shape
        )));
    }
    Ok(t)
}

fn count(key: &str, t: &TensorData) -> Result<usize> {
    let t = scalar(key, t)?;
    let v = if t.dtype.is_int() { t.to_i64().and_then(|v| v.first().copied()) } else { None };
    match v {
        Some(n) if n >= 1 => Ok(n as usize),
        Some(n) => Err(Error::binding(format!("inputs.npz key '{key}' is {n}; it must be at least 1"))),
        None => Err(Error::binding(format!("inputs.npz key '{key}' must be an integer, found {}", t.dtype))),
    }
}

/// A finite float above 0.
/// The largest `meta_tolerance` a model may set.
pub const MAX_TOLERANCE: f32 = 1.0;
/// The largest `meta_rtol` a model may set.
pub const MAX_RTOL: f32 = 0.1;

fn positive(key: &str, t: &TensorData, what: &str) -> Result<f32> {
    let t = scalar(key, t)?;
    let v = match t.dtype {
        DType::F32 | DType::F64 => t.to_f32().and_then(|v| v.first().copied()),
        _ => None,
    };
    match v {
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        Some(x) => Err(Error::binding(format!("inputs.npz key '{key}' is {x}; expected a finite {what} above 0"))),
        None => Err(Error::binding(format!("inputs.npz key '{key}' must be a float, found {}", t.dtype))),
    }
}

impl Meta {
    /// Whether `meta_<what>` is a value the schedule reads (others are
    /// reported, never read).
    pub fn reads(what: &str) -> bool {
        matches!(what, "data_size" | "n_batches" | "n_accum" | "learning_rate" | "tolerance" | "rtol")
    }

    /// Read one `meta_<what>` array.
    pub fn set(&mut self, what: &str, t: &TensorData) -> Result<()> {
        let key = format!("meta_{what}");
        match what {
            "data_size" => self.data_size = Some(count(&key, t)?),
            "n_batches" => self.n_batches = Some(count(&key, t)?),
            "n_accum" => self.n_accum = Some(count(&key, t)?),
            "learning_rate" => self.learning_rate = Some(positive(&key, t, "learning rate")?),
            "tolerance" => {
                let tol = positive(&key, t, "tolerance")?;
                // A bound on the absolute error: above it, nearly any result
                // of values about 1 would pass.
                if tol > MAX_TOLERANCE {
                    return Err(Error::binding(format!(
                        "inputs.npz key '{key}' is {tol}; a comparison tolerance is at most {MAX_TOLERANCE} (above it \
                         wrong results pass)"
                    )));
                }
                self.tolerance = Some(tol);
            }
            "rtol" => {
                let rtol = positive(&key, t, "relative tolerance")?;
                // A bound on the relative error: at 1, a result of 0 passes
                // for every reference.
                if rtol > MAX_RTOL {
                    return Err(Error::binding(format!(
                        "inputs.npz key '{key}' is {rtol}; a relative tolerance is at most {MAX_RTOL} (above it \
                         wrong results pass)"
                    )));
                }
                self.rtol = Some(rtol);
            }
            _ => self.unknown.push(key),
        }
        Ok(())
    }

    /// The schedule, given how many mini-batches the file stores and the
    /// training spec's `accumulation_steps` (with where it was given),
    /// which `meta_n_accum` may repeat but not contradict.
    pub fn schedule(&self, stored: usize, spec: Option<(usize, &str)>, warnings: &mut Vec<String>) -> Result<Schedule> {
        let data_size = self.data_size.unwrap_or(stored);
        if data_size > stored {
            return Err(Error::binding(format!(
                "meta_data_size is {data_size} but inputs.npz holds {stored} mini-batch(es) (0..{})",
                stored.saturating_sub(1)
            )));
        }
        if data_size < stored {
            warnings.push(format!(
                "inputs.npz holds {stored} mini-batches but meta_data_size is {data_size}: mini-batches {data_size}..{} \
                 are never used",
                stored - 1
            ));
        }
        let n_batches = self.n_batches.unwrap_or(stored);
        let (n_accum, accum_key) = match (spec, self.n_accum) {
            (Some((a, from)), Some(m)) if a != m => {
                return Err(Error::binding(format!(
                    "accumulation_steps is {a} ({from}) but inputs.npz's meta_n_accum is {m}: the two must agree; \
                     drop meta_n_accum or make it {a}"
                ))
                .at_key("meta_n_accum"))
            }
            (Some((a, _)), _) => (a, "accumulation_steps"),
            (None, m) => (m.unwrap_or(1), "meta_n_accum"),
        };
        if n_batches > MAX_PASSES {
            return Err(Error::binding(format!(
                "meta_n_batches is {n_batches}: deploygen schedules at most {MAX_PASSES} forward passes \
                 (inputs.npz stores {stored} mini-batch(es))"
            )));
        }
        if n_accum > n_batches {
            return Err(Error::binding(format!(
                "{accum_key} is {n_accum} but the schedule runs {n_batches} forward pass(es) (meta_n_batches, or \
                 the mini-batches stored): not one optimizer step would complete"
            )));
        }
        if !n_batches.is_multiple_of(n_accum) {
            return Err(Error::binding(format!(
                "the schedule's {n_batches} forward passes (meta_n_batches, or the mini-batches stored) are not a \
                 multiple of {accum_key} ({n_accum}): the last optimizer step would be incomplete"
            )));
        }
        Ok(Schedule { data_size, n_batches, n_accum, n_steps: n_batches / n_accum, stored })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64s(v: i64) -> TensorData {
        TensorData::from_i64(vec![], &[v])
    }

    #[test]
    fn defaults_come_from_the_stored_mini_batches() {
        let s = Meta::default().schedule(4, None, &mut vec![]).unwrap();
        assert_eq!((s.data_size, s.n_batches, s.n_accum, s.n_steps), (4, 4, 1, 4));
    }

    #[test]
    fn accumulation_and_cycling() {
        let mut m = Meta::default();
        m.set("data_size", &i64s(2)).unwrap();
        m.set("n_batches", &i64s(6)).unwrap();
        m.set("n_accum", &i64s(2)).unwrap();
        let mut w = vec![];
        let s = m.schedule(3, None, &mut w).unwrap();
        assert_eq!((s.n_steps, s.sample(5), s.resets(4), s.resets(5)), (3, 1, true, false));
        assert_eq!(w.len(), 1, "mini-batch 2 is stored but unused: {w:?}");
    }

    #[test]
    fn inconsistent_meta_is_an_error() {
        let mut m = Meta::default();
        m.set("n_accum", &i64s(3)).unwrap();
        assert!(m.schedule(4, None, &mut vec![]).unwrap_err().to_string().contains("not a multiple"));
        let mut m = Meta::default();
        m.set("data_size", &i64s(5)).unwrap();
        assert!(m.schedule(4, None, &mut vec![]).is_err());
        assert!(Meta::default().set("n_accum", &i64s(0)).is_err());
        assert!(Meta::default().set("n_accum", &TensorData::from_f32(vec![], &[2.0])).is_err());
        assert!(Meta::default().set("learning_rate", &i64s(1)).is_err());
    }

    #[test]
    fn the_spec_sets_accumulation_and_meta_may_not_contradict_it() {
        let s = Meta::default().schedule(6, Some((3, "train.toml")), &mut vec![]).unwrap();
        assert_eq!((s.n_accum, s.n_steps), (3, 2));
        let mut m = Meta::default();
        m.set("n_accum", &i64s(2)).unwrap();
        let e = m.schedule(6, Some((3, "train.toml")), &mut vec![]).unwrap_err().to_string();
        assert!(e.contains("accumulation_steps is 3") && e.contains("meta_n_accum is 2"), "{e}");
        assert_eq!(m.schedule(6, None, &mut vec![]).unwrap().n_accum, 2);
    }
}
