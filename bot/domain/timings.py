"""How long leases last, how fast Slack is written to and how often loops look: each a setting
(docs/settings.md, "Timings"), with the defaults here. A test turns them down together instead of
waiting them out (and scales the local Slack's limits to match)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Timings:
    #: An outbox entry's lease, renewed every third of it while a delivery waits: a replica
    #: killed mid-delivery has its entries taken over within it.
    outbox_lease: float = 10.0
    #: How often the outbox worker looks when nothing woke it (a safety net, not the path).
    outbox_poll: float = 5.0
    #: Messages a second per channel: a little under Slack's one a second, with bursts of two.
    posts_per_second: float = 0.95
    #: A storm digest is edited at most this often (chat.update allows about 50 a minute).
    digest_edit: float = 3.0
    #: How long a worker may hold a storm's digest before another takes it over.
    digest_claim: float = 30.0
    #: A diagnostics run's claim on its incident: a run whose bot died resumes this soon.
    diagnosis_claim: float = 15.0
    #: How often the heads-up writer and the capacity report writer look for work unwoken.
    heads_up_poll: float = 5.0
    report_poll: float = 30.0
    #: How often the capacity report's weekly schedule is looked at.
    schedule_check: float = 60.0
    #: How often retention prunes what is older than it keeps.
    prune_interval: float = 3600.0
    #: How often the silences queuebot made are read back from Grafana, and the early warning
    #: reads the queue.
    silence_check: float = 30.0
    forecast_check: float = 60.0
