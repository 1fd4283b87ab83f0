import type { JobOutcome } from '../../worker-agent/src/runtimes/runtime.ts';

/** An outcome without the run's start and end times (what the runtime measured; tests check them apart), for comparing the rest. */
export function withoutTimes(outcome: JobOutcome | undefined): Omit<JobOutcome, 'startedAt' | 'endedAt'> | undefined {
  if (!outcome) return outcome;
  const { startedAt: _startedAt, endedAt: _endedAt, ...rest } = outcome;
  return rest;
}
