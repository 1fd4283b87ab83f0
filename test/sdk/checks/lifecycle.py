"""Trash: what the SDK's deletes put there, its summary and previews, restore and permanent deletion. Runs last."""

from registry import Context, check, expect, expect_fits


@check("projects.delete")
def delete_project(context: Context):
    answer = context.client.projects.delete(context.owner, context.seeded["doomedProject"])
    expect(answer.get("cascadedModels") == 1, "the project's one model goes to trash with it")
    return answer


@check("deployments.delete")
def delete_deployment(context: Context):
    answer = context.client.deployments.delete(context.owner, context.made["deployment"])
    left = [d["deployment"] for d in context.client.deployments.list(context.owner)["deployments"]]
    expect(left == [context.seeded["liveDeployment"]], "gone from the list")
    return answer


@check("lifecycle.trash")
def trash(context: Context):
    answer = context.client.lifecycle.trash()
    expect(answer["total"] >= 2, "the trashed dataset and project are listed")
    preview = context.client.lifecycle.trash(id=context.seeded["doomedProjectId"], type="project")
    expect_fits(preview, context.client.lifecycle.trash, "the preview")
    return answer


@check("lifecycle.restore")
def restore(context: Context):
    return context.client.lifecycle.restore(id=context.seeded["doomedProjectId"], type="project")


@check("lifecycle.delete_trash")
def delete_trash(context: Context):
    answer = context.client.lifecycle.delete_trash(body={"id": context.made["trashedDataset"], "type": "dataset"})
    expect(answer.get("deletedCount") == 1, "one dataset deleted for good")
    return answer
