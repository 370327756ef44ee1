//! Metrics shaped like upstream scheduler_perf's, so dashboards that read its results read ours:
//! `SchedulingThroughput` (pods/s over 1-second windows of wall time: Average, Perc50/90/95/99),
//! `scheduler_scheduling_attempt_duration_seconds` per `result` (Perc50/90/95/99, Average, in
//! ms) and `SchedulingDuration`, each a data item labelled `Name` and `Metric`, written as
//! `{"version": "v1", "dataItems": [...]}`.
//!
//! Throughput windows follow `ksched_sim::observe::ThroughputWindows` (upstream's collector's
//! rule; its docs say how), counting the measured namespace's pods.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use ksched_engine::api::{Pod, Sym};
use ksched_engine::scheduler::CycleOutcome;
use ksched_k8s::perf_workload::ThresholdMetricSelector;
use ksched_sim::observe::ThroughputWindows;
use ksched_sim::simulation::{Observer, SimCluster};
use serde::Serialize;

/// One data item of a results file.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DataItem {
    pub data: BTreeMap<String, f64>,
    pub unit: String,
    pub labels: BTreeMap<String, String>,
}

/// The results file: what scheduler_perf writes and perf-dash reads.
#[derive(Clone, Debug, Serialize)]
pub struct DataItems {
    pub version: &'static str,
    #[serde(rename = "dataItems")]
    pub data_items: Vec<DataItem>,
}

impl DataItems {
    /// Upstream's file: every item carries every label used anywhere (`not applicable` where
    /// an item had none), so perf-dash shows them all.
    pub fn new(mut items: Vec<DataItem>) -> DataItems {
        let all: Vec<String> = {
            let mut s: Vec<String> = items.iter().flat_map(|i| i.labels.keys().cloned()).collect();
            s.sort();
            s.dedup();
            s
        };
        for item in &mut items {
            for l in &all {
                item.labels.entry(l.clone()).or_insert_with(|| "not applicable".into());
            }
        }
        DataItems { version: "v1", data_items: items }
    }

    pub fn write(&self, path: &std::path::Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

const RESULTS: [&str; 3] = ["scheduled", "unschedulable", "error"];

/// Which pods a collector counts for throughput.
#[derive(Clone, Debug, Default)]
pub struct PodFilter {
    /// Empty: every namespace.
    pub namespaces: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

impl PodFilter {
    fn matches(&self, pod: &Pod) -> bool {
        (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == pod.namespace.as_str()))
            && self.labels.iter().all(|(k, v)| pod.labels.get(Sym::new(k)) == Some(Sym::new(v)))
    }
}

/// What one measurement saw, kept for the report.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The `Name` label.
    pub name: String,
    /// (seconds since start, pods/s) per recorded window.
    pub timeline: Vec<(f64, f64)>,
    /// Attempt latency of every attempt, in ns.
    pub latency: Histogram<u64>,
    /// Pods the filter counted as scheduled (`ksched gate --workload`'s denominator).
    pub scheduled: usize,
    /// Elapsed time of the measurement (wall, or the synthetic attempt time), in seconds.
    pub seconds: f64,
    /// CPU time of the whole process over the measurement, in ns.
    pub cpu_ns: u64,
}

/// Collects one measurement (upstream: the collectors between start and stop).
pub struct Collector {
    name: String,
    filter: PodFilter,
    start: Instant,
    /// The process's CPU time at `start`.
    cpu_start: u64,
    /// When set, time is not wall time: each attempt takes what this says (tests).
    attempt_time: Option<fn(&CycleOutcome) -> Duration>,
    /// Elapsed time under `attempt_time`.
    synthetic: Duration,
    windows: ThroughputWindows,
    by_result: [Histogram<u64>; 3],
    all: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    // Constant, valid bounds (1 ns .. 10 min, 3 significant digits): construction cannot fail.
    Histogram::new_with_bounds(1, 600_000_000_000, 3).expect("constant histogram bounds are valid")
}

impl Collector {
    pub fn start(name: String, filter: PodFilter) -> Collector {
        Collector {
            name,
            filter,
            start: Instant::now(),
            cpu_start: crate::probe::measured_cpu_ns(crate::probe::CpuOf::Process),
            attempt_time: None,
            synthetic: Duration::ZERO,
            windows: ThroughputWindows::new(),
            by_result: [histogram(), histogram(), histogram()],
            all: histogram(),
        }
    }

    /// Measures time as the sum of `attempt_time` over the attempts instead of wall time, so
    /// windows are reproducible (tests).
    pub fn with_attempt_time(mut self, attempt_time: Option<fn(&CycleOutcome) -> Duration>) -> Collector {
        self.attempt_time = attempt_time;
        self
    }

    /// Restarts the wall clock (after the pods of a measured op were created).
    pub fn restart_clock(&mut self) {
        self.start = Instant::now();
        self.cpu_start = crate::probe::measured_cpu_ns(crate::probe::CpuOf::Process);
        self.synthetic = Duration::ZERO;
    }

    fn elapsed(&self) -> Duration {
        match self.attempt_time {
            Some(_) => self.synthetic,
            None => self.start.elapsed(),
        }
    }

    /// Records one scheduling attempt (every attempt counts for latency, as upstream's
    /// histogram does; throughput counts scheduled pods the filter selects).
    pub fn record(&mut self, outcome: &CycleOutcome, ns: u64) {
        let (idx, pod) = match outcome {
            CycleOutcome::Scheduled { pod, .. } => (0, pod),
            CycleOutcome::Unschedulable { pod, .. } => (1, pod),
            CycleOutcome::BindFailed { pod, .. } => (2, pod),
        };
        self.by_result[idx].saturating_record(ns.max(1));
        self.all.saturating_record(ns.max(1));
        if let Some(f) = self.attempt_time {
            self.synthetic += f(outcome);
        }
        let elapsed = self.elapsed();
        self.windows.attempt(elapsed, idx == 0 && self.filter.matches(pod));
    }

    /// Ends the measurement: its data items, and what the report plots.
    pub fn finish(self) -> (Vec<DataItem>, Measurement) {
        let elapsed = self.elapsed();
        let secs = elapsed.as_secs_f64();
        let scheduled = self.windows.counted();
        let (throughput, timeline) = self.windows.finish(elapsed);
        let labels = |metric: &str| {
            BTreeMap::from([("Name".to_owned(), self.name.clone()), ("Metric".to_owned(), metric.to_owned())])
        };
        let mut items = Vec::new();
        if throughput.windows > 0 {
            let t = &throughput;
            let data = BTreeMap::from([
                ("Average".to_owned(), t.average),
                ("Perc50".to_owned(), t.p50),
                ("Perc90".to_owned(), t.p90),
                ("Perc95".to_owned(), t.p95),
                ("Perc99".to_owned(), t.p99),
            ]);
            items.push(DataItem { data, unit: "pods/s".into(), labels: labels("SchedulingThroughput") });
        }
        for (h, result) in self.by_result.iter().zip(RESULTS) {
            if h.is_empty() {
                continue;
            }
            let ms = |v: f64| v / 1e6;
            let mut data = BTreeMap::from([("Average".to_owned(), ms(h.mean()))]);
            for p in [50, 90, 95, 99] {
                data.insert(format!("Perc{p}"), ms(h.value_at_quantile(p as f64 / 100.0) as f64));
            }
            let mut l = labels("scheduler_scheduling_attempt_duration_seconds");
            l.insert("result".into(), result.into());
            items.push(DataItem { data, unit: "ms".into(), labels: l });
        }
        items.push(DataItem {
            data: BTreeMap::from([("Duration".to_owned(), secs)]),
            unit: "s".into(),
            labels: labels("SchedulingDuration"),
        });
        let m = Measurement {
            name: self.name,
            timeline,
            latency: self.all,
            scheduled,
            seconds: secs,
            cpu_ns: crate::probe::measured_cpu_ns(crate::probe::CpuOf::Process).saturating_sub(self.cpu_start),
        };
        (items, m)
    }
}

impl<C: SimCluster> Observer<C> for Collector {
    fn attempt(&mut self, outcome: &CycleOutcome, ns: u64) {
        self.record(outcome, ns);
    }
}

/// Upstream's `applyThreshold`: every item of the selected metric whose labels match must
/// have the bucket above (or, with `expectLower`, below) the threshold. A threshold of 0 is
/// off. The threshold is recorded in the item as `<bucket>Threshold`. Returns the misses.
pub fn apply_threshold(items: &mut [DataItem], threshold: f64, sel: &ThresholdMetricSelector) -> Vec<String> {
    let mut misses = Vec::new();
    if threshold == 0.0 {
        return misses;
    }
    for item in items.iter_mut() {
        if item.labels.get("Metric") != Some(&sel.name) || sel.labels.iter().any(|(k, v)| item.labels.get(k) != Some(v))
        {
            continue;
        }
        item.data.insert(format!("{}Threshold", sel.data_bucket), threshold);
        let name = item.labels.get("Name").cloned().unwrap_or_default();
        let Some(&value) = item.data.get(&sel.data_bucket) else {
            misses.push(format!("{name}: no data present for {:?} metric {:?} bucket", sel.name, sel.data_bucket));
            continue;
        };
        let ok = if sel.expect_lower { value < threshold } else { value > threshold };
        if !ok {
            let dir = if sel.expect_lower { "lower" } else { "higher" };
            misses.push(format!(
                "{name}: expected {:?} {:?} to be {dir}: got {value:.2}, want {threshold:.2}",
                sel.name, sel.data_bucket
            ));
        }
    }
    misses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(metric: &str, bucket: &str, v: f64) -> DataItem {
        DataItem {
            data: BTreeMap::from([(bucket.to_owned(), v)]),
            unit: "x".into(),
            labels: BTreeMap::from([("Metric".to_owned(), metric.to_owned()), ("Name".to_owned(), "t/w".to_owned())]),
        }
    }

    #[test]
    fn threshold_is_checked_like_upstream() {
        let tput = ThresholdMetricSelector::default();
        let lat = ThresholdMetricSelector {
            name: "lat".into(),
            data_bucket: "Perc99".into(),
            expect_lower: true,
            labels: BTreeMap::new(),
        };
        // (name, items, threshold, selector, want misses)
        let cases = [
            ("above minimum", vec![item("SchedulingThroughput", "Average", 700.0)], 680.0, &tput, 0),
            ("below minimum", vec![item("SchedulingThroughput", "Average", 600.0)], 680.0, &tput, 1),
            ("zero threshold is off", vec![item("SchedulingThroughput", "Average", 1.0)], 0.0, &tput, 0),
            ("other metric ignored", vec![item("lat", "Average", 1.0)], 680.0, &tput, 0),
            ("missing bucket", vec![item("SchedulingThroughput", "Perc50", 900.0)], 680.0, &tput, 1),
            ("expect lower ok", vec![item("lat", "Perc99", 5.0)], 10.0, &lat, 0),
            ("expect lower miss", vec![item("lat", "Perc99", 15.0)], 10.0, &lat, 1),
        ];
        for (name, mut items, threshold, sel, want) in cases {
            let misses = apply_threshold(&mut items, threshold, sel);
            assert_eq!(misses.len(), want, "{name}: {misses:?}");
            if threshold != 0.0 && items[0].labels["Metric"] == sel.name {
                assert_eq!(items[0].data[&format!("{}Threshold", sel.data_bucket)], threshold, "{name}");
            }
        }
    }

    #[test]
    fn results_file_fills_missing_labels() {
        let mut a = item("SchedulingThroughput", "Average", 1.0);
        a.labels.insert("result".into(), "scheduled".into());
        let d = DataItems::new(vec![a, item("SchedulingDuration", "Duration", 2.0)]);
        assert_eq!(d.data_items[1].labels["result"], "not applicable");
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["version"], "v1");
        assert_eq!(json["dataItems"][0]["unit"], "x");
    }

    #[test]
    fn measurement_without_scheduled_pods_has_no_throughput() {
        let (items, m) = Collector::start("t/w/ns".into(), PodFilter::default()).finish();
        assert!(items.iter().all(|i| i.labels["Metric"] != "SchedulingThroughput"));
        assert!(items.iter().any(|i| i.labels["Metric"] == "SchedulingDuration"));
        assert!(m.timeline.is_empty());
    }

    #[test]
    fn measurement_shorter_than_a_window_is_one_sample_of_its_whole_rate() {
        let mut c = Collector::start("t/w/ns".into(), PodFilter::default());
        for _ in 0..50 {
            c.windows.attempt(Duration::ZERO, true);
        }
        let (items, m) = c.finish();
        let t = items.iter().find(|i| i.labels["Metric"] == "SchedulingThroughput").expect("throughput item");
        assert_eq!(t.data["Average"], t.data["Perc99"]);
        assert!(t.data["Average"] > 50.0, "50 pods in well under a second");
        assert_eq!(m.timeline.len(), 1);
    }
}
