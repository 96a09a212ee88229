/**
 * Who leads: a small panel naming the replica that holds the leader lease (it evaluates alerts and sends
 * notifications), its lease epoch, and each replica's last heartbeat, from GET /api/v1/cluster. On a single
 * SQLite process it says so. Its own errors stay inside it: the page it sits on keeps working.
 */
import type { ClusterResponse } from '../../shared/src/api.ts';
import { api } from './api.ts';
import { h, replace, table } from './dom.ts';
import { clusterView } from './cluster-state.ts';

export interface ClusterPanel {
  element: HTMLElement;
  /** Fetches and draws the cluster; never throws. */
  refresh(signal?: AbortSignal): Promise<void>;
}

/** The panel's content for one answer of the API. */
export function renderCluster(c: ClusterResponse): HTMLElement[] {
  const v = clusterView(c);
  if (v.kind === 'single') return [h('p', { 'data-field': 'leader' }, v.text)];
  const leader = v.kind === 'led'
    ? h('p', { 'data-field': 'leader' }, 'Leader: ', h('strong', null, v.replica), v.after)
    : h('p', { class: 'banner banner-error', 'data-field': 'leader' }, v.text);
  return [
    leader,
    table('Replicas and their last heartbeat', ['Replica', 'Role', 'Started', 'Last heartbeat', 'State'], v.rows, { class: 'data replicas' }),
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
