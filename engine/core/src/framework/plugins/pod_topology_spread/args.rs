//! `PodTopologySpreadArgs` (kubescheduler.config.k8s.io/v1) and their validation.

use serde::Deserialize;

use crate::api::{InclusionPolicy, Sym, TopologySpreadConstraint, WhenUnsatisfiable};
use crate::framework::ArgsError;

/// Where pods without constraints get their default constraints from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum DefaultingType {
    /// Upstream's built-in defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway);
    /// `defaultConstraints` must then be empty.
    #[default]
    System,
    /// The configured `defaultConstraints` (possibly none).
    List,
}

/// One default constraint, in the wire form of a `v1.TopologySpreadConstraint` (strings kept
/// as written so `validate` can say what is wrong with them).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultConstraint {
    #[serde(default)]
    pub max_skew: i32,
    #[serde(default)]
    pub topology_key: String,
    /// `DoNotSchedule` or `ScheduleAnyway`.
    #[serde(default)]
    pub when_unsatisfiable: String,
    /// Forbidden in default constraints (their selector comes from the pod's services and
    /// controllers); kept only so `validate` can reject it.
    #[serde(default)]
    pub label_selector: Option<serde_json::Value>,
    #[serde(default)]
    pub min_domains: Option<i32>,
    /// `Honor` or `Ignore`; unset means Honor.
    #[serde(default)]
    pub node_affinity_policy: Option<String>,
    /// `Honor` or `Ignore`; unset means Ignore.
    #[serde(default)]
    pub node_taints_policy: Option<String>,
    #[serde(default)]
    pub match_label_keys: Vec<String>,
}

/// `pluginConfig[].args` of PodTopologySpread.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    /// Accepted and ignored.
    #[serde(default)]
    pub kind: Option<String>,
    /// Accepted and ignored.
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub default_constraints: Vec<DefaultConstraint>,
    /// Default `System` (upstream's v1 default).
    #[serde(default)]
    pub defaulting_type: DefaultingType,
}

impl DefaultingType {
    fn as_str(self) -> &'static str {
        match self {
            DefaultingType::System => "System",
            DefaultingType::List => "List",
        }
    }
}

fn parse_when(s: &str) -> Option<WhenUnsatisfiable> {
    match s {
        "DoNotSchedule" => Some(WhenUnsatisfiable::DoNotSchedule),
        "ScheduleAnyway" => Some(WhenUnsatisfiable::ScheduleAnyway),
        _ => None,
    }
}

fn parse_policy(s: &Option<String>, default: InclusionPolicy) -> Option<InclusionPolicy> {
    match s.as_deref() {
        None => Some(default),
        Some("Honor") => Some(InclusionPolicy::Honor),
        Some("Ignore") => Some(InclusionPolicy::Ignore),
        Some(_) => None,
    }
}

impl DefaultConstraint {
    /// The constraint with the action it applies to (`None` for an unknown action: it then
    /// applies to neither, as upstream's filtering by action does). No selector: the plugin
    /// supplies one per pod.
    pub(super) fn to_constraint(&self) -> (Option<WhenUnsatisfiable>, TopologySpreadConstraint) {
        let when = parse_when(&self.when_unsatisfiable);
        let c = TopologySpreadConstraint {
            max_skew: self.max_skew,
            topology_key: Sym::new(&self.topology_key),
            when_unsatisfiable: when.unwrap_or_default(),
            label_selector: None,
            min_domains: self.min_domains,
            node_affinity_policy: parse_policy(&self.node_affinity_policy, InclusionPolicy::Honor)
                .unwrap_or(InclusionPolicy::Honor),
            node_taints_policy: parse_policy(&self.node_taints_policy, InclusionPolicy::Ignore)
                .unwrap_or(InclusionPolicy::Ignore),
            match_label_keys: self.match_label_keys.iter().map(|k| Sym::new(k)).collect(),
        };
        (when, c)
    }
}

impl PodTopologySpreadArgs {
    /// Upstream's `ValidatePodTopologySpreadArgs`; the first error found, in upstream's order.
    /// Also rejects a node inclusion policy other than Honor / Ignore (upstream leaves that to
    /// the API's pod validation and would treat it as Ignore).
    pub fn validate(&self) -> Result<(), ArgsError> {
        if self.defaulting_type == DefaultingType::System && !self.default_constraints.is_empty() {
            return Err(ArgsError::new(
                "defaultingType",
                format!("Invalid value: {:?}: when .defaultConstraints are not empty", self.defaulting_type.as_str()),
            ));
        }
        for (i, c) in self.default_constraints.iter().enumerate() {
            let field = |name: &str| format!("defaultConstraints[{i}].{name}");
            if c.max_skew <= 0 {
                return Err(ArgsError::new(
                    field("maxSkew"),
                    format!("Invalid value: {}: not in valid range (0, inf)", c.max_skew),
                ));
            }
            if c.topology_key.is_empty() {
                return Err(ArgsError::new(field("topologyKey"), "Required value: can not be empty"));
            }
            if let Err(why) = validate_qualified_name(&c.topology_key) {
                return Err(ArgsError::new(
                    field("topologyKey"),
                    format!("Invalid value: {:?}: {why}", c.topology_key),
                ));
            }
            if c.when_unsatisfiable.is_empty() {
                return Err(ArgsError::new(field("whenUnsatisfiable"), "Required value: can not be empty"));
            }
            if parse_when(&c.when_unsatisfiable).is_none() {
                return Err(ArgsError::new(
                    field("whenUnsatisfiable"),
                    format!(
                        "Unsupported value: {:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                        c.when_unsatisfiable
                    ),
                ));
            }
            if c.label_selector.is_some() {
                return Err(ArgsError::new(
                    field("labelSelector"),
                    "Forbidden: constraint must not define a selector, as they deduced for each pod",
                ));
            }
            if let Some(earlier) = self.default_constraints[..i]
                .iter()
                .find(|o| o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable)
            {
                return Err(ArgsError::new(
                    format!("defaultConstraints[{i}]"),
                    format!("Duplicate value: \"{{{}, {}}}\"", earlier.topology_key, earlier.when_unsatisfiable),
                ));
            }
            for (name, policy, default) in [
                ("nodeAffinityPolicy", &c.node_affinity_policy, InclusionPolicy::Honor),
                ("nodeTaintsPolicy", &c.node_taints_policy, InclusionPolicy::Ignore),
            ] {
                if parse_policy(policy, default).is_none() {
                    return Err(ArgsError::new(
                        field(name),
                        format!(
                            "Unsupported value: {:?}: supported values: \"Honor\", \"Ignore\"",
                            policy.as_deref().unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric (upstream's
/// `IsQualifiedName`). The error says which part is wrong.
fn validate_qualified_name(key: &str) -> Result<(), &'static str> {
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((p, n)) if !n.contains('/') => (Some(p), n),
        Some(_) => {
            return Err("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start \
                        and end with an alphanumeric character, with an optional DNS subdomain prefix and '/'");
        }
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("prefix part must be non-empty");
        }
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if p.len() > 253 || !p.split('.').all(label_ok) {
            return Err("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                        characters, '-' or '.', and must start and end with an alphanumeric character");
        }
    }
    if name.is_empty() {
        return Err("name part must be non-empty");
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters");
    }
    let bytes = name.as_bytes();
    let inner_ok = bytes.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !inner_ok || !bytes[0].is_ascii_alphanumeric() || !bytes[bytes.len() - 1].is_ascii_alphanumeric() {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
                    with an alphanumeric character");
    }
    Ok(())
}
