// /api/deployments/{owner}/{deployment}/predict, health, metrics and logs: a deployment's traffic through the platform.
import { defineRoute } from '../http/define-route.ts';
import { PredictForm, PredictResponse } from '../predict/model-predict.schemas.ts';
import {
  DeploymentHealth,
  DeploymentLogs,
  DeploymentMetrics,
  LogsQuery,
  MetricsQuery,
} from './deployment-traffic.schemas.ts';
import { DeploymentPath } from './deployment.schemas.ts';

const PATH = '/api/deployments/:owner/:deployment';

export const predictDeployment = defineRoute({
  method: 'POST',
  path: `${PATH}/predict`,
  tag: 'Deployments',
  summary: "Run the deployment's model on one image",
  description:
    'The body and answer of POST /api/models/{owner}/{project}/{model}/predict (multipart file, or source in a form or JSON body: an http(s) ' +
    'URL is fetched by the platform through its outbound policy, never by the deployment). The platform reads and checks the request as model ' +
    "predict does (400 and 413 before the deployment is called), then sends it to the deployment's live inference server, waking one scaled " +
    'to zero (the request waits for it, up to DEPLOYMENT_WAKE_SECONDS, then 503). Errors of the server: what the caller got wrong is passed ' +
    'through with its status and `{ error }`; the server failing or unreachable is 502; no answer within DEPLOYMENT_TIMEOUT_SECONDS is 504; a ' +
    'stopped or failed deployment is 503 with the reason. Every request is recorded for the metrics and logs. Who may call: keys of the owner ' +
    "workspace, the deployment's own key, and for a public model anyone (Predict rate category, counted against the caller). Calling the " +
    "deployment's serviceUrl (/svc/{id}/predict) instead skips the platform's rate limits and its checks.",
  auth: 'optional',
  deploymentKeys: true,
  limit: 'predict',
  request: { params: DeploymentPath },
  streamedBody: {
    contentType: 'multipart/form-data',
    description: 'The image and the parameters',
    schema: PredictForm,
  },
  response: { status: 200, description: 'The predictions', schema: PredictResponse, contentType: 'application/json' },
  errors: [400, 403, 404, 413, 502, 503, 504],
  handler: async (ctx, { params }) => {
    const answer = await ctx.state.services.deploymentTraffic.predict(ctx.state.actor, params, ctx.req, ctx.path);
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = answer;
  },
});

export const deploymentHealth = defineRoute({
  method: 'GET',
  path: `${PATH}/health`,
  tag: 'Deployments',
  summary: "Ping the deployment's inference server",
  description:
    "Calls the live server's GET /health and answers whether its model is loaded (healthy), the status it answered and the milliseconds it " +
    'took. It also warms the deployment: one scaled to zero is started and waited for (latencyMs includes that). While a replace rolls ' +
    'out, the revision still serving is pinged. A deployment with no server serving (creating, its first deploy, stopping, stopped, ' +
    'failed) answers healthy false at once with its status and reason, as does one whose server cannot be reached (error). Not ' +
    'recorded as a request in the metrics.',
  auth: 'optional',
  limit: 'default',
  request: { params: DeploymentPath },
  response: { status: 200, description: 'The health', schema: DeploymentHealth },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.deploymentTraffic.health(ctx.state.actor, params),
});

export const deploymentMetrics = defineRoute({
  method: 'GET',
  path: `${PATH}/metrics`,
  tag: 'Deployments',
  summary: "The deployment's request volume, errors and latency",
  description:
    'From the requests the platform recorded (its predict and the service URL). range: 1h (1-minute buckets), 6h (5 min), 24h (15 min, ' +
    'default), 7d (1 h), 30d (6 h); requests and errors have every bucket, latency only buckets with requests. Latency percentiles are ' +
    'PostgreSQL percentile_cont over the recorded latencies (milliseconds, from the platform receiving the request to the answer, a wake from ' +
    'zero included); errors are statuses 500 and above. cpuUtilization and memoryUtilization are empty: worker agents do not report a ' +
    "server's use yet; instanceCount counts the servers that took traffic in each bucket. view=overview: only requests, errors and P95; " +
    'sparkline=true: the last 24 hours by hour (empty hours omitted). Keys of the owner workspace only.',
  auth: 'key',
  limit: 'default',
  request: { params: DeploymentPath, query: MetricsQuery },
  response: { status: 200, description: 'The metrics', schema: DeploymentMetrics },
  errors: [403, 404],
  handler: (ctx, { params, query }) => ctx.state.services.deploymentTraffic.metrics(ctx.state.actor, params, query),
});

export const deploymentLogs = defineRoute({
  method: 'GET',
  path: `${PATH}/logs`,
  tag: 'Deployments',
  summary: "The deployment's log, newest first",
  description:
    'Its events (status changes, revisions, health failures, rollbacks, what its servers logged) and the requests it answered (with ' +
    'httpRequest; severity INFO, WARNING for 4xx, ERROR for 5xx), newest first. Requests appear about a second after they are answered. ' +
    'pageToken: the previous page’s nextPageToken; pages stay exact while entries are added (a 400 for a token not issued for this ' +
    'deployment). Keys of the owner workspace only.',
  auth: 'key',
  limit: 'default',
  request: { params: DeploymentPath, query: LogsQuery },
  response: { status: 200, description: 'A page of the log', schema: DeploymentLogs },
  errors: [403, 404],
  handler: (ctx, { params, query }) => ctx.state.services.deploymentTraffic.logs(ctx.state.actor, params, query),
});

export const deploymentTrafficRoutes = [predictDeployment, deploymentHealth, deploymentMetrics, deploymentLogs];
