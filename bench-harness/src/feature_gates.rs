//! Feature gates on the command line: `--feature-gates Name=bool,...` (every command: one
//! global flag, parsed by upstream's rules into a [`FeatureGates`] that main hands each
//! command in its arguments), `ksched feature-gates` (the registry: each gate's v1.35
//! default, stage, and what it does in ksched), and what a command builds from the gates (the
//! default profile, the queue's configuration, a KubeSchedulerConfiguration's plugins).
//! Commands that re-exec ksched (bench's children, gate's paired runs, sweep's scenarios)
//! pass the same gates on with [`child_args`].

use std::path::Path;

use clap::Args;
use ksched_engine::features::{describe, FeatureGates, Support, FEATURES};
use ksched_engine::framework::{Profile, Profiles};
use ksched_engine::queue::QueueConfig;
use ksched_k8s::config::{self, Registry, SchedulerConfig};

/// `--feature-gates`' value parser: v1.35's defaults with the flag applied (an unknown gate,
/// a locked gate, a value ksched does not model, or a missing dependency is a usage error).
pub fn parse_flag(s: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(s).map_err(|e| e.to_string())
}

/// `--feature-gates`' value parser: one flag's value, checked as [`parse_flag`] checks it and
/// kept as given (main merges repeated flags in order, as upstream does).
pub fn check_flag(s: &str) -> Result<String, String> {
    parse_flag(s).map(|_| s.to_owned())
}

/// The arguments that give a child ksched process these gates (none for v1.35's defaults, so
/// a baseline binary built before the flag existed still runs).
pub fn child_args(gates: &FeatureGates) -> Vec<String> {
    let flag = gates.to_flag();
    if flag.is_empty() {
        Vec::new()
    } else {
        vec!["--feature-gates".into(), flag]
    }
}

/// Upstream's default profile with its plugins built under `gates`.
pub fn default_profile(gates: FeatureGates) -> Profile {
    Profile::default_profile_with(gates)
}

/// The queue's default configuration under `gates`.
pub fn queue_config(gates: FeatureGates) -> QueueConfig {
    QueueConfig::new().with_feature_gates(gates)
}

/// A KubeSchedulerConfiguration file read with the in-tree plugins built under `gates` (its
/// queue configuration carries them too).
pub fn load_config(path: &Path, gates: FeatureGates) -> Result<SchedulerConfig, String> {
    config::load_file_with(path, &Registry::in_tree_with(gates)).map_err(|e| e.to_string())
}

/// The profiles and queue configuration of `config` (every profile) or, without one, the
/// default profile, all under `gates`; the configuration's warnings go to stderr.
pub fn scheduler(config: Option<&Path>, gates: FeatureGates) -> Result<(Profiles, QueueConfig, bool), String> {
    Ok(match config {
        Some(file) => {
            let cfg = load_config(file, gates)?;
            for w in &cfg.warnings {
                eprintln!("ksched: {}: {w}", file.display());
            }
            (cfg.all_profiles(), cfg.queue_config(), true)
        }
        None => (Profiles::from(default_profile(gates)), queue_config(gates), false),
    })
}

pub use crate::format::Format;

/// `ksched feature-gates`.
#[derive(Args, Debug, Clone)]
pub struct FeatureGatesArgs {
    /// Output format.
    #[arg(short = 'o', long, value_parser = crate::format::parser(&[Format::Text, Format::Json, Format::Yaml]), default_value = "text")]
    pub format: Format,
}

/// The registry under `gates` (v1.35's defaults with `--feature-gates` applied), as text or
/// JSON: every gate's name, v1.35 default, current value, stage, lock, dependencies, what ksched
/// does with it and its effect.
pub fn list(args: &FeatureGatesArgs, gates: &FeatureGates) -> String {
    match args.format {
        Format::Json | Format::Yaml => {
            let items: Vec<serde_json::Value> = FEATURES
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "name": f.name,
                        "default": f.default,
                        "enabled": gates.enabled(f.feature),
                        "stage": f.stage.to_string(),
                        "locked": f.locked,
                        "dependsOn": f.depends_on.iter().map(|d| d.name()).collect::<Vec<_>>(),
                        "support": match (f.support, f.feature.blocked_by()) {
                            (Support::DefaultOnly, _) | (_, Some(_)) => "default-only",
                            (Support::Modelled, None) => "modelled",
                            (Support::NoDecisionEffect, None) => "no-decision-effect",
                        },
                        "blockedBy": f.feature.blocked_by().map(|d| d.name()),
                        "effect": f.effect,
                    })
                })
                .collect();
            let doc = serde_json::json!({ "version": "v1.35", "featureGates": items });
            crate::format::document(&doc, args.format).unwrap_or_default()
        }
        _ => describe(gates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksched_engine::features::Feature;

    #[test]
    fn list_json_names_every_gate_with_its_default_and_current_value() {
        let gates = parse_flag("PodLevelResources=false").unwrap();
        let out = list(&FeatureGatesArgs { format: Format::Json }, &gates);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let items = v["featureGates"].as_array().unwrap();
        assert_eq!(items.len(), FEATURES.len());
        let plr = items.iter().find(|i| i["name"] == "PodLevelResources").unwrap();
        assert_eq!((plr["default"].as_bool(), plr["enabled"].as_bool()), (Some(true), Some(false)));
        assert_eq!(plr["stage"], "beta");
        assert_eq!((plr["support"].as_str(), plr["blockedBy"].as_str()), (Some("modelled"), None));
        // A gate whose dependency ksched cannot turn on runs its default only.
        let ippl = items.iter().find(|i| i["name"] == "InPlacePodLevelResourcesVerticalScaling").unwrap();
        assert_eq!(
            (ippl["support"].as_str(), ippl["blockedBy"].as_str()),
            (Some("default-only"), Some("NodeDeclaredFeatures"))
        );
        // The JSON names every gate of the registry with its default, in the text's order.
        let names: Vec<&str> = items.iter().map(|i| i["name"].as_str().unwrap()).collect();
        let registry: Vec<&str> = FEATURES.iter().map(|f| f.name).collect();
        assert_eq!(names, registry);
        assert!(items.iter().zip(FEATURES).all(|(i, f)| i["default"] == f.default && i["effect"] == f.effect));
        let text = list(&FeatureGatesArgs { format: Format::Text }, &gates);
        assert!(text.contains("PodLevelResources") && text.contains("(set to false)"), "{text}");
    }

    #[test]
    fn child_args_carry_only_what_differs_from_the_defaults() {
        assert!(child_args(&FeatureGates::default()).is_empty());
        let mut g = FeatureGates::default();
        g.set(Feature::PodLevelResources, false).unwrap();
        assert_eq!(child_args(&g), ["--feature-gates", "PodLevelResources=false"]);
        assert_eq!(parse_flag(&child_args(&g)[1]).unwrap(), g);
    }

    /// A pod whose pod-level `spec.resources` asks 5 CPU while its container asks 100m, and a
    /// 4-CPU node: upstream v1.35 (PodLevelResources on) cannot place it; with the gate off
    /// the pod-level requests are ignored and it fits.
    const BIG_POD_LEVEL: &str =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {requests: {cpu: \"5\"}}\n  \
                                 containers: [{name: c, image: pause, resources: {requests: {cpu: 100m}}}]\n";

    #[test]
    fn pod_level_resources_off_ignores_spec_resources_in_manifests() {
        use ksched_k8s::manifest::{Manifests, ReadOptions};
        let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n\
                    status: {allocatable: {cpu: \"4\", memory: 32Gi, pods: \"110\"}}\n";
        let place = |flag: &str| {
            let gates = parse_flag(flag).unwrap();
            let mut m = Manifests::with_options(ReadOptions { gates, ..ReadOptions::default() });
            m.read_str("n.yaml", node).unwrap();
            m.read_str("p.yaml", &BIG_POD_LEVEL.replace("{name: p}", "{name: p, namespace: default}")).unwrap();
            let (profiles, queue) = crate::simulate::load_profiles(None, gates).unwrap();
            let r = crate::simulate::simulate(&m, profiles, queue, 1).unwrap();
            r.pods[0].node.clone()
        };
        assert_eq!(place(""), None, "v1.35: the pod-level 5 CPU do not fit 4");
        assert_eq!(place("PodLevelResources=false").as_deref(), Some("n1"), "gate off: 100m fits");
    }

    /// The same pod in a workload file: the command line's gates and the file's
    /// `featureGates` both decide.
    #[test]
    fn pod_level_resources_off_from_the_flag_or_the_workload_file() {
        use crate::perf_file::exec::Options;
        use crate::perf_file::{run_file, Selection};
        use ksched_k8s::perf_workload::LoadOptions;
        let dir = std::env::temp_dir().join(format!("ksched-gates-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pod.yaml"), BIG_POD_LEVEL.replace("metadata: {name: p}\n", "")).unwrap();
        let file = |gates: &str| {
            format!(
                "- name: T\n{gates}  workloadTemplate:\n  - opcode: createNodes\n    count: 1\n  \
                 - opcode: createPods\n    count: 2\n    podTemplatePath: pod.yaml\n    skipWaitToCompletion: true\n  \
                 - opcode: barrier\n    stageRequirement: Attempted\n  - opcode: startCollectingMetrics\n    \
                 name: m\n    namespaces: [none]\n  - opcode: stopCollectingMetrics\n  workloads:\n  - name: w\n"
            )
        };
        let scheduled = |flag: &str, in_file: &str| {
            let path = dir.join(format!("perf-{}.yaml", in_file.len()));
            std::fs::write(&path, file(in_file)).unwrap();
            let opts = Options { gates: parse_flag(flag).unwrap(), ..Options::default() };
            let r = run_file(&path, &Selection::default(), &LoadOptions::default(), &opts).unwrap().remove(0);
            (r.counts.scheduled, r.warnings)
        };
        assert_eq!(scheduled("", "").0, 0, "v1.35's defaults");
        assert_eq!(scheduled("PodLevelResources=false", "").0, 2, "--feature-gates");
        let (n, warnings) = scheduled("", "  featureGates:\n    PodLevelResources: false\n");
        assert_eq!(n, 2, "the file's featureGates");
        assert!(warnings.is_empty(), "a modelled gate applies silently: {warnings:?}");
        // What ksched cannot apply is said, with what the workload runs with instead.
        let (n, warnings) = scheduled(
            "",
            "  featureGates:\n    StorageCapacityScoring: true\n    SchedulerQueueingHints: false\n    Nope: true\n",
        );
        assert_eq!(n, 0);
        let all = warnings.join("\n");
        for says in [
            "feature gate StorageCapacityScoring=true: StorageCapacityScoring=true is not modelled by ksched",
            "the workload runs with StorageCapacityScoring=false",
            "SchedulerQueueingHints=false: cannot set feature gate SchedulerQueueingHints to false, feature is locked to true",
            "feature gate Nope=true: not known to ksched; ignored",
        ] {
            assert!(all.contains(says), "{says:?} not in {all}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// DRAPrioritizedList and DRAAdminAccess reach DynamicResources through the default
    /// profile: a claim asking with `firstAvailable`, or with `adminAccess`, is allocated under
    /// v1.35's defaults and cannot be with the gate off.
    #[test]
    fn dra_gates_off_refuse_the_claims_that_need_them() {
        use ksched_k8s::manifest::{Manifests, ReadOptions};
        use ksched_k8s::testing::KubectlDump;
        let requests = [
            (
                "DRAPrioritizedList",
                serde_json::json!({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]}),
            ),
            (
                "DRAAdminAccess",
                serde_json::json!({"name": "gpu", "exactly": {"deviceClassName": "gpu", "adminAccess": true}}),
            ),
        ];
        for (gate, request) in requests {
            let yaml = KubectlDump::default()
                .node("n1", "4")
                .resource_slice("n1", "gpu.example.com", "a100", 1)
                .device_class("gpu", "gpu.example.com", "a100")
                .resource_claim("rc", "gpu", 1)
                .edit_last(|v| v["spec"]["devices"]["requests"] = serde_json::json!([request]))
                .pod("p", None, "1", "Pending", None)
                .with_claim("rc")
                .yaml();
            let place = |flag: &str| {
                let gates = parse_flag(flag).unwrap();
                let mut m = Manifests::with_options(ReadOptions { gates, ..ReadOptions::default() });
                m.read_str("dump.yaml", &yaml).unwrap();
                let (profiles, queue) = crate::simulate::load_profiles(None, gates).unwrap();
                crate::simulate::simulate(&m, profiles, queue, 1).unwrap().pods[0].node.clone()
            };
            assert_eq!(place("").as_deref(), Some("n1"), "{gate} on (v1.35)");
            assert_eq!(place(&format!("{gate}=false")), None, "{gate}=false");
        }
    }

    #[test]
    fn built_objects_carry_the_gates() {
        let g = parse_flag("SchedulerPopFromBackoffQ=false").unwrap();
        assert_eq!(queue_config(g).gates, g);
        let (_, q, from_config) = scheduler(None, g).unwrap();
        assert!(!from_config);
        assert_eq!(q.gates, g);
    }
}
