import { useBalance, useTransactions } from './queries.ts';

const KINDS: Record<string, string> = {
  grant: 'Grant',
  adjustment: 'Adjustment',
  charge: 'Charge',
  refund: 'Refund',
};

/** The workspace's credit (owners and admins): the balance, and every transaction newest first. */
export function CreditsPage() {
  const balance = useBalance();
  const transactions = useTransactions();
  const rows = transactions.data?.pages.flatMap((page) => page.transactions) ?? [];
  const total = transactions.data?.pages[0]?.total;
  return (
    <>
      <h1>Credits</h1>
      {balance.error ? <p role="alert">{balance.error.message}</p> : null}
      {balance.data ? (
        <section className="card" aria-labelledby="balance-heading">
          <h2 id="balance-heading">Balance</h2>
          <p>
            <strong>{balance.data.balanceDisplay}</strong>
            {balance.data.balanceCents < 0 ? ' (below zero: a job cost more than was left)' : null}
          </p>
          <p className="muted">
            {balance.data.billingEnabled
              ? balance.data.billingEnforced
                ? 'Training and batch predict are refused when the balance cannot cover their estimate.'
                : 'Jobs are charged what they ran; nothing is refused for credit, so the balance may go below zero.'
              : 'Billing is off on this appliance: estimates are shown and charges are recorded at $0.00.'}{' '}
            The operator adds credit with <code>vpctl credits grant</code>.
          </p>
        </section>
      ) : balance.error ? null : (
        <p role="status">Loading the balance…</p>
      )}
      <h2>Transactions{total !== undefined ? ` (${total})` : ''}</h2>
      {transactions.error ? <p role="alert">{transactions.error.message}</p> : null}
      {transactions.isPending ? <p role="status">Loading the transactions…</p> : null}
      {transactions.data && rows.length === 0 ? <p>No transactions yet.</p> : null}
      {rows.length > 0 ? (
        <table className="models" aria-label="Transactions, newest first">
          <thead>
            <tr>
              <th scope="col">Date</th>
              <th scope="col">Kind</th>
              <th scope="col">Description</th>
              <th scope="col">Amount</th>
              <th scope="col">Balance after</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.id}>
                <th scope="row">{new Date(row.createdAt).toLocaleString()}</th>
                <td>{KINDS[row.kind] ?? row.kind}</td>
                <td>{row.description}</td>
                <td>{row.amountDisplay}</td>
                <td>{dollars(row.balanceAfter)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {transactions.hasNextPage ? (
        <button
          type="button"
          disabled={transactions.isFetchingNextPage}
          onClick={() => void transactions.fetchNextPage()}
        >
          Show older transactions
        </button>
      ) : null}
    </>
  );
}

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** US cents as the API formats amounts ($1,234.50; -$3.20). */
const dollars = (cents: number) => usd.format(cents / 100);
