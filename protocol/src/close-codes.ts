// WebSocket close codes the control plane uses on a worker socket (shared: the agent acts on them) (4000-4999 is the application range),
// so an agent can tell a permanent refusal (version, revoked key) from a reason to reconnect.
export const CLOSE = {
  /** The server is shutting down (standard "going away"); reconnect, another replica or this one after restart. */
  shuttingDown: 1001,
  /** The agent speaks another protocol version; reconnecting will not help until it is upgraded. */
  unsupportedVersion: 4000,
  /** No valid `hello` in time, or another message came first. */
  handshakeFailed: 4001,
  /** Too many frames that failed to parse. */
  tooManyInvalidMessages: 4002,
  /** A newer connection with the same key took over this host. */
  replaced: 4003,
  /** The host's key was revoked (host disconnected, or a rotated key enrolled). */
  revoked: 4004,
} as const;
