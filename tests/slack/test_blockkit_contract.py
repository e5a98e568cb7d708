"""The bot's Block Kit check (bot.slack.blockkit) and the local Slack API's own
(queuebot_lab.sandbox.slack.blockkit), written apart, held to one corpus: every message and modal
the renderer makes from real and hostile payloads, messages just inside and just outside each
limit, structurally wrong ones, and generated ones. Where the local Slack API refuses, the bot
refuses with the same error; where the bot accepts, so does the local Slack API.

The bot is stricter on purpose in three places, each tested as such: it keeps a message's
blocks under 12,000 characters where Slack refuses at about 13,200, it wants action ids unique
in the whole message where Slack wants them unique within their block (clicks are told apart by
action id alone), and it counts an emoji outside the Basic Multilingual Plane as two characters
(UTF-16, as Slack's clients do) where the local Slack API counts one (a code point).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.domain.diagnosis import Cause, Evidence, Finding, Report, RunnerTypeState, Scope, Verdict
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind, ValueChange
from bot.domain.queue_status import Compared, FleetView, OpenIncident, QueueStatus, TypeDetail
from bot.domain.silences import Matcher, Person, Silence
from bot.render.renderer import Renderer
from bot.slack import blockkit as bot
from bot.slack.limits import MAX_TOTAL_BLOCK_CHARS
from queuebot_lab.sandbox.slack import blockkit as sandbox
from testkit.payloads import WEBHOOK_FIXTURES, incident_of, load, reference

Blocks = list[dict[str, Any]]
AT = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
HOSTILE = "<!channel> & <https://evil.example|click> <@U123> `tick` *star* \u2028 é 🚨"


def bot_error(blocks: Any) -> str | None:
    return bot.slack_error(bot.validate_message("text", blocks))


def sandbox_error(blocks: Any) -> str | None:
    return sandbox.error_of(sandbox.message_problems(blocks))


def _size(blocks: Blocks) -> int:
    return bot.blocks_char_count(blocks)


def _repeats_action_ids_across_blocks(blocks: Blocks) -> bool:
    seen: set[str] = set()
    for block in blocks:
        own = {
            str(e.get("action_id"))
            for e in block.get("elements") or []
            if isinstance(e, dict) and "action_id" in e
        }
        if own & seen:
            return True
        seen |= own
    return False


def assert_agree(blocks: Any) -> None:
    """Same answer from both, except where the bot is stricter by design."""
    ours, slacks = bot_error(blocks), sandbox_error(blocks)
    if ours == "invalid_blocks" and _repeats_action_ids_across_blocks(blocks):
        # The bot refuses an action_id repeated anywhere in a message (Slack only within a
        # block), whatever else Slack would say of it: its schema error comes first.
        assert slacks != "invalid_blocks_format", (ours, slacks, json.dumps(blocks)[:300])
        return
    if slacks is not None:
        assert ours == slacks, (ours, slacks, json.dumps(blocks)[:300])
        return
    if ours is None:
        return
    stricter = (ours == "msg_blocks_too_long" and _size(blocks) > MAX_TOTAL_BLOCK_CHARS) or (
        ours == "invalid_blocks" and _repeats_action_ids_across_blocks(blocks)
    )
    assert stricter, (ours, bot.validate_message("t", blocks), json.dumps(blocks)[:300])


# -- what the renderer makes --------------------------------------------------------------------


def _incident(body: dict[str, Any], **extra: Any) -> Incident:
    """An incident whose parent is posted (its ts and permalink known)."""
    posted = {
        "channel_id": "C1",
        "parent_ts": "1.1",
        "permalink": "https://example.slack.com/archives/C1/p11",
    }
    return incident_of(body, **(posted | extra))


def _hostile(size: int) -> dict[str, Any]:
    body = reference()
    alert = body["alerts"][0]
    alert["labels"] = {**alert["labels"], "type": HOSTILE, "extra": "v" * 200}
    alert["annotations"] = {**alert["annotations"], "summary": HOSTILE * 3}
    alert["annotations"]["description"] = HOSTILE + "x" * size
    body["commonAnnotations"] = {}
    return body


def _many_alerts(count: int) -> dict[str, Any]:
    body = reference()
    first = body["alerts"][0]
    body["alerts"] = []
    for n in range(count):
        alert = copy.deepcopy(first)
        alert["labels"] = {**first["labels"], "runner": f"linux.{n}xlarge {HOSTILE}"}
        alert["fingerprint"] = f"fp{n}"
        body["alerts"].append(alert)
    return body


def _bodies() -> list[dict[str, Any]]:
    bodies = [load(name) for name in WEBHOOK_FIXTURES]
    bodies += [_hostile(size) for size in (0, 500, 5_000, 20_000)]
    bodies += [_many_alerts(count) for count in (2, 11, 60, 300)]
    return bodies


def _silence() -> Silence:
    matchers = ((Matcher(name="__alert_rule_uid__", value="r1"), Matcher(name="t", value=HOSTILE)),)
    return Silence(
        ids=("s1",),
        matchers=matchers,
        starts_at=AT,
        ends_at=AT + timedelta(hours=2),
        by=Person(id="U1", name=HOSTILE),
        comment=HOSTILE * 20,
    )


def _thread_events(incident: Incident) -> list[ThreadEvent]:
    group, silence = incident.group, _silence()
    lead = group.lead
    changes = tuple(
        ValueChange(alert=HOSTILE, key=key, old=1.0, new=2.5) for key in [*lead.values, HOSTILE]
    )
    return [
        ThreadEvent(kind=ThreadEventKind.CHANGED, at=AT, group=group, changes=changes,
                    joined=group.alerts, left=group.alerts, summary=HOSTILE * 10),
        ThreadEvent(kind=ThreadEventKind.RESOLVED, at=AT, group=group,
                    duration=timedelta(hours=1, minutes=42), note=HOSTILE),
        ThreadEvent(kind=ThreadEventKind.FIRED_AGAIN, at=AT, group=group,
                    quiet_for=timedelta(minutes=5)),
        ThreadEvent(kind=ThreadEventKind.SILENCED, at=AT, group=group, silence=silence),
        ThreadEvent(kind=ThreadEventKind.UNSILENCED, at=AT, group=group, silence=silence,
                    actor=Person(id="U2", name="bob")),
        ThreadEvent(kind=ThreadEventKind.SILENCE_ENDED, at=AT, group=group, silence=silence,
                    note="was expired in Grafana"),
    ]  # fmt: skip


def _report(types: int) -> Report:
    names = [f"{HOSTILE}-{n}" for n in range(types)]
    states = tuple(
        RunnerTypeState(name=name, queued=14, max_wait_seconds=6840, busy=50, registered=50,
                        idle=0, desired=50, max=50, affected=True)
        for name in names
    )  # fmt: skip
    evidence = tuple(
        Evidence(runner_type=name, measure="jobs started per minute", now=9, baseline=3,
                 workflows=(HOSTILE, "pull.yml"))
        for name in names
    )  # fmt: skip
    findings = tuple(
        Finding(cause=cause, verdict=Verdict.LIKELY, runner_types=tuple(names),
                evidence=evidence, summary=HOSTILE)
        for cause in Cause
    )  # fmt: skip
    return Report(at=AT, window="10m", scope=Scope.WIDESPREAD, runner_types=states,
                  findings=findings, primary_cause=Cause.INCREASED_WORKLOAD,
                  notes=(HOSTILE,) * 3, missing=(f"{HOSTILE}: no data",))  # fmt: skip


def _statuses(incidents: list[Incident]) -> list[QueueStatus]:
    state = RunnerTypeState(name=HOSTILE, queued=3, max_wait_seconds=600, busy=4, registered=4,
                            idle=0, desired=4, max=4, affected=True)  # fmt: skip
    many = tuple(state.model_copy(update={"name": f"{HOSTILE}{n}"}) for n in range(60))
    detail = TypeDetail(state, 4, Compared(600, 60), Compared(9, 3), Compared(900, 800),
                        Compared(2400, 2000))  # fmt: skip
    opened = tuple(OpenIncident(i, i.permalink) for i in incidents[:10])
    silenced = tuple(
        OpenIncident(i.model_copy(update={"silence": _silence()}), None) for i in incidents[:10]
    )
    fleet = FleetView(types=many, window="10m", missing=(HOSTILE,))
    return [
        QueueStatus(AT, fleet, opened, len(incidents), silenced),
        QueueStatus(AT, FleetView(error=HOSTILE * 30), opened, 3, silenced),
        QueueStatus(AT, FleetView(configured=False), (), 0, ()),
        QueueStatus(AT, fleet, opened, 40, silenced, query=HOSTILE, details=(detail,) * 8,
                    matched=30),
        QueueStatus(AT, fleet, (), 0, (), query=HOSTILE, matched=0),
    ]  # fmt: skip


def rendered() -> list[tuple[str, Blocks]]:
    renderer = Renderer()
    corpus: list[tuple[str, Blocks]] = []
    incidents: list[Incident] = []
    for index, body in enumerate(_bodies()):
        for incident in (
            _incident(body),
            _incident(body, status=IncidentStatus.RESOLVED, resolved_at=AT, fired_count=3),
            _incident(body, silence=_silence(), previous_link="https://example.slack.com/x"),
        ):
            incidents.append(incident)
            corpus.append((f"incident {index}", renderer.incident(incident).blocks))
        corpus += [
            (f"event {index} {e.kind}", renderer.thread_event(e).blocks)
            for e in _thread_events(incidents[-1])
        ]
    corpus += [
        (f"digest {n}", page.blocks)
        for n in (1, 15, 16, 40, 120)
        for page in renderer.digest(AT, incidents[:n] * (n // len(incidents[:n]) + 1))
    ]
    corpus += [(f"report {n}", renderer.diagnostics(_report(n)).blocks) for n in (1, 8, 40)]
    corpus += [(f"status {n}", renderer.queue_status(s).blocks) for n, s in
               enumerate(_statuses(incidents))]  # fmt: skip
    corpus += [("notice", renderer.notice(HOSTILE).blocks)]
    corpus += [("usage", renderer.queue_status_usage(HOSTILE).blocks)]
    return corpus


CORPUS = rendered()


def test_the_corpus_covers_every_message_kind() -> None:
    kinds = {name.split()[0] for name, _ in CORPUS}
    assert kinds == {"incident", "event", "digest", "report", "status", "notice", "usage"}
    assert len(CORPUS) > 150


@pytest.mark.parametrize(("name", "blocks"), CORPUS, ids=[name for name, _ in CORPUS])
def test_what_the_renderer_makes_both_accept(name: str, blocks: Blocks) -> None:
    assert bot_error(blocks) is None
    assert sandbox_error(blocks) is None


def test_the_silence_modal_both_accept() -> None:
    incident = _incident(_hostile(5_000))
    sets = (tuple(Matcher(name=f"l{n}", value=HOSTILE * 3) for n in range(10)),) * 10
    view = Renderer().silence_modal(incident, sets, json.dumps({"v": 1, "incident": 7}))
    assert bot.validate_view(view) == []
    assert sandbox.view_problems(view) == []


# -- made by hand: each limit, just inside and just outside -------------------------------------


def _text(kind: str, value: str) -> dict[str, str]:
    return {"type": kind, "text": value}


def _button(action_id: str = "go", **fields: Any) -> dict[str, Any]:
    return {"type": "button", "text": _text("plain_text", "Go"), "action_id": action_id, **fields}


def _limits(size: int) -> list[Blocks]:
    """Messages that put one limit at `size` (the limit itself, or one past it)."""
    return [
        [{"type": "header", "text": _text("plain_text", "h" * size)}],
        [{"type": "section", "text": _text("mrkdwn", "s" * size)}],
        [{"type": "section", "fields": [_text("mrkdwn", "f" * size)]}],
        [{"type": "context", "elements": [_text("mrkdwn", "c")] * size}],
        [{"type": "actions", "elements": [_button(f"b{i}") for i in range(size)]}],
        [{"type": "actions", "elements": [{**_button(), "text": _text("plain_text", "t" * size)}]}],
        [{"type": "actions", "elements": [_button(value="v" * size)]}],
        [{"type": "actions", "elements": [_button("a" * size)]}],
        [{"type": "divider", "block_id": "b" * size}],
        [{"type": "image", "image_url": "https://example.com/a.png", "alt_text": "a" * size}],
        [{"type": "divider"}] * size,
    ]


LIMITS = (150, 3000, 2000, 10, 25, 75, 2000, 255, 255, 2000, 50)


@pytest.mark.parametrize("index", range(len(LIMITS)))
def test_each_limit_is_the_same_for_both(index: int) -> None:
    limit = LIMITS[index]
    inside, outside = _limits(limit)[index], _limits(limit + 1)[index]
    assert bot_error(inside) is None and sandbox_error(inside) is None
    assert bot_error(outside) == sandbox_error(outside) == "invalid_blocks"


WRONG: list[Any] = [
    ["divider"],
    {"type": "divider"},
    [{"type": "table"}],
    [{"type": "section"}],
    [{"type": "section", "text": "plain string"}],
    [{"type": "section", "text": _text("markdown", "x")}],
    [{"type": "section", "text": _text("mrkdwn", "")}],
    [{"type": "header", "text": _text("mrkdwn", "h")}],
    [{"type": "context"}],
    [{"type": "actions", "elements": [{"type": "table"}]}],
    [{"type": "actions", "elements": [_button(url="ftp://example.com")]}],
    [{"type": "actions", "elements": [_button(url="https://")]}],
    [{"type": "actions", "elements": [_button(style="secondary")]}],
    [{"type": "actions", "elements": [_button(value=7)]}],
    [{"type": "actions", "elements": [_button(), _button()]}],
    [{"type": "image", "alt_text": "chart"}],
    [{"type": "image", "image_url": "https://example.com/a.png"}],
    [{"type": "image", "image_url": "javascript:alert(1)", "alt_text": "x"}],
    [{"type": "divider", "block_id": "d"}, {"type": "divider", "block_id": "d"}],
    [{"type": "input", "label": _text("plain_text", "x"), "element": {}}],
    [{"type": "markdown", "text": "m" * 12_001}],
    [{"type": "section", "text": _text("mrkdwn", "x" * 2900)}] * 5,
    [{"type": "section", "text": _text("mrkdwn", "x" * 2900)}] * 5 + [{"type": "table"}],
]


@pytest.mark.parametrize("blocks", WRONG, ids=[f"wrong-{i}" for i in range(len(WRONG))])
def test_what_slack_refuses_both_refuse_with_its_error(blocks: Any) -> None:
    assert sandbox_error(blocks) is not None
    assert bot_error(blocks) == sandbox_error(blocks)


def test_the_bot_keeps_further_from_slacks_total_than_slack_does() -> None:
    blocks = [{"type": "section", "text": _text("mrkdwn", "x" * 2500)}] * 5
    assert MAX_TOTAL_BLOCK_CHARS < _size(blocks) < 13_200
    assert (bot_error(blocks), sandbox_error(blocks)) == ("msg_blocks_too_long", None)


def test_the_bot_counts_an_emoji_as_two_characters() -> None:
    """1,500 🚨 fill a section for the bot; 1,501 are over for the bot, not for the local API."""
    inside = [{"type": "section", "text": _text("mrkdwn", "🚨" * 1500)}]
    over = [{"type": "section", "text": _text("mrkdwn", "🚨" * 1501)}]
    assert bot_error(inside) is None and sandbox_error(inside) is None
    assert (bot_error(over), sandbox_error(over)) == ("invalid_blocks", None)
    header = [{"type": "header", "text": _text("plain_text", "é" * 150)}]
    assert bot_error(header) is None  # one unit each: accents are not counted as bytes


def test_the_bot_wants_action_ids_unique_across_the_message() -> None:
    blocks = [{"type": "actions", "elements": [_button("x")]}] * 2
    assert (bot_error(blocks), sandbox_error(blocks)) == ("invalid_blocks", None)


def test_an_action_id_repeated_across_a_message_too_long_is_the_bots_schema_error() -> None:
    # Slack answers only the length (it allows the repeat across blocks); the bot's stricter
    # schema rule comes before any length, as Slack's own schema errors do.
    long_section = {"type": "section", "text": _text("mrkdwn", _string(3000))}
    blocks = [{"type": "actions", "elements": [_button("x")]}, *[long_section] * 4] * 2
    assert (bot_error(blocks), sandbox_error(blocks)) == ("invalid_blocks", "msg_blocks_too_long")
    assert_agree(blocks)


# -- generated ----------------------------------------------------------------------------------

_LENGTHS = st.sampled_from([1, 74, 75, 76, 149, 150, 151, 1999, 2000, 2001, 2999, 3000, 3001])


def _string(size: int) -> str:
    return ("é<x>&" * size)[:size]


_blocks = st.one_of(
    st.builds(lambda n: {"type": "header", "text": _text("plain_text", _string(n))}, _LENGTHS),
    st.builds(
        lambda n, kind: {"type": "section", "text": _text(kind, _string(n))},
        _LENGTHS,
        st.sampled_from(["mrkdwn", "plain_text", "markdown"]),
    ),
    st.builds(
        lambda n, k: {"type": "section", "fields": [_text("mrkdwn", _string(n))] * k},
        _LENGTHS,
        st.integers(0, 12),
    ),
    st.builds(
        lambda k, n: {"type": "context", "elements": [_text("mrkdwn", _string(n))] * k},
        st.integers(0, 12),
        st.sampled_from([1, 300, 3000, 3001]),
    ),
    st.builds(
        lambda ids, n, url: {
            "type": "actions",
            "elements": [
                {**_button(f"a{i}"), "text": _text("plain_text", _string(n)), **url} for i in ids
            ],
        },
        st.lists(st.integers(0, 30), max_size=27),
        st.sampled_from([1, 75, 76]),
        st.sampled_from([{}, {"url": "https://example.com"}, {"url": "example.com"}]),
    ),
    st.just({"type": "divider"}),
    st.builds(lambda b: {"type": "divider", "block_id": b}, st.sampled_from(["a", "b"])),
    st.builds(
        lambda alt, src: {"type": "image", **src, **alt},
        st.sampled_from([{}, {"alt_text": "chart"}]),
        st.sampled_from(
            [{}, {"image_url": "https://example.com/a.png"}, {"slack_file": {"id": "F1"}}]
        ),
    ),
    st.sampled_from([{"type": "table"}, {"type": "input"}, {"type": "markdown", "text": "x"}]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_blocks, max_size=55))
def test_generated_messages_get_the_same_answer(blocks: Blocks) -> None:
    assert_agree(blocks)
