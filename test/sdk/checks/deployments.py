"""Deployments: create on the seeded model with its ONNX export (its revision queued on the seeded host, which runs
nothing, so it stays deploying), list, retrieve and a metadata update. The delete runs with the trash checks, last, so the
traffic checks (health, logs, metrics, predict) find the deployment."""

from registry import Context, check, expect


@check("deployments.create")
def deployment_create(context: Context):
    answer = context.client.deployments.create(
        context.owner, project=context.seeded["project"], model=context.seeded["predictModel"], deployment="sdk-deployment", name="sdk", region="us-central1", cpu=2, memory_gi=4
    )
    expect(answer["status"] == "creating" and answer["region"] == "us-central1", "created in its region, status creating")
    context.made["deployment"] = answer["deployment"]
    context.made["deploymentId"] = answer["id"]
    return answer


@check("deployments.list")
def deployment_list(context: Context):
    answer = context.client.deployments.list(context.owner, model=f"{context.seeded['project']}/{context.seeded['predictModel']}", limit=5)
    expect([d["id"] for d in answer["deployments"]] == [context.made["deploymentId"]] and answer["total"] == 1, "the deployment of that model is listed")
    expect(answer["deployments"][0]["resources"]["cpu"] == 2 and answer["deployments"][0]["metered"], "at its size, metered")
    return answer


@check("deployments.retrieve")
def deployment_retrieve(context: Context):
    answer = context.client.deployments.retrieve(context.owner, context.made["deployment"])
    deployment = answer["deployment"]
    expect(deployment["serviceUrl"].endswith(f"/svc/{context.made['deploymentId']}"), "its own service URL")
    expect(deployment["status"] == "deploying" and "apiKeyId" in deployment, "deploying, with its own key")
    return answer


@check("deployments.update")
def deployment_update(context: Context):
    answer = context.client.deployments.update(context.owner, context.made["deployment"], body={"metadata": {"team": "vision"}})
    expect(answer["success"] and answer["status"] == "deploying", "saved; still deploying")
    expect(context.client.deployments.retrieve(context.owner, context.made["deployment"])["deployment"]["metadata"] == {"team": "vision"}, "read back")
    return answer
