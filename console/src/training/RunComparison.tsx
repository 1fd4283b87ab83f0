import { useQueries } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { MetricChart, type Series } from './MetricChart.tsx';

export interface ComparedRun {
  model: string;
  name: string;
  trainArgs?: Record<string, unknown>;
  metrics?: Record<string, number>;
}

type Job = NonNullable<Awaited<ReturnType<typeof readTraining>>>;

async function readTraining(owner: string, project: string, model: string) {
  return unwrap(
    await api.GET('/api/models/{owner}/{project}/{model}/training', { params: { path: { owner, project, model } } }),
  ).job;
}

const show = (value: unknown) =>
  value === undefined ? '—' : typeof value === 'number' ? String(Number(value.toPrecision(4))) : JSON.stringify(value);

/**
 * The chosen runs of a project side by side: the metrics picked, every run's curve of each on one chart (a click on
 * a legend entry hides or shows it), and a table of their settings and final metrics, optionally only the rows where
 * they differ.
 */
export function RunComparison({ owner, project, runs }: { owner: string; project: string; runs: ComparedRun[] }) {
  const jobs = useQueries({
    queries: runs.map((run) => ({
      // The run page's own query: one read serves both.
      queryKey: ['training', owner, project, run.model],
      queryFn: () => readTraining(owner, project, run.model),
    })),
  });
  // The answers change only when one is read again: what the memos below key on.
  const updated = jobs.map((job) => job.dataUpdatedAt).join(',');
  const histories = useMemo(
    () => jobs.map((job) => (job.data as Job | undefined)?.history ?? []),
    // jobs is a new array every render: `updated` says when its answers changed.
    [updated],
  );
  const names = useMemo(
    () => [...new Set(histories.flatMap((history) => history.flatMap((row) => Object.keys(row.metrics))))].sort(),
    [histories],
  );
  const [picked, setPicked] = useState<string[]>([]);
  const chosen = picked.filter((name) => names.includes(name));
  const shown = chosen.length > 0 ? chosen : names.filter((name) => /mAP50-95|accuracy_top1/.test(name)).slice(0, 1);
  const shownKey = shown.join('\n');
  const [onlyDifferences, setOnlyDifferences] = useState(false);

  const { x, series } = useMemo(() => {
    const longest = Math.max(0, ...histories.map((history) => history.length));
    const epochs = Array.from({ length: longest }, (_, index) => index + 1);
    const lines: Series[] = runs.flatMap((run, index) =>
      shown.map((metric) => ({
        label: `${run.name} · ${metric}`,
        values: epochs.map((epoch) => {
          const value = histories[index]?.find((row) => row.epoch + 1 === epoch)?.metrics[metric];
          return typeof value === 'number' ? value : null;
        }),
      })),
    );
    return { x: epochs, series: lines };
  }, [runs, shownKey, histories]);

  const rows = useMemo(() => {
    const keys = new Set<string>();
    for (const run of runs) {
      for (const key of Object.keys(run.trainArgs ?? {})) keys.add(`setting:${key}`);
      for (const key of Object.keys(run.metrics ?? {})) keys.add(`metric:${key}`);
    }
    return [...keys].sort().map((key) => {
      const [kind, name] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
      const values = runs.map((run) => show(kind === 'setting' ? run.trainArgs?.[name] : run.metrics?.[name]));
      return { key, kind, name, values, differs: new Set(values).size > 1 };
    });
  }, [runs]);

  return (
    <section className="card" aria-labelledby="compare-heading">
      <h2 id="compare-heading">Compare runs</h2>
      <fieldset className="metric-picker">
        <legend>Metrics on the chart</legend>
        {names.map((name) => (
          <label key={name}>
            <input
              type="checkbox"
              checked={shown.includes(name)}
              onChange={(event) =>
                setPicked(event.target.checked ? [...shown, name] : shown.filter((other) => other !== name))
              }
            />{' '}
            {name}
          </label>
        ))}
      </fieldset>
      {series.length > 0 ? <MetricChart title="Runs compared" x={x} series={series} /> : null}
      <label className="toggle">
        <input
          type="checkbox"
          checked={onlyDifferences}
          onChange={(event) => setOnlyDifferences(event.target.checked)}
        />{' '}
        Only what differs
      </label>
      <table className="models" aria-label="Runs side by side">
        <thead>
          <tr>
            <th scope="col">Setting or metric</th>
            {runs.map((run) => (
              <th scope="col" key={run.model}>
                {run.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows
            .filter((row) => !onlyDifferences || row.differs)
            .map((row) => (
              <tr key={row.key} className={row.differs ? 'differs' : undefined} data-differs={row.differs}>
                <th scope="row">
                  {row.name} <span className="muted">{row.kind}</span>
                </th>
                {row.values.map((value, index) => (
                  <td key={runs[index]!.model}>{value}</td>
                ))}
              </tr>
            ))}
        </tbody>
      </table>
    </section>
  );
}
