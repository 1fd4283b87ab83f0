// Protocol versions: each side speaks a range, and the hello/welcome handshake settles on the highest version both
// speak, so the control plane and its agents can be upgraded one after the other instead of all at once.

/**
 * The newest version this build speaks; bumped on any change an older peer would misread.
 * 2: `capabilities` (the model formats a host exports) and job outputs (`JobSpec.outputs`).
 * 3: services (`JobSpec.environment` and `JobSpec.service`, `job.service`, `capabilities.services`): deployments.
 * 4: shared folders (`folder.*`, folders.ts): storage integrations of the local provider.
 * 5: `welcome.pool`: whether the host is in the appliance-wide pool (runs every workspace's jobs).
 * 6: `job.finished`'s `ranSeconds` and `endedSecondsAgo`: the host's measure of a job's run (billing after a host loss).
 * 7: `heartbeat.load`: the host's CPU, memory and per-GPU use, for the hosts page.
 * 8: `job.finished.notStarted`: the attempt failed before it started here (a full disk, its inputs), so it may run elsewhere.
 */
export const PROTOCOL_VERSION = 8;
/** The oldest version this build still speaks. */
export const PROTOCOL_VERSION_MIN = 1;

export interface VersionRange {
  min: number;
  max: number;
}

export const SUPPORTED_VERSIONS: VersionRange = { min: PROTOCOL_VERSION_MIN, max: PROTOCOL_VERSION };

/** The highest version both ranges include; null when they do not overlap. */
export function commonVersion(peer: VersionRange, own: VersionRange = SUPPORTED_VERSIONS): number | null {
  const version = Math.min(peer.max, own.max);
  return version >= Math.max(peer.min, own.min) ? version : null;
}

export const describeVersions = (range: VersionRange): string => `${range.min}..${range.max}`;

/**
 * A hello's version fields for the agent's range: `protocolVersion` is its highest version, and `protocolVersions`
 * is added only for a range of more than one, so a hello of a single version reads as it did before ranges existed
 * and control planes of that time accept it.
 */
export function helloVersionFields(range: VersionRange = SUPPORTED_VERSIONS): {
  protocolVersion: number;
  protocolVersions?: VersionRange;
} {
  return range.min === range.max
    ? { protocolVersion: range.max }
    : { protocolVersion: range.max, protocolVersions: { ...range } };
}

/** The range a hello announces (an agent before ranges announces its one version), read from a parsed hello or a raw frame. */
export function helloVersions(hello: { protocolVersion?: unknown; protocolVersions?: unknown }): VersionRange | null {
  if (hello.protocolVersions !== undefined) {
    const { min, max } = (hello.protocolVersions ?? {}) as Record<string, unknown>;
    return isVersion(min) && isVersion(max) && min <= max ? { min, max } : null;
  }
  return isVersion(hello.protocolVersion) ? { min: hello.protocolVersion, max: hello.protocolVersion } : null;
}

export const MAX_PROTOCOL_VERSION_NUMBER = 65_535;

export function isVersion(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_PROTOCOL_VERSION_NUMBER;
}
