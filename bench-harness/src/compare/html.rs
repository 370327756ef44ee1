//! `--html FILE`: one self-contained page (inline SVG from `report.rs`, no scripts): the
//! side-by-side table, then the configurations overlaid in each plot: CPU and memory
//! utilization histograms and the attempt-latency CDFs, one colour per configuration with a
//! legend; then the moved pods.

use std::fmt::Write;

use super::text::rows;
use super::CompareReport;
use crate::metrics::Measurement;
use crate::report::{esc, head, histogram, latency_cdf};

pub fn render(r: &CompareReport) -> String {
    let mut h = head("ksched compare");
    let _ = write!(h, "<p>{} (seed {})</p>\n<table>\n<tr><th></th>", esc(&r.input), r.seed);
    for c in &r.configs {
        let _ = write!(h, "<th>{}: {}</th>", esc(&c.label), esc(&c.config));
    }
    h.push_str("</tr>\n");
    for (name, values) in rows(&r.configs) {
        let _ = write!(h, "<tr><td>{}</td>", esc(&name));
        for v in values {
            let _ = write!(h, "<td>{}</td>", esc(&v));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<div class=\"plots\">\n");
    let names: Vec<String> = r.configs.iter().map(|c| format!("{}: {}", c.label, c.config)).collect();
    let cpu: Vec<Vec<f64>> = r.configs.iter().map(|c| c.utilization.iter().map(|u| u.cpu).collect()).collect();
    let memory: Vec<Vec<f64>> = r.configs.iter().map(|c| c.utilization.iter().map(|u| u.memory).collect()).collect();
    for (kind, title, values) in [
        ("cpu-utilization", "Node CPU utilization (requested / allocatable)", &cpu),
        ("memory-utilization", "Node memory utilization (requested / allocatable)", &memory),
    ] {
        let series: Vec<(&str, &[f64])> =
            names.iter().map(String::as_str).zip(values.iter().map(Vec::as_slice)).collect();
        h.push_str(&histogram(kind, title, &series));
    }
    let measurements: Vec<Measurement> = r
        .configs
        .iter()
        .zip(&names)
        .filter_map(|(c, name)| {
            c.latency.clone().map(|latency| Measurement {
                name: name.clone(),
                timeline: Vec::new(),
                latency,
                scheduled: c.scheduled,
                seconds: c.wall_seconds,
                cpu_ns: 0,
            })
        })
        .collect();
    h.push_str(&latency_cdf(&measurements));
    h.push_str("</div>\n");
    for c in r.configs.iter().filter(|c| !c.moved_pods.is_empty()) {
        let _ = write!(
            h,
            "<h2>{} pods moved from A to {} (first {})</h2>\n<table>\n<tr><th>pod</th><th>A</th><th>{}</th><th>decided by</th><th>why</th></tr>\n",
            c.moved,
            esc(&c.label),
            c.moved_pods.len(),
            esc(&c.label)
        );
        for m in &c.moved_pods {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&m.pod),
                esc(&m.baseline_node),
                esc(&m.node),
                esc(m.deciding_plugin.as_deref().unwrap_or("-")),
                esc(&m.why)
            );
        }
        h.push_str("</table>\n");
    }
    h.push_str("</body></html>\n");
    h
}

pub fn write(path: &std::path::Path, r: &CompareReport) -> Result<(), String> {
    std::fs::write(path, render(r)).map_err(|e| format!("writing {}: {e}", path.display()))
}
