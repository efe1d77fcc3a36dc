import { commonConfig, envReader, type CommonConfig } from '@po/config';

export interface WorkerGatewayConfig extends CommonConfig {
  maxBodyBytes: number;
  visibilityTimeoutMs: number;
  maxInflight: number;
  sessionTtlSeconds: number;
  eventsMaxBatch: number;
  heartbeatIntervalSeconds: number;
  brokerHandout: boolean;
  brokerConnectionString: string;
  pollIntervalMs: number;
}

export function parseConfig(env: Record<string, string | undefined>): WorkerGatewayConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8081),
    maxBodyBytes: read.int('API_MAX_BODY_BYTES', 33_554_432, { min: 1024 }),
    visibilityTimeoutMs: read.int('GATEWAY_VISIBILITY_TIMEOUT', 60, { min: 1 }) * 1000,
    maxInflight: read.int('GATEWAY_MAX_INFLIGHT', 128, { min: 1 }),
    sessionTtlSeconds: read.int('WORKER_SESSION_TTL', 86_400, { min: 1 }),
    eventsMaxBatch: read.int('WORKER_EVENTS_MAX_BATCH', 100, { min: 1, max: 10_000 }),
    heartbeatIntervalSeconds: read.int('WORKER_HEARTBEAT_INTERVAL', 30, { min: 1 }),
    brokerHandout: read.bool('WORKER_BROKER_HANDOUT', false),
    brokerConnectionString: read.str('WORKER_BROKER_CONNECTION_STRING', ''),
    pollIntervalMs: read.int('GATEWAY_PULL_POLL_MS', 250, { min: 10, max: 250 }),
  };
  read.done();
  return config;
}
