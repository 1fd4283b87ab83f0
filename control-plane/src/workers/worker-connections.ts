/** What the registry needs from one live worker socket. */
export interface WorkerConnection {
  readonly hostId: string;
  close(code: number, reason: string): void;
  /** Closes the socket unless the key it was opened with still belongs to its host. */
  verifyKey(): Promise<void>;
  /** Closes the socket (CLOSE.replaced) when another session, on any replica, has taken its host over. */
  verifySession(): Promise<void>;
}

/**
 * This process's open worker sockets by host, until they have closed. A host may briefly have several (an agent
 * reconnecting before its old socket dropped, two agents on one key): which one is the host is decided in the
 * database (host.store.ts), and the others are closed when the takeover is announced.
 */
export class WorkerConnections<C extends WorkerConnection = WorkerConnection> {
  private readonly byHost = new Map<string, Set<C>>();

  add(connection: C): void {
    const sockets = this.byHost.get(connection.hostId) ?? new Set();
    sockets.add(connection);
    this.byHost.set(connection.hostId, sockets);
  }

  delete(connection: C): void {
    const sockets = this.byHost.get(connection.hostId);
    sockets?.delete(connection);
    if (sockets?.size === 0) this.byHost.delete(connection.hostId);
  }

  ofHost(hostId: string): C[] {
    return [...(this.byHost.get(hostId) ?? [])];
  }

  all(): C[] {
    return [...this.byHost.values()].flatMap((sockets) => [...sockets]);
  }
}
