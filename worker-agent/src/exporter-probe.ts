// Which model formats this host's trainer environment can export to: its `vp-probe-exporters` command (installed
// with the trainer) prints `{"exporters": [...], "missing": {format: reason}}`. Run at the agent's start, bounded in time
// and output; a probe that fails or prints nonsense means no exporters (logged), never a stopped agent, and is tried
// again later: a host busy at the start (a training job on every core) can outrun the bound with its toolchains there.
import { AgentMessage } from '@vp/protocol';
import type { Logger } from './log.ts';

export type Capabilities = Omit<Extract<AgentMessage, { type: 'capabilities' }>, 'type'>;

export const PROBE_COMMAND = 'vp-probe-exporters';
export const PROBE_TIMEOUT_MS = 60_000;
/** The probe prints a few hundred bytes; more than this is not its answer. */
export const PROBE_MAX_OUTPUT_BYTES = 256 * 1024;
/** The protocol's limit on one reason; a longer one is cut rather than losing the whole answer. */
const MAX_REASON_CHARS = 512;

/** What a failed probe answers: this very object, so a caller can tell a failure from an environment exporting nothing. */
export const NO_EXPORTERS: Capabilities = Object.freeze({ exporters: [], missingExporters: {} });
/** After a failed probe the next waits this long, doubling after each failure up to the cap. */
export const PROBE_RETRY = { firstMs: 30_000, capMs: 30 * 60_000 };

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

/**
 * Probes until an answer parses, reporting each result: a failure reports no exporters at once (the host's other
 * capabilities are not held back) and the probe runs again after PROBE_RETRY's back-off. stop() ends the retries, and
 * an answer that comes after it is not reported.
 */
export function keepProbingExporters(
  run: () => Promise<string>,
  log: Logger,
  report: (capabilities: Capabilities) => void,
  retry = PROBE_RETRY,
): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = async (delayMs: number): Promise<void> => {
    const capabilities = await probeExporters(run, log);
    if (stopped) return;
    report(capabilities);
    if (capabilities !== NO_EXPORTERS) return;
    log('info', 'probing the exporters again later', { delayMs });
    timer = setTimeout(() => void attempt(Math.min(delayMs * 2, retry.capMs)), delayMs);
  };
  void attempt(retry.firstMs);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
