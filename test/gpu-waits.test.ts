// GpuWaits: which host holds its free GPUs back for a job it cannot run yet, and when.
import t from 'tap';
import { GpuWaits, HOLD_AFTER_MS } from '../control-plane/src/scheduler/gpu-waits.ts';

const big = { id: 'big', gpuType: 'h100-sxm', gpuCount: 4 };
const otherBig = { id: 'other-big', gpuType: 'h100-sxm', gpuCount: 4 };

function clocked() {
  const clock = { now: 1_000_000 };
  return { clock, waits: new GpuWaits(() => clock.now) };
}

t.test('a job other hosts could run is held for only once it has been short of room for a while', async (t) => {
  const { clock, waits } = clocked();
  t.notOk(waits.mayWait('a', big, true), 'at first the hosts take what fits: one may free room for it');
  clock.now += HOLD_AFTER_MS - 1;
  t.notOk(waits.mayWait('b', big, true));
  clock.now += 1;
  t.ok(waits.mayWait('a', big, true), 'then a host may hold back for it');
  waits.set('a', big);
  t.ok(waits.mayWait('a', big, true), 'the holder keeps holding');
  t.notOk(waits.mayWait('b', big, true), 'one host of the GPU type holds, not every one');
  t.notOk(waits.mayWait('b', otherBig, false), 'not even for another job of the type');
  waits.forget({ jobIds: new Set(['big']) });
  t.ok(waits.mayWait('b', otherBig, false), 'the job taken, another host may hold for the next');
});

t.test('a job no other host could run is held for at once: nothing else would make room for it', async (t) => {
  const { waits } = clocked();
  t.ok(waits.mayWait('a', big, false));
});

t.test('a holder that leaves, or waits for nothing now, lets another hold', async (t) => {
  const { waits } = clocked();
  waits.set('a', big);
  waits.forget({ hostId: 'a' });
  t.ok(waits.mayWait('b', big, false));
  waits.set('b', big);
  waits.set('b', undefined);
  t.ok(waits.mayWait('c', big, false));
});

t.test('a job no host looked at for a minute starts its clock again', async (t) => {
  const { clock, waits } = clocked();
  t.notOk(waits.mayWait('a', big, true));
  clock.now += 61_000;
  waits.prune();
  t.notOk(waits.mayWait('a', big, true), 'short of room only from now');
  clock.now += HOLD_AFTER_MS;
  t.ok(waits.mayWait('a', big, true));
});
