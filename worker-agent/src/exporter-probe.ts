// Which model formats this host's trainer environment can export to: its `vp-probe-exporters` command (installed
// with the trainer) prints `{"exporters": [...], "missing": {format: reason}}`. Run once at the agent's start, bounded
// in time and output; a probe that fails or prints nonsense means no exporters (logged), never a stopped agent.
import { AgentMessage } from '@vp/protocol';
import type { Logger } from './log.ts';

export type Capabilities = Omit<Extract<AgentMessage, { type: 'capabilities' }>, 'type'>;

export const PROBE_COMMAND = 'vp-probe-exporters';
export const PROBE_TIMEOUT_MS = 60_000;
/** The probe prints a few hundred bytes; more than this is not its answer. */
export const PROBE_MAX_OUTPUT_BYTES = 256 * 1024;
/** The protocol's limit on one reason; a longer one is cut rather than losing the whole answer. */
const MAX_REASON_CHARS = 512;

export const NO_EXPORTERS: Capabilities = { exporters: [], missingExporters: {} };

/** The probe's stdout as a `capabilities` message's fields; throws saying what is wrong with it. */
export function parseProbeOutput(stdout: string): Capabilities {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch {
    throw new Error(`the probe printed no JSON object: ${JSON.stringify(stdout.slice(0, 200))}`);
  }
  const { exporters, missing } = (value ?? {}) as { exporters?: unknown; missing?: unknown };
  const reasons = typeof missing === 'object' && missing !== null && !Array.isArray(missing) ? missing : {};
  const missingExporters = Object.fromEntries(
    Object.entries(reasons).map(([format, reason]) => [
      format,
      typeof reason === 'string' ? reason.slice(0, MAX_REASON_CHARS) : reason,
    ]),
  );
  const parsed = AgentMessage.safeParse({ type: 'capabilities', exporters, missingExporters });
  if (!parsed.success || parsed.data.type !== 'capabilities') {
    throw new Error(
      `the probe's answer is not {"exporters": [...], "missing": {...}}: ${parsed.error?.issues[0]?.message ?? 'wrong shape'}`,
    );
  }
  return { exporters: [...new Set(parsed.data.exporters)], missingExporters: parsed.data.missingExporters };
}

/** Runs the runtime's probe (which resolves with its stdout); any failure is logged and gives no exporters. */
export async function probeExporters(run: () => Promise<string>, log: Logger): Promise<Capabilities> {
  try {
    const capabilities = parseProbeOutput(await run());
    log('info', 'probed the exporters', {
      exporters: capabilities.exporters,
      missing: Object.keys(capabilities.missingExporters),
    });
    return capabilities;
  } catch (error) {
    log('warn', `no exporters: the ${PROBE_COMMAND} probe failed`, { error: (error as Error).message });
    return NO_EXPORTERS;
  }
}
