import { useState } from 'react';
import { useHealthChecks } from './queries.ts';

type Check = NonNullable<ReturnType<typeof useHealthChecks>['data']>[number];

/** A mark beside the status word (never colour alone): ✓ OK, ! WARN, ✗ FAIL. */
const MARKS: Record<Check['status'], string> = { OK: '✓', WARN: '!', FAIL: '✗' };

/**
 * The appliance's health (owners and admins): what `vpctl doctor` checks, run live by the control plane, each with its
 * status, message and, when something is wrong, what to do; read again every 15 s, or now.
 */
export function HealthPage() {
  const checks = useHealthChecks();
  // Announced when asked for (the first load, Check now), not at every 15-second refresh.
  const [asked, setAsked] = useState(false);
  const checkNow = () => {
    setAsked(true);
    void checks.refetch().finally(() => setAsked(false));
  };
  return (
    <>
      <h1>Health</h1>
      <div className="toolbar">
        <button type="button" disabled={checks.isFetching} onClick={checkNow}>
          Check now
        </button>
        <span role="status">{asked || checks.isPending ? 'Checking…' : ''}</span>
        {checks.dataUpdatedAt ? (
          <span className="muted">
            Checked at {new Date(checks.dataUpdatedAt).toLocaleTimeString()}; again every 15 seconds.
          </span>
        ) : null}
      </div>
      {checks.error ? <p role="alert">{checks.error.message}</p> : null}
      {checks.data ? (
        <>
          <p>{verdict(checks.data)}</p>
          <table className="models" aria-label="Health checks">
            <thead>
              <tr>
                <th scope="col">Check</th>
                <th scope="col">Status</th>
                <th scope="col">Finding</th>
                <th scope="col">What to do</th>
              </tr>
            </thead>
            <tbody>
              {checks.data.map((check) => (
                <tr key={check.check} data-status={check.status}>
                  <th scope="row">{check.check}</th>
                  <td className={check.status === 'FAIL' ? 'error' : undefined}>
                    <span aria-hidden="true">{MARKS[check.status]} </span>
                    <strong>{check.status}</strong>
                  </td>
                  <td>{check.message}</td>
                  <td>{check.fix ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </>
  );
}

function verdict(checks: Check[]): string {
  const count = (status: Check['status']) => checks.filter((check) => check.status === status).length;
  const failed = count('FAIL');
  const warned = count('WARN');
  if (failed === 0 && warned === 0) return `All ${checks.length} checks are OK.`;
  const parts = [
    failed ? `${failed} failed (broken: fix first)` : '',
    warned ? `${warned} to look at (works, but WARN)` : '',
  ].filter(Boolean);
  return `${parts.join(', ')}; ${checks.length - failed - warned} OK.`;
}
