import './threadpool.ts';
import { flushCompileCache } from 'node:module';
import { ConfigError, loadConfig } from '@vp/config';
import { ensureConsoleBuilt } from './console/console-build.ts';
import { createLogger, startServer } from './server.ts';

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(78); // EX_CONFIG
}

const log = createLogger(config);
try {
  await ensureConsoleBuilt(log);
  const running = await startServer(config, { log });
  // With NODE_COMPILE_CACHE set (npm start, the image, the appliance: README, Memory) the modules' stripped and compiled
  // code is written now, not only at a clean exit: later starts neither strip nor compile them again.
  flushCompileCache();
  log.info({ url: running.url, docs: `${running.url}/api/docs` }, 'Vision Platform API listening');
  console.log(`Vision Platform API: ${running.url}/api  (reference: ${running.url}/api/docs)`);
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down: draining requests');
    running.close().then(
      () => process.exit(0),
      (error) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (error) {
  // A setting that cannot work (DATA_DIR the embedded PostgreSQL cannot reach): one line saying what to change.
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(78);
  }
  log.fatal({ err: error }, 'start-up failed');
  process.exit(1);
}
