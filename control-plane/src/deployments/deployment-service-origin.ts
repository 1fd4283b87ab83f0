// Where the control plane reaches a host's inference server. The agent reports a URL (job.service), but only its port
// is taken: the host is the address the agent's own connection comes from, the scheme http. An agent that named
// another address (127.0.0.1, a neighbour's, a metadata service) would otherwise have the platform request it and pass
// its answer back through the service URL, health and predict.
import { isIP } from 'node:net';

/** `http://<agentAddress>:<reported port>`; undefined when the agent's address is not an IP address. */
export function serviceOrigin(agentAddress: string, reportedUrl: string): string | undefined {
  const reported = URL.parse(reportedUrl);
  if (!reported) return undefined;
  const port = reported.port || (reported.protocol === 'https:' ? '443' : '80');
  const address = agentAddress.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  const family = isIP(address);
  if (family === 0) return undefined;
  return `http://${family === 6 ? `[${address}]` : address}:${port}`;
}
