import { useState, type FormEvent } from 'react';
import { useProject } from '../projects/queries.ts';
import { useChangeDeployment, useDeleteDeployment, useDeployment } from './queries.ts';

type Deployment = NonNullable<ReturnType<typeof useDeployment>['data']>;

/** Stop or start, replace the model (the new one takes traffic when it is ready: no downtime), delete. */
export function DeploymentActions({
  owner,
  deployment,
  onDeleted,
}: {
  owner: string;
  deployment: Deployment;
  onDeleted: () => void;
}) {
  const change = useChangeDeployment(owner, deployment.deployment);
  const remove = useDeleteDeployment(owner, deployment.deployment);
  const models = useProject(owner, deployment.project ?? '-');
  const [model, setModel] = useState('');
  const others = (models.data?.models ?? []).filter(
    (item) => item.model !== deployment.model && (item.status === 'completed' || item.hasWeights),
  );
  const replace = (event: FormEvent) => {
    event.preventDefault();
    change.mutate({ action: 'replace', model }, { onSuccess: () => setModel('') });
  };
  const stopped = deployment.status === 'stopped' || deployment.status === 'failed';
  return (
    <>
      <div className="toolbar">
        {stopped ? (
          <button type="button" disabled={change.isPending} onClick={() => change.mutate({ action: 'start' })}>
            Start
          </button>
        ) : (
          <button
            type="button"
            disabled={change.isPending || deployment.status === 'stopping'}
            onClick={() => change.mutate({ action: 'stop' })}
          >
            Stop
          </button>
        )}
        <button
          type="button"
          className="danger"
          disabled={remove.isPending}
          onClick={() => {
            if (confirm(`Delete the deployment ${deployment.name}? Its server stops and its address stops answering.`))
              remove.mutate(undefined, { onSuccess: onDeleted });
          }}
        >
          Delete
        </button>
      </div>
      {deployment.project ? (
        <form className="toolbar" onSubmit={replace} aria-label="Replace the model">
          <label htmlFor="replace-model">Replace the model with</label>
          <select id="replace-model" required value={model} onChange={(event) => setModel(event.target.value)}>
            <option value="">Choose a model of {deployment.project}</option>
            {others.map((item) => (
              <option key={item.model} value={item.model}>
                {item.name}
              </option>
            ))}
          </select>
          <button type="submit" disabled={change.isPending || !model}>
            Replace
          </button>
        </form>
      ) : null}
      {change.data ? <p role="status">{change.data.message}</p> : null}
      {change.error ? <p role="alert">{change.error.message}</p> : null}
      {remove.error ? <p role="alert">{remove.error.message}</p> : null}
    </>
  );
}
