"""Model exports: create (queued on the seeded host, which runs nothing), list, retrieve, cancel; a mobile import link for
the seeded completed coreml export, and resolving it without a key."""

from urllib.parse import parse_qs, urlsplit

from registry import Context, check, expect


def _model(context: Context) -> tuple[str, str, str]:
    return context.owner, context.seeded["project"], context.seeded["model"]


@check("exports.create")
def export_create(context: Context):
    answer = context.client.exports.create(*_model(context), format="onnx", args={"imgsz": 320, "quantize": 16})
    expect(answer["status"] == "queued" and "gpuType" not in answer, "an onnx export waits for the seeded host")
    context.made["export"] = answer["id"]
    return answer


@check("exports.list")
def export_list(context: Context):
    answer = context.client.exports.list(*_model(context), status="queued")
    expect([e["id"] for e in answer["exports"]] == [context.made["export"]], "the queued export is listed")
    return answer


@check("exports.retrieve")
def export_retrieve(context: Context):
    answer = context.client.exports.retrieve(*_model(context), context.made["export"])
    expect(answer["export"]["args"] == {"imgsz": 320, "quantize": 16}, "the args as normalized")
    return answer


@check("exports.mobile")
def export_mobile(context: Context):
    answer = context.client.exports.mobile(*_model(context), context.seeded["mobileExport"])
    context.made["mobileLink"] = answer["importUrl"]
    return answer


@check("exports.resolve_mobile")
def export_resolve_mobile(context: Context):
    link = urlsplit(context.made["mobileLink"])
    fragment = parse_qs(link.fragment)
    answer = context.client.exports.resolve_mobile(link.path.rsplit("/", 1)[-1], expires=int(fragment["expires"][0]), signature=fragment["signature"][0])
    expect(answer["format"] == "coreml" and answer["exportId"] == context.seeded["mobileExport"], "the seeded coreml export")
    return answer


@check("exports.delete")
def export_delete(context: Context):
    answer = context.client.exports.delete(*_model(context), context.made["export"])
    expect(answer["action"] == "cancelled", "an active export is cancelled")
    expect(context.client.exports.retrieve(*_model(context), context.made["export"])["export"]["status"] == "cancelled", "and reads cancelled")
    return answer
