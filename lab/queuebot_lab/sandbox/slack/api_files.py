"""Sandbox Web API methods for file uploads: files.getUploadURLExternal, completeUploadExternal.

The upload URL points back at the sandbox (`/upload/v1/<file id>`, see webhooks.py), as
slack_sdk follows it verbatim (https://docs.slack.dev/messaging/working-with-files#uploading_files).
"""

from queuebot_lab.sandbox.slack.api_chat import require_membership
from queuebot_lab.sandbox.slack.events import SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.models import JSON, SandboxFile
from queuebot_lab.sandbox.slack.params import Call
from queuebot_lab.sandbox.slack.workspace import WebApiError


async def files_get_upload_url_external(call: Call) -> JSON:
    filename = call.required("filename", "invalid_arguments")
    try:
        length = int(call.required("length", "invalid_arguments"))
    except ValueError:
        raise WebApiError("invalid_arguments") from None
    if length < 1:
        # "missing_argument: ... Typically only occurs when the length provided is 0."
        raise WebApiError("missing_argument")
    ws = call.workspace
    upload = SandboxFile(ws.new_id("F"), filename, length, ws.identity.bot_user_id)
    upload.alt_txt = call.arg("alt_txt")
    ws.files[upload.id] = upload
    return {"upload_url": f"{call.base_url}/upload/v1/{upload.id}", "file_id": upload.id}


async def files_complete_upload_external(call: Call) -> JSON:
    ws = call.workspace
    listed = call.structured("files")
    if not isinstance(listed, list) or not listed:
        raise WebApiError("invalid_arguments")
    uploads: list[SandboxFile] = []
    for entry in listed:
        upload = ws.files.get(entry.get("id", "")) if isinstance(entry, dict) else None
        if upload is None or upload.content is None:
            # "file_not_found: Could not find the file from the upload ticket."
            raise WebApiError("file_not_found")
        upload.title = entry.get("title") or upload.filename
        uploads.append(upload)
    channel_ref = call.arg("channel_id") or (call.arg("channels") or "").split(",")[0] or None
    if channel_ref is not None:
        channel = ws.channel(channel_ref, by_name=False)
        require_membership(call, channel)
        comment = call.arg("initial_comment") or ""
        message = ws.post(
            channel,
            ws.identity.bot_user_id,
            comment,
            [],
            call.arg("thread_ts"),
            files=[{"id": u.id, "name": u.filename, "title": u.title} for u in uploads],
        )
        for upload in uploads:
            upload.channel, upload.thread_ts = channel.id, message.thread_ts
            upload.initial_comment = comment or None
        await call.hub.publish(
            SandboxEvent(
                SandboxEventKind.FILE_SHARED,
                channel.id,
                message.ts,
                message.thread_ts,
                detail={"files": [u.id for u in uploads]},
            )
        )
    for upload in uploads:
        upload.completed = True
    return {"files": [{"id": u.id, "title": u.title} for u in uploads]}
