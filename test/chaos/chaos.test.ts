// The chaos suite in CI: two control-plane replicas, three agents with the real trainer, a PostgreSQL and an S3 store,
// broken at random (kill -9, SIGTERM, a database restart, cut connections, a full disk, a slow store) while users
// train, export, ingest, upload, predict and replace deployments; no invariant may break (test/chaos/invariants.ts).
// More rounds: npm run chaos -- --rounds N --seed S.
import t from 'tap';
import { runChaos } from './run.ts';
import { CI_CASES } from './seeds.ts';

t.setTimeout(CI_CASES.length * 20 * 60_000);

for (const chaos of CI_CASES) {
  t.test(
    `seed ${chaos.seed}, ${chaos.rounds} rounds${chaos.found ? ` (once found: ${chaos.found})` : ''}`,
    async (t) => {
      const report = await runChaos({ seed: chaos.seed, rounds: chaos.rounds, log: (line) => t.comment(line) });
      t.same(
        report.violations,
        [],
        `no invariant broke (replay: npm run chaos -- --seed ${chaos.seed} --rounds ${chaos.rounds})`,
      );
      t.ok(report.faults >= chaos.rounds, `${report.faults} faults injected`);
      t.ok((report.jobs.completed ?? 0) > 0, `jobs completed under the faults: ${JSON.stringify(report.jobs)}`);
    },
  );
}
