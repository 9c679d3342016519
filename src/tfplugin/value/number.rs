//! Arbitrary-precision numbers as Terraform's cty carries them.
//!
//! Terraform sends small integers as msgpack ints of any width, exactly representable
//! fractions as float64, and everything else (`0.1`, 20-digit integers, `1e400`) as a
//! decimal string. [`Number`] keeps the canonical decimal text, so nothing is ever lost,
//! and encodes back as an int when it fits and as a string otherwise.

use std::fmt;

use num_bigint::BigUint;

/// The longest canonical text a [`Number`] may have: room for every exact `f64` (at most 1,077
/// characters) and for `1e1000`, while a hostile `1e100000` cannot expand into megabytes.
pub(crate) const MAX_DIGITS: usize = 2048;

/// An arbitrary-precision decimal number, stored as canonical decimal text
/// (no exponent, no leading `+`, no superfluous zeros, `0` never negative).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Number(String);

/// The text given to [`Number::parse`] is not a decimal number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a decimal number")]
pub struct InvalidNumber(pub String);

impl Number {
    /// Parses decimal text such as `-12`, `0.1`, `1.5e3` or a 401-digit integer.
    ///
    /// # Errors
    /// [`InvalidNumber`] when the text is not a finite decimal number.
    pub fn parse(text: &str) -> Result<Self, InvalidNumber> {
        let bad = || InvalidNumber(text.to_string());
        let s = text.trim();
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (mantissa, exponent) = match s.find(['e', 'E']) {
            Some(i) => {
                let exp: i64 = s[i + 1..].parse().map_err(|_| bad())?;
                (&s[..i], exp)
            }
            None => (s, 0),
        };
        let (int_part, frac_part) = match mantissa.split_once('.') {
            Some((i, f)) => (i, f),
            None => (mantissa, ""),
        };
        if (int_part.is_empty() && frac_part.is_empty())
            || !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
            || exponent.unsigned_abs() > 100_000
        {
            return Err(bad());
        }
        // digits * 10^(exponent - frac_len)
        let digits = format!("{int_part}{frac_part}");
        let scale = exponent - frac_part.len() as i64;
        // The canonical text's length, before building it.
        let significant = digits.trim_start_matches('0').trim_end_matches('0');
        let trailing_zeros = digits.trim_start_matches('0').len() - significant.len();
        let scale_after = scale + trailing_zeros as i64;
        let length = if significant.is_empty() {
            1
        } else if scale_after >= 0 {
            significant.len() + scale_after as usize
        } else {
            significant.len().max(scale_after.unsigned_abs() as usize) + 2
        };
        if length > MAX_DIGITS {
            return Err(InvalidNumber(format!(
                "{} (more than {MAX_DIGITS} digits written out)",
                text.chars().take(40).collect::<String>()
            )));
        }
        Ok(Self::from_parts(negative, &digits, scale))
    }

    /// Builds the canonical text of `(-1)^negative * digits * 10^scale`.
    fn from_parts(negative: bool, digits: &str, scale: i64) -> Self {
        let digits = digits.trim_start_matches('0');
        if digits.is_empty() {
            return Number("0".into());
        }
        let mut text = if scale >= 0 {
            format!("{digits}{}", "0".repeat(scale as usize))
        } else {
            let frac_len = (-scale) as usize;
            let padded = if digits.len() <= frac_len {
                format!("{}{digits}", "0".repeat(frac_len - digits.len() + 1))
            } else {
                digits.to_string()
            };
            let split = padded.len() - frac_len;
            let (i, f) = padded.split_at(split);
            let f = f.trim_end_matches('0');
            if f.is_empty() {
                i.to_string()
            } else {
                format!("{i}.{f}")
            }
        };
        if negative {
            text.insert(0, '-');
        }
        Number(text)
    }

    /// The exact decimal value of a finite `f64` (every binary float has a finite decimal form).
    ///
    /// # Errors
    /// [`InvalidNumber`] for NaN and infinities, which cty numbers cannot hold here.
    pub fn from_f64(value: f64) -> Result<Self, InvalidNumber> {
        if !value.is_finite() {
            return Err(InvalidNumber(value.to_string()));
        }
        let bits = value.to_bits();
        let negative = bits >> 63 == 1;
        let exp_bits = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, exp2) = if exp_bits == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), exp_bits - 1075)
        };
        let m = BigUint::from(mantissa);
        Ok(if exp2 >= 0 {
            Self::from_parts(negative, &(m << exp2 as usize).to_string(), 0)
        } else {
            // m / 2^k == m * 5^k / 10^k
            let k = (-exp2) as u32;
            let scaled = m * BigUint::from(5u8).pow(k);
            Self::from_parts(negative, &scaled.to_string(), -(k as i64))
        })
    }

    /// The canonical decimal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as `i64`, when it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }

    /// The value as `u64`, when it is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }

    /// The nearest `f64` (may round).
    pub fn to_f64(&self) -> f64 {
        self.0.parse().unwrap_or(f64::NAN)
    }

    /// Whether the value is an integer.
    pub fn is_integer(&self) -> bool {
        !self.0.contains('.')
    }
}

impl From<i64> for Number {
    fn from(value: i64) -> Self {
        Number(value.to_string())
    }
}

impl From<u64> for Number {
    fn from(value: u64) -> Self {
        Number(value.to_string())
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_too_long_to_write_out_are_refused() {
        // Issue 11: the 8-byte string "1e100000" expanded to 100,001 digits.
        assert!(Number::parse("1e100000").is_err());
        assert!(Number::parse("1e-100000").is_err());
        assert!(Number::parse(&"9".repeat(MAX_DIGITS + 1)).is_err());
        assert_eq!(Number::parse("1e400").unwrap().as_str().len(), 401);
        assert!(Number::parse(&format!("{}e-2000", "1".repeat(40))).is_ok());
        assert!(Number::parse("0e100000").is_ok(), "zero is short whatever its exponent");
        assert!(Number::parse("1000e-3").unwrap().as_str() == "1");
        let smallest = Number::from_f64(f64::from_bits(1)).unwrap();
        assert!(smallest.as_str().len() <= MAX_DIGITS);
        assert_eq!(Number::parse(smallest.as_str()).unwrap(), smallest);
    }

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("0", "0"),
            ("-0", "0"),
            ("007", "7"),
            ("1.50", "1.5"),
            ("0.1", "0.1"),
            ("-0.001", "-0.001"),
            ("1.5e3", "1500"),
            ("15e-1", "1.5"),
            ("12345678901234567890", "12345678901234567890"),
            (".5", "0.5"),
            ("+3", "3"),
        ] {
            assert_eq!(Number::parse(input).unwrap().as_str(), want, "{input}");
        }
        for bad in ["", "abc", "1.2.3", "--1", "1e", "e5", "0x10"] {
            assert!(Number::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn floats_are_exact() {
        assert_eq!(Number::from_f64(1.5).unwrap().as_str(), "1.5");
        assert_eq!(Number::from_f64(-0.25).unwrap().as_str(), "-0.25");
        assert_eq!(Number::from_f64(1e20).unwrap().as_str(), "100000000000000000000");
        // 0.1 as a binary float is not 0.1: the exact expansion is kept, never rounded.
        assert_eq!(
            Number::from_f64(0.1).unwrap().as_str(),
            "0.1000000000000000055511151231257827021181583404541015625"
        );
        assert!(Number::from_f64(f64::INFINITY).is_err());
    }

    #[test]
    fn huge_numbers_survive() {
        let big = format!("1{}", "0".repeat(400));
        assert_eq!(Number::parse("1e400").unwrap().as_str(), big);
        assert_eq!(Number::parse(&big).unwrap().as_i64(), None);
    }
}
