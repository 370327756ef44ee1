#!/usr/bin/env python3
"""A synthetic trace for `ksched replay` speed runs (issue 46): NODES nodes of 32 CPU / 128Gi,
then PODS pods created at a steady rate over SPAN seconds, each running a random 10 min to
2 h (their `duration`), with requests drawn from a few shapes. Deterministic (seeded).

    python3 perf/replay-trace-gen.py NODES PODS [SPAN_SECONDS] > trace.jsonl
"""
import json
import random
import sys

nodes, pods = int(sys.argv[1]), int(sys.argv[2])
span = float(sys.argv[3]) if len(sys.argv) > 3 else 86400.0
rng = random.Random(46)
out = sys.stdout
node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
out.write(json.dumps({"op": "template", "name": "node", "object": node}) + "\n")
for z in range(4):
    out.write(json.dumps({"op": "template", "name": f"node{z}", "object": node}) + "\n")
shapes = [("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("4", "8Gi")]
for i, (c, m) in enumerate(shapes):
    p = json.loads(json.dumps(pod))
    p["spec"]["containers"][0]["resources"]["requests"] = {"cpu": c, "memory": m}
    out.write(json.dumps({"op": "template", "name": f"s{i}", "object": p}) + "\n")
for i in range(nodes):
    zone = "abcd"[i % 4]
    out.write(json.dumps({"time": 0, "op": "add_node", "template": "node",
                          "overrides": {"metadata": {"name": f"n{i}", "labels": {"topology.kubernetes.io/zone": zone}}}}) + "\n")
for i in range(pods):
    t = round(span * i / max(pods, 1), 3)
    out.write(json.dumps({"time": t, "op": "create", "template": f"s{rng.randrange(len(shapes))}",
                          "overrides": {"metadata": {"name": f"p{i}"}},
                          "duration": rng.randrange(600, 7200)}) + "\n")
