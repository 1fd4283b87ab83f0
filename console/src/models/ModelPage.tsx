import { useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { datasetPath, Link, modelPath, projectPath } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { ExportsPanel } from '../exports/ExportsPanel.tsx';
import { PredictPanel } from '../predict/PredictPanel.tsx';
import { RunPanel } from '../training/RunPanel.tsx';
import { useTraining } from '../training/queries.ts';
import { useModel, useModelFiles } from './queries.ts';
import { ValidationPlots } from './ValidationPlots.tsx';

/**
 * A model: its status, lineage (the dataset and version it was trained on, what it started from), final metrics,
 * its files to download, and its training run. The page the trainer's "View results at" link opens.
 */
export function ModelPage({ owner, project, model }: { owner: string; project: string; model: string }) {
  const found = useModel(owner, project, model);
  // The model's own fields (status, metrics, weights) change as its training moves: read them again then.
  const trainingStatus = useTraining(owner, project, model).data?.status;
  const queries = useQueryClient();
  useEffect(() => {
    if (trainingStatus) void queries.invalidateQueries({ queryKey: ['model', owner, project, model] });
  }, [trainingStatus, queries, owner, project, model]);
  const canEdit = useCanEdit(owner);
  const files = useModelFiles(owner, project, model, !!found.data?.hasWeights);
  if (found.error) return <p role="alert">{found.error.message}</p>;
  if (!found.data) return <p role="status">Loading the model…</p>;
  const item = found.data;
  const base = typeof item.trainArgs?.model === 'string' ? item.trainArgs.model : undefined;
  const baseModel = base?.startsWith('ul://') ? base.slice('ul://'.length).split('/') : undefined;
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href={projectPath(owner, project)}>{item.projectName}</Link> / {item.model}
      </nav>
      <h1>{item.name}</h1>
      <section className="card" aria-labelledby="model-heading">
        <h2 id="model-heading">Model</h2>
        <dl className="figures">
          <dt>Status</dt>
          <dd>{item.status}</dd>
          <dt>Task</dt>
          <dd>{item.task}</dd>
          <dt>Trained on</dt>
          <dd>
            {item.dataset ? (
              <Link href={datasetPath(item.dataset.owner, item.dataset.dataset)}>
                {item.dataset.owner}/{item.dataset.dataset}
              </Link>
            ) : (
              '—'
            )}
          </dd>
          <dt>Started from</dt>
          <dd>
            {baseModel && baseModel.length === 3 ? (
              <Link href={modelPath(baseModel[0]!, baseModel[1]!, baseModel[2]!)}>{base}</Link>
            ) : (
              (base ?? '—')
            )}
          </dd>
          <dt>Epochs</dt>
          <dd>
            {item.epochs ?? '—'}
            {item.bestEpoch === undefined ? '' : ` (best: epoch ${item.bestEpoch})`}
          </dd>
        </dl>
        {item.metrics && Object.keys(item.metrics).length > 0 ? (
          <>
            <h3>Metrics</h3>
            <dl className="figures" aria-label="Metrics">
              {Object.entries(item.metrics).map(([name, value]) => [
                <dt key={`${name}-name`}>{name}</dt>,
                <dd key={`${name}-value`}>{value.toFixed(4)}</dd>,
              ])}
            </dl>
          </>
        ) : null}
        {files.data && files.data.length > 0 ? (
          <>
            <h3>Files</h3>
            <ul aria-label="Files">
              {files.data.map((file) => (
                <li key={file.name}>
                  <a href={file.downloadUrl} download={file.name}>
                    {file.name}
                  </a>{' '}
                  <span className="muted">({(file.size / 1e6).toFixed(1)} MB)</span>
                </li>
              ))}
            </ul>
          </>
        ) : null}
      </section>
      <RunPanel owner={owner} project={project} model={model} canEdit={canEdit} />
      {item.plots ? <ValidationPlots plots={item.plots} classNames={item.classNames ?? []} /> : null}
      {item.hasWeights ? (
        <>
          <PredictPanel target={{ kind: 'model', owner, project, model }} title="Predict" />
          <ExportsPanel owner={owner} project={project} model={model} canEdit={canEdit} />
        </>
      ) : null}
    </>
  );
}
