"""Deployments: create on the seeded model with its ONNX export (its revision queued on the seeded host, which runs
nothing, so it stays deploying), list, retrieve and a metadata update. The delete runs with the trash checks, last, so the
traffic checks (health, logs, metrics) find the deployment. Predict goes to another deployment of the same model, seeded
live: its revision served by a real inference server."""

import base64

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
    listed = {d["deployment"]: d for d in answer["deployments"]}
    expect(set(listed) == {context.made["deployment"], context.seeded["liveDeployment"]} and answer["total"] == 2, "the deployments of that model are listed")
    made = listed[context.made["deployment"]]
    expect(made["resources"]["cpu"] == 2 and made["metered"], "at its size, metered")
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


@check("deployments.health")
def deployment_health(context: Context):
    answer = context.client.deployments.health(context.owner, context.made["deployment"])
    expect(answer["healthy"] is False and "deploying" in answer.get("error", ""), "not healthy while deploying, saying why, at once")
    return answer


@check("deployments.logs")
def deployment_logs(context: Context):
    answer = context.client.deployments.logs(context.owner, context.made["deployment"], severity="INFO,WARNING", limit=1)
    expect(len(answer["entries"]) == 1, "one entry: its creation is logged")
    if "nextPageToken" in answer:
        older = context.client.deployments.logs(context.owner, context.made["deployment"], page_token=answer["nextPageToken"], severity="INFO,WARNING", limit=1)
        expect(older["entries"] and older["entries"][0] != answer["entries"][0], "the next page holds an older entry")
    return answer


@check("deployments.metrics")
def deployment_metrics(context: Context):
    answer = context.client.deployments.metrics(context.owner, context.made["deployment"], range="1h")
    expect(answer["summary"]["totalRequests"] == 0 and len(answer["timeSeries"]["requests"]) >= 60, "no requests yet, a bucket per minute")
    overview = context.client.deployments.metrics(context.owner, context.made["deployment"], view="overview")
    expect(set(overview["timeSeries"]) == {"requests", "errors", "latencyP95"}, "overview: requests, errors and P95 only")
    sparkline = context.client.deployments.metrics(context.owner, context.made["deployment"], sparkline="true")
    expect(sparkline["requests24h"] == [] and sparkline["totalRequests"] == 0, "sparkline: no hours with requests")
    return answer


@check("deployments.predict")
def deployment_predict(context: Context):
    image = base64.b64decode(context.seeded["predictImage"])
    answer = context.client.deployments.predict(context.owner, context.seeded["liveDeployment"], body={"file": ("shapes.png", image, "image/png"), "conf": 0.25})
    expect(answer["images"][0]["shape"] == [90, 120] and answer["metadata"]["task"] == "detect", "one image, its [height, width], the task")
    return answer
