// vp-worker: the agent's command line. For now only `enroll`; running the agent comes with the socket work.
import { parseArgs } from 'node:util';
import { configPath as defaultConfigPath } from './config.ts';
import { enroll } from './enroll.ts';

const USAGE = 'usage: vp-worker enroll --server URL --token TOKEN [--config PATH]  (default: VP_WORKER_CONFIG, else ~/.config/vp-worker/config.json)';

/** Exit statuses: 0 done, 1 failed, 2 usage error. */
async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { server: { type: 'string' }, token: { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    console.error(`vp-worker: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'enroll' || !values.server || !values.token) {
    console.error(USAGE);
    return 2;
  }
  const configPath = values.config ?? defaultConfigPath();
  try {
    const host = await enroll({ server: values.server, token: values.token, configPath });
    console.log(`Enrolled as host ${host.name}; worker key saved to ${configPath}`);
    return 0;
  } catch (error) {
    console.error(`vp-worker: ${(error as Error).message}`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
