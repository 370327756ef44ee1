//! The plugin registry: upstream plugin names → constructors taking the plugin's optional
//! `pluginConfig` args, each producing one [`PluginInstance`] shared by every extension point
//! the plugin implements.
//!
//! Registering a plugin is one call in [`Registry::in_tree`]:
//!
//! ```text
//! // no args:
//! r.register_no_args(node_ports::NAME, || instance!(NodePorts => pre_filter, filter));
//! // with args (`XArgs: Deserialize + Default`, `validate()`, `X::new(args)`):
//! r.register(pod_topology_spread::NAME, |args| {
//!     let a: PodTopologySpreadArgs = decode_args(args)?;
//!     a.validate()?;
//!     Ok(instance!(PodTopologySpread::new(a) => pre_filter, filter, pre_score, score))
//! });
//! ```
//!
//! `instance!` places one `Arc` of the plugin at each named point (`pre_enqueue`,
//! `pre_filter`, `filter`, `post_filter`, `pre_score`, `score`, `reserve`, `pre_bind`,
//! `bind`); points upstream has and ksched does not run (queueSort, permit, postBind) are
//! declared with [`PluginInstance::also`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::features::FeatureGates;
use crate::framework::plugins::{
    default_preemption::{self, DefaultPreemption, DefaultPreemptionArgs},
    dynamic_resources::{self, DynamicResources},
    equal_priority::{self, EqualPriority},
    image_locality::{self, ImageLocality},
    inter_pod_affinity::{self, InterPodAffinity, InterPodAffinityArgs},
    legacy_volume_limits::{self, LegacyVolumeLimits},
    node_affinity::{self, NodeAffinity, NodeAffinityArgs},
    node_conditions::{self, NodeConditions},
    node_label::{self, NodeLabel, NodeLabelArgs},
    node_name::{self, NodeName},
    node_ports::{self, NodePorts},
    node_prefer_avoid_pods::{self, NodePreferAvoidPods},
    node_resources_balanced::{self, BalancedAllocation, NodeResourcesBalancedAllocationArgs},
    node_resources_fit::{self, NodeResourcesFit, NodeResourcesFitArgs},
    node_unschedulable::{self, NodeUnschedulable},
    node_volume_limits::{self, NodeVolumeLimits},
    pod_topology_spread::{self, PodTopologySpread, PodTopologySpreadArgs},
    scheduling_gates::{self, SchedulingGates},
    selector_spread::{self, SelectorSpread},
    service_affinity::{self, ServiceAffinity, ServiceAffinityArgs},
    taint_toleration::{self, TaintToleration},
    volume_binding::{self, VolumeBinding, VolumeBindingArgs},
    volume_restrictions::{self, VolumeRestrictions},
    volume_zone::{self, VolumeZone},
};
use crate::framework::{
    ArgsError, BindPlugin, FilterPlugin, PostFilterPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin,
    PreScorePlugin, ReservePlugin, ScorePlugin,
};

/// Upstream's queue-sort plugin; ksched's queue orders by priority itself.
pub const PRIORITY_SORT: &str = "PrioritySort";
/// Upstream's PreEnqueue plugin holding back gated pods.
pub const SCHEDULING_GATES: &str = scheduling_gates::NAME;
/// Upstream's bind plugin; ksched's scheduler binds through its cluster `Binder`.
pub const DEFAULT_BINDER: &str = "DefaultBinder";

/// kube-scheduler v1.35's default plugins (v1 defaulting's `multiPoint.enabled`, with the
/// default feature gates: DynamicResources on, the alpha plugins off), in order, with their
/// score weights.
pub const UPSTREAM_DEFAULT_PLUGINS: &[(&str, Option<i32>)] = &[
    (SCHEDULING_GATES, None),
    (PRIORITY_SORT, None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", Some(3)),
    ("NodeAffinity", Some(2)),
    ("NodePorts", None),
    ("NodeResourcesFit", Some(1)),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", Some(2)),
    ("InterPodAffinity", Some(2)),
    ("DynamicResources", Some(2)),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", Some(1)),
    ("ImageLocality", Some(1)),
    (DEFAULT_BINDER, None),
];

/// v1.35's in-tree plugins that are not in the default set (alpha, behind feature gates).
const UPSTREAM_OTHER_PLUGINS: &[&str] = &["GangScheduling", "NodeDeclaredFeatures"];

/// Plugins that `kubescheduler.config.k8s.io/v1` rejects by name (removed from kube-scheduler).
pub const REMOVED_IN_V1: &[&str] = &["AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"];

/// Whether upstream kube-scheduler v1.35 has an in-tree plugin of this name.
pub fn is_upstream_plugin(name: &str) -> bool {
    UPSTREAM_DEFAULT_PLUGINS.iter().any(|(n, _)| *n == name) || UPSTREAM_OTHER_PLUGINS.contains(&name)
}

/// The extension points of a profile's `plugins`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtensionPoint {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl ExtensionPoint {
    /// Every point, in the order upstream expands `multiPoint` into them.
    pub const ALL: [ExtensionPoint; 12] = [
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::Reserve,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
        ExtensionPoint::Permit,
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
    ];

    /// The field name in `plugins` (`preFilter`).
    pub fn config_name(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
        }
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for ExtensionPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.config_name())
    }
}

/// One plugin, constructed once per profile: the same `Arc` at every extension point it
/// implements, plus the points it implements that ksched runs elsewhere or not at all.
#[derive(Clone, Default)]
pub struct PluginInstance {
    points: u16,
    pub(crate) pre_enqueue: Option<Arc<dyn PreEnqueuePlugin>>,
    pub(crate) pre_filter: Option<Arc<dyn PreFilterPlugin>>,
    pub(crate) filter: Option<Arc<dyn FilterPlugin>>,
    pub(crate) post_filter: Option<Arc<dyn PostFilterPlugin>>,
    pub(crate) pre_score: Option<Arc<dyn PreScorePlugin>>,
    pub(crate) score: Option<Arc<dyn ScorePlugin>>,
    pub(crate) reserve: Option<Arc<dyn ReservePlugin>>,
    pub(crate) pre_bind: Option<Arc<dyn PreBindPlugin>>,
    pub(crate) bind: Option<Arc<dyn BindPlugin>>,
    pub(crate) warnings: Vec<String>,
}

impl PluginInstance {
    pub fn new() -> PluginInstance {
        PluginInstance::default()
    }

    pub fn pre_enqueue(mut self, p: Arc<dyn PreEnqueuePlugin>) -> Self {
        self.pre_enqueue = Some(p);
        self.also(ExtensionPoint::PreEnqueue)
    }

    pub fn pre_filter(mut self, p: Arc<dyn PreFilterPlugin>) -> Self {
        self.pre_filter = Some(p);
        self.also(ExtensionPoint::PreFilter)
    }

    pub fn filter(mut self, p: Arc<dyn FilterPlugin>) -> Self {
        self.filter = Some(p);
        self.also(ExtensionPoint::Filter)
    }

    pub fn post_filter(mut self, p: Arc<dyn PostFilterPlugin>) -> Self {
        self.post_filter = Some(p);
        self.also(ExtensionPoint::PostFilter)
    }

    pub fn pre_score(mut self, p: Arc<dyn PreScorePlugin>) -> Self {
        self.pre_score = Some(p);
        self.also(ExtensionPoint::PreScore)
    }

    pub fn score(mut self, p: Arc<dyn ScorePlugin>) -> Self {
        self.score = Some(p);
        self.also(ExtensionPoint::Score)
    }

    pub fn reserve(mut self, p: Arc<dyn ReservePlugin>) -> Self {
        self.reserve = Some(p);
        self.also(ExtensionPoint::Reserve)
    }

    pub fn pre_bind(mut self, p: Arc<dyn PreBindPlugin>) -> Self {
        self.pre_bind = Some(p);
        self.also(ExtensionPoint::PreBind)
    }

    pub fn bind(mut self, p: Arc<dyn BindPlugin>) -> Self {
        self.bind = Some(p);
        self.also(ExtensionPoint::Bind)
    }

    /// Declares that the plugin implements `point` without a plugin object there: a point
    /// ksched has no trait for (queueSort, permit, postBind), a built-in (DefaultBinder at
    /// bind), or a point ksched does not run for this plugin yet. Configuration may then
    /// enable it there.
    pub fn also(mut self, point: ExtensionPoint) -> Self {
        self.points |= point.bit();
        self
    }

    /// A note for the configuration's `warnings` (e.g. args accepted but not applied yet).
    pub fn warn(mut self, message: impl Into<String>) -> Self {
        self.warnings.push(message.into());
        self
    }

    pub fn implements(&self, point: ExtensionPoint) -> bool {
        self.points & point.bit() != 0
    }
}

/// `instance!(plugin_expr => point, point, ...)`: a [`PluginInstance`] holding one `Arc` of
/// the plugin at each named point (`pre_enqueue`, `pre_filter`, `filter`, `post_filter`,
/// `pre_score`, `score`, `reserve`, `pre_bind`, `bind`).
macro_rules! instance {
    ($plugin:expr => $($point:ident),+ $(,)?) => {{
        let plugin = ::std::sync::Arc::new($plugin);
        $crate::config::PluginInstance::new()$(.$point(plugin.clone()))+
    }};
}
#[allow(unused_imports)] // used in this file by textual scope; the path is for other modules
pub(crate) use instance;

/// Decodes a plugin's `pluginConfig[].args` into its `XArgs`: absent or null args are the
/// defaults; `kind` and `apiVersion` are dropped (the loader has checked them). A decoding
/// error names the field inside the args.
pub fn decode_args<T: DeserializeOwned + Default>(args: Option<&Value>) -> Result<T, ArgsError> {
    let mut value = match args {
        None | Some(Value::Null) => return Ok(T::default()),
        Some(v) => v.clone(),
    };
    if let Value::Object(m) = &mut value {
        m.remove("kind");
        m.remove("apiVersion");
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        ArgsError::new(field, super::short_serde_message(&e.into_inner().to_string()))
    })
}

type ArgsFactory = dyn Fn(Option<&Value>) -> Result<PluginInstance, ArgsError> + Send + Sync;
type PlainFactory = dyn Fn() -> PluginInstance + Send + Sync;

enum Factory {
    Args(Box<ArgsFactory>),
    NoArgs(Box<PlainFactory>),
}

/// What constructing a plugin for a profile produced.
pub(crate) struct Constructed {
    pub instance: PluginInstance,
    /// The plugin takes no args, yet some were configured (upstream ignores them too).
    pub args_ignored: bool,
}

/// Plugin names → constructors, and the feature gates they are constructed under (upstream
/// hands each plugin the gates' values when it builds it).
#[derive(Default)]
pub struct Registry {
    factories: BTreeMap<&'static str, Factory>,
    gates: FeatureGates,
}

impl Registry {
    /// A registry with no plugins (v1.35's default gates).
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// Every plugin ksched has, under upstream's names, with v1.35's default gates.
    pub fn in_tree() -> Registry {
        Registry::in_tree_with(FeatureGates::default())
    }

    /// Every plugin ksched has, constructed under `gates` (a factory that a gate steers
    /// captures them).
    pub fn in_tree_with(gates: FeatureGates) -> Registry {
        let mut r = Registry { gates, ..Registry::default() };
        // Built into the engine: no plugin object, but configuration may name them.
        r.register_no_args(PRIORITY_SORT, || PluginInstance::new().also(ExtensionPoint::QueueSort));
        r.register_no_args(SCHEDULING_GATES, || instance!(SchedulingGates => pre_enqueue));
        r.register_no_args(DEFAULT_BINDER, || PluginInstance::new().also(ExtensionPoint::Bind));

        r.register_no_args(node_unschedulable::NAME, || instance!(NodeUnschedulable => filter));
        r.register_no_args(node_name::NAME, || instance!(NodeName => filter));
        r.register_no_args(taint_toleration::NAME, || instance!(TaintToleration => filter, pre_score, score));
        r.register(node_affinity::NAME, |args| {
            let a: NodeAffinityArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(NodeAffinity::new(&a) => pre_filter, filter, pre_score, score))
        });
        r.register_no_args(node_ports::NAME, || instance!(NodePorts => pre_filter, filter));
        r.register(node_resources_fit::NAME, move |args| {
            let a: NodeResourcesFitArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(NodeResourcesFit::new(a).with_gates(&gates) => filter, score))
        });
        r.register_no_args(volume_restrictions::NAME, || instance!(VolumeRestrictions => pre_filter, filter));
        r.register_no_args(node_volume_limits::NAME, || instance!(NodeVolumeLimits::new() => pre_filter, filter));
        r.register(volume_binding::NAME, |args| {
            let a: VolumeBindingArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(VolumeBinding::new(&a) => pre_filter, filter, reserve, pre_bind)
                .also(ExtensionPoint::PreEnqueue)
                .also(ExtensionPoint::PreScore)
                .also(ExtensionPoint::Score))
        });
        r.register_no_args(volume_zone::NAME, || instance!(VolumeZone::new() => pre_filter, filter));
        r.register(pod_topology_spread::NAME, |args| {
            let a: PodTopologySpreadArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(PodTopologySpread::new(a) => pre_filter, filter, pre_score, score))
        });
        r.register(inter_pod_affinity::NAME, |args| {
            let a: InterPodAffinityArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(InterPodAffinity::new(a) => pre_filter, filter, pre_score, score))
        });
        // Legacy plugins from the seeds: removed upstream, off by default, enabled by name.
        r.register_no_args(
            legacy_volume_limits::EBS_NAME,
            || instance!(LegacyVolumeLimits::ebs() => pre_filter, filter),
        );
        r.register_no_args(
            legacy_volume_limits::GCE_PD_NAME,
            || instance!(LegacyVolumeLimits::gce_pd() => pre_filter, filter),
        );
        r.register_no_args(
            legacy_volume_limits::AZURE_DISK_NAME,
            || instance!(LegacyVolumeLimits::azure_disk() => pre_filter, filter),
        );
        r.register_no_args(
            legacy_volume_limits::CINDER_NAME,
            || instance!(LegacyVolumeLimits::cinder() => pre_filter, filter),
        );
        r.register_no_args(node_conditions::NAME, || instance!(NodeConditions => filter));
        r.register_no_args(equal_priority::NAME, || instance!(EqualPriority => score));
        r.register(node_label::NAME, |args| {
            let a: NodeLabelArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(NodeLabel::new(a) => filter, score))
        });
        r.register(service_affinity::NAME, |args| {
            let a: ServiceAffinityArgs = decode_args(args)?;
            Ok(instance!(ServiceAffinity::new(a) => pre_filter, filter, pre_score, score))
        });
        r.register_no_args(selector_spread::NAME, || instance!(SelectorSpread::new() => pre_score, score));
        r.register_no_args(node_prefer_avoid_pods::NAME, || instance!(NodePreferAvoidPods::new() => pre_score, score));
        r.register(node_resources_balanced::NAME, move |args| {
            let a: NodeResourcesBalancedAllocationArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(BalancedAllocation::new(a).with_gates(&gates) => pre_score, score))
        });
        r.register_no_args(image_locality::NAME, || instance!(ImageLocality => score));
        // DynamicResourcesArgs (filterTimeout, bindingTimeout) are accepted as is: the
        // simulation's allocator never times out and no binding conditions are modelled.
        r.register(dynamic_resources::NAME, move |_args| {
            Ok(instance!(DynamicResources::new(&gates) => pre_enqueue, pre_filter, filter, post_filter, score, reserve, pre_bind))
        });
        r.register(default_preemption::NAME, move |args| {
            let a: DefaultPreemptionArgs = decode_args(args)?;
            a.validate()?;
            Ok(instance!(DefaultPreemption::with_gates(a, &gates) => pre_enqueue, post_filter))
        });
        r
    }

    /// Registers a plugin whose constructor reads its args (`None` when the profile has no
    /// `pluginConfig` for it). Replaces an earlier entry of the same name.
    pub fn register(
        &mut self,
        name: &'static str,
        factory: impl Fn(Option<&Value>) -> Result<PluginInstance, ArgsError> + Send + Sync + 'static,
    ) -> &mut Self {
        self.factories.insert(name, Factory::Args(Box::new(factory)));
        self
    }

    /// Registers a plugin without args; configured args are ignored (with a warning).
    pub fn register_no_args(
        &mut self,
        name: &'static str,
        factory: impl Fn() -> PluginInstance + Send + Sync + 'static,
    ) -> &mut Self {
        self.factories.insert(name, Factory::NoArgs(Box::new(factory)));
        self
    }

    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// The feature gates the plugins are constructed under.
    pub fn feature_gates(&self) -> FeatureGates {
        self.gates
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.factories.keys().copied()
    }

    /// Constructs `name` with `args`; `None` when it is not registered.
    pub(crate) fn construct(&self, name: &str, args: Option<&Value>) -> Option<Result<Constructed, ArgsError>> {
        Some(match self.factories.get(name)? {
            Factory::Args(f) => f(args).map(|instance| Constructed { instance, args_ignored: false }),
            Factory::NoArgs(f) => Ok(Constructed { instance: f(), args_ignored: args.is_some_and(|a| !a.is_null()) }),
        })
    }
}

impl crate::framework::Profile {
    /// Upstream's default profile (v1.35): the registry's default plugin set
    /// ([`UPSTREAM_DEFAULT_PLUGINS`], in upstream's order and with its weights: TaintToleration
    /// 3, NodeAffinity, PodTopologySpread and InterPodAffinity 2, the rest 1), built from
    /// [`Registry::in_tree`] as the configuration loader builds a profile a configuration
    /// leaves at its defaults; sequential (parallelism 1). VolumeBinding's Score is not run
    /// (upstream's needs the StorageCapacityScoring gate). Not modelled: DynamicResources
    /// beyond its PostFilter message (no DRA objects;
    /// upstream filters nothing and scores 0 without them), and the queue
    /// sort (PrioritySort) and DefaultBinder, which ksched builds in.
    pub fn default_profile() -> crate::framework::Profile {
        Self::default_profile_with(FeatureGates::default())
    }

    /// `default_profile` with its plugins constructed under `gates`.
    pub fn default_profile_with(gates: FeatureGates) -> crate::framework::Profile {
        let cfg = super::types::KubeSchedulerConfiguration::default();
        let built = super::build::build(&cfg, &Registry::in_tree_with(gates))
            .ok()
            .and_then(|mut c| (!c.profiles.is_empty()).then(|| c.profiles.swap_remove(0)));
        // The in-tree registry builds its own defaults; a failure is a defect in this file,
        // caught by `default_profile_is_upstreams_plugins_in_order`.
        let mut profile = built.unwrap_or_else(|| crate::framework::Profile::empty(super::DEFAULT_SCHEDULER_NAME));
        profile.parallelism = 1;
        profile
    }
}

#[cfg(test)]
mod default_profile_tests {
    use crate::framework::Profile;

    fn names<T: ?Sized + crate::framework::Plugin>(v: &[std::sync::Arc<T>]) -> Vec<&'static str> {
        v.iter().map(|p| p.name()).collect()
    }

    #[test]
    fn default_profile_is_upstreams_plugins_in_order() {
        let p = Profile::default_profile();
        assert_eq!(p.scheduler_name, "default-scheduler");
        assert_eq!((p.parallelism, p.percentage_of_nodes_to_score), (1, None));
        let pre_filter = [
            "NodeAffinity",
            "NodePorts",
            "VolumeRestrictions",
            "NodeVolumeLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity",
            "DynamicResources",
        ];
        assert_eq!(names(&p.pre_filter), pre_filter);
        let filter = [
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
        assert_eq!(names(&p.filter), filter);
        assert_eq!(names(&p.post_filter), ["DynamicResources", "DefaultPreemption"]);
        let pre_score = [
            "TaintToleration",
            "NodeAffinity",
            "PodTopologySpread",
            "InterPodAffinity",
            "NodeResourcesBalancedAllocation",
        ];
        assert_eq!(names(&p.pre_score), pre_score);
        let score: Vec<(&str, i64)> = p.score.iter().map(|s| (s.plugin.name(), s.weight)).collect();
        let want = [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ];
        assert_eq!(score, want);
        let bound = vec!["VolumeBinding", "DynamicResources"];
        assert_eq!((names(&p.reserve), names(&p.pre_bind)), (bound.clone(), bound));
        assert!(p.bind.is_empty());
    }

    /// Pod signatures over whole profiles (OpportunisticBatching): PodTopologySpread's system
    /// default constraints refuse every pod, so the default profile signs none (and says so);
    /// with `defaultingType: List` and no constraints a plain pod is signed; a profile running
    /// a plugin that does not sign signs no pod, nor does any while DRAExtendedResource is on.
    #[test]
    fn profiles_sign_pods_as_upstream() {
        use crate::api::{LabelSelector, Pod, ResourceName, TopologySpreadConstraint};
        use crate::config::{from_value, Registry};
        use crate::features::{Feature, FeatureGates};
        use crate::framework::signature::sign_pod;
        use serde_json::json;

        let doc = |profile: serde_json::Value| {
            json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [profile],
            })
        };
        let list = doc(json!({
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }));
        let legacy = doc(json!({
            "schedulerName": "default-scheduler",
            "plugins": {"score": {"enabled": [{"name": "EqualPriority"}]}},
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }));
        let mut extended = FeatureGates::default();
        extended.set_unchecked(Feature::DRAExtendedResource, true);
        let build = |doc: &serde_json::Value, gates: FeatureGates| {
            from_value(doc.clone(), &Registry::in_tree_with(gates)).unwrap().default_profile().clone()
        };
        let plain = Pod::builder("p").container("app:1", &[(ResourceName::Cpu, 100)]).build();
        let spread = Pod::builder("s")
            .container("app:1", &[(ResourceName::Cpu, 100)])
            .spread(TopologySpreadConstraint::new(1, "zone", LabelSelector::default()))
            .build();

        let default = Profile::default_profile();
        // PodTopologySpread's system default constraints: it would refuse every pod, so it
        // does not sign at all and the default profile never batches.
        assert!(!default.signs_pods(), "the default profile signs no pod");
        let got = sign_pod(default.signing_plugins(), &plain);
        assert!(got.as_ref().is_err_and(|why| why.contains("default constraints")), "{got:?}");

        let profile = build(&list, FeatureGates::default());
        assert!(profile.signs_pods());
        let signed = sign_pod(profile.signing_plugins(), &plain).expect("a plain pod is signed");
        let again = sign_pod(profile.signing_plugins(), &plain.renamed("q", None)).unwrap();
        assert_eq!(signed, again, "two pods of one spec sign alike");
        assert!(sign_pod(profile.signing_plugins(), &spread).is_err());

        assert!(!build(&legacy, FeatureGates::default()).signs_pods());

        let profile = build(&list, extended);
        assert!(!profile.signs_pods());
        let got = sign_pod(profile.signing_plugins(), &plain);
        assert!(got.as_ref().is_err_and(|why| why.contains("DRAExtendedResource")), "{got:?}");
    }
}
