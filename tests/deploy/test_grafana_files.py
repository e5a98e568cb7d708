"""deploy/grafana's files checked against Grafana's documented provisioning formats, against the
metrics queuebot exports and against what queuebot reads from a Grafana webhook.

Sources of the formats:

- Alerting file provisioning (rule groups, contact points, notification policies, which fields
  are interpolated, `$$`):
  https://grafana.com/docs/grafana/latest/alerting/set-up/provision-alerting-resources/file-provisioning/
  and the fields as Grafana reads them,
  https://github.com/grafana/grafana/blob/main/pkg/services/provisioning/alerting/rules_types.go
  (no data / error states: pkg/services/ngalert/models/alert_rule.go in the same repository;
  `__dashboardUid__` / `__panelId__`: its `SetDashboardAndPanelFromAnnotations`, and
  pkg/services/provisioning/alerting/alert-rule-linked-to-dashboard.yaml).
- Annotations and query models are not interpolated from the environment:
  https://github.com/grafana/grafana/issues/84250, https://github.com/grafana/grafana/issues/82774.
- Math expressions (`$refId`, `&&`, `>=`, true is 1):
  https://grafana.com/docs/grafana/latest/visualizations/panels-visualizations/query-transform-data/expression-queries/
- Annotation templates (`$labels`, `$values`):
  https://grafana.com/docs/grafana/latest/alerting/alerting-rules/templates/reference/
- Webhook contact point settings and `hmacConfig`:
  https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/
  and https://github.com/grafana/alerting/blob/main/receivers/webhook/v1/config.go
- Dashboard providers, `$VAR` / `${VAR}` in provisioning files (not in dashboard JSON):
  https://grafana.com/docs/grafana/latest/administration/provisioning/
- Dashboard JSON model:
  https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
  (`schemaVersion`: public/app/features/dashboard/state/DashboardMigrator.ts in grafana/grafana).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.telemetry.metrics import FLEET
from bot.web.grafana_webhook import SIGNATURE_HEADER
from bot.web.paths import GRAFANA_WEBHOOK_PATH
from testkit.integration import require_binary

GRAFANA = Path(__file__).resolve().parents[2] / "deploy" / "grafana"
RULES = GRAFANA / "provisioning" / "alerting" / "queuebot-rules.yaml"
CONTACT_POINT = GRAFANA / "provisioning" / "alerting" / "queuebot-contact-point.yaml"
PROVIDER = GRAFANA / "provisioning" / "dashboards" / "queuebot.yaml"
DASHBOARD = GRAFANA / "dashboards" / "queuebot-fleet.json"
README = GRAFANA / "README.md"

#: The fleet metrics queuebot exports on /metrics, and the labels they carry.
EXPORTED_METRICS = frozenset(
    {
        "queuebot_queued_jobs",
        "queuebot_queue_longest_wait_seconds",
        "queuebot_job_queue_seconds_bucket",
        "queuebot_job_queue_seconds_sum",
        "queuebot_job_queue_seconds_count",
        "queuebot_jobs_queued_total",
        "queuebot_jobs_started_total",
        "queuebot_jobs_completed_total",
        "queuebot_job_run_seconds_total",
        "queuebot_runners_online",
        "queuebot_runners_offline",
        "queuebot_runners_busy",
    }
)
EXPORTED_LABELS = frozenset({"runner_type", "le", "conclusion"})
#: Metrics whose panels show a duration (unit `s`); every other panel shows a count (`short`).
DURATION_METRICS = frozenset(
    {"queuebot_queue_longest_wait_seconds", "queuebot_job_queue_seconds_bucket"}
)
#: The values queuebot renders from a Grafana webhook's `values` map (refId -> number).
VALUE_REFIDS = ("queued_jobs", "longest_wait_minutes")
CONDITION_REFID = "threshold_breached"
PROMETHEUS_UID = "${QUEUEBOT_PROMETHEUS_UID}"
EXPRESSION_UID = "__expr__"
DASHBOARD_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TIMESTAMP_HEADER = "X-Grafana-Alerting-Signature-Timestamp"

NO_DATA_STATES = {"NoData", "Alerting", "OK", "KeepLast"}
EXEC_ERR_STATES = {"Error", "Alerting", "OK", "KeepLast"}
EXPRESSION_TYPES = {"math", "reduce", "resample", "threshold", "classic_conditions"}
UID = re.compile(r"[A-Za-z0-9_-]{1,40}")  # Grafana's UIDs
DURATION = re.compile(r"(?:\d+(?:ms|[smhdwy]))+")  # Prometheus durations, as Grafana parses them
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
GRID_COLUMNS = 24
#: A recent dashboard schema: the file says 42, the last of the classic JSON model.
MIN_SCHEMA_VERSION = 41


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _uncomment_hmac(text: str) -> str:
    """The contact point file with its commented `hmacConfig` block uncommented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "# hmacConfig:")
    indent = lines[start][: lines[start].index("#")]
    end = start + 1
    while end < len(lines) and lines[end].startswith(indent + "#   "):
        end += 1
    block = [indent + line[len(indent) + 2 :] for line in lines[start:end]]
    return "\n".join([*lines[:start], *block, *lines[end:]]) + "\n"


RULE_FILE = _yaml(RULES)
CONTACT_FILES = {
    "token": _yaml(CONTACT_POINT),
    "token+hmac": yaml.safe_load(_uncomment_hmac(CONTACT_POINT.read_text(encoding="utf-8"))),
}
PROVIDER_FILE = _yaml(PROVIDER)
BOARD = json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _rules() -> list[dict[str, Any]]:
    return [rule for group in RULE_FILE["groups"] for rule in group["rules"]]


def _the_rule() -> dict[str, Any]:
    (rule,) = [r for r in _rules() if r["condition"] == CONDITION_REFID]
    return rule


def _panels(panels: list[dict[str, Any]] | None = None) -> Iterator[dict[str, Any]]:
    for panel in BOARD["panels"] if panels is None else panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def _prometheus_queries() -> list[tuple[str, str]]:
    """(where, PromQL) of every Prometheus query: the rules' and the dashboard's."""
    queries = [
        (f"rule {rule['uid']} {query['refId']}", query["model"]["expr"])
        for rule in _rules()
        for query in rule["data"]
        if query["datasourceUid"] != EXPRESSION_UID
    ]
    queries += [
        (f"panel {panel['id']} {target['refId']}", target["expr"])
        for panel in _panels()
        for target in panel.get("targets", [])
    ]
    return queries


def _strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, str(index)))
    elif isinstance(value, str):
        yield path, value


def _interpolated(document: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    """The values Grafana runs through its environment: all but a rule's annotations and its
    queries' models."""
    for path, text in _strings(document):
        if "rules" in path and ({"annotations", "model"} & set(path)):
            continue
        yield path, text


# --- PromQL, read just enough to name what an expression selects -------------------------------

_PROMQL_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
_KEYWORDS |= {"and", "or", "unless", "offset"}
_DEDUPED = re.compile(r"max\s+by\s*\(([^)]*)\)\s*\(\s*(?:(rate|increase)\(\s*)?$")


def _blank(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group()), text)


def _selectors(expr: str) -> list[re.Match[str]]:
    """The metric names `expr` selects, as matches at their place in `expr`."""
    masked = _blank(_RANGE, _blank(_MATCHERS, _blank(_GROUPING, _blank(_PROMQL_STRING, expr))))
    found = []
    for match in _IDENTIFIER.finditer(masked):
        before = masked[match.start() - 1] if match.start() else " "
        if before.isdigit() or before == "." or match.group() in _KEYWORDS:
            continue  # an exponent, or a keyword
        if masked[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        found.append(match)
    return found


def _label_names(expr: str) -> set[str]:
    masked = _blank(_PROMQL_STRING, expr)
    names = {n.strip() for m in _GROUPING.finditer(masked) for n in m.group(1).split(",")}
    for matchers in _MATCHERS.finditer(masked):
        names |= set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", matchers.group(1)))
    return names - {""}


def test_every_promql_expression_selects_only_what_queuebot_exports() -> None:
    for where, expr in _prometheus_queries():
        metrics = {m.group() for m in _selectors(expr)}
        assert metrics, f"{where}: selects no metric: {expr}"
        assert metrics <= EXPORTED_METRICS, f"{where}: {sorted(metrics - EXPORTED_METRICS)}"
        labels = _label_names(expr)
        assert labels <= EXPORTED_LABELS, f"{where}: labels {sorted(labels - EXPORTED_LABELS)}"


def test_every_selector_is_deduplicated_across_replicas() -> None:
    """Replicas export the same numbers: each series goes through `max by (runner_type, …)`
    first (of its rate for a counter), never a sum of the replicas."""
    for where, expr in _prometheus_queries():
        for selector in _selectors(expr):
            name = selector.group()
            rest = expr[selector.end() :]
            inner = expr[: selector.start()]
            deduped = _DEDUPED.search(inner)
            assert deduped, f"{where}: {name} is not directly inside max by (...): {expr}"
            by = {label.strip() for label in deduped.group(1).split(",")}
            assert "runner_type" in by, f"{where}: {expr}"
            counter = name.endswith(("_total", "_bucket"))
            assert (deduped.group(2) is not None) == counter, f"{where}: rate() of counters only"
            if counter:
                assert re.match(r"\s*(\{[^}]*\})?\s*\[", rest), f"{where}: {name} needs a range"
            if name.endswith("_bucket"):
                assert "le" in by and "histogram_quantile(" in inner, f"{where}: {expr}"


def _promtool_check(promtool: str, exprs: list[str], path: Path) -> tuple[int, str]:
    """`promtool check rules` of the expressions as recording rules, Grafana's variables given
    concrete values (promtool has no command that parses a bare expression)."""
    values = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$runner_type": ".*"}
    rules = []
    for index, expr in enumerate(exprs):
        for variable, value in values.items():
            expr = expr.replace(variable, value)
        assert "$" not in expr, f"a Grafana variable the check does not know: {expr}"
        rules.append({"record": f"grafana:expression_{index}", "expr": expr})
    path.write_text(yaml.safe_dump({"groups": [{"name": "grafana", "rules": rules}]}))
    result = subprocess.run(  # noqa: S603 (promtool on a file of our own)
        [promtool, "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.integration
def test_every_promql_expression_parses(tmp_path: Path) -> None:
    promtool = require_binary("promtool", "apt-get install -y prometheus")
    exprs = [expr for _, expr in _prometheus_queries()]
    code, output = _promtool_check(promtool, exprs, tmp_path / "grafana.yml")
    assert code == 0, output
    # The check can fail: an expression with a parenthesis missing does.
    broken = ["max by (runner_type (queuebot_queued_jobs)"]
    code, _ = _promtool_check(promtool, broken, tmp_path / "broken.yml")
    assert code != 0


# --- The alert rule ------------------------------------------------------------------------------


def test_rule_groups_have_the_documented_fields() -> None:
    assert RULE_FILE["apiVersion"] == 1
    assert RULE_FILE["groups"]
    for group in RULE_FILE["groups"]:
        assert {"name", "folder", "interval", "rules"} <= set(group), group.keys()
        assert DURATION.fullmatch(group["interval"]), group["interval"]
        assert isinstance(group.get("orgId", 1), int)
        assert group["rules"]
        for rule in group["rules"]:
            assert {"uid", "title", "condition", "data", "for"} <= set(rule), rule.keys()
            assert UID.fullmatch(rule["uid"]), rule["uid"]
            assert DURATION.fullmatch(rule["for"]), rule["for"]
            assert rule.get("noDataState", "NoData") in NO_DATA_STATES
            assert rule.get("execErrState", "Alerting") in EXEC_ERR_STATES
    uids = [rule["uid"] for rule in _rules()]
    assert len(uids) == len(set(uids)), uids
    titles = [(g["folder"], rule["title"]) for g in RULE_FILE["groups"] for rule in g["rules"]]
    assert len(titles) == len(set(titles)), titles


def test_every_query_names_its_data_source_and_the_condition_an_existing_refid() -> None:
    for rule in _rules():
        refids = [query["refId"] for query in rule["data"]]
        assert len(refids) == len(set(refids)), refids
        assert rule["condition"] in refids
        for query in rule["data"]:
            model = query["model"]
            assert model["refId"] == query["refId"]
            if query["datasourceUid"] == EXPRESSION_UID:
                assert model["type"] in EXPRESSION_TYPES, model
                assert model.get("datasource", {"uid": EXPRESSION_UID})["uid"] == EXPRESSION_UID
                named = set(re.findall(r"\$\{?([A-Za-z0-9_]+)", model["expression"]))
                assert named and named <= set(refids) - {query["refId"]}, model["expression"]
            else:
                assert query["datasourceUid"] == PROMETHEUS_UID
                span = query["relativeTimeRange"]
                assert isinstance(span["from"], int) and span["from"] > span["to"] >= 0, span
                assert model["expr"].strip() and model["instant"] is True, model


def test_the_rule_has_the_refids_queuebot_renders() -> None:
    rule = _the_rule()
    queries = {q["refId"]: q["model"] for q in rule["data"]}
    assert set(VALUE_REFIDS) <= set(queries)
    assert " ".join(queries["queued_jobs"]["expr"].split()) == (
        "max by (runner_type) (queuebot_queued_jobs)"
    )
    assert " ".join(queries["longest_wait_minutes"]["expr"].split()) == (
        "max by (runner_type) (queuebot_queue_longest_wait_seconds) / 60"
    )
    assert queries[CONDITION_REFID]["type"] == "math"


def _evaluate(expression: str, values: dict[str, float]) -> float:
    """A Grafana math expression of comparisons, `&&` and `||` on numbers (true is 1)."""
    python = expression.replace("&&", " and ").replace("||", " or ")
    python = re.sub(r"\$\{?([A-Za-z0-9_]+)\}?", r"\1", python)

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.BoolOp):
            results = [value(v) != 0 for v in node.values]
            return float(all(results) if isinstance(node.op, ast.And) else any(results))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = value(node.left), value(node.comparators[0])
            compare = {ast.Gt: left > right, ast.GtE: left >= right, ast.Lt: left < right}
            compare |= {ast.LtE: left <= right, ast.Eq: left == right, ast.NotEq: left != right}
            return float(compare[type(node.ops[0])])
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        raise AssertionError(f"not a comparison of queries: {expression}")

    return value(ast.parse(python, mode="eval"))


@pytest.mark.parametrize(
    ("queued", "minutes", "fires"),
    [(6, 60, True), (40, 180, True), (5, 600, False), (6, 59.5, False), (0, 0, False)],
)
def test_the_condition_is_the_prometheus_rule(queued: int, minutes: float, fires: bool) -> None:
    """More than 5 jobs queued and the longest wait 60 minutes or more."""
    (condition,) = [q for q in _the_rule()["data"] if q["refId"] == CONDITION_REFID]
    values = {"queued_jobs": float(queued), "longest_wait_minutes": float(minutes)}
    assert _evaluate(condition["model"]["expression"], values) == float(fires)


def test_labels_and_annotations_are_what_queuebot_shows() -> None:
    rule = _the_rule()
    assert rule["labels"]["priority"] == "P2"
    assert rule["labels"]["team"].strip()
    annotations = rule["annotations"]
    refids = {query["refId"] for query in rule["data"]}
    for name in ("summary", "description"):
        text = annotations[name]
        assert text.count("{{") == text.count("}}"), text
        assert set(re.findall(r"\$values\.([A-Za-z0-9_]+)", text)) <= refids, text
    assert all(f"$values.{refid}" in annotations["description"] for refid in VALUE_REFIDS)
    assert re.fullmatch(r"https://\S+", annotations["runbook_url"])
    # Grafana never interpolates annotations: a `${VAR}` there would stay as it is.
    for text in annotations.values():
        assert "${" not in text, text


def test_the_rule_links_the_dashboard_panel() -> None:
    rule = _the_rule()
    annotations = rule["annotations"]
    assert annotations["__dashboardUid__"] == rule["dashboardUid"] == BOARD["uid"]
    assert annotations["__panelId__"] == str(rule["panelId"])
    assert rule["panelId"] in {panel["id"] for panel in _panels()}


# --- The contact point and the policy -----------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(CONTACT_FILES))
def test_the_contact_point_is_queuebots_webhook(variant: str) -> None:
    document = CONTACT_FILES[variant]
    assert document["apiVersion"] == 1
    (contact_point,) = document["contactPoints"]
    assert contact_point["name"].strip()
    (receiver,) = contact_point["receivers"]
    assert UID.fullmatch(receiver["uid"])
    assert receiver["type"] == "webhook"
    assert receiver.get("disableResolveMessage", False) is False  # resolved closes incidents
    settings = receiver["settings"]
    assert re.fullmatch(ENV_REFERENCE.pattern + re.escape(GRAFANA_WEBHOOK_PATH), settings["url"])
    assert settings.get("httpMethod", "POST") == "POST"
    assert settings["authorization_scheme"] == "Bearer"
    assert ENV_REFERENCE.fullmatch(settings["authorization_credentials"])
    # Grafana allows Basic Authentication or the Authorization header, not both.
    assert not {"username", "password"} & set(settings)


def test_the_commented_hmac_signature_is_what_queuebot_checks() -> None:
    hmac = _settings("token+hmac")["hmacConfig"]
    assert set(hmac) == {"secret", "header", "timestampHeader"}
    assert ENV_REFERENCE.fullmatch(hmac["secret"])
    assert hmac["header"] == SIGNATURE_HEADER
    assert hmac["timestampHeader"] == TIMESTAMP_HEADER
    readme = README.read_text(encoding="utf-8")
    assert f"QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER={TIMESTAMP_HEADER}" in readme
    assert "hmacConfig" not in _settings("token")  # commented out unless chosen


def _settings(variant: str) -> dict[str, Any]:
    (contact_point,) = CONTACT_FILES[variant]["contactPoints"]
    settings: dict[str, Any] = contact_point["receivers"][0]["settings"]
    return settings


def _routes(route: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield route
    for child in route.get("routes", []):
        yield from _routes(child)


def test_the_policy_sends_to_an_existing_contact_point() -> None:
    document = CONTACT_FILES["token"]
    names = {(cp.get("orgId", 1), cp["name"]) for cp in document["contactPoints"]}
    (policy,) = document["policies"]
    for route in _routes(policy):
        if "receiver" in route:
            assert (policy.get("orgId", 1), route["receiver"]) in names, route["receiver"]
        for timing in ("group_wait", "group_interval", "repeat_interval"):
            assert DURATION.fullmatch(route.get(timing, "1m")), route[timing]
    assert "receiver" in policy  # the root policy needs one
    assert {"alertname", "grafana_folder", "runner_type"} <= set(policy["group_by"])


# --- The dashboard and its provider --------------------------------------------------------------


def test_the_provider_loads_dashboards_from_a_path() -> None:
    assert PROVIDER_FILE["apiVersion"] == 1
    (provider,) = PROVIDER_FILE["providers"]
    assert provider["name"].strip()
    assert provider.get("type", "file") == "file"
    path = provider["options"]["path"]
    assert path.startswith("/") or ENV_REFERENCE.match(path), path
    assert isinstance(provider.get("updateIntervalSeconds", 10), int)
    assert path in README.read_text(encoding="utf-8")  # the README says where the JSON goes


def test_the_dashboard_model() -> None:
    assert UID.fullmatch(BOARD["uid"]) and BOARD["uid"] == "queuebot-fleet"
    assert BOARD["title"].strip()
    assert BOARD.get("id") is None  # a provisioned file carries no database id
    assert isinstance(BOARD["schemaVersion"], int) and BOARD["schemaVersion"] >= MIN_SCHEMA_VERSION
    variables = {variable["name"]: variable for variable in BOARD["templating"]["list"]}
    assert len(variables) == len(BOARD["templating"]["list"])
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    runner_type = variables["runner_type"]
    assert runner_type["type"] == "query"
    assert runner_type["multi"] is True and runner_type["includeAll"] is True
    assert runner_type["datasource"] == DASHBOARD_DATASOURCE
    query = runner_type["query"]
    query = query["query"] if isinstance(query, dict) else query
    assert query == "label_values(queuebot_queued_jobs, runner_type)"


def test_panels_have_unique_ids_and_a_place_of_their_own() -> None:
    panels = list(_panels())
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), ids
    cells: dict[tuple[int, int], int] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("x", "y", "w", "h")), grid
        assert grid["w"] > 0 and grid["h"] > 0 and 0 <= grid["x"] <= grid["x"] + grid["w"]
        assert grid["x"] + grid["w"] <= GRID_COLUMNS, grid
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"panels {cells.get((x, y))} and {panel['id']} overlap"
                cells[(x, y)] = panel["id"]


def test_every_panel_queries_the_datasource_variable_in_the_right_unit() -> None:
    for panel in _panels():
        if panel["type"] == "row":
            continue
        assert panel["type"] == "timeseries", panel["type"]
        assert panel["datasource"] == DASHBOARD_DATASOURCE, panel["id"]
        targets = panel["targets"]
        assert targets
        assert len({t["refId"] for t in targets}) == len(targets)
        metrics = set()
        for target in targets:
            assert target["datasource"] == DASHBOARD_DATASOURCE, (panel["id"], target["refId"])
            for selector in _selectors(target["expr"]):
                metrics.add(selector.group())
                matchers = re.match(r"\{([^}]*)\}", target["expr"][selector.end() :])
                assert matchers and 'runner_type=~"$runner_type"' in matchers.group(1), target
        unit = "s" if metrics & DURATION_METRICS else "short"
        assert panel["fieldConfig"]["defaults"]["unit"] == unit, panel["title"]


def test_the_dashboard_names_only_its_own_variables() -> None:
    """Grafana does not interpolate the environment in dashboard JSON: every `$` there is a
    dashboard variable or one of Grafana's own (`$__rate_interval`, `$__all`)."""
    names = {variable["name"] for variable in BOARD["templating"]["list"]}
    for path, text in _strings(BOARD):
        for name in re.findall(r"\$\{?([A-Za-z0-9_]+)", text):
            assert name in names or name.startswith("__"), ("/".join(path), text)


# --- The environment ------------------------------------------------------------------------------


def _provisioning_files() -> dict[str, Any]:
    return {
        "rules": RULE_FILE,
        **{f"contact point ({v})": d for v, d in CONTACT_FILES.items()},
        "provider": PROVIDER_FILE,
    }


def test_every_interpolated_dollar_is_an_environment_variable() -> None:
    """In the fields Grafana interpolates, a bare `$name` would be replaced too (by nothing):
    every `$` is `${VAR}`, or `$$` for a literal one."""
    for file, document in _provisioning_files().items():
        for path, text in _interpolated(document):
            rest = ENV_REFERENCE.sub("", text.replace("$$", ""))
            assert "$" not in rest, f"{file}: {'/'.join(path)}: {text}"


def test_every_environment_variable_is_documented_in_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    used = {
        name
        for document in _provisioning_files().values()
        for _, text in _interpolated(document)
        for name in ENV_REFERENCE.findall(text.replace("$$", ""))
    }
    assert {"QUEUEBOT_PROMETHEUS_UID", "QUEUEBOT_WEBHOOK_TOKEN"} <= used
    assert {name for name in used if f"`{name}`" not in readme} == set()


def test_the_metrics_named_here_are_the_ones_queuebot_declares() -> None:
    """The dashboard and rule may name only what the bot writes: its declared fleet families,
    with a histogram's and a counter's sample suffixes."""
    declared = set()
    for name, (kind, _, labels) in FLEET.items():
        if kind == "histogram":
            declared |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        elif kind == "counter":
            declared.add(f"{name}_total")
        else:
            declared.add(name)
        assert set(labels) <= EXPORTED_LABELS, name
    assert declared == EXPORTED_METRICS
