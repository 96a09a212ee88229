import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterResponse } from '../../shared/src/api.ts';
import { clusterView } from './cluster-state.ts';
import { setTimeZone } from './format.ts';

const replicas: ClusterResponse['replicas'] = [
  { replica: 'hookwatch-0', leader: true, self: true, startedAt: '2026-11-30T06:00:00.000Z', lastHeartbeat: '2026-11-30T08:29:57.000Z', heartbeatAgeSeconds: 3.24, alive: true },
  { replica: 'hookwatch-1', leader: false, self: false, startedAt: '2026-11-30T06:00:05.000Z', lastHeartbeat: '2026-11-30T08:28:00.000Z', heartbeatAgeSeconds: 120.4, alive: false },
];
const pg: ClusterResponse = { backend: 'postgres', self: 'hookwatch-0', leader: { replica: 'hookwatch-0', epoch: 7, expiresAt: '2026-11-30T08:30:15.000Z' }, leaseTtlSeconds: 15, replicas };

beforeEach(() => setTimeZone('UTC'));
afterEach(() => setTimeZone('local'));

describe('replicas panel', () => {
  it('says a SQLite process leads itself', () => {
    expect(clusterView({ backend: 'sqlite', self: 'x', leader: null, leaseTtlSeconds: null, replicas: [] }).kind).toBe('single');
  });

  it('names the leader, its epoch and whether it is this replica, and each heartbeat', () => {
    expect(clusterView(pg)).toEqual({
      kind: 'led', replica: 'hookwatch-0', after: ' (lease epoch 7, this replica) evaluates alerts and sends notifications.',
      rows: [
        ['hookwatch-0 (this one)', 'leader', '30/11/2026, 06:00', '3.2 s ago', 'running'],
        ['hookwatch-1', 'follower', '30/11/2026, 06:00', '120 s ago', 'not heard from'],
      ],
    });
    expect(clusterView({ ...pg, self: 'hookwatch-1' })).toMatchObject({ after: ' (lease epoch 7) evaluates alerts and sends notifications.' });
  });

  it('says a failover is under way when nobody holds the lease', () => {
    expect(clusterView({ ...pg, leader: null })).toMatchObject({ kind: 'failover', text: 'No replica holds the leader lease right now: a failover is in progress (it takes up to 20 s).' });
  });
});
