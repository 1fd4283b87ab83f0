import { useState } from 'react';
import { deploymentPath, Link } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { CreateDeployment } from './CreateDeployment.tsx';
import { OwnKey } from './OwnKey.tsx';
import { useDeployments } from './queries.ts';

/** The workspace's deployments with their status as it moves, and (for editors) a new one. */
export function DeploymentsPage({ owner }: { owner: string }) {
  const deployments = useDeployments(owner);
  const canEdit = useCanEdit(owner);
  const [created, setCreated] = useState<{ apiKey: string; slug: string }>();
  return (
    <>
      <h1>Deployments</h1>
      {canEdit && deployments.data ? (
        <CreateDeployment
          owner={owner}
          open={deployments.data.deployments.length === 0}
          onCreated={(apiKey, slug) => setCreated({ apiKey, slug })}
        />
      ) : null}
      {created ? <OwnKey owner={owner} deployment={created.slug} apiKey={created.apiKey} /> : null}
      {deployments.error ? <p role="alert">{deployments.error.message}</p> : null}
      {deployments.data && deployments.data.deployments.length === 0 ? <p role="status">No deployments yet.</p> : null}
      {deployments.data && deployments.data.deployments.length > 0 ? (
        <table className="models" aria-label="Deployments">
          <thead>
            <tr>
              <th scope="col">Deployment</th>
              <th scope="col">Model</th>
              <th scope="col">Status</th>
              <th scope="col">Region</th>
              <th scope="col">Size</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {deployments.data.deployments.map((item) => (
              <tr key={item.id}>
                <th scope="row">
                  <Link href={deploymentPath(owner, item.deployment)}>{item.name}</Link>
                </th>
                <td>{item.project && item.model ? `${item.project}/${item.model}` : '—'}</td>
                <td>{item.statusMessage ? `${item.status}: ${item.statusMessage}` : item.status}</td>
                <td>{item.region}</td>
                <td>
                  {item.resources.cpu} CPU, {item.resources.memoryGi} GiB
                </td>
                <td>{new Date(item.createdAt).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {!deployments.data && !deployments.error ? <p role="status">Loading the deployments…</p> : null}
    </>
  );
}
