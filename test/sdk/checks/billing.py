"""Billing: transactions with their date filters, and the usage summary."""

from registry import Context, check, expect


@check("billing.transactions")
def transactions(context: Context):
    answer = context.client.billing.transactions()
    expect(context.client.billing.transactions(from_="2000-01-01", to="2000-01-02")["transactions"] == [], "from/to bound the list")
    return answer


@check("billing.usage_summary")
def usage_summary(context: Context):
    return context.client.billing.usage_summary()
