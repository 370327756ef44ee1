//! What `ksched explain TARGET` names, with kubectl's habits: `POD`, `NAMESPACE/POD`,
//! `KIND/NAME` (kubectl's kind names, plurals and short names: `deploy/web`, `sts/db`,
//! `ds/agent`, `job/x`, `cj/nightly`, `rs/web-7d9f`, `po/web-0`), a name prefix (`web` when
//! no pod is named exactly that: every pod whose name starts with it, as `kubectl describe`
//! matches), `-n/--namespace`. A name that matches nothing is an error listing the closest
//! names (generated pod names change with `--seed`).
//!
//! A target resolves to one pod (explained cycle by cycle) or to a selection of pods (a
//! controller's, or a prefix's), listed with their outcomes.

use crate::load::PendingPod;
use ksched_engine::api::Pod;
use ksched_k8s::manifest::Manifests;

/// The kinds `KIND/NAME` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    ReplicationController,
}

/// Each kind with the words kubectl accepts for it: singular, plural, short name.
const KIND_WORDS: [(Kind, &[&str]); 8] = [
    (Kind::Pod, &["pod", "pods", "po"]),
    (Kind::Deployment, &["deployment", "deployments", "deploy"]),
    (Kind::ReplicaSet, &["replicaset", "replicasets", "rs"]),
    (Kind::StatefulSet, &["statefulset", "statefulsets", "sts"]),
    (Kind::DaemonSet, &["daemonset", "daemonsets", "ds"]),
    (Kind::Job, &["job", "jobs"]),
    (Kind::CronJob, &["cronjob", "cronjobs", "cj"]),
    (Kind::ReplicationController, &["replicationcontroller", "replicationcontrollers", "rc"]),
];

impl Kind {
    /// kubectl's words for a kind, with or without its API group (`deployments.apps`,
    /// `jobs.batch`), any case.
    pub fn parse(word: &str) -> Option<Kind> {
        let word = word.to_ascii_lowercase();
        let (base, group) = word.split_once('.').unwrap_or((&word, ""));
        let kind = KIND_WORDS.iter().find(|(_, words)| words.contains(&base)).map(|(k, _)| *k)?;
        let group_ok = match kind {
            _ if group.is_empty() => true,
            Kind::Pod | Kind::ReplicationController => false,
            Kind::Job | Kind::CronJob => group == "batch",
            _ => group == "apps",
        };
        group_ok.then_some(kind)
    }

    /// The object kind (`Deployment`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Deployment => "Deployment",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::DaemonSet => "DaemonSet",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
            Kind::ReplicationController => "ReplicationController",
        }
    }

    /// kubectl's singular resource name (`deployment`), as `KIND/NAME` is written back.
    pub fn word(self) -> &'static str {
        KIND_WORDS.iter().find(|(k, _)| *k == self).map_or("pod", |(_, w)| w[0])
    }

    fn of_object(kind: &str) -> Option<Kind> {
        KIND_WORDS.iter().map(|(k, _)| *k).find(|k| k.name() == kind)
    }
}

/// A parsed `TARGET` (with `-n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `None`: a bare pod name (a prefix too); `Some(Kind::Pod)`: `pod/NAME`, exact.
    pub kind: Option<Kind>,
    pub namespace: Option<String>,
    pub name: String,
}

impl Target {
    /// `POD`, `NAMESPACE/POD` or `KIND/NAME`; `namespace` is `-n`'s. A kind word before the
    /// slash wins over a namespace of that name (say `-n job POD` for that namespace).
    pub fn parse(text: &str, namespace: Option<&str>) -> Result<Target, String> {
        let namespace = namespace.map(str::to_owned);
        let Some((first, rest)) = text.split_once('/') else {
            if text.is_empty() {
                return Err("the target is empty: say POD, NAMESPACE/POD or KIND/NAME".into());
            }
            return Ok(Target { kind: None, namespace, name: text.to_owned() });
        };
        if rest.is_empty() || rest.contains('/') || first.is_empty() {
            return Err(format!("{text:?} is not POD, NAMESPACE/POD or KIND/NAME"));
        }
        if let Some(kind) = Kind::parse(first) {
            return Ok(Target { kind: Some(kind), namespace, name: rest.to_owned() });
        }
        match namespace {
            Some(ns) if ns != first => Err(format!(
                "{text:?} names namespace {first:?} but -n says {ns:?} ({first:?} is no kind: {})",
                kind_words()
            )),
            _ => Ok(Target { kind: None, namespace: Some(first.to_owned()), name: rest.to_owned() }),
        }
    }

    /// The command line's words: `TARGET`, or kubectl's `KIND NAME` (`explain deploy web`).
    pub fn from_args(first: &str, name: Option<&str>, namespace: Option<&str>) -> Result<Target, String> {
        let Some(name) = name else { return Target::parse(first, namespace) };
        if Kind::parse(first).is_none() || first.contains('/') {
            return Err(format!("with two words, the first is a kind ({}), not {first:?}", kind_words()));
        }
        Target::parse(&format!("{first}/{name}"), namespace)
    }

    fn in_namespace(&self, ns: &str) -> bool {
        self.namespace.as_deref().is_none_or(|n| n == ns)
    }
}

/// The accepted kind words, for messages.
fn kind_words() -> String {
    let words: Vec<&str> = KIND_WORDS.iter().flat_map(|(_, w)| w.iter().copied()).collect();
    words.join(", ")
}

/// Which pods a listing shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// The pods of a controller: owned by it (a Deployment's through its ReplicaSets
    /// `<name>-<hash>`, a CronJob's through its Jobs `<name>-<minutes>`).
    Controller { kind: Kind, namespace: String, name: String },
    /// Pods whose names start with this, in one namespace or all.
    Prefix { namespace: Option<String>, prefix: String },
}

impl Selector {
    /// Whether a pod (namespace, name, its controller owner `(kind, name)`) is selected.
    pub fn matches(&self, namespace: &str, name: &str, owner: Option<(&str, &str)>) -> bool {
        match self {
            Selector::Prefix { namespace: ns, prefix } => {
                ns.as_deref().is_none_or(|n| n == namespace) && name.starts_with(prefix.as_str())
            }
            Selector::Controller { kind, namespace: ns, name: controller } => {
                let Some((owner_kind, owner_name)) = owner else { return false };
                if ns != namespace {
                    return false;
                }
                // A generated child's name: `<controller>-<suffix>`, the suffix one word
                // (a template hash, a Job's scheduled minute).
                let child_of = |suffix_ok: fn(&str) -> bool| {
                    owner_name
                        .strip_prefix(controller.as_str())
                        .and_then(|r| r.strip_prefix('-'))
                        .is_some_and(|s| !s.is_empty() && suffix_ok(s))
                };
                match kind {
                    Kind::Pod => false,
                    Kind::Deployment => {
                        owner_kind == "ReplicaSet" && child_of(|s| s.chars().all(|c| c.is_ascii_alphanumeric()))
                    }
                    Kind::CronJob => owner_kind == "Job" && child_of(|s| s.chars().all(|c| c.is_ascii_digit())),
                    k => owner_kind == k.name() && owner_name == controller,
                }
            }
        }
    }

    /// How a listing is titled: `deployment default/web`, `pods named web*`.
    pub fn title(&self) -> String {
        match self {
            Selector::Controller { kind, namespace, name } => format!("{} {namespace}/{name}", kind.word()),
            Selector::Prefix { namespace: Some(ns), prefix } => format!("pods named {prefix}* in namespace {ns}"),
            Selector::Prefix { namespace: None, prefix } => format!("pods named {prefix}*"),
        }
    }
}

/// What a target resolved to.
#[derive(Debug)]
pub enum Resolved<'a> {
    /// One pending pod (`prefix`: matched by a name prefix, not exactly).
    Pod { pod: &'a Pod, prefix: bool },
    /// Several pods, or a controller's (perhaps none yet).
    Pods(Selector),
}

/// Every pod the input knows before the run: its bound pods and the pending ones (the
/// input's and those its workload controllers create at the start).
fn known_pods<'a>(m: &'a Manifests, pending: &'a [PendingPod]) -> impl Iterator<Item = &'a Pod> {
    m.bound_pods().map(|p| &p.pod).chain(pending.iter().map(|p| &p.pod))
}

fn owner_of(p: &Pod) -> Option<(&str, &str)> {
    p.owner.as_ref().map(|o| (o.kind.as_str(), o.name.as_str()))
}

/// Resolves `target` against the input's pods and workload controllers.
pub fn resolve<'a>(m: &'a Manifests, pending: &'a [PendingPod], target: &Target) -> Result<Resolved<'a>, String> {
    match target.kind {
        None | Some(Kind::Pod) => resolve_pod(m, pending, target),
        Some(kind) => resolve_controller(m, pending, target, kind),
    }
}

fn resolve_pod<'a>(m: &'a Manifests, pending: &'a [PendingPod], target: &Target) -> Result<Resolved<'a>, String> {
    let in_ns = |p: &&Pod| target.in_namespace(p.namespace.as_str());
    let exact: Vec<&Pod> = known_pods(m, pending).filter(in_ns).filter(|p| *p.name == *target.name).collect();
    let one = |pod: &'a Pod, prefix: bool| match pod.node_name {
        Some(node) => {
            let known = m.nodes.iter().any(|(n, _)| n.name == node);
            let left_out = if known { "" } else { "; that node is not in the input, so the run leaves the pod out" };
            Err(format!(
                "pod {} is already bound to node {node} (spec.nodeName){left_out}: nothing to explain",
                pod.key()
            ))
        }
        None => Ok(Resolved::Pod { pod, prefix }),
    };
    match exact.as_slice() {
        [p] => return one(p, false),
        [] => {}
        many => {
            let keys: Vec<String> = many.iter().map(|p| p.key()).collect();
            return Err(format!(
                "pod name {:?} is ambiguous: {}; say namespace/name or -n NAMESPACE",
                target.name,
                keys.join(", ")
            ));
        }
    }
    if target.kind.is_none() {
        let prefixed: Vec<&Pod> =
            known_pods(m, pending).filter(in_ns).filter(|p| p.name.starts_with(&*target.name)).collect();
        match prefixed.as_slice() {
            [] => {}
            [p] if p.node_name.is_none() => return one(p, true),
            _ => {
                return Ok(Resolved::Pods(Selector::Prefix {
                    namespace: target.namespace.clone(),
                    prefix: target.name.clone(),
                }))
            }
        }
    }
    let names = known_pods(m, pending).filter(in_ns).map(|p| (p.key(), p.name.to_string()));
    let near = closest(&target.name, names.chain(controller_names(m, target)));
    let whose = target.namespace.as_deref().map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
    Err(format!("pod {:?} is not in the manifests{whose}{}", target.name, near))
}

/// The input's workload controllers: (kind, namespace, name).
fn controllers(m: &Manifests) -> impl Iterator<Item = (Kind, &str, &str)> {
    m.workloads.iter().filter_map(|(w, _)| {
        let (kind, meta) = w.meta();
        let ns = meta.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
        Some((Kind::of_object(kind)?, ns, meta.name.as_deref()?))
    })
}

/// The input's controllers in `target`'s namespace, as (`KIND/NAME` to type, name).
fn controller_names<'a>(m: &'a Manifests, target: &'a Target) -> impl Iterator<Item = (String, String)> + 'a {
    controllers(m).filter(|(_, ns, _)| target.in_namespace(ns)).map(|(k, ns, name)| {
        let kind = k.word();
        let shown = if ns == "default" { format!("{kind}/{name}") } else { format!("-n {ns} {kind}/{name}") };
        (shown, name.to_owned())
    })
}

fn resolve_controller<'a>(
    m: &'a Manifests,
    pending: &'a [PendingPod],
    target: &Target,
    kind: Kind,
) -> Result<Resolved<'a>, String> {
    // The controller in the input, or the owner the input's pods name (a dump without it).
    let mut namespaces: Vec<&str> = controllers(m)
        .filter(|&(k, ns, name)| k == kind && name == target.name && target.in_namespace(ns))
        .map(|(_, ns, _)| ns)
        .collect();
    for p in known_pods(m, pending).filter(|p| target.in_namespace(p.namespace.as_str())) {
        let sel = Selector::Controller { kind, namespace: p.namespace.to_string(), name: target.name.clone() };
        if sel.matches(p.namespace.as_str(), &p.name, owner_of(p)) {
            namespaces.push(p.namespace.as_str());
        }
    }
    namespaces.sort_unstable();
    namespaces.dedup();
    match namespaces.as_slice() {
        [ns] => {
            Ok(Resolved::Pods(Selector::Controller { kind, namespace: (*ns).to_owned(), name: target.name.clone() }))
        }
        [] => {
            let whose = target.namespace.as_deref().map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
            Err(format!(
                "{} {:?} is not in the manifests{whose}, and none of their pods names it as its owner{}",
                kind.word(),
                target.name,
                closest(&target.name, controller_names(m, target))
            ))
        }
        many => Err(format!(
            "{} {:?} is in several namespaces ({}); say -n NAMESPACE",
            kind.word(),
            target.name,
            many.join(", ")
        )),
    }
}

/// `; closest names: a, b, c` — the (shown, compared) names nearest to `wanted` by edit
/// distance (a swap of two neighbouring letters counts one), at most five; empty when there
/// are none.
pub fn closest(wanted: &str, names: impl Iterator<Item = (String, String)>) -> String {
    let mut scored: Vec<(usize, String)> = names
        .map(|(shown, name)| {
            // A name that starts with what was asked (or the other way round) is nearest; then
            // the distance to the whole name, or to its start as long as what was asked plus
            // one (a mistyped start of a generated name).
            let d = if name.starts_with(wanted) || wanted.starts_with(name.as_str()) {
                0
            } else {
                let start: String = name.chars().take(wanted.chars().count()).collect();
                strsim::osa_distance(wanted, &name).min(strsim::osa_distance(wanted, &start) + 1)
            };
            (d, shown)
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let near: Vec<String> = scored.into_iter().take(5).map(|(_, s)| s).collect();
    if near.is_empty() {
        String::new()
    } else {
        format!("; closest names: {}", near.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_words_are_kubectls() {
        // (word, kind)
        let cases = [
            ("deploy", Some(Kind::Deployment)),
            ("Deployments", Some(Kind::Deployment)),
            ("deployment.apps", Some(Kind::Deployment)),
            ("deployment.batch", None),
            ("sts", Some(Kind::StatefulSet)),
            ("statefulset", Some(Kind::StatefulSet)),
            ("ds", Some(Kind::DaemonSet)),
            ("daemonsets.apps", Some(Kind::DaemonSet)),
            ("job", Some(Kind::Job)),
            ("jobs.batch", Some(Kind::Job)),
            ("cj", Some(Kind::CronJob)),
            ("cronjob", Some(Kind::CronJob)),
            ("rs", Some(Kind::ReplicaSet)),
            ("replicaset", Some(Kind::ReplicaSet)),
            ("po", Some(Kind::Pod)),
            ("pod", Some(Kind::Pod)),
            ("pods", Some(Kind::Pod)),
            ("rc", Some(Kind::ReplicationController)),
            ("svc", None),
            ("shop", None),
        ];
        for (word, want) in cases {
            assert_eq!(Kind::parse(word), want, "{word}");
        }
    }

    #[test]
    fn target_parse_tells_kinds_from_namespaces() {
        let t =
            |kind, ns: Option<&str>, name: &str| Target { kind, namespace: ns.map(String::from), name: name.into() };
        // (text, -n, parsed or the error's words)
        let cases: Vec<(&str, Option<&str>, Result<Target, &str>)> = vec![
            ("web", None, Ok(t(None, None, "web"))),
            ("web", Some("shop"), Ok(t(None, Some("shop"), "web"))),
            ("shop/web", None, Ok(t(None, Some("shop"), "web"))),
            ("shop/web", Some("shop"), Ok(t(None, Some("shop"), "web"))),
            ("deploy/web", None, Ok(t(Some(Kind::Deployment), None, "web"))),
            ("sts/db", Some("data"), Ok(t(Some(Kind::StatefulSet), Some("data"), "db"))),
            ("pod/web-0", None, Ok(t(Some(Kind::Pod), None, "web-0"))),
            ("shop/web", Some("other"), Err("-n says \"other\"")),
            ("a/b/c", None, Err("is not POD, NAMESPACE/POD or KIND/NAME")),
            ("deploy/", None, Err("is not POD")),
            ("", None, Err("the target is empty")),
        ];
        for (text, ns, want) in cases {
            // kubectl's two words are the same target.
            let words = text.split_once('/').filter(|(k, _)| Kind::parse(k).is_some());
            if let (Some((kind, name)), Ok(want)) = (words, &want) {
                assert_eq!(Target::from_args(kind, Some(name), ns).as_ref(), Ok(want), "{kind} {name}");
            }
            match (Target::parse(text, ns), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(e), Err(words)) => assert!(e.contains(words), "{text}: {e}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn target_from_two_words_needs_a_kind_first() {
        let err = Target::from_args("web", Some("x"), None).unwrap_err();
        assert!(err.contains("the first is a kind"), "{err}");
        assert!(Target::from_args("deploy/web", Some("x"), None).is_err());
        assert_eq!(Target::from_args("web", None, None).unwrap().name, "web");
    }

    #[test]
    fn selector_follows_owners_through_generated_children() {
        let deploy = Selector::Controller { kind: Kind::Deployment, namespace: "default".into(), name: "web".into() };
        let cron = Selector::Controller { kind: Kind::CronJob, namespace: "default".into(), name: "nightly".into() };
        let sts = Selector::Controller { kind: Kind::StatefulSet, namespace: "default".into(), name: "db".into() };
        let prefix = Selector::Prefix { namespace: None, prefix: "web".into() };
        // (selector, namespace, pod, owner, selected)
        type Case<'a> = (&'a Selector, &'a str, &'a str, Option<(&'a str, &'a str)>, bool);
        let cases: Vec<Case> = vec![
            (&deploy, "default", "web-7d9f-abcde", Some(("ReplicaSet", "web-7d9f")), true),
            (&deploy, "other", "web-7d9f-abcde", Some(("ReplicaSet", "web-7d9f")), false),
            (&deploy, "default", "web-api-1-x", Some(("ReplicaSet", "web-api-1")), false),
            (&deploy, "default", "web-x", Some(("StatefulSet", "web")), false),
            (&deploy, "default", "web-x", None, false),
            (&cron, "default", "nightly-2900-x", Some(("Job", "nightly-29000")), true),
            (&cron, "default", "nightly-x", Some(("Job", "nightly-abc")), false),
            (&sts, "default", "db-0", Some(("StatefulSet", "db")), true),
            (&sts, "default", "db2-0", Some(("StatefulSet", "db2")), false),
            (&prefix, "shop", "web-0", None, true),
            (&prefix, "shop", "api-0", None, false),
        ];
        for (sel, ns, pod, owner, want) in cases {
            assert_eq!(sel.matches(ns, pod, owner), want, "{sel:?} {ns}/{pod} {owner:?}");
        }
        assert_eq!(deploy.title(), "deployment default/web");
        assert_eq!(prefix.title(), "pods named web*");
    }

    #[test]
    fn closest_lists_the_nearest_names_first() {
        let names =
            ["web-7d9f-abcde", "web-7d9f-xyz12", "api-0", "db-0"].map(|n| (format!("default/{n}"), n.to_owned()));
        let got = closest("web-7d9f-abcdx", names.into_iter());
        assert!(got.starts_with("; closest names: default/web-7d9f-abcde, default/web-7d9f-xyz12, "), "{got}");
        let controllers =
            [("statefulset/db", "db"), ("deployment/web", "web")].map(|(s, n)| (s.to_owned(), n.to_owned()));
        assert_eq!(closest("wbe", controllers.into_iter()), "; closest names: deployment/web, statefulset/db");
        // A mistyped start of a generated name comes before a short name as far off.
        let pods = [("default/api", "api"), ("default/web-0", "web-0")].map(|(s, n)| (s.to_owned(), n.to_owned()));
        assert_eq!(closest("wbe", pods.into_iter()), "; closest names: default/web-0, default/api");
        assert_eq!(closest("x", std::iter::empty()), "");
    }
}
