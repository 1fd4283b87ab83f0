import { RELEASE_VERSION } from '../release-version.ts';

/**
 * Whether a host's agent runs another release than this control plane: it still works one version behind (the worker
 * protocol spans versions), but the host should get the worker distribution of this release. Unknown (the agent has
 * not connected yet): not.
 */
export function agentOutdated(agentVersion: string | null | undefined): boolean {
  return agentVersion != null && agentVersion !== RELEASE_VERSION;
}
