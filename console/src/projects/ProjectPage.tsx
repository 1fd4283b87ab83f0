import { useMemo, useState } from 'react';
import { Link, modelPath, projectsPath } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { RunComparison } from '../training/RunComparison.tsx';
import { TrainForm } from '../training/TrainForm.tsx';
import { useProject } from './queries.ts';

/** A project: its models with their status and headline metrics, and (for editors) a new training. */
export function ProjectPage({ owner, project }: { owner: string; project: string }) {
  const found = useProject(owner, project);
  const canEdit = useCanEdit(owner);
  // The runs to compare: those ticked, else (once there are two) the two newest that ran an epoch.
  const [ticked, setTicked] = useState<string[] | undefined>();
  const models = found.data?.models;
  const compared = useMemo(() => {
    const ran = (models ?? []).filter((model) => (model.epochCount ?? 0) > 0);
    const chosen = ticked ?? (ran.length >= 2 ? ran.slice(0, 2).map((model) => model.model) : []);
    return ran.filter((model) => chosen.includes(model.model));
  }, [models, ticked]);
  if (found.error) return <p role="alert">{found.error.message}</p>;
  if (!found.data) return <p role="status">Loading the project…</p>;
  const item = found.data.project;
  const all = found.data.models;
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href={projectsPath(owner)}>Projects</Link> / {item.project}
      </nav>
      <h1>{item.name}</h1>
      {item.description ? <p className="muted">{item.description}</p> : null}
      {canEdit ? <TrainForm owner={owner} project={project} /> : null}
      <section className="card" aria-labelledby="models-heading">
        <h2 id="models-heading">Models</h2>
        {all.length === 0 ? (
          <p role="status">No models yet{canEdit ? ': train one above.' : '.'}</p>
        ) : (
          <table className="models">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Status</th>
                <th scope="col">Task</th>
                <th scope="col">Epochs</th>
                <th scope="col">mAP50-95</th>
                <th scope="col">Created</th>
                <th scope="col">Compare</th>
              </tr>
            </thead>
            <tbody>
              {all.map((model) => (
                <tr key={model.id}>
                  <th scope="row">
                    <Link href={modelPath(owner, project, model.model)}>{model.name}</Link>
                  </th>
                  <td>{model.status}</td>
                  <td>{model.task}</td>
                  <td>
                    {model.epochCount ?? 0}
                    {model.epochs ? ` / ${model.epochs}` : ''}
                  </td>
                  <td>{formatMetric(headline(model.metrics))}</td>
                  <td>{new Date(model.createdAt).toLocaleString()}</td>
                  <td>
                    {(model.epochCount ?? 0) > 0 ? (
                      <input
                        type="checkbox"
                        aria-label={`Compare ${model.name}`}
                        checked={compared.some((other) => other.model === model.model)}
                        onChange={(event) =>
                          setTicked(
                            event.target.checked
                              ? [...compared.map((other) => other.model), model.model]
                              : compared.map((other) => other.model).filter((name) => name !== model.model),
                          )
                        }
                      />
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {compared.length > 0 ? <RunComparison owner={owner} project={project} runs={compared} /> : null}
    </>
  );
}

/** The metric a list shows first: mAP50-95 (of boxes, masks, poses or oriented boxes), else top-1 accuracy. */
export function headline(metrics: Record<string, number> | undefined): number | undefined {
  if (!metrics) return undefined;
  return (
    metrics['mAP50-95'] ??
    Object.entries(metrics).find(([name]) => /^metrics\/(mAP50-95\(|accuracy_top1)/.test(name))?.[1]
  );
}

export function formatMetric(value: number | undefined): string {
  return value === undefined ? '—' : value.toFixed(3);
}
