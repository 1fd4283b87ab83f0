"""Dataset versions: export (create, list, update), compare, restore."""

from registry import Context, check, expect, expect_fits


@check("datasets.create_export")
def create_export(context: Context):
    return context.client.datasets.create_export(context.owner, context.made["scratch"], description="after the SDK's edits")


@check("datasets.export")
def export(context: Context):
    answer = context.client.datasets.export(context.owner, context.seeded["dataset"])
    return answer


@check("datasets.update_export")
def update_export(context: Context):
    return context.client.datasets.update_export(context.owner, context.seeded["dataset"], version=1, description="renamed by the SDK")


@check("datasets.compare")
def compare(context: Context):
    answer = context.client.datasets.compare(context.owner, context.seeded["dataset"], base=1, head=2)
    expect(len(answer["items"]) > 0, "the change made between the seeded versions is listed")
    by_hash = context.client.datasets.compare(context.owner, context.seeded["dataset"], base=1, head=2, hash=answer["items"][0]["hash"])
    expect_fits(by_hash, context.client.datasets.compare, "the hash= answer")
    expect("versions" in by_hash, "the hash= answer is the versions variant")
    return answer


@check("datasets.restore")
def restore(context: Context):
    return context.client.datasets.restore(context.owner, context.made["scratch"], version=1)
