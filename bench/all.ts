/**
 * `npm run bench [-- NAME...] [-- --save]`: every benchmark (or the named ones: api, upload, images, ingest, train,
 * export, predict, deploy, embed, reference, console, fleet), one after the other, then one table of their figures:
 * benchmark, figure, value, the ceiling measured in the same run, ratio, its spread over the benchmark's rounds
 * ((max − min) ÷ median), target, verdict, and the last saved value of
 * the row on this machine at this speed with the change (bench/history.ts; `!` marks a row worse by more than its
 * noise; saved runs whose ceilings say the machine ran at another speed are named and skipped). `--save`
 * keeps this run's rows in bench/history/. Each runs as `node bench/NAME.ts` with its progress on stderr; its own report goes to
 * bench/results/run-<time>/NAME.log and its figures to NAME.json there (see recordResult), from which the table is
 * made. Exit status 1 when a target fails or a benchmark breaks (no figures), so a regression shows the day it lands.
 * Each benchmark's settings (BENCH_SECONDS, BENCH_IMAGES, …) pass through.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  compareWithHistory,
  saveHistory,
  SPEED_TOLERANCE,
  type Comparison,
  type HistoryRow,
  type RowChange,
} from './history.ts';
import type { BenchResult, Figure } from './lib.ts';
import { ROOT } from './lib.ts';

const HISTORY = join(ROOT, 'bench', 'history');

const BENCHMARKS = [
  'api',
  'upload',
  'images',
  'ingest',
  'train',
  'export',
  'predict',
  'deploy',
  'embed',
  'reference',
  'console',
  'fleet',
];

interface Outcome {
  benchmark: string;
  figures: Figure[];
  /** Why there are no figures: the benchmark broke. */
  error?: string;
}

function runOne(benchmark: string, dir: string): Promise<Outcome> {
  const resultFile = join(dir, `${benchmark}.json`);
  const logFile = join(dir, `${benchmark}.log`);
  process.stderr.write(`\n== bench:${benchmark} (report: ${logFile})\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join('bench', `${benchmark}.ts`)], {
      cwd: ROOT,
      env: { ...process.env, BENCH_RESULT_FILE: resultFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.pipe(createWriteStream(logFile));
    child.once('error', (error) => resolve({ benchmark, figures: [], error: `could not start: ${error.message}` }));
    child.once('exit', (code, signal) => {
      if (existsSync(resultFile)) {
        const result = JSON.parse(readFileSync(resultFile, 'utf8')) as BenchResult;
        resolve({
          benchmark,
          figures: result.figures,
          error: code === 0 ? undefined : `exited ${signal ?? code} after its figures (see its report)`,
        });
      } else {
        resolve({ benchmark, figures: [], error: `no figures: exited ${signal ?? code} (see the lines above)` });
      }
    });
  });
}

const number = (value: number) =>
  Number.isInteger(value) || Math.abs(value) >= 100
    ? value.toFixed(0)
    : Math.abs(value) >= 10
      ? value.toFixed(1)
      : value.toFixed(2);

const percent = (ratio: number) => `${(100 * ratio).toFixed(1)}%`;

/** The saved row as the table shows it: its ratio where it has one, else its value. */
const lastShown = ({ last }: RowChange) =>
  last === undefined ? '-' : last.ratio === undefined ? `${number(last.value)} ${last.unit}` : percent(last.ratio);

function changeShown({ change, worse }: RowChange): string {
  if (change === undefined) return '-';
  return `${change >= 0 ? '+' : ''}${(100 * change).toFixed(1)}%${worse ? ' !' : ''}`;
}

/**
 * One row per figure, and one per benchmark that broke; every broken benchmark and failed target is FAIL. Beside each
 * figure, the last saved value of its row and the change (`changes`, in the order of the figures).
 */
function table(outcomes: Outcome[], changes: RowChange[]): { lines: string[]; failed: number } {
  const header = [
    'benchmark',
    'figure',
    'value',
    'ceiling',
    'ratio',
    'spread',
    'target',
    'verdict',
    'last saved',
    'change',
  ];
  const rows: string[][] = [];
  let failed = 0;
  let index = 0;
  for (const { benchmark, figures, error } of outcomes) {
    for (const f of figures) {
      if (f.pass === false) failed++;
      const change = changes[index++]!;
      rows.push([
        benchmark,
        f.figure,
        `${number(f.value)} ${f.unit}`,
        f.ceiling === undefined ? '-' : `${number(f.ceiling)} ${f.unit}`,
        f.ratio === undefined ? '-' : percent(f.ratio),
        f.spread === undefined ? '-' : percent(f.spread),
        f.target ?? '-',
        f.pass === undefined ? '-' : f.pass ? 'PASS' : 'FAIL',
        lastShown(change),
        changeShown(change),
      ]);
    }
    if (error) {
      failed++;
      rows.push([benchmark, error, '-', '-', '-', '-', '-', 'FAIL', '-', '-']);
    }
  }
  const widths = header.map((_, i) => Math.max(header[i].length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => ([2, 3, 4, 5, 8, 9].includes(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return { lines: [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)], failed };
}

/** What "last saved" compared with, and which saved runs it left out for their speed. */
function historyLegend({ skipped, speedUnknown }: Comparison): string {
  const lines = [
    `last saved: this machine's last \`npm run bench -- --save\` with the row, at this speed (ceilings within ${SPEED_TOLERANCE}×); ! worse by more than its noise`,
  ];
  if (speedUnknown)
    lines.push('  (no row of this run has a ceiling: its speed is unknown, saved runs compared by CPU alone)');
  for (const run of skipped)
    lines.push(
      `  skipped ${run.savedAt} ${run.commit}: its ceilings are ${run.speedFactor.toFixed(2)}× apart from this run's`,
    );
  return lines.join('\n');
}

const save = process.argv.includes('--save');
const chosen = process.argv.slice(2).filter((arg) => arg !== '--save');
const unknown = chosen.filter((name) => !BENCHMARKS.includes(name));
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}; choose from ${BENCHMARKS.join(', ')}`);
  process.exit(2);
}
const dir = join(ROOT, 'bench', 'results', `run-${new Date().toISOString().replace(/[:.]/g, '-')}`);
mkdirSync(dir, { recursive: true });
const outcomes: Outcome[] = [];
for (const benchmark of chosen.length ? chosen : BENCHMARKS) outcomes.push(await runOne(benchmark, dir));
const rows: HistoryRow[] = outcomes.flatMap(({ benchmark, figures }) => figures.map((f) => ({ benchmark, ...f })));
const comparison = compareWithHistory(HISTORY, rows);
const { lines, failed } = table(outcomes, comparison.changes);
console.log(`\n${lines.join('\n')}\n`);
console.log(historyLegend(comparison));
if (save) console.log(`saved to ${saveHistory(HISTORY, rows)}`);
console.log(failed ? `${failed} FAIL (figures and reports in ${dir})` : `ALL PASS (figures and reports in ${dir})`);
process.exitCode = failed ? 1 : 0;
