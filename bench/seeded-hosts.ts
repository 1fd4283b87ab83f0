// Worker hosts written in SQL as their agents' reports would leave them: connected (heard an hour ahead, so no sweep
// takes them for lost while a benchmark runs), 8 GPUs each with their last load. In the appliance-wide pool, so every
// workspace's owner lists them.
import { adminQuery } from './lib.ts';

export const GPUS_PER_HOST = 8;

export async function seedConnectedHosts(database: string, count: number, namePrefix: string): Promise<void> {
  const gpus = JSON.stringify(
    Array.from({ length: GPUS_PER_HOST }, (_, index) => ({
      index,
      model: 'NVIDIA H100 80GB HBM3',
      typeId: 'h100-sxm',
      memoryMiB: 81_559,
      driverVersion: '550.54',
    })),
  );
  await adminQuery(
    `insert into hosts (id, created_at, updated_at, workspace_id, name, state, last_heartbeat_at, agent_version, hardware, load)
     select lpad(to_hex(g), 24, '0'), now(), now(), null, '${namePrefix}' || lpad(g::text, 4, '0'), 'connected',
       now() + interval '1 hour', '0.1.0',
       jsonb_build_object('cpu', jsonb_build_object('model', 'Bench CPU', 'cores', 64), 'memoryBytes', 540431955968,
         'diskFreeBytes', 1e12, 'gpus', '${gpus}'::jsonb, 'cpuOnly', false),
       jsonb_build_object('cpuPercent', g % 100, 'memoryUsedBytes', 2e11, 'gpus',
         (select jsonb_agg(jsonb_build_object('index', i, 'utilizationPercent', (g + i) % 100, 'memoryUsedMiB', 60000,
           'temperatureC', 60 + i)) from generate_series(0, ${GPUS_PER_HOST - 1}) i))
     from generate_series(1, ${count}) g`,
    database,
  );
}
