import pg from 'pg';
import type { Logger } from 'pino';

type Handler = (payload: string) => void;

/**
 * One LISTEN connection per process for cross-replica signals (key revocation, queued work).
 * After a dropped connection it reconnects and tells `onReconnect` listeners, which must assume
 * they missed messages.
 */
export class Notifications {
  private client: pg.Client | undefined;
  private readonly handlers = new Map<string, Handler[]>();
  private readonly reconnectHandlers: Array<() => void> = [];
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private connections = 0;

  private readonly databaseUrl: string;
  private readonly log: Logger;

  constructor(databaseUrl: string, log: Logger) {
    this.databaseUrl = databaseUrl;
    this.log = log;
  }

  on(channel: string, handler: Handler): void {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`bad channel name ${channel}`);
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
  }

  onReconnect(handler: () => void): void {
    this.reconnectHandlers.push(handler);
  }

  /**
   * Which connection is listening now (a new number after each reconnect), undefined while none is: for caches
   * that may serve only what they learned on the current connection, since a message can be lost in between.
   */
  get session(): number | undefined {
    return this.client ? this.connections : undefined;
  }

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    client.on('notification', (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', (error) => this.scheduleReconnect(error));
    client.on('end', () => this.scheduleReconnect());
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    this.connections++;
    this.client = client;
  }

  private scheduleReconnect(error?: Error): void {
    if (this.stopped || this.retryTimer) return;
    this.log.warn({ err: error }, 'notification connection lost; reconnecting');
    this.client = undefined;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.reconnect();
    }, 1000);
  }

  /** Never rejects: a failed try schedules the next. */
  private async reconnect(): Promise<void> {
    try {
      await this.start();
      for (const handler of this.reconnectHandlers) handler();
    } catch (retryError) {
      this.scheduleReconnect(retryError as Error);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
