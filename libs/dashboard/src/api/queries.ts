// TanStack Query hooks over the ApiClient. Live data polls every 2 s; with conditional GETs an
// unchanged resource costs a 304 and re-renders nothing (the cached body is the same object).
import {
  keepPreviousData,
  useMutation,
  useQuery,
  useQueryClient,
  type UseQueryResult,
} from '@tanstack/react-query';
import { useApi } from './context';
import { ApiError } from './problem';
import type { UiConfig } from './types';

export const LIVE_INTERVAL_MS = 2_000;

/** Client errors do not get better by asking again; server and network errors may. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status < 500) return false;
  return failureCount < 2;
}

export interface LiveOptions<T> {
  /** Poll every 2 s (default), at another interval, not at all, or as the last data says. */
  refetchInterval?: number | false | ((data: T | undefined) => number | false);
  enabled?: boolean;
  keepPrevious?: boolean;
}

/** A GET of the public API by path, polled while the page shows it. */
export function useApiGet<T>(path: string, options: LiveOptions<T> = {}): UseQueryResult<T, Error> {
  const api = useApi();
  return useQuery<T, Error>({
    queryKey: ['api', path],
    queryFn: ({ signal }) => api.get<T>(path, signal),
    refetchInterval: (query) => {
      const interval = options.refetchInterval ?? LIVE_INTERVAL_MS;
      return typeof interval === 'function' ? interval(query.state.data) : interval;
    },
    enabled: options.enabled ?? true,
    placeholderData: options.keepPrevious ? keepPreviousData : undefined,
    retry: shouldRetry,
  });
}

/** GET /ui/config.json once; an older gateway without it means "no trace links". */
export function useUiConfig(): UiConfig {
  const api = useApi();
  const query = useQuery<UiConfig, Error>({
    queryKey: ['ui-config'],
    queryFn: ({ signal }) => api.getPublic<UiConfig>('/ui/config.json', signal),
    staleTime: Infinity,
    retry: false,
  });
  return query.data ?? { traceUrlTemplate: null, version: '' };
}

/** A POST action; on success every API query is refetched so the page shows its effect. */
export function useApiAction<TVars, TResult = unknown>(
  toRequest: (vars: TVars) => { path: string; body?: unknown },
) {
  const api = useApi();
  const queryClient = useQueryClient();
  return useMutation<TResult | null, Error, TVars>({
    mutationFn: (vars) => {
      const { path, body } = toRequest(vars);
      return api.post<TResult>(path, body);
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['api'] }),
  });
}
