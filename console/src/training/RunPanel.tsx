import { Fragment, useMemo } from 'react';
import { ConsoleOutput } from './ConsoleOutput.tsx';
import { MetricChart, type Series } from './MetricChart.tsx';
import { useCancelTraining, useTraining } from './queries.ts';

type Job = NonNullable<ReturnType<typeof useTraining>['data']>;

/** Which reported metrics go on which chart, by name. */
const CHARTS: { title: string; test: (name: string) => boolean }[] = [
  { title: 'Losses', test: (name) => name.includes('loss') },
  { title: 'Accuracy (mAP, precision, recall)', test: (name) => name.startsWith('metrics/') },
  { title: 'Learning rate', test: (name) => name.startsWith('lr/') },
];

const ACTIVE = new Set(['pending', 'starting', 'running']);

/**
 * The model's training run: status, progress and time left, curves per epoch, the host it runs on and its load at
 * the last epoch, the console output, and cancel (for editors) while it is active.
 */
export function RunPanel(props: { owner: string; project: string; model: string; canEdit: boolean }) {
  const { owner, project, model, canEdit } = props;
  const training = useTraining(owner, project, model);
  const cancel = useCancelTraining(owner, project, model);
  const job = training.data;
  const charts = useMemo(() => (job ? chartsOf(job) : []), [job]);
  if (training.error) return <p role="alert">{training.error.message}</p>;
  if (!job) return training.isPending ? <p role="status">Loading the training…</p> : <p>Not trained yet.</p>;
  const { progress, timing } = job;
  return (
    <section className="card" aria-labelledby="run-heading">
      <h2 id="run-heading">Training</h2>
      <div className="job-progress">
        <progress max={100} value={progress.percentage} aria-label="Training progress" />
        <span role="status">
          {job.status}: epoch {progress.currentEpoch} of {progress.totalEpochs} ({Math.round(progress.percentage)} %)
          {ACTIVE.has(job.status) && timing.etaMs ? `, about ${duration(timing.etaMs)} left` : ''}
        </span>
        {canEdit && ACTIVE.has(job.status) ? (
          <button type="button" disabled={cancel.isPending} onClick={() => cancel.mutate()}>
            Cancel training
          </button>
        ) : null}
      </div>
      {job.error ? <p role="alert">{job.error.message}</p> : null}
      {cancel.error ? <p role="alert">{cancel.error.message}</p> : null}
      {job.compute ? (
        <p className="muted">
          On {job.compute.host ?? 'a host not yet chosen'}
          {job.compute.device ? ` (${job.compute.device})` : ''}, attempt {job.compute.attempts}.
        </p>
      ) : null}
      <div className="charts">
        {charts.map((chart) => (
          <MetricChart key={chart.title} {...chart} />
        ))}
      </div>
      <HostLoad system={job.history.at(-1)?.system ?? null} />
      <h3>Console</h3>
      <ConsoleOutput lines={job.console} />
    </section>
  );
}

/** Each chart's epochs and series from the per-epoch history (epochs 1-based, as the trainer prints them). */
function chartsOf(job: Job): { title: string; x: number[]; series: Series[] }[] {
  const epochs = job.history.map((row) => row.epoch + 1);
  const names = [...new Set(job.history.flatMap((row) => Object.keys(row.metrics)))];
  return CHARTS.map(({ title, test }) => ({
    title,
    x: epochs,
    series: names.filter(test).map((label) => ({
      label,
      values: job.history.map((row) => {
        const value = row.metrics[label];
        return typeof value === 'number' ? value : null;
      }),
    })),
  })).filter((chart) => chart.series.length > 0);
}

/** The host's load at the last epoch: its numbers, one level of nesting (per GPU) spelled out. */
function HostLoad({ system }: { system: Record<string, unknown> | null }) {
  if (!system) return null;
  const rows = Object.entries(system).flatMap(([name, value]): [string, string][] => {
    if (typeof value === 'number') return [[name, value.toLocaleString()]];
    if (value && typeof value === 'object')
      return Object.entries(value as Record<string, unknown>).flatMap(([part, inner]): [string, string][] =>
        typeof inner === 'number'
          ? [[`${name} ${part}`, inner.toLocaleString()]]
          : inner && typeof inner === 'object'
            ? Object.entries(inner as Record<string, unknown>)
                .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
                .map(([field, number]) => [`${name} ${part} ${field}`, number.toLocaleString()])
            : [],
      );
    return [];
  });
  if (rows.length === 0) return null;
  return (
    <>
      <h3>Host at the last epoch</h3>
      <dl className="figures">
        {rows.map(([name, value]) => (
          <Fragment key={name}>
            <dt>{name}</dt>
            <dd>{value}</dd>
          </Fragment>
        ))}
      </dl>
    </>
  );
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 90) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 90 ? `${minutes} min` : `${(minutes / 60).toFixed(1)} h`;
}
