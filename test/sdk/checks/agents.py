"""Agents (saved workflows): save, list, delete."""

from registry import Context, check

GRAPH = {"nodes": [{"id": "source", "type": "Dataset", "data": {}}], "edges": []}


@check("agents.save")
def save(context: Context):
    answer = context.client.agents.save(name="sdk-agent", graph=GRAPH, version=0, owner=context.owner)
    context.made["agent"] = answer["id"]
    return answer


@check("agents.list")
def list_agents(context: Context):
    context.client.agents.list(owner=context.owner, id=context.made["agent"])
    return context.client.agents.list(owner=context.owner)


@check("agents.delete")
def delete(context: Context):
    return context.client.agents.delete(id=context.made["agent"], owner=context.owner)
