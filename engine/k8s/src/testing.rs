//! Test builders for the Kubernetes adapters' inputs (also used by the harness's end-to-end
//! tests): a `kubectl get ... -o yaml` dump as a real cluster prints it.

/// Builds what `kubectl get nodes,pods,... -A -o yaml` prints: one `kind: List` whose items
/// carry server-side fields (uid, resourceVersion, creationTimestamp, managedFields, status).
#[derive(Default)]
pub struct KubectlDump {
    items: Vec<serde_json::Value>,
}

impl KubectlDump {
    fn server_fields(mut v: serde_json::Value, manager: &str) -> serde_json::Value {
        let name = v["metadata"]["name"].as_str().unwrap_or("x").to_owned();
        let meta = &mut v["metadata"];
        meta["uid"] = format!("uid-{name}").into();
        meta["resourceVersion"] = "12345".into();
        meta["creationTimestamp"] = "2026-11-20T10:00:00Z".into();
        meta["managedFields"] = serde_json::json!([{
            "manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:status": {"f:conditions": {}}}
        }]);
        v
    }

    /// A Ready node with `cpu` and 8Gi of memory, labelled with its hostname.
    pub fn node(self, name: &str, cpu: &str) -> Self {
        self.node_with(name, cpu, "8Gi", &[], &[])
    }

    /// A Ready node with `cpu` and `memory`, its hostname label plus `labels`, and `taints`
    /// (key, effect).
    pub fn node_with(
        mut self,
        name: &str,
        cpu: &str,
        memory: &str,
        labels: &[(&str, &str)],
        taints: &[(&str, &str)],
    ) -> Self {
        let mut v = serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"], "providerID": format!("kind://{name}")},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"},
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"},
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": name}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                                "lastHeartbeatTime": "2026-11-24T08:00:00Z", "lastTransitionTime": "2026-11-20T10:00:00Z"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
                "nodeInfo": {"architecture": "amd64", "bootID": "b", "containerRuntimeVersion": "containerd://2.0", "kernelVersion": "6.1",
                             "kubeProxyVersion": "", "kubeletVersion": "v1.35.0", "machineID": "m", "operatingSystem": "linux",
                             "osImage": "Debian", "systemUUID": "s"}
            }
        });
        for (k, val) in labels {
            v["metadata"]["labels"][*k] = (*val).into();
        }
        if !taints.is_empty() {
            let t: Vec<serde_json::Value> =
                taints.iter().map(|(key, effect)| serde_json::json!({"key": key, "effect": effect})).collect();
            v["spec"]["taints"] = t.into();
        }
        self.items.push(Self::server_fields(v, "kubelet"));
        self
    }

    /// A pod on `node` (None: pending) in `phase`, requesting `cpu`.
    pub fn pod(mut self, name: &str, node: Option<&str>, cpu: &str, phase: &str, reason: Option<&str>) -> Self {
        let mut v = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {
                "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                                "resources": {"requests": {"cpu": cpu}},
                                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]}],
                "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0,
                "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {},
                "serviceAccount": "default", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
            },
            "status": {"phase": phase, "qosClass": "Burstable",
                       "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-20T10:00:00Z"}]}
        });
        if let Some(n) = node {
            v["spec"]["nodeName"] = n.into();
            v["status"]["startTime"] = "2026-11-20T10:00:01Z".into();
            v["status"]["hostIP"] = "172.18.0.2".into();
        }
        if let Some(r) = reason {
            v["status"]["reason"] = r.into();
            v["status"]["message"] = "The node was low on resource: memory.".into();
        }
        self.items.push(Self::server_fields(v, "kube-controller-manager"));
        self
    }

    /// Changes the last object added (labels, owner references, priority...), as a cluster
    /// would have written it.
    pub fn edit_last(mut self, edit: impl FnOnce(&mut serde_json::Value)) -> Self {
        if let Some(v) = self.items.last_mut() {
            edit(v);
        }
        self
    }

    /// A running pod on `node` of a Deployment's ReplicaSet `<deployment>-<hash>`: labelled
    /// `app: <deployment>` and `pod-template-hash`, owned by that ReplicaSet.
    pub fn replica_pod(self, deployment: &str, hash: &str, suffix: &str, node: &str, cpu: &str) -> Self {
        let rs = format!("{deployment}-{hash}");
        self.pod(&format!("{rs}-{suffix}"), Some(node), cpu, "Running", None).edit_last(|v| {
            v["metadata"]["labels"] = serde_json::json!({"app": deployment, "pod-template-hash": hash});
            v["metadata"]["generateName"] = format!("{rs}-").into();
            v["metadata"]["ownerReferences"] = serde_json::json!([{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("uid-{rs}"),
                "controller": true, "blockOwnerDeletion": true
            }]);
        })
    }

    /// A PriorityClass.
    pub fn priority_class(mut self, name: &str, value: i32) -> Self {
        let v = serde_json::json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority",
            "description": "batch work"
        });
        self.items.push(Self::server_fields(v, "kubectl-client-side-apply"));
        self
    }

    /// A PersistentVolume of `size` whose node affinity requires `label` = `value`, bound to
    /// claim `default/<claim>`, and that claim (Bound).
    pub fn bound_claim(mut self, claim: &str, pv: &str, size: &str, label: (&str, &str)) -> Self {
        let pv_obj = serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv, "annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}},
            "spec": {
                "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
                "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": claim, "namespace": "default", "uid": format!("uid-{claim}")},
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{pv}"), "fsType": "ext4"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": label.0, "operator": "In", "values": [label.1]}]}]}},
                "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast", "volumeMode": "Filesystem"
            },
            "status": {"phase": "Bound", "lastPhaseTransitionTime": "2026-11-20T10:00:00Z"}
        });
        self.items.push(Self::server_fields(pv_obj, "kube-controller-manager"));
        let pvc = serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "default", "labels": {"app": "db"},
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/selected-node": "b1"},
                         "finalizers": ["kubernetes.io/pvc-protection"]},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                     "storageClassName": "fast", "volumeMode": "Filesystem", "volumeName": pv},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}}
        });
        self.items.push(Self::server_fields(pvc, "kube-controller-manager"));
        self
    }

    pub fn service(mut self, name: &str, app: &str) -> Self {
        let v = serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"app": app}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                     "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "type": "ClusterIP",
                     "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None"},
            "status": {"loadBalancer": {}}
        });
        self.items.push(Self::server_fields(v, "kubectl-client-side-apply"));
        self
    }

    /// A DeviceClass selecting the devices of `driver` whose `model` attribute is `model`.
    pub fn device_class(mut self, name: &str, driver: &str, model: &str) -> Self {
        let expr = format!(r#"device.driver == "{driver}" && device.attributes["{driver}"].model == "{model}""#);
        let v = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "generation": 1},
            "spec": {"selectors": [{"cel": {"expression": expr}}]}
        });
        self.items.push(Self::server_fields(v, "kubectl-client-side-apply"));
        self
    }

    /// `node`'s ResourceSlice of `driver`: pool `node`, `count` devices `gpu-0`.. of `model`
    /// (attributes `model`, `index`; capacity `memory`), as a DRA driver's kubelet plugin
    /// publishes them.
    pub fn resource_slice(mut self, node: &str, driver: &str, model: &str, count: usize) -> Self {
        let devices: Vec<serde_json::Value> = (0..count)
            .map(|i| {
                serde_json::json!({
                    "name": format!("gpu-{i}"),
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"memory": {"value": "80Gi"}}
                })
            })
            .collect();
        let v = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-{driver}-x7k2p"), "generateName": format!("{node}-{driver}-"),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": format!("uid-{node}"), "controller": true}]},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}
        });
        self.items.push(Self::server_fields(v, "kubelet"));
        self
    }

    /// A ResourceClaim in `default` asking for `count` devices of `class` (request `gpu`).
    pub fn resource_claim(mut self, name: &str, class: &str, count: i64) -> Self {
        let v = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class, "allocationMode": "ExactCount", "count": count}}]}},
            "status": {}
        });
        self.items.push(Self::server_fields(v, "kubectl-client-side-apply"));
        self
    }

    /// Makes the last ResourceClaim allocated: `devices` of `driver`'s pool `node` (request
    /// `gpu`), the node selector DynamicResources writes for node-local devices, reserved for
    /// `pods` (in `default`) and protected by the finalizer.
    pub fn allocated(self, driver: &str, node: &str, devices: &[&str], pods: &[&str]) -> Self {
        self.edit_last(|v| {
            let results: Vec<serde_json::Value> = devices
                .iter()
                .map(|d| serde_json::json!({"request": "gpu", "driver": driver, "pool": node, "device": d}))
                .collect();
            let reserved: Vec<serde_json::Value> = pods
                .iter()
                .map(|p| serde_json::json!({"resource": "pods", "name": p, "uid": format!("uid-{p}")}))
                .collect();
            v["metadata"]["finalizers"] = serde_json::json!(["resource.kubernetes.io/delete-protection"]);
            v["status"] = serde_json::json!({
                "allocation": {
                    "devices": {"results": results},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]},
                    "allocationTimestamp": "2026-11-20T10:00:02Z"
                },
                "reservedFor": reserved
            });
        })
    }

    /// A ResourceClaimTemplate in `default` asking for `count` devices of `class` (request `gpus`).
    pub fn resource_claim_template(mut self, name: &str, class: &str, count: i64) -> Self {
        let v = serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"metadata": {"labels": {"app": name}},
                     "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": class, "count": count}}]}}}
        });
        self.items.push(Self::server_fields(v, "kubectl-client-side-apply"));
        self
    }

    /// Makes the last pod use the ResourceClaim `claim` (entry `gpu`, in its container too).
    pub fn with_claim(self, claim: &str) -> Self {
        self.edit_last(|v| {
            v["spec"]["resourceClaims"] = serde_json::json!([{"name": "gpu", "resourceClaimName": claim}]);
            v["spec"]["containers"][0]["resources"]["claims"] = serde_json::json!([{"name": "gpu"}]);
        })
    }

    pub fn other(mut self, api_version: &str, kind: &str, name: &str) -> Self {
        let v = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}});
        self.items.push(Self::server_fields(v, "kubectl"));
        self
    }

    pub fn yaml(&self) -> String {
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": self.items, "metadata": {"resourceVersion": ""}});
        yaml_serde::to_string(&list).unwrap()
    }
}

/// A manifest of a cluster: a node, a namespace, a PriorityClass and a PodDisruptionBudget,
/// with a comment and empty documents.
pub const MANIFEST_CLUSTER: &str = r#"
# a comment before the first document
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {zone: a}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
---
apiVersion: v1
kind: Namespace
metadata:
  name: prod
  labels: {team: web}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: prod}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"#;

/// Pods for `MANIFEST_CLUSTER`: one bound, two pending (the second by file order has a
/// PriorityClass).
pub const MANIFEST_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: prod, labels: {app: web}}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: second}
spec:
  priorityClassName: high
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: first}
spec:
  containers: [{name: c, image: nginx}]
"#;
