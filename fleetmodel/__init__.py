"""A second fleet model, written from the systems' documentation and source, not from
`queuebot_lab.simulator`: the checks are tuned on one model and judged on the other.

It models runner types (scale sets) the way GitHub and actions-runner-controller report them:

- ARC's listener scales an ephemeral runner set to `min(minRunners + assigned jobs, maxRunners)`
  (cmd/ghalistener/scaler/scaler.go); each runner takes one job and is deleted. ARC registers
  a runner with GitHub (a JIT configuration) when it creates it, so a runner whose pod is still
  starting is listed by GitHub as offline; a runner whose pod never starts stays offline until
  the controller gives up on it (failed) and deletes it.
- VM fleets (an autoscaler of cloud instances) register a runner when its machine has booted:
  a starting runner is not listed at all, a lost one is listed offline until it is cleaned up.
- Provisioning delays have heavy tails (a warm node, a node scale-up, a cloud short of the
  instance type); demand follows a team's working day and week; the autoscaler's maximum may
  change; workflows move between runner types; jobs are cancelled, fail, are OOM-killed.

`plan` draws a fleet and stages a case on it, `engine` runs it, `truth` says what an on-call
would find, `github` and `arc` write what each source emits.
"""

from fleetmodel.engine import FleetRun, run
from fleetmodel.plan import Case, FleetPlan, plan
from fleetmodel.truth import Truth, truth_of

__all__ = ["Case", "FleetPlan", "FleetRun", "Truth", "plan", "run", "truth_of"]
