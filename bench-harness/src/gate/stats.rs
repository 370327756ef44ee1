//! The paired gate's decision: per round, the candidate's time divided by the baseline's
//! measured right next to it; the median of those ratios; and a percentile-bootstrap
//! confidence interval of that median (resampling the rounds with replacement, a seeded RNG,
//! so a verdict repeats for the same samples).
//!
//! A workload fails when the median ratio is beyond `1 + tolerance` **and** the whole interval
//! lies above 1: the best estimate is slower than allowed, and the data says, at the chosen
//! confidence, that the candidate is slower at all. The same build on both sides has a median
//! near 1 (within a few percent over the default 31 rounds), so it passes; a build slower by
//! more than the tolerance has its median beyond it and an interval clear of 1, so it fails.
//! One wild round moves neither the median nor the interval much.

use ksched_engine::util::rng::Rng;
use serde::Serialize;

/// The verdict on one workload's per-round ratios.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RatioDecision {
    /// Median of candidate ÷ baseline over the rounds.
    pub median: f64,
    /// The bootstrap confidence interval of the median.
    pub ci_low: f64,
    pub ci_high: f64,
    /// True when `median > 1 + tolerance` and `ci_low > 1`.
    pub regression: bool,
    /// True when `median < 1 - tolerance` and `ci_high < 1`: the candidate is faster by more
    /// than the tolerance (the mirror of `regression`).
    pub faster: bool,
}

/// How the interval is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bootstrap {
    pub resamples: usize,
    /// Two-sided confidence, e.g. 0.95.
    pub confidence: f64,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap { resamples: 2000, confidence: 0.95, seed: 1 }
    }
}

/// Per-round ratios `candidate[i] / baseline[i]` (rounds where either side is not a positive
/// finite number are dropped).
pub fn paired_ratios(candidate: &[f64], baseline: &[f64]) -> Vec<f64> {
    candidate
        .iter()
        .zip(baseline)
        .filter(|(c, b)| c.is_finite() && b.is_finite() && **c > 0.0 && **b > 0.0)
        .map(|(c, b)| c / b)
        .collect()
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

fn median_sorted(s: &[f64]) -> f64 {
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The `q` quantile of sorted `s`, interpolated linearly between order statistics.
fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    if s.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// Percentile-bootstrap interval of the median of `samples`.
pub fn bootstrap_median_ci(samples: &[f64], b: Bootstrap) -> (f64, f64) {
    let n = samples.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng::seed(b.seed);
    let mut medians = Vec::with_capacity(b.resamples.max(1));
    let mut draw = vec![0.0; n];
    for _ in 0..b.resamples.max(1) {
        for d in draw.iter_mut() {
            *d = samples[rng.below(n as u64) as usize];
        }
        draw.sort_by(f64::total_cmp);
        medians.push(median_sorted(&draw));
    }
    medians.sort_by(f64::total_cmp);
    let alpha = (1.0 - b.confidence).clamp(0.0, 1.0) / 2.0;
    (quantile_sorted(&medians, alpha), quantile_sorted(&medians, 1.0 - alpha))
}

/// Decides one workload from its per-round ratios.
pub fn decide(ratios: &[f64], tolerance: f64, b: Bootstrap) -> RatioDecision {
    let (ci_low, ci_high) = bootstrap_median_ci(ratios, b);
    RatioDecision {
        median: median(ratios),
        ci_low,
        ci_high,
        regression: median(ratios) > 1.0 + tolerance && ci_low > 1.0,
        faster: median(ratios) < 1.0 - tolerance && ci_high < 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratios_divide_round_by_round_and_drop_bad_rounds() {
        let r = paired_ratios(&[2.0, 3.0, f64::NAN, 4.0, 1.0], &[1.0, 3.0, 1.0, 0.0, 2.0]);
        assert_eq!(r, vec![2.0, 1.0, 0.5]);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn bootstrap_ci_brackets_the_median_and_repeats_with_the_seed() {
        let s = [0.97, 1.02, 1.0, 0.99, 1.04, 1.01, 0.98];
        let b = Bootstrap::default();
        let (lo, hi) = bootstrap_median_ci(&s, b);
        assert!(lo <= median(&s) && median(&s) <= hi, "[{lo}, {hi}]");
        // The median of a resample is one of the samples (odd n), so the bounds lie within
        // the samples' range.
        assert!(lo >= 0.97 && hi <= 1.04, "[{lo}, {hi}]");
        assert_eq!(bootstrap_median_ci(&s, b), (lo, hi), "same seed, same interval");
        // Identical samples: a zero-width interval.
        assert_eq!(bootstrap_median_ci(&[1.5; 5], b), (1.5, 1.5));
    }

    #[test]
    fn decide_fails_a_median_beyond_the_tolerance_with_an_interval_above_one() {
        let b = Bootstrap::default();
        // (name, ratios, tolerance, regression, faster)
        let cases: [(&str, &[f64], f64, bool, bool); 11] = [
            ("same build, noisy", &[0.96, 1.03, 1.0, 0.98, 1.05, 1.01, 0.99], 0.10, false, false),
            ("5x slower", &[5.1, 4.9, 5.0, 5.2, 4.8], 0.10, true, false),
            ("clearly 20% slower", &[1.19, 1.21, 1.2, 1.22, 1.18, 1.2, 1.21], 0.10, true, false),
            // Median 1.12 is beyond 10% and every resampled median is above 1: slower.
            ("median beyond, interval above 1", &[1.0, 1.25, 1.12, 1.02, 1.3, 1.12, 1.05], 0.10, true, false),
            // Median 1.12, but the interval reaches 1: not shown to be slower at all.
            ("median beyond, interval reaches 1", &[0.9, 1.25, 1.12, 0.95, 1.3, 1.12, 1.0], 0.10, false, false),
            ("15% slower over 31 rounds", &[1.15; 31], 0.10, true, false),
            ("same build, 4% off", &[1.04, 1.03, 1.05, 1.04, 1.02, 1.06, 1.04], 0.10, false, false),
            ("20% slower within a 25% tolerance", &[1.19, 1.21, 1.2, 1.22, 1.18], 0.25, false, false),
            ("one wild round does not fail", &[1.0, 1.01, 9.0, 0.99, 1.0], 0.10, false, false),
            ("clearly faster", &[0.5, 0.52, 0.49, 0.51, 0.5], 0.10, false, true),
            ("5% faster is within the tolerance", &[0.95, 0.96, 0.94, 0.95, 0.95], 0.10, false, false),
        ];
        for (name, ratios, tol, regression, faster) in cases {
            let d = decide(ratios, tol, b);
            assert_eq!(d.regression, regression, "{name}: {d:?}");
            assert_eq!(d.faster, faster, "{name}: {d:?}");
            assert!(d.ci_low <= d.median && d.median <= d.ci_high, "{name}: {d:?}");
        }
    }

    #[test]
    fn decide_a_median_beyond_alone_does_not_fail() {
        // The reason for the interval: a median-only rule fails this noise.
        let ratios = [0.9, 1.25, 1.12, 0.95, 1.3, 1.12, 1.0];
        let d = decide(&ratios, 0.10, Bootstrap::default());
        assert!(d.median > 1.10 && d.ci_low <= 1.0 && !d.regression, "{d:?}");
    }
}
