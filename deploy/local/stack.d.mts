// Types of stack.mjs for the TypeScript end-to-end tests.
export type ServiceName = 'api-gateway' | 'worker-gateway' | 'pipeline-service' | 'scheduler-service' | 'result-consumer';

export const ROOT: string;
export const DEFAULT_PORTS: Record<ServiceName, number>;
export const DEFAULT_METRICS_PORTS: Record<ServiceName, number>;

export interface StartedStack {
  urls: Partial<Record<ServiceName, string>>;
  stop(): Promise<void>;
  exited: Promise<{ name: ServiceName; code: number | null; signal: string | null }>;
  services: ServiceName[];
}

export function startStack(options?: {
  services?: ServiceName[];
  env?: Record<string, string | undefined>;
  log?: (line: string) => void;
  ports?: Partial<Record<ServiceName, number>>;
  /** METRICS_PORT per service; default: the service's own when its API port is the default, else any free port. */
  metricsPorts?: Partial<Record<ServiceName, number>>;
  root?: string;
  readyTimeoutMs?: number;
  stopTimeoutMs?: number;
  color?: boolean;
  signal?: AbortSignal;
}): Promise<StartedStack>;

export function createDemoApp(options?: {
  name?: string;
  root?: string;
  env?: Record<string, string | undefined>;
}): Promise<{ applicationId: number; name: string; apiKey: string; keyId: number }>;
