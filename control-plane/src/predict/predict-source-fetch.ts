// An http(s) `source` of a predict request, fetched by the control plane (never by an inference server) through its
// outbound policy: model predict and a deployment's predict both resolve it here.
import { invalid, tooLarge, type ByteBound, type UrlFetcher } from '@vp/inference/request';
import { fetchBytes, OutboundError, type OutboundPolicy } from '../net/guarded-fetch.ts';

const SOURCE_TIMEOUT_MS = 15_000;

/** Public addresses only unless OUTBOUND_ALLOWED_NETWORKS allows them; past the byte bound 413, else 400 saying why. */
export function sourceFetcher(policy: OutboundPolicy, bound: ByteBound): UrlFetcher {
  return async (url) => {
    try {
      return await fetchBytes(url, {
        policy,
        maxBytes: bound.maxBytes,
        timeoutMs: SOURCE_TIMEOUT_MS,
        idleTimeoutMs: SOURCE_TIMEOUT_MS,
      });
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      if (error.kind === 'too-large') throw tooLarge(bound);
      throw invalid(`source could not be fetched: ${error.message}`);
    }
  };
}
