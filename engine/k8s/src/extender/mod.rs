//! Scheduler extenders over HTTP(S): the client side of upstream's extender protocol.
//!
//! [`HttpExtender`] implements the core's [`Extender`] trait: each verb is a `POST` of JSON
//! to `urlPrefix/verb` with upstream's v1 wire types ([`wire`]); pods and nodes are sent as
//! Kubernetes v1 objects ([`to_v1`]), or nodes by name to a `nodeCacheCapable` extender.
//! An answer other than `200 OK`, a body that is not the verb's JSON, an `Error` in the
//! answer, a refused or closed connection, or no answer within `httpTimeout` fails the call
//! with an error naming the extender (its URL prefix), the verb and the cause.
//!
//! The client is `ureq` (blocking, no async runtime): one agent per extender keeps its
//! connections alive between calls, and `httpTimeout` bounds each whole call. TLS is rustls:
//! `tlsConfig` gives the CA (file or base64 data), a client certificate and key, and
//! `insecure`; as upstream does, `enableHTTPS` without a CA skips verifying the server.
//! ksched connects directly (no proxy from the environment); `serverName` is not supported
//! by the client and is reported as a warning.
//!
//! [`connect`] builds the clients of a configuration's `extenders[]` and puts them on every
//! profile; `ksched_k8s::config::parse` calls it, so every front end that reads a
//! configuration file consults its extenders.

pub mod to_v1;
pub mod wire;

use std::sync::Arc;

use base64::Engine as _;
use ksched_engine::api::{Node, Pod, Sym};
use ksched_engine::config::{ConfigError, ExtenderConfig, SchedulerConfig};
use ksched_engine::framework::extender::{Extender, ExtenderError, ExtenderFilterResult, ExtenderVictims, Verb};
use ksched_engine::snapshot::node_info::NodeInfo;
use ksched_engine::snapshot::Snapshot;
use serde::de::DeserializeOwned;
use serde::Serialize;
use ureq::tls::{Certificate, ClientCert, PemItem, RootCerts, TlsConfig, TlsProvider};

/// The most an answer may hold (a filter answer with thousands of whole nodes fits).
const MAX_ANSWER_BYTES: u64 = 256 << 20;

/// One configured extender, reached over HTTP(S).
pub struct HttpExtender {
    url_prefix: String,
    filter_verb: Option<String>,
    prioritize_verb: Option<String>,
    preempt_verb: Option<String>,
    bind_verb: Option<String>,
    weight: i64,
    node_cache_capable: bool,
    managed: Vec<Sym>,
    ignorable: bool,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpExtender").field("url_prefix", &self.url_prefix).finish_non_exhaustive()
    }
}

/// Builds the clients of `cfg.extenders` and puts them, in calling order, on every profile.
pub fn connect(cfg: &mut SchedulerConfig) -> Result<(), ConfigError> {
    if cfg.extenders.is_empty() {
        return Ok(());
    }
    let mut list: Vec<Arc<dyn Extender>> = Vec::with_capacity(cfg.extenders.len());
    for e in &cfg.extenders {
        if e.tls.server_name.is_some() {
            cfg.warnings.push(format!(
                "extenders[{}].tlsConfig.serverName: not supported by ksched's client; the URL's host is checked",
                e.index
            ));
        }
        list.push(Arc::new(HttpExtender::new(e)?));
    }
    for p in &mut cfg.profiles {
        p.extenders = list.clone();
    }
    Ok(())
}

fn invalid(field: String, message: String) -> ConfigError {
    ConfigError::Invalid { field, message }
}

/// PEM bytes from a file or base64 data field (the data wins, as in client-go).
fn pem_source(
    path: &str,
    file: &Option<String>,
    data: &Option<String>,
    file_field: &str,
    data_field: &str,
) -> Result<Option<Vec<u8>>, ConfigError> {
    if let Some(d) = data {
        return base64::engine::general_purpose::STANDARD
            .decode(d.trim())
            .map(Some)
            .map_err(|e| invalid(format!("{path}.tlsConfig.{data_field}"), format!("not base64: {e}")));
    }
    match file {
        None => Ok(None),
        Some(f) => std::fs::read(f)
            .map(Some)
            .map_err(|e| invalid(format!("{path}.tlsConfig.{file_field}"), format!("reading {f}: {e}"))),
    }
}

fn tls_config(cfg: &ExtenderConfig) -> Result<TlsConfig, ConfigError> {
    let path = format!("extenders[{}]", cfg.index);
    let t = &cfg.tls;
    let mut b = TlsConfig::builder().provider(TlsProvider::Rustls);
    let ca = pem_source(&path, &t.ca_file, &t.ca_data, "caFile", "caData")?;
    if let Some(pem) = &ca {
        let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(pem)
            .filter_map(|i| match i {
                Ok(PemItem::Certificate(c)) => Some(Ok(c)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(format!("{path}.tlsConfig.caData"), format!("not PEM: {e}")))?;
        if certs.is_empty() {
            return Err(invalid(format!("{path}.tlsConfig.caData"), "no certificate in the PEM".to_owned()));
        }
        b = b.root_certs(RootCerts::new_with_certs(&certs));
    }
    let cert = pem_source(&path, &t.cert_file, &t.cert_data, "certFile", "certData")?;
    let key = pem_source(&path, &t.key_file, &t.key_data, "keyFile", "keyData")?;
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain: Vec<Certificate<'static>> = ureq::tls::parse_pem(&cert)
                .filter_map(|i| match i {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            let key = ureq::tls::PrivateKey::from_pem(&key)
                .map_err(|e| invalid(format!("{path}.tlsConfig.keyData"), format!("not a PEM private key: {e}")))?;
            if chain.is_empty() {
                return Err(invalid(format!("{path}.tlsConfig.certData"), "no certificate in the PEM".to_owned()));
            }
            b = b.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        (Some(_), None) => {
            return Err(invalid(
                format!("{path}.tlsConfig.keyData"),
                "Required value: a client certificate needs its key".to_owned(),
            ))
        }
        (None, Some(_)) => {
            return Err(invalid(
                format!("{path}.tlsConfig.certData"),
                "Required value: a client key needs its certificate".to_owned(),
            ))
        }
        (None, None) => {}
    }
    // Upstream: HTTPS without a CA does not verify the server.
    let insecure = t.insecure || (cfg.enable_https && ca.is_none());
    Ok(b.disable_verification(insecure).build())
}

impl HttpExtender {
    pub fn new(cfg: &ExtenderConfig) -> Result<HttpExtender, ConfigError> {
        let agent_cfg = ureq::Agent::config_builder()
            .timeout_global(Some(cfg.http_timeout))
            .http_status_as_error(false)
            .proxy(None)
            .tls_config(tls_config(cfg)?)
            .build();
        Ok(HttpExtender {
            url_prefix: cfg.url_prefix.clone(),
            filter_verb: cfg.filter_verb.clone(),
            prioritize_verb: cfg.prioritize_verb.clone(),
            preempt_verb: cfg.preempt_verb.clone(),
            bind_verb: cfg.bind_verb.clone(),
            weight: cfg.weight,
            node_cache_capable: cfg.node_cache_capable,
            managed: cfg.managed_resources.iter().map(|r| Sym::new(&r.name)).collect(),
            ignorable: cfg.ignorable,
            agent: ureq::Agent::new_with_config(agent_cfg),
        })
    }

    fn error(&self, verb: Verb, cause: impl Into<String>) -> ExtenderError {
        ExtenderError { extender: self.url_prefix.clone(), verb, cause: cause.into() }
    }

    /// POSTs `args` to `urlPrefix/action` and decodes the answer.
    fn send<A: Serialize, R: DeserializeOwned>(&self, verb: Verb, action: &str, args: &A) -> Result<R, ExtenderError> {
        let url = format!("{}/{action}", self.url_prefix.trim_end_matches('/'));
        let body = serde_json::to_vec(args).map_err(|e| self.error(verb, format!("encoding the request: {e}")))?;
        let mut resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&body[..])
            .map_err(|e| self.error(verb, format!("POST {url}: {e}")))?;
        let status = resp.status().as_u16();
        if status != 200 {
            return Err(self.error(verb, format!("failed {action} with extender at URL {url}, code {status}")));
        }
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()
            .map_err(|e| self.error(verb, format!("reading the answer of {url}: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| self.error(verb, format!("decoding the answer of {url}: {e}")))
    }

    fn args(&self, pod: &Pod, nodes: &[&NodeInfo]) -> wire::ExtenderArgs {
        let pod = to_v1::pod(pod);
        if self.node_cache_capable {
            let names = nodes.iter().map(|n| n.name().as_str().to_owned()).collect();
            wire::ExtenderArgs { pod, nodes: None, node_names: Some(names) }
        } else {
            let items = nodes.iter().map(|n| to_v1::node(n.node())).collect();
            let list = wire::NodeList {
                kind: Some("NodeList".to_owned()),
                api_version: Some("v1".to_owned()),
                metadata: serde_json::json!({}),
                items,
            };
            wire::ExtenderArgs { pod, nodes: Some(list), node_names: None }
        }
    }
}

fn requests_any(pod: &Pod, managed: &[Sym]) -> bool {
    pod.containers
        .iter()
        .chain(&pod.init_containers)
        .any(|c| c.requests.scalar.iter().any(|(n, _)| managed.contains(&n)))
}

fn node_name_of(item: &serde_json::Value) -> Option<&str> {
    item.get("metadata")?.get("name")?.as_str()
}

impl Extender for HttpExtender {
    fn name(&self) -> &str {
        &self.url_prefix
    }

    fn is_interested(&self, pod: &Pod) -> bool {
        self.managed.is_empty() || requests_any(pod, &self.managed)
    }

    fn is_filter(&self) -> bool {
        self.filter_verb.is_some()
    }

    fn is_prioritizer(&self) -> bool {
        self.prioritize_verb.is_some()
    }

    fn supports_preemption(&self) -> bool {
        self.preempt_verb.is_some()
    }

    fn is_binder(&self) -> bool {
        self.bind_verb.is_some()
    }

    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    fn weight(&self) -> i64 {
        self.weight
    }

    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError> {
        let Some(verb) = &self.filter_verb else {
            return Ok(ExtenderFilterResult { nodes: nodes.iter().map(|n| n.name()).collect(), ..Default::default() });
        };
        let result: wire::ExtenderFilterResult = self.send(Verb::Filter, verb, &self.args(pod, nodes))?;
        if let Some(e) = result.error.filter(|e| !e.is_empty()) {
            return Err(self.error(Verb::Filter, e));
        }
        // Upstream reads NodeNames from a nodeCacheCapable extender, else Nodes; neither
        // means no node passed.
        let passed: Vec<Sym> = match (self.node_cache_capable, result.node_names, result.nodes) {
            (true, Some(names), _) => names.iter().map(|n| Sym::new(n)).collect(),
            (_, _, Some(list)) => {
                let mut names = Vec::with_capacity(list.items.len());
                for item in &list.items {
                    let name = node_name_of(item)
                        .ok_or_else(|| self.error(Verb::Filter, "a node in the answer has no metadata.name"))?;
                    names.push(Sym::new(name));
                }
                names
            }
            _ => Vec::new(),
        };
        let failed = |m: Option<wire::FailedNodesMap>| -> Vec<(Sym, String)> {
            m.unwrap_or_default().into_iter().map(|(n, why)| (Sym::new(&n), why)).collect()
        };
        Ok(ExtenderFilterResult {
            nodes: passed,
            failed: failed(result.failed_nodes),
            failed_unresolvable: failed(result.failed_and_unresolvable_nodes),
        })
    }

    fn prioritize(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Result<Vec<(Sym, i64)>, ExtenderError> {
        let Some(verb) = &self.prioritize_verb else {
            return Ok(nodes.iter().map(|n| (n.name(), 0)).collect());
        };
        let list: wire::HostPriorityList = self.send(Verb::Prioritize, verb, &self.args(pod, nodes))?;
        Ok(list.into_iter().map(|h| (Sym::new(&h.host), h.score)).collect())
    }

    fn process_preemption(
        &self,
        pod: &Pod,
        candidates: &[(Sym, ExtenderVictims)],
        snapshot: &Snapshot,
    ) -> Result<Vec<(Sym, ExtenderVictims)>, ExtenderError> {
        let Some(verb) = &self.preempt_verb else {
            return Err(self.error(Verb::Preempt, "preempt verb is not defined for extender but run with Preemption"));
        };
        let mut args = wire::ExtenderPreemptionArgs { pod: to_v1::pod(pod), ..Default::default() };
        if self.node_cache_capable {
            let meta = candidates
                .iter()
                .map(|(n, v)| {
                    let pods = v.pods.iter().map(|p| wire::MetaPod { uid: p.uid.as_str().to_owned() }).collect();
                    (n.as_str().to_owned(), wire::MetaVictims { pods, num_pdb_violations: v.num_pdb_violations })
                })
                .collect();
            args.node_name_to_meta_victims = Some(meta);
        } else {
            let full = candidates
                .iter()
                .map(|(n, v)| {
                    let pods = v.pods.iter().map(to_v1::pod).collect();
                    (n.as_str().to_owned(), wire::Victims { pods, num_pdb_violations: v.num_pdb_violations })
                })
                .collect();
            args.node_name_to_victims = Some(full);
        }
        let result: wire::ExtenderPreemptionResult = self.send(Verb::Preempt, verb, &args)?;
        let mut kept = Vec::new();
        for (node, meta) in result.node_name_to_meta_victims.unwrap_or_default() {
            let info = snapshot
                .get(Sym::new(&node))
                .ok_or_else(|| self.error(Verb::Preempt, format!("node {node:?} not found")))?;
            let mut pods = Vec::with_capacity(meta.pods.len());
            for m in &meta.pods {
                let p = info.pods().iter().find(|p| p.uid.as_str() == m.uid).ok_or_else(|| {
                    self.error(
                        Verb::Preempt,
                        format!(
                            "claims to preempt pod (UID: {}) on node: {node}, but the pod is not found on that node",
                            m.uid
                        ),
                    )
                })?;
                pods.push(p.clone());
            }
            kept.push((info.name(), ExtenderVictims { pods, num_pdb_violations: meta.num_pdb_violations }));
        }
        Ok(kept)
    }

    fn bind(&self, pod: &Pod, node: Sym) -> Result<(), ExtenderError> {
        let Some(verb) = &self.bind_verb else {
            return Err(self.error(Verb::Bind, "unexpected empty bindVerb in extender"));
        };
        let args = wire::ExtenderBindingArgs {
            pod_name: pod.name.to_string(),
            pod_namespace: pod.namespace.as_str().to_owned(),
            pod_uid: pod.uid.as_str().to_owned(),
            node: node.as_str().to_owned(),
        };
        let result: wire::ExtenderBindingResult = self.send(Verb::Bind, verb, &args)?;
        match result.error.filter(|e| !e.is_empty()) {
            Some(e) => Err(self.error(Verb::Bind, e)),
            None => Ok(()),
        }
    }
}

/// A node as v1 JSON (for tools that show what an extender is sent).
pub fn node_json(node: &Node) -> serde_json::Value {
    to_v1::node(node)
}
