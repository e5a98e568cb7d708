"""Messages as terminal text: Block Kit and mrkdwn tokens rendered readably."""

from datetime import datetime

from queuebot_lab.sandbox.slack.text import mrkdwn, render_message, render_thread

ALERT = {
    "ts": "1795300000.000100",
    "text": "Queueing P2",
    "blocks": [
        {"type": "header", "text": {"type": "plain_text", "text": "Queueing P2"}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "Team *pytorch-dev-infra* &amp; friends"},
            "fields": [
                {"type": "mrkdwn", "text": "*Max queue time*\n114 min"},
                {"type": "mrkdwn", "text": "*Max queue size*\n14"},
            ],
        },
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": "since <!date^1795300000^{time}|a while>"}],
        },
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Run diagnostics"},
                    "action_id": "a",
                },
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Silence…"},
                    "action_id": "b",
                },
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open runbook"},
                    "action_id": "c",
                    "url": "https://example.com/runbook",
                },
            ],
        },
    ],
}


def test_buttons_render_in_brackets_with_url_targets() -> None:
    """An actions block is a row of [labels]; URL buttons show where they go."""
    assert "[Run diagnostics] [Silence…] [Open runbook ↗ https://example.com/runbook]" in (
        render_message(ALERT).splitlines()
    )


def test_header_section_and_fields_render_as_lines() -> None:
    """The header is underlined, section text is unescaped, fields sit side by side."""
    lines = render_message(ALERT).splitlines()
    assert lines[:3] == ["Queueing P2", "═" * 11, "Team *pytorch-dev-infra* & friends"]
    assert any("Max queue time" in line and "Max queue size" in line for line in lines)


def test_date_token_renders_as_local_time() -> None:
    """A <!date^…> token shows the formatted local time rather than the raw token."""
    local = datetime.fromtimestamp(1795300000).astimezone().strftime("%H:%M")
    assert mrkdwn("since <!date^1795300000^{time}|a while>") == f"since {local}"


def test_broken_date_token_falls_back() -> None:
    """A date token that cannot be read shows its fallback text."""
    assert mrkdwn("<!date^soon^{time}|later today>") == "later today"


def test_links_mentions_and_entities() -> None:
    """Links become `label (url)`, mentions @names, entities their characters."""
    users = {"U0ONCALL": "alice"}
    assert mrkdwn("<https://g.example/d?a=1&amp;b=2|Dashboard>", users) == (
        "Dashboard (https://g.example/d?a=1&b=2)"
    )
    assert (
        mrkdwn("<@U0ONCALL> <!here> <#C1|alerts> &lt;ok&gt;", users) == "@alice @here #alerts <ok>"
    )
    assert mrkdwn("<https://bare.example>") == "https://bare.example"


def test_thread_replies_are_indented() -> None:
    """Replies render under their parent, indented."""
    reply = {"ts": "1795300001.000100", "text": "finding: autoscaler at max"}
    assert render_thread({"text": "alert"}, [reply]) == "alert\n    │ finding: autoscaler at max"


def test_edited_message_says_so() -> None:
    """An edited message carries an (edited) mark."""
    assert render_message({"text": "x", "edited": {"ts": "1.2"}}).endswith("(edited)")


def test_common_emoji_shortcodes_render_as_emoji() -> None:
    """Shortcodes alert messages use become emoji; unknown ones stay readable."""
    assert mrkdwn(":red_circle: firing :unknown_thing:") == "🔴 firing :unknown_thing:"


def test_date_tokens_read_as_slack_shows_them() -> None:
    """Slack's forms: `{date_short}` Feb 18, 2014, `{date}` February 18th, 2014 (the day of
    the month never zero-padded), `{date_num}` 2014-02-18."""
    for day, nth in ((1, "1st"), (2, "2nd"), (3, "3rd"), (11, "11th"), (22, "22nd")):
        when = datetime(2027, 1, day, 12, 0).astimezone()
        token = f"<!date^{int(when.timestamp())}^{{date_short}} / {{date}} / {{date_num}}|x>"
        assert mrkdwn(token) == f"Jan {day}, 2027 / January {nth}, 2027 / 2027-01-{day:02d}"
