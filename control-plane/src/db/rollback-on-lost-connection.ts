import { PostgresDriver } from 'kysely';
import { isDatabaseUnavailable } from './database-unavailable.ts';

/**
 * Kysely hands a transaction's connection back to the pool only once its rollback succeeded. On a connection the
 * server dropped under the transaction (a restart, a failover, a terminated backend) the rollback cannot succeed, so the
 * connection was never handed back: each such transaction cost the pool a slot for good, until every request waited
 * for one (found by issue 39's chaos suite: a replica that could not shut down). The server ended that transaction
 * with the connection, so there is nothing to roll back: the connection is handed back, and the pool, which knows it
 * broken, drops it. Applied once, on import, by orm.ts: every ORM of the process uses this driver.
 */
const driver = PostgresDriver.prototype;
// oxlint-disable-next-line unbound-method -- called with the driver it belongs to, below
const rollbackTransaction = driver.rollbackTransaction;
driver.rollbackTransaction = async function (this: PostgresDriver, connection) {
  try {
    await rollbackTransaction.call(this, connection);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
  }
};
