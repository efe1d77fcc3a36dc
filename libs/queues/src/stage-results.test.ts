import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type RedisConnection } from './connection.js';
import { createStageResultsProducer } from './stage-results-producer.js';

/** A port nothing listens on: Redis away. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the stage-results producer while Redis is away (decision 0120)', () => {
  let connection: RedisConnection;
  beforeAll(async () => {
    connection = createRedis(`redis://127.0.0.1:${await closedPort()}`, 'producer');
    connection.on('error', () => undefined);
  });
  afterAll(() => connection.disconnect());

  const producer = () => createStageResultsProducer(connection, 'away');
  const message = {
    applicationId: 1,
    stageId: 1,
    workerId: 'w',
    receivedAt: new Date().toISOString(),
    result: { stageId: 1, executionId: '00000000-0000-4000-8000-000000000001', attempt: 1, isSuccess: true },
  };

  it('refuses a publish at once, even as the first use of its queue', async () => {
    await expect(producer().publish(message)).rejects.toThrow(/Redis connection/);
  });

  it('cannot tell which results wait: rejects rather than answering none', async () => {
    await expect(producer().waiting([{ applicationId: message.applicationId, executionId: message.result.executionId, attempt: 1, workerId: message.workerId }])).rejects.toThrow();
    await expect(producer().waiting([])).resolves.toEqual(new Set());
  });
});
