import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import type { paths } from '../api/schema.d.ts';

type ExportRequest = NonNullable<
  paths['/api/models/{owner}/{project}/{model}/exports']['post']['requestBody']
>['content']['application/json'];
export type ExportFormat = ExportRequest['format'];

const ACTIVE = new Set(['queued', 'starting', 'running']);

/** The model's exports, newest first, read every 2 s while one is under way. */
export function useExports(owner: string, project: string, model: string) {
  return useQuery({
    queryKey: ['exports', owner, project, model],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/models/{owner}/{project}/{model}/exports', {
          params: { path: { owner, project, model }, query: { limit: 100 } },
        }),
      ).exports,
    refetchInterval: (query) => (query.state.data?.some((item) => ACTIVE.has(item.status)) ? 2000 : false),
  });
}

/**
 * What the connected hosts can export to, and why they cannot to the rest; null when this key may not read the hosts
 * (only owners and admins may): every format is then offered and the API says when no host can make it.
 */
export function useExportCapabilities() {
  return useQuery({
    queryKey: ['export-capabilities'],
    // Hosts report their exporters a while after connecting, and come and go.
    refetchInterval: 10_000,
    queryFn: async () => {
      const answer = await api.GET('/api/hosts');
      if (answer.response.status === 403) return null;
      const connected = unwrap(answer).hosts.filter((host) => host.state === 'connected');
      const formats = new Set(connected.flatMap((host) => host.exporters));
      const missing = new Map<string, string>();
      for (const host of connected)
        for (const [format, why] of Object.entries(host.missingExporters))
          if (!formats.has(format)) missing.set(format, `${host.name}: ${why}`);
      return { formats, missing, connected: connected.length };
    },
  });
}

export function useStartExport(owner: string, project: string, model: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (body: ExportRequest) =>
      unwrap(
        await api.POST('/api/models/{owner}/{project}/{model}/exports', {
          params: { path: { owner, project, model } },
          body,
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['exports', owner, project, model] }),
  });
}
