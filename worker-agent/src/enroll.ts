import { chmodSync, chownSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { AGENT_ROUTES } from '@vp/protocol';

export interface Enrolled {
  hostId: string;
  name: string;
}

/**
 * Exchanges a one-time enrollment token for the host's worker key and saves it in the agent's config
 * file: `server` and `workerKey` (the settings config.ts reads) and the host's id and name (so a
 * restart reuses the host's record). Other settings already in the file are kept. The file holds a
 * secret: mode 0600 in a 0700 directory, written via a temporary file and a rename so a crash never
 * leaves half a config.
 */
export async function enroll(options: { server: string; token: string; configPath: string }): Promise<Enrolled> {
  const server = options.server.replace(/\/+$/, '');
  const response = await fetch(`${server}${AGENT_ROUTES.enroll}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: options.token, hostname: hostname() }),
  });
  const body = (await response.json().catch(() => ({}))) as {
    hostId?: string;
    name?: string;
    workerKey?: string;
    error?: string;
  };
  if (!response.ok || !body.workerKey || !body.hostId || !body.name) {
    throw new Error(`enrollment refused (${response.status}): ${body.error ?? 'unexpected response'}`);
  }

  const dir = dirname(options.configPath);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const config = {
    ...readExisting(options.configPath),
    server,
    workerKey: body.workerKey,
    hostId: body.hostId,
    hostName: body.name,
  };
  const temporary = `${options.configPath}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600); // an existing file's mode is not changed by writeFileSync
  // Root enrolling again for an agent that runs as its own user (install-worker.sh's vp-worker): that user keeps reading it.
  const owner = ownerOf(options.configPath);
  if (owner && process.getuid?.() === 0) chownSync(temporary, owner.uid, owner.gid);
  renameSync(temporary, options.configPath);
  return { hostId: body.hostId, name: body.name };
}

function ownerOf(path: string): { uid: number; gid: number } | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined; // none yet: the new file is the enrolling user's
  }
}

function readExisting(path: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`cannot read ${path}: ${(error as Error).message}`);
  }
}
