// Types of fuzzer.mjs for the TypeScript e2e test (the fuzzer itself is plain ESM, so that
// `npm run fuzz` runs it with node after `npm run build`).
export const DEFAULT_SEED: number;
export const DEFAULT_LIMITS: { maxBodyBytes: number; resultBodyBytes: number; timeoutMs: number };

export interface AppFixture {
  applicationId: number;
  apiKey: string;
  workers: { workerId: string; instanceId: string; sessionToken: string; role: string }[];
  pipelines: { id: number; role: string; handler: string; stageIds: number[] }[];
}
export interface Fixtures {
  marker: string;
  secret: string;
  apps: { A: AppFixture; B: AppFixture };
  stop(): void;
  verifySentinels(): Promise<{ what: string; before: unknown; after: unknown }[]>;
}

export interface FindingExample {
  index?: number;
  detail?: string;
  actor?: string;
  gateway?: string;
  method?: string;
  path?: string;
  variant?: string;
  status?: number | null;
  error?: string;
  response?: string | null;
  responseType?: string | null;
  request?: string | null;
  reproduce?: string;
  curl?: string;
  serverLog?: string[];
  what?: string;
}
export interface FindingGroup {
  key: string;
  oracle: string;
  status: number | null;
  op: string;
  family: string;
  count: number;
  variants: string[];
  ops: string[];
  gateways: string[];
  actors: string[];
  examples: FindingExample[];
}
export interface FuzzReport {
  seed: number;
  from: number;
  requests: number;
  concurrency: number;
  durationMs: number;
  totals: {
    requests: number;
    fiveXX: number;
    overload503: number;
    hangs: number;
    noResponse: number;
    crossTenant: number;
    notProblemJson: number;
    deadServices: number;
    findings: number;
    loggedErrors?: number;
  };
  byStatus: Record<string, number>;
  byEndpoint: Record<string, { total: number; statuses: Record<string, number> }>;
  byFamily: Record<string, { total: number; statuses: Record<string, number> }>;
  byVariant: Record<string, { total: number; statuses: Record<string, number> }>;
  groups: FindingGroup[];
  sentinels: { what: string; before: unknown; after: unknown }[];
  liveness: { service: string; status: number | null; error?: string }[];
  client?: { eventLoopDelayP99Ms: number; eventLoopDelayMaxMs: number };
}

export function seedFrom(value: string | undefined): number;
export function adminRunner(
  env: Record<string, string | undefined>,
): (...args: string[]) => Promise<unknown>;
export function setupFixtures(options: {
  apiUrl: string;
  workerUrl: string;
  admin: (...args: string[]) => Promise<unknown>;
  seed: number;
}): Promise<Fixtures>;
export function runFuzz(options: {
  urls: { api: string; worker: string };
  services: { name: string; url: string }[];
  fixtures: Fixtures;
  seed?: number;
  requests?: number;
  from?: number;
  concurrency?: number;
  limits?: Partial<typeof DEFAULT_LIMITS>;
  long?: boolean;
  logLines?: () => string[];
  progress?: (report: FuzzReport) => void;
}): Promise<FuzzReport>;
export function formatSummary(report: FuzzReport): string;
