"""Projects: create, list, read (with its models), update, clone. Deletion is checked with the trash (lifecycle)."""

from registry import Context, check, expect


@check("projects.create")
def create(context: Context):
    answer = context.client.projects.create(project="sdk-project", name="SDK project", owner=context.owner)
    context.made["project"] = answer["project"]
    return answer


@check("projects.list")
def list_projects(context: Context):
    answer = context.client.projects.list(context.owner)
    expect(any(item["project"] == context.seeded["project"] for item in answer["projects"]), "the seeded project is listed")
    return answer


@check("projects.retrieve")
def retrieve(context: Context):
    answer = context.client.projects.retrieve(context.owner, context.seeded["project"])
    expect(any(model["model"] == context.seeded["model"] for model in answer["models"]), "the project's model is among its models")
    return answer


@check("projects.update")
def update(context: Context):
    project = context.made.get("project", "sdk-project")
    star = context.client.projects.update(context.owner, project, starred=True)
    expect(star["starred"] is True and star["starCount"] == 1, "a star answers the new star count")
    return context.client.projects.update(context.owner, project, description="updated by the SDK")


@check("projects.clone")
def clone(context: Context):
    return context.client.projects.clone(context.owner, context.seeded["project"], project_body="sdk-project-copy")
