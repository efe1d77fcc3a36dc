import {
  ConfigError,
  commonConfig,
  envReader,
  type CommonConfig,
  type EnvReader,
} from '@po/config';

export interface WorkerGatewayConfig extends CommonConfig {
  maxBodyBytes: number;
  visibilityTimeoutMs: number;
  maxInflight: number;
  maxInflightPerApp: number;
  maxWaitingPerApp: number;
  maxInflightBytes: number;
  maxFetchers: number;
  sessionTtlSeconds: number;
  eventsMaxBatch: number;
  heartbeatIntervalSeconds: number;
  brokerHandout: boolean;
  brokerConnectionString: string;
  pollIntervalMs: number;
  pollMaxMs: number;
  resultsCommitLingerMs: number;
}

export function parseConfig(env: Record<string, string | undefined>): WorkerGatewayConfig {
  const read = envReader(env);
  const config = {
    ...commonConfig(read, 8081),
    maxBodyBytes: read.int('API_MAX_BODY_BYTES', 33_554_432, { min: 1024 }),
    visibilityTimeoutMs: read.int('GATEWAY_VISIBILITY_TIMEOUT', 60, { min: 1 }) * 1000,
    maxInflight: read.int('GATEWAY_MAX_INFLIGHT', 128, { min: 1 }),
    // One application cannot take the whole process from the others (decision 0081).
    maxInflightPerApp: read.int('GATEWAY_MAX_INFLIGHT_PER_APP', 96, { min: 1 }),
    maxWaitingPerApp: read.int('GATEWAY_MAX_WAITING_PER_APP', 256, { min: 1 }),
    maxInflightBytes: read.int('GATEWAY_MAX_INFLIGHT_BYTES', 64 * 1024 * 1024, { min: 1024 }),
    maxFetchers: read.int('GATEWAY_MAX_FETCHERS', 512, { min: 1 }),
    sessionTtlSeconds: read.int('WORKER_SESSION_TTL', 86_400, { min: 1 }),
    eventsMaxBatch: read.int('WORKER_EVENTS_MAX_BATCH', 100, { min: 1, max: 10_000 }),
    heartbeatIntervalSeconds: read.int('WORKER_HEARTBEAT_INTERVAL', 30, { min: 1 }),
    brokerHandout: read.bool('WORKER_BROKER_HANDOUT', false),
    brokerConnectionString: read.str('WORKER_BROKER_CONNECTION_STRING', ''),
    pollIntervalMs: read.int('GATEWAY_PULL_POLL_MS', 250, { min: 10, max: 250 }),
    // Wake-ups bring new messages; the safety poll backs off to this while a queue stays empty.
    pollMaxMs: read.int('GATEWAY_PULL_POLL_MAX_MS', 2000, { min: 10, max: 10_000 }),
    // Under load only: results queued behind a commit wait this long for more to join their group.
    resultsCommitLingerMs: read.int('RESULTS_COMMIT_LINGER_MS', 2, { min: 0, max: 50 }),
  };
  doneWithBrokerHandoutAck(read, config.brokerHandout, read.str('WORKER_BROKER_HANDOUT_ACK', ''));
  return config;
}

/** The one value of WORKER_BROKER_HANDOUT_ACK that allows the broker hand-out (decision 0082). */
export const BROKER_HANDOUT_ACK = 'tenants-share-redis';

/**
 * The hand-out gives every application's workers the one Redis credential of the deployment, with
 * which any of them can read, change or delete every other application's queues and results: an
 * operator must say in so many words that the tenants trust each other before it is turned on.
 */
function doneWithBrokerHandoutAck(read: EnvReader, handout: boolean, ack: string): void {
  const problems: string[] = [];
  try {
    read.done();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  if (handout && ack !== BROKER_HANDOUT_ACK) {
    problems.push(
      "WORKER_BROKER_HANDOUT=true hands every application's workers the shared Redis credential (WORKER_BROKER_CONNECTION_STRING), " +
        "with which any tenant can read and change every other tenant's queues and results; " +
        `set WORKER_BROKER_HANDOUT_ACK=${BROKER_HANDOUT_ACK} to accept that, or leave the hand-out off`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
}
