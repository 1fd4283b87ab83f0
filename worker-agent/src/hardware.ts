// What the agent reports in `hello` (CPU, memory, free disk under its work dir and each NVIDIA GPU) and, at each
// heartbeat, the host's load.
import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import si, { type Systeminformation } from 'systeminformation';
import { Hardware, HostLoad, type Gpu } from '@vp/protocol';
import { gpuTypeId } from '@vp/protocol';

type Controller = Systeminformation.GraphicsControllerData;

const isNvidia = (controller: Controller) =>
  /nvidia/i.test(controller.vendor) ||
  controller.vendorId?.toLowerCase() === '10de' ||
  gpuTypeId(controller.name ?? controller.model) !== null;

/**
 * The NVIDIA GPUs among the graphics controllers, in the order nvidia-smi numbers them. systeminformation lists
 * lspci's devices by bus address and overlays nvidia-smi's name, memory and driver, which are preferred here.
 */
export function nvidiaGpus(controllers: Controller[]): Gpu[] {
  return controllers.filter(isNvidia).map((controller, index) => {
    const name = (controller.name ?? controller.model).trim();
    const memoryMiB = Math.max(0, Math.round(controller.memoryTotal ?? controller.vram ?? 0));
    // lspci names a device by its chip ("GA102 [GeForce RTX 3090]"); the vendor already says it is NVIDIA's.
    const typeId = gpuTypeId(name, memoryMiB) ?? gpuTypeId(`NVIDIA ${name}`, memoryMiB) ?? 'nvidia-unknown';
    return {
      index,
      model: name.slice(0, 256),
      typeId,
      memoryMiB,
      driverVersion: controller.driverVersion?.slice(0, 64) || null,
    };
  });
}

/**
 * Free bytes on the filesystem holding `path`, from statfs rather than systeminformation's mount list, which
 * would have to be matched against the path by hand. A work dir not yet created is measured at its nearest ancestor.
 */
async function freeBytesAt(path: string): Promise<number> {
  let current = resolve(path);
  for (;;) {
    try {
      const stats = await statfs(current);
      return stats.bavail * stats.bsize;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(current) === current) throw error;
      current = dirname(current);
    }
  }
}

/** Reads this host's hardware; the result passes the protocol's Hardware schema, which is checked here. */
export async function readHardware(workDir: string): Promise<Hardware> {
  const [cpu, memory, graphics, diskFreeBytes] = await Promise.all([
    si.cpu(),
    si.mem(),
    si.graphics(),
    freeBytesAt(workDir),
  ]);
  const gpus = nvidiaGpus(graphics.controllers);
  return Hardware.parse({
    cpu: { model: `${cpu.manufacturer} ${cpu.brand}`.trim().slice(0, 256), cores: Math.max(1, cpu.cores) },
    memoryBytes: memory.total,
    diskFreeBytes,
    gpus,
    cpuOnly: gpus.length === 0,
  });
}

const percent = (value: number | undefined) =>
  value === undefined || !Number.isFinite(value) ? null : Math.min(100, Math.max(0, value));
const inRange = (value: number | undefined, min: number, max: number) =>
  value !== undefined && Number.isFinite(value) && value >= min && value <= max ? value : null;

/**
 * The host's load now: CPU use since the last reading, memory in use (without the page cache), and each NVIDIA GPU's
 * use and memory as nvidia-smi reports them. GPUs are only asked for when the host has some (`gpus` of its hardware):
 * that reading runs nvidia-smi.
 */
export async function readLoad(gpus: number): Promise<HostLoad> {
  const [cpu, memory, graphics] = await Promise.all([
    si.currentLoad(),
    si.mem(),
    gpus > 0 ? si.graphics() : Promise.resolve(undefined),
  ]);
  const controllers = graphics ? graphics.controllers.filter(isNvidia) : [];
  return HostLoad.parse({
    cpuPercent: percent(cpu.currentLoad) ?? 0,
    memoryUsedBytes: Math.max(0, Math.round(memory.active)),
    gpus: controllers.slice(0, gpus).map((controller, index) => ({
      index,
      utilizationPercent: percent(controller.utilizationGpu),
      memoryUsedMiB: controller.memoryUsed === undefined ? null : Math.max(0, Math.round(controller.memoryUsed)),
      temperatureC: inRange(controller.temperatureGpu, -100, 200),
    })),
  });
}
