//! Scheduler extenders end to end: real extender servers on 127.0.0.1 (ephemeral ports) in
//! this process, a configuration that names them, and the scheduler's cycles against the
//! in-memory cluster. Each case asserts the decision and what the server received; the fault
//! cases also that nothing is assumed twice or lost (cache and queue invariants).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use ksched_engine::api::{Node, Pod, ResourceName, ResourceName::*};
use ksched_engine::cache::Cache;
use ksched_engine::framework::extender::Verb;
use ksched_engine::scheduler::{CycleOutcome, ScheduleError};
use ksched_sim::Simulation;
use serde_json::{json, Value};

/// How a server answers one request.
enum Reply {
    Json(Value),
    Status(u16),
    Raw(&'static str),
    /// Closes the connection without answering.
    Close,
    /// Answers nothing until the test ends (the client's timeout fires first).
    Hang,
}

type Handler = dyn Fn(&str, &Value) -> Reply + Send + Sync;

/// An extender server: every request (path, JSON body) is recorded.
struct Server {
    url: String,
    log: Arc<Mutex<Vec<(String, Value)>>>,
    connections: Arc<AtomicUsize>,
    /// Dropped with the server: a hanging handler then returns.
    _release: mpsc::Sender<()>,
}

impl Server {
    fn requests(&self) -> Vec<(String, Value)> {
        self.log.lock().unwrap().clone()
    }
}

/// At most this many connections and requests per connection (bounded loops).
const MAX_CONNECTIONS: usize = 64;
const MAX_REQUESTS: usize = 256;

fn serve(handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Server {
    serve_with(Arc::new(handler), None)
}

fn serve_with(handler: Arc<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let log = Arc::new(Mutex::new(Vec::new()));
    let (release, hold) = mpsc::channel::<()>();
    let hold = Arc::new(Mutex::new(hold));
    let log2 = log.clone();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(MAX_CONNECTIONS) {
            let Ok(stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let (handler, log, hold, tls) = (handler.clone(), log2.clone(), hold.clone(), tls.clone());
            std::thread::spawn(move || match tls {
                None => connection(stream, &*handler, &log, &hold),
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    connection(rustls::StreamOwned::new(conn, stream), &*handler, &log, &hold)
                }
            });
        }
    });
    Server { url: format!("{scheme}://127.0.0.1:{port}/ext"), log, connections, _release: release }
}

/// Reads requests off one kept-alive connection and answers them.
fn connection<S: Read + Write>(
    stream: S,
    handler: &Handler,
    log: &Mutex<Vec<(String, Value)>>,
    hold: &Mutex<mpsc::Receiver<()>>,
) {
    let mut reader = BufReader::new(stream);
    for _ in 0..MAX_REQUESTS {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0;
        let mut chunked = false;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let lower = h.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                reader.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            body.resize(length, 0);
            reader.read_exact(&mut body).unwrap();
        }
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        log.lock().unwrap().push((path.clone(), value.clone()));
        let (status, text) = match handler(&path, &value) {
            Reply::Json(v) => (200, v.to_string()),
            Reply::Status(s) => (s, String::new()),
            Reply::Raw(t) => (200, t.to_owned()),
            Reply::Close => return,
            Reply::Hang => {
                let _ = hold.lock().unwrap().recv();
                return;
            }
        };
        let out = reader.get_mut();
        let head =
            format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", text.len());
        if out
            .write_all(head.as_bytes())
            .and_then(|_| out.write_all(text.as_bytes()))
            .and_then(|_| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The names of the nodes an ExtenderArgs carries (whole nodes or names).
fn sent_nodes(args: &Value) -> Vec<String> {
    let mut names: Vec<String> = match (&args["Nodes"], &args["NodeNames"]) {
        (Value::Object(list), _) => list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_owned())
            .collect(),
        (_, Value::Array(names)) => names.iter().map(|n| n.as_str().unwrap().to_owned()).collect(),
        _ => Vec::new(),
    };
    names.sort();
    names
}

fn node(name: &str, zone: &str, bad: bool) -> Node {
    let mut b = Node::builder(name).resources(2000, 4 << 30, 10).label("zone", zone);
    if bad {
        b = b.label("bad", "true");
    }
    b.build()
}

/// A simulation whose profile comes from a configuration with `extenders` (YAML list body).
fn sim(extenders: &str, nodes: Vec<Node>, running: Vec<(Pod, &str)>) -> Simulation {
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n{extenders}"
    );
    let cfg = ksched_k8s::config::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let cache = Arc::new(Cache::new(Duration::from_secs(30)));
    for n in nodes {
        cache.add_node(n).unwrap();
    }
    for (p, n) in running {
        cache.add_pod(&p.with_node(ksched_engine::api::Sym::new(n))).unwrap();
    }
    let profile = cfg.default_profile().clone();
    Simulation::new(cache, profile, cfg.queue_config(), 1)
}

fn pod(name: &str, cpu: i64) -> Pod {
    Pod::builder(name).container("i", &[(Cpu, cpu)]).build()
}

/// Creates the pod and runs one cycle for it.
fn cycle(s: &mut Simulation, p: Pod) -> CycleOutcome {
    s.cluster.create_pod(p).unwrap();
    s.scheduler.schedule_one().expect("a pod in activeQ")
}

fn scheduled_on(o: &CycleOutcome) -> Option<&str> {
    match o {
        CycleOutcome::Scheduled { decision, .. } => Some(decision.node.as_str()),
        _ => None,
    }
}

fn check_invariants(s: &Simulation) {
    let cache = s.cache.check_invariants();
    assert!(cache.is_empty(), "cache: {cache:?}");
    let queue = s.queue.check_invariants();
    assert!(queue.is_empty(), "queue: {queue:?}");
}

#[test]
fn filter_extender_fails_nodes_by_label_and_the_fit_error_counts_its_reason() {
    let server = serve(|_, args| {
        let mut names = Vec::new();
        let mut failed = serde_json::Map::new();
        for n in args["Nodes"]["items"].as_array().unwrap() {
            let name = n["metadata"]["name"].as_str().unwrap().to_owned();
            if n["metadata"]["labels"]["bad"] == "true" {
                failed.insert(name, "node(s) labelled bad".into());
            } else {
                names.push(n.clone());
            }
        }
        Reply::Json(json!({"Nodes": {"items": names}, "FailedNodes": failed, "Error": ""}))
    });
    let cfg = format!("- urlPrefix: {}\n  filterVerb: filter\n", server.url);
    let mut s = sim(&cfg, vec![node("n1", "a", true), node("n2", "a", false), node("n3", "b", true)], vec![]);
    let o = cycle(&mut s, pod("web", 100));
    assert_eq!(scheduled_on(&o), Some("n2"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].0, "/ext/filter");
    assert_eq!(sent_nodes(&reqs[0].1), ["n1", "n2", "n3"]);
    assert_eq!(reqs[0].1["Pod"]["metadata"]["name"], "web");
    assert_eq!(reqs[0].1["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "100m");
    assert_eq!(reqs[0].1["NodeNames"], Value::Null);

    // n2 is now too full: the plugins leave n1 and n3, which the extender fails.
    let o = cycle(&mut s, pod("big", 1950));
    let CycleOutcome::Unschedulable { error: ScheduleError::Unschedulable(fit), .. } = &o else { panic!("{o:?}") };
    let text = fit.to_string();
    assert!(text.starts_with("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) labelled bad."), "{text}");
    assert_eq!(sent_nodes(&server.requests()[1].1), ["n1", "n3"]);
    check_invariants(&s);
}

#[test]
fn unresolvable_extender_failures_are_skipped_by_preemption() {
    // n1 fits the pod but the extender fails it. As Unschedulable, preemption dry-runs n1
    // (and finds no lower-priority pod to evict); as unresolvable, it does not try n1 at all.
    let cases = [
        ("FailedNodes", "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
        (
            "FailedAndUnresolvableNodes",
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
    ];
    for (field, want) in cases {
        let server = serve(move |_, _| Reply::Json(json!({"NodeNames": [], field: {"n1": "reserved for batch"}})));
        let cfg = format!("- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n", server.url);
        let mut s = sim(&cfg, vec![node("n1", "a", false)], vec![]);
        let high = Pod::builder("high").container("i", &[(Cpu, 1500)]).priority(10).build();
        let o = cycle(&mut s, high);
        let CycleOutcome::Unschedulable { preemption: None, error, .. } = &o else { panic!("{o:?}") };
        let text = error.to_string();
        assert!(text.starts_with("0/1 nodes are available: 1 reserved for batch."), "{field}: {text}");
        assert!(text.ends_with(want), "{field}: {text}");
        assert_eq!(sent_nodes(&server.requests()[0].1), ["n1"], "{field}");
        check_invariants(&s);
    }
}

#[test]
fn prioritize_extender_prefers_a_zone_scaled_and_weighted() {
    let server = serve(|_, args| {
        let zone_b = ["n3", "n4"];
        let list: Vec<Value> = sent_nodes(args)
            .iter()
            .map(|n| json!({"Host": n, "Score": if zone_b.contains(&n.as_str()) { 10 } else { 0 }}))
            .collect();
        Reply::Json(Value::Array(list))
    });
    let cfg =
        format!("- urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: 2\n  nodeCacheCapable: true\n", server.url);
    let nodes = vec![node("n1", "a", false), node("n2", "a", false), node("n3", "b", false), node("n4", "b", false)];
    let mut s = sim(&cfg, nodes, vec![]);
    s.scheduler.record_extender_calls(true);
    for i in 0..4 {
        let o = cycle(&mut s, pod(&format!("p{i}"), 100));
        let on = scheduled_on(&o).unwrap();
        assert!(on == "n3" || on == "n4", "p{i} went to {on}");
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[0].0, "/ext/prioritize");
    assert_eq!(reqs[0].1["Nodes"], Value::Null);
    assert_eq!(sent_nodes(&reqs[0].1), ["n1", "n2", "n3", "n4"]);
    let trace = s.scheduler.take_extender_trace();
    let row = &trace.rows[0];
    assert_eq!(row.verb, Verb::Prioritize);
    let n3 = row.scores.iter().find(|(n, _, _)| n.as_str() == "n3").unwrap();
    assert_eq!((n3.1, n3.2), (10, 200), "raw 10 × (100 / 10) × weight 2");
    check_invariants(&s);
}

#[test]
fn preempt_extender_vetoes_a_victim_and_the_pick_avoids_its_node() {
    // Both nodes hold two low-priority pods; "precious" may not be evicted, so the extender
    // drops its node from the candidates.
    let server = serve(|_, args| {
        let mut kept = serde_json::Map::new();
        for (node, v) in args["NodeNameToMetaVictims"].as_object().unwrap() {
            if !v["Pods"].as_array().unwrap().iter().any(|p| p["UID"] == "default/precious") {
                kept.insert(node.clone(), v.clone());
            }
        }
        Reply::Json(json!({"NodeNameToMetaVictims": kept}))
    });
    let cfg = format!("- urlPrefix: {}\n  preemptVerb: preempt\n  nodeCacheCapable: true\n", server.url);
    let running =
        vec![(pod("precious", 1000), "n1"), (pod("a", 1000), "n1"), (pod("b", 900), "n2"), (pod("c", 900), "n2")];
    let mut s = sim(&cfg, vec![node("n1", "a", false), node("n2", "a", false)], running);
    s.scheduler.record_extender_calls(true);
    let high = Pod::builder("high").container("i", &[(Cpu, 2000)]).priority(10).build();
    let o = cycle(&mut s, high);
    let CycleOutcome::Unschedulable { preemption: Some(p), .. } = &o else { panic!("{o:?}") };
    assert_eq!(p.node.as_str(), "n2");
    let mut victims: Vec<&str> = p.victims.iter().map(|v| &*v.name).collect();
    victims.sort();
    assert_eq!(victims, ["b", "c"]);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].0, "/ext/preempt");
    assert_eq!(reqs[0].1["Pod"]["metadata"]["name"], "high");
    let sent: Vec<&String> = reqs[0].1["NodeNameToMetaVictims"].as_object().unwrap().keys().collect();
    assert_eq!(sent, ["n1", "n2"]);
    let trace = s.scheduler.take_extender_trace();
    let row = trace.rows.iter().find(|r| r.verb == Verb::Preempt).unwrap();
    assert_eq!(row.dropped_nodes.iter().map(|n| n.as_str()).collect::<Vec<_>>(), ["n1"]);
    check_invariants(&s);
}

#[test]
fn binder_extender_binds_and_its_failure_unwinds_the_assume() {
    let fail = Arc::new(Mutex::new(false));
    let f = fail.clone();
    let server = serve(move |_, _| {
        let error = if *f.lock().unwrap() { "the binder is down" } else { "" };
        Reply::Json(json!({"Error": error}))
    });
    let cfg = format!("- urlPrefix: {}\n  bindVerb: bind\n", server.url);
    let mut s = sim(&cfg, vec![node("n1", "a", false)], vec![]);
    let o = cycle(&mut s, pod("web", 100));
    assert_eq!(scheduled_on(&o), Some("n1"));
    let reqs = server.requests();
    assert_eq!(reqs[0].0, "/ext/bind");
    assert_eq!(reqs[0].1, json!({"PodName": "web", "PodNamespace": "default", "PodUID": "default/web", "Node": "n1"}));

    *fail.lock().unwrap() = true;
    let p = pod("api", 100);
    let o = cycle(&mut s, p.clone());
    let CycleOutcome::BindFailed { error, .. } = &o else { panic!("{o:?}") };
    assert!(error.contains(&server.url) && error.contains("bind") && error.contains("the binder is down"), "{error}");
    assert!(!s.cache.is_assumed(&p.with_node(ksched_engine::api::Sym::new("n1"))));
    assert!(s.queue.location(&p.uid).is_some(), "the pod waits for another try");
    check_invariants(&s);
}

#[test]
fn managed_resource_extender_sees_only_pods_requesting_it() {
    let server = serve(|_, _| Reply::Json(json!({"NodeNames": [], "FailedNodes": {"n1": "no foo left"}})));
    let cfg = format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n  managedResources:\n  - name: example.com/foo\n    ignoredByScheduler: true\n",
        server.url
    );
    let mut s = sim(&cfg, vec![node("n1", "a", false)], vec![]);
    assert_eq!(scheduled_on(&cycle(&mut s, pod("plain", 100))), Some("n1"));
    assert!(server.requests().is_empty(), "a pod without example.com/foo is not sent");
    let foo = Pod::builder("foo").container("i", &[(Cpu, 100), (ResourceName::parse("example.com/foo"), 1)]).build();
    let o = cycle(&mut s, foo);
    let CycleOutcome::Unschedulable { error, .. } = &o else { panic!("{o:?}") };
    assert!(error.to_string().contains("1 no foo left"), "{error}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].1["Pod"]["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"], "1");
    check_invariants(&s);
}

#[test]
fn https_extender_with_a_generated_certificate_filters() {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .unwrap();
    let server = serve_with(
        Arc::new(|_: &str, args: &Value| {
            let names: Vec<String> = sent_nodes(args).into_iter().filter(|n| n != "n1").collect();
            Reply::Json(json!({"NodeNames": names}))
        }),
        Some(Arc::new(tls)),
    );
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(cert.pem());
    let cfg = format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n  enableHTTPS: true\n  tlsConfig:\n    caData: {ca}\n",
        server.url
    );
    let mut s = sim(&cfg, vec![node("n1", "a", false), node("n2", "a", false)], vec![]);
    assert_eq!(scheduled_on(&cycle(&mut s, pod("web", 100))), Some("n2"));
    assert_eq!(server.requests().len(), 1);

    // Another CA: the server's certificate is refused and the pod's cycle fails.
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let wrong = base64::engine::general_purpose::STANDARD.encode(other.cert.pem());
    let cfg = cfg.replace(&ca, &wrong);
    let mut s = sim(&cfg, vec![node("n1", "a", false), node("n2", "a", false)], vec![]);
    let o = cycle(&mut s, pod("web", 100));
    let CycleOutcome::Unschedulable { error: ScheduleError::Extender(e), .. } = &o else { panic!("{o:?}") };
    assert!(e.contains("filter"), "{e}");
    check_invariants(&s);
}

#[test]
fn failing_extenders_fail_the_cycle_or_are_skipped_when_ignorable() {
    // (case, the server's answer, the client's timeout, what the error names). Only the
    // timeout case has a short timeout: the others answer at once, and a loaded machine must
    // not turn their answer into a timeout, so they allow a minute.
    type Case = (&'static str, fn() -> Reply, &'static str, &'static str);
    let cases: [Case; 5] = [
        ("timeout", || Reply::Hang, "300ms", "timeout"),
        ("http 500", || Reply::Status(500), "60s", "code 500"),
        ("malformed json", || Reply::Raw("{\"NodeNames\": [oops"), "60s", "decoding the answer"),
        ("error field", || Reply::Json(json!({"Error": "quota exhausted"})), "60s", "quota exhausted"),
        ("closed connection", || Reply::Close, "60s", "disconnected"),
    ];
    for (name, reply, timeout, cause) in cases {
        for ignorable in [false, true] {
            let server = serve(move |_, _| reply());
            let cfg = format!(
                "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n  httpTimeout: {timeout}\n  ignorable: {ignorable}\n",
                server.url
            );
            let mut s = sim(&cfg, vec![node("n1", "a", false)], vec![]);
            let p = pod("web", 100);
            let o = cycle(&mut s, p.clone());
            let what = format!("{name}, ignorable {ignorable}");
            if ignorable {
                assert_eq!(scheduled_on(&o), Some("n1"), "{what}: {o:?}");
            } else {
                let CycleOutcome::Unschedulable { error: ScheduleError::Extender(e), .. } = &o else {
                    panic!("{what}: {o:?}")
                };
                let want = format!("extender {:?} filter: ", server.url);
                assert!(e.starts_with(&want), "{what}: {e}");
                assert!(e.to_lowercase().contains(cause), "{what}: {e} lacks {cause:?}");
                assert!(s.queue.location(&p.uid).is_some(), "{what}: the pod is retried");
                assert!(!s.cache.is_assumed(&p.with_node(ksched_engine::api::Sym::new("n1"))), "{what}");
            }
            assert_eq!(server.requests().len(), 1, "{what}");
            check_invariants(&s);
        }
    }
}

#[test]
fn prioritize_errors_are_ignored() {
    let server = serve(|_, _| Reply::Status(503));
    let cfg = format!("- urlPrefix: {}\n  prioritizeVerb: prioritize\n  weight: 1\n", server.url);
    let mut s = sim(&cfg, vec![node("n1", "a", false), node("n2", "b", false)], vec![]);
    assert!(scheduled_on(&cycle(&mut s, pod("web", 100))).is_some());
    assert_eq!(server.requests().len(), 1);
    check_invariants(&s);
}

#[test]
fn connections_are_reused_between_calls() {
    let server = serve(|_, args| Reply::Json(json!({"NodeNames": sent_nodes(args)})));
    let cfg = format!("- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n", server.url);
    let mut s = sim(&cfg, vec![node("n1", "a", false)], vec![]);
    for i in 0..5 {
        assert_eq!(scheduled_on(&cycle(&mut s, pod(&format!("p{i}"), 10))), Some("n1"));
    }
    assert_eq!(server.requests().len(), 5);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1, "one kept-alive connection served all five");
}
