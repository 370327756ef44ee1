//! Kubernetes resource quantities (`100m`, `500Mi`, `1.5`, `2e3`, `1Gi`) as integers.
//!
//! The grammar is the API's: an optionally signed decimal number, then a binary-SI suffix
//! (`Ki Mi Gi Ti Pi Ei`), a decimal-SI suffix (`n u m k M G T P E`, or none) or a decimal
//! exponent (`e3`, `E-2`). Conversions round up, as the API's `Value()` and `MilliValue()` do,
//! so `0.1m` CPU is 1 millicore and `1.5` bytes is 2.

use thiserror::Error;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("quantity {text:?}: {why}")]
pub struct QuantityError {
    pub text: String,
    pub why: &'static str,
}

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exp10: i32,
    exp2: u32,
}

impl Quantity {
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let err = |why| QuantityError { text: text.to_string(), why };
        let s = text.trim();
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let number_len = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (number, suffix) = s.split_at(number_len);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(err("no number"));
        }
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        let mut mantissa: i128 = 0;
        for c in int_part.bytes().chain(frac_part.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(c - b'0')))
                .ok_or_else(|| err("too many digits"))?;
        }
        let mut exp10 = -(frac_part.len() as i32);
        let mut exp2 = 0;
        match suffix {
            "" => {}
            "Ki" => exp2 = 10,
            "Mi" => exp2 = 20,
            "Gi" => exp2 = 30,
            "Ti" => exp2 = 40,
            "Pi" => exp2 = 50,
            "Ei" => exp2 = 60,
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            _ if suffix.starts_with(['e', 'E']) => {
                let e: i32 = suffix[1..].parse().map_err(|_| err("bad exponent"))?;
                if e.abs() > 40 {
                    return Err(err("exponent out of range"));
                }
                exp10 += e;
            }
            _ => return Err(err("unknown suffix")),
        }
        if negative {
            mantissa = -mantissa;
        }
        Ok(Quantity { mantissa, exp10, exp2 })
    }

    /// The value in whole units, rounded up (upstream `Value()`); saturates at the i64 range.
    pub fn value(&self) -> i64 {
        self.scaled(0)
    }

    /// The value in thousandths, rounded up (upstream `MilliValue()`: CPU in millicores).
    pub fn milli_value(&self) -> i64 {
        self.scaled(3)
    }

    /// Compares the values exactly (`1Gi` > `1G`, `1000m` == `1`), as upstream's `Cmp`.
    /// Both are brought to a common power of ten and of two; should that overflow, the
    /// values are compared as floats.
    pub fn cmp_value(&self, other: &Quantity) -> std::cmp::Ordering {
        let exp10 = self.exp10.min(other.exp10);
        let exp2 = self.exp2.min(other.exp2);
        let exact = |q: &Quantity| -> Option<i128> {
            let mut n = q.mantissa;
            for _ in exp10..q.exp10 {
                n = n.checked_mul(10)?;
            }
            for _ in exp2..q.exp2 {
                n = n.checked_mul(2)?;
            }
            Some(n)
        };
        match (exact(self), exact(other)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.approximate().total_cmp(&other.approximate()),
        }
    }

    /// The value as a float (upstream `AsApproximateFloat64`).
    pub fn approximate(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exp10) * 2f64.powi(self.exp2 as i32)
    }

    fn scaled(&self, extra_exp10: i32) -> i64 {
        let exp10 = self.exp10 + extra_exp10;
        let mut num = self.mantissa;
        for _ in 0..self.exp2 {
            num = num.saturating_mul(2);
        }
        let value = if exp10 >= 0 {
            (0..exp10).fold(num, |n, _| n.saturating_mul(10))
        } else {
            let den = (0..-exp10).fold(1i128, |d, _| d.saturating_mul(10));
            // Ceiling division, towards +infinity for either sign.
            let q = num.div_euclid(den);
            if num.rem_euclid(den) == 0 {
                q
            } else {
                q + 1
            }
        };
        value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmp_value_table() {
        use std::cmp::Ordering::*;
        let cases = [
            ("1Gi", "1G", Greater),
            ("1000m", "1", Equal),
            ("80Gi", "80Gi", Equal),
            ("40Gi", "80Gi", Less),
            ("1.5Gi", "1536Mi", Equal),
            ("-1", "0", Less),
            ("1e30", "1Ei", Greater),
        ];
        for (a, b, want) in cases {
            let (qa, qb) = (Quantity::parse(a).unwrap(), Quantity::parse(b).unwrap());
            assert_eq!(qa.cmp_value(&qb), want, "{a} vs {b}");
            assert_eq!(qb.cmp_value(&qa), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn quantity_table() {
        // (text, value(), milli_value())
        let cases: [(&str, i64, i64); 17] = [
            ("0", 0, 0),
            ("1", 1, 1000),
            ("100m", 1, 100),
            ("1500m", 2, 1500),
            ("0.1m", 1, 1),
            ("1.5", 2, 1500),
            ("2.25", 3, 2250),
            ("500Mi", 500 << 20, (500 << 20) * 1000),
            ("1Gi", 1 << 30, (1 << 30) * 1000),
            ("1.5Gi", 3 << 29, (3 << 29) * 1000),
            ("4k", 4000, 4_000_000),
            ("1M", 1_000_000, 1_000_000_000),
            ("2e3", 2000, 2_000_000),
            ("1E-3", 1, 1),
            ("12n", 1, 1),
            ("+3", 3, 3000),
            ("8Ei", i64::MAX, i64::MAX),
        ];
        for (text, value, milli) in cases {
            let q = Quantity::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((q.value(), q.milli_value()), (value, milli), "{text}");
        }
    }

    #[test]
    fn bad_quantities_are_errors_naming_the_text() {
        for (text, why) in [
            ("", "no number"),
            ("Mi", "no number"),
            ("1.2.3", "no number"),
            ("5x", "unknown suffix"),
            ("1e", "bad exponent"),
            ("1e99", "exponent out of range"),
        ] {
            let e = Quantity::parse(text).unwrap_err();
            assert_eq!(e, QuantityError { text: text.to_string(), why }, "{text}");
        }
        assert_eq!(Quantity::parse("5x").unwrap_err().to_string(), "quantity \"5x\": unknown suffix");
    }
}
