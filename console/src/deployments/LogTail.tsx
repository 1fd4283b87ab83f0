import { useEffect, useState } from 'react';
import { useDeploymentLogs } from './queries.ts';

/** Minimum severities as the API filters them: each keeps its level and every one above it. */
const LEVELS: Array<{ label: string; severities: string }> = [
  { label: 'every entry', severities: '' },
  { label: 'info and above', severities: 'INFO,NOTICE,WARNING,ERROR,CRITICAL,ALERT,EMERGENCY' },
  { label: 'warnings and above', severities: 'WARNING,ERROR,CRITICAL,ALERT,EMERGENCY' },
  { label: 'errors only', severities: 'ERROR,CRITICAL,ALERT,EMERGENCY' },
];

/**
 * The deployment's log, newest first: a live tail (the newest entries read every 3 s, pausable), a minimum
 * severity, a full-text search done by the server, and older entries a page at a time.
 */
export function LogTail({ owner, deployment }: { owner: string; deployment: string }) {
  const [severities, setSeverities] = useState('');
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  const [live, setLive] = useState(true);
  useEffect(() => {
    const timer = setTimeout(() => setSearch(typed.trim()), 150);
    return () => clearTimeout(timer);
  }, [typed]);
  const logs = useDeploymentLogs(owner, deployment, { severities, search, live });
  const entries = logs.data?.pages.flatMap((page) => page.entries) ?? [];
  return (
    <section className="card" aria-labelledby="logs-heading">
      <h2 id="logs-heading">Log</h2>
      <div className="toolbar" role="search" aria-label="Filter the log">
        <label htmlFor="logs-severity">Severity</label>
        <select id="logs-severity" value={severities} onChange={(event) => setSeverities(event.target.value)}>
          {LEVELS.map((level) => (
            <option key={level.label} value={level.severities}>
              {level.label}
            </option>
          ))}
        </select>
        <label htmlFor="logs-search">Search</label>
        <input id="logs-search" type="search" value={typed} onChange={(event) => setTyped(event.target.value)} />
        <button type="button" aria-pressed={live} onClick={() => setLive(!live)}>
          Live
        </button>
      </div>
      {logs.error ? <p role="alert">{logs.error.message}</p> : null}
      <p role="status" className="muted">
        {logs.data
          ? `${entries.length.toLocaleString()} entries shown${search ? ` matching “${search}”` : ''}${logs.hasNextPage ? ', more below' : ''}`
          : 'Loading the log…'}
      </p>
      {entries.length > 0 ? (
        <table className="models log-table" aria-label="Log entries">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Severity</th>
              <th scope="col">Entry</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry, index) => (
              <tr key={`${entry.timestamp}-${index}`} data-severity={entry.severity}>
                <td>{new Date(entry.timestamp).toLocaleString()}</td>
                <td>{entry.severity}</td>
                <td>{entry.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {logs.hasNextPage ? (
        <button type="button" disabled={logs.isFetchingNextPage} onClick={() => void logs.fetchNextPage()}>
          Older entries
        </button>
      ) : null}
    </section>
  );
}
