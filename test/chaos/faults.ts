// The faults the chaos suite injects, and each round's plan of them: drawn from the run's seeded random source only,
// so a seed replays the same schedule.
import type { SeededRandom } from '../helpers/random.ts';
import type { ChaosAppliance } from './appliance.ts';
import { WorkDisk } from './work-disk.ts';

export const FAULT_KINDS = [
  'kill-replica',
  'term-replica',
  'kill-agent',
  'term-agent',
  'restart-postgres',
  'cut-agent',
  'fill-disk',
  'slow-store',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  kind: FaultKind;
  /** Milliseconds into the round. */
  at: number;
  /** Which replica or agent (modulo their number). */
  target: number;
  /** How long it lasts before that part is restored (restarted, reconnected, freed). */
  lastsMs: number;
  /** slow-store: the delay of each chunk. */
  delayMs: number;
}

/** Faults at random moments of a round: one to three, of any kinds, on any parts. */
export function planFaults(random: SeededRandom, roundMs: number): Fault[] {
  const kinds = WorkDisk.canMount() ? FAULT_KINDS : FAULT_KINDS.filter((kind) => kind !== 'fill-disk');
  return Array.from({ length: 1 + random.int(3) }, () => ({
    kind: random.pick(kinds),
    at: random.int(roundMs),
    target: random.int(1000),
    lastsMs: 1000 + random.int(6000),
    delayMs: 100 + random.int(1400),
  })).sort((a, b) => a.at - b.at);
}

export function describe(fault: Fault): string {
  return `${fault.kind}#${fault.target} at ${fault.at} ms for ${fault.lastsMs} ms`;
}

/** Injects the fault, waits while it lasts, then restores that part. */
export async function inject(appliance: ChaosAppliance, fault: Fault): Promise<void> {
  const replica = appliance.replicas[fault.target % appliance.replicas.length]!;
  const agent = appliance.agents[fault.target % appliance.agents.length]!;
  const lasting = () => new Promise((resolve) => setTimeout(resolve, fault.lastsMs));
  switch (fault.kind) {
    case 'kill-replica':
    case 'term-replica':
      await replica.process.kill(fault.kind === 'kill-replica' ? 'SIGKILL' : 'SIGTERM');
      await lasting();
      await appliance.startReplica(replica);
      return;
    case 'kill-agent':
    case 'term-agent':
      await agent.process.kill(fault.kind === 'kill-agent' ? 'SIGKILL' : 'SIGTERM');
      await lasting();
      agent.process.start();
      return;
    case 'restart-postgres':
      await appliance.postgres.stop('immediate');
      await lasting();
      await appliance.postgres.start();
      return;
    case 'cut-agent':
      agent.proxy.cutAll();
      await lasting();
      agent.proxy.restore();
      return;
    case 'fill-disk':
      agent.disk!.fill();
      await lasting();
      agent.disk!.free();
      return;
    case 'slow-store':
      appliance.storeProxy.slow(fault.delayMs);
      await lasting();
      appliance.storeProxy.restore();
  }
}
