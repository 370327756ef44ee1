//! The in-tree plugins' pod signatures (`framework::signature`), rule by rule: pairs of pods
//! that must sign alike, pairs that must sign apart, and the pods a plugin refuses.

use std::sync::Arc;

use super::{
    dynamic_resources::DynamicResources,
    equal_priority::EqualPriority,
    image_locality::ImageLocality,
    inter_pod_affinity::{InterPodAffinity, InterPodAffinityArgs},
    legacy_volume_limits::LegacyVolumeLimits,
    node_affinity::{NodeAffinity as NodeAffinityPlugin, NodeAffinityArgs},
    node_conditions::NodeConditions,
    node_label::{NodeLabel, NodeLabelArgs},
    node_name::NodeName,
    node_ports::NodePorts,
    node_prefer_avoid_pods::NodePreferAvoidPods,
    node_resources_balanced::BalancedAllocation,
    node_resources_fit::NodeResourcesFit,
    node_unschedulable::NodeUnschedulable,
    node_volume_limits::NodeVolumeLimits,
    pod_topology_spread::{DefaultingType, PodTopologySpread, PodTopologySpreadArgs},
    selector_spread::SelectorSpread,
    service_affinity::{ServiceAffinity, ServiceAffinityArgs},
    taint_toleration::TaintToleration,
    volume_binding::{VolumeBinding, VolumeBindingArgs},
    volume_restrictions::VolumeRestrictions,
    volume_zone::VolumeZone,
};
use crate::api::dra::PodClaimSource;
use crate::api::{
    Affinity, ContainerPort, LabelSelector, NodeAffinity, NodeSelector, NodeSelectorOp, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodAffinity, PodBuilder, PreferredSchedulingTerm, Protocol, Resource, ResourceList,
    ResourceName::*, SignedSource, Sym, TaintEffect, Toleration, TolerationOp, TopologySpreadConstraint, Volume,
};
use crate::features::{Feature, FeatureGates};
use crate::framework::signature::{keys, sign_pod, PodSignature, Unsigned};
use crate::framework::Plugin;
use crate::testing::{requires_pod_affinity, requires_pod_anti_affinity};

fn sign(plugin: &dyn Plugin, pod: &Pod) -> Result<PodSignature, Unsigned> {
    sign_pod([plugin], pod)
}

fn pod(name: &str) -> PodBuilder {
    Pod::builder(name)
}

fn req(key: &str, op: NodeSelectorOp, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement::new(key, op, values)
}

fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
    NodeSelectorTerm { match_expressions: exprs, match_fields: vec![] }
}

fn required(terms: Vec<NodeSelectorTerm>) -> NodeAffinity {
    NodeAffinity { required: Some(NodeSelector { terms }), preferred: vec![] }
}

fn preferred(terms: Vec<(i32, NodeSelectorTerm)>) -> NodeAffinity {
    let preferred = terms.into_iter().map(|(weight, preference)| PreferredSchedulingTerm { weight, preference });
    NodeAffinity { required: None, preferred: preferred.collect() }
}

fn tol(key: &str, value: &str, effect: Option<TaintEffect>) -> Toleration {
    Toleration::new(key, TolerationOp::Equal, value, effect)
}

fn host_port(port: i32, protocol: Protocol) -> ContainerPort {
    ContainerPort { container_port: port, host_port: port, protocol, host_ip: Sym::EMPTY }
}

fn pts_list() -> PodTopologySpread {
    PodTopologySpread::new(PodTopologySpreadArgs { defaulting_type: DefaultingType::List, ..Default::default() })
}

fn gates_with(f: Feature) -> FeatureGates {
    let mut g = FeatureGates::default();
    g.set_unchecked(f, true);
    g
}

/// Every plugin of v1.35's default set, as the default profile builds it but for
/// PodTopologySpread without default constraints (so that it signs).
fn in_tree_signers() -> Vec<Arc<dyn Plugin>> {
    vec![
        Arc::new(NodeUnschedulable),
        Arc::new(NodeName),
        Arc::new(TaintToleration),
        Arc::new(NodeAffinityPlugin::new(&NodeAffinityArgs::default())),
        Arc::new(NodePorts),
        Arc::new(NodeResourcesFit::default()),
        Arc::new(VolumeRestrictions),
        Arc::new(NodeVolumeLimits::new()),
        Arc::new(VolumeBinding::new(&VolumeBindingArgs::default())),
        Arc::new(VolumeZone::new()),
        Arc::new(pts_list()),
        Arc::new(InterPodAffinity::default()),
        Arc::new(DynamicResources::new(&FeatureGates::default())),
        Arc::new(BalancedAllocation::default()),
        Arc::new(ImageLocality),
    ]
}

#[test]
fn pairs_sign_alike_or_apart_per_rule() {
    let image_locality = ImageLocality;
    let ipa = InterPodAffinity::default();
    let mut ignoring = InterPodAffinityArgs::default();
    ignoring.ignore_preferred_terms_of_existing_pods = true;
    let ipa_ignoring = InterPodAffinity::new(ignoring);
    let node_affinity = NodeAffinityPlugin::new(&NodeAffinityArgs::default());
    let fit = NodeResourcesFit::default();
    let balanced = BalancedAllocation::default();
    let volumes = VolumeBinding::new(&VolumeBindingArgs::default());
    let (volume_zone, volume_limits) = (VolumeZone::new(), NodeVolumeLimits::new());
    let (a, b) = (NodeSelectorOp::In, NodeSelectorOp::NotIn);
    let zone = |values: &[&str]| req("zone", a, values);
    let disk = || req("disk", b, &["hdd"]);
    let cm = |name: &str| Volume::other(name).with_signed(SignedSource::Excluded);
    let raw = |text: &str| Volume::other("v").with_signed(SignedSource::Canonical(Arc::from(text)));
    // (what, plugin, pod a, pod b, alike)
    let cases: Vec<(&str, &dyn Plugin, Pod, Pod, bool)> = vec![
        (
            "images: order, `:latest` and repeats do not count",
            &image_locality,
            pod("a").container("nginx", &[]).container("app:1", &[]).container("app:1", &[]).build(),
            pod("b").container("app:1", &[]).container("nginx:latest", &[]).build(),
            true,
        ),
        (
            "images: init containers' count as the containers'",
            &image_locality,
            pod("a").init_container("x", &[], false).container("y", &[]).build(),
            pod("b").container("x", &[]).container("y", &[]).build(),
            true,
        ),
        (
            "images: another tag",
            &image_locality,
            pod("a").container("nginx:1", &[]).build(),
            pod("b").container("nginx:2", &[]).build(),
            false,
        ),
        (
            "labels: the same map",
            &ipa,
            pod("a").label("app", "web").label("tier", "1").build(),
            pod("b").label("tier", "1").label("app", "web").build(),
            true,
        ),
        (
            "labels: another value",
            &ipa,
            pod("a").label("app", "web").build(),
            pod("b").label("app", "db").build(),
            false,
        ),
        (
            "labels: not signed with ignorePreferredTermsOfExistingPods",
            &ipa_ignoring,
            pod("a").label("app", "web").build(),
            pod("b").label("app", "db").build(),
            true,
        ),
        (
            "node affinity: values, requirements and terms in another order",
            &node_affinity,
            pod("a")
                .node_affinity(required(vec![term(vec![zone(&["z1", "z2"]), disk()]), term(vec![zone(&["z3"])])]))
                .build(),
            pod("b")
                .node_affinity(required(vec![term(vec![zone(&["z3"])]), term(vec![disk(), zone(&["z2", "z1"])])]))
                .build(),
            true,
        ),
        (
            "node affinity: preferred terms in another order",
            &node_affinity,
            pod("a").node_affinity(preferred(vec![(5, term(vec![disk()])), (1, term(vec![zone(&["z1"])]))])).build(),
            pod("b").node_affinity(preferred(vec![(1, term(vec![zone(&["z1"])])), (5, term(vec![disk()]))])).build(),
            true,
        ),
        (
            "node affinity: another weight",
            &node_affinity,
            pod("a").node_affinity(preferred(vec![(5, term(vec![disk()]))])).build(),
            pod("b").node_affinity(preferred(vec![(6, term(vec![disk()]))])).build(),
            false,
        ),
        (
            "node affinity: another value",
            &node_affinity,
            pod("a").node_affinity(required(vec![term(vec![zone(&["z1"])])])).build(),
            pod("b").node_affinity(required(vec![term(vec![zone(&["z2"])])])).build(),
            false,
        ),
        (
            "node affinity: a term twice is not the term once (multisets)",
            &node_affinity,
            pod("a").node_affinity(required(vec![term(vec![disk()]), term(vec![disk()])])).build(),
            pod("b").node_affinity(required(vec![term(vec![disk()])])).build(),
            false,
        ),
        (
            "node affinity: a requirement on a field is not one on a label",
            &node_affinity,
            pod("a")
                .node_affinity(required(vec![NodeSelectorTerm {
                    match_expressions: vec![],
                    match_fields: vec![req("metadata.name", a, &["n1"])],
                }]))
                .build(),
            pod("b").node_affinity(required(vec![term(vec![req("metadata.name", a, &["n1"])])])).build(),
            false,
        ),
        (
            "node affinity: no required terms is no required selector",
            &node_affinity,
            pod("a").node_affinity(required(vec![])).build(),
            pod("b").node_affinity(NodeAffinity::default()).build(),
            true,
        ),
        (
            "node affinity: an empty node affinity is not none (upstream's JSON: {} vs null)",
            &node_affinity,
            pod("a").node_affinity(NodeAffinity::default()).build(),
            pod("b").build(),
            false,
        ),
        (
            "node selector: the same map",
            &node_affinity,
            pod("a").node_selector("disk", "ssd").node_selector("zone", "z1").build(),
            pod("b").node_selector("zone", "z1").node_selector("disk", "ssd").build(),
            true,
        ),
        (
            "node selector: another value",
            &node_affinity,
            pod("a").node_selector("disk", "ssd").build(),
            pod("b").node_selector("disk", "hdd").build(),
            false,
        ),
        ("node name: both unset", &NodeName, pod("a").build(), pod("b").build(), true),
        (
            "node name: another node",
            &NodeName,
            pod("a").node_name("n1").build(),
            pod("b").node_name("n2").build(),
            false,
        ),
        (
            "host ports: order, protocol and repeats do not count; every init container's count",
            &NodePorts,
            pod("a")
                .host_port_spec(host_port(80, Protocol::Tcp))
                .host_port_spec(host_port(80, Protocol::Udp))
                .host_port_spec(host_port(443, Protocol::Tcp))
                .build(),
            pod("b")
                .init_container_spec(crate::api::Container {
                    ports: vec![host_port(443, Protocol::Tcp)],
                    ..Default::default()
                })
                .host_port(80)
                .build(),
            true,
        ),
        (
            "host ports: a container port without host port is none",
            &NodePorts,
            pod("a")
                .host_port_spec(ContainerPort {
                    container_port: 80,
                    host_port: 0,
                    protocol: Protocol::Tcp,
                    host_ip: Sym::EMPTY,
                })
                .build(),
            pod("b").container("", &[]).build(),
            true,
        ),
        (
            "host ports: another port",
            &NodePorts,
            pod("a").host_port(80).build(),
            pod("b").host_port(8080).build(),
            false,
        ),
        (
            "resources: the same sum from other containers",
            &fit,
            pod("a").container("x", &[(Cpu, 100), (Memory, 10)]).container("y", &[(Cpu, 100)]).build(),
            pod("b").container("x", &[(Cpu, 200), (Memory, 10)]).build(),
            true,
        ),
        (
            "resources: an init container below the sum does not count",
            &balanced,
            pod("a").init_container("i", &[(Cpu, 50)], false).container("x", &[(Cpu, 200)]).build(),
            pod("b").container("x", &[(Cpu, 200)]).build(),
            true,
        ),
        (
            "resources: an explicit zero is an unnamed request (upstream signs the filter's request)",
            &fit,
            pod("a").container("x", &[(Cpu, 0)]).build(),
            pod("b").container("x", &[]).build(),
            true,
        ),
        (
            "resources: another cpu request",
            &fit,
            pod("a").container("x", &[(Cpu, 100)]).build(),
            pod("b").container("x", &[(Cpu, 200)]).build(),
            false,
        ),
        (
            "resources: a sidecar adds to the sum",
            &balanced,
            pod("a").init_container("s", &[(Cpu, 50)], true).container("x", &[(Cpu, 200)]).build(),
            pod("b").container("x", &[(Cpu, 200)]).build(),
            false,
        ),
        (
            "resources: overhead",
            &fit,
            pod("a").container("x", &[(Cpu, 100)]).overhead(Resource::default().with(Cpu, 10)).build(),
            pod("b").container("x", &[(Cpu, 100)]).build(),
            false,
        ),
        (
            "resources: pod-level requests replace the containers' sum",
            &fit,
            pod("a").container("x", &[(Cpu, 100)]).pod_level_requests(ResourceList::of(&[(Cpu, 500)])).build(),
            pod("b").container("x", &[(Cpu, 500)]).build(),
            true,
        ),
        (
            "resources: another extended resource",
            &fit,
            pod("a").container("x", &[(Scalar(Sym::new("example.com/gpu")), 1)]).build(),
            pod("b").container("x", &[(Scalar(Sym::new("example.com/fpga")), 1)]).build(),
            false,
        ),
        (
            "tolerations: sorted by key and value",
            &TaintToleration,
            pod("a").toleration(tol("b", "1", None)).toleration(tol("a", "2", None)).build(),
            pod("b").toleration(tol("a", "2", None)).toleration(tol("b", "1", None)).build(),
            true,
        ),
        (
            "tolerations: equal key and value keep their order (a stable sort)",
            &NodeUnschedulable,
            pod("a")
                .toleration(tol("k", "v", Some(TaintEffect::NoSchedule)))
                .toleration(tol("k", "v", Some(TaintEffect::NoExecute)))
                .build(),
            pod("b")
                .toleration(tol("k", "v", Some(TaintEffect::NoExecute)))
                .toleration(tol("k", "v", Some(TaintEffect::NoSchedule)))
                .build(),
            false,
        ),
        (
            "tolerations: whole tolerations compared (seconds)",
            &TaintToleration,
            pod("a").toleration(Toleration { toleration_seconds: Some(300), ..tol("k", "", None) }).build(),
            pod("b").toleration(tol("k", "", None)).build(),
            false,
        ),
        (
            "tolerations: whole tolerations compared (operator)",
            &NodeUnschedulable,
            pod("a").toleration(Toleration::new("k", TolerationOp::Exists, "", None)).build(),
            pod("b").toleration(tol("k", "", None)).build(),
            false,
        ),
        (
            "volumes: configMap and secret volumes do not count",
            &volumes,
            pod("a").volume(cm("config")).volume(Volume::pvc("data", "c1")).build(),
            pod("b").volume(Volume::pvc("data", "c1")).build(),
            true,
        ),
        (
            "volumes: names and order do not count",
            &VolumeRestrictions,
            pod("a").volume(Volume::pvc("a", "c1")).volume(Volume::pvc("b", "c2")).build(),
            pod("b").volume(Volume::pvc("x", "c2")).volume(Volume::pvc("y", "c1")).build(),
            true,
        ),
        (
            "volumes: another claim",
            &volume_zone,
            pod("a").volume(Volume::pvc("data", "c1")).build(),
            pod("b").volume(Volume::pvc("data", "c2")).build(),
            false,
        ),
        (
            "volumes: generic ephemeral volumes of two pods of one template",
            &volume_limits,
            pod("a").volume(Volume::ephemeral("scratch")).build(),
            pod("b").volume(Volume::ephemeral("scratch")).build(),
            true,
        ),
        (
            "volumes: read sources compared by their canonical text",
            &volumes,
            pod("a").volume(raw(r#"{"emptyDir":{}}"#)).build(),
            pod("b").volume(raw(r#"{"hostPath":{"path":"/x"}}"#)).build(),
            false,
        ),
    ];
    for (what, plugin, a, b, alike) in cases {
        let (sa, sb) = (sign(plugin, &a), sign(plugin, &b));
        assert!(sa.is_ok() && sb.is_ok(), "{what}: {} signs both ({sa:?}, {sb:?})", plugin.name());
        assert_eq!(sa == sb, alike, "{what}: {sa:?} vs {sb:?}");
    }
}

#[test]
fn plugins_refuse_the_pods_upstream_does_not_sign() {
    let (pts_system, pts_list) = (PodTopologySpread::default(), pts_list());
    let fit_default = NodeResourcesFit::default().with_gates(&FeatureGates::default());
    let ipa = InterPodAffinity::default();
    let dra = DynamicResources::new(&FeatureGates::default());
    let extended = gates_with(Feature::DRAExtendedResource);
    let fit_extended = NodeResourcesFit::default().with_gates(&extended);
    let balanced_extended = BalancedAllocation::default().with_gates(&extended);
    let spread = TopologySpreadConstraint::new(1, "zone", LabelSelector::default());
    let plain = pod("p").container("x", &[(Cpu, 100)]).build();
    let empty_pod_affinity = Affinity { pod_affinity: Some(PodAffinity::default()), ..Affinity::default() };
    // (what, plugin, pod, signed)
    let cases: Vec<(&str, &dyn Plugin, Pod, bool)> = vec![
        ("a claim", &dra, pod("p").resource_claim("gpu", PodClaimSource::Claim(Sym::new("c"))).build(), false),
        (
            "a claim from a template",
            &dra,
            pod("p").resource_claim("gpu", PodClaimSource::Template(Sym::new("t"))).build(),
            false,
        ),
        ("no claim", &dra, plain.clone(), true),
        ("required pod affinity", &ipa, pod("p").affinity(requires_pod_affinity("app", "a")).build(), false),
        ("pod anti-affinity", &ipa, pod("p").affinity(requires_pod_anti_affinity("app", "a")).build(), false),
        (
            "an empty pod affinity (a non-nil pointer upstream)",
            &ipa,
            pod("p").affinity(empty_pod_affinity).build(),
            false,
        ),
        ("node affinity only", &ipa, pod("p").node_affinity(required(vec![])).build(), true),
        ("spread constraints", &pts_list, pod("p").spread(spread).build(), false),
        ("no constraints, no defaults", &pts_list, plain.clone(), true),
        ("system default constraints", &pts_system, plain.clone(), false),
        ("DRAExtendedResource on (fit)", &fit_extended, plain.clone(), false),
        ("DRAExtendedResource on (balanced)", &balanced_extended, plain.clone(), false),
        ("DRAExtendedResource off", &fit_default, plain, true),
    ];
    for (what, plugin, pod, signed) in cases {
        let got = sign(plugin, &pod);
        assert_eq!(got.is_ok(), signed, "{what}: {} gave {got:?}", plugin.name());
    }
    // A plugin refusing every pod says it does not sign; the others sign (some pods).
    let signing: [(&dyn Plugin, bool); 6] = [
        (&pts_system, false),
        (&pts_list, true),
        (&fit_extended, false),
        (&balanced_extended, false),
        (&fit_default, true),
        (&dra, true),
    ];
    for (plugin, signs) in signing {
        assert_eq!(plugin.signs_pods(), signs, "{}", plugin.name());
    }
}

/// Plugins sharing a key write the same value, so a profile's signature does not depend on
/// which of them ran last.
#[test]
fn plugins_sharing_a_key_write_the_same_value() {
    let pods = [
        pod("a")
            .container("x", &[(Cpu, 100)])
            .init_container("s", &[(Memory, 5)], true)
            .toleration(tol("k", "v", None))
            .volume(Volume::pvc("data", "c1"))
            .volume(Volume::other("cfg").with_signed(SignedSource::Excluded))
            .build(),
        pod("b").build(),
    ];
    let groups: Vec<(&str, Vec<Box<dyn Plugin>>)> = vec![
        (keys::TOLERATIONS, vec![Box::new(NodeUnschedulable), Box::new(TaintToleration)]),
        (keys::RESOURCES, vec![Box::new(NodeResourcesFit::default()), Box::new(BalancedAllocation::default())]),
        (
            keys::VOLUMES,
            vec![
                Box::new(NodeVolumeLimits::new()),
                Box::new(VolumeBinding::new(&VolumeBindingArgs::default())),
                Box::new(VolumeRestrictions),
                Box::new(VolumeZone::new()),
            ],
        ),
    ];
    for p in &pods {
        for (key, plugins) in &groups {
            let values: Vec<Option<String>> =
                plugins.iter().map(|pl| sign(pl.as_ref(), p).unwrap().get(key).map(str::to_owned)).collect();
            assert!(values[0].is_some(), "{key} set");
            assert!(values.iter().all(|v| *v == values[0]), "{key}: {values:?}");
        }
    }
}

/// Every plugin of v1.35's default set signs, writing upstream's keys; the seeds' legacy
/// plugins (not in v1.35) do not, so a profile running one signs no pod.
#[test]
fn in_tree_plugins_sign_and_legacy_ones_do_not() {
    let plain = pod("p").container("x", &[(Cpu, 100)]).label("app", "web").build();
    let plugins = in_tree_signers();
    assert!(plugins.iter().all(|p| p.signs_pods()));
    let sig = sign_pod(plugins.iter().map(|p| p.as_ref()), &plain).unwrap();
    let mut want = vec![
        keys::HOST_PORTS,
        keys::IMAGE_NAMES,
        keys::LABELS,
        keys::NODE_AFFINITY,
        keys::NODE_NAME,
        keys::NODE_SELECTOR,
        keys::RESOURCES,
        keys::TOLERATIONS,
        keys::VOLUMES,
    ];
    want.sort_unstable();
    assert_eq!(sig.keys().collect::<Vec<_>>(), want);
    let other = pod("q").container("x", &[(Cpu, 100)]).label("app", "web").scheduler_name("other").build();
    assert_ne!(sign_pod(plugins.iter().map(|p| p.as_ref()), &other).unwrap(), sig, "scheduler name");

    let legacy: Vec<Box<dyn Plugin>> = vec![
        Box::new(EqualPriority),
        Box::new(NodeConditions),
        Box::new(NodeLabel::new(NodeLabelArgs::default())),
        Box::new(NodePreferAvoidPods::new()),
        Box::new(SelectorSpread::new()),
        Box::new(ServiceAffinity::new(ServiceAffinityArgs::default())),
        Box::new(LegacyVolumeLimits::ebs()),
    ];
    for p in &legacy {
        assert!(!p.signs_pods(), "{}", p.name());
        assert!(sign(p.as_ref(), &plain).is_err(), "{}", p.name());
    }
}
