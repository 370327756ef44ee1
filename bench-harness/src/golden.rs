//! `ksched golden DIR`: replay upstream kube-scheduler's recorded decisions (a case folder,
//! or a folder of case folders) and report how often ours match.

use std::path::PathBuf;

use clap::Args;
use ksched_engine::features::FeatureGates;
use ksched_engine::framework::Profile;
use ksched_k8s::golden::replay_dir_with;

use crate::format::Format;

#[derive(Args, Debug)]
pub struct GoldenArgs {
    /// `--feature-gates` (the global flag; main sets it).
    #[arg(skip)]
    pub gates: ksched_engine::features::FeatureGates,
    /// A case folder (nodes.json, pods.json, decisions.jsonl, and the extended format's
    /// object files) or a folder of them.
    pub dir: PathBuf,
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json]), default_value = "text")]
    pub format: Format,
    /// How many mismatches to list in detail per case.
    #[arg(long, default_value_t = 20)]
    pub max_mismatches: usize,
}

/// The profile a case without `scheduler-config.json` is replayed with: upstream's defaults.
/// Every case runs with the percentageOfNodesToScore and parallelism of its recording
/// (`meta.json`, else 100 and 1).
pub fn golden_profile_with(gates: FeatureGates) -> Profile {
    Profile::default_profile_with(gates)
}

/// Ok(true) when every check of every gated case matched (cases of `REPORT_ONLY_MIXES` are
/// reported but do not fail).
pub fn golden(args: &GoldenArgs) -> Result<bool, String> {
    let reports = replay_dir_with(&args.dir, &golden_profile_with(args.gates), args.max_mismatches, &args.gates)
        .map_err(|e| e.to_string())?;
    match args.format {
        Format::Json => print!("{}", crate::format::document(&reports, args.format)?),
        _ => {
            for r in &reports {
                println!("{r}");
            }
        }
    }
    Ok(reports.iter().all(|r| r.passes()))
}
