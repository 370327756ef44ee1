#!/usr/bin/env python3
"""Writes a kubectl-style dump (`kind: List`, managedFields, status) for the issue 16 scale
measurement: NODES nodes, BOUND bound pods spread over them, PENDING pending pods.

    python3 perf/gen_dump.py 2000 30000 20000 > /tmp/dump.yaml    # ~70 MB
    python3 perf/gen_dump.py --one-node 20000 > /tmp/pile.yaml      # 20k pending pods, one node
    python3 perf/gen_dump.py --json 2000 30000 20000 > /tmp/dump.json  # the same as `-o json` (needs PyYAML)
"""
import io
import json
import sys

MANAGED = """    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            .: {}
            f:app: {}
        f:spec:
          f:containers:
            k:{"name":"c"}:
              .: {}
              f:image: {}
              f:resources:
                .: {}
                f:requests: {}
      manager: kube-controller-manager
      operation: Update
      time: "2026-11-20T10:00:00Z"
"""


def node(out, i, cpu="32", pods="200", memory="128Gi"):
    out.write(f"""- apiVersion: v1
  kind: Node
  metadata:
    name: node-{i}
    uid: n-{i}
    resourceVersion: "1"
    creationTimestamp: "2026-11-20T10:00:00Z"
    labels:
      kubernetes.io/hostname: node-{i}
      topology.kubernetes.io/zone: zone-{i % 3}
{MANAGED}  spec:
    podCIDR: 10.{i // 250}.{i % 250}.0/24
  status:
    allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}", ephemeral-storage: 100Gi}}
    capacity: {{cpu: "{cpu}", memory: {memory}, pods: "{pods}", ephemeral-storage: 100Gi}}
    conditions:
    - {{type: Ready, status: "True", reason: KubeletReady, message: ok, lastHeartbeatTime: "2026-11-24T08:00:00Z", lastTransitionTime: "2026-11-20T10:00:00Z"}}
    nodeInfo: {{architecture: amd64, bootID: b, containerRuntimeVersion: containerd://2.0, kernelVersion: "6.1", kubeProxyVersion: "", kubeletVersion: v1.35.0, machineID: m, operatingSystem: linux, osImage: Debian, systemUUID: s}}
""")


def pod(out, i, node_name):
    bound = f"    nodeName: {node_name}\n" if node_name else ""
    phase = "Running" if node_name else "Pending"
    out.write(f"""- apiVersion: v1
  kind: Pod
  metadata:
    name: pod-{i}
    namespace: default
    uid: p-{i}
    resourceVersion: "2"
    creationTimestamp: "2026-11-20T10:00:00Z"
    labels: {{app: app-{i % 50}, pod-template-hash: 5d8f7c9b4}}
{MANAGED}  spec:
{bound}    containers:
    - name: c
      image: registry.example.com/app-{i % 50}:1.0
      imagePullPolicy: IfNotPresent
      resources:
        requests: {{cpu: 100m, memory: 128Mi}}
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
    dnsPolicy: ClusterFirst
    restartPolicy: Always
    schedulerName: default-scheduler
    securityContext: {{}}
    serviceAccountName: default
    terminationGracePeriodSeconds: 30
    tolerations:
    - {{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}}
    - {{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}}
  status:
    phase: {phase}
    qosClass: Burstable
""")


def main():
    if sys.argv[1] == "--json":
        import yaml  # only for this conversion

        del sys.argv[1]
        text = io.StringIO()
        write(text)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        json.dump(yaml.load(text.getvalue(), Loader=loader), sys.stdout, indent=4)
        sys.stdout.write("\n")
        return
    write(sys.stdout)


def write(out):
    # kubectl's order: the list's own fields sorted, so `items` comes before `kind`.
    out.write("apiVersion: v1\nitems:\n")
    if sys.argv[1] == "--one-node":
        node(out, 0, cpu="100000", pods="1000000", memory="100Ti")
        for i in range(int(sys.argv[2])):
            pod(out, i, None)
    else:
        nodes, bound, pending = (int(a) for a in sys.argv[1:4])
        for i in range(nodes):
            node(out, i)
        for i in range(bound):
            pod(out, i, f"node-{i % nodes}")
        for i in range(bound, bound + pending):
            pod(out, i, None)
    out.write("kind: List\nmetadata:\n  resourceVersion: \"\"\n")


main()
