// The chaos runs CI makes: a fixed seed for a bounded number of rounds, and the seeds that once broke an invariant, kept
// as regression cases with what they found (each bug also has a focused test beside the code it fixed). CI replays the
// cases of a few rounds; `npm run chaos -- --seed S --rounds N` replays any of them.
export interface ChaosCase {
  seed: number;
  rounds: number;
  /** A regression case: the bug this seed found (fixed since) and its focused test. */
  found?: string;
}

export const REGRESSIONS: ChaosCase[] = [
  {
    seed: 1,
    rounds: 1,
    found:
      "a deployment created while its model's ONNX export ran failed at once as if the export were deleted (test/deployments.test.ts)",
  },
  {
    seed: 2,
    rounds: 30,
    found: "a job that could not start (a full disk) showed its workspace the host's paths (test/service-jobs.test.ts)",
  },
  {
    seed: 39200,
    rounds: 102,
    found:
      'a live deployment failed: its host, back after a lost job.accepted, was told to cancel its server and the cancelled ' +
      "attempt's end ended the next (test/scheduler.test.ts, test/process-runtime.test.ts)",
  },
  {
    seed: 39200,
    rounds: 128,
    found:
      "a live deployment failed when its host's disk filled: the agent gave its server up over a record of the output " +
      'it had delivered that it could not write (test/process-runtime.test.ts)',
  },
  {
    seed: 39200,
    rounds: 196,
    found:
      "a replaced deployment's old server still served a minute later: its cancel, requested while the replica holding " +
      "its host's socket was reconnecting to the restarted database, was never forwarded (test/scheduler.test.ts)",
  },
  {
    seed: 39200,
    rounds: 200,
    found:
      "every host's disk filled with finished jobs' kept work dirs, so a deployment could start nowhere " +
      '(test/work-dir-retention.test.ts)',
  },
  {
    seed: 39300,
    rounds: 40,
    found:
      'an export stayed running for good: its end came while PostgreSQL restarted, the write failed and the report ' +
      'was dropped (the agent sends it once); the failed rollback also kept the connection from the pool ' +
      '(test/scheduler.test.ts)',
  },
];

const CI_MAX_ROUNDS = 8;

export const CI_CASES: ChaosCase[] = [
  { seed: 20261128, rounds: CI_MAX_ROUNDS },
  ...REGRESSIONS.filter((regression) => regression.rounds < CI_MAX_ROUNDS),
];
