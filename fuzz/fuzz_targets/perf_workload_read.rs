//! Arbitrary bytes into the scheduler_perf workload-file reader: no input may panic. Text
//! that parses is also resolved, workload by workload (params substituted, `createPodSets`
//! unrolled, counts checked against a small ceiling), and every error must name the file.
//! The same bytes are rendered as an object template, the reader's other input.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use ksched_k8s::perf_workload::template::{render, TValue};
use ksched_k8s::perf_workload::{parse, LoadOptions};
use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz/performance-config.yaml";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };

    let env: BTreeMap<String, TValue> = [
        ("Index".to_owned(), TValue::Int(3)),
        ("Count".to_owned(), TValue::Int(10)),
        ("zone".to_owned(), TValue::Str("zone-a".into())),
        ("ratio".to_owned(), TValue::Float(0.5)),
    ]
    .into_iter()
    .collect();
    let _ = render(text, &env);

    let file = match parse(text, Path::new(FILE)) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.to_string().starts_with(FILE), "error does not name the file: {e}");
            return;
        }
    };
    // A small ceiling keeps unrolled `createPodSets` from growing without bound.
    let opts = LoadOptions { max_count: 1000 };
    for tc in &file.test_cases {
        let _ = tc.unsupported_ops();
        for w in &tc.workloads {
            let _ = tc.feature_gates(w);
            if let Err(e) = tc.resolve(w, &opts) {
                assert!(e.to_string().starts_with(FILE), "error does not name the file: {e}");
            }
        }
    }
});
