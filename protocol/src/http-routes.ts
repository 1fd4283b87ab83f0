// The control plane's HTTP paths that a worker agent calls, in one place for both sides: the agent builds its URLs
// from them and the control plane mounts its routes on them, so neither can move without the other.
export const AGENT_ROUTES = {
  /** POST `{ token, hostname }` → the host's worker key (`vp-worker enroll`). */
  enroll: '/api/hosts/enroll',
  /** The agent's WebSocket (an HTTP upgrade; worker key). */
  connect: '/api/workers/connect',
  /** PUT a running job's checkpoint, `?attempt=N` (worker key). Koa path syntax. */
  checkpoint: '/api/workers/jobs/:jobId/checkpoint',
  /** PUT one of a job's outputs (`JobSpec.outputs`) after it exited 0, before it is reported completed, `?attempt=N` (worker key). */
  output: '/api/workers/jobs/:jobId/outputs/:name',
} as const;

/** A route's path with its `:name` parameters filled in, each URI-encoded. */
export function routePath(route: string, params: Record<string, string> = {}): string {
  return route.replace(/:(\w+)/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${route}: no value for :${name}`);
    return encodeURIComponent(value);
  });
}
