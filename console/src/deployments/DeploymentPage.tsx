import { areaPath, Link, modelPath, useNavigation } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { PredictPanel } from '../predict/PredictPanel.tsx';
import { DeploymentActions } from './DeploymentActions.tsx';
import { DeploymentMetrics } from './DeploymentMetrics.tsx';
import { LogTail } from './LogTail.tsx';
import { useDeployment } from './queries.ts';

/**
 * A deployment: its status as it moves, its model and size, where to call it; try it on an image; its requests,
 * errors and latency; its log; and (for editors) stop, start, replace and delete.
 */
export function DeploymentPage({ owner, deployment }: { owner: string; deployment: string }) {
  const found = useDeployment(owner, deployment);
  const canEdit = useCanEdit(owner);
  const { navigate } = useNavigation();
  if (found.error) return <p role="alert">{found.error.message}</p>;
  if (!found.data) return <p role="status">Loading the deployment…</p>;
  const item = found.data;
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href={areaPath(owner, 'deployments')}>Deployments</Link> / {item.deployment}
      </nav>
      <h1>{item.name}</h1>
      <section className="card" aria-labelledby="deployment-heading">
        <h2 id="deployment-heading">Deployment</h2>
        <dl className="figures">
          <dt>Status</dt>
          <dd>
            <span role="status" data-status={item.status}>
              {item.statusMessage ? `${item.status}: ${item.statusMessage}` : item.status}
            </span>
          </dd>
          <dt>Model</dt>
          <dd>
            {item.project && item.model ? (
              <Link href={modelPath(owner, item.project, item.model)}>
                {item.project}/{item.model}
              </Link>
            ) : (
              '—'
            )}
          </dd>
          <dt>Region</dt>
          <dd>{item.region}</dd>
          <dt>Size</dt>
          <dd>
            {item.resources.cpu} CPU, {item.resources.memoryGi} GiB
            {item.metered ? ' (metered)' : ' (scales to zero when idle)'}
          </dd>
          <dt>Service URL</dt>
          <dd>{item.serviceUrl ? <code>{item.serviceUrl}</code> : '—'}</dd>
        </dl>
        {canEdit ? (
          <DeploymentActions
            owner={owner}
            deployment={item}
            onDeleted={() => navigate(areaPath(owner, 'deployments'), { replace: true })}
          />
        ) : null}
      </section>
      {item.status === 'ready' ? (
        <PredictPanel target={{ kind: 'deployment', owner, deployment }} title="Try it" />
      ) : null}
      <DeploymentMetrics owner={owner} deployment={deployment} />
      <LogTail owner={owner} deployment={deployment} />
    </>
  );
}
