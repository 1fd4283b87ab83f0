"""Billing: transactions with their date filters, and the usage summary."""

from registry import Context, check, expect


@check("billing.transactions")
def transactions(context: Context):
    answer = context.client.billing.transactions()
    expect(len(answer["transactions"]) == 1 and answer["transactions"][0]["balanceAfter"] == context.seeded["grantCents"], "the seeded grant, with the balance after it")
    expect(context.client.billing.transactions(from_="2000-01-01", to="2000-01-02")["transactions"] == [], "from/to exclude what is outside them")
    today = answer["transactions"][0]["createdAt"][:10]
    expect(len(context.client.billing.transactions(from_=today, to=today)["transactions"]) == 1, "a date as to includes its whole day")
    return answer


@check("billing.usage_summary")
def usage_summary(context: Context):
    return context.client.billing.usage_summary()
