// The benchmark history (bench/history.ts) as `npm run bench` uses it: saved runs are read back per machine and speed,
// each row compared with its last saved value, and a row marked only when it got worse, in its target's direction, by
// more than its noise.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  NOISE_FLOOR,
  SPEED_TOLERANCE,
  compareWithHistory,
  direction,
  saveHistory,
  type HistoryRow,
  type Machine,
} from '../bench/history.ts';

const here: Machine = { cpus: 2, cpuModel: 'Test CPU', memoryBytes: 2 ** 34, node: '24.0.0' };
const elsewhere: Machine = { ...here, cpus: 16 };

const latency = (value: number, spread?: number): HistoryRow => ({
  benchmark: 'fleet',
  figure: 'placement p99',
  value,
  unit: 'ms',
  target: '< 2000 ms',
  pass: value < 2000,
  ...(spread !== undefined && { spread }),
});
const rate = (value: number, ceiling: number): HistoryRow => ({
  benchmark: 'upload',
  figure: 'PUT to disk',
  value,
  ceiling,
  ratio: value / ceiling,
  unit: 'MB/s',
  target: 'ratio >= 75%',
  pass: value / ceiling >= 0.75,
});

function historyDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'vp-bench-history-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test("which way is worse follows the row's target", async (t) => {
  t.equal(direction('< 2000 ms'), -1);
  t.equal(direction('p95 < 50 ms'), -1);
  t.equal(direction('<= 0.9 x Python'), -1);
  t.equal(direction('0'), -1, 'none allowed');
  t.equal(direction('ratio >= 75%'), 1);
  t.equal(direction('>= 1.1 x Python'), 1);
  t.equal(direction('S3 here is a local test server'), 0);
  t.equal(direction(undefined), 0);
});

t.test('nothing saved on this machine: no last value, nothing marked', async (t) => {
  const dir = historyDir(t);
  saveHistory(dir, [latency(1000)], 'abc1234', elsewhere);
  t.same(compareWithHistory(dir, [latency(5000)], here).changes, [{ last: undefined, worse: false }]);
});

t.test('each row against its last saved value on this machine; worse beyond the noise is marked', async (t) => {
  const dir = historyDir(t);
  saveHistory(dir, [latency(1000), rate(300, 400)], 'abc1234', here);
  // A later partial run saves the fleet row alone: the upload row's last value stays the earlier run's.
  saveHistory(dir, [latency(1200)], 'def5678', here);
  saveHistory(dir, [latency(100)], 'fff0000', elsewhere);
  const [slower, slowerUpload] = compareWithHistory(dir, [latency(1500), rate(200, 400)], here).changes;
  t.equal(slower!.last?.value, 1200, "the last run's value, not another machine's");
  t.equal(slower!.change, 0.25);
  t.equal(slower!.worse, true, 'a quarter slower with no spread measured: worse');
  t.equal(slowerUpload!.last?.value, 300, 'from the last run that had the row');
  t.equal(slowerUpload!.change, (0.5 - 0.75) / 0.75, 'compared by ratio to the ceiling');
  t.equal(slowerUpload!.worse, true);

  const [faster, withinNoise, noisy] = compareWithHistory(
    dir,
    [latency(600), rate(300 * (1 - NOISE_FLOOR / 2), 400), latency(1500, 0.4)],
    here,
  ).changes;
  t.equal(faster!.worse, false, 'better is never marked');
  t.equal(withinNoise!.worse, false, 'within the noise floor');
  t.equal(noisy!.worse, false, 'within the spread the benchmark measured');
});

t.test('a ratio is compared only with a ratio: a ceiling that went missing gives no change', async (t) => {
  const dir = historyDir(t);
  saveHistory(dir, [rate(300, 400)], 'abc1234', here);
  const { ceiling: _ceiling, ratio: _ratio, ...bare } = rate(300, 400);
  t.same(compareWithHistory(dir, [bare], here).changes[0]!.change, undefined);
});

t.test('a saved run whose ceilings say the machine ran at another speed is skipped and named', async (t) => {
  const dir = historyDir(t);
  // The same CPU label at two speeds: the rows' ceilings (programs our code does not change) tell them apart.
  saveHistory(dir, [latency(1000), rate(300, 400)], 'normal1', here);
  saveHistory(dir, [latency(3000), rate(100, 150)], 'slow123', here);
  const normal = compareWithHistory(dir, [latency(1100), rate(310, 420)], here);
  t.equal(normal.changes[0]!.last?.value, 1000, "the last run at this run's speed, not the slower one after it");
  t.equal(normal.changes[0]!.worse, false);
  t.equal(normal.skipped.length, 1);
  t.equal(normal.skipped[0]!.commit, 'slow123');
  t.ok(normal.skipped[0]!.speedFactor > 2.5, 'how far apart, either way');
  t.equal(normal.speedUnknown, false);

  const slow = compareWithHistory(dir, [latency(3300), rate(90, 140)], here);
  t.equal(slow.changes[0]!.last?.value, 3000, 'a slow run is compared with the slow one');
  t.same(
    slow.skipped.map((run) => run.commit),
    ['normal1'],
  );

  const within = compareWithHistory(dir, [latency(1000), rate(100, 150 * SPEED_TOLERANCE * 0.99)], here);
  t.equal(within.changes[0]!.last?.value, 3000, 'ceilings within the tolerance: the same speed');
});

t.test('a run without any ceiling cannot tell speeds apart and says so', async (t) => {
  const dir = historyDir(t);
  saveHistory(dir, [latency(1000), rate(300, 400)], 'normal1', here);
  const comparison = compareWithHistory(dir, [latency(1000)], here);
  t.equal(comparison.speedUnknown, true);
  t.equal(comparison.changes[0]!.last?.value, 1000, 'compared by cores and CPU model alone');
  t.same(comparison.skipped, []);
});
