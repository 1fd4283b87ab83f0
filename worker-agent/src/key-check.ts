// Whether the control plane takes this host's worker key, asked without opening a session: a session would take over
// from an agent already connected with the key (closing it as replaced). The control plane checks the key before the
// WebSocket handshake (control-plane/src/workers/worker-socket.ts): a refused key is answered 401, an accepted one
// reaches the handshake, which this request leaves incomplete (no Sec-WebSocket-Key), so it is answered 400.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AGENT_ROUTES } from '@vp/protocol';

const CHECK_TIMEOUT_MS = 15_000;

export type KeyVerdict = 'accepted' | 'refused';

/** 'accepted' or 'refused'; throws when the answer tells neither (unreachable, another server, a proxy's error). */
export function checkWorkerKey(server: string, workerKey: string): Promise<KeyVerdict> {
  const url = new URL(`${server.replace(/^ws/, 'http')}${AGENT_ROUTES.connect}`);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, {
      headers: { authorization: `Bearer ${workerKey}`, connection: 'Upgrade', upgrade: 'websocket' },
      timeout: CHECK_TIMEOUT_MS,
    });
    req.on('response', (response) => {
      response.resume();
      if (response.statusCode === 401) resolve('refused');
      else if (response.statusCode === 400) resolve('accepted');
      else
        reject(
          new Error(
            `${url.href} answered HTTP ${response.statusCode}, neither a refusal (401) nor the handshake (400)`,
          ),
        );
    });
    // An accepted key with a complete handshake would be a session; this request never sends one.
    req.on('upgrade', (_response, socket) => {
      socket.destroy();
      reject(new Error(`${url.href} opened a socket without a handshake`));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url.href} in ${CHECK_TIMEOUT_MS / 1000} s`)));
    req.on('error', (error) => reject(error));
    req.end();
  });
}

/** What the operator does once the key is refused: a new token on the appliance, enrolled here with the agent's config. */
export function reenrollAdvice(config: { server: string; configFile: string; hostName: string | undefined }): string {
  const name = config.hostName ?? 'NAME';
  return (
    `to enroll this host again, on the appliance run \`vpctl hosts rotate ${name}\` (or \`vpctl hosts connect ${name} [--workspace W]\` ` +
    "when `vpctl hosts list` no longer lists it: disconnecting removes a host), then on this host, as root or the agent's user, " +
    `\`vp-worker enroll --server ${config.server} --token TOKEN --config ${config.configFile}\` with the token it printed, and start the agent again`
  );
}
