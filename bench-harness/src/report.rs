//! `--report out.html`: one self-contained HTML file (inline SVG, no scripts, no external
//! resources) with, per workload run: the attempt-latency CDF, throughput over time and a
//! histogram of node utilization after the run (CPU and memory requested / allocatable).
//!
//! The SVG is written here rather than with `plotters`: three plot shapes need a few dozen
//! lines of SVG each, and the output stays small, dependency-free and easy to check in tests
//! (each plot is an `<svg class="plot" data-plot="...">` whose data series are `class="series"`).

use std::fmt::Write;

use crate::metrics::Measurement;
use crate::perf_file::exec::NodeUse;

/// One run's part of the report.
pub struct Section {
    pub title: String,
    /// (label, value) lines shown above the plots.
    pub summary: Vec<(String, String)>,
    pub measurements: Vec<Measurement>,
    pub utilization: Vec<NodeUse>,
}

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];
const W: f64 = 640.0;
const H: f64 = 320.0;
const L: f64 = 64.0;
const R: f64 = 20.0;
const T: f64 = 34.0;
const B: f64 = 48.0;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The whole HTML document.
pub fn render(title: &str, sections: &[Section]) -> String {
    let mut h = head(title);
    for s in sections {
        let _ = write!(h, "<section><h2>{}</h2>\n<table>", esc(&s.title));
        for (k, v) in &s.summary {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
        }
        h.push_str("</table>\n<div class=\"plots\">\n");
        h.push_str(&latency_cdf(&s.measurements));
        h.push_str(&throughput(&s.measurements));
        h.push_str(&utilization(&s.utilization));
        h.push_str("</div></section>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// The document up to and including the `<h1>` title; the caller closes `</body></html>`.
pub(crate) fn head(title: &str) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
         body{{font-family:sans-serif;margin:24px;color:#222}} h2{{margin-top:32px;border-bottom:1px solid #ccc}}\
         table{{border-collapse:collapse}} td{{padding:2px 12px 2px 0}} .plots{{display:flex;flex-wrap:wrap;gap:16px}}\
         svg text{{font-size:11px;font-family:sans-serif}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );
    h
}

pub fn write(path: &std::path::Path, title: &str, sections: &[Section]) -> Result<(), String> {
    std::fs::write(path, render(title, sections)).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Legend rows sit below the x axis title, outside the plot area, so they never hide data.
const LEGEND_ROW: f64 = 16.0;
/// Longer series names are cut (with `…`) so a legend row stays inside the plot's width.
const LEGEND_CHARS: usize = 90;

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    log_x: bool,
    /// Tick spacing on a linear x axis and on the y axis.
    x_step: f64,
    y_step: f64,
}

/// A round axis top for data up to `max` and its tick step (1, 2, 2.5 or 5 times a power of
/// ten, at most five intervals); `whole` keeps the step a whole number, for counts.
fn nice_axis(max: f64, whole: bool) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .filter(|s| !whole || s.fract() == 0.0)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag);
    let step = if whole { step.max(1.0) } else { step };
    ((max / step - 1e-9).ceil().max(1.0) * step, step)
}

impl Frame {
    /// Linear axes from 0 to round tops above `x_max` and `y_max`.
    fn linear(x_max: f64, y_max: f64, whole_y: bool) -> Frame {
        let (x1, x_step) = nice_axis(x_max, false);
        let (y1, y_step) = nice_axis(y_max, whole_y);
        Frame { x0: 0.0, x1, y0: 0.0, y1, log_x: false, x_step, y_step }
    }

    fn px(&self, x: f64) -> f64 {
        let (x, a, b) =
            if self.log_x { (x.max(1e-12).log10(), self.x0.log10(), self.x1.log10()) } else { (x, self.x0, self.x1) };
        L + (x - a) / (b - a).max(1e-12) * (W - L - R)
    }

    fn py(&self, y: f64) -> f64 {
        H - B - (y - self.y0) / (self.y1 - self.y0).max(1e-12) * (H - T - B)
    }

    /// The frame, ticks, axis titles, the plot title and the legend (one row per series,
    /// below the x axis title).
    fn axes(&self, kind: &str, title: &str, xlabel: &str, ylabel: &str, legend: &[&str]) -> String {
        let mut s = String::new();
        let height = H + LEGEND_ROW * legend.len() as f64;
        let _ = write!(
            s,
            "<svg class=\"plot\" data-plot=\"{kind}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\">\
             <rect x=\"0\" y=\"0\" width=\"{W}\" height=\"{height}\" fill=\"#fff\"/>\
             <text x=\"{cx}\" y=\"18\" text-anchor=\"middle\" font-weight=\"bold\">{title}</text>\
             <rect x=\"{L}\" y=\"{T}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#888\"/>\
             <text x=\"{cx}\" y=\"{xl}\" text-anchor=\"middle\">{xlabel}</text>\
             <text x=\"14\" y=\"{cy}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {cy})\">{ylabel}</text>",
            cx = (L + W - R) / 2.0,
            cy = (T + H - B) / 2.0,
            pw = W - L - R,
            ph = H - T - B,
            xl = H - 16.0,
            title = esc(title),
            xlabel = esc(xlabel),
            ylabel = esc(ylabel),
        );
        let xticks: Vec<f64> = if self.log_x {
            let (a, b) = (self.x0.log10().floor() as i32, self.x1.log10().ceil() as i32);
            (a..=b).map(|e| 10f64.powi(e)).filter(|v| *v >= self.x0 * 0.999 && *v <= self.x1 * 1.001).collect()
        } else {
            steps(self.x0, self.x1, self.x_step)
        };
        for x in xticks {
            let p = self.px(x);
            let _ = write!(
                s,
                "<line x1=\"{p:.1}\" y1=\"{y}\" x2=\"{p:.1}\" y2=\"{T}\" stroke=\"#eee\"/><text x=\"{p:.1}\" y=\"{ty}\" text-anchor=\"middle\">{}</text>",
                tick(x, if self.log_x { x } else { self.x_step }),
                y = H - B,
                ty = H - B + 14.0
            );
        }
        for y in steps(self.y0, self.y1, self.y_step) {
            let p = self.py(y);
            let _ = write!(
                s,
                "<line x1=\"{L}\" y1=\"{p:.1}\" x2=\"{x2}\" y2=\"{p:.1}\" stroke=\"#eee\"/><text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{}</text>",
                tick(y, self.y_step),
                x2 = W - R,
                tx = L - 4.0,
                ty = p + 4.0
            );
        }
        for (i, label) in legend.iter().enumerate() {
            let y = H + LEGEND_ROW * i as f64;
            let label: String = if label.chars().count() > LEGEND_CHARS {
                label.chars().take(LEGEND_CHARS - 1).chain(['…']).collect()
            } else {
                (*label).to_owned()
            };
            let _ = write!(
                s,
                "<rect x=\"{L}\" y=\"{ry}\" width=\"10\" height=\"10\" fill=\"{c}\"/><text x=\"{tx}\" y=\"{y}\">{l}</text>",
                ry = y - 9.0,
                c = COLORS[i % COLORS.len()],
                tx = L + 14.0,
                l = esc(&label)
            );
        }
        s
    }
}

/// `from`, `from + step`, ... up to `to` (inclusive, allowing rounding).
fn steps(from: f64, to: f64, step: f64) -> Vec<f64> {
    let n = ((to - from) / step.max(1e-12) + 1e-6).floor().clamp(0.0, 50.0) as usize;
    (0..=n).map(|i| from + step * i as f64).collect()
}

/// A tick label; `step` (the axis' tick spacing) sets how many decimals show.
fn tick(v: f64, step: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1e6 && (v / 1e6).fract().abs() < 1e-9 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e4 && (v / 1e3).fract().abs() < 1e-9 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        // As many decimals as the step needs (0.25 → 2, 0.0005 → 4).
        let decimals = (1..9).find(|d| (step * 10f64.powi(*d)).fract().abs() < 1e-6).unwrap_or(9) as usize;
        let mut t = format!("{v:.decimals$}");
        while t.ends_with('0') {
            t.pop();
        }
        t.trim_end_matches('.').to_owned()
    }
}

fn empty(kind: &str, title: &str, why: &str) -> String {
    format!(
        "<svg class=\"plot\" data-plot=\"{kind}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"80\" viewBox=\"0 0 {W} 80\">\
         <text x=\"10\" y=\"20\" font-weight=\"bold\">{}</text><text x=\"10\" y=\"44\">{}</text></svg>\n",
        esc(title),
        esc(why)
    )
}

/// Cumulative fraction of attempts by latency (µs, log scale), one line per measurement.
pub(crate) fn latency_cdf(ms: &[Measurement]) -> String {
    let title = "Scheduling attempt latency (CDF)";
    let series: Vec<(&str, Vec<(f64, f64)>)> = ms
        .iter()
        .filter(|m| !m.latency.is_empty())
        .map(|m| {
            let total = m.latency.len() as f64;
            let mut seen = 0u64;
            let pts = m
                .latency
                .iter_recorded()
                .map(|v| {
                    seen += v.count_since_last_iteration();
                    (v.value_iterated_to() as f64 / 1000.0, seen as f64 / total)
                })
                .collect();
            (m.name.as_str(), pts)
        })
        .collect();
    if series.is_empty() {
        return empty("latency-cdf", title, "no scheduling attempts were measured");
    }
    let lo = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(f64::INFINITY, f64::min).max(0.1);
    let hi = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(0.0, f64::max).max(lo * 10.0);
    let f = Frame {
        x0: 10f64.powf(lo.log10().floor()),
        x1: 10f64.powf(hi.log10().ceil()),
        y0: 0.0,
        y1: 1.0,
        log_x: true,
        x_step: 0.0,
        y_step: 0.25,
    };
    let names: Vec<&str> = series.iter().map(|(n, _)| *n).collect();
    let mut s = f.axes("latency-cdf", title, "attempt latency (µs, log scale)", "fraction of attempts", &names);
    for (i, (_, pts)) in series.iter().enumerate() {
        // A step line: each recorded value raises the fraction at its latency.
        let mut d = String::new();
        let mut prev = 0.0;
        for (j, (x, y)) in pts.iter().enumerate() {
            let (px, py0, py1) = (f.px(*x), f.py(prev), f.py(*y));
            let _ = write!(d, "{}{px:.1},{py0:.1} L{px:.1},{py1:.1} ", if j == 0 { "M" } else { "L" });
            prev = *y;
        }
        let _ = write!(
            s,
            "<path class=\"series\" data-points=\"{}\" d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
            pts.len(),
            COLORS[i % COLORS.len()]
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Pods/s per recorded window against seconds since the measurement started.
fn throughput(ms: &[Measurement]) -> String {
    let title = "Scheduling throughput over time";
    let series: Vec<&Measurement> = ms.iter().filter(|m| !m.timeline.is_empty()).collect();
    if series.is_empty() {
        return empty("throughput", title, "no pods were scheduled while measuring");
    }
    let x_max = series.iter().flat_map(|m| m.timeline.iter().map(|p| p.0)).fold(0.0, f64::max);
    let y_max = series.iter().flat_map(|m| m.timeline.iter().map(|p| p.1)).fold(0.0, f64::max);
    let f = Frame::linear(x_max, y_max * 1.05, false);
    let names: Vec<&str> = series.iter().map(|m| m.name.as_str()).collect();
    let mut s = f.axes("throughput", title, "seconds since the measurement started (wall time)", "pods/s", &names);
    for (i, m) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        // Each point is the rate over the window ending there: a step from the previous
        // point's time (0 for the first) to its own.
        let mut d = String::new();
        let mut prev = 0.0;
        for (j, (x, y)) in m.timeline.iter().enumerate() {
            let (p0, p1, py) = (f.px(prev), f.px(*x), f.py(*y));
            let _ = write!(d, "{}{p0:.1},{py:.1} L{p1:.1},{py:.1} ", if j == 0 { "M" } else { "L" });
            prev = *x;
        }
        let _ = write!(
            s,
            "<path class=\"series\" data-points=\"{}\" d=\"{d}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\"/>",
            m.timeline.len()
        );
        for (x, y) in &m.timeline {
            let _ = write!(s, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{c}\"/>", f.px(*x), f.py(*y));
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Nodes per 10% bucket of requested / allocatable, CPU and memory side by side.
fn utilization(nodes: &[NodeUse]) -> String {
    let cpu: Vec<f64> = nodes.iter().map(|n| n.cpu).collect();
    let memory: Vec<f64> = nodes.iter().map(|n| n.memory).collect();
    histogram(
        "utilization",
        "Node utilization after the run (requested / allocatable)",
        &[("CPU", cpu.as_slice()), ("memory", memory.as_slice())],
    )
}

/// Nodes per 10% bucket of a fraction (requested / allocatable), one bar per series side by
/// side in each bucket (the last bucket includes over 100%).
pub(crate) fn histogram(kind: &str, title: &str, series: &[(&str, &[f64])]) -> String {
    if series.iter().all(|(_, v)| v.is_empty()) {
        return empty(kind, title, "no nodes");
    }
    let bucket = |f: f64| ((f * 10.0).floor().max(0.0) as usize).min(9);
    let counts: Vec<[usize; 10]> = series
        .iter()
        .map(|(_, values)| {
            let mut c = [0usize; 10];
            for &v in *values {
                c[bucket(v)] += 1;
            }
            c
        })
        .collect();
    let most = counts.iter().flat_map(|c| c.iter()).copied().max().unwrap_or(1).max(1) as f64;
    let mut f = Frame::linear(100.0, most, true);
    (f.x1, f.x_step) = (100.0, 10.0);
    let names: Vec<&str> = series.iter().map(|(n, _)| *n).collect();
    let mut s = f.axes(kind, title, "requested / allocatable (%; the last bar includes over 100%)", "nodes", &names);
    let w = (f.px(10.0) - f.px(0.0) - 4.0) / series.len().max(1) as f64;
    for (k, (c, label)) in counts.iter().zip(&names).enumerate() {
        let _ = write!(s, "<g class=\"series\" data-points=\"10\" data-series=\"{}\">", esc(label));
        for (b, &n) in c.iter().enumerate() {
            let x = f.px(b as f64 * 10.0) + 2.0 + k as f64 * w;
            let (top, bottom) = (f.py(n as f64), f.py(0.0));
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{top:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}–{}%: {n} nodes</title></rect>",
                bottom - top,
                COLORS[k % COLORS.len()],
                esc(label),
                b * 10,
                b * 10 + 10
            );
        }
        s.push_str("</g>");
    }
    s.push_str("</svg>\n");
    s
}

/// Lines over a linear x axis (`data-plot="{kind}"`), one per series of (x, y) points, each
/// drawn as steps (a value holds until the next point).
pub(crate) fn lines(kind: &str, title: &str, xlabel: &str, ylabel: &str, series: &[(&str, Vec<(f64, f64)>)]) -> String {
    let series: Vec<&(&str, Vec<(f64, f64)>)> = series.iter().filter(|(_, p)| !p.is_empty()).collect();
    if series.is_empty() {
        return empty(kind, title, "nothing to plot");
    }
    let x_max = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).fold(0.0, f64::max);
    let y_max = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(0.0, f64::max);
    let f = Frame::linear(x_max, y_max * 1.05, false);
    let names: Vec<&str> = series.iter().map(|(n, _)| *n).collect();
    let mut s = f.axes(kind, title, xlabel, ylabel, &names);
    for (i, (_, pts)) in series.iter().enumerate() {
        let mut d = String::new();
        for (j, (x, y)) in pts.iter().enumerate() {
            let (px, py) = (f.px(*x), f.py(*y));
            if j == 0 {
                let _ = write!(d, "M{px:.1},{py:.1} ");
            } else {
                let _ = write!(d, "H{px:.1} V{py:.1} ");
            }
        }
        let _ = write!(
            s,
            "<path class=\"series\" data-points=\"{}\" d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
            pts.len(),
            COLORS[i % COLORS.len()]
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::metrics::{Collector, PodFilter};

    fn measurement() -> Measurement {
        let (_, mut m) = Collector::start("T/W/ns".into(), PodFilter::default()).finish();
        for v in [20_000u64, 35_000, 35_000, 120_000, 900_000] {
            m.latency.record(v).unwrap();
        }
        m.timeline = vec![(1.0, 900.0), (2.0, 1100.0), (3.0, 1000.0)];
        m
    }

    /// Checks that `html` is well-formed (every element closed in order, void elements aside).
    pub(crate) fn well_formed(html: &str) -> Result<(), String> {
        let body = html.trim_start_matches("<!DOCTYPE html>").trim_start();
        let mut stack: Vec<String> = Vec::new();
        let mut rest = body;
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            let end = rest.find('>').ok_or("unclosed tag")?;
            let tag = &rest[..end];
            rest = &rest[end + 1..];
            let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_alphanumeric()).collect();
            if tag.starts_with('/') {
                match stack.pop() {
                    Some(open) if open == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            } else if !tag.ends_with('/') && !["meta", "br"].contains(&name.as_str()) {
                stack.push(name);
            }
        }
        if stack.is_empty() {
            Ok(())
        } else {
            Err(format!("unclosed: {stack:?}"))
        }
    }

    #[test]
    fn report_is_well_formed_with_three_plots_holding_data() {
        let s = Section {
            title: "T/W <x>".into(),
            summary: vec![("scheduled".into(), "5".into())],
            measurements: vec![measurement()],
            utilization: vec![NodeUse { cpu: 0.05, memory: 0.5 }, NodeUse { cpu: 0.95, memory: 1.2 }],
        };
        let html = render("ksched & co", &[s]);
        well_formed(&html).unwrap();
        assert!(html.contains("T/W &lt;x&gt;") && html.contains("ksched &amp; co"));
        for kind in ["latency-cdf", "throughput", "utilization"] {
            let at = html.find(&format!("data-plot=\"{kind}\"")).unwrap_or_else(|| panic!("{kind} missing"));
            let svg = &html[at..at + html[at..].find("</svg>").unwrap()];
            assert!(svg.contains("class=\"series\""), "{kind} has no data series");
            assert!(!svg.contains("data-points=\"0\""), "{kind} has an empty series");
        }
        assert_eq!(html.matches("<svg").count(), 3);
    }

    #[test]
    fn nice_axis_rounds_up_to_a_round_step() {
        // (name, data max, whole numbers only, want (top, step))
        let cases: [(&str, f64, bool, (f64, f64)); 7] = [
            ("throughput", 131_632.0, false, (150_000.0, 50_000.0)),
            ("node counts", 111.0, true, (125.0, 25.0)),
            ("whole steps skip 2.5", 12.0, true, (15.0, 5.0)),
            ("few nodes stay whole", 3.0, true, (3.0, 1.0)),
            ("sub-second time", 0.0042, false, (0.005, 0.001)),
            ("exact top", 100.0, false, (100.0, 20.0)),
            ("no data", 0.0, false, (1.0, 0.2)),
        ];
        for (name, max, whole, (top, step)) in cases {
            let (t, s) = nice_axis(max, whole);
            assert!((t - top).abs() < 1e-9 && (s - step).abs() < 1e-9, "{name}: got ({t}, {s})");
        }
    }

    #[test]
    fn tick_labels_are_short_and_distinct() {
        // (value, step, want)
        let cases = [
            (0.0, 0.5, "0"),
            (0.0005, 0.0005, "0.0005"),
            (0.0015, 0.0005, "0.0015"),
            (0.25, 0.25, "0.25"),
            (50_000.0, 50_000.0, "50k"),
            (5000.0, 1000.0, "5000"),
            (2_000_000.0, 1e6, "2M"),
            (1.5, 0.5, "1.5"),
        ];
        for (v, step, want) in cases {
            assert_eq!(tick(v, step), want, "tick({v}, {step})");
        }
    }

    #[test]
    fn report_without_data_says_so() {
        let s = Section { title: "empty".into(), summary: vec![], measurements: vec![], utilization: vec![] };
        let html = render("r", &[s]);
        well_formed(&html).unwrap();
        assert!(html.contains("no scheduling attempts were measured"));
        assert!(!html.contains("class=\"series\""));
    }
}
