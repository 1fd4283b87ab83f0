import type { Logger } from 'pino';
import type { Test } from 'tap';
import type { Predictor } from '../../control-plane/src/predict/predictor.ts';
import { call, startTestServer, type TestServer } from './server.ts';

export interface World {
  server: TestServer;
  /** Owner of the personal workspace "alice" and of the team "acme-team". */
  alice: string;
  /** A stranger: personal workspace "bobby". */
  bobby: string;
  /** acme-team keys acting as its viewer and its editor. */
  viewer: string;
  editor: string;
  /** A team key of acme-team acting as its owner. */
  team: string;
}

/** A server with users, a team with a viewer and an editor, and their keys; limits raised (not under test here). */
export async function startWorld(
  t: Test,
  env: Record<string, string> = {},
  options: { predictor?: Predictor; log?: Logger } = {},
): Promise<World> {
  const server = await startTestServer(t, {
    predictor: options.predictor,
    log: options.log,
    env: {
      RATE_LIMIT_DEFAULT: '1000000',
      RATE_LIMIT_HYDRATE: '1000000',
      RATE_LIMIT_UPLOAD: '1000000',
      RATE_LIMIT_COMPARE: '1000000',
      RATE_LIMIT_EXPORT: '1000000',
      ...env,
    },
  });
  const account = server.services().account;
  for (const username of ['alice', 'bobby', 'vicky', 'eddie']) await account.createUser(username);
  await account.createTeam('acme-team', 'alice');
  await account.setMemberRole('acme-team', 'vicky', 'viewer');
  await account.setMemberRole('acme-team', 'eddie', 'editor');
  const keys = server.services().apiKeys;
  return {
    server,
    alice: (await keys.create('alice', 'a')).key,
    bobby: (await keys.create('bobby', 'b')).key,
    viewer: (await keys.create('acme-team', 'v', 'vicky')).key,
    editor: (await keys.create('acme-team', 'e', 'eddie')).key,
    team: (await keys.create('acme-team', 't')).key,
  };
}

/** Creates a dataset through the API and returns its id. */
export async function createDataset(world: World, key: string, body: Record<string, unknown>): Promise<string> {
  const response = await call<{ id: string }>(world.server, 'POST', '/api/datasets', { key, body });
  if (response.status !== 201) throw new Error(`create dataset: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}
