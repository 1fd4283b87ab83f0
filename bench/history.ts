/**
 * The benchmark table's history (issue 40): `npm run bench -- --save` keeps the run's rows in bench/history/ (one
 * file per saved run: its time, commit and machine), and every `npm run bench` prints beside each row the last saved
 * value of the same row on the same machine and the change, marking a row that got worse by more than its noise.
 *
 * The same machine is the same cores and CPU model and the same speed: VMs with the same label have run 1.2–2× apart
 * on the same code, which a row with an absolute target (a p95 in ms, images/s) reads as a regression or a gain. The
 * speed is read from the ceilings both runs measured (bare Koa, the bare sharp loop, Python's predict …: programs that
 * do not change with our code): where their median differs by more than SPEED_TOLERANCE, the saved run is skipped.
 *
 * A row's figure is its ratio to the ceiling measured in the same run when it has one (that cancels most of a day's
 * machine speed), else its value. Which way is worse follows its target (`<`: lower is better, `>`: higher is); a row
 * without a comparing target is shown for information and never marked. Its noise is the spread its benchmark measured
 * over its rounds, this run's or the saved one's, whichever is larger, and at least NOISE_FLOOR.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Figure } from './lib.ts';

/** The change a row may show from run to run when its benchmark measured no spread of its own. */
export const NOISE_FLOOR = 0.1;
/** Runs whose shared ceilings differ by more than this factor (median over the rows both have) ran at different speeds. */
export const SPEED_TOLERANCE = 1.3;

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryBytes: number;
  node: string;
}

export interface HistoryRow extends Figure {
  benchmark: string;
}

export interface HistoryEntry {
  savedAt: string;
  /** `git describe --always --dirty` of the tree measured. */
  commit: string;
  machine: Machine;
  rows: HistoryRow[];
}

/** A saved run of this machine's cores and CPU model left out of the comparison: its ceilings say another speed. */
export interface SkippedRun {
  savedAt: string;
  commit: string;
  /** How far apart the two runs' ceilings are (median, ≥ 1: 2 is twice as fast or slow). */
  speedFactor: number;
}

export interface Comparison {
  /** One per row, in the rows' order. */
  changes: RowChange[];
  skipped: SkippedRun[];
  /** No row of this run has a ceiling: saved runs are compared by cores and CPU model alone. */
  speedUnknown: boolean;
}

/** How a row compares with the last saved run of the same machine. */
export interface RowChange {
  last?: HistoryRow;
  /** (now − then) ÷ then of the compared figure (ratio, else value); undefined without a last value. */
  change?: number;
  /** Worse by more than its noise, in the target's direction. */
  worse: boolean;
}

export function machineFacts(): Machine {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.versions.node,
  };
}

const sameMachine = (a: Machine, b: Machine) => a.cpus === b.cpus && a.cpuModel === b.cpuModel;
const rowKey = (row: HistoryRow) => `${row.benchmark}\u0000${row.figure}`;

/** The saved runs in `dir`, oldest first; a file that does not parse is skipped with a word on stderr. */
export function loadHistory(dir: string): HistoryEntry[] {
  if (!existsSync(dir)) return [];
  const entries: HistoryEntry[] = [];
  for (const name of readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()) {
    try {
      entries.push(JSON.parse(readFileSync(join(dir, name), 'utf8')) as HistoryEntry);
    } catch (error) {
      process.stderr.write(`bench history: skipped ${name}: ${(error as Error).message}\n`);
    }
  }
  return entries.sort((a, b) => a.savedAt.localeCompare(b.savedAt));
}

/**
 * How far apart the machines of two runs were: the median over the rows both have with a ceiling of how far their
 * ceilings differ, either way (≥ 1); undefined where they share none.
 */
export function speedFactor(now: HistoryRow[], then: HistoryRow[]): number | undefined {
  const ceilings = new Map(now.filter(hasCeiling).map((row) => [rowKey(row), row.ceiling]));
  const logs = then
    .filter(hasCeiling)
    .flatMap((row) => {
      const ceiling = ceilings.get(rowKey(row));
      return ceiling === undefined ? [] : [Math.abs(Math.log(ceiling / row.ceiling))];
    })
    .sort((a, b) => a - b);
  if (logs.length === 0) return undefined;
  const middle = logs.length / 2;
  const median = logs.length % 2 ? logs[Math.floor(middle)]! : (logs[middle - 1]! + logs[middle]!) / 2;
  return Math.exp(median);
}

const hasCeiling = (row: HistoryRow): row is HistoryRow & { ceiling: number } =>
  row.ceiling !== undefined && Number.isFinite(row.ceiling) && row.ceiling > 0;

/** -1: lower is better (`< 2000 ms`, `0`: none allowed), 1: higher is (`ratio >= 75%`), 0: the target compares nothing. */
export function direction(target: string | undefined): -1 | 0 | 1 {
  const comparator = target?.trim() === '0' ? '<' : target?.match(/[<>]/)?.[0];
  return comparator === '<' ? -1 : comparator === '>' ? 1 : 0;
}

/** The figure compared from run to run: the ratio to the same run's ceiling where there is one. */
function compared(row: HistoryRow): number | undefined {
  const figure = row.ratio ?? row.value;
  return Number.isFinite(figure) ? figure : undefined;
}

export function compareRow(row: HistoryRow, last: HistoryRow | undefined): RowChange {
  const now = compared(row);
  const then = last && (row.ratio === undefined) === (last.ratio === undefined) ? compared(last) : undefined;
  if (now === undefined || then === undefined || then === 0) return { last, worse: false };
  const change = (now - then) / Math.abs(then);
  const noise = Math.max(NOISE_FLOOR, row.spread ?? 0, last?.spread ?? 0);
  return { last, change, worse: direction(row.target) * change < -noise };
}

/**
 * Compares every row with its last saved value from a run of this machine at this speed (a partial run saves some
 * rows: each comes from the last such run that had it).
 */
export function compareWithHistory(dir: string, rows: HistoryRow[], machine = machineFacts()): Comparison {
  const last = new Map<string, HistoryRow>();
  const skipped: SkippedRun[] = [];
  for (const entry of loadHistory(dir).filter((saved) => sameMachine(saved.machine, machine))) {
    const factor = speedFactor(rows, entry.rows);
    if (factor !== undefined && factor > SPEED_TOLERANCE)
      skipped.push({ savedAt: entry.savedAt, commit: entry.commit, speedFactor: factor });
    else for (const row of entry.rows) last.set(rowKey(row), row);
  }
  return {
    changes: rows.map((row) => compareRow(row, last.get(rowKey(row)))),
    skipped,
    speedUnknown: !rows.some(hasCeiling),
  };
}

/** Saves the run's rows in `dir`; returns the file written. */
export function saveHistory(
  dir: string,
  rows: HistoryRow[],
  commit = currentCommit(),
  machine = machineFacts(),
): string {
  mkdirSync(dir, { recursive: true });
  const entry: HistoryEntry = { savedAt: new Date().toISOString(), commit, machine, rows };
  const file = join(dir, `${entry.savedAt.replace(/[:.]/g, '-')}-${commit.replace(/[^\w-]/g, '')}.json`);
  writeFileSync(file, `${JSON.stringify(entry, null, 2)}\n`);
  return file;
}

function currentCommit(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
