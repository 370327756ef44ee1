use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::funcs::FUNCTIONS;
use super::template::{go_float, render, TValue};
use super::*;

const FILE: &str = "/cfg/performance-config.yaml";

/// A one-test-case file with `ops` as its template and one workload with `params`.
fn file_with(ops: &str, params: &str) -> String {
    format!("- name: Case\n  workloadTemplate:\n{ops}  workloads:\n  - name: W\n    params: {{{params}}}\n")
}

fn load(text: &str) -> Result<WorkloadFile, WorkloadError> {
    parse(text, Path::new(FILE))
}

fn resolve_first(text: &str) -> Result<Vec<ResolvedOp>, WorkloadError> {
    let f = load(text)?;
    let tc = &f.test_cases[0];
    tc.resolve(&tc.workloads[0], &LoadOptions { max_count: 1000 })
}

const MEASURE: &str = "  - opcode: createPods\n    count: 1\n    collectMetrics: true\n";

/// (name, file text, want test case, want op, want field, message contains)
type ErrorCase =
    (&'static str, String, Option<&'static str>, Option<(usize, &'static str)>, &'static str, &'static str);

#[test]
fn parse_errors_name_file_case_workload_op_and_field() {
    let cases: Vec<ErrorCase> = vec![
        ("not a list", "name: x\n".into(), None, None, "", "list of test cases"),
        ("empty list", "[]\n".into(), None, None, "", "no test cases"),
        ("bad yaml", "- name: [\n".into(), None, None, "", "not valid YAML"),
        (
            "unknown test case field",
            format!("- name: Case\n  bogus: 1\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n"),
            Some("Case"),
            None,
            "bogus",
            "unknown field",
        ),
        (
            "unknown op field",
            file_with(&format!("  - opcode: createNodes\n    count: 1\n    nodeCount: 3\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "createNodes")),
            "nodeCount",
            "unknown field",
        ),
        ("unknown opcode", file_with(&format!("  - opcode: makeCoffee\n{MEASURE}"), ""), Some("Case"), Some((0, "makeCoffee")), "opcode", "unknown opcode"),
        ("missing opcode", file_with(&format!("  - count: 3\n{MEASURE}"), ""), Some("Case"), Some((0, "?")), "opcode", "missing"),
        (
            "updateAny without a template",
            file_with(&format!("  - opcode: updateAny\n    count: 1\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "updateAny")),
            "templatePath",
            "must be set",
        ),
        (
            "updateAny at a negative rate",
            file_with(&format!("  - opcode: updateAny\n    templatePath: n.yaml\n    updatePerSecond: -1\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "updateAny")),
            "updatePerSecond",
            "negative",
        ),
        (
            "negative count",
            file_with(&format!("{MEASURE}  - opcode: createNodes\n    count: -2\n"), ""),
            Some("Case"),
            Some((1, "createNodes")),
            "count",
            "negative",
        ),
        (
            "countParam without $",
            file_with(&format!("  - opcode: createNodes\n    countParam: nodes\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "createNodes")),
            "countParam",
            "leading $",
        ),
        (
            "collectMetrics with skipWait",
            file_with("  - opcode: createPods\n    count: 1\n    collectMetrics: true\n    skipWaitToCompletion: true\n", ""),
            Some("Case"),
            Some((0, "createPods")),
            "collectMetrics",
            "cannot both",
        ),
        (
            "churn recreate with number 0",
            file_with(&format!("  - opcode: churn\n    mode: recreate\n    templatePaths: [a.yaml]\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "churn")),
            "number",
            "recreate",
        ),
        (
            "churn bad mode",
            file_with(&format!("  - opcode: churn\n    mode: sometimes\n    templatePaths: [a.yaml]\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "churn")),
            "mode",
            "invalid mode",
        ),
        (
            "barrier bad stage",
            file_with(&format!("  - opcode: barrier\n    stageRequirement: Bound\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "barrier")),
            "stageRequirement",
            "invalid stage",
        ),
        (
            "sleep bad duration",
            file_with(&format!("  - opcode: sleep\n    duration: 5 parsecs\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "sleep")),
            "duration",
            "invalid duration",
        ),
        (
            "nothing collects metrics",
            file_with("  - opcode: createNodes\n    count: 1\n", ""),
            Some("Case"),
            None,
            "workloadTemplate",
            "collects metrics",
        ),
        (
            "negative threshold",
            format!("- name: Case\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n    threshold: -1\n"),
            Some("Case"),
            None,
            "workloads[0].threshold",
            "negative",
        ),
        (
            "duplicate workload",
            format!("- name: Case\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n  - name: W\n"),
            Some("Case"),
            None,
            "workloads[1].name",
            "not unique",
        ),
        (
            "duplicate test case",
            format!(
                "- name: Case\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n- name: Case\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n"
            ),
            Some("Case"),
            None,
            "name",
            "not unique",
        ),
        (
            "wrong field type",
            file_with(&format!("  - opcode: createNodes\n    count: many\n{MEASURE}"), ""),
            Some("Case"),
            Some((0, "createNodes")),
            "count",
            "invalid type",
        ),
    ];
    for (name, text, tc, op, field, msg) in cases {
        let err = load(&text).expect_err(name);
        assert_eq!(err.file, PathBuf::from(FILE), "{name}");
        assert_eq!(err.test_case.as_deref(), tc, "{name}: {err}");
        assert_eq!(err.op.as_ref().map(|(i, c)| (*i, c.as_str())), op, "{name}: {err}");
        assert_eq!(err.field, field, "{name}: {err}");
        assert!(err.message.contains(msg) || err.to_string().contains(msg), "{name}: {err}");
        assert!(err.to_string().starts_with(FILE), "{name}: {err}");
    }
}

#[test]
fn resolve_errors_name_workload_op_and_field() {
    // (name, ops, params, want op index, want field, message contains)
    let cases = [
        ("missing param", "  - opcode: createNodes\n    countParam: $nodes\n", "", Some(0), "countParam", "undefined"),
        ("unused param", "  - opcode: createNodes\n    count: 1\n", "nodes: 3, typo: 1", None, "params", "nodes, typo"),
        (
            "string param as count",
            "  - opcode: createNodes\n    countParam: $n\n",
            "n: lots",
            Some(0),
            "countParam",
            "wrong type",
        ),
        ("negative param", "  - opcode: createNodes\n    countParam: $n\n", "n: -5", Some(0), "countParam", "negative"),
        (
            "updateAny count over the ceiling",
            "  - opcode: updateAny\n    templatePath: n.yaml\n    countParam: $n\n",
            "n: 5000",
            Some(0),
            "countParam",
            "over the limit of 1000",
        ),
        (
            "over the ceiling",
            "  - opcode: createNodes\n    countParam: $n\n",
            "n: 5000",
            Some(0),
            "countParam",
            "over the limit of 1000",
        ),
        (
            "steady state without duration",
            "  - opcode: createPods\n    count: 1\n    steadyStateParam: $s\n",
            "s: true",
            Some(0),
            "duration",
            "steady state",
        ),
    ];
    for (name, ops, params, op, field, msg) in cases {
        let err = resolve_first(&file_with(&format!("{ops}{MEASURE}"), params)).expect_err(name);
        assert_eq!(err.workload.as_deref(), Some("W"), "{name}: {err}");
        assert_eq!(err.op.as_ref().map(|(i, _)| *i), op, "{name}: {err}");
        assert_eq!(err.field, field, "{name}: {err}");
        assert!(err.message.contains(msg), "{name}: {err}");
    }
}

#[test]
fn resolve_substitutes_params_and_unrolls_pod_sets() {
    let text = format!(
        "- name: Case\n  defaultPodTemplatePath: ../templates/pod-default.yaml\n  workloadTemplate:\n  \
         - opcode: createNodes\n    countParam: $nodes\n    templateParams: {{zone: $zone, fixed: 3}}\n  \
         - opcode: createPodSets\n    countParam: $sets\n    namespacePrefix: ns\n    createPodsOp:\n      \
         opcode: createPods\n      countParam: $perSet\n  \
         - opcode: sleep\n    durationParam: $nap\n{MEASURE}  workloads:\n  - name: W\n    \
         params: {{nodes: 7, zone: z1, sets: 2, perSet: 4.9, nap: 1m30s}}\n"
    );
    let ops = resolve_first(&text).unwrap();
    let kinds: Vec<(&str, usize, usize)> = ops.iter().map(|o| (o.op.opcode(), o.template_index, o.index)).collect();
    assert_eq!(
        kinds,
        vec![("createNodes", 0, 0), ("createPods", 1, 1), ("createPods", 1, 2), ("sleep", 2, 3), ("createPods", 3, 4)]
    );
    let OpSpec::CreateNodes(n) = &ops[0].op else { panic!() };
    assert_eq!(n.count, 7);
    assert_eq!(n.template_params["zone"], serde_json::json!("z1"));
    assert_eq!(n.template_params["fixed"], serde_json::json!(3));
    let OpSpec::CreatePods(p) = &ops[2].op else { panic!() };
    assert_eq!((p.count, p.namespace.as_deref()), (4, Some("ns-1")), "4.9 is cut to 4 as Go's int()");
    assert_eq!(p.pod_template_path.as_deref(), Some("/cfg/../templates/pod-default.yaml"), "relative to the file");
    let OpSpec::Sleep(s) = &ops[3].op else { panic!() };
    assert_eq!(parse_go_duration(s.duration.as_deref().unwrap()).unwrap(), Duration::from_secs(90));
}

#[test]
fn unsupported_ops_load_and_are_listed() {
    // Its params count as used (upstream's op uses them), so the workload resolves.
    let op = "  - opcode: updateDeviceConditions\n    namespace: t\n    ConditionTypeParam: $t\n";
    let f = load(&file_with(&format!("{op}{MEASURE}"), "t: DeviceAttached")).unwrap();
    let tc = &f.test_cases[0];
    let (i, opcode, reason) = tc.unsupported_ops().remove(0);
    assert_eq!((i, opcode.as_str()), (0, "updateDeviceConditions"));
    assert!(reason.contains("DRADeviceBindingConditions"), "{reason}");
    assert!(tc.resolve(&tc.workloads[0], &LoadOptions::default()).is_ok());
}

#[test]
fn dra_ops_decode_case_insensitively_and_resolve_their_params() {
    let ops = "  - {opcode: createResourceDriver, driverName: d, nodes: \"dra-*\", maxClaimsPerNodeParam: $m}\n  \
               - {opcode: allocResourceClaims, namespace: init}\n  \
               - {opcode: checkPodScheduled, namespace: t, ScheduledParam: $s, DurationParam: $d}\n";
    let resolved = resolve_first(&file_with(&format!("{ops}{MEASURE}"), "m: 7, s: false, d: 3s")).unwrap();
    match &resolved[0].op {
        OpSpec::CreateResourceDriver(o) => assert_eq!((o.driver_name.as_str(), o.max_claims_per_node), ("d", 7)),
        other => panic!("{other:?}"),
    }
    assert_eq!(resolved[1].op, OpSpec::AllocResourceClaims(AllocResourceClaimsOp { namespace: "init".into() }));
    match &resolved[2].op {
        OpSpec::CheckPodScheduled(o) => {
            assert_eq!((o.expected_scheduled, o.duration.as_deref()), (false, Some("3s")))
        }
        other => panic!("{other:?}"),
    }
    // Errors name the op and field.
    let bad = [
        ("  - {opcode: createResourceDriver, nodes: x, maxClaimsPerNode: 1}\n", "driverName"),
        ("  - {opcode: createResourceDriver, driverName: d, nodes: \"[\", maxClaimsPerNode: 1}\n", "nodes"),
        ("  - {opcode: checkPodScheduled, duration: 1s}\n", "namespace"),
        ("  - {opcode: allocResourceClaims, bogus: 1}\n", "bogus"),
    ];
    for (op, field) in bad {
        let e = load(&file_with(&format!("{op}{MEASURE}"), "")).unwrap_err();
        assert!(e.to_string().contains(field) && e.op.is_some(), "{op}: {e}");
    }
}

#[test]
fn glob_match_follows_go_filepath_match() {
    let cases: &[(&str, &str, Result<bool, ()>)] = &[
        ("scheduler-perf-dra-*", "scheduler-perf-dra-12", Ok(true)),
        ("scheduler-perf-dra-*", "scheduler-perf-12", Ok(false)),
        ("*", "", Ok(true)),
        ("a?c", "abc", Ok(true)),
        ("a?c", "ac", Ok(false)),
        ("n-[0-4]", "n-3", Ok(true)),
        ("n-[^0-4]", "n-3", Ok(false)),
        ("n-[!x]", "n-!", Ok(true)),
        ("a\\*", "a*", Ok(true)),
        ("a\\*", "ab", Ok(false)),
        ("*-*-x", "a-b-c-x", Ok(true)),
        ("[", "x", Err(())),
        ("a\\", "a", Err(())),
    ];
    for (p, n, want) in cases {
        assert_eq!(glob_match(p, n).map_err(|_| ()), *want, "{p} {n}");
    }
}

#[test]
fn thresholds_and_selectors_default_like_upstream() {
    let text = format!(
        "- name: Case\n  defaultThresholdMetricSelector: {{name: scheduler_scheduling_attempt_duration_seconds, dataBucket: Perc99, expectLower: true}}\n  \
         workloadTemplate:\n{MEASURE}  workloads:\n  - name: A\n    threshold: 5\n  - name: B\n    threshold: {{topicA: 3}}\n    \
         thresholdMetricSelector: {{name: SchedulingThroughput, dataBucket: Perc50}}\n"
    );
    let f = load(&text).unwrap();
    let w = &f.test_cases[0].workloads;
    assert_eq!(w[0].threshold.value, 5.0);
    assert_eq!(w[0].threshold_metric_selector.data_bucket, "Perc99");
    assert!(w[0].threshold_metric_selector.expect_lower);
    assert_eq!(w[1].threshold.by_topic["topicA"], 3.0);
    assert_eq!(w[1].threshold_metric_selector.name, "SchedulingThroughput");
    let plain = load(&file_with(MEASURE, "")).unwrap();
    assert_eq!(plain.test_cases[0].workloads[0].threshold_metric_selector, ThresholdMetricSelector::default());
}

#[test]
fn label_filter_follows_upstream_syntax() {
    let labels = vec!["integration-test".to_owned(), "short".to_owned()];
    let cases: [(&[&str], bool); 6] = [
        (&[], true),
        (&["integration-test"], true),
        (&["+short"], true),
        (&["performance"], false),
        (&["integration-test,-short"], false),
        (&["-performance", "short"], true),
    ];
    for (filter, want) in cases {
        let filter: Vec<String> = filter.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(labels_enabled(&filter, &labels), want, "{filter:?}");
    }
}

fn env(pairs: &[(&str, TValue)]) -> BTreeMap<String, TValue> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

#[test]
fn template_renders_fields_helpers_pipes_and_trim_markers() {
    let e = env(&[
        ("Index", TValue::Int(7)),
        ("Count", TValue::Int(10)),
        ("zone", TValue::Str("z".into())),
        ("f", TValue::Float(2.5)),
    ]);
    let cases = [
        ("plain", "a: b\n", "a: b\n"),
        ("index", "name: pod-{{.Index}}", "name: pod-7"),
        ("spaces", "{{ .Count }}", "10"),
        ("AddInt", "{{AddInt .Index 1 2}}", "10"),
        ("SubtractInt", "{{SubtractInt .Count .Index}}", "3"),
        ("MultiplyInt", "{{MultiplyInt .Index 3}}", "21"),
        ("DivideInt truncates", "{{DivideInt .Index 2}}", "3"),
        ("Mod", "{{Mod .Index 4}}", "3"),
        ("nested", "{{Mod (AddInt .Index 1) 5}}", "3"),
        ("pipe", "{{.Index | AddInt 1}}", "8"),
        ("float helper", "{{MultiplyFloat .f 2}}", "5"),
        ("float param", "{{.f}}", "2.5"),
        ("string param", "zone-{{.zone}}", "zone-z"),
        ("string number arg", "{{AddInt \"3\" 1}}", "4"),
        ("printf", "{{printf \"%05d\" .Index}}", "00007"),
        ("comment", "a{{/* note */}}b", "ab"),
        ("trim", "a \n {{- .Index -}} \n b", "a7b"),
    ];
    for (name, src, want) in cases {
        assert_eq!(render(src, &e).unwrap_or_else(|err| panic!("{name}: {err}")), want, "{name}");
    }
}

#[test]
fn template_errors_name_the_line_and_problem() {
    let e = env(&[("Index", TValue::Int(1))]);
    let cases = [
        ("missing key", "a\nb: {{.Nope}}", "line 2"),
        ("missing key names it", "{{.Nope}}", ".Nope: no such key (known: .Index)"),
        ("unknown function", "{{Frobnicate 1}}", "not defined"),
        ("division by zero", "{{DivideInt 1 0}}", "division by zero"),
        ("mod by zero", "{{Mod 1 0}}", "division by zero"),
        ("define", "{{define \"x\"}}y{{end}}", "\"define\" actions are not supported"),
        ("if without end", "{{if .Index}}x", "missing {{end}}"),
        ("stray end", "a{{end}}", "line 1: unexpected {{end}}"),
        ("undefined variable", "{{$x}}", "undefined variable $x"),
        ("range over a string", "{{range \"ab\"}}{{end}}", "range can't iterate over ab"),
        ("missing key printed in an expression", "{{or .Nope nil}}", "the pipeline has no value"),
        ("unclosed", "{{.Index", "unclosed"),
        ("arity", "{{SubtractInt 1}}", "takes 2 arguments"),
        ("not a number", "{{AddInt \"x\" 1}}", "as a number"),
    ];
    for (name, src, want) in cases {
        let err = render(src, &e).expect_err(name);
        assert!(err.0.contains(want), "{name}: {err}");
    }
}

#[test]
fn go_float_formatting_matches_fmt_v() {
    let cases = [
        (1.0, "1"),
        (2.5, "2.5"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1.5e7, "1.5e+07"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.0, "-3"),
    ];
    for (x, want) in cases {
        assert_eq!(go_float(x), want, "{x}");
    }
}

/// `<repo root>/../shared/workloads`, or `None` (with a note) when absent.
fn shared_workloads() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/workloads");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: {} absent; upstream workload files not checked", dir.display());
        None
    }
}

#[test]
fn every_upstream_test_case_loads_and_resolves() {
    let Some(dir) = shared_workloads() else { return };
    let mut seen = 0;
    for sub in ["misc", "affinity", "topology_spreading", "sample", "event_handling"] {
        let path = dir.join(sub).join("performance-config.yaml");
        let file = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!file.test_cases.is_empty(), "{}", path.display());
        for tc in &file.test_cases {
            for w in &tc.workloads {
                let ops = tc.resolve(w, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
                assert!(ops.len() >= tc.ops.len() - 1, "{}/{}", tc.name, w.name);
                seen += 1;
            }
        }
    }
    assert!(seen > 100, "only {seen} workloads");
}

/// One or more cases for every function of `FUNCTIONS` (the test fails when a listed function
/// has none): what upstream's harness renders, Go's semantics included.
#[test]
fn template_functions_render_as_upstreams_harness_does() {
    let e = env(&[
        ("Index", TValue::Int(7)),
        ("Count", TValue::Int(20)),
        ("zone", TValue::Str("z<1>".into())),
        ("f", TValue::Float(2.5)),
    ]);
    let cases: &[(&str, &str, &str)] = &[
        ("and", "{{and 1 0 2}}", "0"),
        ("and", "{{and 1 \"x\"}}", "x"),
        ("or", "{{or 0 \"\" 3}}", "3"),
        ("or", "{{or 0 false}}", "false"),
        ("not", "{{not 0}}", "true"),
        ("not", "{{not .zone}}", "false"),
        ("eq", "{{eq .Index 1 7}}", "true"),
        ("eq", "{{eq .zone \"a\"}}", "false"),
        ("ne", "{{ne .Index 7}}", "false"),
        ("lt", "{{lt .Index 8}}", "true"),
        ("le", "{{le .Index 7}}", "true"),
        ("gt", "{{gt .f 3.0}}", "false"),
        ("ge", "{{ge \"b\" \"a\"}}", "true"),
        ("len", "{{len .zone}}", "4"),
        ("index", "{{index \"abc\" 1}}", "98"),
        ("slice", "{{slice \"abcdef\" 1 3}}", "bc"),
        ("slice", "{{slice \"abcdef\" 4}}", "ef"),
        ("print", "{{print 1 2 \"a\" 3}}", "1 2a3"),
        ("println", "{{println 1 \"a\"}}", "1 a\n"),
        (
            "printf",
            "{{printf \"%05d|%-3s|%x|%.2f|%q|%t\" .Index \"a\" 255 .f \"q\" true}}",
            "00007|a  |ff|2.50|\"q\"|true",
        ),
        ("printf", "{{printf \"%d\"}}", "%!d(MISSING)"),
        ("html", "{{html .zone \"&\"}}", "z&lt;1&gt;&amp;"),
        ("js", "{{js \"a'b=c\"}}", "a\\'b\\u003Dc"),
        ("urlquery", "{{urlquery \"a b&c\"}}", "a+b%26c"),
        ("div", "{{ div 30000 .Count }}", "1500"),
        ("div", "{{div -7 2}}", "-3"),
        ("mod", "8{{ mod .Index 12 }}", "87"),
        ("mod", "{{mod -7 3}}", "-1"),
        ("AddInt", "{{AddInt .Index 1 2.9}}", "10"),
        ("AddFloat", "{{AddFloat .f 1}}", "3.5"),
        ("SubtractInt", "{{SubtractInt .Count .Index}}", "13"),
        ("SubtractFloat", "{{SubtractFloat .f 3}}", "-0.5"),
        ("MultiplyInt", "{{MultiplyInt .f 3}}", "7"),
        ("MultiplyFloat", "{{MultiplyFloat .f 3}}", "7.5"),
        ("DivideInt", "{{DivideInt .Index 5}}", "1"),
        ("DivideFloat", "{{DivideFloat .Index 2}}", "3.5"),
        ("Mod", "{{Mod \"9\" 4}}", "1"),
        ("Int", "{{.f | Int}}", "2"),
        ("Int", "{{Int \"12\"}}", "12"),
        ("JSON", "{{JSON .zone}}", "\"z\\u003c1\\u003e\""),
        ("JSON", "{{.Index | JSON}}", "7"),
        ("add", "{{add 1 2 \"3\"}}", "6"),
        ("add1", "{{add1 .Index}}", "8"),
        ("sub", "{{sub .Index 10}}", "-3"),
        ("mul", "{{mul 2 3 .Index}}", "42"),
        ("max", "{{max 3 .Index 5}}", "7"),
        ("min", "{{min 3 .Index 5}}", "3"),
    ];
    for (name, src, want) in cases {
        assert_eq!(render(src, &e).unwrap_or_else(|err| panic!("{name}: {err}")), *want, "{name}: {src}");
    }
    for (name, _, _) in FUNCTIONS {
        assert!(cases.iter().any(|(n, _, _)| n == name), "function {name} has no case");
    }
}

/// Where Go's template engine fails, ours fails with a message naming the function.
#[test]
fn template_functions_reject_what_go_rejects() {
    let e = env(&[("Index", TValue::Int(7)), ("f", TValue::Float(2.5))]);
    let cases = [
        ("div of a float", "{{div .f 2}}", "div: wrong type for value; expected int; got float64"),
        ("div by zero", "{{div 1 0}}", "div: integer divide by zero"),
        ("mod by zero", "{{mod .Index 0}}", "mod: integer divide by zero"),
        ("mod arity", "{{mod .Index}}", "mod takes 2 arguments, got 1"),
        ("eq across kinds", "{{eq .Index \"7\"}}", "incompatible types for comparison (int and string)"),
        ("lt of bools", "{{lt true false}}", "invalid type for comparison"),
        ("eq alone", "{{eq 1}}", "missing argument for comparison"),
        ("len of an int", "{{len 3}}", "len of int is not defined"),
        ("slice out of range", "{{slice \"ab\" 3}}", "index out of range: 3"),
        ("DivideFloat by zero", "{{DivideFloat 1 0}}", "division by zero"),
        ("Int of a word", "{{Int \"x\"}}", "cannot use \"x\" as a number"),
        ("max of nothing", "{{max}}", "max needs a number"),
        ("runaway width", "{{printf \"%99999999d\" 1}}", "width 99999999 too large"),
        ("runaway range", "{{range 99999999}}x{{end}}", "more than 1048576 items"),
    ];
    for (name, src, want) in cases {
        let err = render(src, &e).expect_err(name);
        assert!(err.0.contains(want), "{name}: {err}");
    }
}

/// Go's control structures and variables, as upstream's podgroup and DRA claim templates use
/// them: a missing key is false, `or` picks a default, `range` walks an int, a list or a map.
#[test]
fn template_control_structures_render_as_go_does() {
    let selectors = serde_json::json!([{"cel": {"expression": "true"}}]);
    let e = env(&[
        ("Index", TValue::Int(2)),
        ("minCount", TValue::Int(4)),
        ("disruptionMode", TValue::Str("single".into())),
        ("list", TValue::Json(serde_json::json!(["a", "b"]))),
        ("map", TValue::Json(serde_json::json!({"y": 2, "x": 1}))),
        ("selectors", TValue::Json(selectors)),
    ]);
    let cases = [
        ("if true", "{{if .Index}}yes{{end}}", "yes"),
        ("if missing key", "{{if .priority}}{{AddInt 0 .priority}}{{else}}1000{{end}}", "1000"),
        ("else if", "{{if eq .Index 1}}one{{else if eq .Index 2}}two{{else}}many{{end}}", "two"),
        ("eq string", "{{if eq .disruptionMode \"single\"}}single: {}{{else}}all: {}{{end}}", "single: {}"),
        ("nested if", "{{if .Index}}{{if .nope}}a{{else}}b{{end}}{{end}}", "b"),
        ("declare and use", "{{$n := (or .numRequests 1) | Int}}{{$n}}", "1"),
        ("assign", "{{$n := 1}}{{$n = 5}}{{$n}}", "5"),
        ("range over an int", "{{$n := 3}}{{range $n}}req-{{.}} {{end}}", "req-0 req-1 req-2 "),
        ("range with index", "{{range $i, $e := .list}}{{$i}}={{$e}};{{end}}", "0=a;1=b;"),
        ("range over a map", "{{range $k, $v := .map}}{{$k}}:{{$v}} {{end}}", "x:1 y:2 "),
        ("range else", "{{range .nope}}x{{else}}empty{{end}}", "empty"),
        ("range scopes its variables", "{{$x := 1}}{{range 2}}{{$x := 7}}{{$x}}{{end}}{{$x}}", "771"),
        ("with", "{{with .disruptionMode}}mode {{.}}{{end}}", "mode single"),
        ("with else", "{{with .nope}}x{{else}}none{{end}}", "none"),
        ("JSON of nil", "{{$s := (or .nope nil) | JSON}}{{$s}}", "null"),
        ("JSON of a list", "{{.selectors | JSON}}", "[{\"cel\":{\"expression\":\"true\"}}]"),
        ("len and index", "{{len .list}} {{index .list 1}} {{index .map \"y\"}}", "2 b 2"),
        ("print a list", "{{.list}} {{.map}}", "[a b] map[x:1 y:2]"),
        ("trim around control", "a\n{{- if .Index }}\nb\n{{- end }}", "a\nb"),
    ];
    for (name, src, want) in cases {
        assert_eq!(render(src, &e).unwrap_or_else(|err| panic!("{name}: {err}")), want, "{name}");
    }
}

/// The upstream templates with control structures render to the objects they describe.
#[test]
fn upstream_templates_with_control_structures_render() {
    let Some(dir) = shared_workloads() else { return };
    let podgroup = std::fs::read_to_string(dir.join("templates/podgroup.yaml")).unwrap();
    let e = env(&[("Index", TValue::Int(3)), ("minCount", TValue::Int(5))]);
    let v: serde_json::Value = yaml_serde::from_str(&render(&podgroup, &e).unwrap()).unwrap();
    assert_eq!(v["metadata"]["name"], "gang-3");
    assert_eq!(v["spec"]["priority"], 1000);
    assert_eq!(v["spec"]["schedulingPolicy"]["gang"]["minCount"], 5);
    assert!(v["spec"].get("disruptionMode").is_none());
    let claim = std::fs::read_to_string(dir.join("dra/templates/resourceclaimtemplate.yaml")).unwrap();
    let e = env(&[("Index", TValue::Int(0)), ("numRequests", TValue::Int(2))]);
    let v: serde_json::Value = yaml_serde::from_str(&render(&claim, &e).unwrap()).unwrap();
    let requests = v["spec"]["spec"]["devices"]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["name"], "req-1");
    assert_eq!(requests[0]["exactly"]["deviceClassName"], "test-class");
    assert!(requests[0]["exactly"]["selectors"].is_null());
}

#[test]
fn uncollected_threshold_metric_fails_only_its_workload_when_resolved() {
    // Upstream checks a workload's metric selector when that workload runs: the file loads,
    // the other workloads resolve.
    let text = format!(
        "- name: Case\n  workloadTemplate:\n{MEASURE}  workloads:\n  - name: W\n    \
         thresholdMetricSelector: {{name: foo, dataBucket: Perc50}}\n  - name: Fine\n"
    );
    let file = load(&text).expect("loads");
    let tc = &file.test_cases[0];
    let err = tc.resolve(&tc.workloads[0], &LoadOptions::default()).expect_err("W targets foo");
    assert_eq!((err.workload.as_deref(), err.field.as_str()), (Some("W"), "thresholdMetricSelector.name"), "{err}");
    assert!(err.message.contains("foo is targeted, but it is not collected"), "{err}");
    tc.resolve(&tc.workloads[1], &LoadOptions::default()).expect("Fine");
}
