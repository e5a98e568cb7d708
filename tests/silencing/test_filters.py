"""Label names in Alertmanager's `filter=` queries: a name is written only when Alertmanager
reads it back as that name, so a hostile one never becomes a second matcher or breaks the query.

Alertmanager 0.25 (pkg/labels/parse.go) reads `^\\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\\s*(=~|=|!=|!~)…`
and has no way to quote a name: `type!="x"` is a negative matcher on `type`, `type ="x"` an
equality on `type`, and a quote is a 400. Such names are left out of the query and checked on
the labels of what Alertmanager lists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

from bot.domain.silences import RULE_UID_LABEL, Matcher
from bot.silencing.grafana import GrafanaClient
from testkit.alertmanager import Alertmanager

RULE = Matcher(name=RULE_UID_LABEL, value="r1")
HOSTILE_NAMES = ["type!", "type ", " type", 'type"', "type=~", "a:b", "", "1type", "typé", "a,b"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_name_alertmanager_would_misread_is_not_written(name: str) -> None:
    assert Matcher(name=name, value="x").filter() is None


@pytest.mark.parametrize("name", ["type", "_x", "__alert_rule_uid__", "A9_b"])
def test_a_plain_name_is_written_bare_with_the_value_quoted(name: str) -> None:
    assert Matcher(name=name, value='a"b').filter() == f'{name}="a\\"b"'


@pytest.fixture
async def grafana(alertmanager: Alertmanager) -> AsyncIterator[GrafanaClient]:
    for rule, kind in (("r1", "a"), ("r1", "b"), ("r2", "a")):
        await alertmanager.push_alert({RULE_UID_LABEL: rule, "alertname": "Q", "type": kind})
    async with aiohttp.ClientSession() as session:
        yield GrafanaClient(session, alertmanager.url, "glsa_t")


@pytest.mark.integration
class TestAgainstAlertmanager:
    async def test_plain_matchers_select_exactly_their_alert(self, grafana: GrafanaClient) -> None:
        """The baseline: rule and type select one of the three alerts."""
        assert len(await grafana.alerts((RULE, Matcher(name="type", value="a")))) == 1

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("type!", "zzz"),  # would be read as type!="zzz": both of r1's alerts
            ("type ", "a"),  # would be read as type="a"
            ('type"', "a"),  # would be a 400 that breaks the whole query
            ("type=~", ".*"),
        ],
    )
    async def test_a_hostile_label_name_selects_nothing_beyond_the_alert(
        self, grafana: GrafanaClient, name: str, value: str
    ) -> None:
        """No alert Alertmanager holds carries such a label, so nothing is selected, and the
        query still answers."""
        assert await grafana.alerts((RULE, Matcher(name=name, value=value))) == []

    async def test_finding_a_silence_by_a_hostile_first_matcher_still_answers(
        self, grafana: GrafanaClient, alertmanager: Alertmanager
    ) -> None:
        """Looking a lost silence up by its marker works whatever the first matcher's name."""
        ends = datetime.now(UTC) + timedelta(hours=1)
        made = await alertmanager.create_silence(
            [{"name": RULE_UID_LABEL, "value": "r1"}], ends, comment="x (marker-1)"
        )
        found = await grafana.find_silences(Matcher(name='type"', value="a"), "marker-1")
        assert [s.id for s in found] == [made]
