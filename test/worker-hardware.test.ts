// readHardware on the machine running the tests: real systeminformation and statfs readings that pass the
// protocol's Hardware schema. A host without NVIDIA GPUs reports none and offers its CPUs instead.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Hardware } from '@vp/protocol';
import { readHardware } from '../worker-agent/src/hardware.ts';

const hasNvidiaDriver = existsSync('/dev/nvidiactl');

t.test('this host: CPU, memory, free disk of the work dir, GPUs', async (t) => {
  const workDir = t.testdir();
  const hardware = await readHardware(workDir);
  t.ok(Hardware.safeParse(hardware).success, 'schema-valid');
  t.ok(hardware.cpu.cores > 0, `${hardware.cpu.cores} cores`);
  t.ok(hardware.cpu.model.length > 0, hardware.cpu.model);
  t.ok(hardware.memoryBytes > 0, `${hardware.memoryBytes} bytes of memory`);
  t.ok(hardware.diskFreeBytes > 0, `${hardware.diskFreeBytes} bytes free`);
  if (hasNvidiaDriver) {
    t.ok(hardware.gpus.length > 0 && !hardware.cpuOnly, `GPUs: ${hardware.gpus.map((gpu) => gpu.typeId).join(', ')}`);
  } else {
    t.same(hardware.gpus, [], 'no NVIDIA driver, no GPUs');
    t.equal(hardware.cpuOnly, true, 'offers CPU capacity');
  }
});

t.test('a work dir not created yet is measured on its nearest existing ancestor', async (t) => {
  const hardware = await readHardware(join(t.testdir(), 'not', 'yet', 'made'));
  t.ok(hardware.diskFreeBytes > 0);
});
