"""Uploads: a signed URL, the PUT, completion, then ingest of the uploaded archive."""

import base64
import hashlib

import httpx
from registry import Context, check, expect


@check("upload.signed_url")
def signed_url(context: Context):
    archive = base64.b64decode(context.seeded["archive"])
    target = context.client.datasets.create(dataset="sdk-upload", name="upload", task="detect", owner=context.owner)
    context.made["uploadDataset"] = target["dataset"]
    answer = context.client.upload.signed_url(body={"assetType": "datasets", "assetId": target["id"], "filename": "shapes.zip", "contentType": "application/zip", "totalBytes": len(archive)})
    put = httpx.put(answer["uploadUrl"], content=archive, headers={"content-type": "application/zip", **answer.get("headers", {})})
    expect(put.status_code == 200, f"the PUT to uploadUrl succeeds (got {put.status_code})")
    context.made["uploadSession"] = answer["sessionId"]
    context.made["uploadMd5"] = hashlib.md5(archive).hexdigest()
    return answer


@check("upload.complete")
def complete(context: Context):
    return context.client.upload.complete(session_id=context.made["uploadSession"], md5=context.made["uploadMd5"])


@check("datasets.ingest")
def ingest(context: Context):
    return context.client.datasets.ingest(context.owner, context.made["uploadDataset"], body={"sessionId": context.made["uploadSession"]})
