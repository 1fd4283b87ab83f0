import { useState } from 'react';
import { isFinal, useCancelJob, useJobQueue, type JobFilter } from './queries.ts';

const FILTERS: JobFilter[] = ['active', 'all', 'queued', 'running', 'completed', 'failed', 'cancelled'];
const KINDS = [
  '',
  'ingest',
  'training',
  'export',
  'deployment',
  'dataset-embeddings',
  'embedding-chunk',
  'batch-predict',
  'face-blur',
  'host-command',
];

/** The job queue across kinds (owners and admins): status, progress, host and attempts, and cancel. */
export function JobsPage() {
  const [filter, setFilter] = useState<JobFilter>('active');
  const [kind, setKind] = useState('');
  const queue = useJobQueue(filter, kind);
  const cancel = useCancelJob();
  const jobs = queue.data?.pages.flatMap((page) => page.jobs) ?? [];
  return (
    <>
      <h1>Jobs</h1>
      <div className="toolbar" role="search">
        <label htmlFor="jobs-status">Status</label>
        <select id="jobs-status" value={filter} onChange={(event) => setFilter(event.target.value as JobFilter)}>
          {FILTERS.map((value) => (
            <option key={value} value={value}>
              {value === 'active' ? 'active (queued or running)' : value}
            </option>
          ))}
        </select>
        <label htmlFor="jobs-kind">Kind</label>
        <select id="jobs-kind" value={kind} onChange={(event) => setKind(event.target.value)}>
          {KINDS.map((value) => (
            <option key={value} value={value}>
              {value || 'every kind'}
            </option>
          ))}
        </select>
      </div>
      {queue.error ? <p role="alert">{queue.error.message}</p> : null}
      {cancel.error ? <p role="alert">{cancel.error.message}</p> : null}
      {queue.data && jobs.length === 0 ? <p role="status">No job matches.</p> : null}
      {jobs.length > 0 ? (
        <table className="models" aria-label="Jobs">
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col">Host</th>
              <th scope="col">Attempts</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {jobs.map((job) => (
              <tr key={job.id} data-job-id={job.id}>
                <th scope="row">
                  {job.kind} <span className="muted">{job.id}</span>
                </th>
                <td>{job.error ? `${job.status}: ${job.error}` : job.status}</td>
                <td>{job.progress ? `${Math.round(job.progress.percent)} % (${job.progress.stage})` : '—'}</td>
                <td>{job.host ?? '—'}</td>
                <td>{job.attempts}</td>
                <td>{new Date(job.createdAt).toLocaleString()}</td>
                <td>
                  {isFinal(job.status) ? null : (
                    <button
                      type="button"
                      aria-label={`Cancel ${job.kind} job ${job.id}`}
                      disabled={cancel.isPending}
                      onClick={() => cancel.mutate(job.id)}
                    >
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {queue.hasNextPage ? (
        <button type="button" disabled={queue.isFetchingNextPage} onClick={() => void queue.fetchNextPage()}>
          Show older jobs
        </button>
      ) : null}
    </>
  );
}
