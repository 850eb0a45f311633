//! Range's arithmetic, exact: the number of elements and the values of
//! `Range(start, limit, delta)` — `start + i * delta` for i in
//! `0..max(ceil((limit - start) / delta), 0)` — computed in integers for
//! integer operands (an i64 operand beyond 2^53 is not an f64), and
//! refused for a float operand that is not finite (NaN is no bound).
//! Used by Range's registry entry when it folds.

/// One operand of Range, in its own type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    Int(i64),
    Float(f64),
}

/// Why Range has no result: a sentence without the node (the caller
/// names it).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RangeError {
    #[error("delta (input 2) is 0")]
    ZeroDelta,
    #[error("{what} is {value}: Range needs finite operands")]
    NotFinite { what: &'static str, value: f64 },
    #[error("inputs must have one element type")]
    Mixed,
}

/// The number of elements of `Range(start, limit, delta)`.
pub fn count(start: Operand, limit: Operand, delta: Operand) -> Result<u128, RangeError> {
    match (start, limit, delta) {
        (Operand::Int(s), Operand::Int(l), Operand::Int(d)) => {
            if d == 0 {
                return Err(RangeError::ZeroDelta);
            }
            let (diff, d) = (i128::from(l) - i128::from(s), i128::from(d));
            let q = diff / d;
            let n = if diff % d != 0 && ((diff > 0) == (d > 0)) { q + 1 } else { q };
            Ok(n.max(0) as u128)
        }
        (Operand::Float(s), Operand::Float(l), Operand::Float(d)) => {
            for (what, v) in [("start (input 0)", s), ("limit (input 1)", l), ("delta (input 2)", d)] {
                if !v.is_finite() {
                    return Err(RangeError::NotFinite { what, value: v });
                }
            }
            if d == 0.0 {
                return Err(RangeError::ZeroDelta);
            }
            let n = ((l - s) / d).ceil().max(0.0);
            // Finite operands with a nonzero delta: a finite count, or +inf
            // for a delta too small to step (saturates to u128::MAX).
            Ok(n as u128)
        }
        _ => Err(RangeError::Mixed),
    }
}

/// The `n` integer values `start + i * delta`, exact: each lies between
/// start and limit, so it fits the operands' type.
pub fn int_values(start: i64, delta: i64, n: usize) -> Vec<i64> {
    (0..n as i128).map(|i| (i128::from(start) + i * i128::from(delta)) as i64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Operand::{Float, Int};

    #[test]
    fn integer_counts_are_exact_beyond_two_to_the_53() {
        let big = 1i64 << 53;
        // numpy: np.arange(2**53, 2**53 + 1, 1).shape == (1,)
        assert_eq!(count(Int(big), Int(big + 1), Int(1)), Ok(1));
        assert_eq!(count(Int(big + 1), Int(big + 3), Int(1)), Ok(2));
        assert_eq!(int_values(big + 1, 1, 2), vec![big + 1, big + 2]);
        assert_eq!(count(Int(i64::MIN), Int(i64::MAX), Int(i64::MAX)), Ok(3));
        assert_eq!(int_values(i64::MIN, i64::MAX, 3), vec![i64::MIN, -1, i64::MAX - 1]);
        assert_eq!(count(Int(10), Int(0), Int(-3)), Ok(4));
        assert_eq!(int_values(10, -3, 4), vec![10, 7, 4, 1]);
        assert_eq!(count(Int(0), Int(10), Int(-1)), Ok(0));
        assert_eq!(count(Int(0), Int(1), Int(0)), Err(RangeError::ZeroDelta));
    }

    #[test]
    fn float_operands_must_be_finite() {
        assert_eq!(count(Float(0.0), Float(1.0), Float(0.25)), Ok(4));
        assert!(matches!(count(Float(0.0), Float(f64::NAN), Float(1.0)), Err(RangeError::NotFinite { .. })));
        assert!(matches!(count(Float(f64::INFINITY), Float(1.0), Float(1.0)), Err(RangeError::NotFinite { .. })));
        let e = count(Float(0.0), Float(1.0), Float(f64::NAN)).unwrap_err().to_string();
        assert!(e.contains("delta") && e.contains("NaN"), "{e}");
        assert_eq!(count(Float(0.0), Float(1.0), Float(0.0)), Err(RangeError::ZeroDelta));
        assert_eq!(count(Int(0), Float(1.0), Int(1)), Err(RangeError::Mixed));
    }
}
