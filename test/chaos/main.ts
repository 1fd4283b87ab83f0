// `npm run chaos -- [--rounds N] [--seed S] [--agents 2|3]`: a chaos run of N rounds (default 200) with seed S (default
// random, printed), its progress on stderr; exit 1 when an invariant broke (the seed and the replay command are printed).
import { parseArgs } from 'node:util';
import { runChaos } from './run.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '200' },
    seed: { type: 'string' },
    agents: { type: 'string', default: '3' },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const rounds = Number(values.rounds);
if (!Number.isInteger(seed) || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('usage: npm run chaos -- [--rounds N] [--seed S] [--agents 2|3]\n');
  process.exit(2);
}
const started = Date.now();
const report = await runChaos({
  seed,
  rounds,
  agents: Number(values.agents),
  log: (line) => process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}\n`),
});
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
process.exit(report.violations.length > 0 ? 1 : 0);
