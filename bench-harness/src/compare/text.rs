//! The side-by-side text table.

use super::metrics::ConfigReport;
use super::CompareReport;
use crate::simulate::columns;

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn fragmentation(f: Option<&super::metrics::Fragmentation>) -> String {
    match f {
        Some(f) => format!(
            "{} ({}/{} pods fit; {}m {}Mi, {})",
            pct(f.fragmentation),
            f.fit_individually,
            f.fit_by_totals,
            f.shape.cpu_milli,
            f.shape.memory_bytes >> 20,
            f.shape_of
        ),
        None => "-".into(),
    }
}

/// The metric rows: (name, value per configuration).
pub fn rows(configs: &[ConfigReport]) -> Vec<(String, Vec<String>)> {
    type Cell = fn(&ConfigReport) -> String;
    let table: Vec<(&str, Cell)> = vec![
        ("scheduled", |c| c.scheduled.to_string()),
        ("pending", |c| c.pending.to_string()),
        ("preempted", |c| c.preempted.to_string()),
        ("victims", |c| c.victims.to_string()),
        ("attempts", |c| c.attempts.to_string()),
        ("nodes in use", |c| format!("{} / {}", c.nodes_in_use, c.nodes)),
        ("nodes non-empty", |c| c.nodes_non_empty.to_string()),
        ("cpu mean", |c| pct(c.cpu.mean)),
        ("cpu stddev", |c| pct(c.cpu.stddev)),
        ("cpu min / max", |c| format!("{} / {}", pct(c.cpu.min), pct(c.cpu.max))),
        ("cpu p10 / p90", |c| format!("{} / {}", pct(c.cpu.p10), pct(c.cpu.p90))),
        ("cpu max-min", |c| pct(c.cpu.range)),
        ("memory mean", |c| pct(c.memory.mean)),
        ("memory stddev", |c| pct(c.memory.stddev)),
        ("memory min / max", |c| format!("{} / {}", pct(c.memory.min), pct(c.memory.max))),
        ("memory p10 / p90", |c| format!("{} / {}", pct(c.memory.p10), pct(c.memory.p90))),
        ("memory max-min", |c| pct(c.memory.range)),
        ("fragmentation (run's pods)", |c| fragmentation(c.fragmentation.as_ref())),
        ("max zone skew (run's pods)", |c| format!("{} pods ({} owners)", c.max_zone_skew, c.spread.len())),
        ("fragmentation (whole cluster)", |c| fragmentation(c.cluster_fragmentation.as_ref())),
        ("max zone skew (whole cluster)", |c| {
            format!("{} pods ({} owners)", c.cluster_max_zone_skew, c.cluster_spread.len())
        }),
        ("throughput", |c| format!("{:.0} pods/s", c.throughput_pods_per_second)),
        ("latency p50/p90/p99", |c| {
            let l = &c.attempt_latency_us;
            format!("{:.1} / {:.1} / {:.1} µs", l.p50, l.p90, l.p99)
        }),
        ("wall time", |c| format!("{:.3} s", c.wall_seconds)),
        ("moved vs A", |c| if c.label == "A" { "-".into() } else { c.moved.to_string() }),
    ];
    let mut rows: Vec<(String, Vec<String>)> =
        table.into_iter().map(|(name, f)| (name.to_owned(), configs.iter().map(f).collect())).collect();
    rows.extend(device_rows(configs));
    rows
}

/// One row per DRA driver and per DeviceClass any configuration has: allocated / total.
fn device_rows(configs: &[ConfigReport]) -> Vec<(String, Vec<String>)> {
    type Side = fn(&crate::device_use::DeviceUse) -> &[crate::device_use::DeviceCount];
    let sides: [(&str, Side); 2] = [("devices", |d| &d.drivers), ("devices class", |d| &d.classes)];
    let mut rows = Vec::new();
    for (prefix, side) in sides {
        let mut names: Vec<&str> =
            configs.iter().flat_map(|c| side(&c.devices).iter().map(|d| d.name.as_str())).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let cells = configs
                .iter()
                .map(|c| {
                    side(&c.devices)
                        .iter()
                        .find(|d| d.name == name)
                        .map_or_else(|| "-".into(), |d| format!("{} / {}", d.allocated, d.total))
                })
                .collect();
            rows.push((format!("{prefix} {name}"), cells));
        }
    }
    rows
}

pub fn render(r: &CompareReport) -> String {
    let mut out = format!("ksched compare: {} (seed {})\n", r.input, r.seed);
    for c in &r.configs {
        out.push_str(&format!("  {}: {}\n", c.label, c.config));
    }
    out.push('\n');
    let mut grid =
        vec![std::iter::once("METRIC".to_owned()).chain(r.configs.iter().map(|c| c.label.clone())).collect()];
    for (name, values) in rows(&r.configs) {
        grid.push(std::iter::once(name).chain(values).collect());
    }
    out.push_str(&columns(&grid));
    out.push_str(&crate::simulate::unmodelled_summary(&r.unmodelled_fields));
    for c in &r.configs {
        let mut lines = Vec::new();
        for (reason, n) in &c.pending_by_reason {
            lines.push(format!("  pending: {n} × {reason}"));
        }
        for s in c.spread.iter().filter(|s| s.skew > 0).take(10) {
            let zones: Vec<String> =
                s.zones.iter().map(|(z, n)| format!("{}={n}", if z.is_empty() { "-" } else { z })).collect();
            lines.push(format!("  spread: {} skew {} ({})", s.owner, s.skew, zones.join(", ")));
        }
        for n in &c.notes {
            lines.push(format!("  {}{n}", crate::simulate::note_label(n)));
        }
        if c.moved > 0 {
            lines.push(format!("  {} pods moved vs A (first {} listed):", c.moved, c.moved_pods.len()));
            let mut grid = vec![["POD", "A", c.label.as_str(), "DECIDED BY", "WHY"].map(String::from).to_vec()];
            for m in &c.moved_pods {
                grid.push(vec![
                    m.pod.clone(),
                    m.baseline_node.clone(),
                    m.node.clone(),
                    m.deciding_plugin.clone().unwrap_or_else(|| "-".into()),
                    m.why.clone(),
                ]);
            }
            for l in columns(&grid).lines() {
                lines.push(format!("    {l}"));
            }
        }
        if !lines.is_empty() {
            out.push_str(&format!("\n{} ({}):\n{}\n", c.label, c.config, lines.join("\n")));
        }
    }
    out
}
