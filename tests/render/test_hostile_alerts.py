"""Whatever an alert holds, every message made of it is one Slack takes, by the bot's own check
(bot.slack.blockkit) and by the local Slack API's (queuebot_lab.sandbox.slack.blockkit), and every
piece of it stays inert in mrkdwn: generated hostile alerts through each message kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.domain.diagnosis import (
    Cause,
    Evidence,
    Finding,
    PastQueue,
    Report,
    RunnerTypeState,
    Scope,
    Verdict,
)
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind, ValueChange
from bot.domain.queue_status import Compared, FleetView, OpenIncident, QueueStatus, TypeDetail
from bot.domain.silences import Matcher, Person, Silence
from bot.render.renderer import Renderer
from bot.slack import blockkit
from bot.slack.message import Message
from queuebot_lab.sandbox.slack import blockkit as sandbox
from testkit.blocks import mrkdwn_texts
from testkit.payloads import incident_of
from tests.render.hostile import alert_bodies, hostile_body, markup_left, texts

AT = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
PREVIOUS = "https://example.slack.com/archives/C1/p1700000000000100"
RUN = "https://github.com/pytorch/pytorch/actions/runs/1/job/11"
#: chat.update refuses a message `text` longer than this (msg_too_long).
MAX_UPDATE_TEXT = 4000
RENDERER = Renderer()
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_slack_takes(message: Message, links: set[str], labels: set[str] | None) -> None:
    """Both checkers accept it, chat.update would take its text, and no markup got through."""
    assert blockkit.validate_message(message.text, message.blocks) == []
    assert sandbox.message_problems(message.blocks) == []
    # Counted in UTF-16 units, the larger of the ways Slack may count (an emoji is two).
    assert message.text and len(message.text.encode("utf-16-le")) // 2 <= MAX_UPDATE_TEXT
    for text in [message.text, *mrkdwn_texts(message.blocks)]:
        assert markup_left(text, links, labels) == [], text[:300]


def _silence(text: str) -> Silence:
    return Silence(
        ids=tuple(f"{text[:50]}{n}" for n in range(30)),
        matchers=((Matcher(name="__alert_rule_uid__", value=text), Matcher(name=text, value="x")),),
        starts_at=AT,
        ends_at=AT + timedelta(hours=2),
        by=Person(id="U1", name=text),
        comment=text,
    )


def _events(incident: Incident, text: str) -> list[ThreadEvent]:
    group, silence = incident.group, _silence(text)
    lead = group.lead
    changes = tuple(
        ValueChange(alert=text or "a", key=key, old=1.0, new=value)
        for key, value in lead.values.items()
    )
    return [
        ThreadEvent(kind=ThreadEventKind.CHANGED, at=AT, group=group, changes=changes,
                    joined=group.alerts, left=group.alerts, summary=group.summary),
        ThreadEvent(kind=ThreadEventKind.RESOLVED, at=AT, group=group,
                    duration=timedelta(hours=1, minutes=42), note=text or None),
        ThreadEvent(kind=ThreadEventKind.FIRED_AGAIN, at=AT, group=group,
                    quiet_for=timedelta(minutes=5)),
        ThreadEvent(kind=ThreadEventKind.SILENCED, at=AT, group=group, silence=silence),
        ThreadEvent(kind=ThreadEventKind.UNSILENCED, at=AT, group=group, silence=silence,
                    actor=Person(id="U2", name=text)),
        ThreadEvent(kind=ThreadEventKind.SILENCE_ENDED, at=AT, group=group, silence=silence,
                    note=text or None),
    ]  # fmt: skip


@SETTINGS
@given(alert_bodies(), texts(0, 1, 300, 3000))
@example(hostile_body(), "<!channel> 🚨 &" * 300)
def test_every_message_of_a_hostile_alert_is_one_slack_takes(
    body: dict[str, Any], text: str
) -> None:
    """The parent (firing, resolved, silenced, following another), every thread reply and the
    storm digest's pages: accepted by both checkers, and nothing in them mentions or links
    but queuebot's own links to the alert and to the previous incident."""
    incident = incident_of(body)
    links = {a.generator_url for a in incident.group.alerts} | {PREVIOUS}
    labels = {"view", "an earlier incident"}
    forms = [
        incident,
        incident.model_copy(update={"status": IncidentStatus.RESOLVED, "resolved_at": AT}),
        incident.model_copy(update={"silence": _silence(text), "previous_link": PREVIOUS}),
    ]
    for shown in forms:
        assert_slack_takes(RENDERER.incident(shown), links, labels)
    for event in _events(incident, text):
        assert_slack_takes(RENDERER.thread_event(event), links, labels)
    for page in RENDERER.digest(AT, [incident] * 17):
        assert_slack_takes(page, links, labels)


@st.composite
def _reports(draw: st.DrawFn) -> Report:
    names = draw(st.lists(texts(1, 30, 600), min_size=1, max_size=40))
    past = PastQueue(queued=3, max_wait_seconds=720)
    states = tuple(
        RunnerTypeState(name=name, queued=14, max_wait_seconds=6840, busy=50, registered=50,
                        idle=0, desired=50, max=50, affected=True, yesterday=past, week_ago=past)
        for name in names
    )  # fmt: skip
    evidence = tuple(
        Evidence(runner_type=name, measure="jobs started per minute", now=9, baseline=3,
                 yesterday=2.5, week_ago=3.5, workflows=(draw(texts()), "pull.yml"),
                 job=draw(texts()), repository=draw(texts()))
        for name in names
    )  # fmt: skip
    waiting = tuple(
        (name, ((draw(texts()), draw(texts()), AT.timestamp() - 600, RUN),) * 5) for name in names
    )
    findings = tuple(
        Finding(cause=cause, verdict=Verdict.LIKELY, runner_types=tuple(names),
                evidence=evidence, summary=draw(texts()))
        for cause in Cause
    )  # fmt: skip
    notes = tuple(draw(st.lists(texts(), max_size=5)))
    return Report(at=AT, window=draw(texts(1, 600)), scope=Scope.WIDESPREAD,
                  runner_types=states, findings=findings,
                  primary_cause=Cause.INCREASED_WORKLOAD, notes=notes,
                  missing=(f"{draw(texts())}: no data",), waiting=waiting)  # fmt: skip


@SETTINGS
@given(_reports())
def test_a_diagnostics_report_on_hostile_runner_types_is_one_slack_takes(report: Report) -> None:
    """Runner types, workflows, jobs and repositories are labels: any length, any text."""
    assert_slack_takes(RENDERER.diagnostics(report), {RUN}, None)


@SETTINGS
@given(alert_bodies(), texts(), st.sampled_from([0, 3, 40, 400]), st.sampled_from([0, 8, 60]))
def test_queue_status_with_hostile_names_and_many_silences_is_one_slack_takes(
    body: dict[str, Any], text: str, silenced: int, waiting: int
) -> None:
    """The summary and the detail of /queue-status, with many runner types waiting, many
    silences, long names, a long query and a long note."""
    incident = incident_of(body)
    link = PREVIOUS + "?thread_ts=1"
    state = RunnerTypeState(name=text or "linux", queued=3, max_wait_seconds=600, busy=4,
                            registered=4, idle=0, desired=4, max=4, affected=True)  # fmt: skip
    types = tuple(state.model_copy(update={"name": f"{text}{n}"}) for n in range(waiting))
    fleet = FleetView(types=types, window=text, missing=(text,) if text else ())
    opened = tuple(OpenIncident(incident.model_copy(update={"id": n}), link) for n in range(10))
    quiet = incident.model_copy(update={"silence": _silence(text)})
    silences = tuple(OpenIncident(quiet, link) for _ in range(silenced))
    detail = TypeDetail(state, 4, Compared(600, 60), Compared(9, 3), Compared(900, 800),
                        Compared(2400, 2000))  # fmt: skip
    statuses = [
        QueueStatus(AT, fleet, opened, 40, silences),
        QueueStatus(AT, FleetView(error=text or "down"), opened, 3, silences),
        QueueStatus(AT, fleet, opened, 40, silences, query=text, details=(detail,) * 8,
                    matched=30),
        QueueStatus(AT, fleet, (), 0, (), query=text, matched=0),
    ]  # fmt: skip
    for status in statuses:
        message = RENDERER.queue_status(status, note=text or None)
        assert_slack_takes(message, {link}, None)
