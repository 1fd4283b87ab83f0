import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '@vp/config';
import type { Logger } from 'pino';
import { countUsers, lockFirstStart } from './account/user.store.ts';
import type { Orm } from './db/orm.ts';
import { Services } from './services.ts';

export const INITIAL_KEY_FILE = 'initial-api-key';

/**
 * First start on an empty database: user `admin` with an owner key written to
 * `<dataDir>/initial-api-key` (mode 0600). The path is logged, never the key. Replicas starting
 * together take an advisory lock, so only one creates it.
 */
export async function bootstrapFirstStart(orm: Orm, config: AppConfig, log: Logger): Promise<void> {
  await orm.em.fork().transactional(async (em) => {
    await lockFirstStart(em);
    if ((await countUsers(em)) > 0) return;
    const services = new Services(em, { config });
    await services.account.createUser('admin', 'Administrator');
    const { key } = await services.apiKeys.create('admin', 'initial');
    const file = join(config.dataDir, INITIAL_KEY_FILE);
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
    log.info({ file }, 'first start: created user admin; its API key is in this file (readable by its owner only)');
  });
}
