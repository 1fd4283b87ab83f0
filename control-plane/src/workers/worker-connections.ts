/** What the registry needs from one live worker socket. */
export interface WorkerConnection {
  readonly hostId: string;
  close(code: number, reason: string): void;
  /** Closes the socket unless the key it was opened with still belongs to its host. */
  verifyKey(): Promise<void>;
}

/** This process's worker sockets: at most one per host, the newest wins. */
export class WorkerConnections {
  private readonly byHost = new Map<string, WorkerConnection>();

  /** Registers `connection` as its host's socket and returns the one it replaces, if any. */
  claim(connection: WorkerConnection): WorkerConnection | undefined {
    const previous = this.byHost.get(connection.hostId);
    this.byHost.set(connection.hostId, connection);
    return previous === connection ? undefined : previous;
  }

  /** Forgets `connection`; false when a newer one has already taken its host over. */
  release(connection: WorkerConnection): boolean {
    if (this.byHost.get(connection.hostId) !== connection) return false;
    this.byHost.delete(connection.hostId);
    return true;
  }

  get(hostId: string): WorkerConnection | undefined {
    return this.byHost.get(hostId);
  }

  all(): WorkerConnection[] {
    return [...this.byHost.values()];
  }
}
