"""Storage integrations: S3 credentials of the test's S3 server (seeded["s3"]), discovered, connected, browsed, updated
and disconnected; the credentials never come back."""

from registry import Context, check, expect


def _credentials(context: Context) -> dict:
    s3 = context.seeded["s3"]
    return {"accessKeyId": s3["accessKeyId"], "secretAccessKey": s3["secretAccessKey"], "endpoint": s3["endpoint"], "region": "us-east-1"}


@check("storage_integrations.discover")
def discover(context: Context):
    answer = context.client.storage_integrations.discover(body={"provider": "s3", "credentials": _credentials(context)})
    expect(context.seeded["s3"]["bucket"] in answer["targets"], "the seeded bucket is readable")
    expect(context.client.storage_integrations.list()["integrations"] == [], "discover saves nothing")
    return answer


@check("storage_integrations.create")
def create(context: Context):
    bucket = context.seeded["s3"]["bucket"]
    answer = context.client.storage_integrations.create(body={"provider": "s3", "credentials": _credentials(context), "targets": [bucket]})
    expect(answer["targets"] == [bucket] and answer["provider"] == "s3", "the bucket connected")
    expect(context.seeded["s3"]["secretAccessKey"] not in str(answer), "no secret in the answer")
    context.made["integration"] = answer["id"]
    return answer


@check("storage_integrations.list")
def integrations_list(context: Context):
    answer = context.client.storage_integrations.list()
    expect([item["id"] for item in answer["integrations"]] == [context.made["integration"]], "the connected integration")
    expect(context.seeded["s3"]["secretAccessKey"] not in str(answer), "no secret in the list")
    return answer


@check("storage_integrations.objects")
def objects(context: Context):
    s3 = context.seeded["s3"]
    answer = context.client.storage_integrations.objects(context.made["integration"], target=s3["bucket"], prefix="images/")
    expect([entry["key"] for entry in answer["entries"]] == s3["keys"], "the objects beneath the prefix")
    return answer


@check("storage_integrations.update")
def update(context: Context):
    answer = context.client.storage_integrations.update(context.made["integration"], processing=False)
    expect(answer["processing"] is False, "processing turned off")
    return answer


@check("storage_integrations.delete")
def delete(context: Context):
    answer = context.client.storage_integrations.delete(context.made["integration"])
    expect(context.client.storage_integrations.list()["integrations"] == [], "disconnected")
    return answer
