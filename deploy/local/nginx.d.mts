// Types of nginx.mjs for the TypeScript end-to-end tests.
export const CHART_VALUES: string;
export const WORKER_LOCATIONS: string[];
export const BODY_RULE: Record<string, { directive: string; value: string }>;

export function findNginx(): string | null;
export function ensureNginx(options?: { install?: boolean; log?: (line: string) => void }): { nginx: string | null; reason: string | null };
export function chartStickyRule(valuesFile?: string): { sticky: string; hashBy: string; hashOn: string | null };
export function nginxConfig(options: {
  apiUrls: string[];
  workerUrls: string[];
  port: number;
  hashOn: string | null;
  prefix: string;
}): string;

export interface NginxFront {
  url: string;
  port: number;
  prefix: string;
  config: string;
  stop(): Promise<void>;
}

export function startNginxFront(options: {
  apiUrl?: string;
  apiUrls?: string[];
  workerUrls: string[];
  port?: number;
  hashOn?: string | null;
  nginx?: string | null;
  log?: (line: string) => void;
}): Promise<NginxFront>;
