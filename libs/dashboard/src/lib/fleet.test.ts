import { describe, expect, it } from 'vitest';
import type { FleetEvent } from '../api/types';
import { fleetStatus, latestLifecycle } from './fleet';

const now = Date.parse('2025-03-01T12:00:00.000Z');
const worker = (status: 'Active' | 'Stopped', lastHeartbeatAt: string | null) => ({
  status,
  lastHeartbeatAt,
  createdAt: '2025-03-01T11:00:00.000Z',
});
const event = (workerId: string, kind: FleetEvent['kind'], id: number): FleetEvent => ({
  id,
  workerId,
  kind,
  at: '2025-03-01T11:59:00.000Z',
  message: null,
  stageId: null,
  pipelineId: null,
  data: null,
});

describe('fleetStatus', () => {
  it('is Online while an active worker heartbeats', () => {
    expect(fleetStatus(worker('Active', '2025-03-01T11:59:40.000Z'), 'started', now)).toBe(
      'Online',
    );
  });

  it('is Draining after a stopping event, until it stops', () => {
    expect(fleetStatus(worker('Active', '2025-03-01T11:59:40.000Z'), 'stopping', now)).toBe(
      'Draining',
    );
    expect(fleetStatus(worker('Active', '2025-03-01T11:59:40.000Z'), 'stopped', now)).toBe(
      'Offline',
    );
  });

  it('is Offline when stopped, or when heartbeats stopped coming', () => {
    expect(fleetStatus(worker('Stopped', '2025-03-01T11:59:40.000Z'), undefined, now)).toBe(
      'Offline',
    );
    expect(fleetStatus(worker('Active', '2025-03-01T11:50:00.000Z'), undefined, now)).toBe(
      'Offline',
    );
  });

  it('counts a worker that never heartbeated from its registration', () => {
    expect(
      fleetStatus(worker('Active', null), undefined, Date.parse('2025-03-01T11:00:30.000Z')),
    ).toBe('Online');
  });
});

describe('latestLifecycle', () => {
  it('keeps the newest lifecycle event per worker from a newest-first feed', () => {
    const feed = [
      event('w1', 'stage_completed', 9),
      event('w1', 'stopping', 8),
      event('w2', 'started', 7),
      event('w1', 'started', 1),
    ];
    const latest = latestLifecycle(feed);
    expect(latest.get('w1')).toBe('stopping');
    expect(latest.get('w2')).toBe('started');
    expect(latest.has('w3')).toBe(false);
  });
});
