// The server's log: one ServiceLogLine (JSON) per line on stdout, which the agent forwards as the deployment's log.
import type { ServiceLogLine } from './contract.ts';

export function log(
  severity: ServiceLogLine['severity'],
  message: string,
  details: Record<string, unknown> = {},
): void {
  const line: ServiceLogLine & Record<string, unknown> = {
    severity,
    message,
    time: new Date().toISOString(),
    ...details,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
