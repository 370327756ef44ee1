use super::*;
use crate::api::{Pod, ResourceName::*};
use crate::features::{Feature, FeatureGates};

const MI: i64 = 1 << 20;
const DEF_MEM: i64 = DEFAULT_MEMORY_REQUEST;
const DEF_CPU: i64 = DEFAULT_MILLI_CPU_REQUEST;

fn list(items: &[(ResourceName, i64)]) -> ResourceList {
    ResourceList::of(items)
}

/// (cpu, memory).
type CpuMem = (i64, i64);

/// (cpu, memory) of a resource.
fn cm(r: &Resource) -> (i64, i64) {
    (r.milli_cpu, r.memory)
}

fn gates(off: &[Feature]) -> FeatureGates {
    let mut g = FeatureGates::default();
    for &f in off {
        g.set_unchecked(f, false);
    }
    g
}

/// The spec's sum, one rule per row: (description, pod, want (cpu, memory)).
#[test]
fn spec_requests_table() {
    let cases: Vec<(&str, Pod, (i64, i64))> = vec![
        (
            "app containers are summed",
            Pod::builder("p").container("a", &[(Cpu, 100), (Memory, 10)]).container("a", &[(Cpu, 200)]).build(),
            (300, 10),
        ),
        (
            "an init container larger than the sum wins, per resource",
            Pod::builder("p")
                .container("a", &[(Cpu, 100), (Memory, 50)])
                .init_container("i", &[(Cpu, 500), (Memory, 10)], false)
                .build(),
            (500, 50),
        ),
        (
            "a sidecar adds to the sum and to the init containers after it",
            Pod::builder("p")
                .init_container("s", &[(Cpu, 100)], true)
                .init_container("i", &[(Cpu, 250)], false)
                .container("a", &[(Cpu, 100)])
                .build(),
            (350, 0),
        ),
        (
            "an init container before a sidecar does not carry it",
            Pod::builder("p")
                .init_container("i", &[(Cpu, 300)], false)
                .init_container("s", &[(Cpu, 100)], true)
                .container("a", &[(Cpu, 100)])
                .build(),
            (300, 0),
        ),
        (
            "pod-level requests replace the sum for what they name",
            Pod::builder("p")
                .container("a", &[(Cpu, 500), (Memory, 64 * MI)])
                .pod_level_requests(list(&[(Cpu, 1500)]))
                .build(),
            (1500, 64 * MI),
        ),
        (
            "pod-level requests are the pod's need even below an init container",
            Pod::builder("p")
                .init_container("i", &[(Cpu, 4000)], false)
                .container("a", &[(Cpu, 100)])
                .pod_level_requests(list(&[(Cpu, 1000), (Memory, 2 * MI)]))
                .build(),
            (1000, 2 * MI),
        ),
        (
            "overhead is added after pod-level requests",
            Pod::builder("p")
                .container("a", &[(Cpu, 100)])
                .pod_level_requests(list(&[(Cpu, 1000)]))
                .overhead(Resource::default().with(Cpu, 250).with(Memory, 160 * MI))
                .build(),
            (1250, 160 * MI),
        ),
        ("nothing requested", Pod::builder("p").container("a", &[]).build(), (0, 0)),
    ];
    for (desc, pod, want) in cases {
        assert_eq!(cm(pod.requests()), want, "{desc}");
        assert_eq!(cm(pod.accounted_requests()), want, "{desc}: no status, a node counts the same");
    }
}

#[test]
fn pod_level_requests_follow_the_gate_and_keep_only_supported_resources() {
    let hp = Scalar(Sym::new("hugepages-2Mi"));
    let gpu = Scalar(Sym::new("nvidia.com/gpu"));
    let build = |g: FeatureGates| {
        Pod::builder("p")
            .container("a", &[(Cpu, 100), (gpu, 1), (hp, 4 * MI)])
            .pod_level_requests(list(&[(Cpu, 900), (gpu, 5), (hp, 8 * MI), (EphemeralStorage, 7)]))
            .feature_gates(g)
            .build()
    };
    let on = build(FeatureGates::default());
    assert_eq!((on.requests().milli_cpu, on.requests().get(gpu), on.requests().get(hp)), (900, 1, 8 * MI));
    assert_eq!(on.requests().ephemeral_storage, 0, "ephemeral storage cannot be a pod-level request");
    let off = build(gates(&[Feature::PodLevelResources]));
    assert_eq!((off.requests().milli_cpu, off.requests().get(gpu), off.requests().get(hp)), (100, 1, 4 * MI));
}

/// A container named `name` with these requests.
fn named(name: &str, items: &[(ResourceName, i64)]) -> Container {
    let l = list(items);
    Container {
        name: Sym::new(name),
        requests: l.amounts,
        has_cpu_request: l.has_cpu,
        has_memory_request: l.has_memory,
        ..Container::default()
    }
}

/// The in-place resize rule for a pod on a node: (description, pod, want accounted (cpu,
/// memory), want the filter's (cpu, memory): the spec's alone).
#[test]
fn resize_status_table() {
    let base = || Pod::builder("p").container_spec(named("main", &[(Cpu, 1000), (Memory, 100 * MI)]));
    let spec = (1000, 100 * MI);
    let cases: Vec<(&str, Pod, CpuMem, CpuMem)> = vec![
        (
            "resized up and allocated: the larger counts",
            base()
                .container_status("main", Some(list(&[(Cpu, 1500)])), Some(list(&[(Cpu, 1200), (Memory, 100 * MI)])))
                .build(),
            (1500, 100 * MI),
            spec,
        ),
        (
            "spec larger than status (resize pending): the spec counts",
            base()
                .container_status("main", Some(list(&[(Cpu, 500)])), Some(list(&[(Cpu, 500), (Memory, 50 * MI)])))
                .build(),
            spec,
            spec,
        ),
        (
            "Infeasible: status only, the spec ignored",
            base()
                .container_status("main", Some(list(&[(Cpu, 500)])), Some(list(&[(Cpu, 600), (Memory, 50 * MI)])))
                .resize_infeasible()
                .build(),
            (600, 50 * MI),
            spec,
        ),
        (
            "an entry without resources changes nothing",
            base().container_status("main", Some(list(&[(Cpu, 4000)])), None).build(),
            spec,
            spec,
        ),
        (
            "an entry for another container changes nothing",
            base().container_status("other", Some(list(&[(Cpu, 4000)])), Some(list(&[(Cpu, 4000)]))).build(),
            spec,
            spec,
        ),
        (
            "a regular init container's entry changes nothing",
            base()
                .init_container_spec(named("init", &[(Cpu, 2000), (Memory, 0)]))
                .container_status("init", Some(list(&[(Cpu, 3000)])), Some(list(&[(Cpu, 3000)])))
                .build(),
            (2000, 100 * MI),
            (2000, 100 * MI),
        ),
        (
            "a sidecar's entry counts",
            base()
                .init_container_spec(Container { restartable: true, ..named("side", &[(Cpu, 100), (Memory, 0)]) })
                .container_status("side", Some(list(&[(Cpu, 300)])), Some(list(&[(Cpu, 300), (Memory, 0)])))
                .build(),
            (1300, 100 * MI),
            (1100, 100 * MI),
        ),
        (
            "pod-level requests replace the resized sum",
            base()
                .pod_level_requests(list(&[(Cpu, 2000)]))
                .container_status("main", Some(list(&[(Cpu, 3000)])), Some(list(&[(Cpu, 3000)])))
                .build(),
            (2000, 100 * MI),
            (2000, 100 * MI),
        ),
    ];
    for (desc, pod, accounted, filter) in cases {
        assert_eq!(cm(pod.accounted_requests()), accounted, "{desc}");
        assert_eq!(cm(pod.requests()), filter, "{desc}: the filter reads the spec");
        // NodeResourcesFit's scores read the containers' specs (no status, no pod level).
        let nz = pod.non_zero_requests();
        let spec_only = if desc.starts_with("pod-level") { spec } else { filter };
        assert_eq!((nz.milli_cpu, nz.memory), spec_only, "{desc}: every container names cpu and memory");
    }
}

#[test]
fn pod_level_status_counts_only_with_its_gate() {
    let build = |g: FeatureGates| {
        Pod::builder("p")
            .container("a", &[(Cpu, 100)])
            .pod_level_requests(list(&[(Cpu, 1000)]))
            .pod_resource_status(Some(list(&[(Cpu, 1500)])), Some(list(&[(Cpu, 1200)])))
            .feature_gates(g)
            .build()
    };
    assert_eq!(build(FeatureGates::default()).accounted_requests().milli_cpu, 1000, "alpha gate off");
    let mut on = FeatureGates::default();
    on.set_unchecked(Feature::InPlacePodLevelResourcesVerticalScaling, true);
    assert_eq!(build(on).accounted_requests().milli_cpu, 1500);
    assert_eq!(build(on).requests().milli_cpu, 1000, "the filter reads the spec");
}

/// Scoring's defaults: (description, pod, want non-zero (cpu, memory) for the pod being scored,
/// want what a node counts).
#[test]
fn scoring_defaults_table() {
    let cases: Vec<(&str, Pod, CpuMem, CpuMem)> = vec![
        (
            "unnamed requests count the defaults, per container",
            Pod::builder("p").container("a", &[]).container("a", &[(Cpu, 300)]).build(),
            (DEF_CPU + 300, 2 * DEF_MEM),
            (DEF_CPU + 300, 2 * DEF_MEM),
        ),
        (
            "a named 0 is not defaulted",
            Pod::builder("p").container("a", &[(Cpu, 0), (Memory, 0)]).build(),
            (0, 0),
            (0, 0),
        ),
        (
            "init containers are defaulted too",
            Pod::builder("p").init_container("i", &[], false).container("a", &[(Cpu, 50), (Memory, MI)]).build(),
            (DEF_CPU, DEF_MEM),
            (DEF_CPU, DEF_MEM),
        ),
        (
            "pod-level cpu: the pod being scored is its containers with the defaults; a node counts the pod level",
            Pod::builder("p")
                .container("a", &[(Memory, 10 * MI)])
                .container("a", &[])
                .pod_level_requests(list(&[(Cpu, 700)]))
                .build(),
            (2 * DEF_CPU, 10 * MI + DEF_MEM),
            (700, 10 * MI),
        ),
        (
            "pod-level cpu, nothing names memory: a node counts the default once per container",
            Pod::builder("p").container("a", &[]).container("a", &[]).pod_level_requests(list(&[(Cpu, 700)])).build(),
            (2 * DEF_CPU, 2 * DEF_MEM),
            (700, 2 * DEF_MEM),
        ),
        (
            "pod-level cpu and an overhead naming memory: no memory default on a node",
            Pod::builder("p")
                .container("a", &[])
                .pod_level_requests(list(&[(Cpu, 700)]))
                .overhead(Resource::default().with(Memory, 160 * MI))
                .build(),
            (DEF_CPU, DEF_MEM + 160 * MI),
            (700, 160 * MI),
        ),
    ];
    for (desc, pod, scored, node) in cases {
        assert_eq!(cm(pod.non_zero_requests()), scored, "{desc}");
        assert_eq!(pod.accounted_non_zero(), node, "{desc}");
    }
}

#[test]
fn aggregate_container_requests_is_the_spec_sum_without_pod_level_or_overhead() {
    let pod = Pod::builder("p")
        .init_container("s", &[(Cpu, 100)], true)
        .init_container("i", &[(Memory, 8 * MI)], false)
        .container("a", &[(Cpu, 200)])
        .build();
    let agg = aggregate_container_requests(&pod.containers, &pod.init_containers);
    assert_eq!((cm(&agg.amounts), agg.has_cpu, agg.has_memory), ((300, 8 * MI), true, true));
}
