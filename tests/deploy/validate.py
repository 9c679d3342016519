"""Validates deploy/'s manifests against their platforms' published descriptions, and says how each
starts the sidecar, for tests/sidecar.rs to start the image exactly so.

- Kubernetes: every document of deploy/kubernetes/*.yaml against Kubernetes' OpenAPI schemas
  (PyPI kubernetes-validate, strict: unknown fields are errors), for the oldest version with
  native sidecars (1.29) and the newest the package ships.
- ECS: deploy/ecs/task-definition.json against botocore's model of RegisterTaskDefinition
  (ParamValidator: unknown keys, types, required members), plus what the model leaves to the
  service (awsvpc and Fargate's rules for the fields used here).

Prints one JSON object: {"kubernetes": START, "ecs": START}, START = {"image", "args", "env",
"user", "read_only", "no_new_privileges", "cap_drop", "mounts": [{"path", "kind", ...}]};
an environment variable from the downward API is {"from": FIELD}. Exits 1 with the errors.
"""

import json
import pathlib
import sys

import botocore.session
import botocore.validate
import kubernetes_validate
import yaml

root = pathlib.Path(sys.argv[1])
errors = []
out = {}

# Kubernetes
from kubernetes_validate.utils import latest_version

versions = ["1.29.0", latest_version()]
for path in sorted((root / "deploy/kubernetes").glob("*.yaml")):
    for doc in yaml.safe_load_all(path.read_text()):
        for version in versions:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except Exception as e:  # ValidationError, InvalidSchemaError, VersionNotSupportedError
                where = "/".join(str(p) for p in getattr(e, "absolute_path", []))
                errors.append(f"{path.name} ({doc.get('kind')}, Kubernetes {version}): {getattr(e, 'message', e)} at {where}")
        if doc.get("kind") != "Deployment":
            continue
        spec = doc["spec"]["template"]["spec"]
        sidecars = [c for c in spec.get("initContainers", []) if c.get("restartPolicy") == "Always"]
        if len(sidecars) != 1:
            errors.append(f"{path.name}: expected one native sidecar (an init container with restartPolicy: Always)")
            continue
        c = sidecars[0]
        ctx = c.get("securityContext", {})
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounts = []
        for m in c.get("volumeMounts", []):
            v = volumes[m["name"]]
            if "emptyDir" in v:
                e = v["emptyDir"]
                mounts.append({"path": m["mountPath"], "kind": "tmpfs" if e.get("medium") == "Memory" else "emptydir-disk",
                               "size": e.get("sizeLimit")})
            else:
                errors.append(f"{path.name}: volume {m['name']} is not an emptyDir")
        out["kubernetes"] = {
            "image": c["image"],
            "args": c.get("command", []) + c.get("args", []),
            "env": {e["name"]: e["value"] if "value" in e else {"from": e["valueFrom"]["fieldRef"]["fieldPath"]}
                    for e in c.get("env", [])},
            "user": f"{ctx.get('runAsUser')}:{ctx.get('runAsGroup')}",
            "run_as_non_root": ctx.get("runAsNonRoot"),
            "read_only": ctx.get("readOnlyRootFilesystem") is True,
            "no_new_privileges": ctx.get("allowPrivilegeEscalation") is False,
            "cap_drop": ctx.get("capabilities", {}).get("drop", []),
            "probes": {k: c[k] for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in c},
            "app_env": {e["name"]: e.get("value") for e in spec["containers"][0].get("env", [])},
            "mounts": mounts,
        }

# ECS
task = json.loads((root / "deploy/ecs/task-definition.json").read_text())
model = botocore.session.get_session().get_service_model("ecs")
shape = model.operation_model("RegisterTaskDefinition").input_shape
report = botocore.validate.ParamValidator().validate(task, shape)
if report.has_errors():
    errors.append("task-definition.json against RegisterTaskDefinition: " + report.generate_report())
if task.get("networkMode") != "awsvpc":
    errors.append("task-definition.json: networkMode must be awsvpc (the containers share 127.0.0.1)")
volumes = {v["name"]: v for v in task.get("volumes", [])}
sidecar = task["containerDefinitions"][0]
names = {c["name"] for c in task["containerDefinitions"]}
for c in task["containerDefinitions"]:
    for d in c.get("dependsOn", []):
        if d["containerName"] not in names:
            errors.append(f"task-definition.json: {c['name']} depends on a missing container {d['containerName']}")
        if d["condition"] == "HEALTHY" and "healthCheck" not in next(x for x in task["containerDefinitions"] if x["name"] == d["containerName"]):
            errors.append(f"task-definition.json: {d['containerName']} has no healthCheck for HEALTHY")
mounts = []
for m in sidecar.get("mountPoints", []):
    v = volumes.get(m["sourceVolume"])
    if v is None:
        errors.append(f"task-definition.json: mount of a missing volume {m['sourceVolume']}")
    elif set(v) == {"name"}:
        mounts.append({"path": m["containerPath"], "kind": "task-volume"})
    else:
        errors.append(f"task-definition.json: volume {v['name']} is not a task (bind mount) volume")
out["ecs"] = {
    "image": sidecar["image"],
    "args": sidecar.get("command", []),
    "env": {e["name"]: e["value"] for e in sidecar.get("environment", [])},
    "user": sidecar.get("user"),
    "read_only": sidecar.get("readonlyRootFilesystem") is True,
    # ECS sets no_new_privs for non-privileged containers only with this; its absence is
    # reported, not assumed.
    "no_new_privileges": sidecar.get("privileged") is False,
    "cap_drop": sidecar.get("linuxParameters", {}).get("capabilities", {}).get("drop", []),
    "health": sidecar.get("healthCheck", {}).get("command"),
    "mounts": mounts,
}

if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print(json.dumps(out))
