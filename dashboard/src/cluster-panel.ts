/**
 * Who leads: a small panel naming the replica that holds the leader lease (it evaluates alerts and sends
 * notifications), its lease epoch, and each replica's last heartbeat, from GET /api/v1/cluster. On a single
 * SQLite process it says so. Its own errors stay inside it: the page it sits on keeps working.
 */
import type { ClusterResponse } from '../../shared/src/api.ts';
import { api } from './api.ts';
import { h, replace, table } from './dom.ts';
import { dateTime } from './format.ts';

export interface ClusterPanel {
  element: HTMLElement;
  /** Fetches and draws the cluster; never throws. */
  refresh(signal?: AbortSignal): Promise<void>;
}

function seconds(s: number): string {
  return s < 10 ? `${s.toFixed(1)} s ago` : `${Math.round(s)} s ago`;
}

/** The panel's content for one answer of the API. */
export function renderCluster(c: ClusterResponse): HTMLElement[] {
  if (c.backend === 'sqlite') return [h('p', { 'data-field': 'leader' }, 'Single process (SQLite store): this hookwatch evaluates alerts and sends notifications itself.')];
  const leader = c.leader
    ? h('p', { 'data-field': 'leader' }, 'Leader: ', h('strong', null, c.leader.replica), ` (lease epoch ${c.leader.epoch}${c.leader.replica === c.self ? ', this replica' : ''}) evaluates alerts and sends notifications.`)
    : h('p', { class: 'banner banner-error', 'data-field': 'leader' }, `No replica holds the leader lease right now: a failover is in progress (it takes up to ${((c.leaseTtlSeconds ?? 0) * 4) / 3} s).`);
  return [
    leader,
    table('Replicas and their last heartbeat', ['Replica', 'Role', 'Started', 'Last heartbeat', 'State'],
      c.replicas.map((r) => [`${r.replica}${r.self ? ' (this one)' : ''}`, r.leader ? 'leader' : 'follower', dateTime(r.startedAt), seconds(r.heartbeatAgeSeconds), r.alive ? 'running' : 'not heard from']),
      { class: 'data replicas' }),
  ];
}

export function clusterPanel(): ClusterPanel {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const element = h('section', { class: 'panel', id: 'cluster', 'aria-labelledby': 'cluster-title' }, h('h2', { id: 'cluster-title' }, 'Replicas'), body);
  return {
    element,
    async refresh(signal) {
      try {
        replace(body, ...renderCluster(await api.cluster(signal)));
      } catch (err) {
        if (signal?.aborted) return;
        replace(body, h('p', { class: 'warn' }, `Could not read the cluster state: ${(err as Error).message}`));
      }
    },
  };
}
