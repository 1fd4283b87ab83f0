import { Link, modelPath, projectsPath } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { TrainForm } from '../training/TrainForm.tsx';
import { useProject } from './queries.ts';

/** A project: its models with their status and headline metrics, and (for editors) a new training. */
export function ProjectPage({ owner, project }: { owner: string; project: string }) {
  const found = useProject(owner, project);
  const canEdit = useCanEdit(owner);
  if (found.error) return <p role="alert">{found.error.message}</p>;
  if (!found.data) return <p role="status">Loading the project…</p>;
  const { project: item, models } = found.data;
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
        {models.length === 0 ? (
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
              </tr>
            </thead>
            <tbody>
              {models.map((model) => (
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
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
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
