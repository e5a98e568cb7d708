"""Sandbox Web API methods for user groups: usergroups.list and usergroups.users.list.

Each answers what Slack answers (https://docs.slack.dev/reference/methods/<method>) and
refuses with Slack's error names. Both need the usergroups:read scope.
"""

from queuebot_lab.sandbox.slack.models import JSON
from queuebot_lab.sandbox.slack.params import Call


async def usergroups_list(call: Call) -> JSON:
    """Every group, disabled ones only with include_disabled; members and count on request.

    https://docs.slack.dev/reference/methods/usergroups.list: `include_users` adds the list of
    users, `include_count` the number of users, `include_disabled` the disabled groups.
    """
    include_disabled = call.flag("include_disabled")
    include_users = call.flag("include_users")
    include_count = call.flag("include_count")
    return {
        "usergroups": [
            group.to_slack(include_users, include_count)
            for group in call.workspace.usergroups.values()
            if include_disabled or not group.is_disabled
        ]
    }


async def usergroups_users_list(call: Call) -> JSON:
    # The documented errors name no_such_subteam for a group that cannot be found and no
    # separate one for a missing `usergroup`
    # (https://docs.slack.dev/reference/methods/usergroups.users.list).
    usergroup = call.required("usergroup", "no_such_subteam")
    group = call.workspace.usergroup(usergroup, include_disabled=call.flag("include_disabled"))
    return {"users": list(group.users)}
