//! From a decoded v1 configuration to ksched profiles, in upstream's steps:
//!
//! 1. **v1 defaulting** merges each profile's plugin sets over the default set (which is all
//!    `multiPoint`): a `disabled` name drops that default, `*` drops them all; an `enabled`
//!    entry naming a default replaces it in place (the last such entry wins, so its weight
//!    is used); other `enabled` entries follow the defaults in the order written.
//! 2. **multiPoint expansion**, per extension point: the point's own `enabled` plugins must
//!    implement it and appear once; unless the point disables `*`, every `multiPoint` plugin
//!    that implements the point and that the point does not disable joins it. Order: plugins
//!    named by both (in the point's order), then `multiPoint`-only ones, then the point's
//!    other plugins.
//! 3. **weights**: a score plugin's weight comes from its `score.enabled` entry if any, else
//!    from `multiPoint`; 0 or absent means 1.
//!
//! ksched's own rule on top: a plugin upstream has but ksched does not yet (see
//! [`Registry`]) is skipped with a warning instead of failing the configuration.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::registry::{
    is_upstream_plugin, ExtensionPoint, PluginInstance, Registry, REMOVED_IN_V1, UPSTREAM_DEFAULT_PLUGINS,
};
use super::types::{self, API_VERSION};
use super::{ConfigError, SchedulerConfig};
use crate::framework::profile::{Profile, WeightedScore};

pub use crate::framework::profile::DEFAULT_SCHEDULER_NAME;
const DEFAULT_PARALLELISM: i32 = 16;
const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
const DEFAULT_INITIAL_BACKOFF_SECONDS: i64 = 1;
const DEFAULT_MAX_BACKOFF_SECONDS: i64 = 10;

fn invalid(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), message: message.into() }
}

/// One enabled plugin of a merged set; `path` is where the configuration names it (`None`:
/// it comes from the upstream default set).
#[derive(Clone, Debug)]
struct Entry<'a> {
    name: &'a str,
    weight: Option<i32>,
    path: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct MergedSet<'a> {
    enabled: Vec<Entry<'a>>,
    disabled: Vec<&'a str>,
}

impl MergedSet<'_> {
    fn disables(&self, name: &str) -> bool {
        self.disabled.contains(&name)
    }
}

/// v1 defaulting of one plugin set (upstream's mergePluginSet).
fn merge<'a>(defaults: Vec<Entry<'a>>, user: Option<&'a types::PluginSet>, path: &str) -> MergedSet<'a> {
    let user_enabled: Vec<Entry<'a>> = user
        .and_then(|s| s.enabled.as_deref())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(j, p)| Entry { name: &p.name, weight: p.weight, path: Some(format!("{path}.enabled[{j}]")) })
        .collect();
    let disabled: Vec<&str> =
        user.and_then(|s| s.disabled.as_deref()).unwrap_or_default().iter().map(|p| p.name.as_str()).collect();
    // A name enabled twice: the later entry replaces the default, the earlier one is appended
    // (and then rejected as a double registration).
    let last: HashMap<&str, usize> = user_enabled.iter().enumerate().map(|(i, e)| (e.name, i)).collect();
    let mut replaced = HashSet::new();
    let mut enabled = Vec::new();
    if !disabled.contains(&"*") {
        for d in defaults {
            if disabled.contains(&d.name) {
                continue;
            }
            match last.get(d.name) {
                Some(&i) => {
                    enabled.push(user_enabled[i].clone());
                    replaced.insert(i);
                }
                None => enabled.push(d),
            }
        }
    }
    enabled.extend(user_enabled.into_iter().enumerate().filter(|(i, _)| !replaced.contains(i)).map(|(_, e)| e));
    MergedSet { enabled, disabled }
}

fn user_set(plugins: Option<&types::Plugins>, point: Option<ExtensionPoint>) -> Option<&types::PluginSet> {
    let p = plugins?;
    match point {
        None => p.multi_point.as_ref(),
        Some(ExtensionPoint::PreEnqueue) => p.pre_enqueue.as_ref(),
        Some(ExtensionPoint::QueueSort) => p.queue_sort.as_ref(),
        Some(ExtensionPoint::PreFilter) => p.pre_filter.as_ref(),
        Some(ExtensionPoint::Filter) => p.filter.as_ref(),
        Some(ExtensionPoint::PostFilter) => p.post_filter.as_ref(),
        Some(ExtensionPoint::PreScore) => p.pre_score.as_ref(),
        Some(ExtensionPoint::Score) => p.score.as_ref(),
        Some(ExtensionPoint::Reserve) => p.reserve.as_ref(),
        Some(ExtensionPoint::Permit) => p.permit.as_ref(),
        Some(ExtensionPoint::PreBind) => p.pre_bind.as_ref(),
        Some(ExtensionPoint::Bind) => p.bind.as_ref(),
        Some(ExtensionPoint::PostBind) => p.post_bind.as_ref(),
    }
}

fn check_percentage(field: String, value: Option<i32>) -> Result<Option<u32>, ConfigError> {
    match value {
        None => Ok(None),
        Some(v @ 0..=100) => Ok(Some(v as u32)),
        Some(v) => Err(invalid(field, format!("Invalid value: {v}: not in valid range [0-100]"))),
    }
}

/// Builds every profile of `cfg` (already checked for apiVersion and kind).
pub(crate) fn build(
    cfg: &types::KubeSchedulerConfiguration,
    registry: &Registry,
) -> Result<SchedulerConfig, ConfigError> {
    let mut warnings = Vec::new();
    let parallelism = cfg.parallelism.unwrap_or(DEFAULT_PARALLELISM);
    if parallelism <= 0 {
        return Err(invalid(
            "parallelism",
            format!("Invalid value: {parallelism}: should be an integer value greater than zero"),
        ));
    }
    let percentage = check_percentage("percentageOfNodesToScore".into(), cfg.percentage_of_nodes_to_score)?;
    let initial = cfg.pod_initial_backoff_seconds.unwrap_or(DEFAULT_INITIAL_BACKOFF_SECONDS);
    if initial <= 0 {
        return Err(invalid("podInitialBackoffSeconds", format!("Invalid value: {initial}: must be greater than 0")));
    }
    let max = cfg.pod_max_backoff_seconds.unwrap_or(DEFAULT_MAX_BACKOFF_SECONDS);
    if max < initial {
        return Err(invalid(
            "podMaxBackoffSeconds",
            format!("Invalid value: {max}: must be greater than or equal to podInitialBackoffSeconds ({initial})"),
        ));
    }
    let extenders = super::extenders::build(cfg.extenders.as_deref().unwrap_or_default())?;
    let ignored = super::extenders::ignored_resources(&extenders);

    let default_profile = [types::KubeSchedulerProfile::default()];
    let profiles = match cfg.profiles.as_deref() {
        None | Some([]) => &default_profile[..],
        Some(p) => p,
    };
    let mut built = Vec::with_capacity(profiles.len());
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, prof) in profiles.iter().enumerate() {
        let path = format!("profiles[{i}]");
        // Only a lone profile gets the default name; several must each name themselves.
        let name = match prof.scheduler_name.as_deref() {
            None if profiles.len() == 1 => DEFAULT_SCHEDULER_NAME,
            None | Some("") => return Err(invalid(format!("{path}.schedulerName"), "Required value")),
            Some(n) => n,
        };
        if let Some(first) = names.insert(name, i) {
            return Err(invalid(
                format!("{path}.schedulerName"),
                format!("Duplicate value: {name:?} (also profiles[{first}].schedulerName)"),
            ));
        }
        let own_percentage =
            check_percentage(format!("{path}.percentageOfNodesToScore"), prof.percentage_of_nodes_to_score)?;
        let mut profile = build_profile(&path, name, prof, registry, &ignored, &mut warnings)?;
        profile.percentage_of_nodes_to_score = own_percentage.or(percentage);
        profile.parallelism = parallelism as usize;
        built.push(profile);
    }
    check_common_queue_sort(profiles)?;

    Ok(SchedulerConfig {
        profiles: built,
        parallelism: parallelism as usize,
        percentage_of_nodes_to_score: percentage,
        pod_initial_backoff: std::time::Duration::from_secs(initial as u64),
        pod_max_backoff: std::time::Duration::from_secs(max as u64),
        extenders,
        warnings,
        feature_gates: registry.feature_gates(),
    })
}

/// Every profile must configure queueSort the same way (one queue serves them all).
fn check_common_queue_sort(profiles: &[types::KubeSchedulerProfile]) -> Result<(), ConfigError> {
    let key = |p: &types::KubeSchedulerProfile| {
        let set = user_set(p.plugins.as_ref(), Some(ExtensionPoint::QueueSort));
        let names = |l: Option<&Vec<types::Plugin>>| -> Vec<(String, Option<i32>)> {
            l.map(|v| v.iter().map(|p| (p.name.clone(), p.weight)).collect()).unwrap_or_default()
        };
        (names(set.and_then(|s| s.enabled.as_ref())), names(set.and_then(|s| s.disabled.as_ref())))
    };
    let canon = key(&profiles[0]);
    for (i, p) in profiles.iter().enumerate().skip(1) {
        if key(p) != canon {
            return Err(invalid(
                format!("profiles[{i}].plugins.queueSort"),
                "must be the same for all profiles: one scheduling queue serves them all, and profiles[0] sorts it \
                 otherwise",
            ));
        }
    }
    Ok(())
}

/// Whether a named plugin can be built: registered, or known upstream but not in ksched yet.
fn registered(registry: &Registry, name: &str, path: &str) -> Result<bool, ConfigError> {
    if registry.contains(name) {
        Ok(true)
    } else if REMOVED_IN_V1.contains(&name) {
        Err(invalid(path, format!("plugin {name:?} was removed from kube-scheduler and is invalid in {API_VERSION}")))
    } else if is_upstream_plugin(name) {
        Ok(false)
    } else {
        Err(invalid(path, format!("unknown plugin {name:?}")))
    }
}

/// `kind` and `apiVersion` inside args, when given, must be the plugin's.
fn check_args_type(name: &str, args: &Value, path: &str) -> Result<(), ConfigError> {
    let want_kind = format!("{name}Args");
    if let Some(kind) = args.get("kind") {
        if kind.as_str() != Some(want_kind.as_str()) {
            return Err(invalid(
                format!("{path}.kind"),
                format!("args for plugin {name} must be of kind {want_kind}, got {kind}"),
            ));
        }
    }
    if let Some(v) = args.get("apiVersion") {
        if v.as_str() != Some(API_VERSION) {
            return Err(invalid(format!("{path}.apiVersion"), format!("must be {API_VERSION}, got {v}")));
        }
    }
    Ok(())
}

fn args_error(path: &str, e: crate::framework::ArgsError) -> ConfigError {
    if e.field.is_empty() {
        invalid(path, e.message)
    } else {
        invalid(format!("{path}.{}", e.field), e.message)
    }
}

fn build_profile(
    ppath: &str,
    scheduler_name: &str,
    prof: &types::KubeSchedulerProfile,
    registry: &Registry,
    ignored_by_extenders: &[String],
    warnings: &mut Vec<String>,
) -> Result<Profile, ConfigError> {
    let plugins = prof.plugins.as_ref();

    // Weights are read at score and multiPoint; a negative one is refused (see the module doc
    // of `config`).
    for point in [Some(ExtensionPoint::Score), None] {
        let name = point.map_or("multiPoint", ExtensionPoint::config_name);
        let enabled = user_set(plugins, point).and_then(|s| s.enabled.as_deref()).unwrap_or_default();
        for (j, p) in enabled.iter().enumerate() {
            if let Some(w) = p.weight.filter(|w| *w < 0) {
                return Err(invalid(
                    format!("{ppath}.plugins.{name}.enabled[{j}].weight"),
                    format!("Invalid value: {w}: must not be negative (0 means the default weight, 1)"),
                ));
            }
        }
    }

    // v1 defaulting, then dropping what ksched lacks.
    let defaults: Vec<Entry> =
        UPSTREAM_DEFAULT_PLUGINS.iter().map(|&(name, weight)| Entry { name, weight, path: None }).collect();
    let mut multi = merge(defaults, user_set(plugins, None), &format!("{ppath}.plugins.multiPoint"));
    let mut points: Vec<(ExtensionPoint, MergedSet)> = ExtensionPoint::ALL
        .iter()
        .map(|&p| (p, merge(Vec::new(), user_set(plugins, Some(p)), &format!("{ppath}.plugins.{p}"))))
        .collect();
    let mut skipped: Vec<&str> = Vec::new();
    for set in std::iter::once(&mut multi).chain(points.iter_mut().map(|(_, s)| s)) {
        let mut kept = Vec::with_capacity(set.enabled.len());
        for e in set.enabled.drain(..) {
            let path = e.path.clone().map(|p| format!("{p}.name"));
            if registered(registry, e.name, path.as_deref().unwrap_or(ppath))? {
                kept.push(e);
            } else {
                match &e.path {
                    Some(p) => warnings.push(format!("{p}: {} is not available in ksched yet; skipped", e.name)),
                    None if !skipped.contains(&e.name) => skipped.push(e.name),
                    None => {}
                }
            }
        }
        set.enabled = kept;
    }
    if !skipped.is_empty() {
        warnings.push(format!("{ppath}: default plugins not available in ksched yet, skipped: {}", skipped.join(", ")));
    }

    // pluginConfig: one entry per plugin.
    let configs = prof.plugin_config.as_deref().unwrap_or_default();
    let mut args_of: HashMap<&str, (usize, Option<&Value>)> = HashMap::new();
    for (j, pc) in configs.iter().enumerate() {
        let path = format!("{ppath}.pluginConfig[{j}]");
        if args_of.insert(pc.name.as_str(), (j, pc.args.as_ref())).is_some() {
            return Err(invalid(path, format!("Duplicate value: {:?}", pc.name)));
        }
        if REMOVED_IN_V1.contains(&pc.name.as_str()) {
            registered(registry, &pc.name, &format!("{path}.name"))?;
        }
        if let Some(args) = &pc.args {
            if registry.contains(&pc.name) || is_upstream_plugin(&pc.name) {
                check_args_type(&pc.name, args, &format!("{path}.args"))?;
            }
        }
    }

    // The extenders' resources ignoredByScheduler replace NodeResourcesFit's ignoredResources
    // (upstream's buildExtenders).
    let fit_args: Option<Value> = (!ignored_by_extenders.is_empty()).then(|| {
        let mut args =
            args_of.get(NODE_RESOURCES_FIT).and_then(|(_, a)| *a).cloned().unwrap_or(Value::Object(Default::default()));
        if let Value::Object(m) = &mut args {
            m.insert("ignoredResources".to_owned(), Value::from(ignored_by_extenders.to_vec()));
        }
        args
    });

    // One instance per enabled plugin, shared by every point.
    let mut instances: HashMap<&str, PluginInstance> = HashMap::new();
    for set in std::iter::once(&multi).chain(points.iter().map(|(_, s)| s)) {
        for e in &set.enabled {
            if instances.contains_key(e.name) {
                continue;
            }
            let cfg = args_of.get(e.name).copied();
            let cfg_path = cfg.map_or_else(|| ppath.to_owned(), |(j, _)| format!("{ppath}.pluginConfig[{j}]"));
            let mut args = cfg.and_then(|(_, a)| a);
            if e.name == NODE_RESOURCES_FIT && fit_args.is_some() {
                args = fit_args.as_ref();
            }
            let built = registry
                .construct(e.name, args)
                .ok_or_else(|| invalid(ppath, format!("plugin {:?} is not registered", e.name)))?
                .map_err(|err| args_error(&format!("{cfg_path}.args"), err))?;
            if built.args_ignored {
                warnings.push(format!("{cfg_path}.args: {} takes no args; ignored", e.name));
            }
            warnings.extend(built.instance.warnings.iter().map(|w| format!("{cfg_path}: {w}")));
            instances.insert(e.name, built.instance);
        }
    }
    // Args of plugins this profile does not run are still checked, as upstream validates them.
    for (j, pc) in configs.iter().enumerate() {
        if instances.contains_key(pc.name.as_str()) {
            continue;
        }
        let path = format!("{ppath}.pluginConfig[{j}]");
        let note = match registry.construct(&pc.name, pc.args.as_ref()) {
            Some(Err(err)) => return Err(args_error(&format!("{path}.args"), err)),
            Some(Ok(_)) => "is not enabled in this profile; its args are ignored",
            None if is_upstream_plugin(&pc.name) => "is not available in ksched yet; its args are not checked",
            None => "is not a plugin ksched knows; ignored",
        };
        warnings.push(format!("{path}: {} {note}", pc.name));
    }

    // multiPoint expansion into each point.
    let mut expanded: HashMap<ExtensionPoint, Vec<&str>> = HashMap::new();
    for (point, set) in &points {
        let point = *point;
        let mut names: Vec<&str> = Vec::new();
        for e in &set.enabled {
            let path = e.path.as_deref().unwrap_or(ppath);
            if !instances[e.name].implements(point) {
                return Err(invalid(
                    path,
                    format!("plugin {:?} does not implement the {point} extension point", e.name),
                ));
            }
            if names.contains(&e.name) {
                return Err(invalid(path, format!("plugin {:?} is already enabled at {point}", e.name)));
            }
            names.push(e.name);
        }
        if !set.disables("*") {
            let mut overrides = HashSet::new();
            let mut from_multi: Vec<&str> = Vec::new();
            for e in &multi.enabled {
                if !instances[e.name].implements(point) || set.disables(e.name) {
                    continue;
                }
                if names.contains(&e.name) {
                    overrides.insert(e.name);
                } else if from_multi.contains(&e.name) {
                    return Err(invalid(
                        e.path.as_deref().unwrap_or(ppath),
                        format!("plugin {:?} is already enabled in multiPoint (at {point})", e.name),
                    ));
                } else {
                    from_multi.push(e.name);
                }
            }
            let (first, rest): (Vec<&str>, Vec<&str>) = names.into_iter().partition(|n| overrides.contains(n));
            names = first.into_iter().chain(from_multi).chain(rest).collect();
        }
        expanded.insert(point, names);
    }

    let queue_sort = expanded[&ExtensionPoint::QueueSort].len();
    if queue_sort != 1 {
        return Err(invalid(
            format!("{ppath}.plugins.queueSort"),
            format!("exactly one queue sort plugin is required, got {queue_sort}"),
        ));
    }
    if expanded[&ExtensionPoint::Bind].is_empty() {
        return Err(invalid(format!("{ppath}.plugins.bind"), "at least one bind plugin is required"));
    }

    // Score weights: the score point's own entry first, then multiPoint's.
    let mut weights: HashMap<&str, i64> = HashMap::new();
    let score_set = points.iter().find(|(p, _)| *p == ExtensionPoint::Score).map(|(_, s)| s.enabled.as_slice());
    for e in score_set.unwrap_or_default().iter().chain(&multi.enabled) {
        if instances[e.name].implements(ExtensionPoint::Score) {
            weights.entry(e.name).or_insert(match e.weight {
                None | Some(0) => 1,
                Some(w) => i64::from(w),
            });
        }
    }

    let at = |p: ExtensionPoint| expanded[&p].iter().map(|n| (*n, &instances[n]));
    Ok(Profile {
        pre_enqueue: at(ExtensionPoint::PreEnqueue).filter_map(|(_, i)| i.pre_enqueue.clone()).collect(),
        pre_filter: at(ExtensionPoint::PreFilter).filter_map(|(_, i)| i.pre_filter.clone()).collect(),
        filter: at(ExtensionPoint::Filter).filter_map(|(_, i)| i.filter.clone()).collect(),
        post_filter: at(ExtensionPoint::PostFilter).filter_map(|(_, i)| i.post_filter.clone()).collect(),
        pre_score: at(ExtensionPoint::PreScore).filter_map(|(_, i)| i.pre_score.clone()).collect(),
        score: at(ExtensionPoint::Score)
            .filter_map(|(n, i)| i.score.clone().map(|plugin| WeightedScore { plugin, weight: weights[n] }))
            .collect(),
        reserve: at(ExtensionPoint::Reserve).filter_map(|(_, i)| i.reserve.clone()).collect(),
        pre_bind: at(ExtensionPoint::PreBind).filter_map(|(_, i)| i.pre_bind.clone()).collect(),
        bind: at(ExtensionPoint::Bind).filter_map(|(_, i)| i.bind.clone()).collect(),
        ..Profile::empty(scheduler_name)
    })
}
