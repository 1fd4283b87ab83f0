"""Operations the appliance cannot answer as the SDK expects (see expected-failures.json; Roboflow needs the internet, so
both answer 501): each calls its route plainly, so the list entry shows up as an unexpected pass the day the route does."""

from registry import Context, check


@check("datasets.preview_roboflow")
def preview_roboflow(context: Context):
    return context.client.datasets.preview_roboflow(api_key="none")


@check("datasets.import_roboflow")
def import_roboflow(context: Context):
    return context.client.datasets.import_roboflow(items=[{"projectId": "none", "version": 1}])
