// GPU type IDs from the model names nvidia-smi reports (through systeminformation), and from lspci's names
// when nvidia-smi is missing: the IDs the scheduler and GET /api/training/gpu-availability key on.
import t from 'tap';
import { KNOWN_GPU_TYPE_IDS, gpuTypeId } from '../protocol/src/gpu-types.ts';
import { nvidiaGpus } from '../worker-agent/src/hardware.ts';

t.test('model names map to the spec-style type IDs', async (t) => {
  const cases: [string, number | undefined, string][] = [
    ['NVIDIA GeForce RTX 4090', 24_564, 'rtx-4090'],
    ['NVIDIA GeForce RTX 3090', undefined, 'rtx-3090'],
    ['NVIDIA GeForce RTX 5090', undefined, 'rtx-5090'],
    ['NVIDIA L40S', 46_068, 'l40s'],
    ['NVIDIA L40', undefined, 'l40'],
    ['NVIDIA L4', 23_034, 'l4'],
    ['Tesla T4', 15_360, 't4'],
    ['NVIDIA A10G', undefined, 'a10g'],
    ['NVIDIA A10', undefined, 'a10'],
    ['NVIDIA A40', undefined, 'a40'],
    ['NVIDIA A100-SXM4-80GB', 81_920, 'a100-80gb-sxm'],
    ['NVIDIA A100-SXM4-40GB', 40_960, 'a100-40gb-sxm'],
    ['NVIDIA A100 80GB PCIe', 81_920, 'a100-80gb-pcie'],
    ['NVIDIA A100-PCIE-40GB', 40_960, 'a100-40gb-pcie'],
    ['NVIDIA H100 80GB HBM3', 81_559, 'h100-sxm'],
    ['NVIDIA H100 SXM5 80GB', undefined, 'h100-sxm'],
    ['NVIDIA H100 PCIe', 81_559, 'h100-pcie'],
    ['NVIDIA H100 NVL', 95_830, 'h100-nvl'],
    ['NVIDIA H200', 143_771, 'h200-sxm'],
    ['NVIDIA H200 NVL', undefined, 'h200-nvl'],
    ['NVIDIA B200', 183_359, 'b200'],
    ['NVIDIA B300', undefined, 'b300'],
    ['NVIDIA RTX A6000', 49_140, 'rtx-a6000'],
    ['NVIDIA RTX A4000', undefined, 'rtx-a4000'],
    ['NVIDIA RTX 6000 Ada Generation', 49_140, 'rtx-6000-ada'],
    ['NVIDIA RTX 2000 Ada Generation', undefined, 'rtx-2000-ada'],
    ['NVIDIA RTX PRO 6000 Blackwell Server Edition', 97_887, 'rtx-pro-6000'],
    ['NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition', undefined, 'rtx-pro-6000'],
    ['Tesla V100-SXM2-32GB', 32_768, 'v100-32gb'],
    ['Tesla V100-SXM2-16GB', 16_384, 'v100-16gb'],
    ['Tesla V100-PCIE-16GB', undefined, 'v100-16gb'],
    ['  nvidia   h100   pcie ', undefined, 'h100-pcie'],
  ];
  for (const [name, memoryMiB, typeId] of cases) t.equal(gpuTypeId(name, memoryMiB), typeId, name);
});

t.test('memory settles names that omit their size', async (t) => {
  t.equal(gpuTypeId('NVIDIA A100-SXM4', 81_920), 'a100-80gb-sxm');
  t.equal(gpuTypeId('NVIDIA A100-SXM4', 40_960), 'a100-40gb-sxm');
  t.equal(gpuTypeId('NVIDIA A100-SXM4'), 'a100-40gb-sxm', 'no memory known: the smaller part');
  t.equal(gpuTypeId('Tesla V100-PCIE', 32_768), 'v100-32gb');
  t.equal(gpuTypeId('NVIDIA A100-SXM4-40GB', 81_920), 'a100-40gb-sxm', 'the name wins over the memory');
});

t.test('unknown NVIDIA models get a slug of their name; other vendors get null', async (t) => {
  t.equal(gpuTypeId('NVIDIA GeForce RTX 3080'), 'rtx-3080');
  t.equal(gpuTypeId('NVIDIA GeForce RTX 3090 Ti'), 'rtx-3090-ti');
  t.equal(gpuTypeId('NVIDIA GH200 480GB'), 'gh200-480gb', 'GH200 is not a B200');
  t.equal(gpuTypeId('Quadro RTX 8000'), 'rtx-8000');
  t.equal(gpuTypeId('NVIDIA TITAN V'), 'titan-v');
  t.equal(gpuTypeId('NVIDIA'), null, 'a brand is not a model');
  t.equal(gpuTypeId('AMD Instinct MI300X'), null);
  t.equal(gpuTypeId('Intel Corporation UHD Graphics 630'), null);
  t.equal(gpuTypeId('ASPEED Graphics Family'), null);
  t.equal(gpuTypeId(''), null);
  t.ok(gpuTypeId(`NVIDIA ${'X'.repeat(200)}`)!.length <= 64, 'slugs are at most 64 characters');
});

t.test('the known IDs are distinct, spec-style, and include the spec examples', async (t) => {
  t.equal(new Set(KNOWN_GPU_TYPE_IDS).size, KNOWN_GPU_TYPE_IDS.length);
  for (const typeId of KNOWN_GPU_TYPE_IDS) t.match(typeId, /^[a-z0-9]+(-[a-z0-9]+)*$/);
  for (const typeId of [
    'rtx-2000-ada',
    'rtx-4090',
    'l40s',
    'a100-80gb-pcie',
    'a100-80gb-sxm',
    'rtx-pro-6000',
    'h100-sxm',
    'h200-sxm',
    'b200',
    'b300',
  ]) {
    t.ok(KNOWN_GPU_TYPE_IDS.includes(typeId), typeId);
  }
});

t.test('graphics controllers: NVIDIA ones only, numbered, nvidia-smi data preferred', async (t) => {
  const controller = { bus: 'PCI', vram: null, vramDynamic: false };
  const gpus = nvidiaGpus([
    { ...controller, vendor: 'ASPEED Technology, Inc.', model: 'ASPEED Graphics Family' },
    {
      ...controller,
      vendor: 'NVIDIA Corporation',
      model: 'GH100 [H100 SXM5 80GB]',
      name: 'NVIDIA H100 80GB HBM3',
      memoryTotal: 81_559,
      driverVersion: '550.54.15',
    },
    // Without nvidia-smi only lspci's chip name and vendor are known.
    { ...controller, vendor: 'NVIDIA Corporation', model: 'AD102GL [L40S]', vram: 46_068 },
    { ...controller, vendor: 'NVIDIA Corporation', model: 'Device 2330' },
  ]);
  t.same(gpus, [
    { index: 0, model: 'NVIDIA H100 80GB HBM3', typeId: 'h100-sxm', memoryMiB: 81_559, driverVersion: '550.54.15' },
    { index: 1, model: 'AD102GL [L40S]', typeId: 'l40s', memoryMiB: 46_068, driverVersion: null },
    { index: 2, model: 'Device 2330', typeId: 'device-2330', memoryMiB: 0, driverVersion: null },
  ]);
});
