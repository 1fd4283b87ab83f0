import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** What `vpctl doctor` checks, run by the control plane now; again every 15 s. */
export function useHealthChecks() {
  return useQuery({
    queryKey: ['health-checks'],
    queryFn: async () => unwrap(await api.GET('/api/health/checks')).checks,
    refetchInterval: 15_000,
  });
}
