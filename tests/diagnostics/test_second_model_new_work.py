"""The checks on fleets of the second model where work new to a runner type fills it: told by
the runners the new work holds (job events), and by repository where ARC's metrics carry no
workflow label (its default labels: repository and job name)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, plan, run, truth_of
from testkit.fleet_reading import diagnose_run, finding


async def test_long_jobs_moved_onto_a_type_hold_its_runners_before_one_completes(
    tmp_path: Path,
) -> None:
    # ml-platform's merge queue (hour-long jobs) moved from gpu-h100-8gpu onto
    # linux-x64-highmem-16cpu, whose own merge queue (monorepo's, of the same name) takes ten
    # minutes. Jobs a minute are about as usual (0.9 against 0.87 over the hour) and none of
    # the moved jobs has completed yet, but they hold 9 of the 22 busy runners, where 9 are
    # usually busy in all and none of ml-platform's. Before, the time a job holds its runner
    # (2.2x usual) read as slower jobs, and monorepo's few jobs timed 1.2x usual as the jobs
    # that ran there before slower.
    end = datetime(2026, 11, 27, 11, 31, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=13, types=3, end=end))
    assert truth_of(fleet).affected == {"linux-x64-highmem-16cpu": "increased_workload"}
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "increased_workload" and judged.located, judged.combination
        workload = finding(judged.report, "increased_workload")
        (new,) = [e for e in workload.evidence if "new to this type" in e.measure]
        assert new.measure == "runners held by jobs of repositories new to this type"
        assert (new.repository, new.now, new.baseline) == ("acme-corp/ml-platform", 9, 0)
        assert new.why.startswith("41% of its busy runners")
        slower = finding(judged.report, "long_running_jobs")
        assert slower.verdict.value == "ruled_out", judged.combination
        assert "new to this type (acme-corp/ml-platform)" in slower.evidence[0].why


async def test_jobs_moved_onto_a_type_are_told_by_repository_where_arc_has_no_workflow_label(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # infra-tools' package and smoke-test jobs moved onto linux-arm64-4cpu, held at its maximum
    # of 7 with 216 jobs waiting (55 usual). A lean scrape keeps ARC's default labels: no
    # workflow, but each job's repository. The moved jobs, of a repository new to the type,
    # take longer than its own: its mean job time is 1.7x usual while the jobs that ran there
    # before are no slower. Before, the series had no workflow at all, and the mean read as
    # slower jobs.
    end = datetime(2026, 11, 27, 23, 24, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=12, types=3, end=end))
    assert truth_of(fleet).affected == {"linux-arm64-4cpu": "increased_workload"}
    (judged,) = await diagnose_run(
        fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary, arc_version="latest"
    )
    assert judged.named == "increased_workload" and judged.located
    slower = finding(judged.report, "long_running_jobs")
    assert slower.verdict.value == "ruled_out"
    assert "new to this type (infra-tools)" in slower.evidence[0].why


async def test_ten_minutes_of_a_workflow_up_here_and_down_there_at_the_usual_hour_is_chance(
    tmp_path: Path,
) -> None:
    # New runners fail on every type. In the last ten minutes a workflow sent
    # linux-x64-highmem-32cpu 1.2 jobs a minute (0.7 usual) and linux-x64-32cpu none (0.3
    # usual), but over the hour highmem's jobs a minute are as usual (1.53 against 1.45): work
    # moved onto it would have come all hour. Before, it read as a job moved here: more work,
    # the primary cause.
    end = datetime(2026, 11, 27, 4, 24, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=12, types=3, end=end))
    truth = truth_of(fleet)
    assert truth.primary_cause == "infrastructure" and len(truth.affected) == 3
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "infrastructure" and judged.located
    workload = finding(judged.report, "increased_workload")
    assert workload.verdict.value != "likely"
    assert not [e for e in workload.evidence if e.measure.endswith("moved here")]


async def test_a_surge_on_a_type_that_queues_every_evening_is_more_work_not_its_ceiling(
    tmp_path: Path,
) -> None:
    # linux-x64-2cpu queues at its ceiling every evening (331 jobs at this hour, busy runners
    # held at the usual 18). A surge on top: 595 wait now, 1.8x the usual queue, while jobs a
    # minute over the hour are only 1.2x usual (the extra came over the hours before) and
    # the window's burst too few to tell from chance. The ceiling did not come down: more
    # jobs came. Before, the surge read as the autoscaler's limit.
    end = datetime(2026, 11, 27, 23, 31, tzinfo=UTC)
    fleet = run(plan(Case.MIX, seed=13, types=6, end=end))
    assert truth_of(fleet).affected["linux-x64-2cpu"] == "increased_workload"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "increased_workload" and judged.located, judged.combination
        assert judged.confidence == "low", judged.combination
        (beyond,) = [
            e
            for e in finding(judged.report, "increased_workload").evidence
            if e.measure == "jobs waiting at the usual ceiling"
        ]
        assert beyond.runner_type == "linux-x64-2cpu"
        assert beyond.now is not None and beyond.baseline is not None
        assert 1.75 * beyond.baseline <= beyond.now < 2 * beyond.baseline
