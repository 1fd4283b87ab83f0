"""Account: summary, API keys, storage, profiles and follows."""

from registry import Context, check, expect


@check("account.summary")
def summary(context: Context):
    answer = context.client.account.summary()
    expect(answer["username"] == context.owner, f"the summary is of the key's workspace {context.owner}")
    return answer


@check("account.api_keys")
def api_keys(context: Context):
    answer = context.client.account.api_keys()
    expect(any(context.seeded["key"].startswith(key["keyPrefix"]) for key in answer["keys"]), "the key in use is listed by its prefix")
    return answer


@check("account.storage")
def storage(context: Context):
    answer = context.client.account.storage(details="true")
    expect(answer["breakdown"]["byCategory"]["datasets"]["bytes"] > 0, "the seeded dataset's images count in the datasets category")
    return answer


@check("account.profile")
def profile(context: Context):
    answer = context.client.account.profile(username=context.seeded["stranger"])
    expect(answer["user"]["username"] == context.seeded["stranger"], "the profile asked for")
    return answer


@check("account.follow")
def follow(context: Context):
    stranger = context.seeded["stranger"]
    before = context.client.account.profile(username=stranger)["user"]["followerCount"]
    answer = context.client.account.follow(username=stranger, followed=True)
    expect(answer["followed"] and answer["followerCount"] == before + 1, "following counts once")
    again = context.client.account.follow(username=stranger, followed=True)
    expect(again["followerCount"] == before + 1, "following twice counts once")
    expect(context.client.account.profile(username=stranger)["user"]["isFollowed"], "the profile shows the follow")
    return answer
