import { call } from './server.ts';
import type { World } from './world.ts';

/** Creates a project through the API and returns its id. */
export async function createProject(world: World, key: string, body: Record<string, unknown>): Promise<string> {
  const response = await call<{ id: string }>(world.server, 'POST', '/api/projects', { key, body });
  if (response.status !== 201) throw new Error(`create project: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}

/** Creates a model through the API and returns its id and URL name. */
export async function createModel(
  world: World,
  key: string,
  body: Record<string, unknown>,
): Promise<{ id: string; model: string }> {
  const response = await call<{ id: string; model: string }>(world.server, 'POST', '/api/models', { key, body });
  if (response.status !== 201) throw new Error(`create model: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Weights through the real upload API: signed URL (assetType models) → PUT → complete. */
export async function uploadWeights(
  world: World,
  key: string,
  modelId: string,
  bytes: Buffer,
  filename = 'best.pt',
): Promise<void> {
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    world.server,
    'POST',
    '/api/upload/signed-url',
    {
      key,
      body: {
        assetType: 'models',
        assetId: modelId,
        filename,
        contentType: 'application/octet-stream',
        totalBytes: bytes.length,
      },
    },
  );
  if (ticket.status !== 200) throw new Error(`signed URL: ${ticket.status} ${JSON.stringify(ticket.body)}`);
  const put = await fetch(ticket.body.uploadUrl, { method: 'PUT', headers: ticket.body.headers, body: bytes });
  if (put.status !== 200) throw new Error(`PUT: ${put.status} ${await put.text()}`);
  const done = await call(world.server, 'POST', '/api/upload/complete', {
    key,
    body: { sessionId: ticket.body.sessionId },
  });
  if (done.status !== 200) throw new Error(`complete: ${done.status} ${JSON.stringify(done.body)}`);
}
