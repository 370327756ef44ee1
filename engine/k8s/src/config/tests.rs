use std::sync::Arc;

use super::*;
use ksched_engine::framework::{Plugin, Profile};

const HEADER: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn with_header(body: &str) -> String {
    format!("{HEADER}{body}")
}

fn names<P: Plugin + ?Sized>(v: &[Arc<P>]) -> Vec<String> {
    v.iter().map(|p| p.name().to_owned()).collect()
}

/// Plugin names per extension point, score entries as `Name:weight`.
fn summary(p: &Profile) -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("preFilter", names(&p.pre_filter)),
        ("filter", names(&p.filter)),
        ("postFilter", names(&p.post_filter)),
        ("preScore", names(&p.pre_score)),
        ("score", p.score.iter().map(|s| format!("{}:{}", s.plugin.name(), s.weight)).collect()),
        ("reserve", names(&p.reserve)),
        ("bind", names(&p.bind)),
    ]
}

fn point<'a>(s: &'a [(&'static str, Vec<String>)], name: &str) -> &'a [String] {
    &s.iter().find(|(n, _)| *n == name).expect("known point").1
}

const DEFAULT_FILTER: &[&str] = &[
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
];
const DEFAULT_SCORE: &[&str] = &[
    "TaintToleration:3",
    "NodeAffinity:2",
    "NodeResourcesFit:1",
    "PodTopologySpread:2",
    "InterPodAffinity:2",
    "DynamicResources:2",
    "NodeResourcesBalancedAllocation:1",
    "ImageLocality:1",
];

#[test]
fn empty_configuration_builds_the_default_profile() {
    let cfg = parse(HEADER).unwrap();
    assert_eq!(cfg.profiles.len(), 1);
    let built = &cfg.profiles[0];
    assert_eq!(built.scheduler_name, "default-scheduler");
    assert_eq!(summary(built), summary(&Profile::default_profile()));
    assert_eq!(built.percentage_of_nodes_to_score, None);
    assert_eq!((cfg.parallelism, built.parallelism), (16, 16));
    assert_eq!((cfg.pod_initial_backoff.as_secs(), cfg.pod_max_backoff.as_secs()), (1, 10));
    // Every upstream default plugin is modelled: nothing to warn about.
    assert!(
        cfg.warnings.iter().all(|w| !w.contains("DynamicResources") && !w.contains("VolumeBinding")),
        "{:?}",
        cfg.warnings
    );
}

#[test]
fn explicit_empty_profiles_and_json_are_the_default_too() {
    for (name, text) in [
        ("empty profile list", with_header("profiles: []\n")),
        ("one unnamed profile", with_header("profiles:\n- {}\n")),
        ("json", r#"{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration"}"#.to_owned()),
    ] {
        let cfg = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(summary(cfg.default_profile()), summary(&Profile::default_profile()), "{name}");
        assert_eq!(cfg.default_profile().scheduler_name, "default-scheduler", "{name}");
    }
}

/// Plugin names expected at some extension points.
type Expected = &'static [(&'static str, &'static [&'static str])];

#[test]
fn plugin_sets_table() {
    // (case, profile body under `plugins:` or `pluginConfig:`, expected points)
    let cases: &[(&str, &str, Expected)] = &[
        (
            "score.enabled weight overrides and runs first",
            "plugins:\n  score:\n    enabled:\n    - name: ImageLocality\n      weight: 5\n",
            &[(
                "score",
                &[
                    "ImageLocality:5",
                    "TaintToleration:3",
                    "NodeAffinity:2",
                    "NodeResourcesFit:1",
                    "PodTopologySpread:2",
                    "InterPodAffinity:2",
                    "DynamicResources:2",
                    "NodeResourcesBalancedAllocation:1",
                ],
            )],
        ),
        (
            "score.enabled without weight resets to 1",
            "plugins:\n  score:\n    enabled:\n    - name: TaintToleration\n",
            &[(
                "score",
                &[
                    "TaintToleration:1",
                    "NodeAffinity:2",
                    "NodeResourcesFit:1",
                    "PodTopologySpread:2",
                    "InterPodAffinity:2",
                    "DynamicResources:2",
                    "NodeResourcesBalancedAllocation:1",
                    "ImageLocality:1",
                ],
            )],
        ),
        (
            "multiPoint weight replaces the default in place",
            "plugins:\n  multiPoint:\n    enabled:\n    - name: TaintToleration\n      weight: 7\n",
            &[
                (
                    "score",
                    &["TaintToleration:7", "NodeAffinity:2", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"],
                ),
                ("filter", DEFAULT_FILTER),
            ],
        ),
        (
            "multiPoint weight 0 means 1",
            "plugins:\n  multiPoint:\n    enabled:\n    - name: NodeAffinity\n      weight: 0\n",
            &[(
                "score",
                &["TaintToleration:3", "NodeAffinity:1", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"],
            )],
        ),
        (
            "enabled and disabled at multiPoint: moves to the end with its weight",
            "plugins:\n  multiPoint:\n    enabled:\n    - name: TaintToleration\n      weight: 5\n    disabled:\n    - name: TaintToleration\n",
            &[
                ("filter", &["NodeUnschedulable", "NodeName", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources", "TaintToleration"]),
                (
                    "score",
                    &["NodeAffinity:2", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1", "TaintToleration:5"],
                ),
            ],
        ),
        (
            "disable all at multiPoint and re-enable a few",
            "plugins:\n  multiPoint:\n    disabled:\n    - name: '*'\n    enabled:\n    - name: PrioritySort\n    - name: DefaultBinder\n    - name: NodeName\n    - name: ImageLocality\n      weight: 2\n",
            &[("preFilter", &[]), ("filter", &["NodeName"]), ("preScore", &[]), ("score", &["ImageLocality:2"])],
        ),
        (
            "disable all at filter keeps the other points",
            "plugins:\n  filter:\n    disabled:\n    - name: '*'\n",
            &[("filter", &[]), ("preFilter", &["NodeAffinity", "NodePorts", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"]), ("score", DEFAULT_SCORE)],
        ),
        (
            "disable all at filter and re-enable in a custom order",
            "plugins:\n  filter:\n    disabled:\n    - name: '*'\n    enabled:\n    - name: NodePorts\n    - name: NodeName\n",
            &[("filter", &["NodePorts", "NodeName"])],
        ),
        (
            "a point's own plugin runs before multiPoint's",
            "plugins:\n  filter:\n    enabled:\n    - name: NodePorts\n",
            &[(
                "filter",
                &["NodePorts", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"],
            )],
        ),
        (
            "disable one plugin at score only",
            "plugins:\n  score:\n    disabled:\n    - name: NodeAffinity\n",
            &[
                (
                    "score",
                    &["TaintToleration:3", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"],
                ),
                ("preScore", &["TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"]),
                ("filter", DEFAULT_FILTER),
            ],
        ),
        (
            "disable at multiPoint removes it everywhere",
            "plugins:\n  multiPoint:\n    disabled:\n    - name: TaintToleration\n",
            &[
                ("filter", &["NodeUnschedulable", "NodeName", "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"]),
                ("preScore", &["NodeAffinity", "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"]),
                (
                    "score",
                    &["NodeAffinity:2", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"],
                ),
            ],
        ),
        (
            "removed from multiPoint, enabled at score: runs last with its weight",
            "plugins:\n  multiPoint:\n    disabled:\n    - name: ImageLocality\n  score:\n    enabled:\n    - name: ImageLocality\n      weight: 4\n",
            &[(
                "score",
                &["TaintToleration:3", "NodeAffinity:2", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:4"],
            )],
        ),
        (
            "score weight beats multiPoint weight",
            "plugins:\n  multiPoint:\n    enabled:\n    - name: ImageLocality\n      weight: 9\n  score:\n    enabled:\n    - name: ImageLocality\n      weight: 2\n",
            &[(
                "score",
                &["ImageLocality:2", "TaintToleration:3", "NodeAffinity:2", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1"],
            )],
        ),
        (
            "weight above 100 is accepted as upstream does",
            "plugins:\n  score:\n    enabled:\n    - name: NodeAffinity\n      weight: 1000\n",
            &[(
                "score",
                &["NodeAffinity:1000", "TaintToleration:3", "NodeResourcesFit:1", "PodTopologySpread:2", "InterPodAffinity:2", "DynamicResources:2", "NodeResourcesBalancedAllocation:1", "ImageLocality:1"],
            )],
        ),
        (
            "DynamicResources enabled explicitly with a weight runs first",
            "plugins:\n  score:\n    enabled:\n    - name: DynamicResources\n      weight: 5\n",
            &[(
                "score",
                &[
                    "DynamicResources:5",
                    "TaintToleration:3",
                    "NodeAffinity:2",
                    "NodeResourcesFit:1",
                    "PodTopologySpread:2",
                    "InterPodAffinity:2",
                    "NodeResourcesBalancedAllocation:1",
                    "ImageLocality:1",
                ],
            )],
        ),
        (
            "plugin args",
            "pluginConfig:\n- name: NodeResourcesBalancedAllocation\n  args:\n    kind: NodeResourcesBalancedAllocationArgs\n    apiVersion: kubescheduler.config.k8s.io/v1\n    resources:\n    - name: cpu\n    - name: example.com/gpu\n      weight: 1\n- name: NodeAffinity\n  args:\n    addedAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - key: topology.kubernetes.io/zone\n            operator: In\n            values: [a, b]\n",
            &[("score", DEFAULT_SCORE)],
        ),
    ];
    for (name, body, want) in cases {
        let text = with_header(&format!("profiles:\n- schedulerName: default-scheduler\n{}", indent(body)));
        let cfg = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        let got = summary(&cfg.profiles[0]);
        for (p, want_names) in *want {
            assert_eq!(point(&got, p), *want_names, "{name}: {p}");
        }
    }
}

/// Indents a profile body under `- schedulerName: ...`.
fn indent(body: &str) -> String {
    body.lines().map(|l| format!("  {l}\n")).collect()
}

#[test]
fn top_level_settings_and_profiles() {
    let text = with_header(
        "parallelism: 4
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
enableProfiling: true
enableContentionProfiling: false
delayCacheUntilActive: true
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packing
  percentageOfNodesToScore: 50
  plugins:
    score:
      disabled:
      - name: '*'
      enabled:
      - name: NodeResourcesFit
        weight: 5
",
    );
    let cfg = parse(&text).unwrap();
    assert_eq!(cfg.profiles.len(), 2);
    assert_eq!(cfg.parallelism, 4);
    assert_eq!(cfg.percentage_of_nodes_to_score, Some(30));
    let default = cfg.profile("default-scheduler").unwrap();
    assert_eq!(default.percentage_of_nodes_to_score, Some(30));
    assert_eq!(default.parallelism, 4);
    assert_eq!(point(&summary(default), "score"), DEFAULT_SCORE);
    let packing = cfg.profile("bin-packing").unwrap();
    assert_eq!(packing.percentage_of_nodes_to_score, Some(50));
    assert_eq!(packing.parallelism, 4);
    assert_eq!(point(&summary(packing), "score"), ["NodeResourcesFit:5"]);
    assert_eq!(point(&summary(packing), "filter"), DEFAULT_FILTER);
    assert!(std::ptr::eq(cfg.default_profile(), default));
    let q = cfg.queue_config();
    assert_eq!((q.initial_backoff.as_secs(), q.max_backoff.as_secs()), (2, 20));
}

#[test]
fn default_profile_is_the_first_without_default_scheduler() {
    let cfg = parse(&with_header("profiles:\n- schedulerName: a\n- schedulerName: b\n")).unwrap();
    assert_eq!(cfg.default_profile().scheduler_name, "a");
}

#[test]
fn one_instance_per_plugin_shared_by_its_points() {
    let cfg = parse(HEADER).unwrap();
    let p = &cfg.profiles[0];
    let addr = |name: &str, ptrs: Vec<(&'static str, *const u8)>| {
        ptrs.into_iter().find(|(n, _)| *n == name).map(|(_, a)| a).unwrap()
    };
    let filter = p.filter.iter().map(|f| (f.name(), Arc::as_ptr(f) as *const u8)).collect::<Vec<_>>();
    let pre_filter = p.pre_filter.iter().map(|f| (f.name(), Arc::as_ptr(f) as *const u8)).collect::<Vec<_>>();
    let pre_score = p.pre_score.iter().map(|f| (f.name(), Arc::as_ptr(f) as *const u8)).collect::<Vec<_>>();
    let score = p.score.iter().map(|s| (s.plugin.name(), Arc::as_ptr(&s.plugin) as *const u8)).collect::<Vec<_>>();
    let a = addr("NodeAffinity", filter.clone());
    assert_eq!(a, addr("NodeAffinity", pre_filter));
    assert_eq!(a, addr("NodeAffinity", pre_score.clone()));
    assert_eq!(a, addr("NodeAffinity", score.clone()));
    assert_eq!(addr("TaintToleration", filter), addr("TaintToleration", score));
    // Profiles do not share instances.
    let two = parse(&with_header("profiles:\n- schedulerName: a\n- schedulerName: b\n")).unwrap();
    let first = Arc::as_ptr(&two.profiles[0].filter[0]) as *const u8;
    let second = Arc::as_ptr(&two.profiles[1].filter[0]) as *const u8;
    assert_ne!(first, second);
}

#[test]
fn errors_table() {
    // (case, document after the header (or the whole text when `raw`), field, message part)
    let cases: &[(&str, bool, &str, &str, &str)] = &[
        ("yaml syntax", true, "apiVersion: [unclosed\n", "", "not a valid YAML document"),
        ("not a mapping", true, "- a\n- b\n", "", "expected a KubeSchedulerConfiguration mapping"),
        ("empty document", true, "", "", "an empty document"),
        ("missing apiVersion", true, "kind: KubeSchedulerConfiguration\n", "apiVersion", "Required value"),
        (
            "old apiVersion",
            true,
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "apiVersion",
            "Unsupported value",
        ),
        ("wrong kind", true, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Pod\n", "kind", "Unsupported value"),
        ("unknown top-level field", false, "percentOfNodesToScore: 10\n", "percentOfNodesToScore", "unknown field `percentOfNodesToScore`"),
        ("unknown profile field", false, "profiles:\n- schedulerName: a\n  plugin: {}\n", "profiles[0].plugin", "unknown field `plugin`"),
        (
            "unknown extension point",
            false,
            "profiles:\n- plugins:\n    scoring: {}\n",
            "profiles[0].plugins.scoring",
            "unknown field `scoring`",
        ),
        (
            "unknown plugin field",
            false,
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        wieght: 2\n",
            "profiles[0].plugins.score.enabled[0].wieght",
            "unknown field `wieght`",
        ),
        (
            "weight not a number",
            false,
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: heavy\n",
            "profiles[0].plugins.score.enabled[0].weight",
            "invalid type",
        ),
        (
            "weight beyond int32",
            false,
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 3000000000\n",
            "profiles[0].plugins.score.enabled[0].weight",
            "invalid value",
        ),
        (
            "negative weight in the second profile",
            false,
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    score:\n      enabled:\n      - name: NodeName\n      - name: ImageLocality\n        weight: -1\n",
            "profiles[1].plugins.score.enabled[1].weight",
            "must not be negative",
        ),
        (
            "negative multiPoint weight",
            false,
            "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: -3\n",
            "profiles[0].plugins.multiPoint.enabled[0].weight",
            "must not be negative",
        ),
        (
            "unknown plugin at score",
            false,
            "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NoSuchPlugin\n",
            "profiles[0].plugins.score.enabled[0].name",
            "unknown plugin \"NoSuchPlugin\"",
        ),
        (
            "unknown plugin at multiPoint",
            false,
            "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: MyPlugin\n",
            "profiles[0].plugins.multiPoint.enabled[0].name",
            "unknown plugin \"MyPlugin\"",
        ),
        (
            "NodeResourcesFit args are validated",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: LeastAllocated\n        resources:\n        - name: cpu\n          weight: -1\n",
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
            "not in valid range",
        ),
        (
            "plugin at a point it does not implement",
            false,
            "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
            "profiles[0].plugins.filter.enabled[0]",
            "does not implement the filter extension point",
        ),
        (
            "plugin twice at one point",
            false,
            "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NodeName\n      - name: NodeName\n",
            "profiles[0].plugins.filter.enabled[1]",
            "already enabled at filter",
        ),
        (
            "plugin twice in multiPoint",
            false,
            "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 4\n      - name: ImageLocality\n        weight: 6\n",
            "profiles[0].plugins.multiPoint.enabled[0]",
            "already enabled in multiPoint",
        ),
        ("negative percentage", false, "percentageOfNodesToScore: -1\n", "percentageOfNodesToScore", "[0-100]"),
        (
            "profile percentage above 100",
            false,
            "profiles:\n- percentageOfNodesToScore: 101\n",
            "profiles[0].percentageOfNodesToScore",
            "Invalid value: 101",
        ),
        ("zero parallelism", false, "parallelism: 0\n", "parallelism", "greater than zero"),
        ("negative parallelism", false, "parallelism: -2\n", "parallelism", "greater than zero"),
        ("zero initial backoff", false, "podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "greater than 0"),
        (
            "max backoff below initial",
            false,
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds",
            "greater than or equal",
        ),
        (
            "duplicate scheduler names",
            false,
            "profiles:\n- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n",
            "profiles[2].schedulerName",
            "Duplicate value: \"a\"",
        ),
        (
            "unnamed profile among several",
            false,
            "profiles:\n- schedulerName: a\n- percentageOfNodesToScore: 10\n",
            "profiles[1].schedulerName",
            "Required value",
        ),
        (
            "duplicate pluginConfig",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: ImageLocality\n  - name: NodeAffinity\n",
            "profiles[0].pluginConfig[2]",
            "Duplicate value: \"NodeAffinity\"",
        ),
        (
            "unknown args field",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinty: {}\n",
            "profiles[0].pluginConfig[0].args.addedAffinty",
            "unknown field `addedAffinty`",
        ),
        (
            "args of the wrong kind",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      kind: NodeAffinityArgs\n",
            "profiles[0].pluginConfig[0].args.kind",
            "must be of kind NodeResourcesBalancedAllocationArgs",
        ),
        (
            "args of another apiVersion",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      apiVersion: kubescheduler.config.k8s.io/v1beta3\n",
            "profiles[0].pluginConfig[0].args.apiVersion",
            "must be kubescheduler.config.k8s.io/v1",
        ),
        (
            "args field of the wrong type",
            false,
            "profiles:\n- pluginConfig:\n  - name: ImageLocality\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n        weight: heavy\n",
            "profiles[0].pluginConfig[1].args.resources[0].weight",
            "invalid type",
        ),
        (
            "VolumeBinding: negative bindTimeoutSeconds",
            false,
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n      bindTimeoutSeconds: -1\n",
            "profiles[0].pluginConfig[0].args.bindTimeoutSeconds",
            "should not be a negative value",
        ),
        (
            "VolumeBinding: shape without StorageCapacityScoring",
            false,
            "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n      shape: [{utilization: 0, score: 0}]\n",
            "profiles[0].pluginConfig[0].args.shape",
            "turn on the feature gate StorageCapacityScoring",
        ),
        (
            "args rejected by validate",
            false,
            "profiles:\n- pluginConfig:\n  - name: ImageLocality\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n        weight: 2\n",
            "profiles[0].pluginConfig[1].args.resources[0].weight",
            "must be 1",
        ),
        (
            "duplicate balanced resource",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n      - name: cpu\n",
            "profiles[0].pluginConfig[0].args.resources[1].name",
            "Duplicate value: \"cpu\"",
        ),
        (
            "node affinity args: unsupported operator",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - key: zone\n              operator: Equals\n              values: [a]\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
            "Unsupported value: \"Equals\"",
        ),
        (
            "node affinity args: In without values",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - key: zone\n              operator: In\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
            "values set can't be empty",
        ),
        (
            "node affinity args: Gt with a word",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 3\n          preference:\n            matchExpressions:\n            - key: cores\n              operator: Gt\n              values: [many]\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]",
            "must be an integer",
        ),
        (
            "node affinity args: bad key",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - key: 'bad key'\n              operator: Exists\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key",
            "Invalid value: \"bad key\"",
        ),
        (
            "node affinity args: matchFields with two values",
            false,
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchFields:\n            - key: metadata.name\n              operator: In\n              values: [n1, n2]\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values",
            "must have one element",
        ),
        (
            "args of a plugin the profile does not enable are still checked",
            false,
            "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: NodeAffinity\n  pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - key: zone\n              operator: Exists\n              values: [a]\n",
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
            "must be empty",
        ),
        (
            "no queue sort plugin",
            false,
            "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeName\n      - name: DefaultBinder\n",
            "profiles[0].plugins.queueSort",
            "exactly one queue sort plugin is required, got 0",
        ),
        (
            "no bind plugin",
            false,
            "profiles:\n- plugins:\n    bind:\n      disabled:\n      - name: DefaultBinder\n",
            "profiles[0].plugins.bind",
            "at least one bind plugin is required",
        ),
        (
            "queueSort differs between profiles",
            false,
            "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled:\n      - name: PrioritySort\n",
            "profiles[1].plugins.queueSort",
            "must be the same for all profiles",
        ),
        (
            "extender prioritize without weight",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n- urlPrefix: http://127.0.0.1:2\n  prioritizeVerb: prioritize\n",
            "extenders[1].weight",
            "Invalid value: 0: must have a positive weight applied to it",
        ),
        (
            "extender negative weight",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  prioritizeVerb: p\n  weight: -2\n",
            "extenders[0].weight",
            "must have a positive weight",
        ),
        (
            "two binder extenders",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  bindVerb: bind\n- urlPrefix: http://127.0.0.1:2\n  bindVerb: bind\n",
            "extenders",
            "found 2 extenders implementing bind\": only one extender can implement bind",
        ),
        (
            "extender managed resource not extended",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  managedResources:\n  - name: cpu\n",
            "extenders[0].managedResources[0].name",
            "is an invalid extended resource name",
        ),
        (
            "extender managed resource twice",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  managedResources:\n  - name: example.com/foo\n- urlPrefix: http://127.0.0.1:2\n  managedResources:\n  - name: example.com/foo\n",
            "extenders[1].managedResources[0].name",
            "duplicate extender managed resource name",
        ),
        (
            "extender timeout not a duration",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  httpTimeout: soon\n",
            "extenders[0].httpTimeout",
            "invalid duration",
        ),
        ("extender without urlPrefix", false, "extenders:\n- filterVerb: filter\n", "extenders[0].urlPrefix", "Required value"),
        (
            "extender unknown field",
            false,
            "extenders:\n- urlPrefix: http://127.0.0.1:1\n  filterVerbs: f\n",
            "extenders[0].filterVerbs",
            "unknown field `filterVerbs`",
        ),
        (
            "extender caData not base64",
            false,
            "extenders:\n- urlPrefix: https://127.0.0.1:1\n  enableHTTPS: true\n  tlsConfig:\n    caData: '%%%'\n",
            "extenders[0].tlsConfig.caData",
            "not base64",
        ),
        (
            "extender caFile missing",
            false,
            "extenders:\n- urlPrefix: https://127.0.0.1:1\n  tlsConfig:\n    caFile: /nonexistent/ca.pem\n",
            "extenders[0].tlsConfig.caFile",
            "reading /nonexistent/ca.pem",
        ),
    ];
    for (name, raw, body, field, part) in cases {
        let text = if *raw { body.to_string() } else { with_header(body) };
        let err = match parse(&text) {
            Ok(cfg) => panic!("{name}: accepted ({cfg:?})\n{text}"),
            Err(e) => e,
        };
        let msg = err.to_string();
        assert_eq!(err.field().unwrap_or(""), *field, "{name}: {msg}");
        assert!(msg.contains(part), "{name}: {msg:?} lacks {part:?}");
        if !field.is_empty() {
            assert!(msg.starts_with(&format!("{field}: ")), "{name}: {msg}");
        }
    }
}

#[test]
fn warnings_table() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "pluginConfig for a plugin not enabled",
            "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: NodeResourcesBalancedAllocation\n  pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n",
            "profiles[0].pluginConfig[0]: NodeResourcesBalancedAllocation is not enabled in this profile",
        ),
        (
            "args for a plugin without args",
            "profiles:\n- pluginConfig:\n  - name: ImageLocality\n    args:\n      foo: 1\n",
            "profiles[0].pluginConfig[0].args: ImageLocality takes no args",
        ),
        (
            "pluginConfig for an unknown plugin",
            "profiles:\n- pluginConfig:\n  - name: MyPlugin\n    args:\n      foo: 1\n",
            "profiles[0].pluginConfig[0]: MyPlugin is not a plugin ksched knows",
        ),
        (
            "pluginConfig for a plugin ksched lacks",
            "profiles:\n- pluginConfig:\n  - name: NodeDeclaredFeatures\n    args:\n      x: 5\n",
            "NodeDeclaredFeatures is not available in ksched yet; its args are not checked",
        ),
        (
            "explicitly enabled plugin ksched lacks",
            "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NodeDeclaredFeatures\n",
            "profiles[0].plugins.filter.enabled[0]: NodeDeclaredFeatures is not available in ksched yet",
        ),
        (
            "extender serverName",
            "extenders:\n- urlPrefix: https://127.0.0.1:8888\n  tlsConfig:\n    serverName: ext\n",
            "extenders[0].tlsConfig.serverName: not supported",
        ),
    ];
    for (name, body, want) in cases {
        let cfg = parse(&with_header(body)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(cfg.warnings.iter().any(|w| w.contains(want)), "{name}: {:?}", cfg.warnings);
    }
    let quiet = parse(&with_header("profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {}\n")).unwrap();
    assert!(quiet.warnings.iter().all(|w| !w.contains("pluginConfig")), "{:?}", quiet.warnings);
}

#[test]
fn registry_without_a_default_plugin_skips_it() {
    let mut registry = Registry::empty();
    registry
        .register_no_args(registry::PRIORITY_SORT, || PluginInstance::new().also(ExtensionPoint::QueueSort))
        .register_no_args(registry::DEFAULT_BINDER, || PluginInstance::new().also(ExtensionPoint::Bind))
        .register_no_args(ksched_engine::framework::plugins::node_name::NAME, || {
            PluginInstance::new().filter(std::sync::Arc::new(ksched_engine::framework::plugins::node_name::NodeName))
        });
    let cfg = parse_with(HEADER, &registry).unwrap();
    assert_eq!(point(&summary(&cfg.profiles[0]), "filter"), ["NodeName"]);
    let skipped = cfg.warnings.iter().find(|w| w.contains("default plugins not available")).unwrap();
    assert!(skipped.starts_with("profiles[0]: default plugins not available in ksched yet, skipped: SchedulingGates, "));
    assert!(skipped.contains("TaintToleration") && !skipped.contains("NodeName"), "{skipped}");
    // A name upstream does not know is still an error with this registry.
    let err =
        parse_with(&with_header("profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: Nope\n"), &registry)
            .unwrap_err();
    assert_eq!(err.field(), Some("profiles[0].plugins.filter.enabled[0].name"));
}

#[test]
fn decode_args_names_the_field() {
    use ksched_engine::framework::plugins::node_resources_balanced::NodeResourcesBalancedAllocationArgs as Args;
    let defaults: Args = decode_args(None).unwrap();
    assert_eq!(defaults.resources.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["cpu", "memory"]);
    let null: Args = decode_args(Some(&Value::Null)).unwrap();
    assert_eq!(null.resources.len(), 2);
    let bad = serde_json::json!({"resources": [{"name": "cpu"}, {"name": "memory", "weight": "x"}]});
    let err = decode_args::<Args>(Some(&bad)).unwrap_err();
    assert_eq!(err.field, "resources[1].weight");
    let not_object = serde_json::json!("cpu");
    let err = decode_args::<Args>(Some(&not_object)).unwrap_err();
    assert_eq!(err.field, "");
}

#[test]
fn load_file_names_the_file() {
    let dir = std::env::temp_dir().join(format!("ksched-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.yaml");
    std::fs::write(&good, with_header("parallelism: 2\n")).unwrap();
    assert_eq!(load_file(&good).unwrap().parallelism, 2);

    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, with_header("parallelism: 0\n")).unwrap();
    let err = load_file(&bad).unwrap_err();
    assert!(err.to_string().starts_with(&format!("{}: parallelism: ", bad.display())), "{err}");
    assert_eq!(err.field(), Some("parallelism"));

    let missing = dir.join("missing.yaml");
    let err = load_file(&missing).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("missing.yaml"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn legacy_plugins_are_enabled_by_name() {
    let cfg = parse(&with_header(
        "profiles:\n- schedulerName: legacy\n  plugins:\n    filter:\n      enabled:\n      - name: EBSLimits\n      - name: NodeConditions\n      - name: NodeLabel\n    score:\n      enabled:\n      - name: NodePreferAvoidPods\n        weight: 10000\n      - name: SelectorSpread\n      - name: EqualPriority\n  pluginConfig:\n  - name: NodeLabel\n    args:\n      presentLabels: [disk]\n",
    ))
    .unwrap();
    let p = cfg.profile("legacy").unwrap();
    let s = summary(p);
    let filter = point(&s, "filter");
    for name in ["EBSLimits", "NodeConditions", "NodeLabel"] {
        assert!(filter.iter().any(|f| f == name), "{name} in {filter:?}");
    }
    let score = point(&s, "score");
    for entry in ["NodePreferAvoidPods:10000", "SelectorSpread:1", "EqualPriority:1"] {
        assert!(score.iter().any(|f| f == entry), "{entry} in {score:?}");
    }
    let err = parse(&with_header(
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: NodeLabel\n  pluginConfig:\n  - name: NodeLabel\n    args:\n      presentLabels: [disk]\n      absentLabels: [disk]\n",
    ))
    .unwrap_err();
    assert!(err.to_string().contains("profiles[0].pluginConfig[0].args"), "{err}");
}

#[test]
fn extenders_are_read_defaulted_and_put_on_every_profile() {
    let cfg = parse(&with_header(
        "profiles:
- schedulerName: a
- schedulerName: b
extenders:
- urlPrefix: http://127.0.0.1:1/ignorable
  filterVerb: filter
  ignorable: true
- urlPrefix: http://127.0.0.1:2/scheduler
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  bindVerb: bind
  weight: 3
  httpTimeout: 1m30s
  nodeCacheCapable: true
  enableHTTPS: false
  managedResources:
  - name: example.com/foo
    ignoredByScheduler: true
  - name: example.com/bar
",
    ))
    .unwrap();
    assert!(cfg.warnings.iter().all(|w| !w.contains("extender")), "{:?}", cfg.warnings);
    // Ignorable extenders are consulted last.
    let urls: Vec<&str> = cfg.extenders.iter().map(|e| e.url_prefix.as_str()).collect();
    assert_eq!(urls, ["http://127.0.0.1:2/scheduler", "http://127.0.0.1:1/ignorable"]);
    let e = &cfg.extenders[0];
    assert_eq!(e.http_timeout, std::time::Duration::from_secs(90));
    assert_eq!((e.weight, e.node_cache_capable, e.ignorable), (3, true, false));
    assert_eq!(e.bind_verb.as_deref(), Some("bind"));
    assert_eq!(cfg.extenders[1].http_timeout, ksched_engine::config::extenders::DEFAULT_HTTP_TIMEOUT);
    for p in &cfg.profiles {
        let names: Vec<&str> = p.extenders.iter().map(|e| e.name()).collect();
        assert_eq!(names, urls, "{}", p.scheduler_name);
        assert!(p.extenders[0].is_binder() && p.extenders[0].supports_preemption() && p.extenders[1].is_ignorable());
    }
    // ignoredByScheduler: NodeResourcesFit no longer rejects a node for example.com/foo.
    use ksched_engine::api::{Node, Pod, ResourceName};
    use ksched_engine::framework::CycleState;
    use ksched_engine::snapshot::node_info::NodeInfo;
    let node = NodeInfo::new(Arc::new(Node::builder("n").resources(4000, 1 << 30, 10).build()));
    let foo = Pod::builder("p").container("i", &[(ResourceName::parse("example.com/foo"), 1)]).build();
    let bar = Pod::builder("q").container("i", &[(ResourceName::parse("example.com/bar"), 1)]).build();
    let fit = cfg.profiles[0].filter.iter().find(|f| f.name() == "NodeResourcesFit").unwrap();
    let snap = ksched_engine::snapshot::Snapshot::from_node_infos(vec![node.clone()]);
    for (pod, want) in [(&foo, true), (&bar, false)] {
        let mut state = CycleState::new();
        for p in &cfg.profiles[0].pre_filter {
            let _ = p.pre_filter(&mut state, pod, &snap);
        }
        assert_eq!(fit.filter(&state, pod, &node).is_success(), want, "{}", pod.name);
    }
}

/// Which profiles batch pods (OpportunisticBatching): those with no extender whose every
/// PreFilter, Filter, PreScore and Score plugin signs, and whose PodTopologySpread has no
/// default constraints; in them a plain pod is signed. The default profile, and profiles
/// keeping the system defaults, sign no pod, so the gate changes nothing there.
#[test]
fn profiles_without_default_spread_constraints_or_extenders_batch() {
    use ksched_engine::api::{Pod, ResourceName};
    use ksched_engine::framework::signature::sign_pod;
    const LIST_NONE: &str = "  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n";
    const LIST_ONE: &str = "  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      \
                            defaultConstraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n";
    const NO_SPREAD: &str = "  plugins:\n    multiPoint:\n      disabled:\n      - name: PodTopologySpread\n";
    const EXTENDER: &str = "extenders:\n- urlPrefix: http://127.0.0.1:1/x\n  filterVerb: filter\n";
    // (case, profiles YAML, whether each profile signs a plain pod)
    let cases: Vec<(&str, String, Vec<bool>)> = vec![
        ("the default profile", "profiles:\n- schedulerName: a\n".into(), vec![false]),
        ("system defaults spelled out", "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: System\n".into(), vec![false]),
        ("List with none", format!("profiles:\n- schedulerName: a\n{LIST_NONE}"), vec![true]),
        ("List with one", format!("profiles:\n- schedulerName: a\n{LIST_ONE}"), vec![false]),
        ("PodTopologySpread disabled", format!("profiles:\n- schedulerName: a\n- schedulerName: b\n{NO_SPREAD}"), vec![false, true]),
        ("an extender", format!("profiles:\n- schedulerName: a\n{LIST_NONE}{EXTENDER}"), vec![false]),
    ];
    for (case, body, want) in cases {
        let cfg = parse_with(&with_header(&body), &Registry::in_tree()).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert!(cfg.warnings.iter().all(|w| !w.contains("OpportunisticBatching")), "{case}: modelled, not warned");
        let got: Vec<bool> = cfg
            .profiles
            .iter()
            .map(|p| {
                let pod = Pod::builder("web")
                    .scheduler_name(&p.scheduler_name)
                    .container("nginx", &[(ResourceName::Cpu, 100)])
                    .build();
                p.signs_pods() && sign_pod(p.signing_plugins(), &pod).is_ok()
            })
            .collect();
        assert_eq!(got, want, "{case}");
    }
}
