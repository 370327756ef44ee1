//! `extenders[]`: upstream's defaults and validation, into [`ExtenderConfig`]s. Turning a
//! configuration into a working client (HTTP, TLS) is the adapters' job
//! (`ksched_k8s::extender`); the core only checks and keeps the settings.
//!
//! Upstream's rules: a prioritize verb needs a positive `weight`; at most one extender binds;
//! managed resources are extended resource names, each managed once; `httpTimeout` defaults
//! to 5 s (upstream's DefaultExtenderTimeout); ignorable extenders are consulted after the
//! others; resources `ignoredByScheduler` replace NodeResourcesFit's `ignoredResources` in
//! every profile. ksched's own rule on top: `urlPrefix` is required (upstream would send every
//! call to a relative URL and fail it).

use std::time::Duration;

use super::types;
use super::ConfigError;
use crate::util::duration::parse_go_duration;

/// Upstream's DefaultExtenderTimeout.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// One extender, checked and defaulted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtenderConfig {
    /// Where the extender was in `extenders[]` (errors name it).
    pub index: usize,
    pub url_prefix: String,
    pub filter_verb: Option<String>,
    pub preempt_verb: Option<String>,
    pub prioritize_verb: Option<String>,
    pub bind_verb: Option<String>,
    pub weight: i64,
    pub enable_https: bool,
    pub tls: ExtenderTls,
    pub http_timeout: Duration,
    pub node_cache_capable: bool,
    pub managed_resources: Vec<ManagedResource>,
    pub ignorable: bool,
}

/// `tlsConfig`; the `*_data` fields are still base64 text (decoded by the client).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtenderTls {
    pub insecure: bool,
    pub server_name: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub ca_file: Option<String>,
    pub cert_data: Option<String>,
    pub key_data: Option<String>,
    pub ca_data: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedResource {
    pub name: String,
    pub ignored_by_scheduler: bool,
}

fn invalid(field: String, message: String) -> ConfigError {
    ConfigError::Invalid { field, message }
}

fn verb(v: &Option<String>) -> Option<String> {
    v.as_ref().filter(|s| !s.is_empty()).cloned()
}

/// Checks and defaults `extenders[]`; the result is in upstream's calling order (ignorable
/// extenders last, otherwise as written).
pub fn build(list: &[types::Extender]) -> Result<Vec<ExtenderConfig>, ConfigError> {
    let mut out = Vec::with_capacity(list.len());
    let mut binders = 0;
    let mut managed: Vec<&str> = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let path = format!("extenders[{i}]");
        let url_prefix = e.url_prefix.clone().unwrap_or_default();
        if url_prefix.is_empty() {
            return Err(invalid(format!("{path}.urlPrefix"), "Required value".to_owned()));
        }
        let prioritize_verb = verb(&e.prioritize_verb);
        let weight = e.weight.unwrap_or(0);
        if prioritize_verb.is_some() && weight <= 0 {
            return Err(invalid(
                format!("{path}.weight"),
                format!("Invalid value: {weight}: must have a positive weight applied to it"),
            ));
        }
        let bind_verb = verb(&e.bind_verb);
        if bind_verb.is_some() {
            binders += 1;
        }
        let mut managed_resources = Vec::new();
        for (j, r) in e.managed_resources.as_deref().unwrap_or_default().iter().enumerate() {
            let field = format!("{path}.managedResources[{j}].name");
            if !is_extended_resource_name(&r.name) {
                return Err(invalid(
                    field,
                    format!("Invalid value: {:?}: is an invalid extended resource name", r.name),
                ));
            }
            if managed.contains(&r.name.as_str()) {
                return Err(invalid(
                    field,
                    format!("Invalid value: {:?}: duplicate extender managed resource name", r.name),
                ));
            }
            managed.push(&r.name);
            managed_resources.push(ManagedResource {
                name: r.name.clone(),
                ignored_by_scheduler: r.ignored_by_scheduler == Some(true),
            });
        }
        let http_timeout = match e.http_timeout.as_deref() {
            None => DEFAULT_HTTP_TIMEOUT,
            Some(s) => match parse_go_duration(s) {
                Ok(d) if d.is_zero() => DEFAULT_HTTP_TIMEOUT,
                Ok(d) => d,
                Err(_) => {
                    return Err(invalid(
                        format!("{path}.httpTimeout"),
                        format!("Invalid value: {s:?}: time: invalid duration"),
                    ))
                }
            },
        };
        let tls = e.tls_config.as_ref().map_or_else(ExtenderTls::default, |t| ExtenderTls {
            insecure: t.insecure == Some(true),
            server_name: t.server_name.clone().filter(|s| !s.is_empty()),
            cert_file: t.cert_file.clone().filter(|s| !s.is_empty()),
            key_file: t.key_file.clone().filter(|s| !s.is_empty()),
            ca_file: t.ca_file.clone().filter(|s| !s.is_empty()),
            cert_data: t.cert_data.clone().filter(|s| !s.is_empty()),
            key_data: t.key_data.clone().filter(|s| !s.is_empty()),
            ca_data: t.ca_data.clone().filter(|s| !s.is_empty()),
        });
        out.push(ExtenderConfig {
            index: i,
            url_prefix,
            filter_verb: verb(&e.filter_verb),
            preempt_verb: verb(&e.preempt_verb),
            prioritize_verb,
            bind_verb,
            weight,
            enable_https: e.enable_https == Some(true),
            tls,
            http_timeout,
            node_cache_capable: e.node_cache_capable == Some(true),
            managed_resources,
            ignorable: e.ignorable == Some(true),
        });
    }
    if binders > 1 {
        return Err(invalid(
            "extenders".to_owned(),
            format!(
                "Invalid value: \"found {binders} extenders implementing bind\": only one extender can implement bind"
            ),
        ));
    }
    // Upstream consults the ignorable extenders after the others.
    out.sort_by_key(|e| e.ignorable);
    Ok(out)
}

/// The resources NodeResourcesFit must ignore: every managed resource `ignoredByScheduler`.
pub fn ignored_resources(extenders: &[ExtenderConfig]) -> Vec<String> {
    let mut names: Vec<(usize, &str)> = extenders
        .iter()
        .flat_map(|e| e.managed_resources.iter().filter(|r| r.ignored_by_scheduler).map(|r| (e.index, r.name.as_str())))
        .collect();
    names.sort_by_key(|(i, _)| *i);
    names.into_iter().map(|(_, n)| n.to_owned()).collect()
}

/// Kubernetes' extended resource names: a domain-qualified name outside `kubernetes.io/`
/// (`example.com/foo`), not starting with `requests.`.
pub fn is_extended_resource_name(name: &str) -> bool {
    let Some((prefix, base)) = name.split_once('/') else { return false };
    !prefix.is_empty()
        && !base.is_empty()
        && !name.contains("kubernetes.io/")
        && !name.starts_with("requests.")
        && !base.contains('/')
        && prefix.split('.').all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && base.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_extended_resource_name_accepts_domain_names_only() {
        let cases = [
            ("example.com/foo", true),
            ("nvidia.com/gpu", true),
            ("cpu", false),
            ("kubernetes.io/foo", false),
            ("requests.example.com/foo", false),
            ("example.com/", false),
            ("/foo", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_extended_resource_name(name), want, "{name}");
        }
    }
}
