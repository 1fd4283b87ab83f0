// /api/deployments/{owner} and /api/deployments/{owner}/{deployment}: dedicated inference endpoints' lifecycle.
import { defineRoute } from '../http/define-route.ts';
import { OwnerPath } from '../datasets/dataset.schemas.ts';
import type { UpdateOutcome } from './deployment.service.ts';
import {
  DeploymentCreate,
  DeploymentCreated,
  DeploymentDeleted,
  DeploymentList,
  DeploymentListQuery,
  DeploymentPath,
  DeploymentRead,
  DeploymentUpdate,
  DeploymentUpdated,
} from './deployment.schemas.ts';

const STATUSES =
  'Status: creating (its model’s ONNX export is awaited), deploying (its inference server starts on a worker host of its region), ready, ' +
  'stopping, stopped, failed (statusMessage says why). A default-size deployment (1 CPU, 2 GiB) scales to zero after DEPLOYMENT_IDLE_SECONDS ' +
  'without a request: its server stops and it stays ready; the next request starts it again and waits for it (up to DEPLOYMENT_WAKE_SECONDS). ' +
  'A host that is lost gets its deployments restarted on another host of the region (deploying until they serve again). ';

export const listDeployments = defineRoute({
  method: 'GET',
  path: '/api/deployments/:owner',
  tag: 'Deployments',
  summary: "A workspace's deployments, newest first",
  description:
    STATUSES +
    'Members of the workspace list all of them; anyone else (anonymous included) must filter by one public model (model={project}/{model}): ' +
    'without it, anonymous is 401 and another workspace’s key 403. A private model the caller cannot view is 404. apiKeyId, camera and ' +
    'cameraApplying are shown to members only.',
  auth: 'optional',
  limit: 'default',
  request: { params: OwnerPath, query: DeploymentListQuery },
  response: { status: 200, description: 'Deployments', schema: DeploymentList },
  errors: [403, 404],
  handler: (ctx, { params, query }) => ctx.state.services.deployments.list(ctx.state.actor, params.owner, query),
});

export const createDeployment = defineRoute({
  method: 'POST',
  path: '/api/deployments/:owner',
  tag: 'Deployments',
  summary: 'Deploy a model as a dedicated inference endpoint (editor or above)',
  description:
    STATUSES +
    'The model (in the owner workspace; weights required, 400 without; 409 while training) is served from its automatic ONNX export (queued when ' +
    'missing) by the appliance’s inference server, run as a service job on a connected worker host that runs inference servers in the region (a host ' +
    'of no region serves every region; 503 when none does), with the size’s CPU and memory as its limits. Sizes: cpu 1, 2, 4, 6, 8; memoryGi 2, 4, ' +
    '8, 16, 24, 32; the default size scales to zero when idle and is not metered, any other is. The URL name must be free in the workspace (409). ' +
    'A key of the deployment’s own is minted (apiKeyId; the key itself, apiKey, is answered this once): it reaches this deployment’s predict and ' +
    'service URL only. The answer’s status is creating.',
  auth: 'key',
  limit: 'default',
  request: { params: OwnerPath, body: DeploymentCreate },
  response: { status: 201, description: 'Creating', schema: DeploymentCreated },
  errors: [403, 404, 409, 503],
  handler: (ctx, { params, body }) => ctx.state.services.deployments.create(ctx.state.actor, params.owner, body),
});

export const readDeployment = defineRoute({
  method: 'GET',
  path: '/api/deployments/:owner/:deployment',
  tag: 'Deployments',
  summary: 'One deployment',
  description:
    STATUSES +
    'serviceUrl `<appliance>/svc/<id>` stays the same across renames and replaces. resources: the live revision’s size; minInstances 0 for the ' +
    'default size (it scales to zero), else 1. Deployments of public models are readable by anyone (without the member-only fields).',
  auth: 'optional',
  limit: 'default',
  request: { params: DeploymentPath },
  response: { status: 200, description: 'The deployment', schema: DeploymentRead },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.deployments.read(ctx.state.actor, params),
});

export const updateDeployment = defineRoute({
  method: 'PATCH',
  path: '/api/deployments/:owner/:deployment',
  tag: 'Deployments',
  summary:
    'Rename, set metadata, stop, start, replace, resize or set the camera (editor or above; one change per call)',
  description:
    'Bodies: {name}: renames; the URL name becomes a slug of it (answered as deployment; 409 when taken), the old path is 404, serviceUrl is ' +
    'unchanged. {metadata}: replaces it ({} clears). {action: "stop"}: its servers stop; 200 stopped, or 202 stopping while a host stops one. ' +
    '{action: "start"} (stopped or failed; 409 otherwise, 200 when already ready): 202 deploying. {action: "replace", model, project?, cpu?, ' +
    'memoryGi?} (ready only, 409 otherwise): rolls out another model of the workspace (project defaults to the current model’s), optionally at ' +
    'another size: a new revision starts while the live one keeps serving; traffic switches when the new server passes its health check, then the ' +
    'old one stops. A revision that fails (its job failed, no health in time, its export failed) is rolled back: the deployment stays ready on the ' +
    'old one, statusMessage and an ERROR log entry say why. 202 deploying. {action: "resize", cpu?, memoryGi?} (ready only): the same rollout, ' +
    'same model, another size; resizing to the default size removes the camera. {action: "camera", url, fps?} (ready, custom size only: 403 on ' +
    'the default size): the RTSP/RTSPS camera the server reads at fps frames per second (default 1); url null removes it. 202 ready with ' +
    'cameraApplying true until the server took it; a failed change keeps the previous camera and sets statusMessage. In the Mutation rate category.',
  auth: 'key',
  limit: 'mutation',
  request: { params: DeploymentPath, body: DeploymentUpdate },
  documentBody: true,
  response: {
    status: 200,
    description: 'Done (ready or stopped)',
    schema: DeploymentUpdated,
    alternate: {
      status: 202,
      description: 'Rolling out (deploying or stopping), or a camera change applying',
      when: (result) => (result as UpdateOutcome).accepted,
    },
  },
  errors: [403, 404, 409, 503],
  handler: (ctx, { params, body }) => ctx.state.services.deployments.update(ctx.state.actor, params, body),
});

export const deleteDeployment = defineRoute({
  method: 'DELETE',
  path: '/api/deployments/:owner/:deployment',
  tag: 'Deployments',
  summary: 'Delete a deployment for good (editor or above)',
  description:
    'Its servers are stopped, its record, log and request history deleted and its own key revoked; its name is free again.',
  auth: 'key',
  limit: 'default',
  request: { params: DeploymentPath },
  response: { status: 200, description: 'Deleted', schema: DeploymentDeleted },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.deployments.remove(ctx.state.actor, params),
});

export const deploymentRoutes = [listDeployments, createDeployment, readDeployment, updateDeployment, deleteDeployment];
