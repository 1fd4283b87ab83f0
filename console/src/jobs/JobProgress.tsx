import type { Job } from './queries.ts';

/** A job's stage, percent and counts as a labelled progress bar (screen readers hear the stage and the figures). */
export function JobProgress({ job, label }: { job: Job; label: string }) {
  const progress = job.progress;
  const percent = job.status === 'completed' ? 100 : (progress?.percent ?? 0);
  const counts =
    progress?.processed !== undefined && progress.total !== undefined
      ? ` · ${progress.processed.toLocaleString()} of ${progress.total.toLocaleString()}`
      : '';
  const stage = job.status === 'running' && progress ? progress.stage : job.status;
  return (
    <div className="job-progress">
      <progress max={100} value={percent} aria-label={label} />
      <span role="status">
        {label}: {stage}, {Math.round(percent)} %{counts}
      </span>
    </div>
  );
}
